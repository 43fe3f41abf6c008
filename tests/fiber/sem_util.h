/* This file is private to weft's tests: what the semaphore tests share
 * (tests/fiber/test_sem.c, tests/graph/test_attr.c,
 * tests/stress/stress_sem.c). Include after wtest.h. */
#ifndef WEFT_TEST_SEM_UTIL_H
#define WEFT_TEST_SEM_UTIL_H

#include <stdatomic.h>

#include "weft.h"

/* Asserts that s has exactly n units free now, and leaves it so: units
 * are conserved when every holder has given its unit back. */
static inline void expect_units(weft_sem *s, int n)
{
    for (int i = 0; i < n; i++)
        WT_ASSERT(weft_sem_try_acquire(s), "unit %d of %d missing", i, n);
    WT_ASSERT(!weft_sem_try_acquire(s), "more than %d units free", n);
    for (int i = 0; i < n; i++)
        weft_sem_release(s);
}

/* Counts the holders of a semaphore: inside now, the most at once, and
 * how many times one held it; over counts entries past limit (checked by
 * the test afterwards: code on worker threads does not assert). */
struct holders {
    atomic_int inside, most, over;
    atomic_long held;
    int limit;
};

static inline void holders_reset(struct holders *h, int limit)
{
    atomic_store(&h->inside, 0);
    atomic_store(&h->most, 0);
    atomic_store(&h->over, 0);
    atomic_store(&h->held, 0);
    h->limit = limit;
}

static inline void holders_enter(struct holders *h)
{
    int n = atomic_fetch_add(&h->inside, 1) + 1;
    if (n > h->limit)
        atomic_fetch_add(&h->over, 1);
    int m = atomic_load(&h->most);
    while (n > m && !atomic_compare_exchange_weak(&h->most, &m, n))
        ;
}

static inline void holders_leave(struct holders *h)
{
    atomic_fetch_sub(&h->inside, 1);
    atomic_fetch_add(&h->held, 1);
}

/* No entry went past the limit, and `held` holds were counted. */
#define EXPECT_HOLDERS(h, n)                                                 \
    do {                                                                     \
        WT_ASSERT_EQ(atomic_load(&(h)->over), 0);                            \
        WT_ASSERT(atomic_load(&(h)->most) <= (h)->limit, "%d holders at once, limit %d", \
                  atomic_load(&(h)->most), (h)->limit);                      \
        WT_ASSERT_EQ(atomic_load(&(h)->held), (n));                          \
    } while (0)

#endif /* WEFT_TEST_SEM_UTIL_H */

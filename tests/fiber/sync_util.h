/* What the test_sync_*.c files share beyond sync_common.h: test 19's
 * mutex counter body (test 24 runs it under signals), a short settle
 * sleep, CHECKS_ON in builds whose misuse checks are on. Include after
 * sync_common.h. A variable some of the files leave unused is marked so. */
#ifndef WEFT_TEST_SYNC_UTIL_H
#define WEFT_TEST_SYNC_UTIL_H

/* ---- test 19's body: 64 fibers x 10^4 increments under one mutex ----------- */

__attribute__((unused)) static weft_mutex m19;

__attribute__((unused)) static uint64_t counter19;             /* plain: the mutex is all that guards it */

__attribute__((unused)) static atomic_int inside19;

__attribute__((unused)) static unsigned iters19;

static inline void t19_body(unsigned id)
{
    for (unsigned i = 0; i < iters19; i++) {
        if (i % 8 == 3) {
            if (!weft_mutex_try_lock(&m19))
                weft_mutex_lock(&m19);
        } else {
            weft_mutex_lock(&m19);
        }
        WT_ASSERT_EQ(atomic_exchange(&inside19, 1), 0);
        counter19++;
        if (id == 0 && i % 2500 == 2499)
            weft_sleep(1500000);   /* hold it > 1 ms: sleepers starve, hand-off mode */
        else if (i % 64 == 0)
            weft_yield();          /* switch while holding it: contention on one worker */
        atomic_store(&inside19, 0);
        weft_mutex_unlock(&m19);
    }
}

static inline void settle(void)
{
    struct timespec ts = { 0, 20000000 };
    nanosleep(&ts, NULL);
}

/* Misuse checks of debug builds (and WEFT_CHECKS builds) are on here. */
#if !defined(NDEBUG) || defined(WEFT_CHECKS)
# define CHECKS_ON 1
#endif

#endif

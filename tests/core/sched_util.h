/* This file is private to weft's tests: helpers shared by the scheduler tests. */
#ifndef WEFT_TEST_SCHED_UTIL_H
#define WEFT_TEST_SCHED_UTIL_H

#include "weft.h"
#include "wtest.h"

/* A scheduler with the documented defaults and `workers` workers. */
static inline weft_sched *make_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    WT_ASSERT(s != NULL);
    WT_ASSERT_EQ(weft_sched_workers(s), workers);
    return s;
}

/* Makes a scheduler of `workers` workers (the test thread bound to it at
 * 0), lets setup spawn into it, waits until it is idle, destroys it. */
static inline void run_on(unsigned workers, void (*setup)(weft_sched *s))
{
    weft_sched *s = make_sched(workers);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    setup(s);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

#endif /* WEFT_TEST_SCHED_UTIL_H */

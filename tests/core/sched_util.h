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

#endif /* WEFT_TEST_SCHED_UTIL_H */

/* This file is private to weft's tests: helpers of the src/flow tests. */
#ifndef WEFT_TEST_FLOW_UTIL_H
#define WEFT_TEST_FLOW_UTIL_H

#include <pthread.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

/* A scheduler of w workers; with none, the calling thread is bound to it
 * (it runs the tasks while it waits). */
static inline weft_sched *flow_sched(unsigned w)
{
    weft_sched *s = make_sched(w);
    if (w == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    return s;
}

static inline void flow_sched_end(weft_sched *s, unsigned w)
{
    if (w == 0) {
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        weft_sched_unbind();
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Runs fn(arg) on a new plain thread and joins it. */
static inline void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, fn, arg), 0);
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
}

#endif /* WEFT_TEST_FLOW_UTIL_H */

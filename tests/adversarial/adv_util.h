/* This file is private to weft's tests: helpers of the adversarial tests,
 * which use the public headers only (weft.h). */
#ifndef WEFT_TEST_ADV_UTIL_H
#define WEFT_TEST_ADV_UTIL_H

#include <pthread.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

/* A scheduler of w workers (sched_util.h's make_sched); with none, the
 * calling thread is bound to it, so that it runs the tasks while it waits. */
static inline weft_sched *adv_sched(unsigned w)
{
    weft_sched *s = make_sched(w);
    if (w == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    return s;
}

static inline void adv_sched_end(weft_sched *s, unsigned w)
{
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    if (w == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* Runs fn(arg) on a new plain thread and joins it. */
static inline void adv_on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, fn, arg), 0);
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
}

/* A task that runs fn(arg) and signals done: to run a test body as a task. */
typedef struct adv_in_task {
    void (*fn)(void *);
    void *arg;
    weft_event done;
} adv_in_task;

static inline void adv_in_task_fn(void *p)
{
    adv_in_task *t = p;
    t->fn(t->arg);
    weft_event_signal(&t->done);
}

/* Runs fn(arg) as a task of s and waits for it from the calling thread
 * (bound with no workers: it runs the task meanwhile). */
static inline void adv_run_in_task(weft_sched *s, void (*fn)(void *), void *arg)
{
    adv_in_task t = { .fn = fn, .arg = arg };
    weft_event_init(&t.done, true, false);
    WT_ASSERT_EQ(weft_spawn(s, adv_in_task_fn, &t), WEFT_OK);
    WT_ASSERT_EQ(weft_event_wait(&t.done), WEFT_OK);
    weft_event_destroy(&t.done);
}

#endif /* WEFT_TEST_ADV_UTIL_H */

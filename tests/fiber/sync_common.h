/* This file is private to weft's tests: what the sync tests share.
 *
 * A scheduler per worker count (1, 2 and 4), and run_mixed: one body run
 * on tasks and plain threads at once, on the same objects.
 */
#ifndef WEFT_TEST_SYNC_COMMON_H
#define WEFT_TEST_SYNC_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

/* Timeouts every timed form is tried with: a poll, 1 us and 1 ms. */
static const uint64_t timeouts[] = { 0, 1000, 1000000 };

static weft_sched *cur;

/* ---- running a body on fibers and plain threads at once ------------------- */

typedef void (*body_fn)(unsigned id);
static body_fn cur_body;

static inline void body_task(void *arg)
{
    cur_body((unsigned)(uintptr_t)arg);
}

static inline void *body_thread(void *arg)
{
    cur_body((unsigned)(uintptr_t)arg);
    return NULL;
}

/* Runs body(id) for ids 0..n-1: ids with is_thread(id) on plain threads,
 * the others as tasks of a fresh scheduler with `workers` workers. */
static inline void run_mixed(unsigned workers, unsigned n, bool (*is_thread)(unsigned id), body_fn body)
{
    cur_body = body;
    cur = make_sched(workers);
    pthread_t th[64];
    unsigned nth = 0;
    for (unsigned id = 0; id < n; id++) {
        if (is_thread(id)) {
            WT_ASSERT(nth < 64);
            WT_ASSERT_EQ(pthread_create(&th[nth++], NULL, body_thread, (void *)(uintptr_t)id), 0);
        } else {
            WT_ASSERT_EQ(weft_spawn(cur, body_task, (void *)(uintptr_t)id), WEFT_OK);
        }
    }
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    cur = NULL;
}

#endif /* WEFT_TEST_SYNC_COMMON_H */

/* The flow calls while a scheduler is being destroyed (weft/flow.h): from
 * outside it, weft_async_spawn, weft_pipeline_run and weft_group_spawn
 * are refused with WEFT_ESHUTDOWN and change nothing; a task of the
 * scheduler still spawns a dependent async and waits for it, as it may
 * spawn to finish its work.
 *
 * A task blocks on an event, so destroy (on another thread) waits for it;
 * this thread polls weft_spawn until it says ESHUTDOWN (bounded), which
 * says destroy has started, then makes the calls, then lets the task go.
 * Tasks never assert: they count what went wrong, and the test checks. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"
#include "flow_util.h"

static atomic_long bad;
static weft_event go;
static weft_sched *sched;
static atomic_int late_ran;

static void *late(void *arg)
{
    atomic_fetch_add(&late_ran, 1);
    return arg;
}

static void holder(void *arg)
{
    (void)arg;
    if (weft_event_wait(&go) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    /* Destroy has started: a task of s may still spawn and wait. */
    weft_async *h;
    if (weft_async_spawn(sched, late, &go, NULL, 0, &h) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    if (weft_async_wait(h) != WEFT_OK || weft_async_result(h) != &go)
        atomic_fetch_add(&bad, 1);
    weft_async_release(h);
}

static void *destroyer(void *arg)
{
    (void)arg;
    if (weft_sched_destroy(sched) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    return NULL;
}

static void noop(void *arg)
{
    (void)arg;
}

static void stage(weft_pipe *pf, void *arg)
{
    (void)arg;
    weft_pipe_stop(pf);
}

WT_TEST(flow_shutdown, refused_from_outside, .timeout = 120)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    WT_ASSERT_EQ(weft_sched_create(&sched, &c), WEFT_OK);
    weft_event_init(&go, true, false);
    weft_pipe_stage st = { WEFT_PIPE_SERIAL, stage, NULL };
    weft_pipeline *pl;
    WT_ASSERT_EQ(weft_pipeline_create(2, &st, 1, &pl), WEFT_OK);
    weft_group g;
    WT_ASSERT_EQ(weft_group_init(&g, sched), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(sched, holder, NULL), WEFT_OK);
    pthread_t d;
    WT_ASSERT_EQ(pthread_create(&d, NULL, destroyer, NULL), 0);
    int rc = WEFT_OK;
    for (int i = 0; i < 20000 && rc == WEFT_OK; i++) {
        rc = weft_spawn(sched, noop, NULL);
        if (rc == WEFT_OK) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
    }
    if (rc != WEFT_ESHUTDOWN) {
        weft_event_signal(&go);
        pthread_join(d, NULL);
        WT_SKIP("destroy did not start within 20000 polls of 1 ms");
    }
    weft_async *h = (weft_async *)&g;   /* a value that must stay */
    WT_ASSERT_EQ(weft_async_spawn(sched, late, NULL, NULL, 0, &h), WEFT_ESHUTDOWN);
    WT_ASSERT(h == (weft_async *)&g);
    WT_ASSERT_EQ(weft_pipeline_run(sched, pl), WEFT_ESHUTDOWN);
    WT_ASSERT_EQ(weft_group_spawn(&g, noop, NULL), WEFT_ESHUTDOWN);
    weft_event_signal(&go);
    WT_ASSERT_EQ(pthread_join(d, NULL), 0);
    WT_ASSERT(atomic_load(&late_ran) == 1, "only the task's own spawn ran");
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    /* Nothing half-done: the pipeline is not running, the group is empty. */
    WT_ASSERT_EQ(weft_pipeline_destroy(pl), WEFT_OK);
    WT_ASSERT_EQ(weft_group_join(&g), WEFT_OK);
    weft_group_destroy(&g);
    weft_event_destroy(&go);
}

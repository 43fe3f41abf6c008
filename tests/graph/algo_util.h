/* This file is private to weft's tests: what the tests of the parallel
 * algorithms share. A check runs from each kind of caller the header
 * names (a plain thread, a task, a bound thread) on a scheduler of a
 * given worker count; inputs come from a seeded generator, so a failure
 * repeats.
 */
#ifndef WEFT_TEST_ALGO_UTIL_H
#define WEFT_TEST_ALGO_UTIL_H

#include <stdint.h>

#include "weft.h"
#include "wtest.h"
#include "../core/sched_util.h"

enum caller { CALL_PLAIN, CALL_TASK, CALL_BOUND, CALL_KINDS };

static const char *const caller_name[CALL_KINDS] = { "plain thread", "task", "bound thread" };

typedef void (*check_fn)(weft_sched *s, void *ctx);

struct in_task {
    check_fn fn;
    weft_sched *s;
    void *ctx;
    weft_waitgroup wg;
};

static void in_task_run(void *arg)
{
    struct in_task *t = arg;
    t->fn(t->s, t->ctx);
    weft_waitgroup_done(&t->wg);
}

/* Runs fn(s, ctx) from caller kind k: the test's thread itself, a task
 * of s (its thread bound meanwhile when s has no workers, so that the
 * task runs), or the test's thread bound to s. */
static inline void run_as(weft_sched *s, enum caller k, check_fn fn, void *ctx)
{
    bool bind = k == CALL_BOUND || (k == CALL_TASK && weft_sched_workers(s) == 0);
    if (bind)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    if (k == CALL_TASK) {
        struct in_task t = { .fn = fn, .s = s, .ctx = ctx };
        weft_waitgroup_init(&t.wg, 1);
        WT_ASSERT_EQ(weft_spawn(s, in_task_run, &t), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&t.wg), WEFT_OK);
        weft_waitgroup_destroy(&t.wg);
    } else {
        fn(s, ctx);
    }
    if (bind)
        weft_sched_unbind();
}

/* splitmix64: a seeded sequence, the same on every run. */
static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The sizes every algorithm is tried at: empty, one, around a block or
 * a leaf's edge, and (scaled down under the sanitizers) 10^6. */
static inline size_t algo_sizes(size_t *out)
{
    static const size_t fixed[] = { 0, 1, 2, 15, 16, 17, 1023, 1024, 1025, 4097, 16385, 65537 };
    size_t n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        out[n++] = fixed[i];
    out[n++] = (size_t)wt_scaled(1000000, 100000);
    return n;
}
#define ALGO_MAX_SIZES 16

#endif /* WEFT_TEST_ALGO_UTIL_H */

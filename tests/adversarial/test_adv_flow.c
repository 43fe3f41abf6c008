/* Adversarial tests of weft/flow.h, written from the header and
 * docs/reference/flow.md alone, at 0 (this thread bound), 1, 2 and 8
 * workers where a scheduler runs anything:
 *
 *   async_bad        every WEFT_EINVAL of weft_async_spawn (NULL s, fn,
 *                    preds with n > 0, a NULL handle among preds, a
 *                    handle of another scheduler): nothing spawned, *out
 *                    untouched; release(NULL) is a no-op
 *   async_wait_for   a poll (0) and a short wait of an unfinished handle
 *                    say ETIMEDOUT and change nothing; result NULL until
 *                    done; the same handle twice among preds
 *   async_backward   async task i waits (weft_async_wait) for task i + 1,
 *                    spawned after it: a valid order, ends at every count
 *   pipe_bad         every WEFT_EINVAL of weft_pipeline_create, and of
 *                    run with NULLs; destroy(NULL)
 *   pipe_reentry     a stage runs its own pipeline (EBUSY) and destroys it
 *                    (EBUSY): refused, the run goes on; weft_pipe_stop
 *                    from stage 1 is ignored; tokens counted; a second
 *                    run numbers from 0
 *   pipe_lookahead   a serial stage 2 of token t waits for token t + 1 to
 *                    pass the parallel stage 1 (valid with 2 lines)
 *   pipe_twice       one pipeline in two tasks of a graph: one runs it,
 *                    the other fails with EBUSY, and the graph says so
 *   group_backward   member i waits for member i + 1, spawned after it;
 *                    joined from a task, a bound or a plain thread
 *   group_cancel     a cancel while members block: unstarted ones skipped,
 *                    spawn refused with ECANCELED, join ECANCELED once,
 *                    then OK; cancelled() tracks it
 *   group_cancel_queued  with no workers, 50 members still queued when
 *                    the group is cancelled: none runs; destroy joins
 *   group_bad        NULL arguments */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adv_util.h"

static atomic_long ran;
static atomic_long bad;

static void *count_async(void *arg)
{
    atomic_fetch_add(&ran, 1);
    return arg;
}

/* ---- dependent async ---------------------------------------------------- */

WT_TEST(adv_flow, async_bad)
{
    weft_sched *s = adv_sched(1);
    weft_sched *other = adv_sched(1);
    atomic_store(&ran, 0);
    weft_async *sentinel = (weft_async *)(uintptr_t)0x1234;
    weft_async *out = sentinel;
    WT_ASSERT_EQ(weft_async_spawn(NULL, count_async, NULL, NULL, 0, &out), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_async_spawn(s, NULL, NULL, NULL, 0, &out), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_async_spawn(s, count_async, NULL, NULL, 1, &out), WEFT_EINVAL);
    weft_async *mine = NULL, *theirs = NULL;
    WT_ASSERT_EQ(weft_async_spawn(s, count_async, NULL, NULL, 0, &mine), WEFT_OK);
    WT_ASSERT_EQ(weft_async_spawn(other, count_async, NULL, NULL, 0, &theirs), WEFT_OK);
    weft_async *with_null[3] = { mine, NULL, mine };
    WT_ASSERT_EQ(weft_async_spawn(s, count_async, NULL, with_null, 3, &out), WEFT_EINVAL);
    weft_async *mixed[2] = { mine, theirs };
    WT_ASSERT_EQ(weft_async_spawn(s, count_async, NULL, mixed, 2, &out), WEFT_EINVAL);
    WT_ASSERT(out == sentinel, "a failed spawn wrote *out");
    WT_ASSERT_EQ(weft_async_wait(mine), WEFT_OK);
    WT_ASSERT_EQ(weft_async_wait(theirs), WEFT_OK);
    adv_sched_end(other, 1);
    adv_sched_end(s, 1);
    WT_ASSERT_EQ(atomic_load(&ran), 2);   /* the two good ones only */
    weft_async_release(mine);
    weft_async_release(theirs);
    weft_async_release(NULL);
}

static void *wait_event_async(void *arg)
{
    weft_event_wait(arg);
    return arg;
}

WT_TEST(adv_flow, async_wait_for)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        weft_event ev;
        weft_event_init(&ev, true, false);
        weft_async *h = NULL, *after = NULL;
        WT_ASSERT_EQ(weft_async_spawn(s, wait_event_async, &ev, NULL, 0, &h), WEFT_OK);
        weft_async *twice[2] = { h, h };
        WT_ASSERT_EQ(weft_async_spawn(s, count_async, &ev, twice, 2, &after), WEFT_OK);
        WT_ASSERT_EQ(weft_async_wait_for(h, 0), WEFT_ETIMEDOUT);
        WT_ASSERT_EQ(weft_async_wait_for(after, 1000000), WEFT_ETIMEDOUT);
        WT_ASSERT(!weft_async_done(h));
        WT_ASSERT(!weft_async_done(after));
        WT_ASSERT(weft_async_result(after) == NULL);
        weft_event_signal(&ev);
        WT_ASSERT_EQ(weft_async_wait(after), WEFT_OK);
        WT_ASSERT(weft_async_done(h));
        WT_ASSERT(weft_async_result(h) == &ev);
        WT_ASSERT(weft_async_result(after) == &ev);
        WT_ASSERT_EQ(weft_async_wait_for(h, 0), WEFT_OK);
        weft_async_retain(after);
        weft_async_release(after);
        weft_async_release(after);
        weft_async_release(h);
        adv_sched_end(s, w);
        weft_event_destroy(&ev);
    }
}

#define BACK_N 24

typedef struct back_ctx {
    weft_async *h[BACK_N];
    weft_event published;   /* every handle is in h[] */
    int order[BACK_N];
    atomic_int pos;
} back_ctx;

typedef struct back_arg {
    back_ctx *c;
    int i;
} back_arg;

static void *backward_async(void *arg)
{
    back_arg *a = arg;
    back_ctx *c = a->c;
    if (weft_event_wait(&c->published) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (a->i + 1 < BACK_N && weft_async_wait(c->h[a->i + 1]) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    c->order[atomic_fetch_add(&c->pos, 1)] = a->i;
    return a;
}

WT_TEST(adv_flow, async_backward)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        back_ctx c;
        memset(&c, 0, sizeof c);
        back_arg args[BACK_N];
        atomic_store(&bad, 0);
        weft_event_init(&c.published, true, false);
        for (int i = 0; i < BACK_N; i++) {
            args[i] = (back_arg){ &c, i };
            WT_ASSERT_EQ(weft_async_spawn(s, backward_async, &args[i], NULL, 0, &c.h[i]),
                         WEFT_OK);
        }
        weft_event_signal(&c.published);
        WT_ASSERT_EQ(weft_async_wait(c.h[0]), WEFT_OK);
        for (int i = 0; i < BACK_N; i++) {
            WT_ASSERT_EQ(c.order[i], BACK_N - 1 - i);
            WT_ASSERT(weft_async_result(c.h[i]) == &args[i]);
            weft_async_release(c.h[i]);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        adv_sched_end(s, w);
        weft_event_destroy(&c.published);
    }
}

/* ---- pipelines ---------------------------------------------------------- */

static void stage_nop(weft_pipe *pf, void *arg)
{
    (void)pf;
    (void)arg;
}

WT_TEST(adv_flow, pipe_bad)
{
    weft_pipe_stage ok[2] = { { WEFT_PIPE_SERIAL, stage_nop, NULL },
                              { WEFT_PIPE_PARALLEL, stage_nop, NULL } };
    weft_pipeline *pl = NULL;
    WT_ASSERT_EQ(weft_pipeline_create(1, ok, 2, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(1, NULL, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(0, ok, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(1, ok, 0, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(65537, ok, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(SIZE_MAX, ok, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(1, ok, SIZE_MAX, &pl), WEFT_EINVAL);
    weft_pipe_stage first_par[1] = { { WEFT_PIPE_PARALLEL, stage_nop, NULL } };
    WT_ASSERT_EQ(weft_pipeline_create(1, first_par, 1, &pl), WEFT_EINVAL);
    weft_pipe_stage no_fn[2] = { { WEFT_PIPE_SERIAL, stage_nop, NULL },
                                 { WEFT_PIPE_SERIAL, NULL, NULL } };
    WT_ASSERT_EQ(weft_pipeline_create(1, no_fn, 2, &pl), WEFT_EINVAL);
    weft_pipe_stage bad_kind[2] = { { WEFT_PIPE_SERIAL, stage_nop, NULL },
                                    { (weft_pipe_kind)7, stage_nop, NULL } };
    WT_ASSERT_EQ(weft_pipeline_create(1, bad_kind, 2, &pl), WEFT_EINVAL);
    weft_pipe_stage neg_kind[1] = { { (weft_pipe_kind)-1, stage_nop, NULL } };
    WT_ASSERT_EQ(weft_pipeline_create(1, neg_kind, 1, &pl), WEFT_EINVAL);
    WT_ASSERT(pl == NULL, "a failed create set *out");
    /* The limits themselves are allowed. */
    WT_ASSERT_EQ(weft_pipeline_create(65536, ok, 2, &pl), WEFT_OK);
    weft_sched *s = adv_sched(1);
    WT_ASSERT_EQ(weft_pipeline_run(NULL, pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_run(s, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_graph_add_pipeline(NULL, pl) == NULL, true);
    adv_sched_end(s, 1);
    WT_ASSERT_EQ(weft_pipeline_destroy(pl), WEFT_OK);
    WT_ASSERT_EQ(weft_pipeline_destroy(NULL), WEFT_OK);
}

typedef struct reentry {
    weft_sched *s;
    weft_pipeline *pl;
    uint64_t stop_at;
    atomic_long seen[3];
    atomic_long wrong;
} reentry;

static void reentry_first(weft_pipe *pf, void *arg)
{
    reentry *r = arg;
    uint64_t t = weft_pipe_token(pf);
    if (weft_pipe_stage_index(pf) != 0)
        atomic_fetch_add(&r->wrong, 1);
    if (t == 0) {
        if (weft_pipeline_run(r->s, r->pl) != WEFT_EBUSY)
            atomic_fetch_add(&r->wrong, 1);
        if (weft_pipeline_destroy(r->pl) != WEFT_EBUSY)
            atomic_fetch_add(&r->wrong, 1);
    }
    if (t == r->stop_at) {
        weft_pipe_stop(pf);
        return;
    }
    atomic_fetch_add(&r->seen[0], 1);
}

static void reentry_mid(weft_pipe *pf, void *arg)
{
    reentry *r = arg;
    if (weft_pipe_token(pf) >= r->stop_at || weft_pipe_stage_index(pf) != 1)
        atomic_fetch_add(&r->wrong, 1);
    weft_pipe_stop(pf);   /* ignored outside the first stage */
    weft_yield();
    atomic_fetch_add(&r->seen[1], 1);
}

static void reentry_last(weft_pipe *pf, void *arg)
{
    reentry *r = arg;
    if (weft_pipe_token(pf) >= r->stop_at || weft_pipe_stage_index(pf) != 2)
        atomic_fetch_add(&r->wrong, 1);
    atomic_fetch_add(&r->seen[2], 1);
}

static void reentry_body(void *arg)
{
    reentry *r = arg;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++)
            atomic_store(&r->seen[i], 0);
        if (weft_pipeline_run(r->s, r->pl) != WEFT_OK)
            atomic_fetch_add(&r->wrong, 1);
        for (int i = 0; i < 3; i++)
            if (atomic_load(&r->seen[i]) != (long)r->stop_at)
                atomic_fetch_add(&r->wrong, 1);
        if (weft_pipeline_tokens(r->pl) != r->stop_at)
            atomic_fetch_add(&r->wrong, 1);
    }
}

static void *reentry_thread(void *arg)
{
    reentry_body(arg);
    return NULL;
}

WT_TEST(adv_flow, pipe_reentry)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            if (caller == 2 && w == 0)
                continue;   /* a plain thread with nobody to run the stages */
            reentry r;
            memset(&r, 0, sizeof r);
            r.s = adv_sched(w);
            r.stop_at = 37;
            weft_pipe_stage st[3] = { { WEFT_PIPE_SERIAL, reentry_first, &r },
                                      { WEFT_PIPE_PARALLEL, reentry_mid, &r },
                                      { WEFT_PIPE_SERIAL, reentry_last, &r } };
            WT_ASSERT_EQ(weft_pipeline_create(3, st, 3, &r.pl), WEFT_OK);
            if (caller == 0)
                reentry_body(&r);
            else if (caller == 1)
                adv_run_in_task(r.s, reentry_body, &r);
            else
                adv_on_thread(reentry_thread, &r);
            WT_ASSERT(atomic_load(&r.wrong) == 0, "w %u caller %d: %ld wrong", w, caller, atomic_load(&r.wrong));
            WT_ASSERT_EQ(weft_pipeline_destroy(r.pl), WEFT_OK);
            adv_sched_end(r.s, w);
        }
    }
}

#define LOOK_TOKENS 40

typedef struct lookahead {
    weft_event passed1[LOOK_TOKENS + 2];
    atomic_long order_bad;
    uint64_t last2;
    bool any2;
} lookahead;

static void look_first(weft_pipe *pf, void *arg)
{
    (void)arg;
    if (weft_pipe_token(pf) == LOOK_TOKENS)
        weft_pipe_stop(pf);
}

static void look_par(weft_pipe *pf, void *arg)
{
    lookahead *l = arg;
    weft_event_signal(&l->passed1[weft_pipe_token(pf)]);
}

static void look_serial(weft_pipe *pf, void *arg)
{
    lookahead *l = arg;
    uint64_t t = weft_pipe_token(pf);
    /* Token t + 1 may pass stage 1 while t is in stage 2 (2 lines), unless
     * t is the last one: nothing comes after it. */
    if (t + 1 < LOOK_TOKENS && weft_event_wait(&l->passed1[t + 1]) != WEFT_OK)
        atomic_fetch_add(&l->order_bad, 1);
    if (l->any2 && l->last2 + 1 != t)
        atomic_fetch_add(&l->order_bad, 1);
    l->any2 = true;
    l->last2 = t;
}

WT_TEST(adv_flow, pipe_lookahead)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        lookahead l;
        memset(&l, 0, sizeof l);
        for (int i = 0; i < LOOK_TOKENS + 2; i++)
            weft_event_init(&l.passed1[i], true, false);
        weft_pipe_stage st[3] = { { WEFT_PIPE_SERIAL, look_first, &l },
                                  { WEFT_PIPE_PARALLEL, look_par, &l },
                                  { WEFT_PIPE_SERIAL, look_serial, &l } };
        weft_pipeline *pl = NULL;
        WT_ASSERT_EQ(weft_pipeline_create(2, st, 3, &pl), WEFT_OK);
        WT_ASSERT_EQ(weft_pipeline_run(s, pl), WEFT_OK);
        WT_ASSERT_EQ(weft_pipeline_tokens(pl), LOOK_TOKENS);
        WT_ASSERT_EQ(atomic_load(&l.order_bad), 0);
        WT_ASSERT_EQ(l.last2, LOOK_TOKENS - 1);
        WT_ASSERT_EQ(weft_pipeline_destroy(pl), WEFT_OK);
        adv_sched_end(s, w);
        for (int i = 0; i < LOOK_TOKENS + 2; i++)
            weft_event_destroy(&l.passed1[i]);
    }
}

typedef struct twice {
    weft_task *a, *b;
    atomic_long tokens;
} twice;

static bool one_failed(void *arg)
{
    twice *t = arg;
    return weft_task_state(t->a) == WEFT_TASK_FAILED ||
           weft_task_state(t->b) == WEFT_TASK_FAILED;
}

static void twice_first(weft_pipe *pf, void *arg)
{
    twice *t = arg;
    if (weft_pipe_token(pf) == 0 && weft_wait_until(one_failed, t) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    if (weft_pipe_token(pf) == 5)
        weft_pipe_stop(pf);
    else
        atomic_fetch_add(&t->tokens, 1);
}

WT_TEST(adv_flow, pipe_twice)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        twice t;
        memset(&t, 0, sizeof t);
        atomic_store(&bad, 0);
        weft_pipe_stage st[1] = { { WEFT_PIPE_SERIAL, twice_first, &t } };
        weft_pipeline *pl = NULL;
        WT_ASSERT_EQ(weft_pipeline_create(1, st, 1, &pl), WEFT_OK);
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        t.a = weft_graph_add_pipeline(g, pl);
        t.b = weft_graph_add_pipeline(g, pl);
        WT_ASSERT(t.a && t.b);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        int rc = weft_graph_wait(g);
        WT_ASSERT_EQ(rc, WEFT_EBUSY);   /* weft's own failure: its code */
        WT_ASSERT_EQ(weft_graph_fail_code(g), WEFT_EBUSY);
        WT_ASSERT(weft_graph_failed_task(g) == t.a || weft_graph_failed_task(g) == t.b);
        WT_ASSERT_EQ(atomic_load(&t.tokens), 5);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_pipeline_destroy(pl), WEFT_OK);
        adv_sched_end(s, w);
    }
}

/* ---- task groups -------------------------------------------------------- */

#define GB_N 32

typedef struct gback {
    weft_sched *s;
    weft_event ended[GB_N];
    atomic_int pos;
    int order[GB_N];
} gback;

typedef struct gback_arg {
    gback *g;
    int i;
} gback_arg;

static void gback_member(void *arg)
{
    gback_arg *a = arg;
    if (a->i + 1 < GB_N && weft_event_wait(&a->g->ended[a->i + 1]) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    a->g->order[atomic_fetch_add(&a->g->pos, 1)] = a->i;
    weft_event_signal(&a->g->ended[a->i]);
}

static void gback_body(void *arg)
{
    gback *g = arg;
    gback_arg args[GB_N];
    weft_group gr;
    if (weft_group_init(&gr, g->s) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return;
    }
    for (int i = 0; i < GB_N; i++)
        weft_event_init(&g->ended[i], true, false);
    for (int i = 0; i < GB_N; i++) {
        args[i] = (gback_arg){ g, i };
        if (weft_group_spawn(&gr, gback_member, &args[i]) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
    if (weft_group_join(&gr) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    weft_group_destroy(&gr);
    for (int i = 0; i < GB_N; i++) {
        if (g->order[i] != GB_N - 1 - i)
            atomic_fetch_add(&bad, 1);
        weft_event_destroy(&g->ended[i]);
    }
}

static void *gback_thread(void *arg)
{
    gback_body(arg);
    return NULL;
}

WT_TEST(adv_flow, group_backward)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            if (caller == 2 && w == 0)
                continue;
            gback g;
            memset(&g, 0, sizeof g);
            atomic_store(&bad, 0);
            g.s = adv_sched(w);
            if (caller == 0)
                gback_body(&g);
            else if (caller == 1)
                adv_run_in_task(g.s, gback_body, &g);
            else
                adv_on_thread(gback_thread, &g);
            WT_ASSERT(atomic_load(&bad) == 0, "w %u caller %d: %ld bad", w, caller, atomic_load(&bad));
            adv_sched_end(g.s, w);
        }
    }
}

typedef struct gcancel {
    weft_group gr;
    weft_event gate;
    weft_event blocked;
    atomic_long ran;
} gcancel;

static void gc_blocker(void *arg)
{
    gcancel *c = arg;
    weft_event_signal(&c->blocked);
    weft_event_wait(&c->gate);
    if (!weft_group_cancelled(&c->gr))
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&c->ran, 1);
}

static void gc_count(void *arg)
{
    gcancel *c = arg;
    atomic_fetch_add(&c->ran, 1);
}

WT_TEST(adv_flow, group_cancel)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        /* With workers only: the test thread must not run members while it
         * waits for the blocker to start, so that the others stay queued. */
        weft_sched *s = adv_sched(w);
        gcancel c;
        memset(&c, 0, sizeof c);
        atomic_store(&bad, 0);
        weft_event_init(&c.gate, true, false);
        weft_event_init(&c.blocked, true, false);
        WT_ASSERT_EQ(weft_group_init(&c.gr, s), WEFT_OK);
        WT_ASSERT(!weft_group_cancelled(&c.gr));
        WT_ASSERT_EQ(weft_group_spawn(&c.gr, gc_blocker, &c), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&c.blocked), WEFT_OK);
        weft_group_cancel(&c.gr);
        WT_ASSERT(weft_group_cancelled(&c.gr));
        WT_ASSERT_EQ(weft_group_spawn(&c.gr, gc_count, &c), WEFT_ECANCELED);
        weft_event_signal(&c.gate);
        WT_ASSERT_EQ(weft_group_join(&c.gr), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&c.ran), 1);   /* the refused one never ran */
        WT_ASSERT(!weft_group_cancelled(&c.gr));
        WT_ASSERT_EQ(weft_group_join(&c.gr), WEFT_OK);
        WT_ASSERT_EQ(weft_group_spawn(&c.gr, gc_count, &c), WEFT_OK);
        WT_ASSERT_EQ(weft_group_join(&c.gr), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&c.ran), 2);
        weft_group_destroy(&c.gr);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        adv_sched_end(s, w);
        weft_event_destroy(&c.gate);
        weft_event_destroy(&c.blocked);
    }
}

WT_TEST(adv_flow, group_cancel_queued)
{
    /* No workers: members spawned by the bound thread stay queued until it
     * waits, so the cancel finds every one of them unstarted. */
    weft_sched *s = adv_sched(0);
    gcancel c;
    memset(&c, 0, sizeof c);
    WT_ASSERT_EQ(weft_group_init(&c.gr, s), WEFT_OK);
    for (int i = 0; i < 50; i++)
        WT_ASSERT_EQ(weft_group_spawn(&c.gr, gc_count, &c), WEFT_OK);
    weft_group_cancel(&c.gr);
    WT_ASSERT_EQ(weft_group_join(&c.gr), WEFT_ECANCELED);
    WT_ASSERT_EQ(atomic_load(&c.ran), 0);
    WT_ASSERT_EQ(weft_group_spawn(&c.gr, gc_count, &c), WEFT_OK);
    weft_group_destroy(&c.gr);   /* joins the one spawned since */
    WT_ASSERT_EQ(atomic_load(&c.ran), 1);
    adv_sched_end(s, 0);
}

static void nop(void *arg)
{
    (void)arg;
}

WT_TEST(adv_flow, group_bad)
{
    weft_sched *s = adv_sched(1);
    weft_group gr;
    WT_ASSERT_EQ(weft_group_init(NULL, s), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_init(&gr, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_init(&gr, s), WEFT_OK);
    WT_ASSERT_EQ(weft_group_spawn(NULL, nop, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_spawn(&gr, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_group_join(&gr), WEFT_OK);   /* nothing spawned */
    weft_group_cancel(&gr);
    weft_group_destroy(&gr);                        /* cancelled, empty */
    adv_sched_end(s, 1);
}

/* Dependent async tasks (weft/flow.h), from the header first: the public
 * API only, but for the attach seam, at 0 (this thread bound), 1, 2 and 8
 * workers.
 *
 *   chain_*       a chain of 2000 asyncs, each adding one to its
 *                 predecessor's result: the last result is 2000, and each
 *                 ran after its predecessor
 *   wavefront     a 48x48 grid, each cell after its left and upper
 *                 neighbours, valued from theirs: every cell checked
 *                 against a sequential fill; also with 6 predecessors per
 *                 cell (the links past those kept in the handle)
 *   wait_*        waits from a task, a plain thread and a bound thread
 *                 beside workers; wait_for times out on a blocked task
 *   attach_race   a predecessor finishing while its successor is being
 *                 attached (forced with the seam in weft_async_spawn),
 *                 both ways round: the successor runs exactly once, after
 *   block         asyncs blocking on each other in valid orders: one
 *                 waits for the handle of another, one for an event that
 *                 a later one sets
 *   bad_input     EINVAL cases change nothing
 *   no_alloc      2^16 asyncs in flight, 16 rounds: after the first round
 *                 the allocator hooks see no call
 * Tasks never assert: they count what went wrong, and the test checks. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "flow_util.h"

extern void (*weft__flow_attach_seam)(size_t i);

static atomic_long bad;

/* ---- chains ---------------------------------------------------------------- */

typedef struct link_arg {
    weft_async *pred;
    atomic_long *order;
    long index;
} link_arg;

static void *add_one(void *arg)
{
    link_arg *a = arg;
    intptr_t v = 0;
    if (a->pred) {
        if (!weft_async_done(a->pred))
            atomic_fetch_add(&bad, 1);
        v = (intptr_t)weft_async_result(a->pred);
    }
    if (atomic_fetch_add(a->order, 1) != a->index)
        atomic_fetch_add(&bad, 1);
    return (void *)(v + 1);
}

static void chain(unsigned w)
{
    enum { N = 2000 };
    weft_sched *s = flow_sched(w);
    link_arg *args = calloc(N, sizeof *args);
    weft_async **h = calloc(N, sizeof *h);
    atomic_long order = 0;
    atomic_store(&bad, 0);
    for (long i = 0; i < N; i++) {
        args[i] = (link_arg){ i ? h[i - 1] : NULL, &order, i };
        WT_ASSERT_EQ(weft_async_spawn(s, add_one, &args[i], i ? &h[i - 1] : NULL, i ? 1 : 0, &h[i]),
                     WEFT_OK);
    }
    WT_ASSERT_EQ(weft_async_wait(h[N - 1]), WEFT_OK);
    WT_ASSERT_EQ((intptr_t)weft_async_result(h[N - 1]), N);
    for (long i = 0; i < N; i++) {
        WT_ASSERT(weft_async_done(h[i]));
        WT_ASSERT_EQ((intptr_t)weft_async_result(h[i]), i + 1);
    }
    for (long i = 0; i < N; i++)
        weft_async_release(h[i]);
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    flow_sched_end(s, w);
    free(args);
    free(h);
}

WT_TEST(async, chain, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) chain(w);
}

/* ---- wavefront --------------------------------------------------------------- */

#define WF 48

typedef struct cell {
    weft_async *up, *left;
    uint64_t *val;       /* the grid */
    int i, j;
} cell;

static uint64_t wf_value(uint64_t up, uint64_t left, int i, int j)
{
    return up * 31 + left * 17 + (uint64_t)(i * WF + j) + 1;
}

static void *wf_cell(void *arg)
{
    cell *c = arg;
    uint64_t up = c->i ? c->val[(c->i - 1) * WF + c->j] : 0;
    uint64_t left = c->j ? c->val[c->i * WF + c->j - 1] : 0;
    if ((c->up && !weft_async_done(c->up)) || (c->left && !weft_async_done(c->left)))
        atomic_fetch_add(&bad, 1);
    c->val[c->i * WF + c->j] = wf_value(up, left, c->i, c->j);
    return &c->val[c->i * WF + c->j];
}

static void wavefront(unsigned w, bool extra_preds)
{
    weft_sched *s = flow_sched(w);
    static uint64_t val[WF * WF], want[WF * WF];
    static cell cells[WF * WF];
    static weft_async *h[WF * WF];
    atomic_store(&bad, 0);
    for (int i = 0; i < WF; i++)
        for (int j = 0; j < WF; j++)
            want[i * WF + j] = wf_value(i ? want[(i - 1) * WF + j] : 0, j ? want[i * WF + j - 1] : 0, i, j);
    for (int i = 0; i < WF; i++)
        for (int j = 0; j < WF; j++) {
            cell *c = &cells[i * WF + j];
            *c = (cell){ i ? h[(i - 1) * WF + j] : NULL, j ? h[i * WF + j - 1] : NULL, val, i, j };
            weft_async *p[6];
            size_t n = 0;
            if (c->up)
                p[n++] = c->up;
            if (c->left)
                p[n++] = c->left;
            if (extra_preds && n == 2) {
                /* The same two again, and the diagonal twice: six links,
                 * two past those kept in the handle. */
                p[n++] = c->up;
                p[n++] = c->left;
                p[n++] = h[(i - 1) * WF + j - 1];
                p[n++] = h[(i - 1) * WF + j - 1];
            }
            WT_ASSERT_EQ(weft_async_spawn(s, wf_cell, c, p, n, &h[i * WF + j]), WEFT_OK);
        }
    WT_ASSERT_EQ(weft_async_wait(h[WF * WF - 1]), WEFT_OK);
    for (int k = 0; k < WF * WF; k++) {
        WT_ASSERT_EQ(weft_async_wait(h[k]), WEFT_OK);
        WT_ASSERT(weft_async_result(h[k]) == &val[k]);
        WT_ASSERT(val[k] == want[k], "cell %d", k);
    }
    for (int k = 0; k < WF * WF; k++)
        weft_async_release(h[k]);
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    flow_sched_end(s, w);
}

WT_TEST(async, wavefront, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        wavefront(w, false);
        wavefront(w, true);
    }
}

/* ---- waits from every kind of thread ------------------------------------------ */

typedef struct gate {
    weft_event ev;
    weft_async *h;
    weft_sched *s;
    atomic_int seen;
} gate;

static void *wait_ev(void *arg)
{
    gate *g = arg;
    if (weft_event_wait(&g->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    return (void *)(intptr_t)42;
}

static void *plain_waiter(void *arg)
{
    gate *g = arg;
    if (weft_async_wait(g->h) != WEFT_OK || (intptr_t)weft_async_result(g->h) != 42)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&g->seen, 1);
    return NULL;
}

static void *bound_waiter(void *arg)
{
    gate *g = arg;
    if (weft_sched_bind(g->s) != WEFT_OK) {
        atomic_fetch_add(&bad, 1);
        return NULL;
    }
    plain_waiter(arg);
    weft_sched_unbind();
    return NULL;
}

static void *signal_later(void *arg)
{
    weft_event_signal(&((gate *)arg)->ev);
    return NULL;
}

static void task_waiter(void *arg)
{
    plain_waiter(arg);
}

WT_TEST(async, wait_everywhere, .timeout = 120)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        gate g = { .s = s };
        atomic_store(&bad, 0);
        weft_event_init(&g.ev, true, false);
        WT_ASSERT_EQ(weft_async_spawn(s, wait_ev, &g, NULL, 0, &g.h), WEFT_OK);
        WT_ASSERT_EQ(weft_async_wait_for(g.h, 0), WEFT_ETIMEDOUT);
        WT_ASSERT_EQ(weft_async_wait_for(g.h, 1000000), WEFT_ETIMEDOUT);
        WT_ASSERT(!weft_async_done(g.h));
        WT_ASSERT(weft_async_result(g.h) == NULL);
        /* Waiters of three kinds, blocked before the signal. */
        pthread_t pt, bt;
        WT_ASSERT_EQ(pthread_create(&pt, NULL, plain_waiter, &g), 0);
        WT_ASSERT_EQ(pthread_create(&bt, NULL, bound_waiter, &g), 0);
        WT_ASSERT_EQ(weft_spawn(s, task_waiter, &g), WEFT_OK);
        on_thread(signal_later, &g);
        WT_ASSERT_EQ(pthread_join(pt, NULL), 0);
        WT_ASSERT_EQ(pthread_join(bt, NULL), 0);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&g.seen), 3);
        WT_ASSERT_EQ(weft_async_wait_for(g.h, 0), WEFT_OK);
        WT_ASSERT_EQ((intptr_t)weft_async_result(g.h), 42);
        weft_async_release(g.h);
        weft_event_destroy(&g.ev);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

WT_TEST(async, wait_bound_no_workers, .timeout = 60)
{
    /* No workers: this thread, bound, runs the tasks while it waits. */
    weft_sched *s = flow_sched(0);
    gate g = { .s = s };
    atomic_store(&bad, 0);
    weft_event_init(&g.ev, true, true);
    WT_ASSERT_EQ(weft_async_spawn(s, wait_ev, &g, NULL, 0, &g.h), WEFT_OK);
    WT_ASSERT_EQ(weft_async_wait(g.h), WEFT_OK);
    WT_ASSERT_EQ((intptr_t)weft_async_result(g.h), 42);
    weft_async_release(g.h);
    weft_event_destroy(&g.ev);
    flow_sched_end(s, 0);
}

/* ---- attach vs complete --------------------------------------------------------- */

static gate race_gate;
static weft_async *race_finisher;   /* the predecessor the seam finishes */
static size_t race_at;
static atomic_int race_runs;

static void race_seam(size_t i)
{
    if (i != race_at || !race_finisher)
        return;
    weft_event_signal(&race_gate.ev);
    if (weft_async_wait(race_finisher) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    WT_ASSERT(weft_async_done(race_finisher));
}

static void *counted(void *arg)
{
    atomic_fetch_add(&race_runs, 1);
    return arg;
}

static void *check_preds(void *arg)
{
    weft_async **p = arg;
    if (!weft_async_done(p[0]) || !weft_async_done(p[1]))
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&race_runs, 1);
    return NULL;
}

WT_TEST(async, attach_race, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8)
    for (int way = 0; way < 2; way++) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        atomic_store(&race_runs, 0);
        weft_event_init(&race_gate.ev, true, false);
        weft_async *blocked, *other;
        WT_ASSERT_EQ(weft_async_spawn(s, wait_ev, &race_gate, NULL, 0, &blocked), WEFT_OK);
        /* other: unfinished too (it follows blocked), so that its link is
         * pushed while blocked's is racing. */
        WT_ASSERT_EQ(weft_async_spawn(s, counted, NULL, &blocked, 1, &other), WEFT_OK);
        weft_async *p[2];
        if (way == 0) {
            /* blocked is attached (pushed), then finishes in the window:
             * its walk counts the successor down. */
            p[0] = blocked;
            p[1] = other;
            race_at = 0;
        } else {
            /* other is attached first; blocked and other finish in the
             * window, so blocked is found closed. */
            p[0] = other;
            p[1] = blocked;
            race_at = 0;
        }
        race_finisher = other;
        weft__flow_attach_seam = race_seam;
        weft_async *succ;
        WT_ASSERT_EQ(weft_async_spawn(s, check_preds, p, p, 2, &succ), WEFT_OK);
        weft__flow_attach_seam = NULL;
        race_finisher = NULL;
        WT_ASSERT_EQ(weft_async_wait(succ), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&race_runs) == 2, "the successor ran once, other once");
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        weft_async_release(succ);
        weft_async_release(other);
        weft_async_release(blocked);
        weft_event_destroy(&race_gate.ev);
        flow_sched_end(s, w);
    }
}

/* ---- blocking on each other ------------------------------------------------------ */

typedef struct blk {
    weft_event ev;
    weft_async *first;
    atomic_int step;
} blk;

static void *blk_waits_handle(void *arg)
{
    blk *b = arg;
    /* first was spawned before us and follows nothing we do: valid. */
    if (weft_async_wait(b->first) != WEFT_OK || (intptr_t)weft_async_result(b->first) != 7)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&b->step, 1);
    return NULL;
}

static void *blk_waits_event(void *arg)
{
    blk *b = arg;
    if (weft_event_wait(&b->ev) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    return (void *)(intptr_t)7;
}

static void *blk_sets_event(void *arg)
{
    blk *b = arg;
    weft_event_signal(&b->ev);
    return NULL;
}

WT_TEST(async, block, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        atomic_store(&bad, 0);
        for (int round = 0; round < 50; round++) {
            blk b = { .step = 0 };
            weft_event_init(&b.ev, true, false);
            weft_async *waiter, *setter, *after;
            WT_ASSERT_EQ(weft_async_spawn(s, blk_waits_event, &b, NULL, 0, &b.first), WEFT_OK);
            WT_ASSERT_EQ(weft_async_spawn(s, blk_waits_handle, &b, NULL, 0, &waiter), WEFT_OK);
            WT_ASSERT_EQ(weft_async_spawn(s, blk_sets_event, &b, NULL, 0, &setter), WEFT_OK);
            weft_async *both[2] = { waiter, setter };
            WT_ASSERT_EQ(weft_async_spawn(s, blk_waits_handle, &b, both, 2, &after), WEFT_OK);
            WT_ASSERT_EQ(weft_async_wait(after), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&b.step), 2);
            weft_async_release(after);
            weft_async_release(setter);
            weft_async_release(waiter);
            WT_ASSERT_EQ(weft_async_wait(b.first), WEFT_OK);
            weft_async_release(b.first);
            weft_event_destroy(&b.ev);
        }
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        flow_sched_end(s, w);
    }
}

/* ---- bad input --------------------------------------------------------------------- */

static void *nothing(void *arg)
{
    return arg;
}

WT_TEST(async, bad_input, .timeout = 60)
{
    weft_sched *s = flow_sched(1), *s2 = flow_sched(1);
    weft_async *h = NULL, *other;
    WT_ASSERT_EQ(weft_async_spawn(NULL, nothing, NULL, NULL, 0, &h), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_async_spawn(s, NULL, NULL, NULL, 0, &h), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_async_spawn(s, nothing, NULL, NULL, 1, &h), WEFT_EINVAL);
    weft_async *nul = NULL;
    WT_ASSERT_EQ(weft_async_spawn(s, nothing, NULL, &nul, 1, &h), WEFT_EINVAL);
    WT_ASSERT(h == NULL);
    WT_ASSERT_EQ(weft_async_spawn(s2, nothing, NULL, NULL, 0, &other), WEFT_OK);
    WT_ASSERT_EQ(weft_async_spawn(s, nothing, NULL, &other, 1, &h), WEFT_EINVAL);
    WT_ASSERT(h == NULL);
    /* Unobserved: out NULL. */
    WT_ASSERT_EQ(weft_async_spawn(s, nothing, NULL, &nul, 0, NULL), WEFT_OK);
    weft_async_retain(other);
    weft_async_release(other);
    WT_ASSERT_EQ(weft_async_wait(other), WEFT_OK);
    weft_async_release(other);
    weft_async_release(NULL);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s2), WEFT_OK);
}

/* ---- steady state allocates nothing ------------------------------------------------- */

static walloc na = WALLOC_INIT("no_alloc");

WT_TEST(async, no_alloc, .timeout = 300)
{
    enum { IN_FLIGHT = 1 << 16, ROUNDS = 16 };
    weft_set_allocator(walloc_hooks(&na));
    weft_async **h = calloc(IN_FLIGHT, sizeof *h);
    WT_FOR_WORKERS(w, 1, 8) {
        weft_sched *s = flow_sched(w);
        long after_warmup = 0;
        gate g;
        for (int r = 0; r < ROUNDS; r++) {
            if (r == 1)
                after_warmup = atomic_load(&na.calls);
            /* Every task waits for the gate: all IN_FLIGHT are in flight
             * at once. */
            weft_event_init(&g.ev, true, false);
            weft_async *root;
            WT_ASSERT_EQ(weft_async_spawn(s, wait_ev, &g, NULL, 0, &root), WEFT_OK);
            for (long i = 0; i < IN_FLIGHT; i++)
                WT_ASSERT_EQ(weft_async_spawn(s, nothing, NULL, &root, 1, &h[i]), WEFT_OK);
            weft_event_signal(&g.ev);
            for (long i = 0; i < IN_FLIGHT; i++) {
                WT_ASSERT_EQ(weft_async_wait(h[i]), WEFT_OK);
                weft_async_release(h[i]);
            }
            weft_async_release(root);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            weft_event_destroy(&g.ev);
        }
        /* The hooks saw the first round's slabs (the test would prove
         * nothing if weft's memory did not go through them). */
        WT_ASSERT(after_warmup > 0, "no allocation through the hooks at all");
        long calls = atomic_load(&na.calls) - after_warmup;
        WT_ASSERT(calls == 0, "%ld allocations after the first of %d rounds of %d asyncs",
                  calls, ROUNDS, IN_FLIGHT);
        flow_sched_end(s, w);
    }
    free(h);
}

/* Pipelines (weft/flow.h), from the header first: the public API only,
 * at 0 (this thread bound), 1, 2 and 8 workers.
 *
 *   order         1..8 lines, 4 stages (serial, parallel, serial,
 *                 parallel) over 3000 tokens: each serial stage sees the
 *                 tokens in order, every stage sees every token once, a
 *                 token keeps its line, and the per-line slot written in
 *                 one stage is read back in the next; run twice
 *   shapes        one stage; all serial; a stop at token 0; more lines
 *                 than tokens
 *   block         a parallel stage waits for an async handle made by the
 *                 first stage for its token; a serial stage sleeps
 *   wait_for_a_later_token  short stages (lines queued without a wake),
 *                 and every 50th token's parallel stage waits for the
 *                 next token's: 2, 4, 8 lines
 *   callers       run from a plain thread, a task and a bound thread
 *   graph         a pipeline as a task of a graph, between two tasks,
 *                 the graph run three times
 *   bad_input     EINVAL cases; EBUSY for a run and a destroy from inside
 *                 a stage
 * Stages never assert: they count what went wrong, and the test checks. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"
#include "wtest.h"
#include "flow_util.h"

#define MAXL 8
#define MAXT 4096

typedef struct ctx {
    weft_sched *s;
    weft_pipeline *pl;
    uint64_t ntok;              /* tokens to make */
    size_t lines;
    atomic_long bad;
    uint64_t next[4];           /* the next token each serial stage expects */
    atomic_int seen[4][MAXT];   /* times stage k saw token t */
    uint64_t slot[MAXL];        /* per-line data */
    size_t line_of[MAXT];
    weft_async *handle[MAXL];   /* per-line: the block test's */
    bool blocking;
    bool busy_checks;
} ctx;

static void note(ctx *c, weft_pipe *pf)
{
    size_t k = weft_pipe_stage_index(pf);
    uint64_t t = weft_pipe_token(pf);
    size_t l = weft_pipe_line(pf);
    if (t >= MAXT || l >= c->lines)
        atomic_fetch_add(&c->bad, 1);
    else {
        atomic_fetch_add(&c->seen[k][t], 1);
        if (k == 0)
            c->line_of[t] = l;
        else if (c->line_of[t] != l)
            atomic_fetch_add(&c->bad, 1);
    }
}

static void *token_value(void *arg)
{
    return arg;
}

static void st_first(weft_pipe *pf, void *arg)
{
    ctx *c = arg;
    uint64_t t = weft_pipe_token(pf);
    if (t != c->next[0]++)
        atomic_fetch_add(&c->bad, 1);
    if (t == c->ntok) {
        weft_pipe_stop(pf);
        return;
    }
    note(c, pf);
    size_t l = weft_pipe_line(pf);
    c->slot[l] = t * 3 + 1;
    if (c->blocking &&
        weft_async_spawn(c->s, token_value, (void *)(uintptr_t)(t + 100), NULL, 0, &c->handle[l]) != WEFT_OK)
        atomic_fetch_add(&c->bad, 1);
    if (c->busy_checks && t == 0) {
        if (weft_pipeline_run(c->s, c->pl) != WEFT_EBUSY || weft_pipeline_destroy(c->pl) != WEFT_EBUSY)
            atomic_fetch_add(&c->bad, 1);
    }
}

static void st_par(weft_pipe *pf, void *arg)
{
    ctx *c = arg;
    note(c, pf);
    size_t l = weft_pipe_line(pf);
    uint64_t t = weft_pipe_token(pf);
    if (c->slot[l] != t * 3 + 1)
        atomic_fetch_add(&c->bad, 1);
    if (c->blocking) {
        weft_async *h = c->handle[l];
        if (weft_async_wait(h) != WEFT_OK || (uintptr_t)weft_async_result(h) != t + 100)
            atomic_fetch_add(&c->bad, 1);
        weft_async_release(h);
    }
    c->slot[l] = t * 5 + 2;
}

static void st_serial(weft_pipe *pf, void *arg)
{
    ctx *c = arg;
    note(c, pf);
    size_t k = weft_pipe_stage_index(pf);
    uint64_t t = weft_pipe_token(pf);
    if (t != c->next[k]++)
        atomic_fetch_add(&c->bad, 1);
    if (c->blocking && t % 64 == 0)
        weft_sleep(10000);
    weft_pipe_stop(pf);   /* ignored outside the first stage */
}

static void st_last(weft_pipe *pf, void *arg)
{
    ctx *c = arg;
    note(c, pf);
    size_t l = weft_pipe_line(pf);
    if (c->slot[l] != weft_pipe_token(pf) * 5 + 2)
        atomic_fetch_add(&c->bad, 1);
}

static void check_run(ctx *c, size_t nstages)
{
    WT_ASSERT_EQ(atomic_load(&c->bad), 0);
    WT_ASSERT_EQ(weft_pipeline_tokens(c->pl), c->ntok);
    for (size_t k = 0; k < nstages; k++)
        for (uint64_t t = 0; t < c->ntok; t++)
            WT_ASSERT(atomic_load(&c->seen[k][t]) == 1, "stage %zu token %llu", k,
                      (unsigned long long)t);
}

static void reset(ctx *c)
{
    atomic_store(&c->bad, 0);
    memset(c->next, 0, sizeof c->next);
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < MAXT; t++)
            atomic_store(&c->seen[k][t], 0);
}

static const weft_pipe_stage four[4] = {
    { WEFT_PIPE_SERIAL, st_first, NULL },
    { WEFT_PIPE_PARALLEL, st_par, NULL },
    { WEFT_PIPE_SERIAL, st_serial, NULL },
    { WEFT_PIPE_PARALLEL, st_last, NULL },
};

static void four_stages(unsigned w, bool blocking)
{
    weft_sched *s = flow_sched(w);
    static ctx c;
    for (size_t lines = 1; lines <= MAXL; lines++) {
        memset(&c, 0, sizeof c);
        weft_pipe_stage st[4];
        memcpy(st, four, sizeof st);
        for (int k = 0; k < 4; k++)
            st[k].arg = &c;
        c.s = s;
        c.lines = lines;
        c.ntok = blocking ? 500 : 3000;
        c.blocking = blocking;
        WT_ASSERT_EQ(weft_pipeline_create(lines, st, 4, &c.pl), WEFT_OK);
        for (int run = 0; run < 2; run++) {
            reset(&c);
            WT_ASSERT_EQ(weft_pipeline_run(s, c.pl), WEFT_OK);
            check_run(&c, 4);
        }
        WT_ASSERT_EQ(weft_pipeline_destroy(c.pl), WEFT_OK);
    }
    flow_sched_end(s, w);
}

WT_TEST(pipeline, order, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) four_stages(w, false);
}

WT_TEST(pipeline, block, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) four_stages(w, true);
}

/* ---- a stage waits for a later token's ------------------------------------------ */

/* Tokens of a few nanoseconds a stage, except every WAIT_EVERY-th: its
 * parallel stage waits until the next token's parallel stage has run (a
 * valid order with two lines or more: that token needs only its own first
 * stage, which follows ours). Short stages make lines queue without
 * waking anyone (a pipeline's own measure): the worker whose stage waits
 * must go on with the queued lines itself, at every worker count. */
#define WAIT_TOKENS 3000
#define WAIT_EVERY 50

typedef struct waitc {
    uint64_t next, ntok;
    weft_event ev[WAIT_TOKENS / WAIT_EVERY + 1];
    atomic_long bad, ran;
} waitc;

static void wt_first(weft_pipe *pf, void *arg)
{
    waitc *c = arg;
    if (c->next == c->ntok) {
        weft_pipe_stop(pf);
        return;
    }
    c->next++;
}

static void wt_par(weft_pipe *pf, void *arg)
{
    waitc *c = arg;
    uint64_t t = weft_pipe_token(pf);
    atomic_fetch_add(&c->ran, 1);
    if (t % WAIT_EVERY == 1)
        weft_event_signal(&c->ev[t / WAIT_EVERY]);   /* the token before waits for this */
    if (t % WAIT_EVERY == 0 && t + 1 < c->ntok &&
        weft_event_wait_for(&c->ev[t / WAIT_EVERY], 60000000000ull) != WEFT_OK)
        atomic_fetch_add(&c->bad, 1);   /* 60 s: only a lost line waits this long */
}

static void wt_serial(weft_pipe *pf, void *arg)
{
    (void)pf;
    (void)arg;
}

WT_TEST(pipeline, wait_for_a_later_token, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        static waitc c;
        for (size_t lines = 2; lines <= 8; lines *= 2) {
            weft_pipe_stage st[4] = {
                { WEFT_PIPE_SERIAL, wt_first, &c }, { WEFT_PIPE_SERIAL, wt_serial, &c },
                { WEFT_PIPE_PARALLEL, wt_par, &c }, { WEFT_PIPE_SERIAL, wt_serial, &c },
            };
            weft_pipeline *pl;
            WT_ASSERT_EQ(weft_pipeline_create(lines, st, 4, &pl), WEFT_OK);
            for (int run = 0; run < 2; run++) {
                c.next = 0;
                c.ntok = WAIT_TOKENS;
                atomic_store(&c.bad, 0);
                atomic_store(&c.ran, 0);
                for (size_t i = 0; i < sizeof c.ev / sizeof c.ev[0]; i++)
                    weft_event_init(&c.ev[i], true, false);
                WT_ASSERT_EQ(weft_pipeline_run(s, pl), WEFT_OK);
                WT_ASSERT_EQ(atomic_load(&c.bad), 0);
                WT_ASSERT_EQ(atomic_load(&c.ran), WAIT_TOKENS);
                WT_ASSERT_EQ(weft_pipeline_tokens(pl), WAIT_TOKENS);
                for (size_t i = 0; i < sizeof c.ev / sizeof c.ev[0]; i++)
                    weft_event_destroy(&c.ev[i]);
            }
            WT_ASSERT_EQ(weft_pipeline_destroy(pl), WEFT_OK);
        }
        flow_sched_end(s, w);
    }
}

WT_TEST(pipeline, shapes, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        static ctx c;
        struct { size_t lines, n; uint64_t ntok; bool serial; } shape[] = {
            { 1, 1, 100, true }, { 4, 1, 100, true }, { 3, 3, 200, true },
            { 8, 2, 0, false }, { 8, 4, 3, false }, { 2, 4, 1, false },
        };
        for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) {
            memset(&c, 0, sizeof c);
            weft_pipe_stage st[4];
            memcpy(st, four, sizeof st);
            for (int k = 0; k < 4; k++) {
                st[k].arg = &c;
                if (shape[i].serial && k)
                    st[k] = (weft_pipe_stage){ WEFT_PIPE_SERIAL, st_serial, &c };
            }
            c.s = s;
            c.lines = shape[i].lines;
            c.ntok = shape[i].ntok;
            WT_ASSERT_EQ(weft_pipeline_create(shape[i].lines, st, shape[i].n, &c.pl), WEFT_OK);
            reset(&c);
            WT_ASSERT_EQ(weft_pipeline_run(s, c.pl), WEFT_OK);
            check_run(&c, shape[i].n);
            WT_ASSERT_EQ(weft_pipeline_destroy(c.pl), WEFT_OK);
        }
        flow_sched_end(s, w);
    }
}

/* ---- callers ---------------------------------------------------------------------- */

static ctx cc;

static void *run_plain(void *arg)
{
    if (weft_pipeline_run(arg, cc.pl) != WEFT_OK)
        atomic_fetch_add(&cc.bad, 100);
    return NULL;
}

static void run_task(void *arg)
{
    run_plain(arg);
}

static void *run_bound(void *arg)
{
    if (weft_sched_bind(arg) != WEFT_OK) {
        atomic_fetch_add(&cc.bad, 100);
        return NULL;
    }
    run_plain(arg);
    weft_sched_unbind();
    return NULL;
}

WT_TEST(pipeline, callers, .timeout = 300)
{
    WT_FOR_WORKERS(w, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        memset(&cc, 0, sizeof cc);
        weft_pipe_stage st[4];
        memcpy(st, four, sizeof st);
        for (int k = 0; k < 4; k++)
            st[k].arg = &cc;
        cc.s = s;
        cc.lines = 4;
        cc.ntok = 1000;
        WT_ASSERT_EQ(weft_pipeline_create(4, st, 4, &cc.pl), WEFT_OK);
        reset(&cc);
        on_thread(run_plain, s);
        check_run(&cc, 4);
        reset(&cc);
        on_thread(run_bound, s);
        check_run(&cc, 4);
        reset(&cc);
        WT_ASSERT_EQ(weft_spawn(s, run_task, s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        check_run(&cc, 4);
        WT_ASSERT_EQ(weft_pipeline_destroy(cc.pl), WEFT_OK);
        flow_sched_end(s, w);
    }
}

/* ---- a task of a graph -------------------------------------------------------------- */

static atomic_int before, after;

static void g_before(void *arg)
{
    ctx *c = arg;
    if (atomic_load(&c->seen[0][0]) != 0)
        atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&before, 1);
}

static void g_after(void *arg)
{
    ctx *c = arg;
    if (atomic_load(&c->seen[3][c->ntok - 1]) != 1)
        atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&after, 1);
}

WT_TEST(pipeline, graph, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = flow_sched(w);
        memset(&cc, 0, sizeof cc);
        weft_pipe_stage st[4];
        memcpy(st, four, sizeof st);
        for (int k = 0; k < 4; k++)
            st[k].arg = &cc;
        cc.s = s;
        cc.lines = 3;
        cc.ntok = 500;
        WT_ASSERT_EQ(weft_pipeline_create(3, st, 4, &cc.pl), WEFT_OK);
        weft_graph *g;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *a = weft_graph_add(g, g_before, &cc);
        weft_task *p = weft_graph_add_pipeline(g, cc.pl);
        weft_task *b = weft_graph_add(g, g_after, &cc);
        WT_ASSERT(a && p && b);
        WT_ASSERT(weft_graph_add_pipeline(NULL, cc.pl) == NULL);
        WT_ASSERT(weft_graph_add_pipeline(g, NULL) == NULL);
        WT_ASSERT_EQ(weft_task_precede(a, p), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(p, b), WEFT_OK);
        atomic_store(&before, 0);
        atomic_store(&after, 0);
        for (int run = 0; run < 3; run++) {
            reset(&cc);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            check_run(&cc, 4);
        }
        WT_ASSERT_EQ(atomic_load(&before), 3);
        WT_ASSERT_EQ(atomic_load(&after), 3);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_pipeline_destroy(cc.pl), WEFT_OK);
        flow_sched_end(s, w);
    }
}

/* ---- bad input ---------------------------------------------------------------------- */

WT_TEST(pipeline, bad_input, .timeout = 120)
{
    weft_pipeline *pl = NULL;
    weft_pipe_stage st[2] = { { WEFT_PIPE_SERIAL, st_first, &cc }, { WEFT_PIPE_PARALLEL, st_par, &cc } };
    weft_pipe_stage par_first[1] = { { WEFT_PIPE_PARALLEL, st_first, &cc } };
    weft_pipe_stage no_fn[2] = { { WEFT_PIPE_SERIAL, st_first, &cc }, { WEFT_PIPE_SERIAL, NULL, &cc } };
    weft_pipe_stage bad_kind[1] = { { (weft_pipe_kind)7, st_first, &cc } };
    WT_ASSERT_EQ(weft_pipeline_create(0, st, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, st, 0, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, NULL, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, st, 2, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, par_first, 1, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, no_fn, 2, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(2, bad_kind, 1, &pl), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pipeline_create(65537, st, 2, &pl), WEFT_EINVAL);
    WT_ASSERT(pl == NULL);
    WT_ASSERT_EQ(weft_pipeline_destroy(NULL), WEFT_OK);
    WT_FOR_WORKERS(w, 0, 2) {
        weft_sched *s = flow_sched(w);
        memset(&cc, 0, sizeof cc);
        cc.s = s;
        cc.lines = 2;
        cc.ntok = 10;
        cc.busy_checks = true;
        WT_ASSERT_EQ(weft_pipeline_create(2, st, 2, &cc.pl), WEFT_OK);
        WT_ASSERT_EQ(weft_pipeline_run(NULL, cc.pl), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_pipeline_run(s, NULL), WEFT_EINVAL);
        reset(&cc);
        WT_ASSERT_EQ(weft_pipeline_run(s, cc.pl), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&cc.bad), 0);
        WT_ASSERT_EQ(weft_pipeline_tokens(cc.pl), 10);
        WT_ASSERT_EQ(weft_pipeline_destroy(cc.pl), WEFT_OK);
        flow_sched_end(s, w);
    }
}

/* Adversarial tests of this round's weft/graph.h calls (self-edges,
 * multi-conditions, run_until/run_while, queued runs, subflows), written
 * from the header and docs/reference/graph.md alone, at 0 (this thread
 * bound), 1, 2 and 8 workers:
 *
 *   self_edge       a plain task's self-edge is EINVAL and changes nothing;
 *                   a condition's and a multi-condition's loop run k times
 *   multi_picks     repeats, negative and out-of-range indexes, and a count
 *                   past cap (SIZE_MAX) are ignored; a multi-condition with
 *                   70 successors gets cap 64; a weft_task_fail in fn drops
 *                   its picks
 *   series_bad      run_until/run_while with NULLs (pred not asked),
 *                   run_while false at once (0 runs, OK), run_n(0), and
 *                   run_until true at once (1 run)
 *   queued          runs queued behind a blocked run, from this thread and
 *                   from a task of g itself: all run, one at a time; a plain
 *                   run meanwhile is EBUSY, a queue on another scheduler
 *                   EINVAL, destroy EBUSY; wait_for(0) ETIMEDOUT
 *   queued_cancel   a cancel while runs are queued ends them all: one run,
 *                   ECANCELED, done, destroy OK
 *   queued_module   queuing a graph that runs as a module: EBUSY
 *   sub_misuse      weft_subflow_join from a sub-task (EINVAL), adds after
 *                   fn returned (NULL, also once the visit is over), weft_subflow_current in fn and in a
 *                   sub-task, a weft_graph_wait on the outer graph from a
 *                   sub-task (EBUSY)
 *   sub_block       sub-tasks wait for later sub-tasks with no edge, nested
 *                   four deep, joined twice in fn, in a loop of 3 visits
 *   sub_fail        fn's own weft_task_fail: nothing of its sub-graph runs;
 *                   a failing sub-task seen by a join: the join returns
 *                   EFAILED and the subflow task fails with err
 *   sub_cancel      weft_graph_cancel from a blocked sub-task: the rest of
 *                   the sub-graph and the successors are skipped */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adv_util.h"

static atomic_long bad;

static void nop(void *arg)
{
    (void)arg;
}

static void count_fn(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
}

static weft_graph *new_graph(void)
{
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    return g;
}

/* ---- self-edges and multi-conditions ------------------------------------ */

typedef struct loop {
    int visits;
    int k;
    atomic_long done;
} loop;

static int self_cond(void *arg)
{
    loop *l = arg;
    return ++l->visits < l->k ? 0 : 1;
}

static size_t self_multi(void *arg, int *picks, size_t cap)
{
    loop *l = arg;
    if (cap != 2)
        atomic_fetch_add(&bad, 1);
    picks[0] = ++l->visits < l->k ? 0 : 1;
    return 1;
}

WT_TEST(adv_graph, self_edge)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        atomic_store(&bad, 0);
        weft_graph *g = new_graph();
        weft_task *t = weft_graph_add(g, nop, NULL);
        WT_ASSERT_EQ(weft_task_precede(t, t), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_succeed(t, t), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_successors(t, NULL, 0), 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);   /* no cycle was left */
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);

        loop lc = { .k = 7 }, lm = { .k = 5 };
        weft_task *entry = weft_graph_add(g, nop, NULL);
        weft_task *c = weft_graph_add_cond(g, self_cond, &lc);
        weft_task *cend = weft_graph_add(g, count_fn, &lc.done);
        weft_task *m = weft_graph_add_multi_cond(g, self_multi, &lm);
        weft_task *mend = weft_graph_add(g, count_fn, &lm.done);
        WT_ASSERT(entry && c && cend && m && mend);
        WT_ASSERT_EQ(weft_task_precede(entry, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, c), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(c, cend), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(entry, m), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, m), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, mend), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(lc.visits, 7);
        WT_ASSERT_EQ(lm.visits, 5);
        WT_ASSERT_EQ(atomic_load(&lc.done), 1);
        WT_ASSERT_EQ(atomic_load(&lm.done), 1);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        adv_sched_end(s, w);
    }
}

#define WIDE 70

typedef struct picks {
    atomic_long hits[WIDE];
    size_t cap_seen;
    int mode;
} picks;

static size_t hostile_picks(void *arg, int *out, size_t cap)
{
    picks *p = arg;
    p->cap_seen = cap;
    if (p->mode == 0) {   /* 5 successors: 1, 1, -1, 99, 3, and a huge count */
        int v[] = { 1, 1, -1, 99, 3 };
        for (size_t i = 0; i < cap && i < 5; i++)
            out[i] = v[i];
        return SIZE_MAX;
    }
    if (p->mode == 1) {   /* WIDE successors: cap is 64; pick 63 and 65 */
        out[0] = 63;
        out[1] = 65;
        return 2;
    }
    out[0] = 0;           /* mode 2: picks, then fails: nothing runs */
    weft_task_fail(77);
    return 1;
}

static void hit(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
}

WT_TEST(adv_graph, multi_picks)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        for (int mode = 0; mode < 3; mode++) {
            picks p;
            memset(&p, 0, sizeof p);
            p.mode = mode;
            weft_graph *g = new_graph();
            weft_task *m = weft_graph_add_multi_cond(g, hostile_picks, &p);
            size_t n = mode == 1 ? WIDE : 5;
            for (size_t i = 0; i < n; i++) {
                weft_task *t = weft_graph_add(g, hit, &p.hits[i]);
                WT_ASSERT_EQ(weft_task_precede(m, t), WEFT_OK);
            }
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            int rc = weft_graph_wait(g);
            if (mode == 0) {
                WT_ASSERT_EQ(rc, WEFT_OK);
                WT_ASSERT_EQ(p.cap_seen, 5);
                for (size_t i = 0; i < 5; i++)
                    WT_ASSERT(atomic_load(&p.hits[i]) == (i == 1 || i == 3 ? 1 : 0),
                              "w %u: successor %zu ran %ld times", w, i,
                              atomic_load(&p.hits[i]));
            } else if (mode == 1) {
                WT_ASSERT_EQ(rc, WEFT_OK);
                WT_ASSERT_EQ(p.cap_seen, WEFT_MULTI_COND_MAX);
                const size_t upto = WIDE;   /* past the cap nothing runs */
                for (size_t i = 0; i < upto; i++)
                    WT_ASSERT(atomic_load(&p.hits[i]) == (i == 63 ? 1 : 0),
                              "w %u: successor %zu ran %ld times", w, i,
                              atomic_load(&p.hits[i]));
            } else {
                WT_ASSERT_EQ(rc, WEFT_EFAILED);
                WT_ASSERT_EQ(weft_graph_fail_code(g), 77);
                WT_ASSERT(weft_graph_failed_task(g) == m);
                WT_ASSERT_EQ(atomic_load(&p.hits[0]), 0);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        adv_sched_end(s, w);
    }
}

/* ---- series --------------------------------------------------------------- */

typedef struct series {
    atomic_long runs;
    atomic_long asked;
    long until;
} series;

static bool pred_count(void *arg)
{
    series *r = arg;
    atomic_fetch_add(&r->asked, 1);
    return atomic_load(&r->runs) >= r->until;
}

static bool pred_false(void *arg)
{
    series *r = arg;
    atomic_fetch_add(&r->asked, 1);
    return false;
}

static bool pred_true(void *arg)
{
    series *r = arg;
    atomic_fetch_add(&r->asked, 1);
    return true;
}

WT_TEST(adv_graph, series_bad)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        series r;
        memset(&r, 0, sizeof r);
        weft_graph *g = new_graph();
        WT_ASSERT(weft_graph_add(g, count_fn, &r.runs));
        WT_ASSERT_EQ(weft_graph_run_until(s, g, NULL, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_until(NULL, g, pred_true, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_until(s, NULL, pred_true, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_while(s, g, NULL, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_while(NULL, g, pred_true, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_while(s, NULL, pred_true, &r), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_n(NULL, g, 3), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_queued(NULL, g), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_run_queued(s, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(atomic_load(&r.asked), 0);
        WT_ASSERT_EQ(atomic_load(&r.runs), 0);
        WT_ASSERT(weft_graph_done(g));

        WT_ASSERT_EQ(weft_graph_run_while(s, g, pred_false, &r), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&r.runs), 0);
        WT_ASSERT_EQ(atomic_load(&r.asked), 1);

        WT_ASSERT_EQ(weft_graph_run_n(s, g, 0), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&r.runs), 0);

        WT_ASSERT_EQ(weft_graph_run_until(s, g, pred_true, &r), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&r.runs), 1);
        WT_ASSERT_EQ(atomic_load(&r.asked), 2);

        r.until = 6;
        WT_ASSERT_EQ(weft_graph_run_until(s, g, pred_count, &r), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&r.runs), 6);
        r.until = 9;
        WT_ASSERT_EQ(weft_graph_run_while(s, g, pred_false, &r), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&r.runs), 6);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        adv_sched_end(s, w);
    }
}

/* ---- queued runs ---------------------------------------------------------- */

typedef struct qctx {
    weft_sched *s;
    weft_graph *g;
    weft_event gate;        /* manual: the first run's task waits on it */
    weft_event started;     /* the first run's task has begun */
    atomic_long runs;
    atomic_long inside;
    atomic_long self_queue; /* runs a task of g queues itself */
    atomic_long refused;
} qctx;

static void q_task(void *arg)
{
    qctx *q = arg;
    if (atomic_fetch_add(&q->inside, 1) != 0)
        atomic_fetch_add(&bad, 1);    /* two runs at once */
    long n = atomic_fetch_add(&q->runs, 1);
    if (n == 0) {
        weft_event_signal(&q->started);
        weft_event_wait(&q->gate);
    }
    if (atomic_load(&q->self_queue) > 0) {
        atomic_fetch_sub(&q->self_queue, 1);
        if (weft_graph_run_queued(q->s, q->g) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
    weft_yield();
    atomic_fetch_sub(&q->inside, 1);
}

static void *queue_from_thread(void *arg)
{
    qctx *q = arg;
    for (int i = 0; i < 3; i++)
        if (weft_graph_run_queued(q->s, q->g) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    return NULL;
}

WT_TEST(adv_graph, queued)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        qctx q;
        memset(&q, 0, sizeof q);
        atomic_store(&bad, 0);
        q.s = adv_sched(w);
        weft_sched *other = adv_sched(1);
        q.g = new_graph();
        weft_event_init(&q.gate, true, false);
        weft_event_init(&q.started, true, false);
        WT_ASSERT(weft_graph_add(q.g, q_task, &q));
        atomic_store(&q.self_queue, 2);
        WT_ASSERT_EQ(weft_graph_run_queued(q.s, q.g), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&q.started), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run_queued(q.s, q.g), WEFT_OK);
        adv_on_thread(queue_from_thread, &q);
        WT_ASSERT_EQ(weft_graph_run(q.s, q.g), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_run_n(q.s, q.g, 2), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_run_queued(other, q.g), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_graph_destroy(q.g), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_wait_for(q.g, 0), WEFT_ETIMEDOUT);
        WT_ASSERT(!weft_graph_done(q.g));
        weft_event_signal(&q.gate);
        WT_ASSERT_EQ(weft_graph_wait(q.g), WEFT_OK);
        WT_ASSERT(weft_graph_done(q.g));
        /* 1 + 1 + 3 from here, 2 queued by the graph's own task */
        WT_ASSERT_EQ(atomic_load(&q.runs), 7);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(q.g), WEFT_OK);
        adv_sched_end(other, 1);
        adv_sched_end(q.s, w);
        weft_event_destroy(&q.gate);
        weft_event_destroy(&q.started);
    }
}

WT_TEST(adv_graph, queued_cancel)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        qctx q;
        memset(&q, 0, sizeof q);
        atomic_store(&bad, 0);
        q.s = adv_sched(w);
        q.g = new_graph();
        weft_event_init(&q.gate, true, false);
        weft_event_init(&q.started, true, false);
        weft_task *first = weft_graph_add(q.g, q_task, &q);
        weft_task *after = weft_graph_add(q.g, nop, NULL);
        WT_ASSERT_EQ(weft_task_precede(first, after), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(q.s, q.g), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&q.started), WEFT_OK);
        for (int i = 0; i < 4; i++)
            WT_ASSERT_EQ(weft_graph_run_queued(q.s, q.g), WEFT_OK);
        WT_ASSERT(weft_graph_cancel(q.g));
        weft_event_signal(&q.gate);
        WT_ASSERT_EQ(weft_graph_wait(q.g), WEFT_ECANCELED);
        WT_ASSERT(weft_graph_done(q.g));
        WT_ASSERT_EQ(atomic_load(&q.runs), 1);
        WT_ASSERT_EQ(weft_task_state(after), WEFT_TASK_SKIPPED);
        /* Later runs are not affected. */
        WT_ASSERT_EQ(weft_graph_run_queued(q.s, q.g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(q.g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&q.runs), 2);
        WT_ASSERT_EQ(weft_graph_destroy(q.g), WEFT_OK);
        adv_sched_end(q.s, w);
        weft_event_destroy(&q.gate);
        weft_event_destroy(&q.started);
    }
}

typedef struct modq {
    weft_sched *s;
    weft_graph *sub;
    atomic_long rc;
} modq;

static void try_queue_sub(void *arg)
{
    modq *m = arg;
    atomic_store(&m->rc, weft_graph_run_queued(m->s, m->sub));
}

WT_TEST(adv_graph, queued_module)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        modq m = { .s = s };
        atomic_store(&m.rc, 1);
        weft_graph *g = new_graph();
        m.sub = new_graph();
        WT_ASSERT(weft_graph_add(m.sub, try_queue_sub, &m));
        WT_ASSERT(weft_graph_add_module(g, m.sub));
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&m.rc), WEFT_EBUSY);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(m.sub), WEFT_OK);
        adv_sched_end(s, w);
    }
}

/* ---- subflows ------------------------------------------------------------- */

typedef struct misuse {
    weft_graph *g;
    weft_subflow *sf;
    atomic_long join_rc, add_null, cur_null, wait_rc, fn_cur_ok;
} misuse;

static void misuse_sub(void *arg)
{
    misuse *m = arg;
    atomic_store(&m->join_rc, weft_subflow_join(m->sf));
    atomic_store(&m->add_null, weft_subflow_add(m->sf, nop, NULL) == NULL);
    atomic_store(&m->cur_null, weft_subflow_current() == NULL);
    atomic_store(&m->wait_rc, weft_graph_wait(m->g));
}

static void misuse_fn(weft_subflow *sf, void *arg)
{
    misuse *m = arg;
    m->sf = sf;
    atomic_store(&m->fn_cur_ok, weft_subflow_current() == sf &&
                                weft_subflow_join(NULL) == WEFT_EINVAL &&
                                weft_subflow_add(NULL, nop, NULL) == NULL &&
                                weft_subflow_join(sf) == WEFT_OK);   /* empty */
    if (!weft_subflow_add(sf, misuse_sub, m))
        atomic_fetch_add(&bad, 1);
}

WT_TEST(adv_graph, sub_misuse)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        misuse m;
        memset(&m, 0, sizeof m);
        atomic_store(&bad, 0);
        m.g = new_graph();
        WT_ASSERT(weft_graph_add_subflow(m.g, NULL, NULL) == NULL);
        WT_ASSERT(weft_graph_add_subflow(NULL, misuse_fn, &m) == NULL);
        WT_ASSERT(weft_graph_add_subflow(m.g, misuse_fn, &m));
        WT_ASSERT_EQ(weft_graph_run(s, m.g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(m.g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&m.fn_cur_ok), 1);
        WT_ASSERT_EQ(atomic_load(&m.join_rc), WEFT_EINVAL);
        WT_ASSERT_EQ(atomic_load(&m.add_null), 1);
        WT_ASSERT_EQ(atomic_load(&m.cur_null), 1);
        WT_ASSERT_EQ(atomic_load(&m.wait_rc), WEFT_EBUSY);
        WT_ASSERT(weft_subflow_current() == NULL);
        /* The visit is over (fn returned, its sub-graph ran): sf is refused. */
        WT_ASSERT(weft_subflow_add(m.sf, nop, NULL) == NULL);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(m.g), WEFT_OK);
        adv_sched_end(s, w);
    }
}

/* Sub-tasks with no edges wait for the ones added after them: sub-task i of
 * a round waits for i + 1's event. Subflows nest DEPTH deep; fn joins its
 * first round, then adds a second round that runs when fn returns. */
#define SB_N 4
#define SB_DEPTH 4

typedef struct sblock {
    weft_event ev[SB_DEPTH][2][SB_N];
    atomic_long ran;
    int visits;
} sblock;

typedef struct sbarg {
    sblock *b;
    int depth, round, i;
} sbarg;

static void sb_task(void *arg)
{
    sbarg *a = arg;
    if (a->i + 1 < SB_N && weft_event_wait(&a->b->ev[a->depth][a->round][a->i + 1]) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&a->b->ran, 1);
    weft_event_signal(&a->b->ev[a->depth][a->round][a->i]);
}

static sblock *sb_global;
static sbarg sb_args[SB_DEPTH][2][SB_N];

static void sb_fn(weft_subflow *sf, void *arg);

static void sb_round(weft_subflow *sf, int depth, int round)
{
    for (int i = 0; i < SB_N; i++) {
        weft_event_clear(&sb_global->ev[depth][round][i]);
    }
    for (int i = 0; i < SB_N; i++) {
        sb_args[depth][round][i] = (sbarg){ sb_global, depth, round, i };
        if (!weft_subflow_add(sf, sb_task, &sb_args[depth][round][i]))
            atomic_fetch_add(&bad, 1);
    }
    if (round == 1 && depth + 1 < SB_DEPTH &&
        !weft_subflow_add_subflow(sf, sb_fn, (void *)(intptr_t)(depth + 1)))
        atomic_fetch_add(&bad, 1);
}

static void sb_fn(weft_subflow *sf, void *arg)
{
    int depth = (int)(intptr_t)arg;
    sb_round(sf, depth, 0);
    if (weft_subflow_join(sf) != WEFT_OK)
        atomic_fetch_add(&bad, 1);
    sb_round(sf, depth, 1);
}

static int sb_again(void *arg)
{
    sblock *b = arg;
    return ++b->visits < 3 ? 0 : 1;
}

WT_TEST(adv_graph, sub_block)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        sblock *b = calloc(1, sizeof *b);
        WT_ASSERT(b);
        sb_global = b;
        atomic_store(&bad, 0);
        for (int d = 0; d < SB_DEPTH; d++)
            for (int r = 0; r < 2; r++)
                for (int i = 0; i < SB_N; i++)
                    weft_event_init(&b->ev[d][r][i], true, false);
        weft_graph *g = new_graph();
        weft_task *entry = weft_graph_add(g, nop, NULL);
        weft_task *sf = weft_graph_add_subflow(g, sb_fn, (void *)(intptr_t)0);
        weft_task *again = weft_graph_add_cond(g, sb_again, b);
        weft_task *end = weft_graph_add(g, nop, NULL);
        WT_ASSERT(entry && sf && again && end);
        WT_ASSERT_EQ(weft_task_precede(entry, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(sf, again), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(again, sf), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(again, end), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(b->visits, 3);
        WT_ASSERT_EQ(atomic_load(&b->ran), 3 * SB_DEPTH * 2 * SB_N);
        WT_ASSERT_EQ(weft_task_state(end), WEFT_TASK_DONE);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        adv_sched_end(s, w);
        for (int d = 0; d < SB_DEPTH; d++)
            for (int r = 0; r < 2; r++)
                for (int i = 0; i < SB_N; i++)
                    weft_event_destroy(&b->ev[d][r][i]);
        free(b);
    }
}

typedef struct sfail {
    atomic_long ran;
    atomic_long join_rc;
    int mode;
} sfail;

static void sf_failing(void *arg)
{
    sfail *f = arg;
    atomic_fetch_add(&f->ran, 1);
    weft_task_fail(-4242);
}

static void sf_fail_fn(weft_subflow *sf, void *arg)
{
    sfail *f = arg;
    if (f->mode == 0) {
        weft_subflow_add(sf, count_fn, &f->ran);
        weft_subflow_add(sf, count_fn, &f->ran);
        weft_task_fail(99);   /* its sub-graph does not run */
        return;
    }
    weft_task *a = weft_subflow_add(sf, sf_failing, f);
    weft_task *b = weft_subflow_add(sf, count_fn, &f->ran);
    weft_task_precede(a, b);   /* b is skipped */
    atomic_store(&f->join_rc, weft_subflow_join(sf));
}

WT_TEST(adv_graph, sub_fail)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        for (int mode = 0; mode < 2; mode++) {
            sfail f;
            memset(&f, 0, sizeof f);
            f.mode = mode;
            atomic_long after = 0;
            weft_graph *g = new_graph();
            weft_task *t = weft_graph_add_subflow(g, sf_fail_fn, &f);
            weft_task *succ = weft_graph_add(g, count_fn, &after);
            WT_ASSERT_EQ(weft_task_precede(t, succ), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);
            WT_ASSERT(weft_graph_failed_task(g) == t);
            WT_ASSERT_EQ(weft_task_state(t), WEFT_TASK_FAILED);
            WT_ASSERT_EQ(atomic_load(&after), 0);
            if (mode == 0) {
                WT_ASSERT_EQ(weft_graph_fail_code(g), 99);
                WT_ASSERT_EQ(atomic_load(&f.ran), 0);
            } else {
                WT_ASSERT_EQ(weft_graph_fail_code(g), -4242);
                WT_ASSERT_EQ(atomic_load(&f.join_rc), WEFT_EFAILED);
                WT_ASSERT_EQ(atomic_load(&f.ran), 1);
            }
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        adv_sched_end(s, w);
    }
}

typedef struct scancel {
    weft_graph *g;
    weft_event gate;
    atomic_long ran;
} scancel;

static void sc_canceller(void *arg)
{
    scancel *c = arg;
    if (!weft_graph_cancel(c->g))
        atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&c->ran, 1);
}

static void sc_fn(weft_subflow *sf, void *arg)
{
    scancel *c = arg;
    weft_task *a = weft_subflow_add(sf, sc_canceller, c);
    weft_task *b = weft_subflow_add(sf, count_fn, &c->ran);
    weft_task_precede(a, b);
}

WT_TEST(adv_graph, sub_cancel)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        scancel c;
        memset(&c, 0, sizeof c);
        atomic_store(&bad, 0);
        atomic_long after = 0;
        c.g = new_graph();
        weft_task *t = weft_graph_add_subflow(c.g, sc_fn, &c);
        weft_task *succ = weft_graph_add(c.g, count_fn, &after);
        WT_ASSERT_EQ(weft_task_precede(t, succ), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, c.g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(c.g), WEFT_ECANCELED);
        WT_ASSERT_EQ(atomic_load(&c.ran), 1);
        WT_ASSERT_EQ(atomic_load(&after), 0);
        WT_ASSERT_EQ(weft_task_state(succ), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        /* A later run is not affected. */
        WT_ASSERT_EQ(weft_graph_run(s, c.g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(c.g), WEFT_ECANCELED);
        WT_ASSERT_EQ(weft_graph_destroy(c.g), WEFT_OK);
        adv_sched_end(s, w);
    }
}

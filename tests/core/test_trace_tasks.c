/* Tracing of tasks and graphs (weft_trace_start/stop/write), written from
 * weft.h alone (the "tracing" section) before the implementation, as a
 * user reads them. Helpers: tests/support/trace_util.h.
 *
 * Each trace is written into memory and read back with the strict JSON
 * parser of tests/support/tjson.c; trace_check.c then checks what holds
 * for every trace (layout, thread names, runs, nesting per thread, flows;
 * see trace_check.h) and the cases below what their work implies:
 *  - graph_dag: random DAGs of 50 to 200 named tasks, run three times:
 *    each task once per run, on the thread it saw, its sleeps as slices
 *    with args.wait "sleep"; end(a) <= begin(b) for every edge a -> b;
 *    each run inside its "graph" async pair;
 *  - names, graph_names, graph_name_long: the names tasks show, odd
 *    characters, copies of graph task names, long names;
 *  - units: times in microseconds from the start, park and wake events;
 *  - queue_counter: the "queue" counter, capped at 255.
 * Worker counts 0 (the test thread bound), 1, 2 and 8 where the case
 * depends on them.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into fields the test thread checks after a wait.
 *
 * Symbol names: a task spawned without a name shows its function's
 * symbol. A lookup such as dladdr sees only exported symbols, so this
 * test is linked with ENABLE_EXPORTS (-rdynamic), as a program that wants
 * names must be, and the named functions are not static. */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../support/tjson.h"
#include "../support/trace_check.h"
#include "../support/trace_util.h"

/* ---- a traced random DAG -------------------------------------------------------- */

#define DAG_MAX  200
#define DAG_RUNS 3

struct dag;
struct dnode {
    struct dag *d;
    int i;
};

struct dag {
    int n, ne;
    int run;                             /* the run in flight; set before weft_graph_run */
    char names[DAG_MAX][8];
    int tid_b[DAG_RUNS][DAG_MAX], tid_e[DAG_RUNS][DAG_MAX];
    atomic_int ran[DAG_MAX];
    struct dnode nodes[DAG_MAX];
    int eu[DAG_MAX * 4], ev[DAG_MAX * 4];
};

static bool dag_sleeps(int i)
{
    return i % 7 == 3;
}

static void dag_task(void *p)
{
    struct dnode *nd = p;
    struct dag *d = nd->d;
    int k = d->run;
    d->tid_b[k][nd->i] = weft_thread_id();
    busy_ns((uint64_t)(nd->i % 5) * US);
    if (dag_sleeps(nd->i))
        weft_sleep(20 * US);
    d->tid_e[k][nd->i] = weft_thread_id();
    atomic_fetch_add(&d->ran[nd->i], 1);
}

static weft_graph *dag_build(struct dag *d, uint64_t *rng)
{
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    d->n = 50 + (int)(wt_rand(rng) % 151);
    int perm[DAG_MAX];
    for (int i = 0; i < d->n; i++)
        perm[i] = i;
    for (int i = d->n - 1; i > 0; i--) {
        int j = (int)(wt_rand(rng) % (uint64_t)(i + 1)), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    weft_task *t[DAG_MAX];
    for (int i = 0; i < d->n; i++) {
        d->nodes[i] = (struct dnode){ d, i };
        snprintf(d->names[i], sizeof d->names[i], "t%03d", i);
        t[i] = weft_graph_add(g, dag_task, &d->nodes[i]);
        WT_ASSERT(t[i] != NULL);
        weft_task_set_name(t[i], d->names[i]);
        WT_ASSERT(streq(weft_task_name(t[i]), d->names[i]));
    }
    /* Forward edges over the permutation, about 3 per task. */
    d->ne = 0;
    for (int j = 1; j < d->n; j++) {
        int k = (int)(wt_rand(rng) % 4);
        for (int e = 0; e < k && d->ne < DAG_MAX * 4; e++) {
            int u = perm[wt_rand(rng) % (uint64_t)j], v = perm[j];
            WT_ASSERT_EQ(weft_task_precede(t[u], t[v]), WEFT_OK);
            d->eu[d->ne] = u;
            d->ev[d->ne++] = v;
        }
    }
    return g;
}

static void dag_check(struct dag *d, const tr_trace *t, unsigned w)
{
    static const tr_run *runs[DAG_MAX][DAG_RUNS];
    WT_ASSERT(t->dropped == 0, "%u workers: %g events dropped with %zu per thread", w, t->dropped, BIG);
    double min_b[DAG_RUNS], max_e[DAG_RUNS];
    for (int k = 0; k < DAG_RUNS; k++)
        min_b[k] = 1e300, max_e[k] = -1;
    for (int i = 0; i < d->n; i++) {
        size_t n = tr_runs_named(t, d->names[i], runs[i], DAG_RUNS);
        WT_ASSERT(n == DAG_RUNS, "%u workers: task %s has %zu runs in %d graph runs", w, d->names[i], n, DAG_RUNS);
        for (int k = 0; k < DAG_RUNS; k++) {
            const tr_run *r = runs[i][k];
            WT_ASSERT(r->tid == d->tid_b[k][i] && r->tid == d->tid_e[k][i],
                      "%u workers: %s run %d on tid %d, but it ran on thread %d (ended on %d)", w, d->names[i], k,
                      r->tid, d->tid_b[k][i], d->tid_e[k][i]);
            if (dag_sleeps(i)) {
                WT_ASSERT(r->nslices >= 2, "%u workers: %s slept but has %zu slice", w, d->names[i], r->nslices);
                WT_ASSERT(streq(slice(t, r, 0)->wait, "sleep"), "%u workers: %s's first slice waits on \"%s\"", w,
                          d->names[i], slice(t, r, 0)->wait ? slice(t, r, 0)->wait : "(none)");
            } else {
                WT_ASSERT(r->nslices == 1, "%u workers: %s never blocks but has %zu slices", w, d->names[i],
                          r->nslices);
            }
            const tr_event *last = slice(t, r, r->nslices - 1);
            WT_ASSERT(last->wait == NULL, "%u workers: %s's last slice (the task returned) has args.wait \"%s\"", w,
                      d->names[i], last->wait);
            if (r->begin < min_b[k])
                min_b[k] = r->begin;
            if (r->end > max_e[k])
                max_e[k] = r->end;
        }
    }
    for (int e = 0; e < d->ne; e++)
        for (int k = 0; k < DAG_RUNS; k++) {
            const tr_run *a = runs[d->eu[e]][k], *b = runs[d->ev[e]][k];
            WT_ASSERT(a->end <= b->begin + TR_EPS,
                      "%u workers, graph run %d: edge %s -> %s but %s ends at %.4f us, after %s begins at %.4f", w,
                      k, a->name, b->name, a->name, a->end, b->name, b->begin);
        }
    for (int k = 0; k + 1 < DAG_RUNS; k++)
        WT_ASSERT(max_e[k] <= min_b[k + 1] + TR_EPS, "%u workers: graph run %d ends at %.4f after run %d begins at %.4f",
                  w, k, max_e[k], k + 1, min_b[k + 1]);

    /* The graph runs: DAG_RUNS async pairs, each around its tasks. */
    WT_ASSERT_EQ(tr_count(t, 'b', "graph", NULL), DAG_RUNS);
    WT_ASSERT_EQ(tr_count(t, 'e', "graph", NULL), DAG_RUNS);
    const tr_event *b[DAG_RUNS], *e[DAG_RUNS];
    for (int k = 0; k < DAG_RUNS; k++) {
        b[k] = tr_find(t, 'b', "graph", NULL, (size_t)k);
        e[k] = NULL;
        for (int j = 0; j < DAG_RUNS; j++) {
            const tr_event *x = tr_find(t, 'e', "graph", NULL, (size_t)j);
            if (tj_equal(x->id, b[k]->id))
                e[k] = x;
        }
        WT_ASSERT(e[k] != NULL, "%u workers: a graph run's b event has no e with its id", w);
    }
    for (int k = 0; k < DAG_RUNS; k++)   /* by begin */
        for (int j = k + 1; j < DAG_RUNS; j++)
            if (b[j]->ts < b[k]->ts) {
                const tr_event *x = b[j], *y = e[j];
                b[j] = b[k], e[j] = e[k];
                b[k] = x, e[k] = y;
            }
    for (int k = 0; k < DAG_RUNS; k++)
        WT_ASSERT(b[k]->ts <= min_b[k] + TR_EPS && e[k]->ts + TR_EPS >= max_e[k],
                  "%u workers: graph run %d's pair [%.4f, %.4f] does not hold its tasks [%.4f, %.4f]", w, k, b[k]->ts,
                  e[k]->ts, min_b[k], max_e[k]);
}

WT_TEST(trace, graph_dag, .timeout = 300)
{
    uint64_t rng = wt_seed();
    struct dag *d = calloc(1, sizeof *d);
    WT_ASSERT(d != NULL);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int gi = 0; gi < 3; gi++) {
            memset(d, 0, sizeof *d);
            weft_graph *g = dag_build(d, &rng);
            fprintf(stderr, "graph_dag: %u workers, %d tasks, %d edges\n", w, d->n, d->ne);
            weft_sched *s = open_s(w);
            start_ok(s, BIG);
            for (int k = 0; k < DAG_RUNS; k++) {
                d->run = k;
                WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            }
            stop_ok(s);
            for (int i = 0; i < d->n; i++)
                WT_ASSERT_EQ(atomic_load(&d->ran[i]), DAG_RUNS);
            tr_trace t;
            CAPTURE(s, &t);
            dag_check(d, &t, w);
            tr_free(&t);
            close_s(s, w);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
    }
    free(d);
}

/* ---- names ------------------------------------------------------------------------- */

static weft_waitgroup names_wg;

/* Not static: their symbols are the names a trace shows (see the top). */
void trace_named_fn(void *p);
void trace_graph_fn(void *p);

void trace_named_fn(void *p)
{
    (void)p;
    weft_waitgroup_done(&names_wg);
}

void trace_graph_fn(void *p)
{
    (void)p;
}

static void names_done(void *p)
{
    (void)p;
    weft_waitgroup_done(&names_wg);
}

/* Control characters, quotes, backslashes, a slash and UTF-8. */
#define ODD_NAME "q\"b\\s/\n\t\x01\x1f\x7f caf\xc3\xa9 \xe2\x82\xac"

WT_TEST(trace, names, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *named = weft_graph_add(g, trace_graph_fn, NULL);
        weft_task *unnamed = weft_graph_add(g, trace_graph_fn, NULL);
        weft_task *odd = weft_graph_add(g, trace_graph_fn, NULL);
        WT_ASSERT(named && unnamed && odd);
        char tmp[32];
        snprintf(tmp, sizeof tmp, "gname");
        weft_task_set_name(named, tmp);
        memset(tmp, 'x', sizeof tmp - 1);   /* the name was copied */
        weft_task_set_name(odd, "g-" ODD_NAME);

        start_ok(s, BIG);
        weft_waitgroup_init(&names_wg, 3);
        WT_ASSERT_EQ(spawn_named(s, names_done, NULL, "hello"), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(s, trace_named_fn, NULL), WEFT_OK);
        WT_ASSERT_EQ(spawn_named(s, names_done, NULL, ODD_NAME), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&names_wg), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        stop_ok(s);
        weft_waitgroup_destroy(&names_wg);

        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(nruns(&t, "hello") == 1, "%u workers: weft_spawn_opts.name \"hello\" shows %zu times", w,
                  nruns(&t, "hello"));
        WT_ASSERT(nruns(&t, "trace_named_fn") == 1,
                  "%u workers: weft_spawn(trace_named_fn) does not show as its symbol (%zu runs)", w,
                  nruns(&t, "trace_named_fn"));
        WT_ASSERT(nruns(&t, ODD_NAME) == 1, "%u workers: a name with quotes, control characters and UTF-8 did not "
                  "survive the JSON round trip", w);
        WT_ASSERT(nruns(&t, "gname") == 1, "%u workers: graph task name \"gname\": %zu runs", w, nruns(&t, "gname"));
        WT_ASSERT(nruns(&t, "g-" ODD_NAME) == 1, "%u workers: an odd graph task name did not survive", w);
        WT_ASSERT(nruns(&t, "trace_graph_fn") == 1,
                  "%u workers: an unnamed graph task does not show as its function's symbol (%zu runs)", w,
                  nruns(&t, "trace_graph_fn"));
        tr_free(&t);
        close_s(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
}

/* ---- units and scheduler events ------------------------------------------------------- */

struct timed {
    weft_waitgroup wg;
    uint64_t t0, t1;   /* the task's body, CLOCK_MONOTONIC */
};

static void timed_task(void *p)
{
    struct timed *x = p;
    x->t0 = wt_now_ns();
    busy_ns(5 * MS);
    x->t1 = wt_now_ns();
    weft_waitgroup_done(&x->wg);
}

/* Every worker of s asleep: past its park count (3d of park.c) and not
 * yet woken. In a scheduler with no timers and no fd waits, as here, a
 * worker leaves that state only through a wake-up, which it records. */
static bool all_asleep(weft_sched *s)
{
    for (unsigned i = 0; i < weft_sched_workers(s); i++) {
        weft_worker_stats st;
        WT_ASSERT_EQ(weft_sched_stats(s, i, &st), WEFT_OK);
        if (st.parks <= st.wakeups)
            return false;
    }
    return true;
}

/* Waits for that state: the workers' parks are waited for, not slept
 * for, so that a loaded machine (a worker still spinning after 20 ms)
 * cannot leave the recording without them. A worker that never parks is
 * a hang, caught by the test's timeout. */
static void wait_all_asleep(weft_sched *s)
{
    while (!all_asleep(s))
        nap_ns(20 * US);
}

WT_TEST(trace, units, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        /* The test thread is bound (NO_HELP beside workers, so that a
         * worker runs the task): the wake-up of a parked worker then comes
         * from a thread of s, wherever it is recorded. */
        weft_sched *s = sched_new(w, NULL);
        WT_ASSERT_EQ(weft_sched_bind_ex(s, w ? WEFT_BIND_NO_HELP : 0), WEFT_OK);
        wait_all_asleep(s);   /* the spawn below wakes a parked worker */
        struct timed x;
        weft_waitgroup_init(&x.wg, 1);
        uint64_t a0 = wt_now_ns();
        start_ok(s, BIG);
        uint64_t a1 = wt_now_ns();
        nap_ns(20 * MS);
        uint64_t sp = wt_now_ns();
        WT_ASSERT_EQ(spawn_named(s, timed_task, &x, "timed"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&x.wg), WEFT_OK);
        uint64_t done = wt_now_ns();
        wait_all_asleep(s);   /* the worker that ran it parked again */
        nap_ns(20 * MS);      /* (its park event follows its count at once) */
        stop_ok(s);
        uint64_t a3 = wt_now_ns();

        tr_trace t;
        CAPTURE(s, &t);
        const tr_run *r;
        WT_ASSERT_EQ(tr_runs_named(&t, "timed", &r, 1), 1);
        /* Microseconds from the start, which lies in [a0, a1]. */
        double lo = (double)(sp - a1) / 1e3, hi = (double)(x.t0 - a0) / 1e3;
        double tol = 200 + 0.01 * hi;
        WT_ASSERT(r->begin >= lo - tol && r->begin <= hi + tol,
                  "%u workers: the task began %.1f us into the recording by the trace, between %.1f and %.1f by the clock",
                  w, r->begin, lo, hi);
        /* Its end is stamped after it returns, which may be after the
         * wait (woken by its last call) has returned: bound it by the
         * stop instead. */
        double body = (double)(x.t1 - x.t0) / 1e3, outer = (double)(a3 - sp) / 1e3;
        double dur = r->end - r->begin;
        WT_ASSERT(dur >= body * 0.99 - 50 && dur <= outer * 1.01 + 200,
                  "%u workers: a task busy for %.1f us lasts %.1f us in the trace (spawn to stop: %.1f us)", w, body,
                  dur, outer);
        (void)done;
        double last = 0;
        for (size_t i = 0; i < t.nev; i++)
            if (t.ev[i].ph != 'M' && t.ev[i].ts + t.ev[i].dur > last)
                last = t.ev[i].ts + t.ev[i].dur;
        WT_ASSERT(last <= (double)(a3 - a0) / 1e3 * 1.01 + 200, "%u workers: an event at %.1f us, the recording lasted %.1f",
                  w, last, (double)(a3 - a0) / 1e3);
        if (w > 0) {
            /* A parked worker woke for the task and parked again after it. */
            WT_ASSERT(tr_count(&t, 'i', "sched", "park") >= 1, "%u workers: no park event after the task", w);
            WT_ASSERT(tr_count(&t, 'i', "sched", "wake") >= 1, "%u workers: no wake event for a parked worker", w);
        }
        if (w > 0)
            WT_ASSERT(r->tid < (int)w, "%u workers: the task ran on tid %d, not a worker", w, r->tid);
        tr_free(&t);
        weft_waitgroup_destroy(&x.wg);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- the queue counter ----------------------------------------------------------------- */

struct qc {
    weft_sched *s;
    weft_waitgroup wg;
    atomic_int refused;
};

static void qc_child(void *p)
{
    struct qc *q = p;
    weft_waitgroup_done(&q->wg);
}

static void qc_parent(void *p)
{
    struct qc *q = p;
    for (int i = 0; i < 1000; i++)
        if (weft_spawn(q->s, qc_child, q) != WEFT_OK) {
            atomic_fetch_add(&q->refused, 1);
            weft_waitgroup_done(&q->wg);
        }
    weft_waitgroup_done(&q->wg);
}

/* One worker with a deque of 4096: a task queues 1000 children on it, so
 * its queue is far past 255 when it picks the first of them. */
WT_TEST(trace, queue_counter, .timeout = 120)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.local_capacity = 4096;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    struct qc q = { .s = s };
    weft_waitgroup_init(&q.wg, 1001);
    start_ok(s, BIG);
    WT_ASSERT_EQ(weft_spawn(s, qc_parent, &q), WEFT_OK);
    WT_ASSERT_EQ(weft_waitgroup_wait(&q.wg), WEFT_OK);
    stop_ok(s);
    WT_ASSERT_EQ(atomic_load(&q.refused), 0);
    tr_trace t;
    CAPTURE(s, &t);   /* values outside [0, 255] fail here */
    WT_ASSERT(t.dropped == 0);
    size_t n = tr_count(&t, 'C', NULL, "queue");
    WT_ASSERT(n >= 1000, "%zu queue counter events for 1001 picks", n);
    double top = 0;
    for (size_t i = 0; i < n; i++) {
        const tr_event *e = tr_find(&t, 'C', NULL, "queue", i);
        double v = 0;
        tj_num(e->args->items[0], &v);
        if (v > top)
            top = v;
    }
    WT_ASSERT(top == 255, "the queue held up to 999 tasks, the counter peaked at %g (capped at 255)", top);
    tr_free(&t);
    weft_waitgroup_destroy(&q.wg);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- graph task names: copies ----------------------------------------------------------- */

static void gn_task(void *p)
{
    (void)p;
}

/* Graph task names are copied into the recording ("plus 64 KiB for
 * copies of graph task names"): a trace written after the graph is
 * destroyed or its tasks renamed shows the names they ran under; once
 * the copies' space is spent, no name is shown torn or mixed up. */
WT_TEST(trace, graph_names, .timeout = 120)
{
    enum { NG = 2000 };
    static char names[NG][48];
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *t[NG];
        for (int i = 0; i < NG; i++) {
            snprintf(names[i], sizeof names[i], "long-%04d-%030d", i, i);   /* 40 bytes */
            WT_ASSERT((t[i] = weft_graph_add(g, gn_task, NULL)) != NULL);
            weft_task_set_name(t[i], names[i]);
        }
        start_ok(s, BIG);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        for (int i = 0; i < NG; i++)
            weft_task_set_name(t[i], "renamed");
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        stop_ok(s);
        tr_trace tr;
        CAPTURE(s, &tr);
        size_t shown = 0;
        for (size_t i = 0; i < tr.nruns; i++) {
            const char *n = tr.runs[i].name;
            WT_ASSERT(strcmp(n, "renamed") != 0, "%u workers: a task renamed after its run shows the new name", w);
            if (strncmp(n, "long-", 5) == 0) {
                int k = atoi(n + 5);
                WT_ASSERT(k >= 0 && k < NG && strcmp(n, names[k]) == 0, "%u workers: a torn or mixed-up name: %.40s...",
                          w, n);
                shown++;
            }
        }
        WT_ASSERT(tr.nruns >= NG, "%u workers: %zu runs for %d tasks", w, tr.nruns, NG);
        WT_ASSERT(shown * 41 >= 32 * 1024 || shown == NG, "%u workers: only %zu of %d names shown (64 KiB for copies)",
                  w, shown, NG);
        tr_free(&tr);
        close_s(s, w);
    }
}

/* A graph task's name shows whole, however long (the header names no
 * limit), and a name is never cut inside a UTF-8 sequence: the file must
 * stay valid JSON (strict UTF-8, as tjson reads it). */
WT_TEST(trace, graph_name_long, .timeout = 60)
{
    static const struct {
        const char *what;
        size_t pad;        /* 'a's before the tail */
        const char *tail;
    } cases[] = {
        { "100 bytes", 90, "0123456789" },
        { "a 2-byte character across byte 63", 62, "\xc3\xa9-tail" },
        { "a 3-byte character across byte 63", 62, "\xe2\x82\xac-tail" },
        { "a 4-byte character across byte 63", 61, "\xf0\x9f\x98\x80-tail" },
    };
    char fails[4096] = "";
    size_t nfails = 0;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        char name[160];
        memset(name, 'a', cases[ci].pad);
        snprintf(name + cases[ci].pad, sizeof name - cases[ci].pad, "%s", cases[ci].tail);
        weft_sched *s = open_s(1);
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *t = weft_graph_add(g, gn_task, NULL);
        WT_ASSERT(t != NULL);
        weft_task_set_name(t, name);
        start_ok(s, BIG);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        stop_ok(s);
        tr_trace tr;
        char why[2048];
        size_t used = strlen(fails);
        if (!tr_capture(s, &tr, NULL, why, sizeof why)) {
            nfails++;
            snprintf(fails + used, sizeof fails - used, "\n  graph task name of %s: %.600s", cases[ci].what, why);
        } else if (tr.nruns != 1 || strcmp(tr.runs[0].name, name) != 0) {
            nfails++;
            snprintf(fails + used, sizeof fails - used, "\n  graph task name of %s (%zu bytes) shows as \"%s\" (%zu bytes)",
                     cases[ci].what, strlen(name), tr.nruns ? tr.runs[0].name : "(no run)",
                     tr.nruns ? strlen(tr.runs[0].name) : 0);
        }
        tr_free(&tr);
        close_s(s, 1);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    WT_ASSERT(nfails == 0, "%zu of %zu cases:%s", nfails, sizeof cases / sizeof cases[0], fails);
}

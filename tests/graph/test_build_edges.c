/* Graph building (issue 18), held to what weft.h promises in "task
 * graphs" and "allocation", and to nothing else: the tests use the public
 * API only, so that any correct layout of nodes and edges passes them.
 *
 *   cycle_*               ECYCLE, with nothing run, for cycles of 2 to
 *                         10^5 tasks; deep graphs checked from a task;
 *                         self-edges are EINVAL
 *   duplicate_* .. redeclared_*   duplicate edges, wide fans, 10^6 tasks,
 *                         edges declared again keep memory flat
 *
 * Every run is checked with tickets: each task takes one from a global
 * counter as it starts and one as it ends; for each edge u -> v,
 * end(u) < start(v), and every task runs exactly once per run. Sizes
 * follow WEFT_STRESS_SCALE; the seed is printed (WEFT_SEED= replays).
 * build_util.h has the helpers these files share. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "build_util.h"

/* ==== cycles: ECYCLE and nothing runs ========================================== */

/* A ring of len tasks entered from a root, with a tail hanging off it: the
 * root and the tail could run, but nothing may. The ring's edges are added
 * in a scrambled order, half with succeed. */
static void ring_case(weft_sched *s, uint32_t len, uint64_t *rng, const char *what)
{
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task **t = malloc(sizeof *t * len);
    uint32_t *order = malloc(sizeof *order * len);
    WT_ASSERT(t && order);
    for (uint32_t i = 0; i < len; i++) {
        t[i] = add(g, count, &n);
        order[i] = i;
    }
    shuffle_u32(order, len, rng);
    for (uint32_t k = 0; k < len; k++) {
        uint32_t i = order[k], j = (i + 1) % len;
        WT_ASSERT_EQ(k % 2 ? weft_task_precede(t[i], t[j]) : weft_task_succeed(t[j], t[i]), WEFT_OK);
    }
    weft_task *root = add(g, count, &n), *tail = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(root, t[len / 2]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(t[len - 1], tail), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_size(g), len + 2);
    for (int r = 0; r < 2; r++) {
        int rc = weft_graph_run(s, g);
        WT_ASSERT(rc == WEFT_ECYCLE, "%s, ring of %u: run said %s", what, len, weft_err_name(rc));
    }
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);   /* nothing in flight: at once */
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&n) == 0, "%s, ring of %u: %d tasks ran", what, len, atomic_load(&n));
    WT_ASSERT_EQ(weft_task_state(root), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_task_state(t[0]), WEFT_TASK_PENDING);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    free(t);
    free(order);
}

static const uint32_t ring_lengths[] = { 2, 3, 10, 1000, 100000 };

WT_TEST(build, cycle_rings_2_to_100000, .timeout = 120)
{
    uint64_t rng = wt_seed() ^ 0xc7c1e;
    unsigned counts[] = { 0, 2 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = open_sched(counts[k]);
        char what[64];
        snprintf(what, sizeof what, "%u workers", counts[k]);
        for (size_t i = 0; i < sizeof ring_lengths / sizeof ring_lengths[0]; i++)
            ring_case(s, ring_lengths[i], &rng, what);
        close_sched(s, counts[k]);
    }
}

/* A 3-cycle in the middle of a random DAG of 2000 tasks, with edges into
 * and out of it: ECYCLE, and none of the 2000 runs. */
WT_TEST(build, cycle_inside_a_large_dag, .timeout = 60)
{
    uint64_t seed = wt_seed() ^ 0xd46;
    weft_sched *s = make_sched(2);
    struct dag d;
    dag_alloc(&d, 2000, 2000);
    uint64_t rng = seed;
    dag_generate(&d, &shapes[1], &rng);
    weft_graph *g = new_graph();
    for (uint32_t i = 0; i < d.n; i++)
        d.t[i] = add(g, stamp, &d.rec[i]);
    for (size_t k = 0; k < d.e.n; k++)
        WT_ASSERT_EQ(weft_task_precede(d.t[d.e.u[k]], d.t[d.e.v[k]]), WEFT_OK);
    /* Three tasks in the middle of the order, a < b < c in rank: closing
     * c -> a makes a cycle through the DAG's own edges too. */
    uint32_t by_rank[3] = { 0 };
    for (uint32_t i = 0; i < d.n; i++) {
        if (d.rank[i] == 900) by_rank[0] = i;
        if (d.rank[i] == 1000) by_rank[1] = i;
        if (d.rank[i] == 1100) by_rank[2] = i;
    }
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[0]], d.t[by_rank[1]]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[1]], d.t[by_rank[2]]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(d.t[by_rank[2]], d.t[by_rank[0]]), WEFT_OK);
    recs_reset(d.rec, d.n);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&ticket) == 0, "WEFT_SEED=%llu: tasks of a cyclic graph ran",
              (unsigned long long)wt_seed());
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    dag_free(&d);
}

/* A chain that ran, closed into a ring by an edge added afterwards:
 * ECYCLE, nothing runs, and the refused run changed nothing (the tasks
 * still read as done in the latest run, wait returns its result). */
WT_TEST(build, cycle_closed_after_a_run, .timeout = 60)
{
    unsigned counts[] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++) {
        weft_sched *s = open_sched(counts[k]);
        weft_graph *g = new_graph();
        atomic_int n = 0;
        enum { L = 1000 };
        weft_task *t[L];
        for (int i = 0; i < L; i++) {
            t[i] = add(g, count, &n);
            if (i)
                WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
        }
        run_wait(s, g, "chain");
        WT_ASSERT_EQ(atomic_load(&n), L);
        WT_ASSERT_EQ(weft_task_precede(t[L - 1], t[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_size(g), L);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&n) == L, "%u workers: %d tasks ran after the cycle was closed",
                  counts[k], atomic_load(&n) - L);
        WT_ASSERT_EQ(weft_task_state(t[0]), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_task_state(t[L - 1]), WEFT_TASK_DONE);
        /* More tasks do not make it acyclic. */
        weft_task *x = add(g, count, &n);
        WT_ASSERT_EQ(weft_task_precede(x, t[0]), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), L);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        close_sched(s, counts[k]);
    }
}

/* The check runs wherever weft_graph_run is called, a task's fiber
 * included (256 KiB of stack): a 10^5 ring and a 10^5 chain, the deepest
 * shapes there are, checked from a task. A recursive search would
 * overflow the fiber's stack. */
struct inner_run {
    weft_sched *s;
    weft_graph *g;
    int rc_run, rc_wait;
};

static void run_from_task(void *p)
{
    struct inner_run *in = p;
    in->rc_run = weft_graph_run(in->s, in->g);
    in->rc_wait = weft_graph_wait(in->g);   /* after ECYCLE: at once */
}

WT_TEST(build, deep_graphs_checked_from_a_task, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    enum { L = 100000 };
    weft_task **t = malloc(sizeof *t * L);
    WT_ASSERT(t != NULL);
    for (int ring = 0; ring < 2; ring++) {
        weft_graph *g = new_graph();
        atomic_int n = 0;
        for (int i = 0; i < L; i++)
            t[i] = add(g, count, &n);
        /* Added from the end, so that the order in memory is no help. */
        for (int i = L - 1; i > 0; i--)
            WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
        if (ring)
            WT_ASSERT_EQ(weft_task_precede(t[L - 1], t[0]), WEFT_OK);
        struct inner_run in = { s, g, 1, 1 };
        weft_graph *outer = new_graph();
        add(outer, run_from_task, &in);
        run_wait(s, outer, "outer");
        WT_ASSERT_EQ(in.rc_run, ring ? WEFT_ECYCLE : WEFT_OK);
        WT_ASSERT_EQ(in.rc_wait, WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&n), ring ? 0 : L);
        WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    free(t);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* A self-edge is EINVAL and changes nothing: no cycle, no edge in the
 * dump, the graph runs as before. Also on a task that already has edges,
 * and after a run. */
WT_TEST(build, self_edge_is_einval_and_changes_nothing, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    struct rec r[3];
    weft_task *t[3];
    for (int i = 0; i < 3; i++)
        t[i] = add(g, stamp, &r[i]);
    WT_ASSERT_EQ(weft_task_precede(t[0], t[0]), WEFT_EINVAL);   /* a task with no edge yet */
    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(t[1], t[2]), WEFT_OK);
    struct dot before = dot_of(g);
    for (int i = 0; i < 3; i++) {
        WT_ASSERT_EQ(weft_task_precede(t[i], t[i]), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_task_succeed(t[i], t[i]), WEFT_EINVAL);
    }
    struct dot after = dot_of(g);
    WT_ASSERT(strcmp(before.text, after.text) == 0, "self-edges changed the graph:\n%s\nvs\n%s",
              before.text, after.text);
    WT_ASSERT_EQ(weft_graph_size(g), 3);
    struct edges e = { 0 };
    edges_push(&e, 0, 1);
    edges_push(&e, 1, 2);
    for (int run = 0; run < 2; run++) {
        recs_reset(r, 3);
        run_wait(s, g, "after self-edges");   /* ECYCLE would fail here */
        check_run("after self-edges", r, 3, NULL, &e, t);
        WT_ASSERT_EQ(weft_task_precede(t[2], t[2]), WEFT_EINVAL);   /* and again, after a run */
    }
    free(before.text);
    free(after.text);
    edges_free(&e);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ==== edge cases of the build =============================================== */

/* A task with the same successor added 1, 2, 50 and 10^5 times (precede
 * and succeed mixed, interleaved with other edges of both tasks, before
 * and after runs): one edge, the successor runs once and after it. */
WT_TEST(build, duplicate_edges_act_as_one, .timeout = 120)
{
    static const uint32_t times[] = { 1, 2, 50, 100000 };
    unsigned counts[] = { 1, 2 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = make_sched(counts[k]);
        for (size_t x = 0; x < sizeof times / sizeof times[0]; x++) {
            uint32_t reps = times[x];
            char what[96];
            snprintf(what, sizeof what, "%u workers, an edge added %u times", counts[k], reps);
            /* a -> b the duplicate; a -> c_i and d_i -> b around it: a and
             * b have other edges, so the duplicate is not the only entry. */
            enum { SIDE = 6 };
            struct rec r[2 + 2 * SIDE];
            weft_task *t[2 + 2 * SIDE];
            weft_graph *g = new_graph();
            for (int i = 0; i < 2 + 2 * SIDE; i++)
                t[i] = add(g, stamp, &r[i]);
            struct edges e = { 0 };
            for (uint32_t i = 0; i < reps; i++) {
                WT_ASSERT_EQ(i % 2 ? weft_task_precede(t[0], t[1]) : weft_task_succeed(t[1], t[0]), WEFT_OK);
                if (i < SIDE) {
                    WT_ASSERT_EQ(weft_task_precede(t[0], t[2 + i]), WEFT_OK);
                    WT_ASSERT_EQ(weft_task_precede(t[2 + SIDE + i], t[1]), WEFT_OK);
                    edges_push(&e, 0, 2 + i);
                    edges_push(&e, 2 + SIDE + i, 1);
                }
            }
            edges_push(&e, 0, 1);
            for (uint32_t i = reps; i < SIDE; i++) {
                WT_ASSERT_EQ(weft_task_precede(t[0], t[2 + i]), WEFT_OK);
                WT_ASSERT_EQ(weft_task_precede(t[2 + SIDE + i], t[1]), WEFT_OK);
                edges_push(&e, 0, 2 + i);
                edges_push(&e, 2 + SIDE + i, 1);
            }
            WT_ASSERT_EQ(weft_graph_size(g), 2 + 2 * SIDE);
            struct dot dt = dot_of(g);
            WT_ASSERT(dt.arrows == 1 + 2 * SIDE, "%s: the dump shows %zu edges, want %d", what,
                      dt.arrows, 1 + 2 * SIDE);
            free(dt.text);
            for (int run = 0; run < 3; run++) {
                recs_reset(r, 2 + 2 * SIDE);
                run_wait(s, g, what);
                check_run(what, r, 2 + 2 * SIDE, NULL, &e, t);
                /* Again after a run: still one edge. */
                for (uint32_t i = 0; i < (reps < 1000 ? reps : 1000); i++)
                    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);
                WT_ASSERT_EQ(weft_graph_size(g), 2 + 2 * SIDE);
            }
            dt = dot_of(g);
            WT_ASSERT_EQ(dt.arrows, 1 + 2 * SIDE);
            free(dt.text);
            edges_free(&e);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* Duplicates in a random order among many distinct edges of one task (the
 * successor list is long), and the same edge added by 8 threads at once. */
struct dup_job {
    weft_task *a, *b;
    pthread_barrier_t *bar;
    int bad;
};

static void *dup_thread(void *p)
{
    struct dup_job *j = p;
    pthread_barrier_wait(j->bar);
    for (int i = 0; i < 2000; i++)
        if (weft_task_precede(j->a, j->b) != WEFT_OK)
            j->bad++;
    return NULL;
}

WT_TEST(build, duplicate_edges_among_many_and_from_8_threads, .timeout = 60)
{
    uint64_t rng = wt_seed() ^ 0xd0b0;
    weft_sched *s = make_sched(2);
    enum { W = 300 };
    struct rec r[W + 1];
    weft_task *t[W + 1];
    weft_graph *g = new_graph();
    for (int i = 0; i <= W; i++)
        t[i] = add(g, stamp, &r[i]);
    struct edges e = { 0 };
    for (int i = 1; i <= W; i++)
        edges_push(&e, 0, (uint32_t)i);
    for (int i = 0; i < 3 * W; i++)   /* with every successor again, some many times */
        edges_push(&e, 0, 1 + (uint32_t)(wt_rand(&rng) % W));
    for (size_t i = 0; i < e.n; i++)
        WT_ASSERT_EQ(weft_task_precede(t[e.u[i]], t[e.v[i]]), WEFT_OK);
    /* 8 threads, one edge: last -> first successor. */
    pthread_barrier_t bar;
    WT_ASSERT_EQ(pthread_barrier_init(&bar, NULL, NBUILD), 0);
    pthread_t th[NBUILD];
    struct dup_job jobs[NBUILD];
    for (int k = 0; k < NBUILD; k++) {
        jobs[k] = (struct dup_job){ t[W], t[1], &bar, 0 };
        WT_ASSERT_EQ(pthread_create(&th[k], NULL, dup_thread, &jobs[k]), 0);
    }
    for (int k = 0; k < NBUILD; k++) {
        pthread_join(th[k], NULL);
        WT_ASSERT_EQ(jobs[k].bad, 0);
    }
    pthread_barrier_destroy(&bar);
    edges_push(&e, W, 1);
    struct dot dt = dot_of(g);
    WT_ASSERT(dt.arrows == W + 1, "the dump shows %zu edges, want %d", dt.arrows, W + 1);
    WT_ASSERT_EQ(dt.nodes, W + 1);
    free(dt.text);
    for (int run = 0; run < 3; run++) {
        recs_reset(r, W + 1);
        run_wait(s, g, "duplicates among many");
        check_run("duplicates among many", r, W + 1, NULL, &e, t);
    }
    edges_free(&e);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* One task with 10^5 successors, which all precede one task: 10^5
 * predecessors. Successors added before and after their task. */
WT_TEST(build, fan_out_and_fan_in_of_100000, .timeout = 120)
{
    uint32_t w = (uint32_t)wt_scaled(100000, 30000);
    uint32_t n = w + 2;
    struct rec *r = calloc(n, sizeof *r);
    weft_task **t = calloc(n, sizeof *t);
    WT_ASSERT(r && t);
    weft_graph *g = new_graph();
    /* Half the middle tasks first, then the hub and the sink, then the rest. */
    uint32_t hub = w / 2, sink = w / 2 + 1;
    for (uint32_t i = 0; i < n; i++)
        t[i] = add(g, stamp, &r[i]);
    struct edges e = { 0 };
    for (uint32_t i = 0; i < n; i++) {
        if (i == hub || i == sink)
            continue;
        edges_push(&e, hub, i);
        edges_push(&e, i, sink);
        WT_ASSERT_EQ(weft_task_precede(t[hub], t[i]), WEFT_OK);
        WT_ASSERT_EQ(weft_task_succeed(t[sink], t[i]), WEFT_OK);
    }
    unsigned counts[] = { 1, 2, 8 };
    for (int k = 0; k < 3; k++) {
        weft_sched *s = make_sched(counts[k]);
        char what[64];
        snprintf(what, sizeof what, "fans of %u, %u workers", w, counts[k]);
        for (int run = 0; run < 2; run++) {
            recs_reset(r, n);
            run_wait(s, g, what);
            check_run(what, r, n, NULL, &e, NULL);
        }
        WT_ASSERT_EQ(weft_task_state(t[sink]), WEFT_TASK_DONE);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    struct dot dt = dot_of(g);
    WT_ASSERT_EQ(dt.arrows, 2 * (size_t)w);
    free(dt.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    edges_free(&e);
    free(r);
    free(t);
}

/* 10^6 independent tasks: every one a root and a sink. */
static atomic_uchar *million_ran;

static void mark_ran(void *arg)
{
    atomic_fetch_add_explicit(&million_ran[(uintptr_t)arg], 1, memory_order_relaxed);
}

WT_TEST(build, a_million_independent_tasks, .timeout = 120)
{
    uint32_t n = (uint32_t)wt_scaled(1000000, 100000);
    million_ran = calloc(n, sizeof *million_ran);
    WT_ASSERT(million_ran != NULL);
    weft_graph *g = new_graph();
    for (uint32_t i = 0; i < n; i++)
        WT_ASSERT(weft_graph_add(g, mark_ran, (void *)(uintptr_t)i) != NULL, "add %u failed", i);
    WT_ASSERT_EQ(weft_graph_size(g), n);
    unsigned counts[] = { 2, 8 };
    for (int k = 0; k < 2; k++) {
        weft_sched *s = make_sched(counts[k]);
        for (unsigned run = 1; run <= 2; run++) {
            run_wait(s, g, "a million tasks");
            unsigned want = (unsigned)k * 2 + run;
            for (uint32_t i = 0; i < n; i++)
                if (atomic_load_explicit(&million_ran[i], memory_order_relaxed) != want)
                    WT_FAIL("%u workers, run %u: task %u ran %u times in all, want %u", counts[k], run,
                            i, (unsigned)atomic_load(&million_ran[i]), want);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    free(million_ran);
}

/* Edges declared again every frame (a user who rebuilds a frame's edges
 * on a graph kept across frames) cost no memory after the first frames:
 * a task with few successors finds the edge there; one with many takes
 * it unsearched and the check drops the repeat, and its list keeps its
 * capacity for the next frame's repeats. 4 and 20 edges per task. */
WT_TEST(build, redeclared_edges_keep_memory_flat, .timeout = 120)
{
    weft_sched *s = make_sched(1);   /* before the hook: its memory is not counted */
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    enum { NT = 100, FRAMES = 2000 };
    static const int fanout[] = { 4, 20 };
    for (int f = 0; f < 2; f++) {
        weft_graph *g = new_graph();
        atomic_int n = 0;
        weft_task *t[NT];
        for (int i = 0; i < NT; i++)
            t[i] = add(g, count, &n);
        long warm = 0;
        for (int frame = 0; frame < FRAMES; frame++) {
            for (int i = 0; i < NT; i++)
                for (int j = 1; j <= fanout[f] && i + j < NT; j++)
                    WT_ASSERT_EQ(weft_task_precede(t[i], t[i + j]), WEFT_OK);
            run_wait(s, g, "frame");
            long held = atomic_load(&a.bytes);
            if (frame == 10)
                warm = held;
            WT_ASSERT(frame <= 10 || held <= 2 * warm + 64 * 1024,
                      "fan-out %d, frame %d: the graph holds %ld bytes, %ld after 10 frames",
                      fanout[f], frame, held, warm);
        }
        WT_ASSERT_EQ(atomic_load(&n), NT * FRAMES);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    weft_set_allocator(NULL);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* solver: an iterative solver written as a graph with a loop in it.
 *
 * Jacobi iteration for the 1-D Poisson problem -u'' = 1 on [0, 1] with
 * u(0) = u(1) = 0, on n points: every sweep computes each point from its
 * two neighbours of the previous sweep, until the largest change in a
 * sweep falls under a tolerance (or a budget of sweeps runs out: Jacobi
 * is slow to converge; the point is the loop).
 *
 * The graph, as a Taskflow user would draw it:
 *
 *   init --> sweep --> converged? --0--> sweep      (a loop: a weak edge)
 *                              \--1--> report
 *
 * `sweep` is a module: a graph of its own, composed into the loop, made
 * of one task per block of points (each writes its block of the new
 * array and its block's largest change) and a `swap` task after all of
 * them (the new array becomes the old, the blocks' changes are reduced).
 * `converged?` is a condition task: its answer picks the edge to follow.
 * The whole solve is one weft_graph_run: no thread waits between sweeps,
 * nothing is allocated per sweep.
 *
 * The same sweeps run sequentially first; the graph's answer (sweep count
 * and every value) must match it exactly, else WRONG and exit 1.
 *
 *   solver [points [workers]]     defaults: 100000 points, one worker per CPU
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define BLOCKS 16
#define MAX_SWEEPS 500
#define TOL 1e-3                /* of h^2: the size of one sweep's first step */

struct solve {
    size_t n;                   /* points, boundaries included */
    double h2;                  /* h^2: the right-hand side's weight */
    double *old, *new;          /* the last sweep's values, this sweep's */
    double change[BLOCKS];      /* each block's largest change this sweep */
    double largest;             /* this sweep's largest change */
    int sweeps;
};

struct block {
    struct solve *s;
    size_t from, to;            /* the interior points [from, to) */
    int b;
};

/* One block of one sweep: the same arithmetic in the same order as the
 * sequential sweep below, so both give the same bits. */
static void sweep_block(void *arg)
{
    struct block *k = arg;
    struct solve *s = k->s;
    double largest = 0;
    for (size_t i = k->from; i < k->to; i++) {
        double v = 0.5 * (s->old[i - 1] + s->old[i + 1] + s->h2);
        double d = fabs(v - s->old[i]);
        if (d > largest)
            largest = d;
        s->new[i] = v;
    }
    s->change[k->b] = largest;
}

static void swap(void *arg)
{
    struct solve *s = arg;
    double largest = 0;
    for (int b = 0; b < BLOCKS; b++)
        if (s->change[b] > largest)
            largest = s->change[b];
    s->largest = largest;
    double *t = s->old;
    s->old = s->new;
    s->new = t;
    s->sweeps++;
}

static void init(void *arg)
{
    struct solve *s = arg;
    memset(s->old, 0, sizeof *s->old * s->n);
    memset(s->new, 0, sizeof *s->new * s->n);   /* boundaries stay 0 in both */
    s->sweeps = 0;
}

/* 0: sweep again; 1: done. */
static int converged(void *arg)
{
    struct solve *s = arg;
    return s->largest > TOL * s->h2 && s->sweeps < MAX_SWEEPS ? 0 : 1;
}

static void report(void *arg)
{
    (void)arg;   /* the loop's exit: main reads the result after the wait */
}

static void solve_sequential(struct solve *s, struct block *k)
{
    init(s);
    do {
        for (int b = 0; b < BLOCKS; b++)
            sweep_block(&k[b]);
        swap(s);
    } while (converged(s) == 0);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "solver: %s: %s\n", what, weft_strerror(rc));
        exit(1);
    }
    return rc;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    if (n < BLOCKS + 2) {
        fprintf(stderr, "usage: solver [points >= %d [workers]]\n", BLOCKS + 2);
        return 2;
    }
    struct solve s = { .n = n };
    double h = 1.0 / (double)(n - 1);
    s.h2 = h * h;
    double *a = malloc(sizeof *a * n), *b = malloc(sizeof *b * n);
    if (!a || !b)
        return 1;
    s.old = a;
    s.new = b;
    struct block k[BLOCKS];
    size_t interior = n - 2;
    for (int i = 0; i < BLOCKS; i++)
        k[i] = (struct block){ &s, 1 + interior * i / BLOCKS, 1 + interior * (i + 1) / BLOCKS, i };

    /* The sequential answer, kept aside. */
    double t0 = now();
    solve_sequential(&s, k);
    double seq_time = now() - t0;
    int seq_sweeps = s.sweeps;
    double *want = malloc(sizeof *want * n);
    if (!want)
        return 1;
    memcpy(want, s.old, sizeof *want * n);

    weft_config cfg;
    weft_config_init(&cfg);
    if (argc > 2)
        cfg.workers = atoi(argv[2]) > 0 ? (unsigned)atoi(argv[2]) : WEFT_WORKERS_NONE;
    weft_sched *sched;
    check(weft_sched_create(&sched, &cfg), "sched_create");
    if (cfg.workers == WEFT_WORKERS_NONE && argc > 2)
        check(weft_sched_bind(sched), "bind");   /* no workers: this thread runs the tasks while it waits */

    /* The module: one sweep. */
    weft_graph *sweep;
    check(weft_graph_create(&sweep), "graph_create");
    weft_task *sw = weft_graph_add(sweep, swap, &s);
    for (int i = 0; i < BLOCKS; i++) {
        weft_task *t = weft_graph_add(sweep, sweep_block, &k[i]);
        if (!t || !sw)
            check(WEFT_ENOMEM, "add");
        check(weft_task_precede(t, sw), "precede");
    }

    /* The loop. */
    weft_graph *loop;
    check(weft_graph_create(&loop), "graph_create");
    weft_task *ti = weft_graph_add(loop, init, &s);
    weft_task *tm = weft_graph_add_module(loop, sweep);
    weft_task *tc = weft_graph_add_cond(loop, converged, &s);
    weft_task *tr = weft_graph_add(loop, report, &s);
    if (!ti || !tm || !tc || !tr)
        check(WEFT_ENOMEM, "add");
    weft_task_set_name(ti, "init");
    weft_task_set_name(tm, "sweep");
    weft_task_set_name(tc, "converged?");
    weft_task_set_name(tr, "report");
    check(weft_task_precede(ti, tm), "precede");
    check(weft_task_precede(tm, tc), "precede");
    check(weft_task_precede(tc, tm), "precede");   /* answer 0: sweep again */
    check(weft_task_precede(tc, tr), "precede");   /* answer 1: done */

    t0 = now();
    check(weft_graph_run(sched, loop), "run");
    check(weft_graph_wait(loop), "wait");
    double graph_time = now() - t0;

    bool same = s.sweeps == seq_sweeps && memcmp(s.old, want, sizeof *want * n) == 0;
    printf("solver: %zu points, %d sweeps (largest last change %.3g), u(1/2) = %.9f\n",
           n, s.sweeps, s.largest, s.old[n / 2]);
    printf("solver: sequential %.3f s, graph %.3f s (%.2fx); %s\n", seq_time, graph_time,
           seq_time / graph_time, same ? "same sweeps and values as sequential" : "WRONG: differs from sequential");

    weft_graph_destroy(loop);
    weft_graph_destroy(sweep);
    if (cfg.workers == WEFT_WORKERS_NONE && argc > 2)
        weft_sched_unbind();
    weft_sched_destroy(sched);
    free(want);
    free(a);
    free(b);
    return same ? 0 : 1;
}

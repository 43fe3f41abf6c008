/* Graph building (issue 18), held to what weft.h promises in "task
 * graphs" and "allocation", and to nothing else: the tests use the public
 * API only, so that any correct layout of nodes and edges passes them.
 *
 *   alloc_fail_every_n    the N-th allocation fails during a build: the
 *                         failing call changes nothing, the others stand
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

/* ==== allocation failure at every N during a build ================================ */

/* A chain of CH tasks; a fan-out task with FAN successors hanging off the
 * chain's middle; a fan-in task with FAN predecessors, added before them
 * (its edges point back), ahead of the chain's last task; names on some. */
enum { CH = 3000, FAN = 600 };

#define A_FANOUT CH

#define A_FANIN (CH + 1 + FAN)

#define A_TASKS (CH + 1 + FAN + 1 + FAN)

static struct {
    walloc *a;
    weft_graph *g;
    weft_task *t[A_TASKS];
    bool present[A_TASKS];
    char label[A_TASKS][48];   /* the name the dump must show; "" = none */
    struct rec rec[A_TASKS];
    struct edges e;            /* the edges whose calls succeeded */
    long enomem, hits;         /* calls that said ENOMEM; allocations failed on purpose */
    const char *where;         /* the call that hit the failure */
} A;

static bool hit_since(long failed_before)
{
    return atomic_load(&A.a->failed) != failed_before;
}

static void a_add(uint32_t i, const char *where)
{
    size_t before = weft_graph_size(A.g);
    long f0 = atomic_load(&A.a->failed);
    weft_task *t;
    int rc;
    if (i % 2) {
        t = weft_graph_add(A.g, stamp, &A.rec[i]);
        rc = t ? WEFT_OK : WEFT_ENOMEM;
    } else {
        t = (weft_task *)&A;   /* not NULL: a failure must clear it */
        rc = weft_graph_add_task(A.g, stamp, &A.rec[i], &t);
        if (rc != WEFT_OK)
            WT_ASSERT(t == NULL, "a failed add_task left *out %p", (void *)t);
    }
    bool hit = hit_since(f0);
    if (rc != WEFT_OK) {
        WT_ASSERT(rc == WEFT_ENOMEM && hit, "add of task %u (%s): %s, failed allocation: %d",
                  i, where, weft_err_name(rc), hit);
        WT_ASSERT(weft_graph_size(A.g) == before, "a failed add of task %u (%s) changed the size", i, where);
        A.enomem++;
        A.where = where;
        return;
    }
    WT_ASSERT(!hit, "add of task %u (%s) succeeded though its allocation failed", i, where);
    WT_ASSERT_EQ(weft_graph_size(A.g), before + 1);
    A.t[i] = t;
    A.present[i] = true;
}

static void a_edge(uint32_t u, uint32_t v, const char *where)
{
    if (!A.present[u] || !A.present[v])
        return;
    size_t before = weft_graph_size(A.g);
    long f0 = atomic_load(&A.a->failed);
    int rc = (u + v) % 2 ? weft_task_precede(A.t[u], A.t[v]) : weft_task_succeed(A.t[v], A.t[u]);
    bool hit = hit_since(f0);
    WT_ASSERT_EQ(weft_graph_size(A.g), before);
    if (rc != WEFT_OK) {
        WT_ASSERT(rc == WEFT_ENOMEM && hit, "edge %u -> %u (%s): %s, failed allocation: %d",
                  u, v, where, weft_err_name(rc), hit);
        A.enomem++;
        A.where = where;
        return;
    }
    WT_ASSERT(!hit, "edge %u -> %u (%s) succeeded though its allocation failed", u, v, where);
    edges_push(&A.e, u, v);
}

/* A name ends in ';' so that no name is a prefix of another in the dump.
 * Renames ('R') are longer than first names, so that they cannot reuse
 * the old name's memory: a rename that fails keeps the old name. */
static void a_name(uint32_t i, char tag)
{
    if (!A.present[i])
        return;
    char nm[48];
    snprintf(nm, sizeof nm, "%c%u;%s", tag, i, tag == 'R' ? "................................" : "");
    long f0 = atomic_load(&A.a->failed);
    weft_task_set_name(A.t[i], nm);
    if (hit_since(f0))
        A.where = "set_name";   /* the old name stays */
    else
        snprintf(A.label[i], sizeof A.label[i], "%s", nm);
}

static void a_build(void)
{
    uint32_t prev = UINT32_MAX;
    for (uint32_t i = 0; i < CH; i++) {
        a_add(i, "chain task");
        if (!A.present[i])
            continue;
        if (prev != UINT32_MAX)
            a_edge(prev, i, "chain edge");
        prev = i;
        if (i % 100 == 0)
            a_name(i, 'c');
        if (i % 300 == 0)
            a_name(i, 'R');   /* a rename: if it fails, the 'c' name stays */
    }
    a_add(A_FANOUT, "fan-out task");
    a_name(A_FANOUT, 'o');
    a_edge(CH / 2, A_FANOUT, "into the fan-out");
    for (uint32_t k = 0; k < FAN; k++) {
        uint32_t s = A_FANOUT + 1 + k;
        a_add(s, "fan-out successor");
        a_edge(A_FANOUT, s, "fan-out edge");
    }
    a_add(A_FANIN, "fan-in task");
    a_name(A_FANIN, 'i');
    for (uint32_t k = 0; k < FAN; k++) {
        uint32_t p = A_FANIN + 1 + k;
        a_add(p, "fan-in predecessor");
        a_edge(p, A_FANIN, "fan-in edge (backward)");
    }
    a_edge(A_FANIN, CH - 1, "fan-in to the chain's end");
    a_edge(A_FANOUT, A_FANOUT + 1, "a duplicate fan-out edge");
    a_edge(A_FANIN + FAN, A_FANIN, "a duplicate fan-in edge");
    a_edge(0, 1, "a duplicate chain edge");
}

/* Checks the dump against what succeeded: the edges, the tasks, the names.
 * The dump allocates too: ENOMEM writes nothing, and the retry works. */
static void a_check_dump(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_ASSERT(f != NULL);
    long f0 = atomic_load(&A.a->failed);
    int rc = weft_graph_dump_dot(A.g, f);
    if (rc == WEFT_ENOMEM) {
        WT_ASSERT(hit_since(f0), "dump: ENOMEM with no failed allocation");
        fflush(f);
        WT_ASSERT(len == 0, "a dump that failed wrote %zu bytes", len);
        A.where = "dump";
        rc = weft_graph_dump_dot(A.g, f);
    }
    WT_ASSERT_EQ(rc, WEFT_OK);
    WT_ASSERT_EQ(fclose(f), 0);
    size_t arrows = 0, nodes = 0;
    for (const char *p = text; (p = strchr(p, '\n')) != NULL; p++) {
        const char *line = p;
        while (line > text && line[-1] != '\n')
            line--;
        if (memmem(line, (size_t)(p - line), "->", 2))
            arrows++;
        else if (memmem(line, (size_t)(p - line), "label=", 6))
            nodes++;
    }
    size_t m, present = 0;
    free(edges_distinct(&A.e, &m));
    for (uint32_t i = 0; i < A_TASKS; i++)
        present += A.present[i];
    WT_ASSERT(arrows == m, "the dump has %zu edges; %zu distinct edge calls succeeded", arrows, m);
    WT_ASSERT(nodes == present, "the dump has %zu tasks; %zu adds succeeded", nodes, present);
    for (uint32_t i = 0; i < A_TASKS; i++) {
        if (!A.label[i][0])
            continue;
        WT_ASSERT(strstr(text, A.label[i]) != NULL, "task %u: name %s missing", i, A.label[i]);
        if (A.label[i][0] == 'c') {   /* no rename took: a failed one left no trace */
            char other[16];
            snprintf(other, sizeof other, "R%u;", i);
            WT_ASSERT(strstr(text, other) == NULL, "task %u: a failed rename to %s shows", i, other);
        }
    }
    free(text);
}

/* One build with the N-th allocation (from the first build call on)
 * failing: the call that hit it said so and changed nothing, every other
 * call stood, and the graph runs exactly what was built. Returns true if
 * the failure was hit (somewhere: build, first run, dump). */
static bool a_round(weft_sched *s, long n)
{
    walloc_fail_at(A.a, 0);
    memset(A.t, 0, sizeof A.t);
    memset(A.present, 0, sizeof A.present);
    memset(A.label, 0, sizeof A.label);
    A.e.n = 0;
    A.enomem = 0;
    A.where = NULL;
    A.g = new_graph();
    walloc_fail_at(A.a, n);
    a_build();
    long build_calls = atomic_load(&A.a->calls);

    /* The first run checks the graph, which may allocate: ENOMEM there
     * starts nothing, and the next run goes. */
    recs_reset(A.rec, A_TASKS);
    long f0 = atomic_load(&A.a->failed);
    int rc = weft_graph_run(s, A.g);
    if (rc == WEFT_ENOMEM) {
        WT_ASSERT(hit_since(f0), "run: ENOMEM with no failed allocation");
        WT_ASSERT_EQ(weft_graph_wait(A.g), WEFT_OK);   /* no run in flight: at once */
        WT_ASSERT(atomic_load(&ticket) == 0, "a run that failed with ENOMEM ran tasks");
        A.where = "first run";
        rc = weft_graph_run(s, A.g);
    }
    WT_ASSERT(rc == WEFT_OK, "N = %ld: run: %s", n, weft_err_name(rc));
    WT_ASSERT_EQ(weft_graph_wait(A.g), WEFT_OK);
    char what[96];
    snprintf(what, sizeof what, "allocation %ld failed (%s)", n, A.where ? A.where : "none");
    check_run(what, A.rec, A_TASKS, A.present, &A.e, NULL);

    /* Unchanged since: the next run allocates nothing. */
    long calls = atomic_load(&A.a->calls);
    recs_reset(A.rec, A_TASKS);
    run_wait(s, A.g, what);
    check_run(what, A.rec, A_TASKS, A.present, &A.e, NULL);
    WT_ASSERT(atomic_load(&A.a->calls) == calls, "%s: a run of an unchanged graph made %ld allocations",
              what, atomic_load(&A.a->calls) - calls);

    a_check_dump();
    bool hit = atomic_load(&A.a->failed) != 0;
    WT_ASSERT(hit == (A.where != NULL), "%s: the failure hit no call that could see it", what);
    WT_ASSERT(A.enomem <= 1, "%s: %ld calls said ENOMEM for one failed allocation", what, A.enomem);
    WT_ASSERT_EQ(weft_graph_destroy(A.g), WEFT_OK);
    A.g = NULL;
    walloc_fail_at(A.a, 0);
    /* Setting the allocator again, with no graph left, gives back the
     * headers a checked build keeps after destroy (weft_graph_destroy). */
    weft_set_allocator(walloc_hooks(A.a));
    WT_ASSERT(atomic_load(&A.a->blocks) == 0, "%s: %ld blocks left after destroy", what,
              atomic_load(&A.a->blocks));
    if (!hit)
        fprintf(stderr, "alloc_fail_every_n: a whole build makes %ld allocations\n", build_calls);
    return hit;
}

WT_TEST(build, alloc_fail_every_n, .timeout = 300)
{
    /* The scheduler has an allocator of its own: only the graph's fail. */
    static walloc sa = WALLOC_INIT("scheduler"), fa = WALLOC_INIT("failing");
    walloc_hooks(&sa);
    walloc_hooks(&fa);
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    c.allocator = sa.hooks;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    weft_set_allocator(&fa.hooks);
    A.a = &fa;
    long rounds = 0, run_failed = 0;
    /* Every N up to 400, then steps of about 6%. */
    for (long n = 1;; n += n < 400 ? 1 : n / 16) {
        WT_ASSERT(n < 10 * 1000 * 1000, "the build never stops allocating");
        bool hit = a_round(s, n);
        rounds++;
        if (!hit)
            break;
        run_failed += A.where && strcmp(A.where, "first run") == 0;
    }
    weft_set_allocator(NULL);
    edges_free(&A.e);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&sa.blocks), 0);
    WT_ASSERT(rounds >= 3, "only %ld rounds: the build hardly allocates", rounds);
    fprintf(stderr, "alloc_fail_every_n: %ld rounds, %ld with the first run's check failing\n",
            rounds, run_failed);
}

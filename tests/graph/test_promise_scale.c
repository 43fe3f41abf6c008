/* Nothing a user builds costs exponential time or keeps memory past its
 * documented cap (issue 30, finding 16), held to what weft.h promises for
 * modules, the DOT dump and a destroyed graph's memory:
 *
 *   cond_*      a condition picking 1 of 8 module tasks, each a module of
 *               the level below, 20 levels deep: a run starts 20 sub runs
 *               and checks each graph once, where a check that walks every
 *               path through the shared modules would take 8^20 steps
 *   lattice_*   a 40-deep lattice (each level two module tasks of the level
 *               below) with a cycle or a depth bound met only past the
 *               first path: ECYCLE at once; a shared graph reached first at
 *               a shallow depth and again deep down still counts the deep
 *               use against the 64-level bound
 *   dot_*       the dump of that lattice draws each distinct graph once and
 *               points the other module tasks at it: a few hundred bytes a
 *               graph, every edge between declared ids
 *   memory_*    20 graphs of 2*10^5 tasks (named, a hub with 2*10^5
 *               successors), all alive, then destroyed: with a counting
 *               allocator nothing is left outstanding; with the default one
 *               the process's resident memory ends within the 64 MiB of
 *               kept blocks (plus slack) of where it started
 *
 * Runs at 0 workers (this thread bound), 1, 2 and 8 where a scheduler is
 * involved. Tasks never assert: they count, and the test checks. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"

static void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void nothing(void *arg)
{
    (void)arg;
}

static int pick_first(void *arg)
{
    (void)arg;
    return 0;
}

static weft_task *add_mod(weft_graph *g, weft_graph *sub)
{
    weft_task *t = weft_graph_add_module(g, sub);
    WT_ASSERT(t != NULL, "weft_graph_add_module failed");
    return t;
}

static void destroy_all(weft_graph **g, int n)
{
    for (int i = 0; i < n; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
}

/* ---- a condition over shared modules ------------------------------------------ */

/* g[0]: one counting task; g[k]: a condition picking the first of 8
 * module tasks of g[k-1]. A run of g[L-1] counts once. */
#define CLEVELS 20
#define CFAN 8

static void build_cond_tower(weft_graph **g, atomic_int *hits)
{
    g[0] = new_graph();
    add(g[0], count, hits);
    for (int k = 1; k < CLEVELS; k++) {
        g[k] = new_graph();
        weft_task *c = weft_graph_add_cond(g[k], pick_first, NULL);
        WT_ASSERT(c != NULL);
        for (int j = 0; j < CFAN; j++)
            WT_ASSERT_EQ(weft_task_precede(c, add_mod(g[k], g[k - 1])), WEFT_OK);
    }
}

WT_TEST(scale, cond_over_shared_modules_checks_each_graph_once, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        static atomic_int hits;
        atomic_store(&hits, 0);
        weft_graph *g[CLEVELS];
        build_cond_tower(g, &hits);
        run_wait(s, g[CLEVELS - 1], "tower");
        WT_ASSERT_EQ(atomic_load(&hits), 1);
        /* A series, and a graph built on between runs (checked again). */
        add(g[0], nothing, NULL);
        WT_ASSERT_EQ(weft_graph_run_n(s, g[CLEVELS - 1], 50), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_wait(g[CLEVELS - 1]), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&hits), 51);
        destroy_all(g, CLEVELS);
        close_sched(s, w);
    }
}

/* ---- lattices of shared modules ----------------------------------------------- */

/* g[k] for k < n: a task "work", and for k > 0 two module tasks of
 * g[k-1]. g[n-1] is the top: drawn in full it is 2^(n-1) graphs. */
static void build_lattice(weft_graph **g, int n)
{
    for (int k = 0; k < n; k++) {
        g[k] = new_graph();
        weft_task_set_name(add(g[k], nothing, NULL), "work");
        if (k > 0) {
            add_mod(g[k], g[k - 1]);
            add_mod(g[k], g[k - 1]);
        }
    }
}

#define LDEPTH 40

WT_TEST(scale, lattice_cycle_behind_the_first_path_is_found_at_once, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        weft_graph *g[LDEPTH + 1];
        build_lattice(g, LDEPTH);
        /* The top's last module task closes a cycle: x runs the top. */
        weft_graph *x = g[LDEPTH] = new_graph();
        add_mod(x, g[LDEPTH - 1]);
        add_mod(g[LDEPTH - 1], x);
        WT_ASSERT_EQ(weft_graph_run(s, g[LDEPTH - 1]), WEFT_ECYCLE);
        WT_ASSERT_EQ(weft_graph_run(s, x), WEFT_ECYCLE);
        destroy_all(g, LDEPTH + 1);
        close_sched(s, w);
    }
}

/* top: module of x first, then module of c[0] -> c[1] -> ... -> c[k-1]
 * -> x, where x heads a chain of h more graphs. The deepest graph is at
 * k + 1 + h module levels below the top; weft.h allows 64. x is met first one level
 * down: its second use, k + 1 down, must count against the bound. */
static int run_deep_share(weft_sched *s, int k, int h)
{
    weft_graph *x[16], *c[64];
    WT_ASSERT(h < 16 && k < 64);
    for (int i = 0; i <= h; i++) {
        x[i] = new_graph();
        add(x[i], nothing, NULL);
    }
    for (int i = 0; i < h; i++)
        add_mod(x[i], x[i + 1]);
    for (int i = 0; i < k; i++) {
        c[i] = new_graph();
        add(c[i], nothing, NULL);
    }
    for (int i = 0; i + 1 < k; i++)
        add_mod(c[i], c[i + 1]);
    add_mod(c[k - 1], x[0]);
    weft_graph *top = new_graph();
    /* One after the other: x runs once at a time. */
    WT_ASSERT_EQ(weft_task_precede(add_mod(top, x[0]), add_mod(top, c[0])), WEFT_OK);
    int rc = weft_graph_run(s, top);
    if (rc == WEFT_OK)
        rc = weft_graph_wait(top);
    WT_ASSERT_EQ(weft_graph_destroy(top), WEFT_OK);
    destroy_all(c, k);
    destroy_all(x, h + 1);
    return rc;
}

WT_TEST(scale, lattice_shared_graph_counts_its_deepest_use, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_sched(w);
        /* 64 levels reads two ways (test_module_shape's nesting_past_64): 63
         * run, 65 are ECYCLE. */
        WT_ASSERT_EQ(run_deep_share(s, 52, 10), WEFT_OK);       /* 52 + 1 + 10 = 63 */
        WT_ASSERT_EQ(run_deep_share(s, 54, 10), WEFT_ECYCLE);   /* 65 */
        close_sched(s, w);
    }
}

/* ---- the DOT dump of a lattice ------------------------------------------------ */

/* Whether id (len bytes) is declared as a node in text. */
static bool declared(const char *text, const char *id, size_t len)
{
    char want[256];
    WT_ASSERT(len + 10 < sizeof want);
    snprintf(want, sizeof want, " %.*s [label=", (int)len, id);
    return strstr(text, want) != NULL;
}

WT_TEST(scale, dot_lattice_draws_each_graph_once, .timeout = 60)
{
    weft_graph *g[LDEPTH];
    build_lattice(g, LDEPTH);
    char *text = dot_text(g[LDEPTH - 1]);
    size_t len = strlen(text);
    size_t nodes = 0, works = 0, edges = 0, dotted = 0;
    for (const char *p = text; (p = strstr(p, " [label=")) != NULL; p++) {
        nodes++;
        works += strncmp(p, " [label=\"work", 13) == 0;
    }
    WT_ASSERT(works == LDEPTH, "%zu \"work\" tasks drawn for %d graphs (%zu bytes)", works, LDEPTH, len);
    WT_ASSERT(nodes == 3 * (LDEPTH - 1) + 1, "%zu nodes (%zu bytes)", nodes, len);
    WT_ASSERT(len < 256 * 1024, "%zu bytes", len);   /* ids hold their module path: O(depth) each */
    WT_ASSERT(strcmp(text + len - 2, "}\n") == 0);
    /* Every edge between declared ids; each module task points at its
     * sub graph's root (drawn once, under the first module task). */
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        char *arrow = strstr(line, " -> ");
        if (arrow && arrow < nl) {
            edges++;
            const char *u = line + strspn(line, " ");
            const char *v = arrow + 4;
            size_t vl = strcspn(v, " ;");
            WT_ASSERT(declared(text, u, (size_t)(arrow - u)), "%.*s", (int)(nl - line), line);
            WT_ASSERT(declared(text, v, vl), "%.*s", (int)(nl - line), line);
            dotted += strstr(line, "style=dotted") != NULL && strstr(line, "style=dotted") < nl;
        }
        line = nl + 1;
    }
    /* Each level's two module tasks: to the work task and the two module
     * tasks of the level below, its roots (level 0: work alone). */
    WT_ASSERT_EQ(dotted, (size_t)(2 * (3 * (LDEPTH - 2) + 1)));
    WT_ASSERT_EQ(edges, dotted);
    free(text);
    destroy_all(g, LDEPTH);
}

/* The table of graphs drawn outgrows the stack (40 graphs): its
 * allocation, or the text's, failing is ENOMEM with nothing written and
 * nothing kept. */
WT_TEST(scale, dot_lattice_out_of_memory_writes_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("dot");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g[LDEPTH];
    build_lattice(g, LDEPTH);
    long blocks = atomic_load(&a.blocks);
    for (long k = 1; k <= 3; k++) {
        walloc_fail_at(&a, k);   /* 1: the table, 2: the text, 3: none made */
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        WT_ASSERT(f != NULL);
        int rc = weft_graph_dump_dot(g[LDEPTH - 1], f);
        WT_ASSERT_EQ(fclose(f), 0);
        WT_ASSERT(k == 3 ? rc == WEFT_OK && len > 0 : rc == WEFT_ENOMEM && len == 0,
                  "allocation %ld failing: %s, %zu bytes", k, weft_err_name(rc), len);
        free(text);
        WT_ASSERT_EQ(atomic_load(&a.blocks), blocks);
    }
    walloc_fail_at(&a, 0);
    destroy_all(g, LDEPTH);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
}

/* ---- memory ------------------------------------------------------------------- */

#define MGRAPHS 20
#define MTASKS 200000

/* Tasks in a chain (two edges of three), each named, and a hub before
 * them all: node blocks, names, long successor arrays, roots. */
static weft_graph *build_big(void)
{
    weft_graph *g = new_graph();
    weft_task *hub = add(g, nothing, NULL), *prev = NULL;
    char name[32];
    for (int i = 0; i < MTASKS; i++) {
        weft_task *t = add(g, nothing, NULL);
        snprintf(name, sizeof name, "task %d", i);
        weft_task_set_name(t, name);
        if (prev && i % 3)
            WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(hub, t), WEFT_OK);
        prev = t;
    }
    return g;
}

WT_TEST(scale, memory_every_byte_back_to_the_allocator, .timeout = 120)
{
    static walloc a = WALLOC_INIT("scale");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g[MGRAPHS];
    for (int i = 0; i < MGRAPHS; i++)
        g[i] = build_big();
    destroy_all(g, MGRAPHS);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT(atomic_load(&a.bytes) == 0, "%ld bytes in %ld blocks outstanding", atomic_load(&a.bytes),
              atomic_load(&a.blocks));
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

/* Resident memory is held to weft.h's word where weft trims: glibc, and
 * no sanitizer's allocator in between. */
#if !defined(SANITIZED) && defined(__GLIBC__)
#define RSS_CHECKED 1
#endif

#ifdef RSS_CHECKED
static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    WT_ASSERT(f != NULL);
    WT_ASSERT_EQ(fscanf(f, "%ld %ld", &size, &res), 2);
    fclose(f);
    return res * sysconf(_SC_PAGESIZE);
}
#endif

WT_TEST(scale, memory_resident_within_the_kept_cap, .timeout = 120)
{
#ifndef RSS_CHECKED
    fprintf(stderr, "skipped: not glibc, or a sanitizer's allocator (it keeps freed memory on purpose)\n");
#else
    weft_set_allocator(NULL);
    /* A first graph made and destroyed: the kept blocks exist (up to
     * 64 MiB); what follows must stay within them. */
    weft_graph *g[MGRAPHS];
    g[0] = build_big();
    destroy_all(g, 1);
    long before = rss_bytes();
    for (int i = 0; i < MGRAPHS; i++)
        g[i] = build_big();
    long peak = rss_bytes();
    destroy_all(g, MGRAPHS);
    long after = rss_bytes();
    long slack = 16l << 20;
    WT_ASSERT(after - before <= (64l << 20) + slack,
              "resident: %ld MiB before, %ld MiB with %d graphs, %ld MiB after destroying them", before >> 20,
              peak >> 20, MGRAPHS, after >> 20);
#endif
}

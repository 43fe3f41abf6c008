/* What tools see of a graph (issue 21): the DOT dump of modules, and stall
 * reports of graphs with failures.
 *
 *   dot_nested_*    modules three deep, each sub a module twice: every
 *                   sub's tasks drawn once, inside the cluster of its
 *                   first module task, at their depth; the second module
 *                   task's cluster names that one and has dotted lines to
 *                   its roots; ids unique, every edge between declared
 *                   ids, the failed task marked
 *   dot_cycle_*     a cycle through modules (drawn as a plain module), a
 *                   chain past 64 deep, a shared chain that drawn per use
 *                   would double 30 times (drawn once per graph), a sub
 *                   past the budget: each dump ends, says why, and its
 *                   text is whole
 *   dot_once        an unchanged nested graph is sized right the first
 *                   time: one allocation
 *   stall_*         a graph task failed and another blocks for ever: the
 *                   report names the failed task and its code, beside the
 *                   blocked task and beside the graph a fiber waits for;
 *                   and from inside a module, the outer graph's failure
 *   stall_wait_destroyed  a graph waited for by a tracked fiber is
 *                   destroyed as soon as its run ends while reports are
 *                   made over and over (asan: no read of a freed graph)
 *
 * Tasks never assert (they may run on a worker thread). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../support/stall_capture.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "../core/alloc_util.h"
#include "stall.h"   /* weft__sched_dump: reports on demand */

#define MS 1000000ull

static void nothing(void *arg)
{
    (void)arg;
}

static void fail_with(void *arg)
{
    weft_task_fail((int)(intptr_t)arg);
}

static weft_task *add_mod(weft_graph *g, weft_graph *sub)
{
    weft_task *t = weft_graph_add_module(g, sub);
    WT_ASSERT(t != NULL, "weft_graph_add_module failed");
    return t;
}

static weft_task *named(weft_task *t, const char *name)
{
    weft_task_set_name(t, name);
    return t;
}

/* ---- reading a dump back ------------------------------------------------------ */

#define MAX_IDS 4096

/* A dump read back: each node declaration with the depth of clusters it
 * stands in, each edge with its ends. */
typedef struct parsed {
    size_t nids;
    char *id[MAX_IDS];
    char *label[MAX_IDS];           /* the line from the label on */
    int depth[MAX_IDS];             /* clusters open around it */
    size_t nedges, ndotted;
    bool edge_to_unknown;           /* an edge names an id not declared */
    char bad[256];
    int max_depth;
    bool balanced;                  /* every cluster closed, and the graph */
} parsed;

static size_t find_id(const parsed *p, const char *id, size_t len)
{
    for (size_t i = 0; i < p->nids; i++)
        if (strlen(p->id[i]) == len && memcmp(p->id[i], id, len) == 0)
            return i;
    return SIZE_MAX;
}

/* Parses text (modified in place). Edges are checked after every node is
 * known. */
static void parse(parsed *p, char *text)
{
    memset(p, 0, sizeof *p);
    static char *edges[4 * MAX_IDS];
    size_t nedge_lines = 0;
    int depth = -1;   /* the digraph's own brace counts as 0 */
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *s = line;
        while (*s == ' ')
            s++;
        if (strncmp(s, "digraph ", 8) == 0) {
            depth = 0;
        } else if (strncmp(s, "subgraph cluster_", 17) == 0) {
            depth++;
            if (depth > p->max_depth)
                p->max_depth = depth;
        } else if (strcmp(s, "}") == 0) {
            depth--;
        } else if (strstr(s, " -> ")) {
            WT_ASSERT(nedge_lines < 4 * MAX_IDS);
            edges[nedge_lines++] = s;
        } else if (strstr(s, " [label=\"")) {
            WT_ASSERT(p->nids < MAX_IDS);
            char *sp = strchr(s, ' ');
            *sp = '\0';
            p->id[p->nids] = s;
            p->label[p->nids] = sp + 1;
            p->depth[p->nids] = depth;
            p->nids++;
        }
        if (!nl)
            break;
        line = nl + 1;
    }
    p->balanced = depth == -1;
    for (size_t e = 0; e < nedge_lines; e++) {
        char *s = edges[e];
        char *arrow = strstr(s, " -> ");
        char *b = arrow + 4;
        size_t blen = strcspn(b, " ;");
        p->nedges++;
        p->ndotted += strstr(b, "style=dotted") != NULL;
        if (find_id(p, s, (size_t)(arrow - s)) == SIZE_MAX || find_id(p, b, blen) == SIZE_MAX) {
            if (!p->edge_to_unknown)
                snprintf(p->bad, sizeof p->bad, "%s", s);
            p->edge_to_unknown = true;
        }
    }
}

/* Declarations whose label starts with "name" (then '"' or "\n"), and
 * at which cluster depths. */
static size_t count_named(const parsed *p, const char *name, int depth, size_t *failed)
{
    size_t n = 0, len = strlen(name);
    if (failed)
        *failed = 0;
    for (size_t i = 0; i < p->nids; i++) {
        const char *l = p->label[i] + strlen("[label=\"");
        if (strncmp(l, name, len) != 0 || (l[len] != '"' && l[len] != '\\'))
            continue;
        if (p->depth[i] != depth)
            continue;
        n++;
        if (failed && strstr(l, "\\nfailed\"") && strstr(l, "fillcolor=\"#f4a3a3\""))
            (*failed)++;
    }
    return n;
}

/* ---- the DOT dump of nested modules -------------------------------------------- */

/* T: start -> A1 -> A2 (both modules of A); A: a_work -> B1 -> B2 (of B);
 * B: b_work -> C1 -> C2 (of C); C: c_fetch -> c_link, which fails. Each
 * sub is the module of two tasks, run one after the other; the failure
 * fails C1, B1, A1 and skips what follows each. Each graph is drawn
 * once: under the first use of it met, the second use pointing there. */
WT_TEST(report, dot_nested_modules_three_deep_are_clusters_with_unique_ids, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *T = new_graph(), *A = new_graph(), *B = new_graph(), *C = new_graph();
    weft_task *fetch = named(add(C, nothing, NULL), "c_fetch");
    weft_task *link = named(add(C, fail_with, (void *)(intptr_t)WEFT_ETIMEDOUT), "c_link");
    WT_ASSERT_EQ(weft_task_precede(fetch, link), WEFT_OK);
    struct { weft_graph *g, *sub; const char *work; } level[] = {
        { B, C, "b_work" }, { A, B, "a_work" }, { T, A, "start" },
    };
    for (int k = 0; k < 3; k++) {
        weft_task *w = named(add(level[k].g, nothing, NULL), level[k].work);
        weft_task *m1 = named(add_mod(level[k].g, level[k].sub), "first use");
        weft_task *m2 = named(add_mod(level[k].g, level[k].sub), "second use");
        WT_ASSERT_EQ(weft_task_precede(w, m1), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m1, m2), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_graph_run(s, T), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(T), WEFT_EFAILED);   /* c_link's own code, three modules up */
    WT_ASSERT_EQ(weft_graph_fail_code(T), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_task_state(link), WEFT_TASK_FAILED);

    char *text = dot_text(T);
    char *copy = strdup(text);
    static parsed p;
    parse(&p, copy);
    WT_ASSERT(p.balanced, "unbalanced braces:\n%s", text);
    WT_ASSERT_EQ(p.max_depth, 3);
    /* Ids: each declared once. */
    for (size_t i = 0; i < p.nids; i++)
        for (size_t j = i + 1; j < p.nids; j++)
            WT_ASSERT(strcmp(p.id[i], p.id[j]) != 0, "id %s declared twice:\n%s", p.id[i], text);
    /* T: 3 tasks, A: 3, B: 3, C: 2, each graph once. */
    WT_ASSERT_EQ(p.nids, (size_t)(3 + 3 + 3 + 2));
    /* Each sub's tasks inside the cluster of its first use, at its depth. */
    size_t failed;
    WT_ASSERT_EQ(count_named(&p, "start", 0, NULL), 1);
    WT_ASSERT_EQ(count_named(&p, "a_work", 1, NULL), 1);
    WT_ASSERT_EQ(count_named(&p, "b_work", 2, NULL), 1);
    WT_ASSERT_EQ(count_named(&p, "c_fetch", 3, NULL), 1);
    WT_ASSERT_EQ(count_named(&p, "c_link", 3, &failed), 1);
    WT_ASSERT(failed == 1, "c_link not failed (red):\n%s", text);
    /* The module tasks: each in its cluster, with its parent's tasks. */
    for (int depth = 1; depth <= 3; depth++) {
        WT_ASSERT_EQ(count_named(&p, "first use", depth, &failed), 1);
        WT_ASSERT_EQ(failed, 1);
        WT_ASSERT_EQ(count_named(&p, "second use", depth, NULL), 1);
    }
    WT_ASSERT(strstr(text, "second use\\nskipped\"") != NULL, "%s", text);
    /* Edges: T 2, A 2, B 2, C 1, plus a dotted line from each of the 6
     * module tasks to its sub's one root; all between ids declared. */
    WT_ASSERT(!p.edge_to_unknown, "an edge to an undeclared id: %s\n%s", p.bad, text);
    WT_ASSERT_EQ(p.nedges, (size_t)(2 + 2 + 2 + 1 + 6));
    WT_ASSERT_EQ(p.ndotted, 6);
    /* The id path: c_link under T's first use (task 1), A's first (1),
     * B's first (1). */
    WT_ASSERT(strstr(text, "        m1_m1_m1_t1 [label=\"c_link\\nfailed\"") != NULL, "%s", text);
    WT_ASSERT(strstr(text, "      subgraph cluster_m1_m1_t1 {\n        label=\"module: 2 tasks\";\n") != NULL,
              "%s", text);
    /* A's second use of B: a cluster of its own task, naming where B is
     * drawn, with a dotted line to B's root there. */
    WT_ASSERT(strstr(text, "    subgraph cluster_m1_t2 {\n      label=\"module: 3 tasks (drawn in cluster_m1_t1)\";\n") !=
                  NULL, "%s", text);
    WT_ASSERT(strstr(text, "      m1_t2 -> m1_m1_t0 [style=dotted, arrowhead=none];\n") != NULL, "%s", text);
    fprintf(stderr, "the dump:\n%s", text);
    free(copy);
    free(text);

    /* A dump of a sub alone starts its ids afresh. */
    text = dot_text(B);
    WT_ASSERT(strstr(text, "  subgraph cluster_t1 {\n") != NULL && strstr(text, "    m1_t1 [label=\"c_link") != NULL,
              "%s", text);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(T), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(A), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(B), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(C), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* A graph that contains itself through modules: run refuses it; the dump
 * draws the module that closes the cycle without its tasks, and ends. */
WT_TEST(report, dot_cycle_through_modules_is_drawn_as_a_plain_module, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    weft_graph *A = new_graph(), *B = new_graph(), *C = new_graph();
    named(add(A, nothing, NULL), "in_a");
    named(add_mod(A, B), "a_runs_b");
    named(add(B, nothing, NULL), "in_b");
    named(add_mod(B, C), "b_runs_c");
    named(add(C, nothing, NULL), "in_c");
    named(add_mod(C, A), "c_runs_a");   /* A -> B -> C -> A */
    WT_ASSERT_EQ(weft_graph_run(s, A), WEFT_ECYCLE);
    for (int k = 0; k < 3; k++) {
        weft_graph *top = k == 0 ? A : k == 1 ? B : C;
        char *text = dot_text(top);
        char *copy = strdup(text);
        static parsed p;
        parse(&p, copy);
        WT_ASSERT(p.balanced, "%s", text);
        WT_ASSERT_EQ(p.max_depth, 3);
        WT_ASSERT_EQ(p.nids, 6);   /* each graph once: the cycle's closing module alone */
        WT_ASSERT(!p.edge_to_unknown, "%s: %s", p.bad, text);
        const char *closing = k == 0 ? "c_runs_a" : k == 1 ? "a_runs_b" : "b_runs_c";
        WT_ASSERT_EQ(count_named(&p, closing, 3, NULL), 1);
        WT_ASSERT(strstr(text, "label=\"module: 2 tasks (a cycle: not drawn)\";\n") != NULL, "%s", text);
        free(copy);
        free(text);
    }
    WT_ASSERT_EQ(weft_graph_destroy(A), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(B), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(C), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* 70 graphs, each a module of the one before: drawn 64 deep, the 65th
 * level's module said to be too deep. */
WT_TEST(report, dot_cycle_chain_past_64_stops_at_64, .timeout = 60)
{
    enum { N = 70 };
    weft_graph *g[N];
    for (int i = 0; i < N; i++) {
        g[i] = new_graph();
        named(add(g[i], nothing, NULL), "work");
    }
    for (int i = 0; i + 1 < N; i++)
        add_mod(g[i], g[i + 1]);
    char *text = dot_text(g[0]);
    char *copy = strdup(text);
    static parsed p;
    parse(&p, copy);
    WT_ASSERT(p.balanced, "%.2000s", text);
    WT_ASSERT_EQ(p.max_depth, 65);   /* 64 drawn, and the 65th's cluster with its task alone */
    WT_ASSERT_EQ(p.nids, (size_t)(65 * 2));   /* the 65th's module task is its graph's */
    WT_ASSERT(strstr(text, "label=\"module (nested too deep: not drawn)\";\n") != NULL, "%.2000s", text);
    WT_ASSERT(!p.edge_to_unknown, "%s", p.bad);
    free(copy);
    free(text);
    for (int i = 0; i < N; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
}

/* 30 graphs, each the module of two tasks of the one before: drawn per
 * use that would be 2^30 clusters; each graph is drawn once, the second
 * use of each pointing at the first. */
WT_TEST(report, dot_cycle_shared_chain_is_drawn_once_per_graph, .timeout = 120)
{
    enum { N = 30 };
    weft_graph *g[N];
    for (int i = 0; i < N; i++) {
        g[i] = new_graph();
        add(g[i], nothing, NULL);
    }
    for (int i = 0; i + 1 < N; i++) {
        add_mod(g[i], g[i + 1]);
        add_mod(g[i], g[i + 1]);
    }
    char *text = dot_text(g[0]);
    size_t len = strlen(text);
    char *copy = strdup(text);
    static parsed p;
    parse(&p, copy);
    WT_ASSERT(p.balanced, "%.2000s", text);
    WT_ASSERT_EQ(p.nids, (size_t)(3 * (N - 1) + 1));
    WT_ASSERT_EQ(p.max_depth, N - 1);
    WT_ASSERT(!p.edge_to_unknown, "%s", p.bad);
    WT_ASSERT(strstr(text, "(too many to draw)") == NULL, "%.2000s", text);
    WT_ASSERT(len < 100000 && strcmp(text + len - 2, "}\n") == 0, "%zu bytes", len);
    free(copy);
    free(text);
    for (int i = 0; i < N; i++)
        WT_ASSERT_EQ(weft_graph_destroy(g[i]), WEFT_OK);
}

/* A sub graph past the budget (2^18 tasks and edges inside modules) is
 * drawn without its tasks; a small one after it still is. */
WT_TEST(report, dot_cycle_sub_past_the_budget_is_not_drawn, .timeout = 120)
{
    weft_graph *top = new_graph(), *big = new_graph(), *small = new_graph();
    for (uint32_t i = 0; i <= (1u << 18); i++)
        add(big, nothing, NULL);
    named(add(small, nothing, NULL), "small work");
    add_mod(top, big);
    add_mod(top, small);
    char *text = dot_text(top);
    size_t len = strlen(text);
    WT_ASSERT(strstr(text, "label=\"module: 262145 tasks (too many to draw)\";\n") != NULL, "%.2000s", text);
    WT_ASSERT(strstr(text, "    m1_t0 [label=\"small work\"];\n") != NULL, "%.2000s", text);
    WT_ASSERT(len < 4096 && strcmp(text + len - 2, "}\n") == 0, "%zu bytes", len);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(top), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(big), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(small), WEFT_OK);
}

/* The count pass sizes the text of an unchanged nested graph exactly
 * enough: one allocation, and the text whole. */
WT_TEST(report, dot_once, .timeout = 60)
{
    static walloc a = WALLOC_INIT("dot");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *top = new_graph(), *sub = new_graph(), *leaf = new_graph();
    char name[200];
    for (int i = 0; i < 50; i++) {
        snprintf(name, sizeof name, "leaf \"%d\" \\ with a long name to escape\n%0100d", i, i);
        named(add(leaf, i % 3 ? nothing : NULL, NULL), name);
    }
    for (int i = 0; i < 3; i++)
        add_mod(sub, leaf);
    for (int i = 0; i < 3; i++)
        add_mod(top, sub);
    long before = atomic_load(&a.calls);
    char *text = dot_text(top);
    long calls = atomic_load(&a.calls) - before;
    WT_ASSERT(calls == 1, "%ld allocations for one dump", calls);
    WT_ASSERT(strcmp(text + strlen(text) - 2, "}\n") == 0);
    char *copy = strdup(text);
    static parsed p;
    parse(&p, copy);
    WT_ASSERT_EQ(p.nids, (size_t)(3 + 3 + 50));   /* each graph drawn once */
    free(copy);
    free(text);
    WT_ASSERT_EQ(weft_graph_destroy(top), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(leaf), WEFT_OK);
    /* A checked build keeps destroyed headers until the allocator changes
     * (weft_graph_destroy): every block is back once it has. */
    weft_set_allocator(NULL);
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
}

/* ---- stall reports --------------------------------------------------------------- */

static void wait_event(void *arg)
{
    weft_event_wait(arg);
}

struct waiter {
    weft_graph *g;
    atomic_int rc;
    atomic_int in;
};

/* A plain task (a tracked fiber) that waits for a graph. */
static void wait_graph(void *arg)
{
    struct waiter *x = arg;
    atomic_store(&x->in, 1);
    atomic_store(&x->rc, weft_graph_wait(x->g));
}

static void wait_for_report(capture *c)
{
    /* 30 s (at least): only a report that never comes takes that long. */
    WT_ASSERT(wait_reports(c, 1, 30000), "no stall report in 30 s");
}

/* link fails with a code of its own that equals WEFT_ETIMEDOUT, after_link
 * is skipped, stuck waits for an event never set; a plain task waits for
 * the graph. The report names link and its code beside the blocked task
 * and beside the wait, as a plain number ("code -6"): a user's code is
 * not named after a weft code it equals. */
WT_TEST(report, stall_report_names_the_failed_task_and_its_code, .timeout = 120)
{
    static capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    weft_sched *s = make_watched(2, 100 * MS, &c);
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_graph *g = new_graph();
    weft_task *link = named(add(g, fail_with, (void *)(intptr_t)WEFT_ETIMEDOUT), "link");
    weft_task *after = named(add(g, nothing, NULL), "after_link");
    weft_task *stuck = named(add(g, wait_event, &ev), "stuck");
    WT_ASSERT_EQ(weft_task_precede(link, after), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    struct waiter x = { .g = g };
    WT_ASSERT_EQ(weft_spawn(s, wait_graph, &x), WEFT_OK);
    while (weft_task_state(after) != WEFT_TASK_SKIPPED || weft_task_state(stuck) != WEFT_TASK_RUNNING ||
           !atomic_load(&x.in))
        sched_yield();
    wait_for_report(&c);
    pthread_mutex_lock(&c.lock);
    fprintf(stderr, "the report:\n%s", c.text);
    pthread_mutex_unlock(&c.lock);
    char want[256];
    snprintf(want, sizeof want, "graph task \"stuck\" (task %p of graph %p: 1 failed, 1 skipped so far; "
             "first failure: task \"link\" (failed: code -6))", (void *)stuck, (void *)g);
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    snprintf(want, sizeof want, "waits on graph %p (1 failed, 1 skipped so far; "
             "first failure: task \"link\" (failed: code -6))", (void *)g);
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);   /* the task's own -6, never read as weft's ETIMEDOUT */
    WT_ASSERT_EQ(weft_graph_fail_code(g), WEFT_ETIMEDOUT);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&x.rc), WEFT_EFAILED);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
}

/* Inside a module: the blocked task's own graph has nothing to say; the
 * outer graph's failure (a code of the user's own) is named after it. */
WT_TEST(report, stall_report_names_the_outer_graphs_failure, .timeout = 120)
{
    static capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    weft_sched *s = make_watched(2, 100 * MS, &c);
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_graph *outer = new_graph(), *sub = new_graph();
    weft_task *bad = named(add(outer, fail_with, (void *)(intptr_t)-4242), "outer\nbad");
    weft_task *mod = named(add_mod(outer, sub), "the module");
    weft_task *stuck = named(add(sub, wait_event, &ev), "deep");
    WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
    while (weft_task_state(bad) != WEFT_TASK_FAILED || weft_task_state(stuck) != WEFT_TASK_RUNNING)
        sched_yield();
    wait_for_report(&c);
    char want[256];
    snprintf(want, sizeof want, "graph task \"deep\" (task %p of graph %p); in module \"the module\" of graph %p "
             "(1 failed, 0 skipped so far; first failure: task \"outer?bad\" (failed: code -4242))",
             (void *)stuck, (void *)sub, (void *)outer);
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_EFAILED);
    WT_ASSERT_EQ(weft_graph_fail_code(outer), -4242);
    WT_ASSERT_EQ(weft_task_state(mod), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
}

/* Inside a subflow (issue 35): the same, the blocked subtask's line going
 * up through the subflow task. */
static weft_event *sf_ev;
static _Atomic(weft_task *) sf_stuck;

static void sf_build(weft_subflow *sf, void *arg)
{
    (void)arg;
    weft_task *t = weft_subflow_add(sf, wait_event, sf_ev);
    if (t)
        weft_task_set_name(t, "deep");
    atomic_store(&sf_stuck, t);
}

WT_TEST(report, stall_report_goes_up_through_a_subflow, .timeout = 120)
{
    static capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    weft_sched *s = make_watched(2, 100 * MS, &c);
    weft_event ev;
    weft_event_init(&ev, true, false);
    sf_ev = &ev;
    weft_graph *outer = new_graph();
    weft_task *bad = named(add(outer, fail_with, (void *)(intptr_t)-4343), "outer bad");
    weft_task *sft = weft_graph_add_subflow(outer, sf_build, NULL);
    WT_ASSERT(sft != NULL);
    named(sft, "the subflow");
    WT_ASSERT_EQ(weft_graph_run(s, outer), WEFT_OK);
    while (weft_task_state(bad) != WEFT_TASK_FAILED || !atomic_load(&sf_stuck) ||
           weft_task_state(atomic_load(&sf_stuck)) != WEFT_TASK_RUNNING)
        sched_yield();
    wait_for_report(&c);
    char want[256];
    snprintf(want, sizeof want, "graph task \"deep\" (task %p of graph ", (void *)atomic_load(&sf_stuck));
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    snprintf(want, sizeof want, "); in subflow \"the subflow\" of graph %p "
             "(1 failed, 0 skipped so far; first failure: task \"outer bad\" (failed: code -4343))",
             (void *)outer);
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(outer), WEFT_EFAILED);
    WT_ASSERT_EQ(weft_task_state(sft), WEFT_TASK_DONE);
    WT_ASSERT_EQ(weft_graph_destroy(outer), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
}

/* A failure weft made (a module whose graph is running elsewhere: EBUSY)
 * is named as weft's code, beside the blocked task of the same run. */
WT_TEST(report, stall_report_names_weft_s_own_code, .timeout = 60)
{
    static capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    weft_sched *s = make_watched(2, 100 * MS, &c);
    weft_event ev, ev_sub;
    weft_event_init(&ev, true, false);
    weft_event_init(&ev_sub, true, false);
    weft_graph *g = new_graph(), *sub = new_graph();
    add(sub, wait_event, &ev_sub);
    weft_task *mod = named(add_mod(g, sub), "busy module");
    weft_task *stuck = named(add(g, wait_event, &ev), "stuck");
    WT_ASSERT_EQ(weft_graph_run(s, sub), WEFT_OK);   /* sub runs on its own until ev_sub */
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    while (weft_task_state(mod) != WEFT_TASK_FAILED || weft_task_state(stuck) != WEFT_TASK_RUNNING)
        sched_yield();
    wait_for_report(&c);
    char want[256];
    snprintf(want, sizeof want, "graph task \"stuck\" (task %p of graph %p: 1 failed, 0 skipped so far; "
             "first failure: task \"busy module\" (failed: EBUSY, -3))", (void *)stuck, (void *)g);
    WT_ASSERT(reported(&c, want), "no '%s' in the report:\n%s", want, c.text);
    weft_event_signal(&ev);
    weft_event_signal(&ev_sub);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_fail_code(g), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_graph_wait(sub), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(sub), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
    weft_event_destroy(&ev_sub);
}

/* Reports made over and over on another thread while graphs that tracked
 * fibers wait for are destroyed the moment their runs end: the report
 * must never read a graph freed under it (asan), and a graph still in
 * flight is described. */
struct dumper {
    weft_sched *s;
    atomic_int stop;
    atomic_long dumps;
};

static void *dump_loop(void *arg)
{
    struct dumper *d = arg;
    FILE *f = fopen("/dev/null", "w");
    while (!atomic_load(&d->stop)) {
        weft__sched_dump(d->s, f);
        atomic_fetch_add(&d->dumps, 1);
    }
    fclose(f);
    return NULL;
}

static atomic_int gate_open;

static void gate(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate_open))
        usleep(50);
}

/* Whether a report on s now shows a fiber waiting for g. */
static bool wait_listed(weft_sched *s, weft_graph *g)
{
    char *text = wt_sched_state(s);
    WT_ASSERT(text != NULL);
    char line[64];
    snprintf(line, sizeof line, "waits on graph %p (0 failed", (void *)g);
    bool found = strstr(text, line) != NULL;
    free(text);
    return found;
}

WT_TEST(report, stall_wait_destroyed_while_reported, .timeout = 120)
{
    static capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    weft_sched *s = make_watched(2, 60000 * MS, &c);   /* tracking on; no report of its own */
    struct dumper d = { .s = s };
    pthread_t th;
    WT_ASSERT_EQ(pthread_create(&th, NULL, dump_loop, &d), 0);
    for (int round = 0; round < 300; round++) {
        weft_graph *g = new_graph();
        add(g, gate, NULL);
        struct waiter x = { .g = g, .rc = 1 };
        atomic_store(&gate_open, 0);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(s, wait_graph, &x), WEFT_OK);
        /* The spawned task must be blocked in its wait before the run can
         * end (weft.h: no wait may race the destroy). */
        uint64_t t0 = wt_now_ns();   /* 60 s: only a waiter never listed takes that long */
        while (!wait_listed(s, g)) {
            WT_ASSERT(wt_now_ns() - t0 < 60000000000ull, "round %d: the waiter never showed in a report",
                      round);
            usleep(100);
        }
        atomic_store(&gate_open, 1);
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);   /* the spawned waiter may still be listed */
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&x.rc), WEFT_OK);
    }
    atomic_store(&d.stop, 1);
    pthread_join(th, NULL);
    WT_ASSERT(atomic_load(&d.dumps) > 0);
    WT_ASSERT_EQ(atomic_load(&c.reports), 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* This file is private to weft: writing a task graph as Graphviz DOT,
 * module tasks as clusters that hold their sub graphs' tasks.
 *
 * Synchronization
 *   The text is rendered into memory under g's lock, so the structure
 *   and the names cannot change under it (build calls are refused during
 *   a run anyway), and written to the user's FILE after the lock is
 *   released: a slow stream must not hold up the end of a run (finish,
 *   series.c, takes the lock) or a stall report.
 *   A module's sub graph is read under its own lock, taken inside its
 *   parent's: parent before child, the order modules nest in (module.c's
 *   check takes them so too). The graphs on the path from g down to the
 *   module being drawn are held; one met again on that path is a cycle
 *   through modules and is not locked twice (nor drawn). A sub graph's
 *   lock is waited for at most DOT_PATIENCE_NS: two dumps of two graphs
 *   that contain each other would otherwise wait for each other for ever;
 *   after that the module is drawn without its tasks, marked busy.
 *   Task states are read with weft_task_state: during a run they are
 *   a snapshot, each task's taken at its own moment.
 *
 * Sizing. The same walk runs twice: first counting bytes (a state counts
 * as its longest text, an edge stored twice as two), then writing into a
 * buffer of that size, allocated outside every lock. g's lock is held
 * from the count through the writing; a sub graph's is not (each is
 * taken once per pass), so a sub graph built on between the passes can
 * outgrow the count: the writing notices (it never writes past the
 * buffer), and the dump starts over with a larger buffer. Both passes
 * make the same choices (which modules are drawn, where the budget ends)
 * from the same counts, so an unchanged graph needs one count. The
 * graphs drawn so far are kept in a table (on the stack up to
 * DRAWN_INLINE of them); a walk that finds it full stops, and the dump
 * starts over with one twice as large, also allocated outside every lock.
 *
 * Shared graphs. A graph that is the module of several tasks (of one
 * graph or several) is drawn once: in the cluster of the first of those
 * tasks the walk meets (tasks in the order added, depth first). Every
 * other module task of it is a cluster holding that task alone, labelled
 * with the cluster where the graph is drawn, with dotted lines to the
 * graph's roots there. So the text is linear in the distinct graphs'
 * tasks and edges: a lattice (each level two module tasks of the level
 * below) 40 deep is 40 graphs' worth, where drawing each use would be
 * 2^40. The states shown are those of the graph's last run, which every
 * use would show alike.
 *
 * Output, one line per task, then one per distinct edge, in the order the
 * tasks and edges were added; a module's cluster stands where its task
 * does, and holds its task, its sub graph's tasks and edges (so, nested,
 * its modules' clusters), then dotted lines from the module's task to the
 * sub graph's roots:
 *   digraph weft {
 *     t0 [label="load"];
 *     t1 [label="task 1", shape=diamond];                (empty task)
 *     subgraph cluster_t2 {
 *       label="module: 2 tasks";
 *       t2 [label="build\nran", style=filled, fillcolor="#b7e4c7", shape=box3d];
 *       m2_t0 [label="compile\nran", style=filled, fillcolor="#b7e4c7"];
 *       m2_t1 [label="link\nfailed", style=filled, fillcolor="#f4a3a3"];
 *       m2_t0 -> m2_t1;
 *       t2 -> m2_t0 [style=dotted, arrowhead=none];
 *     }
 *     t0 -> t2;
 *   }
 * A task's id is "t" and its index, after "m" and the index of each
 * module task on the way down to where its graph is drawn, each followed
 * by "_": unique in the file, as each graph is drawn once. The states
 * inside a cluster are those of the sub graph's last run.
 *
 * Edges into and out of a module go to and from its task's own node,
 * inside the cluster, rather than to the cluster's border (compound=true
 * with lhead/ltail): every "a -> b" line then is an edge of the graph
 * between two tasks' ids, as at the top level, so a tool that reads the
 * file back gets the graph's edges at every depth; the module task's node
 * carries its state (a failed or skipped module shows on the edge's end);
 * and it works with every Graphviz layout, where compound edges are dot's
 * only and need a node inside the cluster to aim at, which a module not
 * drawn (empty, a cycle, too deep) lacks. The dotted lines to the roots
 * keep dot from ranking the sub graph's tasks from the top of the page:
 * they follow their module's task, as they do in a run.
 */
#include <string.h>

#include "graph.h"

/* How long a dump waits for a sub graph's lock before drawing it busy
 * (see above): far longer than any build call or run end holds a lock. */
#define DOT_PATIENCE_NS ((uint64_t)100 * 1000 * 1000)
/* Tasks and stored edges drawn inside module clusters, at most (tens of
 * MB of text, more than Graphviz lays out). Each graph is drawn once, so
 * this bounds large sub graphs only. A module that would pass it is drawn
 * without its tasks (dump its graph on its own). */
#define DOT_ITEMS_MAX ((uint64_t)1 << 18)

static const char dot_head[] = "digraph weft {\n";
static const char dot_tail[] = "}\n";
/* What follows a label's text, by state; the longest bounds them all. */
static const char st_done[] = "\\nran\", style=filled, fillcolor=\"#b7e4c7\"";
static const char st_skipped[] = "\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"";
static const char st_failed[] = "\\nfailed\", style=filled, fillcolor=\"#f4a3a3\"";
static const char st_running[] = "\\nrunning\", style=filled, fillcolor=\"#ffe08a\"";
static const char st_pending[] = "\"";
static const char diamond[] = ", shape=diamond";
static const char hexagon[] = ", shape=hexagon";          /* a condition task */
static const char box3d[] = ", shape=box3d";              /* a module task */
static const char weak_edge[] = " [style=dashed, label=\"";  /* then its index, then "\"]" */
static const char runs_edge[] = " [style=dotted, arrowhead=none]";   /* module task -> its sub graph's roots */
#define STATE_MAX (sizeof st_skipped - 1)

_Static_assert(sizeof st_skipped >= sizeof st_done && sizeof st_skipped >= sizeof st_running &&
               sizeof st_skipped >= sizeof st_failed &&
               sizeof st_skipped >= sizeof st_pending, "STATE_MAX is the longest state");

/* Why a module is drawn without its tasks. NOT_MADE: a subflow task none
 * of whose visits added a task has no sub-graph (0 tasks). SHOWN: its graph is drawn
 * elsewhere in the file (see "Shared graphs" above). */
enum { DRAWN, SHOWN, NOT_CYCLE, NOT_DEEP, NOT_BUSY, NOT_LARGE, NOT_MADE };

/* A graph drawn in this dump: where (the module task whose cluster holds
 * it, of the graph of entry `parent`), for the ids of its tasks. Entry 0
 * is g itself. */
typedef struct drawn {
    const weft_graph *g;
    uint32_t parent;                /* entry of the graph holding the module task */
    uint32_t task;                  /* that module task's index */
    uint32_t n;                     /* its tasks when drawn: ids below this are declared */
} drawn;

/* The drawn graphs held on the stack: most dumps need no more. */
#define DRAWN_INLINE 32

/* One pass of the walk: its text (or only its length) and where it is. */
typedef struct dot {
    char *p;                        /* NULL: counting only */
    size_t len, cap;
    bool overflow;                  /* writing: the text outgrew cap (a sub graph grew) */
    uint32_t *mark;                 /* writing: a word per task of the graph whose edges are drawn */
    uint32_t mark_cap;
    uint32_t max_n;                 /* the most tasks of one graph drawn: the marks' size */
    uint64_t items;                 /* tasks and stored edges drawn inside modules so far */
    unsigned depth;                 /* modules entered */
    uint32_t path[WEFT__MODULE_DEPTH];              /* their tasks' indices, top down */
    const weft_graph *up[WEFT__MODULE_DEPTH + 1];   /* the graphs on the way, g first: locked */
    uint32_t at[WEFT__MODULE_DEPTH + 1];            /* their entries in `drawn` */
    drawn *drawn;                   /* the graphs drawn so far, in the order met */
    uint32_t *slot;                 /* a hash of them: entry + 1, 0 = free */
    uint32_t ndrawn, drawn_cap;     /* slot has 2 * drawn_cap places (a power of two) */
    bool full;                      /* a graph to draw found no entry: start over, larger */
} dot;

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static void put(dot *d, const char *s, size_t n)
{
    if (!d->p) {
        d->len = add_sat(d->len, n);
        return;
    }
    if (n > d->cap - d->len) {
        d->overflow = true;   /* the dump starts over, larger */
        return;
    }
    memcpy(d->p + d->len, s, n);
    d->len += n;
}

static void put_str(dot *d, const char *s)
{
    put(d, s, strlen(s));
}

static void put_u64(dot *d, uint64_t v)
{
    char tmp[20];
    int n = sizeof tmp;
    do
        tmp[--n] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(d, tmp + n, sizeof tmp - (size_t)n);
}

/* Two spaces per level. */
static void put_indent(dot *d, unsigned level)
{
    static const char sp[] = "                                ";
    for (size_t n = 2 * (size_t)level; n; ) {
        size_t k = n < sizeof sp - 1 ? n : sizeof sp - 1;
        put(d, sp, k);
        n -= k;
    }
}

/* Writes s as the inside of a DOT string. */
static void put_escaped(dot *d, const char *s)
{
    if (!d->p) {
        size_t n = 0;
        for (; *s; s++)
            n += *s == '"' || *s == '\\' || *s == '\n' ? 2 : *s == '\r' ? 0 : 1;
        d->len = add_sat(d->len, n);
        return;
    }
    for (; *s; s++) {
        switch (*s) {
        case '"':  put(d, "\\\"", 2); break;
        case '\\': put(d, "\\\\", 2); break;
        case '\n': put(d, "\\n", 2); break;
        case '\r': break;
        default:   put(d, s, 1); break;
        }
    }
}

/* The id of task i of the graph `level` modules down the path. */
static void put_id(dot *d, unsigned level, uint32_t i)
{
    for (unsigned k = 0; k < level; k++) {
        put(d, "m", 1);
        put_u64(d, d->path[k]);
        put(d, "_", 1);
    }
    put(d, "t", 1);
    put_u64(d, i);
}

/* The id of task i of the graph of entry e, where it is drawn. */
static void put_drawn_id(dot *d, uint32_t e, uint32_t i)
{
    uint32_t tasks[WEFT__MODULE_DEPTH];
    unsigned level = 0;
    for (; e != 0 && level < WEFT__MODULE_DEPTH; e = d->drawn[e].parent)
        tasks[level++] = d->drawn[e].task;
    while (level) {
        put(d, "m", 1);
        put_u64(d, tasks[--level]);
        put(d, "_", 1);
    }
    put(d, "t", 1);
    put_u64(d, i);
}

static uint32_t slot_of(const dot *d, const weft_graph *g)
{
    uint64_t h = (uint64_t)(uintptr_t)g * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & (2 * d->drawn_cap - 1);
}

/* g's entry, or UINT32_MAX if it has not been drawn. */
static uint32_t drawn_find(const dot *d, const weft_graph *g)
{
    for (uint32_t k = slot_of(d, g);; k = (k + 1) & (2 * d->drawn_cap - 1)) {
        uint32_t e = d->slot[k];
        if (e == 0)
            return UINT32_MAX;
        if (d->drawn[e - 1].g == g)
            return e - 1;
    }
}

/* Records g as drawn now, held by module task `task` of the graph of
 * entry parent; false (and d->full) if the table is full. */
static bool drawn_add(dot *d, const weft_graph *g, uint32_t parent, uint32_t task)
{
    if (d->ndrawn == d->drawn_cap) {
        d->full = true;   /* the dump starts over with a larger table */
        return false;
    }
    uint32_t e = d->ndrawn++;
    d->drawn[e] = (drawn){ g, parent, task, g->n };
    uint32_t k = slot_of(d, g);
    while (d->slot[k] != 0)
        k = (k + 1) & (2 * d->drawn_cap - 1);
    d->slot[k] = e + 1;
    return true;
}

static const char *name_at(const weft_graph *g, uint32_t i)
{
    return g->names && i < g->names_cap ? g->names[i] : NULL;
}

/* t's node line, of the graph at the path's end. Caller holds g's lock. */
static void put_node(dot *d, const weft_graph *g, const weft_task *t, unsigned indent)
{
    const char *name = name_at(g, t->index);
    put_indent(d, indent);
    put_id(d, d->depth, t->index);
    put_str(d, " [label=\"");
    if (name) {
        put_escaped(d, name);
    } else {
        put_str(d, "task ");
        put_u64(d, t->index);
    }
    if (!d->p) {
        d->len = add_sat(d->len, STATE_MAX);   /* it may change before the writing */
    } else {
        switch (weft_task_state(t)) {
        case WEFT_TASK_DONE:    put_str(d, st_done); break;
        case WEFT_TASK_SKIPPED: put_str(d, st_skipped); break;
        case WEFT_TASK_FAILED:  put_str(d, st_failed); break;
        case WEFT_TASK_RUNNING: put_str(d, st_running); break;
        default:                put_str(d, st_pending); break;
        }
    }
    if (weft__is_cond(t))
        put_str(d, hexagon);
    else if (weft__is_nested(g, t))
        put_str(d, box3d);
    else if (!t->fn)
        put_str(d, diamond);
    put_str(d, "];\n");
}

/* g's edges, each once. Caller holds g's lock. */
static void put_edges(dot *d, const weft_graph *g)
{
    uint32_t n = g->n;
    if (d->p) {
        if (n > d->mark_cap) {
            d->overflow = true;   /* a sub graph grew since the count */
            return;
        }
        /* Until the next run's check removes them, an edge added twice
         * is stored twice: mark[v] = 1 + the last task that printed v. */
        memset(d->mark, 0, sizeof *d->mark * n);
    }
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        const uint32_t *s = weft__succ(t);
        bool weak = weft__is_cond(t);
        if (d->depth)
            d->items += t->nsucc;   /* stored edges: the same count in both passes */
        for (uint32_t j = 0; j < t->nsucc; j++) {
            if (d->p) {
                if (d->mark[s[j]] == i + 1)
                    continue;
                d->mark[s[j]] = i + 1;
            }
            put_indent(d, 1 + d->depth);
            put_id(d, d->depth, i);
            put_str(d, " -> ");
            put_id(d, d->depth, s[j]);
            if (weak) {
                /* A condition's edge: dashed, labelled with the answer that picks it. */
                put_str(d, weak_edge);
                put_u64(d, j);
                put_str(d, "\"]");
            }
            put_str(d, ";\n");
        }
    }
}

static void put_graph(dot *d, const weft_graph *g);

/* Whether module task t's sub graph is drawn; if so, its lock is held
 * (DRAWN). *n: its size where known (NOT_DEEP, NOT_BUSY: not). */
/* The graph module or subflow task t of g runs: a subflow's, NULL while
 * none of its visits added a task (subflow.c: made by the first add,
 * under g's lock, which the caller holds). */
static weft_graph *nested_sub(const weft_graph *g, const weft_task *t)
{
    if (!weft__is_subflow(g, t))
        return t->arg;
    return atomic_load_explicit(&weft__sfrec_of(t)->sub, memory_order_relaxed);
}

static int module_choice(dot *d, const weft_graph *g, const weft_task *t, uint32_t *n)
{
    weft_graph *sub = nested_sub(g, t);
    *n = 0;
    if (!sub)
        return NOT_MADE;
    for (unsigned k = 0; k <= d->depth; k++) {
        if (d->up[k] == sub) {
            *n = sub->n;   /* held: it is on the path */
            return NOT_CYCLE;
        }
    }
    if (!weft__graph_lock_for(sub, DOT_PATIENCE_NS))
        return NOT_BUSY;
    *n = sub->n;
    if (drawn_find(d, sub) != UINT32_MAX)
        return SHOWN;   /* its lock held, for its size and roots; drawn nothing deeper */
    if (d->depth >= WEFT__MODULE_DEPTH) {
        weft__graph_unlock(sub);
        return NOT_DEEP;
    }
    if (d->items + sub->n > DOT_ITEMS_MAX) {
        weft__graph_unlock(sub);
        return NOT_LARGE;
    }
    return DRAWN;
}

/* Module task t of the graph at the path's end (g), as a cluster: its
 * label, t's node, then, if drawn, its sub graph's tasks and edges one
 * level down, and dotted lines from t to that graph's roots. Caller holds
 * g's lock. */
static void put_module(dot *d, const weft_graph *g, const weft_task *t)
{
    unsigned level = d->depth;
    uint32_t n;
    int why = module_choice(d, g, t, &n);
    weft_graph *sub = nested_sub(g, t);
    put_indent(d, 1 + level);
    put_str(d, "subgraph cluster_");
    put_id(d, level, t->index);
    put_str(d, " {\n");
    put_indent(d, 2 + level);
    put_str(d, weft__is_subflow(g, t) ? "label=\"subflow" : "label=\"module");
    if (why != NOT_DEEP && why != NOT_BUSY) {
        put_str(d, ": ");
        put_u64(d, n);
        put_str(d, " tasks");
    }
    switch (why) {
    case NOT_CYCLE: put_str(d, " (a cycle: not drawn)"); break;
    case NOT_DEEP:  put_str(d, " (nested too deep: not drawn)"); break;
    case NOT_BUSY:  put_str(d, " (graph busy: not drawn)"); break;
    case NOT_LARGE: put_str(d, " (too many to draw)"); break;
    case SHOWN:
        put_str(d, " (drawn in cluster_");
        const drawn *at = &d->drawn[drawn_find(d, sub)];
        put_drawn_id(d, at->parent, at->task);
        put_str(d, ")");
        break;
    default: break;
    }
    put_str(d, "\";\n");
    put_node(d, g, t, 2 + level);
    if (why == SHOWN) {
        /* Dotted lines to the roots where the graph is drawn, as a drawn
         * module has to its own (those declared there only). */
        uint32_t e = drawn_find(d, sub);
        for (uint32_t r = 0; r < sub->nroots; r++) {
            if (sub->roots[r] >= d->drawn[e].n)
                continue;
            put_indent(d, 2 + level);
            put_id(d, level, t->index);
            put_str(d, " -> ");
            put_drawn_id(d, e, sub->roots[r]);
            put_str(d, runs_edge);
            put_str(d, ";\n");
        }
        weft__graph_unlock(sub);
    }
    if (why == DRAWN && !drawn_add(d, sub, d->at[level], t->index))
        weft__graph_unlock(sub);   /* the dump starts over (d->full) */
    else if (why == DRAWN) {
        d->path[level] = t->index;
        d->up[level + 1] = sub;
        d->at[level + 1] = d->ndrawn - 1;
        d->depth = level + 1;
        put_graph(d, sub);
        for (uint32_t r = 0; r < sub->nroots; r++) {
            put_indent(d, 2 + level);
            put_id(d, level, t->index);
            put_str(d, " -> ");
            put_id(d, level + 1, sub->roots[r]);
            put_str(d, runs_edge);
            put_str(d, ";\n");
        }
        d->depth = level;
        weft__graph_unlock(sub);
    }
    put_indent(d, 1 + level);
    put_str(d, "}\n");
}

/* The graph at the path's end: its tasks (modules as clusters), then its
 * edges. Caller holds its lock. */
static void put_graph(dot *d, const weft_graph *g)
{
    if (g->n > d->max_n)
        d->max_n = g->n;
    if (d->depth)
        d->items += g->n;
    for (uint32_t i = 0; i < g->n && !d->overflow && !d->full; i++) {
        const weft_task *t = weft__graph_node(g, i);
        if (weft__is_nested(g, t))
            put_module(d, g, t);   /* a subflow's sub-graph as a module's (subflow.c) */
        else
            put_node(d, g, t, 1 + d->depth);
    }
    if (!d->overflow && !d->full)
        put_edges(d, g);
}

/* One pass over g (locked): counting (p NULL) or writing into p. */
static void walk(dot *d, const weft_graph *g, char *p, size_t cap, uint32_t *mark, uint32_t mark_cap)
{
    d->p = p;
    d->len = 0;
    d->cap = cap;
    d->overflow = false;
    d->mark = mark;
    d->mark_cap = mark_cap;
    d->max_n = 0;
    d->items = 0;
    d->depth = 0;
    d->up[0] = g;
    d->at[0] = 0;
    d->full = false;
    d->ndrawn = 0;
    memset(d->slot, 0, sizeof *d->slot * 2 * d->drawn_cap);
    drawn_add(d, g, 0, 0);   /* entry 0: g, drawn at the top (cap >= 1) */
    put(d, dot_head, sizeof dot_head - 1);
    put_graph(d, g);
    put(d, dot_tail, sizeof dot_tail - 1);
}

/* Makes d's table of drawn graphs twice as large (the stack's first).
 * false: out of memory. */
static bool drawn_grow(dot *d, drawn *inl)
{
    if (d->drawn_cap > UINT32_MAX / 8)
        return false;
    uint32_t cap = d->drawn_cap * 2;
    size_t bytes = sizeof(drawn) * cap + sizeof(uint32_t) * 2 * (size_t)cap;
    drawn *p = weft__alloc(bytes);
    if (!p)
        return false;
    if (d->drawn != inl)
        weft__free(d->drawn, sizeof(drawn) * d->drawn_cap + sizeof(uint32_t) * 2 * (size_t)d->drawn_cap);
    d->drawn = p;
    d->slot = (uint32_t *)(void *)(p + cap);
    d->drawn_cap = cap;
    return true;
}

int weft_graph_dump_dot(const weft_graph *g, FILE *out)
{
    if (!g || !out)
        return WEFT_EINVAL;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    char *buf = NULL;
    size_t cap = 0;
    dot d;
    drawn inl[DRAWN_INLINE];
    uint32_t inl_slot[2 * DRAWN_INLINE];
    d.drawn = inl;
    d.slot = inl_slot;
    d.drawn_cap = DRAWN_INLINE;
    int rc = WEFT_OK;
    for (;;) {
        weft__graph_lock(m);
        walk(&d, g, NULL, 0, NULL, 0);
        size_t need = 0;
        if (!d.full) {
            size_t marks = sizeof(uint32_t) * (size_t)d.max_n;
            need = add_sat(marks, d.len);
            if (need <= cap) {
                walk(&d, g, buf + marks, cap - marks, (uint32_t *)(void *)buf, d.max_n);
                if (!d.overflow && !d.full)
                    break;   /* holding the lock */
                need = d.overflow ? add_sat(cap, cap) : 0;   /* a sub graph grew between the passes */
            }
        }
        weft__graph_unlock(m);
        /* Not under the lock: the allocator may be slow. A graph that
         * grew meanwhile sends us round again; some slack makes that
         * rare. More graphs to draw than the table holds: a table twice
         * as large, and round again. */
        if (d.full && !drawn_grow(&d, inl)) {
            rc = WEFT_ENOMEM;
            goto out;
        }
        if (need == 0)
            continue;
        if (buf)
            weft__free(buf, cap);
        cap = need == SIZE_MAX ? SIZE_MAX : add_sat(need, need / 8);
        buf = cap == SIZE_MAX ? NULL : weft__alloc(cap);
        if (!buf) {
            rc = WEFT_ENOMEM;   /* nothing written */
            goto out;
        }
    }
    weft__graph_unlock(m);
    fwrite(d.p, 1, d.len, out);   /* errors show in ferror(out) */
out:
    if (buf)
        weft__free(buf, cap);
    if (d.drawn != inl)
        weft__free(d.drawn, sizeof(drawn) * d.drawn_cap + sizeof(uint32_t) * 2 * (size_t)d.drawn_cap);
    return rc;
}

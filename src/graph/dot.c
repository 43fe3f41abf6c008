/* This file is private to weft: writing a task graph as Graphviz DOT.
 *
 * Synchronization: the text is rendered into memory under g's lock, so
 * the structure and the names cannot change under it (build calls are
 * refused during a run anyway), and written to the user's FILE after
 * the lock is released: a slow stream must not hold up the end of a run
 * (finish, run.c, takes the lock) or a stall report. The buffer is sized
 * under the lock from an upper bound on the text and allocated outside
 * it; if the graph grew in between, that is done again. Task states are
 * read with weft_task_get_state: during a run they are a snapshot, each
 * task's taken at its own moment.
 *
 * Output, one line per task then one per distinct edge, in the order the
 * tasks and edges were added:
 *   digraph weft {
 *     t0 [label="load"];
 *     t1 [label="task 1", shape=diamond];                (empty task)
 *     t2 [label="sum\nran", style=filled, fillcolor="#b7e4c7"];
 *     t0 -> t2;
 *   }
 */
#include <string.h>

#include "graph.h"

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
/* "  t" index " [label=\"" ... "];\n", and "task " index: the fixed part
 * of a node's line (10 digits per index), state excluded. */
#define NODE_FIXED (sizeof "  t" - 1 + 10 + sizeof " [label=\"" - 1 + sizeof "task " - 1 + 10 + \
                    sizeof diamond - 1 + sizeof "];\n" - 1)
#define STATE_MAX (sizeof st_skipped - 1)
#define EDGE_MAX (sizeof "  t" - 1 + 10 + sizeof " -> t" - 1 + 10 + \
                  sizeof weak_edge - 1 + 10 + sizeof "\"]" - 1 + sizeof ";\n" - 1)
_Static_assert(sizeof hexagon <= sizeof diamond, "NODE_FIXED counts the longest shape");

_Static_assert(sizeof st_skipped >= sizeof st_done && sizeof st_skipped >= sizeof st_running &&
               sizeof st_skipped >= sizeof st_failed &&
               sizeof st_skipped >= sizeof st_pending, "STATE_MAX is the longest state");

/* The text, in a buffer sized beforehand. */
typedef struct dotbuf {
    char *p;
    size_t len, cap;
} dotbuf;

static void put(dotbuf *b, const char *s, size_t n)
{
    if (n > b->cap - b->len)
        weft__panic("dump_dot: the text outgrew its bound (%zu + %zu > %zu)", b->len, n, b->cap);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_str(dotbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void put_u32(dotbuf *b, uint32_t v)
{
    char tmp[16];
    int k = snprintf(tmp, sizeof tmp, "%u", v);
    put(b, tmp, (size_t)k);
}

/* Bytes of s written as the inside of a DOT string. */
static size_t escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '"' || *s == '\\' || *s == '\n' ? 2 : *s == '\r' ? 0 : 1;
    return n;
}

/* Writes s as the inside of a DOT string. */
static void put_escaped(dotbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '"':  put(b, "\\\"", 2); break;
        case '\\': put(b, "\\\\", 2); break;
        case '\n': put(b, "\\n", 2); break;
        case '\r': break;
        default:   put(b, s, 1); break;
        }
    }
}

static const char *name_at(const weft_graph *g, uint32_t i)
{
    return g->names && i < g->names_cap ? g->names[i] : NULL;
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* A module task sits in a cluster of its own, labelled with the size of
 * the graph it runs (that graph's lock taken inside g's: parent before
 * child, as modules nest). */
static const char cluster_head[] = "  subgraph cluster_t";
static const char cluster_label[] = " {\n    label=\"module: ";
static const char cluster_tasks[] = " tasks\";\n  ";
static const char cluster_tail[] = "  }\n";
#define CLUSTER_MAX (sizeof cluster_head - 1 + 10 + sizeof cluster_label - 1 + 20 + \
                     sizeof cluster_tasks - 1 + sizeof cluster_tail - 1)

/* The buffer the dump needs: a mark word per task, then at most this
 * much text. SIZE_MAX: too large. Caller holds the lock. */
static size_t dump_bound(const weft_graph *g)
{
    size_t n = add_sat(sizeof(uint32_t) * (size_t)g->n, sizeof dot_head + sizeof dot_tail);
    for (uint32_t i = 0; i < g->n; i++) {
        const weft_task *t = weft__graph_node(g, i);
        const char *name = name_at(g, i);
        n = add_sat(n, NODE_FIXED + STATE_MAX + (weft__is_module(g, t) ? CLUSTER_MAX : 0) +
                       (name ? escaped_len(name) : 0));
        n = add_sat(n, (size_t)t->nsucc * EDGE_MAX);   /* duplicates included: an upper bound */
    }
    return n;
}

static void put_u64(dotbuf *b, uint64_t v)
{
    char d[20];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        put(b, &d[--n], 1);
}

static void put_node(dotbuf *b, const weft_graph *g, const weft_task *t)
{
    const char *name = name_at(g, t->index);
    bool module = weft__is_module(g, t);
    if (module) {
        put_str(b, cluster_head);
        put_u32(b, t->index);
        put_str(b, cluster_label);
        put_u64(b, weft_graph_size(t->arg));
        put_str(b, cluster_tasks);
    }
    put_str(b, "  t");
    put_u32(b, t->index);
    put_str(b, " [label=\"");
    if (name) {
        put_escaped(b, name);
    } else {
        put_str(b, "task ");
        put_u32(b, t->index);
    }
    switch (weft_task_get_state(t)) {
    case WEFT_TASK_DONE:    put_str(b, st_done); break;
    case WEFT_TASK_SKIPPED: put_str(b, st_skipped); break;
    case WEFT_TASK_FAILED:  put_str(b, st_failed); break;
    case WEFT_TASK_RUNNING: put_str(b, st_running); break;
    default:                put_str(b, st_pending); break;
    }
    if (weft__is_cond(t))
        put_str(b, hexagon);
    else if (weft__is_module(g, t))
        put_str(b, box3d);
    else if (!t->fn)
        put_str(b, diamond);
    put_str(b, "];\n");
    if (module)
        put_str(b, cluster_tail);
}

/* Renders g into buf (cap bytes, at least dump_bound's answer); returns
 * where the text starts, its length in *len. Caller holds the lock. */
static const char *render(const weft_graph *g, char *buf, size_t cap, size_t *len)
{
    uint32_t n = g->n;
    /* Until the next run's check removes them, an edge added twice is
     * stored twice: mark[v] = stamp of the last task that printed v. */
    uint32_t *mark = (uint32_t *)(void *)buf;
    memset(mark, 0, sizeof *mark * n);
    size_t off = sizeof *mark * n;
    dotbuf b = { buf + off, 0, cap - off };
    put(&b, dot_head, sizeof dot_head - 1);
    for (uint32_t i = 0; i < n; i++)
        put_node(&b, g, weft__graph_node(g, i));
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        const uint32_t *s = weft__succ(t);
        bool weak = weft__is_cond(t);
        for (uint32_t j = 0; j < t->nsucc; j++) {
            if (mark[s[j]] == i + 1)
                continue;
            mark[s[j]] = i + 1;
            put_str(&b, "  t");
            put_u32(&b, i);
            put_str(&b, " -> t");
            put_u32(&b, s[j]);
            if (weak) {
                /* A condition's edge: dashed, labelled with the answer that picks it. */
                put_str(&b, weak_edge);
                put_u32(&b, j);
                put_str(&b, "\"]");
            }
            put_str(&b, ";\n");
        }
    }
    put(&b, dot_tail, sizeof dot_tail - 1);
    *len = b.len;
    return b.p;
}

int weft_graph_dump_dot(const weft_graph *g, FILE *out)
{
    if (!g || !out)
        return WEFT_EINVAL;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        weft__graph_lock(m);
        size_t need = dump_bound(g);
        if (need <= cap)
            break;   /* holding the lock */
        weft__graph_unlock(m);
        /* Not under the lock: the allocator may be slow. A graph that
         * grew meanwhile sends us round again; some slack makes that
         * rare. */
        if (buf)
            weft__free(buf, cap);
        cap = need == SIZE_MAX ? SIZE_MAX : add_sat(need, need / 8);
        buf = cap == SIZE_MAX ? NULL : weft__alloc(cap);
        if (!buf)
            return WEFT_ENOMEM;   /* nothing written */
    }
    size_t len;
    const char *text = render(g, buf, cap, &len);
    weft__graph_unlock(m);
    fwrite(text, 1, len, out);   /* errors show in ferror(out) */
    weft__free(buf, cap);
    return WEFT_OK;
}

/* This file is private to weft: writing a task graph as Graphviz DOT.
 *
 * Synchronization: the dump holds g's lock, so the structure and the names
 * cannot change under it (build calls are refused during a run anyway).
 * Task states are read with weft_task_get_state: during a run they are a
 * snapshot, each task's taken at its own moment.
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

/* Writes s as the inside of a DOT string. */
static void put_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '"':  fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': break;
        default:   fputc(*s, out); break;
        }
    }
}

static void put_node(FILE *out, const weft_graph *g, const weft_task *t)
{
    const char *name = g->names && t->index < g->names_cap ? g->names[t->index] : NULL;
    fprintf(out, "  t%u [label=\"", t->index);
    if (name)
        put_escaped(out, name);
    else
        fprintf(out, "task %u", t->index);
    switch (weft_task_get_state(t)) {
    case WEFT_TASK_DONE:
        fputs("\\nran\", style=filled, fillcolor=\"#b7e4c7\"", out);
        break;
    case WEFT_TASK_SKIPPED:
        fputs("\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"", out);
        break;
    case WEFT_TASK_RUNNING:
        fputs("\\nrunning\", style=filled, fillcolor=\"#ffe08a\"", out);
        break;
    default:
        fputc('"', out);
        break;
    }
    if (!t->fn)
        fputs(", shape=diamond", out);
    fputs("];\n", out);
}

int weft_graph_dump_dot(const weft_graph *g, FILE *out)
{
    if (!g || !out)
        return WEFT_EINVAL;
    weft_graph *m = (weft_graph *)g;   /* the lock only */
    weft__graph_lock(m);
    uint32_t n = g->n;
    /* Until the next run's check removes them, an edge added twice is
     * stored twice: mark[v] = stamp of the last task that printed v. */
    uint32_t *mark = NULL;
    if (n) {
        mark = weft__calloc(sizeof *mark * n);
        if (!mark) {
            weft__graph_unlock(m);
            return WEFT_ENOMEM;
        }
    }
    fputs("digraph weft {\n", out);
    for (uint32_t i = 0; i < n; i++)
        put_node(out, g, weft__graph_node(g, i));
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        weft_task **s = weft__succ(t);
        for (uint32_t j = 0; j < t->nsucc; j++) {
            if (mark[s[j]->index] == i + 1)
                continue;
            mark[s[j]->index] = i + 1;
            fprintf(out, "  t%u -> t%u;\n", i, s[j]->index);
        }
    }
    fputs("}\n", out);
    weft__graph_unlock(m);
    if (mark)
        weft__free(mark, sizeof *mark * n);
    return WEFT_OK;
}

/* This file is private to weft: the check made before a graph's run where
 * its build left something to check: repeated edges in long successor
 * lists, and cycles where edges go against build order. What it costs and
 * when it runs: graph.c's opening comment ("The check").
 *
 * Synchronization
 *   Called with g's lock held and no run in flight (weft_graph_run's start,
 *   a module's start, through run_lock.c): it rewrites successor lists and
 *   the check flags as the build calls do, under the same lock. The
 *   scratch it allocates is its own.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* ---- the check, before a run ------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Removes t's repeated successors: sorts the list (its order is no
 * promise) and keeps the first of each; each edge dropped is uncounted
 * from its successor. */
static void dedup(weft_graph *g, weft_task *t)
{
    uint32_t *s = weft__succ(t);
    uint32_t n = t->nsucc, k = 0;
    qsort(s, n, sizeof *s, cmp_u32);
    for (uint32_t j = 0; j < n; j++) {
        if (k && s[k - 1] == s[j]) {
            weft_task *v = weft__graph_node(g, s[j]);
            v->npred--;   /* stays >= 1: one copy of the edge stays */
            atomic_store_explicit(&v->join, v->npred, memory_order_relaxed);   /* no run now */
            if (t->index > v->index)
                g->back_edges--;
            continue;
        }
        s[k++] = s[j];
    }
    if (k == n)
        return;
    if (k <= WEFT__SUCC_INLINE) {
        /* Back inline; the array's storage overlaps the inline slots. */
        uint32_t keep[WEFT__SUCC_INLINE];
        memcpy(keep, s, sizeof *keep * k);
        memcpy(t->succ.inl, keep, sizeof *keep * k);
    }
    t->nsucc = k;
}

/* Kahn's algorithm over every node, with the join counters as in-degrees
 * and a scratch word per node as the queue, seeded with the roots. true:
 * every node was ordered (no cycle). Puts join back to npred after. */
static bool acyclic(weft_graph *g, uint32_t *queue)
{
    uint32_t n = g->n, head = 0, tail = 0;
    /* A run of a graph with condition tasks may leave a count part-way
     * down (a branch not taken), or marked poisoned (run.c): in-degrees
     * start from npred. */
    if (g->has_cond)
        for (uint32_t i = 0; i < n; i++) {
            weft_task *t = weft__graph_node(g, i);
            if (t->npred)
                atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);   /* no run now */
        }
    if (!g->has_cond) {
        for (uint32_t r = 0; r < g->nroots; r++)
            queue[tail++] = g->roots[r];
    } else {
        for (uint32_t i = 0; i < n; i++)   /* tasks reached only by weak edges too */
            if (weft__graph_node(g, i)->npred == 0)
                queue[tail++] = i;
    }
    while (head < tail) {
        weft_task *t = weft__graph_node(g, queue[head++]);
        if (weft__is_cond(t))
            continue;   /* weak edges: no order between the ends */
        const uint32_t *s = weft__succ(t);
        for (uint32_t j = 0; j < t->nsucc; j++) {
            weft_task *v = weft__graph_node(g, s[j]);
            uint32_t left = atomic_load_explicit(&v->join, memory_order_relaxed) - 1;
            atomic_store_explicit(&v->join, left, memory_order_relaxed);   /* no run now */
            if (left == 0)
                queue[tail++] = s[j];
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        weft_task *t = weft__graph_node(g, i);
        if (t->npred)
            atomic_store_explicit(&t->join, t->npred, memory_order_relaxed);   /* roots keep their place */
    }
    return tail == n;
}

void weft__graph_dedup(weft_graph *g)
{
    if (g->need_dedup) {
        /* Tasks that fell back under the scan limit are searched again
         * on add: they leave the list. */
        uint32_t k = 0;
        for (uint32_t i = 0; i < g->nbig; i++) {
            weft_task *t = weft__graph_node(g, g->big[i]);
            dedup(g, t);
            if (t->nsucc >= WEFT__SUCC_SCAN)
                g->big[k++] = g->big[i];
        }
        g->nbig = k;
        g->need_dedup = false;
        if (!g->back_edges)
            g->need_order = false;
    }
}

int weft__graph_check(weft_graph *g)
{
    if (g->cyclic)
        return WEFT_ECYCLE;
    weft__graph_dedup(g);
    if (!g->need_order)
        return WEFT_OK;
    uint32_t *queue = weft__alloc(sizeof *queue * g->n);
    if (!queue)
        return WEFT_ENOMEM;   /* the deduplicated graph is the same graph */
    bool ok = acyclic(g, queue);
    weft__free(queue, sizeof *queue * g->n);
    if (!ok) {
        g->cyclic = true;
        return WEFT_ECYCLE;
    }
    g->need_order = false;
    return WEFT_OK;
}

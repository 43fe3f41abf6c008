/* Helpers the graph tests share: schedulers with W workers (or none and
 * this thread bound), graphs and tasks made or the test fails, a run and
 * its wait that must succeed. Include after wtest.h and sched_util.h. */
#ifndef WEFT_TEST_GRAPH_UTIL_H
#define WEFT_TEST_GRAPH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

/* workers 0: a scheduler without workers, bound to this thread. */
static inline weft_sched *open_sched(unsigned workers)
{
    weft_sched *s = make_sched(workers);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    return s;
}

static inline void close_sched(weft_sched *s, unsigned workers)
{
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

static inline weft_graph *new_graph(void)
{
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    WT_ASSERT(g != NULL);
    return g;
}

static inline weft_task *add(weft_graph *g, weft_fn fn, void *arg)
{
    weft_task *t = weft_graph_add(g, fn, arg);
    WT_ASSERT(t != NULL, "weft_graph_add failed");
    return t;
}

static inline void run_wait(weft_sched *s, weft_graph *g, const char *what)
{
    int rc = weft_graph_run(s, g);
    WT_ASSERT(rc == WEFT_OK, "%s: run: %s", what, weft_err_name(rc));
    rc = weft_graph_wait(g);
    WT_ASSERT(rc == WEFT_OK, "%s: wait: %s", what, weft_err_name(rc));
}

/* g's DOT dump as a string (malloc'd; the caller frees it). */
static inline char *dot_text(const weft_graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    WT_ASSERT(f != NULL);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_OK);
    WT_ASSERT_EQ(fclose(f), 0);
    return text;
}

/* A list of edges u -> v, as a test built them (duplicates included). */
struct edges {
    uint32_t *u, *v;
    size_t n, cap;
};

static inline void edges_push(struct edges *e, uint32_t u, uint32_t v)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 256;
        e->u = realloc(e->u, sizeof *e->u * e->cap);
        e->v = realloc(e->v, sizeof *e->v * e->cap);
        WT_ASSERT(e->u && e->v);
    }
    e->u[e->n] = u;
    e->v[e->n] = v;
    e->n++;
}

static inline void edges_free(struct edges *e)
{
    free(e->u);
    free(e->v);
    memset(e, 0, sizeof *e);
}

static inline int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The edges once each, sorted by (u, v) as u << 32 | v; *count of them. */
static inline uint64_t *edges_distinct(const struct edges *e, size_t *count)
{
    uint64_t *k = malloc(sizeof *k * (e->n + 1));
    WT_ASSERT(k != NULL);
    for (size_t i = 0; i < e->n; i++)
        k[i] = (uint64_t)e->u[i] << 32 | e->v[i];
    qsort(k, e->n, sizeof *k, cmp_u64);
    size_t m = 0;
    for (size_t i = 0; i < e->n; i++)
        if (m == 0 || k[m - 1] != k[i])
            k[m++] = k[i];
    *count = m;
    return k;
}

#endif /* WEFT_TEST_GRAPH_UTIL_H */

/* Helpers the task-graph tests share (test_graph_*.c): a counting task,
 * a blocker held until its gate opens, g's DOT dump as a string. Include
 * after wtest.h, sched_util.h and graph_util.h. A variable some of the
 * files leave unused is marked so. */
#ifndef WEFT_TEST_GRAPH_CASE_UTIL_H
#define WEFT_TEST_GRAPH_CASE_UTIL_H

static inline void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* ---- a blocker held until the gate opens -------------------------------------- */

__attribute__((unused)) static atomic_int gate;        /* 0: the blocker waits */

__attribute__((unused)) static atomic_int blocker_in;

static inline void blocker(void *arg)
{
    atomic_store(&blocker_in, 1);
    while (!atomic_load(&gate))
        sched_yield();
}

/* ---- g's DOT dump as a string (the caller frees it) ---------------------------- */

static inline char *dump(weft_graph *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    WT_ASSERT(f != NULL);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_OK);
    fclose(f);
    return buf;
}

#endif

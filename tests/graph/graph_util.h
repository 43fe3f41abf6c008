/* Helpers the graph tests share: schedulers with W workers (or none and
 * this thread bound), graphs and tasks made or the test fails, a run and
 * its wait that must succeed. Include after wtest.h and sched_util.h. */
#ifndef WEFT_TEST_GRAPH_UTIL_H
#define WEFT_TEST_GRAPH_UTIL_H

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

#endif /* WEFT_TEST_GRAPH_UTIL_H */

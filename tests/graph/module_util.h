/* Helpers the graph-module tests share (test_module_*.c): modules and
 * edges added or the test fails, a run whose wait must give a code, a
 * counting task, a flag predicate for weft_wait_until and the parts of a
 * condition loop. Include after wtest.h, sched_util.h and
 * graph_util.h. A variable some of the files leave unused is marked so. */
#ifndef WEFT_TEST_MODULE_UTIL_H
#define WEFT_TEST_MODULE_UTIL_H

/* ---- helpers ----------------------------------------------------------------------- */

static inline weft_task *add_mod(weft_graph *g, weft_graph *sub)
{
    weft_task *t = weft_graph_add_module(g, sub);
    WT_ASSERT(t != NULL, "weft_graph_add_module failed");
    return t;
}

static inline void edge(weft_task *u, weft_task *v)
{
    WT_ASSERT_EQ(weft_task_precede(u, v), WEFT_OK);
}

static inline void run_wait_rc(weft_sched *s, weft_graph *g, int want, const char *what)
{
    int rc = weft_graph_run(s, g);
    WT_ASSERT(rc == WEFT_OK, "%s: run: %s", what, weft_err_name(rc));
    rc = weft_graph_wait(g);
    WT_ASSERT(rc == want, "%s: wait: %s (%d), want %s (%d)", what, weft_err_name(rc), rc,
              weft_err_name(want), want);
}

static inline void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

__attribute__((unused)) static atomic_int bad;   /* what tasks saw go wrong */

static inline bool flag_set(void *ctx)
{
    return atomic_load((atomic_int *)ctx) != 0;
}

/* A counting loop: body, then cond picks 0 (back to body) until the
 * count reaches limit, then 1 (the exit). */
struct loop {
    atomic_int iters;
    int limit;
    atomic_int body, exit;
};

static inline int loop_cond(void *arg)
{
    struct loop *l = arg;
    return atomic_fetch_add(&l->iters, 1) + 1 < l->limit ? 0 : 1;
}

static inline void loop_exit(void *arg)
{
    atomic_fetch_add(&((struct loop *)arg)->exit, 1);
}

#endif

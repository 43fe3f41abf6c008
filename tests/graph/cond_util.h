/* Helpers the condition-task tests share (test_cond_*.c): the check a
 * task records instead of asserting, conditions added or the test fails,
 * counting tasks and answering conditions, and the do-while loop
 * init -> body -> cond -0-> body, cond -1-> done with its expected counts.
 * Include after wtest.h, sched_util.h and graph_util.h. A variable some of
 * the files leave unused is marked so. */
#ifndef WEFT_TEST_COND_UTIL_H
#define WEFT_TEST_COND_UTIL_H

/* ---- checks made in tasks ------------------------------------------------ */

__attribute__((unused)) static atomic_int bad_line;

#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            int zero_ = 0;                                                   \
            atomic_compare_exchange_strong(&bad_line, &zero_, __LINE__);     \
        }                                                                    \
    } while (0)

#define ASSERT_TASKS_OK(what)                                                \
    WT_ASSERT(atomic_load(&bad_line) == 0, "%s: a check in a task failed at line %d", (what), \
              atomic_load(&bad_line))

/* ---- helpers ---------------------------------------------------------------- */

static inline weft_task *add_cond(weft_graph *g, weft_cond_fn fn, void *arg)
{
    weft_task *t = weft_graph_add_cond(g, fn, arg);
    WT_ASSERT(t != NULL, "weft_graph_add_cond failed");
    return t;
}

static inline void edge(weft_task *a, weft_task *b)
{
    int rc = weft_task_precede(a, b);
    WT_ASSERT(rc == WEFT_OK, "precede: %s", weft_err_name(rc));
}

static inline void count(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
}

static inline int answer_const(void *arg)
{
    return (int)(intptr_t)arg;
}

__attribute__((unused)) static atomic_long cond_calls;   /* answer_counted's calls */

static inline int answer_counted(void *arg)
{
    atomic_fetch_add(&cond_calls, 1);
    return (int)(intptr_t)arg;
}

/* ==== loops ================================================================= */

/* A do-while loop: init -> body -> cond; cond -0-> body, cond -1-> done.
 * The body's k-th run of a run sees the condition called k - 1 times in
 * that run, and the condition's k-th call sees the body run k times. */
struct loop {
    long n;                       /* iterations per run */
    atomic_long init, body, cond, done;
    atomic_long it, calls;        /* this run's body runs and cond calls */
    weft_task *t_init, *t_body, *t_cond, *t_done;
};

static inline void loop_init(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->init, 1);
    atomic_store(&L->it, 0);
    atomic_store(&L->calls, 0);
}

static inline void loop_body(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->body, 1);
    long k = atomic_fetch_add(&L->it, 1) + 1;
    CHECK(atomic_load(&L->calls) == k - 1);
}

static inline int loop_cond(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->cond, 1);
    long c = atomic_fetch_add(&L->calls, 1) + 1;
    CHECK(atomic_load(&L->it) == c);
    return c < L->n ? 0 : 1;
}

static inline void loop_done(void *arg)
{
    struct loop *L = arg;
    atomic_fetch_add(&L->done, 1);
    CHECK(atomic_load(&L->calls) == L->n);
    CHECK(atomic_load(&L->it) == L->n);
}

static inline void loop_build(weft_graph *g, struct loop *L, long n)
{
    atomic_store(&L->init, 0);
    atomic_store(&L->body, 0);
    atomic_store(&L->cond, 0);
    atomic_store(&L->done, 0);
    L->n = n;
    L->t_init = add(g, loop_init, L);
    L->t_body = add(g, loop_body, L);
    L->t_cond = add_cond(g, loop_cond, L);
    L->t_done = add(g, loop_done, L);
    edge(L->t_init, L->t_body);
    edge(L->t_body, L->t_cond);
    edge(L->t_cond, L->t_body);   /* answer 0: a weak edge back */
    edge(L->t_cond, L->t_done);   /* answer 1 */
}

static inline void loop_expect(struct loop *L, long runs, const char *what, unsigned w)
{
    WT_ASSERT(atomic_load(&L->init) == runs, "%s, %u workers: init ran %ld times, want %ld", what, w,
              (long)atomic_load(&L->init), runs);
    WT_ASSERT(atomic_load(&L->body) == runs * L->n, "%s, %u workers: body ran %ld times, want %ld",
              what, w, (long)atomic_load(&L->body), runs * L->n);
    WT_ASSERT(atomic_load(&L->cond) == runs * L->n, "%s, %u workers: cond ran %ld times, want %ld",
              what, w, (long)atomic_load(&L->cond), runs * L->n);
    WT_ASSERT(atomic_load(&L->done) == runs, "%s, %u workers: done ran %ld times, want %ld", what, w,
              (long)atomic_load(&L->done), runs);
    ASSERT_TASKS_OK(what);
}

__attribute__((unused)) static atomic_long oor_calls;

static inline int ten_then_out(void *arg)
{
    (void)arg;
    long c = atomic_fetch_add(&oor_calls, 1) + 1;
    return c < 10 ? 0 : (c == 10 ? -1 : 0);
}

#endif

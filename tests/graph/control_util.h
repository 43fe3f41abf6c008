/* Helpers the graph-control tests share (test_control_*.c): WAIT_FAILED,
 * the `flaw` a task notes instead of asserting, and the world: numbered
 * tasks of a random DAG, checked as they run, with its descendants, a
 * scripted task, a blocker on a gate, and a series' counts and predicate.
 * Include after wtest.h, sched_util.h and graph_util.h. A variable some of
 * the files leave unused is marked so. */
#ifndef WEFT_TEST_CONTROL_UTIL_H
#define WEFT_TEST_CONTROL_UTIL_H

/* g's run ended with a task's own weft_task_fail(code): the wait says
 * WEFT_EFAILED, never the code, and weft_graph_fail_code gives the code. */
#define WAIT_FAILED(g, code)                                                 \
    do {                                                                     \
        WT_ASSERT_EQ(weft_graph_wait(g), WEFT_EFAILED);                      \
        WT_ASSERT_EQ(weft_graph_fail_code(g), (code));                       \
    } while (0)

/* ---- flaws found inside tasks ------------------------------------------------- */

static atomic_int flaw_count;

static char flaw_msg[256];

static void flaw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void flaw(const char *fmt, ...)
{
    if (atomic_fetch_add(&flaw_count, 1) != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(flaw_msg, sizeof flaw_msg, fmt, ap);
    va_end(ap);
}

#define CHECK_FLAWS(what)                                                    \
    WT_ASSERT(atomic_load(&flaw_count) == 0, "%s: %d flaws in tasks, the first: %s", (what), \
              atomic_load(&flaw_count), flaw_msg)

/* ---- schedulers: W workers, or none and this thread bound -------------------- */

static inline void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
}

static inline void noop(void *arg)
{
    (void)arg;
}

static inline void shuffle_u32(uint32_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = wt_rand(rng) % i;
        uint32_t x = a[i - 1];
        a[i - 1] = a[j];
        a[j] = x;
    }
}

/* ---- a world: numbered tasks of a random DAG, checked as they run -------------------- */

struct world;

struct node {
    struct world *w;
    uint32_t id;
    weft_task *t;
    atomic_uint_fast64_t start, end;   /* tickets of the latest run */
    atomic_uint_fast64_t last_run;     /* the run index it last ran in */
    atomic_uint runs;                  /* since the last world_reset */
};

struct world {
    uint32_t n;
    struct node *nd;
    struct edges e;            /* as added, duplicates included */
    uint64_t *dk;              /* distinct edges, sorted u << 32 | v */
    size_t m;
    uint32_t *soff, *sadj;     /* successors (CSR over dk) */
    uint32_t *poff, *padj;     /* predecessors */
    weft_task *head;           /* with a head: the one root, counts runs */
    atomic_int fail_at;        /* the node that fails; -1: none */
    atomic_uint_fast64_t fail_run;   /* 0: in every run, else only in that one */
    atomic_uint_fast64_t ticket, run;
};

static inline int code_of(uint32_t id)
{
    return -1000 - (int)id;
}

/* A task: takes its start ticket, checks weft_task_current and, with a
 * head (series), that it runs once per run after each predecessor ran in
 * the same run; fails if it is the chosen one; takes its end ticket. */
static inline void node_fn(void *arg)
{
    struct node *v = arg;
    struct world *w = v->w;
    atomic_store(&v->start, atomic_fetch_add(&w->ticket, 1) + 1);
    if (weft_task_current() != v->t)
        flaw("task %u: weft_task_current() is %p, want %p", v->id, (void *)weft_task_current(),
             (void *)v->t);
    uint64_t r = atomic_load(&w->run);
    if (w->head) {
        if (atomic_load(&v->last_run) != r - 1)
            flaw("task %u runs in run %llu; it last ran in run %llu", v->id,
                 (unsigned long long)r, (unsigned long long)atomic_load(&v->last_run));
        for (uint32_t k = w->poff[v->id]; k < w->poff[v->id + 1]; k++) {
            struct node *p = &w->nd[w->padj[k]];
            if (atomic_load(&p->last_run) != r)
                flaw("run %llu: task %u started before its predecessor %u ran (it last ran in run %llu)",
                     (unsigned long long)r, v->id, p->id, (unsigned long long)atomic_load(&p->last_run));
        }
    }
    uint64_t fr = atomic_load(&w->fail_run);
    if (atomic_load(&w->fail_at) == (int)v->id && (fr == 0 || fr == r)) {
        int rc = weft_task_fail(code_of(v->id));
        if (rc != WEFT_OK)
            flaw("task %u: weft_task_fail: %s", v->id, weft_err_name(rc));
        if (weft_task_state(v->t) != WEFT_TASK_RUNNING)
            flaw("task %u: state %d after weft_task_fail, want RUNNING until it returns", v->id,
                 (int)weft_task_state(v->t));
    }
    atomic_fetch_add(&v->runs, 1);
    atomic_store(&v->last_run, r);
    atomic_store(&v->end, atomic_fetch_add(&w->ticket, 1) + 1);
}

/* The head of a series: the next run's index; the last run is over. */
static inline void head_fn(void *arg)
{
    struct world *w = arg;
    if (weft_task_current() != w->head)
        flaw("head: weft_task_current() is %p, want %p", (void *)weft_task_current(), (void *)w->head);
    uint64_t r = atomic_fetch_add(&w->run, 1) + 1;
    for (uint32_t i = 0; i < w->n; i++)
        if (atomic_load(&w->nd[i].last_run) != r - 1)
            flaw("run %llu started before run %llu ended: task %u last ran in run %llu",
                 (unsigned long long)r, (unsigned long long)r - 1, i,
                 (unsigned long long)atomic_load(&w->nd[i].last_run));
}

/* n tasks, edges up a random order: 0 to 4 successors each, mostly among
 * the next 6, some anywhere after; dup_pct percent added twice. */
static inline void world_generate(struct world *w, uint32_t n, unsigned dup_pct, uint64_t *rng)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->nd = calloc(n, sizeof *w->nd);
    uint32_t *order = malloc(sizeof *order * n);
    WT_ASSERT(w->nd && order);
    for (uint32_t i = 0; i < n; i++) {
        w->nd[i].w = w;
        w->nd[i].id = i;
        order[i] = i;
    }
    shuffle_u32(order, n, rng);
    for (uint32_t r = 0; r + 1 < n; r++) {
        uint32_t left = n - 1 - r;
        unsigned deg = wt_rand(rng) % 5;
        for (unsigned d = 0; d < deg; d++) {
            uint32_t span = wt_rand(rng) % 4 && left > 6 ? 6 : left;
            uint32_t v = order[r + 1 + wt_rand(rng) % span];
            edges_push(&w->e, order[r], v);
            if (wt_rand(rng) % 100 < dup_pct)
                edges_push(&w->e, order[r], v);
        }
    }
    free(order);
    for (size_t i = w->e.n; i > 1; i--) {
        size_t j = wt_rand(rng) % i;
        uint32_t u = w->e.u[i - 1], v = w->e.v[i - 1];
        w->e.u[i - 1] = w->e.u[j];
        w->e.v[i - 1] = w->e.v[j];
        w->e.u[j] = u;
        w->e.v[j] = v;
    }
    atomic_store(&w->fail_at, -1);
}

/* The distinct edges and both adjacencies. */
static inline void world_index(struct world *w)
{
    free(w->dk);
    free(w->soff);
    free(w->sadj);
    free(w->poff);
    free(w->padj);
    w->dk = edges_distinct(&w->e, &w->m);
    w->soff = calloc(w->n + 1, sizeof *w->soff);
    w->poff = calloc(w->n + 1, sizeof *w->poff);
    w->sadj = malloc(sizeof *w->sadj * (w->m + 1));
    w->padj = malloc(sizeof *w->padj * (w->m + 1));
    WT_ASSERT(w->soff && w->poff && w->sadj && w->padj);
    for (size_t i = 0; i < w->m; i++) {
        w->soff[(w->dk[i] >> 32) + 1]++;
        w->poff[(uint32_t)w->dk[i] + 1]++;
    }
    for (uint32_t i = 0; i < w->n; i++) {
        w->soff[i + 1] += w->soff[i];
        w->poff[i + 1] += w->poff[i];
    }
    uint32_t *sf = malloc(sizeof *sf * (w->n + 1)), *pf = malloc(sizeof *pf * (w->n + 1));
    WT_ASSERT(sf && pf);
    memcpy(sf, w->soff, sizeof *sf * (w->n + 1));
    memcpy(pf, w->poff, sizeof *pf * (w->n + 1));
    for (size_t i = 0; i < w->m; i++) {
        uint32_t u = (uint32_t)(w->dk[i] >> 32), v = (uint32_t)w->dk[i];
        w->sadj[sf[u]++] = v;
        w->padj[pf[v]++] = u;
    }
    free(sf);
    free(pf);
}

/* Adds the tasks in id order (so about half the edges go against it),
 * then the edges, half with precede and half with succeed; with_head: a
 * head task first, before every task without predecessors. */
static inline void world_build(struct world *w, weft_graph *g, bool with_head)
{
    world_index(w);
    w->head = with_head ? add(g, head_fn, w) : NULL;
    for (uint32_t i = 0; i < w->n; i++)
        w->nd[i].t = add(g, node_fn, &w->nd[i]);
    for (size_t k = 0; k < w->e.n; k++) {
        weft_task *u = w->nd[w->e.u[k]].t, *v = w->nd[w->e.v[k]].t;
        WT_ASSERT_EQ(k % 2 ? weft_task_precede(u, v) : weft_task_succeed(v, u), WEFT_OK);
    }
    if (with_head)
        for (uint32_t i = 0; i < w->n; i++)
            if (w->poff[i] == w->poff[i + 1])
                WT_ASSERT_EQ(weft_task_precede(w->head, w->nd[i].t), WEFT_OK);
}

static inline void world_free(struct world *w)
{
    free(w->nd);
    free(w->dk);
    free(w->soff);
    free(w->sadj);
    free(w->poff);
    free(w->padj);
    edges_free(&w->e);
}

/* desc[i]: i is reachable from f by one edge or more. */
static inline void world_descendants(const struct world *w, uint32_t f, bool *desc)
{
    memset(desc, 0, w->n);
    uint32_t *stack = malloc(sizeof *stack * (w->n + 1));
    WT_ASSERT(stack != NULL);
    size_t sp = 0;
    stack[sp++] = f;
    while (sp) {
        uint32_t u = stack[--sp];
        for (uint32_t k = w->soff[u]; k < w->soff[u + 1]; k++) {
            uint32_t v = w->sadj[k];
            if (!desc[v]) {
                desc[v] = true;
                stack[sp++] = v;
            }
        }
    }
    free(stack);
}

/* ---- scripted tasks: who fails or cancels, run by run ------------------------ */

struct script {
    atomic_int mode;     /* what the scripted tasks do this run */
    weft_task *victim;   /* cancelled by `canceller` in mode 3 */
};

__attribute__((unused)) static struct script script;

/* mode 1: a fails; 2: c fails; 3: c cancels d and b fails; 4: c fails
 * twice (-7, then -8); 5: c fails with INT_MIN; 0: nobody fails. */
static inline void scripted(void *arg)
{
    int who = (int)(intptr_t)arg, mode = atomic_load(&script.mode), rc = WEFT_OK;
    if (mode == 1 && who == 'a')
        rc = weft_task_fail(-1001);
    if (mode == 2 && who == 'c')
        rc = weft_task_fail(-1003);
    if (mode == 3 && who == 'c' && !weft_task_cancel(script.victim))
        flaw("c could not cancel d before d started");
    if (mode == 3 && who == 'b')
        rc = weft_task_fail(-1002);
    if (mode == 4 && who == 'c') {
        rc = weft_task_fail(-7);
        if (rc == WEFT_OK)
            rc = weft_task_fail(-8);
    }
    if (mode == 5 && who == 'c')
        rc = weft_task_fail(INT_MIN);
    if (rc != WEFT_OK)
        flaw("task %c: weft_task_fail: %s", who, weft_err_name(rc));
}

/* A run held open by a blocker: set_fail_fast and reset from outside are
 * EBUSY and change nothing (the next failure does not stop an
 * independent branch; the cancel mark stays). */
__attribute__((unused)) static atomic_int gate, blocker_in;

static inline void blocker(void *arg)
{
    (void)arg;
    atomic_store(&blocker_in, 1);
    while (!atomic_load(&gate))
        weft_sleep(100 * 1000);
}

#endif

/* Helpers the graph-building tests share (test_build_*.c): tickets each
 * task takes as it starts and ends, checked against the edges of a run,
 * the DOT dump counted, a counting task and a shuffle. Include after
 * wtest.h, sched_util.h and graph_util.h. A variable some of the files
 * leave unused is marked so. */
#ifndef WEFT_TEST_BUILD_UTIL_H
#define WEFT_TEST_BUILD_UTIL_H

/* ---- tickets ----------------------------------------------------------------- */

static atomic_uint_fast64_t ticket;

struct rec {
    atomic_uint_fast64_t start, end;
    atomic_uint runs;
};

/* Relaxed stores: the run's end orders them before the checker's reads;
 * the tickets themselves are read-modify-writes of one counter, so a
 * task that ends before another starts draws the smaller ticket. */
static inline void stamp(void *arg)
{
    struct rec *r = arg;
    atomic_store_explicit(&r->start, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->runs, 1, memory_order_relaxed);
    atomic_store_explicit(&r->end, atomic_fetch_add(&ticket, 1) + 1, memory_order_relaxed);
}

static inline void recs_reset(struct rec *r, size_t n)
{
    atomic_store(&ticket, 0);
    for (size_t i = 0; i < n; i++) {
        atomic_store(&r[i].start, 0);
        atomic_store(&r[i].end, 0);
        atomic_store(&r[i].runs, 0);
    }
}

/* ---- edge lists ----------------------------------------------------------------- */


/* Every task i < n with present[i] (all of them if present is NULL) ran
 * exactly once, the others never; every edge's u ended before its v
 * started; every present task reads DONE if t is given. */
static inline void check_run(const char *what, struct rec *r, uint32_t n, const bool *present,
                      const struct edges *e, weft_task *const *t)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned want = !present || present[i];
        unsigned got = atomic_load(&r[i].runs);
        WT_ASSERT(got == want, "%s: task %u ran %u times, want %u", what, i, got, want);
        if (t && want)
            WT_ASSERT_EQ(weft_task_state(t[i]), WEFT_TASK_DONE);
    }
    for (size_t k = 0; k < e->n; k++) {
        uint32_t u = e->u[k], v = e->v[k];
        uint64_t end_u = atomic_load(&r[u].end), start_v = atomic_load(&r[v].start);
        WT_ASSERT(end_u < start_v, "%s: edge %u -> %u: %u ended at %llu, %u started at %llu",
                  what, u, v, u, (unsigned long long)end_u, v, (unsigned long long)start_v);
    }
}

/* ---- the DOT dump, counted ---------------------------------------------------------- */

struct dot {
    char *text;
    size_t nodes;    /* lines with a label and no arrow */
    size_t arrows;   /* lines with "->" */
};

static inline struct dot dot_of(weft_graph *g)
{
    struct dot d = { 0 };
    d.text = dot_text(g);
    for (char *line = d.text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, "->"))
            d.arrows++;
        else if (strstr(line, "label="))
            d.nodes++;
        if (!nl)
            break;
        *nl = '\n';
        line = nl + 1;
    }
    return d;
}

/* ---- schedulers: W workers, or none and this thread bound ------------------------- */

static inline void count(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
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

/* ---- random DAGs of a few shapes ---------------------------------------------- */

#define NBUILD 8

/* How a random DAG looks. Out-degrees: p0, p1, p2, p3 percent of the
 * tasks get 0 to 3 successors, the rest 4 to 8; `hubs` tasks get 100 to
 * 199 distinct successors, one task 100 to 149 predecessors. local: the
 * percentage of successors taken among the next 8 in topological order
 * (long chains), the others anywhere after. dup: the percentage of edges
 * added twice. */
struct shape {
    const char *name;
    uint32_t n;
    unsigned p0, p1, p2, p3, hubs, local, dup;
};

__attribute__((unused)) static const struct shape shapes[] = {
    { "sparse", 3000, 35, 45, 10, 5, 2, 60, 3 },
    { "mean3", 2000, 10, 25, 25, 25, 3, 50, 5 },
    { "dense", 600, 5, 5, 10, 10, 4, 30, 10 },
    { "small", 300, 40, 30, 15, 10, 1, 70, 20 },
};

struct dag {
    uint32_t n, cap;        /* tasks now, room for */
    double *rank;           /* a topological order: edges go up in rank */
    struct edges e;         /* in the order added, duplicates included */
    struct rec *rec;
    weft_task **t;
};

static inline void dag_alloc(struct dag *d, uint32_t n, uint32_t cap)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    d->cap = cap;
    d->rank = calloc(cap, sizeof *d->rank);
    d->rec = calloc(cap, sizeof *d->rec);
    d->t = calloc(cap, sizeof *d->t);
    WT_ASSERT(d->rank && d->rec && d->t);
}

static inline void dag_free(struct dag *d)
{
    free(d->rank);
    free(d->rec);
    free(d->t);
    edges_free(&d->e);
}

/* Edges over a random permutation of the tasks (the topological order),
 * so about half go from a task added later to one added earlier. Then
 * the edge list is shuffled: the threads add them in no useful order. */
static inline void dag_generate(struct dag *d, const struct shape *sh, uint64_t *rng)
{
    uint32_t n = d->n;
    uint32_t *order = malloc(sizeof *order * n);
    WT_ASSERT(order != NULL);
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    shuffle_u32(order, n, rng);
    for (uint32_t r = 0; r < n; r++)
        d->rank[order[r]] = r;
    for (uint32_t r = 0; r + 1 < n; r++) {
        uint32_t u = order[r], left = n - 1 - r;
        bool hub = false;
        for (unsigned h = 0; h < sh->hubs; h++)
            hub |= r == h * n / (2 * sh->hubs) + 1;
        if (hub) {
            uint32_t deg = 100 + wt_rand(rng) % 100;
            if (deg > left)
                deg = left;
            for (uint32_t j = 0; j < deg; j++) {
                uint32_t v = order[r + 1 + (uint64_t)j * left / deg];
                edges_push(&d->e, u, v);
                if (wt_rand(rng) % 100 < sh->dup)
                    edges_push(&d->e, u, v);
            }
            continue;
        }
        unsigned roll = wt_rand(rng) % 100, deg;
        if (roll < sh->p0)
            deg = 0;
        else if (roll < sh->p0 + sh->p1)
            deg = 1;
        else if (roll < sh->p0 + sh->p1 + sh->p2)
            deg = 2;
        else if (roll < sh->p0 + sh->p1 + sh->p2 + sh->p3)
            deg = 3;
        else
            deg = 4 + wt_rand(rng) % 5;
        /* Distinct successors: offsets drawn without repeats. */
        uint32_t offs[8];
        unsigned got = 0;
        for (unsigned tries = 0; got < deg && tries < 64; tries++) {
            uint32_t span = wt_rand(rng) % 100 < sh->local && left > 8 ? 8 : left;
            uint32_t off = 1 + wt_rand(rng) % span;
            bool seen = false;
            for (unsigned k = 0; k < got; k++)
                seen |= offs[k] == off;
            if (!seen)
                offs[got++] = off;
        }
        for (unsigned k = 0; k < got; k++) {
            uint32_t v = order[r + offs[k]];
            edges_push(&d->e, u, v);
            if (wt_rand(rng) % 100 < sh->dup)
                edges_push(&d->e, u, v);
        }
    }
    /* A fan-in: the last task in the order gets 100 to 149 predecessors. */
    uint32_t sink = order[n - 1];
    uint32_t fan = 100 + wt_rand(rng) % 50;
    for (uint32_t k = 0; k < fan; k++)
        edges_push(&d->e, order[(uint64_t)k * (n - 1) / fan], sink);
    free(order);

    /* Shuffle the edges. */
    for (size_t i = d->e.n; i > 1; i--) {
        size_t j = wt_rand(rng) % i;
        uint32_t u = d->e.u[i - 1], v = d->e.v[i - 1];
        d->e.u[i - 1] = d->e.u[j];
        d->e.v[i - 1] = d->e.v[j];
        d->e.u[j] = u;
        d->e.v[j] = v;
    }
}

/* Counts edges in the dump: one per distinct edge, one node per task. */
static inline void dag_check_dump(struct dag *d, weft_graph *g, const char *what)
{
    size_t m;
    free(edges_distinct(&d->e, &m));
    struct dot dt = dot_of(g);
    WT_ASSERT(dt.arrows == m && dt.nodes == d->n, "%s: the dump has %zu edges and %zu tasks, want %zu and %u",
              what, dt.arrows, dt.nodes, m, d->n);
    free(dt.text);
}

#endif

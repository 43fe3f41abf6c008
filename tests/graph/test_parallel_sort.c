/* weft_parallel_sort and weft_parallel_sort_stable, written from
 * weft/parallel.h: seeded random inputs (sizes 0, 1, run and leaf edges,
 * 10^6) sorted equal to a sequential reference, from a plain thread, a
 * task and a bound thread at 0, 1, 2 and 8 workers; keys with many
 * duplicates, sorted and reversed and constant inputs; elements of 4, 8
 * and 24 bytes, and of 100 (past what is copied as a word or held aside),
 * random, few keys and reversed; the stable sort's order of equal keys, with and without
 * the caller's scratch; a scratch that cannot be had leaving the input
 * untouched (ENOMEM); a comparison that blocks on an event another task
 * sets; bad input. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo_util.h"
#include "compiler.h"   /* WEFT_TSAN */

/* 24 bytes: a key, then the element's original place (to check
 * stability and that the result is a permutation of the input). */
struct rec {
    uint64_t key;
    uint64_t place;
    uint64_t check;   /* key ^ place, so that a torn element shows */
};

static int cmp_rec(const void *a, const void *b, void *arg)
{
    (void)arg;
    uint64_t x = ((const struct rec *)a)->key, y = ((const struct rec *)b)->key;
    return (x > y) - (x < y);
}

/* The reference: by key, then by place: what a stable sort gives. */
static int cmp_rec_full(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->place > y->place) - (x->place < y->place);
}

static int cmp_u64(const void *a, const void *b, void *arg)
{
    (void)arg;
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u64_q(const void *a, const void *b)
{
    return cmp_u64(a, b, NULL);
}

static int cmp_i32(const void *a, const void *b, void *arg)
{
    (void)arg;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i32_q(const void *a, const void *b)
{
    return cmp_i32(a, b, NULL);
}

enum shape { RANDOM, FEW_KEYS, SORTED, REVERSED, CONSTANT, SHAPES };

static uint64_t key_at(enum shape sh, size_t i, size_t n, uint64_t *seed)
{
    switch (sh) {
    case RANDOM: return rng_next(seed);
    case FEW_KEYS: return rng_next(seed) % 7;
    case SORTED: return i / 3;
    case REVERSED: return n - i;
    default: return 42;
    }
}

struct st {
    size_t n;
    struct rec *r, *want;
    uint64_t *u, *uwant;
    int32_t *h, *hwant;
    void *scratch;     /* the caller's, or NULL */
    bool big;          /* 10^6 elements: fewer shapes */
};

static void fill(struct st *t, enum shape sh)
{
    uint64_t seed = t->n * 31 + (uint64_t)sh;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t k = key_at(sh, i, t->n, &seed);
        t->r[i] = (struct rec){ k, i, k ^ i };
        t->u[i] = k * 0x9e3779b97f4a7c15ull;
        t->h[i] = (int32_t)(k % 1000) - 500;
    }
    memcpy(t->want, t->r, t->n * sizeof *t->r);
    qsort(t->want, t->n, sizeof *t->want, cmp_rec_full);
    memcpy(t->uwant, t->u, t->n * 8);
    qsort(t->uwant, t->n, 8, cmp_u64_q);
    memcpy(t->hwant, t->h, t->n * 4);
    qsort(t->hwant, t->n, 4, cmp_i32_q);
}

static void check_sorts(weft_sched *s, void *ctx)
{
    struct st *t = ctx;
    size_t n = t->n;
    for (int sh = 0; sh < SHAPES; sh++) {
        if (t->big && sh != RANDOM && sh != FEW_KEYS)
            continue;   /* at 10^6, the shapes that take the most work */
        /* Stable: exactly the reference, places of equal keys in order. */
        fill(t, (enum shape)sh);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, t->r, n, sizeof *t->r, t->scratch, cmp_rec, NULL), WEFT_OK);
        for (size_t i = 0; i < n; i++)
            WT_ASSERT(t->r[i].key == t->want[i].key && t->r[i].place == t->want[i].place &&
                          t->r[i].check == (t->r[i].key ^ t->r[i].place),
                      "stable, shape %d, element %zu of %zu: key %llu place %llu, want %llu %llu", sh, i, n,
                      (unsigned long long)t->r[i].key, (unsigned long long)t->r[i].place,
                      (unsigned long long)t->want[i].key, (unsigned long long)t->want[i].place);
        WT_ASSERT_EQ(weft_parallel_sort_stable(s, t->u, n, 8, NULL, cmp_u64, NULL), WEFT_OK);
        WT_ASSERT(memcmp(t->u, t->uwant, n * 8) == 0, "stable u64, shape %d, n %zu", sh, n);
        /* Unstable: the keys in order, and the same multiset (the
         * reference sorted by place too: sort ours the same way). */
        fill(t, (enum shape)sh);
        WT_ASSERT_EQ(weft_parallel_sort(s, t->r, n, sizeof *t->r, cmp_rec, NULL), WEFT_OK);
        for (size_t i = 0; i < n; i++)
            WT_ASSERT(t->r[i].key == t->want[i].key && t->r[i].check == (t->r[i].key ^ t->r[i].place),
                      "unstable, shape %d, element %zu of %zu", sh, i, n);
        qsort(t->r, n, sizeof *t->r, cmp_rec_full);
        WT_ASSERT(memcmp(t->r, t->want, n * sizeof *t->r) == 0, "unstable: not a permutation (shape %d)", sh);
        WT_ASSERT_EQ(weft_parallel_sort(s, t->u, n, 8, cmp_u64, NULL), WEFT_OK);
        WT_ASSERT(memcmp(t->u, t->uwant, n * 8) == 0, "unstable u64, shape %d, n %zu", sh, n);
        WT_ASSERT_EQ(weft_parallel_sort(s, t->h, n, 4, cmp_i32, NULL), WEFT_OK);
        WT_ASSERT(memcmp(t->h, t->hwant, n * 4) == 0, "unstable i32, shape %d, n %zu", sh, n);
    }
}

/* Sorts every size below 10^6 from every caller, or (big) 10^6 from one
 * caller. */
static void run_all_sizes(bool caller_scratch, const unsigned *counts, size_t ncounts, bool big)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1] + 1;
    struct st t = {
        .r = malloc(max * sizeof(struct rec)), .want = malloc(max * sizeof(struct rec)),
        .u = malloc(max * 8), .uwant = malloc(max * 8), .h = malloc(max * 4), .hwant = malloc(max * 4),
        .scratch = caller_scratch ? malloc(max * sizeof(struct rec)) : NULL,
    };
    WT_ASSERT(t.r && t.want && t.u && t.uwant && t.h && t.hwant && (!caller_scratch || t.scratch));
    for (size_t c = 0; c < ncounts; c++) {
        weft_sched *s = make_sched(counts[c]);
        if (big) {
            t.n = sizes[ns - 1];
            t.big = true;
            /* plain at 0 and 1 workers (1: beside a spare CPU, the
             * sort starts flat), a task at 2, a bound thread at 8 */
            run_as(s, counts[c] < 2 ? CALL_PLAIN : counts[c] == 2 ? CALL_TASK : CALL_BOUND, check_sorts, &t);
        }
        for (int k = 0; k < CALL_KINDS && !big; k++)
            for (size_t i = 0; i + 1 < ns; i++) {
                t.n = sizes[i];
                run_as(s, (enum caller)k, check_sorts, &t);
            }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(t.r);
    free(t.want);
    free(t.u);
    free(t.uwant);
    free(t.h);
    free(t.hwant);
    free(t.scratch);
}

/* Under TSAN at 2 and 8 workers only: at 0 and 1 little runs beside
 * the caller, and release and ASan check every count. */
WT_TEST(parallel_sort, sorts_match_the_reference_up_to_64k, .timeout = 600)
{
#ifdef WEFT_TSAN
    WT_FOR_WORKERS(w, 2, 8) {
#else
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
#endif
        run_all_sizes(false, &w, 1, false);
    }
}

/* Under TSAN at 2 workers only (a task calls it there): every access
 * of 10^6 elements is instrumented, and the other counts' callers are
 * checked at the sizes below. */
WT_TEST(parallel_sort, sorts_a_million, .timeout = 900)
{
#ifdef WEFT_TSAN
    unsigned two = 2;
    run_all_sizes(false, &two, 1, true);
#else
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        run_all_sizes(false, &w, 1, true);
    }
#endif
}

WT_TEST(parallel_sort, stable_sort_through_the_callers_scratch, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 2) {
        run_all_sizes(true, &w, 1, false);
    }
}

/* ---- out of memory ---------------------------------------------------------- */

/* Refuses blocks of 4 MiB or more: the scheduler runs, a sort's scratch
 * of 8 MiB cannot be had. */
static void *small_alloc(size_t size, void *ctx)
{
    (void)ctx;
    return size >= ((size_t)4 << 20) ? NULL : aligned_alloc(64, (size + 63) & ~(size_t)63);
}

static void small_free(void *p, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    free(p);
}

struct oom {
    uint64_t *u, *copy;
    size_t n;
};

static void check_oom(weft_sched *s, void *ctx)
{
    struct oom *o = ctx;
    WT_ASSERT_EQ(weft_parallel_sort_stable(s, o->u, o->n, 8, NULL, cmp_u64, NULL), WEFT_ENOMEM);
    WT_ASSERT(memcmp(o->u, o->copy, o->n * 8) == 0, "input changed by a sort that failed");
    /* Smaller ones still sort; the unstable sort needs no memory. */
    WT_ASSERT_EQ(weft_parallel_sort_stable(s, o->u, 1000, 8, NULL, cmp_u64, NULL), WEFT_OK);
    for (size_t i = 1; i < 1000; i++)
        WT_ASSERT(o->u[i - 1] <= o->u[i]);
    WT_ASSERT_EQ(weft_parallel_sort(s, o->u, o->n, 8, cmp_u64, NULL), WEFT_OK);
    for (size_t i = 1; i < o->n; i++)
        WT_ASSERT(o->u[i - 1] <= o->u[i]);
    memcpy(o->u, o->copy, o->n * 8);
}

WT_TEST(parallel_sort, stable_sort_without_scratch_changes_nothing, .timeout = 300)
{
    struct oom o = { .n = (size_t)1 << 20 };
    o.u = malloc(o.n * 8);
    o.copy = malloc(o.n * 8);
    WT_ASSERT(o.u && o.copy);
    uint64_t seed = 5;
    for (size_t i = 0; i < o.n; i++)
        o.u[i] = o.copy[i] = rng_next(&seed);
#ifdef WEFT_TSAN
    WT_FOR_WORKERS(w, 2) {   /* as sorts_a_million: every access of 2^20 elements is instrumented */
#else
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
#endif
        weft_config c;
        weft_config_init(&c);
        c.workers = wt_workers(w);
        c.allocator = (weft_allocator){ small_alloc, small_free, NULL };
        weft_sched *s = NULL;
        WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
        for (int k = 0; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_oom, &o);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(o.u);
    free(o.copy);
}

/* ---- elements over 64 bytes ------------------------------------------------- */

/* 100 bytes: a key, the element's original place, and a filler derived
 * from both (so a torn or mixed-up element shows). Past the 64 bytes an
 * insertion sort holds aside, and no word-sized copy. */
struct big {
    uint64_t key, place;
    unsigned char fill[84];
};

static int cmp_big(const void *a, const void *b, void *arg)
{
    (void)arg;
    const struct big *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static void check_big(weft_sched *s, void *ctx)
{
    (void)ctx;
    size_t n = 40000;
    struct big *v = malloc(n * sizeof *v);
    unsigned char *seen = calloc(n, 1);
    WT_ASSERT(v && seen);
    for (int shape = 0; shape < 3; shape++) {   /* random keys, few keys, reversed */
        uint64_t seed = 77;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&seed);
            v[i].key = shape == 0 ? r : shape == 1 ? r % 5 : (uint64_t)(n - i);
            v[i].place = i;
            memset(v[i].fill, (int)((v[i].key ^ i) & 0xff), sizeof v[i].fill);
        }
        WT_ASSERT_EQ(weft_parallel_sort(s, v, n, sizeof *v, cmp_big, NULL), WEFT_OK);
        memset(seen, 0, n);
        for (size_t i = 0; i < n; i++) {
            WT_ASSERT(i == 0 || v[i - 1].key <= v[i].key, "shape %d, element %zu out of order", shape, i);
            WT_ASSERT(v[i].place < n && !seen[v[i].place], "shape %d: not a permutation", shape);
            seen[v[i].place] = 1;
            unsigned char f = (unsigned char)((v[i].key ^ v[i].place) & 0xff);
            WT_ASSERT(v[i].fill[0] == f && v[i].fill[83] == f, "shape %d: element %zu torn", shape, i);
        }
    }
    free(seen);
    free(v);
}

WT_TEST(parallel_sort, elements_over_64_bytes, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_big, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

WT_TEST(parallel_sort, bad_input, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    uint64_t a[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
    WT_ASSERT_EQ(weft_parallel_sort(NULL, a, 8, 8, cmp_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_sort(s, a, 8, 0, cmp_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_sort(s, a, 8, 8, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_sort(s, NULL, 8, 8, cmp_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_sort(s, a, SIZE_MAX / 4, 8, cmp_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_sort_stable(s, a, 8, 8, a + 4, cmp_u64, NULL), WEFT_EINVAL);   /* scratch overlaps */
    WT_ASSERT_EQ(weft_parallel_sort_stable(s, a, 8, 8, NULL, NULL, NULL), WEFT_EINVAL);
    for (int i = 0; i < 8; i++)
        WT_ASSERT_EQ(a[i], (uint64_t)(8 - i));
    WT_ASSERT_EQ(weft_parallel_sort(s, NULL, 0, 8, cmp_u64, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_parallel_sort_stable(s, NULL, 0, 8, NULL, cmp_u64, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- a comparison that blocks ------------------------------------------------ */

/* The first comparisons wait for an event a task spawned before the sort
 * sets: the sort's thread (a worker's fiber, or the bound thread) runs
 * that task meanwhile, or another worker does. */
struct blocking {
    weft_event go;
    weft_waitgroup set;   /* set_go's last touch */
    atomic_int waited;
};

static int cmp_blocking(const void *a, const void *b, void *arg)
{
    struct blocking *bl = arg;
    if (atomic_load_explicit(&bl->waited, memory_order_relaxed) < 4) {
        WT_ASSERT_EQ(weft_event_wait(&bl->go), WEFT_OK);
        atomic_fetch_add(&bl->waited, 1);
    }
    return cmp_u64(a, b, NULL);
}

static void set_go(void *arg)
{
    struct blocking *bl = arg;
    weft_event_signal(&bl->go);
    weft_waitgroup_done(&bl->set);
}

static void check_blocking(weft_sched *s, void *ctx)
{
    (void)ctx;
    size_t n = 50000;
    uint64_t *u = malloc(n * 8), seed = 9;
    WT_ASSERT(u);
    for (int stable = 0; stable < 2; stable++) {
        for (size_t i = 0; i < n; i++)
            u[i] = rng_next(&seed) % 1000;
        struct blocking bl;
        weft_event_init(&bl.go, true, false);
        atomic_init(&bl.waited, 0);
        weft_waitgroup_init(&bl.set, 1);
        WT_ASSERT_EQ(weft_spawn(s, set_go, &bl), WEFT_OK);
        int rc = stable ? weft_parallel_sort_stable(s, u, n, 8, NULL, cmp_blocking, &bl)
                        : weft_parallel_sort(s, u, n, 8, cmp_blocking, &bl);
        WT_ASSERT_EQ(rc, WEFT_OK);
        WT_ASSERT(atomic_load(&bl.waited) >= 4);
        for (size_t i = 1; i < n; i++)
            WT_ASSERT(u[i - 1] <= u[i], "%s sort, element %zu", stable ? "stable" : "unstable", i);
        WT_ASSERT_EQ(weft_waitgroup_wait(&bl.set), WEFT_OK);   /* set_go is done with bl */
        weft_waitgroup_destroy(&bl.set);
        weft_event_destroy(&bl.go);
    }
    free(u);
}

WT_TEST(parallel_sort, comparison_that_blocks, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++) {
            if (w == 0 && k == CALL_PLAIN)
                continue;   /* nobody would run the task that sets the event */
            run_as(s, (enum caller)k, check_blocking, NULL);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

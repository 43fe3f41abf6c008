/* weft_parallel_transform, the scans and weft_parallel_find, written from
 * weft/parallel.h: results against sequential loops over seeded random
 * inputs (sizes 0, 1, block edges, 10^6), from a plain thread, a task and
 * a bound thread, at 0, 1, 2 and 8 workers; a floating-point scan
 * bitwise the same at every worker count and from every caller; an
 * operator that is associative but not commutative; in place; find's
 * first match among many, and its skipping of blocks after a match;
 * bodies that block on an event set by an earlier block; bad input
 * leaving the output untouched. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo_util.h"

/* ---- transform -------------------------------------------------------------- */

struct xf {
    size_t n, grain;
    uint32_t *in;
    uint64_t *out;
    double *d;            /* in place */
};

static void map_u32(void *out, const void *in, size_t first, size_t count, void *arg)
{
    (void)first;
    (void)arg;
    const uint32_t *x = in;
    uint64_t *y = out;
    for (size_t i = 0; i < count; i++)
        y[i] = (uint64_t)x[i] * 3 + 1;
}

static void map_index(void *out, const void *in, size_t first, size_t count, void *arg)
{
    (void)arg;
    WT_ASSERT(in == NULL);
    uint64_t *y = out;
    for (size_t i = 0; i < count; i++)
        y[i] = (first + i) * (first + i);
}

static void map_double(void *out, const void *in, size_t first, size_t count, void *arg)
{
    (void)first;
    (void)arg;
    const double *x = in;
    double *y = out;
    for (size_t i = 0; i < count; i++)
        y[i] = x[i] * 2 + 0.5;
}

static void check_transform(weft_sched *s, void *ctx)
{
    struct xf *t = ctx;
    size_t n = t->n;
    uint64_t seed = n * 7 + 1;
    for (size_t i = 0; i < n; i++) {
        t->in[i] = (uint32_t)rng_next(&seed);
        t->out[i] = 0xdead;
        t->d[i] = (double)(i % 1000) / 8;
    }
    WT_ASSERT_EQ(weft_parallel_transform(s, t->out, 8, t->in, 4, n, t->grain, map_u32, NULL), WEFT_OK);
    for (size_t i = 0; i < n; i++)
        WT_ASSERT(t->out[i] == (uint64_t)t->in[i] * 3 + 1, "element %zu of %zu", i, n);
    WT_ASSERT_EQ(weft_parallel_transform(s, t->out, 8, NULL, 0, n, t->grain, map_index, NULL), WEFT_OK);
    for (size_t i = 0; i < n; i++)
        WT_ASSERT(t->out[i] == (uint64_t)i * i, "index form, element %zu of %zu", i, n);
    WT_ASSERT_EQ(weft_parallel_transform(s, t->d, 8, t->d, 8, n, t->grain, map_double, NULL), WEFT_OK);
    for (size_t i = 0; i < n; i++)
        WT_ASSERT(t->d[i] == (double)(i % 1000) / 8 * 2 + 0.5, "in place, element %zu of %zu", i, n);
}

WT_TEST(parallel_algo, transform_matches_the_loop, .timeout = 600)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1];
    struct xf t = { .in = malloc(max * 4 + 4), .out = malloc(max * 8 + 8), .d = malloc(max * 8 + 8) };
    WT_ASSERT(t.in && t.out && t.d);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            for (size_t i = 0; i < ns; i++) {
                t.n = sizes[i];
                t.grain = i % 3 == 0 ? 7 : 0;
                run_as(s, (enum caller)k, check_transform, &t);
            }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(t.in);
    free(t.out);
    free(t.d);
}

WT_TEST(parallel_algo, transform_bad_input, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    uint64_t a[16];
    for (int i = 0; i < 16; i++)
        a[i] = (uint64_t)i;
    /* Overlapping but not the same: refused, nothing written. */
    WT_ASSERT_EQ(weft_parallel_transform(s, a + 1, 8, a, 8, 8, 0, map_double, NULL), WEFT_EINVAL);
    /* The same array with other element sizes. */
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, a, 4, 8, 0, map_u32, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_transform(NULL, a, 8, NULL, 0, 8, 0, map_index, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, NULL, 0, 8, 0, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 0, NULL, 0, 8, 0, map_index, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, NULL, 4, 8, 0, map_index, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, NULL, 0, SIZE_MAX / 4, 0, map_index, NULL), WEFT_EINVAL);
    for (int i = 0; i < 16; i++)
        WT_ASSERT_EQ(a[i], (uint64_t)i);
    WT_ASSERT_EQ(weft_parallel_transform(s, a, 8, NULL, 0, 0, 0, map_index, NULL), WEFT_OK);
    WT_ASSERT_EQ(a[0], 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- scans ------------------------------------------------------------------ */

static void add_u64(void *acc, const void *elem, void *arg)
{
    (void)arg;
    *(uint64_t *)acc += *(const uint64_t *)elem;
}

static void add_double(void *acc, const void *elem, void *arg)
{
    (void)arg;
    *(double *)acc += *(const double *)elem;
}

/* x -> a*x + b, composed left to right: associative, not commutative. */
struct affine {
    uint64_t a, b;
};

static void compose(void *acc, const void *elem, void *arg)
{
    (void)arg;
    struct affine *f = acc;
    const struct affine *g = elem;
    f->b = g->a * f->b + g->b;
    f->a = g->a * f->a;
}

struct sc {
    size_t n, grain;
    uint64_t *u, *uout;
    double *d, *dout;
    struct affine *f, *fout;
};

static void check_scans(weft_sched *s, void *ctx)
{
    struct sc *c = ctx;
    size_t n = c->n;
    uint64_t seed = n + 99;
    for (size_t i = 0; i < n; i++) {
        c->u[i] = rng_next(&seed) % 1000;
        c->f[i] = (struct affine){ rng_next(&seed) | 1, rng_next(&seed) };
    }
    const uint64_t zero = 5;   /* init need not be an identity */
    for (int excl = 0; excl < 2; excl++) {
        int (*scan)(weft_sched *, void *, const void *, size_t, size_t, size_t, const void *, weft_op_fn, void *) =
            excl ? weft_parallel_scan_exclusive : weft_parallel_scan_inclusive;
        WT_ASSERT_EQ(scan(s, c->uout, c->u, n, 8, c->grain, &zero, add_u64, NULL), WEFT_OK);
        uint64_t acc = zero;
        for (size_t i = 0; i < n; i++) {
            if (!excl)
                acc += c->u[i];
            WT_ASSERT(c->uout[i] == acc, "%s scan, element %zu of %zu", excl ? "exclusive" : "inclusive", i, n);
            if (excl)
                acc += c->u[i];
        }
        struct affine id = { 1, 0 }, fa = id;
        WT_ASSERT_EQ(scan(s, c->fout, c->f, n, sizeof(struct affine), c->grain, &id, compose, NULL), WEFT_OK);
        for (size_t i = 0; i < n; i++) {
            if (!excl)
                compose(&fa, &c->f[i], NULL);
            WT_ASSERT(c->fout[i].a == fa.a && c->fout[i].b == fa.b, "affine scan, element %zu of %zu", i, n);
            if (excl)
                compose(&fa, &c->f[i], NULL);
        }
        /* In place: the output overwrites the input it reads. */
        memcpy(c->uout, c->u, n * 8);
        WT_ASSERT_EQ(scan(s, c->uout, c->uout, n, 8, c->grain, &zero, add_u64, NULL), WEFT_OK);
        acc = zero;
        for (size_t i = 0; i < n; i++) {
            if (!excl)
                acc += c->u[i];
            WT_ASSERT(c->uout[i] == acc, "in place, element %zu of %zu", i, n);
            if (excl)
                acc += c->u[i];
        }
    }
}

WT_TEST(parallel_algo, scans_match_the_sequential_fold, .timeout = 600)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1] + 1;
    struct sc c = { .u = malloc(max * 8), .uout = malloc(max * 8),
                    .f = malloc(max * sizeof(struct affine)), .fout = malloc(max * sizeof(struct affine)) };
    WT_ASSERT(c.u && c.uout && c.f && c.fout);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            for (size_t i = 0; i < ns; i++) {
                c.n = sizes[i];
                c.grain = i % 4 == 1 ? 3 : 0;
                run_as(s, (enum caller)k, check_scans, &c);
            }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(c.u);
    free(c.uout);
    free(c.f);
    free(c.fout);
}

/* The range form: out[i] = the sum of x[0..i], and the whole sum. */
struct rscan {
    const double *x;
    double *out;
};

static void rscan_body(size_t b, size_t e, void *sum, bool final, void *arg)
{
    struct rscan *r = arg;
    double acc = *(double *)sum;
    for (size_t i = b; i < e; i++) {
        acc += r->x[i];
        if (final)
            r->out[i] = acc;
    }
    *(double *)sum = acc;
}

static void combine_double(void *into, const void *from, void *arg)
{
    (void)arg;
    *(double *)into += *(const double *)from;
}

struct dscan {
    size_t n;
    double *x, *out, *first, *first_excl, first_sum;
    double *range_out, range_sum;
    bool have_first;
    int runs;
};

static void check_double_scan(weft_sched *s, void *ctx)
{
    struct dscan *d = ctx;
    const double zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, d->out, d->x, d->n, 8, 0, &zero, add_double, NULL), WEFT_OK);
    struct rscan r = { .x = d->x, .out = d->range_out };
    double sum = -1;
    WT_ASSERT_EQ(weft_parallel_scan(s, 0, d->n, 0, &sum, sizeof sum, &zero, rscan_body, combine_double, &r),
                 WEFT_OK);
    if (!d->have_first) {
        memcpy(d->first, d->out, d->n * 8);
        d->first_sum = sum;
        d->have_first = true;
        /* Close to the sequential sum, though grouped otherwise. */
        double seq = 0;
        for (size_t i = 0; i < d->n; i++)
            seq += d->x[i];
        WT_ASSERT(fabs(sum - seq) <= 1e-9 * fabs(seq), "sum %.17g, sequential %.17g", sum, seq);
    }
    WT_ASSERT(memcmp(d->first, d->out, d->n * 8) == 0, "element scan differs from the first run (run %d)", d->runs);
    WT_ASSERT(memcmp(d->first, d->range_out, d->n * 8) == 0, "range scan differs from the element scan (run %d)", d->runs);
    WT_ASSERT(memcmp(&sum, &d->first_sum, sizeof sum) == 0, "total %.17g, first run %.17g", sum, d->first_sum);
    WT_ASSERT(memcmp(&sum, &d->out[d->n - 1], sizeof sum) == 0, "total is not the last output");
    d->runs++;
}

WT_TEST(parallel_algo, double_scan_is_bitwise_the_same_at_every_worker_count, .timeout = 600)
{
    struct dscan d = { .n = (size_t)wt_scaled(1000000, 100000) };
    d.x = malloc(d.n * 8);
    d.out = malloc(d.n * 8);
    d.first = malloc(d.n * 8);
    d.range_out = malloc(d.n * 8);
    WT_ASSERT(d.x && d.out && d.first && d.range_out);
    uint64_t seed = 3;
    for (size_t i = 0; i < d.n; i++)   /* magnitudes 1e-3..1e3, signs mixed: grouping shows */
        d.x[i] = ((double)(rng_next(&seed) >> 11) / 9007199254740992.0 - 0.3) * pow(10, (double)(i % 7) - 3);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_double_scan, &d);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    WT_ASSERT_EQ(d.runs, 12);
    free(d.x);
    free(d.out);
    free(d.first);
    free(d.range_out);
}

WT_TEST(parallel_algo, scan_bad_input_and_empty, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    uint64_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a + 1, a, 4, 8, 0, &zero, add_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a, 4, 0, 0, &zero, add_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_exclusive(s, a, a, 4, 8, 0, NULL, add_u64, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a, a, 4, 8, 0, &zero, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a, a, SIZE_MAX / 4, 8, 0, &zero, add_u64, NULL), WEFT_EINVAL);
    for (int i = 0; i < 8; i++)
        WT_ASSERT_EQ(a[i], (uint64_t)i + 1);
    WT_ASSERT_EQ(weft_parallel_scan_inclusive(s, a, a, 0, 8, 0, &zero, add_u64, NULL), WEFT_OK);
    WT_ASSERT_EQ(a[0], 1);
    double sum = -1, id = 0;
    WT_ASSERT_EQ(weft_parallel_scan(s, 4, 3, 0, &sum, 8, &id, rscan_body, combine_double, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan(s, 0, 3, 0, &sum, 0, &id, rscan_body, combine_double, NULL), WEFT_EINVAL);
    WT_ASSERT(sum == -1);
    WT_ASSERT_EQ(weft_parallel_scan(s, 3, 3, 0, &sum, 8, &id, rscan_body, combine_double, NULL), WEFT_OK);
    WT_ASSERT(sum == 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- find ------------------------------------------------------------------- */

struct fd {
    const uint8_t *v;
    size_t n, want, grain;
    atomic_size_t calls;
};

static size_t find_body(size_t b, size_t e, void *arg)
{
    struct fd *f = arg;
    atomic_fetch_add_explicit(&f->calls, 1, memory_order_relaxed);
    for (size_t i = b; i < e; i++)
        if (f->v[i])
            return i;
    return e;
}

static void check_find(weft_sched *s, void *ctx)
{
    struct fd *f = ctx;
    size_t got = 12345;
    atomic_store(&f->calls, 0);
    WT_ASSERT_EQ(weft_parallel_find(s, 0, f->n, f->grain, find_body, f, &got), WEFT_OK);
    WT_ASSERT(got == f->want, "found %zu, first match %zu (n %zu, grain %zu)", got, f->want, f->n, f->grain);
    /* Where the chunks run in order (one thread runs them all: no
     * workers, or one worker under a task) none after the match runs. */
    unsigned nw = weft_sched_workers(s);
    bool in_order = nw == 0 || (nw == 1 && weft_thread_worker_index() >= 0);
    if (in_order && f->grain && f->want < f->n)
        WT_ASSERT_EQ(atomic_load(&f->calls), f->want / f->grain + 1);
}

WT_TEST(parallel_algo, find_returns_the_first_of_many_matches, .timeout = 600)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1];
    uint8_t *v = malloc(max + 1);
    WT_ASSERT(v);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            for (size_t i = 0; i < ns; i++) {
                size_t n = sizes[i];
                /* No match; then matches from a point on (many: every
                 * later block has one too); then one match at the end. */
                size_t firsts[] = { n, n / 3, n / 2 + 1, n ? n - 1 : 0, 0 };
                for (size_t m = 0; m < sizeof firsts / sizeof firsts[0]; m++) {
                    if (firsts[m] > n || (firsts[m] == n && m > 0))
                        continue;
                    uint64_t seed = n + m;
                    for (size_t j = 0; j < n; j++)
                        v[j] = j >= firsts[m] && (m == 3 || j == firsts[m] || rng_next(&seed) % 4 == 0);
                    struct fd f = { .v = v, .n = n, .want = firsts[m], .grain = m % 2 ? 0 : 64 };
                    run_as(s, (enum caller)k, check_find, &f);
                }
            }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(v);
}

WT_TEST(parallel_algo, find_bad_input, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    size_t got = 7;
    WT_ASSERT_EQ(weft_parallel_find(s, 5, 4, 0, find_body, NULL, &got), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_find(s, 0, 4, 0, NULL, NULL, &got), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_find(s, 0, 4, 0, find_body, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(got, 7);
    WT_ASSERT_EQ(weft_parallel_find(s, 9, 9, 0, find_body, NULL, &got), WEFT_OK);
    WT_ASSERT_EQ(got, 9);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- blocking: block k waits for block k - 1 --------------------------------- */

#define CHAIN 48

struct chain {
    weft_event ev[CHAIN];
    uint64_t in[CHAIN], out[CHAIN];
};

static void chain_init(struct chain *c)
{
    for (int i = 0; i < CHAIN; i++) {
        weft_event_init(&c->ev[i], true, false);
        c->in[i] = (uint64_t)i + 1;
    }
}

static void chain_fini(struct chain *c)
{
    for (int i = 0; i < CHAIN; i++)
        weft_event_destroy(&c->ev[i]);
}

/* Waits for the previous element's event, then signals its own. */
static void chain_step(struct chain *c, size_t i)
{
    if (i > 0)
        WT_ASSERT_EQ(weft_event_wait(&c->ev[i - 1]), WEFT_OK);
    weft_event_signal(&c->ev[i]);
}

static void chain_map(void *out, const void *in, size_t first, size_t count, void *arg)
{
    for (size_t i = 0; i < count; i++) {
        chain_step(arg, first + i);
        ((uint64_t *)out)[i] = ((const uint64_t *)in)[i] * 2;
    }
}

static void chain_scan(size_t b, size_t e, void *sum, bool final, void *arg)
{
    struct chain *c = arg;
    for (size_t i = b; i < e; i++) {
        if (final)
            chain_step(c, i);   /* step 3: each block after the one before it */
        *(uint64_t *)sum += c->in[i];
        if (final)
            c->out[i] = *(uint64_t *)sum;
    }
}

static void combine_u64(void *into, const void *from, void *arg)
{
    (void)arg;
    *(uint64_t *)into += *(const uint64_t *)from;
}

static size_t chain_find(size_t b, size_t e, void *arg)
{
    for (size_t i = b; i < e; i++) {
        chain_step(arg, i);
        if (i == CHAIN - 1)
            return i;
    }
    return e;
}

static void check_chain(weft_sched *s, void *ctx)
{
    (void)ctx;
    struct chain c;
    chain_init(&c);
    WT_ASSERT_EQ(weft_parallel_transform(s, c.out, 8, c.in, 8, CHAIN, 1, chain_map, &c), WEFT_OK);
    for (int i = 0; i < CHAIN; i++)
        WT_ASSERT_EQ(c.out[i], c.in[i] * 2);
    chain_fini(&c);
    chain_init(&c);
    uint64_t sum = 0, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan(s, 0, CHAIN, 1, &sum, 8, &zero, chain_scan, combine_u64, &c), WEFT_OK);
    WT_ASSERT_EQ(sum, (uint64_t)CHAIN * (CHAIN + 1) / 2);
    for (int i = 0; i < CHAIN; i++)
        WT_ASSERT_EQ(c.out[i], (uint64_t)(i + 1) * (i + 2) / 2);
    chain_fini(&c);
    chain_init(&c);
    size_t got = 0;
    WT_ASSERT_EQ(weft_parallel_find(s, 0, CHAIN, 1, chain_find, &c, &got), WEFT_OK);
    WT_ASSERT_EQ(got, CHAIN - 1);
    chain_fini(&c);
}

WT_TEST(parallel_algo, blocks_waiting_on_earlier_blocks, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_chain, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- a scan block that finds its prefix late ---------------------------------- */

/* Two blocks of one iteration. Block 0's outputs wait for a task it
 * spawns: with one thread running everything (one worker under a task,
 * or a bound thread without workers) block 1, queued when block 0's
 * fiber blocks, runs first (the newest work runs first), finds no prefix
 * and is left for later; the task then lets block 0 put the prefix in
 * place. The last block must still be finished. */
struct late {
    weft_sched *s;
    weft_event go;
    weft_waitgroup set;
    uint64_t out[2];
};

static void late_go(void *arg)
{
    struct late *l = arg;
    weft_event_signal(&l->go);
    weft_waitgroup_done(&l->set);
}

static void late_body(size_t b, size_t e, void *sum, bool final, void *arg)
{
    struct late *l = arg;
    if (b == 0 && final) {
        WT_ASSERT_EQ(weft_spawn(l->s, late_go, l), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&l->go), WEFT_OK);
    }
    for (size_t i = b; i < e; i++) {
        *(uint64_t *)sum += i + 1;
        if (final)
            l->out[i] = *(uint64_t *)sum;
    }
}

static void check_late(weft_sched *s, void *ctx)
{
    (void)ctx;
    struct late l = { .s = s, .out = { 0, 0 } };
    weft_event_init(&l.go, true, false);
    weft_waitgroup_init(&l.set, 1);
    uint64_t sum = 0, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan(s, 0, 2, 1, &sum, 8, &zero, late_body, combine_u64, &l), WEFT_OK);
    WT_ASSERT_EQ(sum, 3);
    WT_ASSERT(l.out[0] == 1 && l.out[1] == 3, "outputs %llu %llu, want 1 3",
              (unsigned long long)l.out[0], (unsigned long long)l.out[1]);
    WT_ASSERT_EQ(weft_waitgroup_wait(&l.set), WEFT_OK);
    weft_waitgroup_destroy(&l.set);
    weft_event_destroy(&l.go);
}

WT_TEST(parallel_algo, scan_block_that_finds_its_prefix_late, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = CALL_TASK; k < CALL_KINDS; k++)   /* a plain thread without workers runs no task while a block waits */
            run_as(s, (enum caller)k, check_late, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

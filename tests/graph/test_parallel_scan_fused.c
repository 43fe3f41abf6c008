/* weft_parallel_scan_fused, written from weft/parallel.h: a
 * floating-point scan bitwise equal to a sequential reference built on
 * the header's block definition (prefix k op block k's fold so far,
 * prefix k + 1 = prefix k op sum k), at 0, 1, 2 and 8 workers, from a
 * plain thread, a task and a bound thread, at several sizes and grains;
 * an exact integer scan equal to the left fold, and an associative,
 * non-commutative one; each block written once and summed apart at
 * most once (never, where one thread runs the scan); bodies that block (writing calls on the block
 * before, folding calls on the block before's fold); a chain that
 * parks at a block being summed, forced with the test seam; a first
 * block that blocks while the next is summed; bad input. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "algo_util.h"

/* A test seam (src/parallel/algo.h): the chain has parked at block k. */
extern void (*weft__scan_park_seam)(size_t k);

/* ---- doubles: bitwise the block definition ---------------------------------- */

struct fd {
    size_t n, grain;
    const double *x;
    double *out, *want, want_sum;
    int calls_with_prefix;
};

static void fd_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct fd *d = arg;
    double acc = *(double *)sum;
    if (prefix) {
        double p = *(const double *)prefix;
        for (size_t i = b; i < e; i++) {
            acc += d->x[i];
            d->out[i] = p + acc;
        }
    } else {
        for (size_t i = b; i < e; i++)
            acc += d->x[i];
    }
    *(double *)sum = acc;
}

static void fd_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(double *)into += *(const double *)from;
}

/* The header's blocks: grain-sized (grain 0: n / 1024 rounded up), made
 * whole multiples of the grain when there would be more than 1024. */
static size_t block_step(size_t n, size_t grain)
{
    size_t step = grain ? grain : (n + 1023) / 1024;
    size_t nb = (n + step - 1) / step;
    if (nb > 1024)
        step *= (nb + 1023) / 1024;
    return step;
}

static void fd_reference(struct fd *d)
{
    size_t step = block_step(d->n, d->grain);
    double prefix = 0;
    for (size_t lo = 0; lo < d->n; lo += step) {
        size_t hi = d->n - lo > step ? lo + step : d->n;
        double acc = 0;
        for (size_t i = lo; i < hi; i++) {
            acc += d->x[i];
            d->want[i] = prefix + acc;
        }
        prefix += acc;
    }
    d->want_sum = prefix;
}

static void check_fd(weft_sched *s, void *ctx)
{
    struct fd *d = ctx;
    const double zero = 0;
    double sum = -1;
    memset(d->out, 0xff, d->n * 8);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, d->n, d->grain, &sum, sizeof sum, &zero, fd_body, fd_combine, d),
                 WEFT_OK);
    WT_ASSERT(memcmp(d->out, d->want, d->n * 8) == 0, "n %zu grain %zu: outputs differ from the block reference",
              d->n, d->grain);
    WT_ASSERT(memcmp(&sum, &d->want_sum, 8) == 0, "n %zu: total %.17g, want %.17g", d->n, sum, d->want_sum);
}

WT_TEST(parallel_scan_fused, doubles_are_bitwise_the_block_definition_at_every_worker_count, .timeout = 600)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1] + 1;
    double *x = malloc(max * 8), *out = malloc(max * 8), *want = malloc(max * 8);
    WT_ASSERT(x && out && want);
    uint64_t seed = 11;
    for (size_t i = 0; i < max; i++)   /* magnitudes 1e-3..1e3, signs mixed: a grouping shows */
        x[i] = ((double)(rng_next(&seed) >> 11) / 9007199254740992.0 - 0.3) * pow(10, (double)(i % 7) - 3);
    static const size_t grains[] = { 0, 1, 3, 1000 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (size_t i = 1; i < ns; i++)
            for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) {
                if (grains[g] == 1 && sizes[i] > 20000)
                    continue;   /* merged into 1024 blocks anyway: grain 3 covers it */
                struct fd d = { .n = sizes[i], .grain = grains[g], .x = x, .out = out, .want = want };
                fd_reference(&d);
                for (int k = 0; k < CALL_KINDS; k++)
                    run_as(s, (enum caller)k, check_fd, &d);
            }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(x);
    free(out);
    free(want);
}

static void combine_u64(void *into, const void *from, void *arg)
{
    (void)arg;
    *(uint64_t *)into += *(const uint64_t *)from;
}

/* ---- the work: each block written once, summed apart at most once ------------ */

/* Per block: calls with a prefix (each writes it) and without (a sum
 * alone). Whatever the threads do, a block is written exactly once and
 * summed apart at most once (the old two-pass scheme summed every block
 * but the last apart); where one thread runs the whole scan (no workers,
 * or one worker and a caller that does not take a share: a task or a
 * bound thread), no block is summed apart: every element is read once. */
#define WORK_BLOCKS 256

struct work {
    uint64_t *out;
    atomic_int writes[WORK_BLOCKS], sums[WORK_BLOCKS];
};

static void work_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct work *w = arg;
    atomic_fetch_add_explicit(prefix ? &w->writes[b / 64] : &w->sums[b / 64], 1, memory_order_relaxed);
    for (size_t i = b; i < e; i++) {
        *(uint64_t *)sum += i;
        if (prefix)
            w->out[i] = *(const uint64_t *)prefix + *(uint64_t *)sum;
    }
}

struct work_case {
    bool one_thread;
    uint64_t out[WORK_BLOCKS * 64];
};

static void check_work(weft_sched *s, void *ctx)
{
    struct work_case *wc = ctx;
    struct work w = { .out = wc->out };
    for (int k = 0; k < WORK_BLOCKS; k++) {
        atomic_init(&w.writes[k], 0);
        atomic_init(&w.sums[k], 0);
    }
    uint64_t sum = 0, zero = 0, n = WORK_BLOCKS * 64;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, n, 64, &sum, 8, &zero, work_body, combine_u64, &w), WEFT_OK);
    WT_ASSERT_EQ(sum, n * (n - 1) / 2);
    for (uint64_t i = 0; i < n; i++)
        WT_ASSERT(wc->out[i] == i * (i + 1) / 2, "output %llu", (unsigned long long)i);
    int apart = 0;
    for (int k = 0; k < WORK_BLOCKS; k++) {
        int wr = atomic_load_explicit(&w.writes[k], memory_order_relaxed);
        int sm = atomic_load_explicit(&w.sums[k], memory_order_relaxed);
        WT_ASSERT(wr == 1 && sm <= 1, "block %d: written %d times, summed apart %d times", k, wr, sm);
        apart += sm;
    }
    WT_ASSERT(!wc->one_thread || apart == 0, "one thread, yet %d blocks summed apart", apart);
}

WT_TEST(parallel_scan_fused, each_block_written_once_and_summed_apart_at_most_once, .timeout = 300)
{
    static struct work_case wc;
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++) {
            wc.one_thread = w == 0 || (w == 1 && k != CALL_PLAIN);
            for (int r = 0; r < 20; r++)
                run_as(s, (enum caller)k, check_work, &wc);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- exact: integers, and a non-commutative operator ------------------------ */

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

struct fx {
    size_t n, grain;
    const struct affine *f;
    struct affine *out;
};

static void fx_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct fx *x = arg;
    for (size_t i = b; i < e; i++) {
        compose(sum, &x->f[i], NULL);
        if (prefix) {
            x->out[i] = *(const struct affine *)prefix;
            compose(&x->out[i], sum, NULL);
        }
    }
}

static void check_fx(weft_sched *s, void *ctx)
{
    struct fx *x = ctx;
    struct affine id = { 1, 0 }, total = { 0, 0 }, fa = id;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, x->n, x->grain, &total, sizeof total, &id, fx_body, compose, x),
                 WEFT_OK);
    for (size_t i = 0; i < x->n; i++) {
        compose(&fa, &x->f[i], NULL);
        WT_ASSERT(x->out[i].a == fa.a && x->out[i].b == fa.b, "affine scan, element %zu of %zu", i, x->n);
    }
    WT_ASSERT(total.a == fa.a && total.b == fa.b, "affine total, n %zu", x->n);
}

WT_TEST(parallel_scan_fused, non_commutative_operator_matches_the_left_fold, .timeout = 600)
{
    size_t sizes[ALGO_MAX_SIZES], ns = algo_sizes(sizes), max = sizes[ns - 1] + 1;
    struct affine *f = malloc(max * sizeof *f), *out = malloc(max * sizeof *out);
    WT_ASSERT(f && out);
    uint64_t seed = 5;
    for (size_t i = 0; i < max; i++)
        f[i] = (struct affine){ rng_next(&seed) | 1, rng_next(&seed) };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (size_t i = 0; i < ns; i++) {
            struct fx x = { .n = sizes[i], .grain = i % 3 == 1 ? 3 : 0, .f = f, .out = out };
            for (int k = 0; k < CALL_KINDS; k++)
                run_as(s, (enum caller)k, check_fx, &x);
        }
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    free(f);
    free(out);
}

/* ---- blocking ----------------------------------------------------------------- */

#define CHAIN 48

/* Block i (grain 1) folds only after block i - 1 has folded, and
 * writes only after block i - 1 has written: both waits the reference
 * allows (a fold never waits for an earlier block's outputs). */
struct chain {
    weft_event folded[CHAIN], wrote[CHAIN];
    uint64_t out[CHAIN];
};

static void chain_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct chain *c = arg;
    for (size_t i = b; i < e; i++) {
        if (i > 0)
            WT_ASSERT_EQ(weft_event_wait(&c->folded[i - 1]), WEFT_OK);
        *(uint64_t *)sum += i + 1;
        weft_event_signal(&c->folded[i]);
        if (prefix) {
            if (i > 0)
                WT_ASSERT_EQ(weft_event_wait(&c->wrote[i - 1]), WEFT_OK);
            c->out[i] = *(const uint64_t *)prefix + *(uint64_t *)sum;
            weft_event_signal(&c->wrote[i]);
        }
    }
}

static void check_chain(weft_sched *s, void *ctx)
{
    (void)ctx;
    struct chain c;
    for (int i = 0; i < CHAIN; i++) {
        weft_event_init(&c.folded[i], true, false);
        weft_event_init(&c.wrote[i], true, false);
    }
    uint64_t sum = 0, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, CHAIN, 1, &sum, 8, &zero, chain_body, combine_u64, &c), WEFT_OK);
    WT_ASSERT_EQ(sum, (uint64_t)CHAIN * (CHAIN + 1) / 2);
    for (int i = 0; i < CHAIN; i++)
        WT_ASSERT_EQ(c.out[i], (uint64_t)(i + 1) * (i + 2) / 2);
    for (int i = 0; i < CHAIN; i++) {
        weft_event_destroy(&c.folded[i]);
        weft_event_destroy(&c.wrote[i]);
    }
}

WT_TEST(parallel_scan_fused, blocks_waiting_on_earlier_blocks, .timeout = 300)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = 0; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_chain, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- the chain parks at a block being summed ---------------------------------- */

/* Two blocks of one iteration. Block 0's writing call waits until block
 * 1's folding call has begun (so block 1 is being summed when the chain
 * reaches it); block 1's folding call then waits until the seam says
 * the chain has parked at block 1. Block 1's summer must take the chain
 * over and write block 1. Needs a second fiber or thread for block 1
 * while block 0 waits: not a plain thread without workers. */
struct park {
    weft_event started, parked;
    uint64_t out[2];
    int parks;
};

static struct park *park_now;

static void park_seam(size_t k)
{
    WT_ASSERT_EQ(k, 1);
    park_now->parks++;
    weft_event_signal(&park_now->parked);
}

static void park_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct park *p = arg;
    if (b == 0 && prefix)
        WT_ASSERT_EQ(weft_event_wait(&p->started), WEFT_OK);
    if (b == 1 && !prefix) {
        weft_event_signal(&p->started);
        WT_ASSERT_EQ(weft_event_wait(&p->parked), WEFT_OK);
    }
    for (size_t i = b; i < e; i++) {
        *(uint64_t *)sum += i + 1;
        if (prefix)
            p->out[i] = *(const uint64_t *)prefix + *(uint64_t *)sum;
    }
}

static void check_park(weft_sched *s, void *ctx)
{
    (void)ctx;
    struct park p = { .out = { 0, 0 } };
    weft_event_init(&p.started, true, false);
    weft_event_init(&p.parked, true, false);
    park_now = &p;
    weft__scan_park_seam = park_seam;
    uint64_t sum = 0, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 2, 1, &sum, 8, &zero, park_body, combine_u64, &p), WEFT_OK);
    weft__scan_park_seam = NULL;
    WT_ASSERT_EQ(sum, 3);
    WT_ASSERT_EQ(p.parks, 1);
    WT_ASSERT(p.out[0] == 1 && p.out[1] == 3, "outputs %llu %llu, want 1 3",
              (unsigned long long)p.out[0], (unsigned long long)p.out[1]);
    weft_event_destroy(&p.started);
    weft_event_destroy(&p.parked);
}

WT_TEST(parallel_scan_fused, chain_parks_at_a_block_being_summed, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = w == 0 ? CALL_TASK : CALL_PLAIN; k < CALL_KINDS; k++)
            run_as(s, (enum caller)k, check_park, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- a first block that blocks while the next is summed ----------------------- */

/* Block 0's writing call waits for a task it spawns: with one thread
 * running everything, block 1 is summed meanwhile, and the chain then
 * finds it summed: block 1 is written by the second loop. */
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

static void late_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    struct late *l = arg;
    if (b == 0 && prefix) {
        WT_ASSERT_EQ(weft_spawn(l->s, late_go, l), WEFT_OK);
        WT_ASSERT_EQ(weft_event_wait(&l->go), WEFT_OK);
    }
    for (size_t i = b; i < e; i++) {
        *(uint64_t *)sum += i + 1;
        if (prefix)
            l->out[i] = *(const uint64_t *)prefix + *(uint64_t *)sum;
    }
}

static void check_late(weft_sched *s, void *ctx)
{
    (void)ctx;
    struct late l = { .s = s, .out = { 0, 0 } };
    weft_event_init(&l.go, true, false);
    weft_waitgroup_init(&l.set, 1);
    uint64_t sum = 0, zero = 0;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 2, 1, &sum, 8, &zero, late_body, combine_u64, &l), WEFT_OK);
    WT_ASSERT_EQ(sum, 3);
    WT_ASSERT(l.out[0] == 1 && l.out[1] == 3, "outputs %llu %llu, want 1 3",
              (unsigned long long)l.out[0], (unsigned long long)l.out[1]);
    WT_ASSERT_EQ(weft_waitgroup_wait(&l.set), WEFT_OK);
    weft_waitgroup_destroy(&l.set);
    weft_event_destroy(&l.go);
}

WT_TEST(parallel_scan_fused, first_block_blocks_while_the_next_is_summed, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = make_sched(w);
        for (int k = CALL_TASK; k < CALL_KINDS; k++)   /* a plain thread without workers runs no task while a block waits */
            run_as(s, (enum caller)k, check_late, NULL);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- bad input ------------------------------------------------------------------ */

WT_TEST(parallel_scan_fused, bad_input_and_empty, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    double sum = 7, id = 0;
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 4, 3, 0, &sum, 8, &id, fd_body, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 3, 0, &sum, 0, &id, fd_body, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 3, 0, NULL, 8, &id, fd_body, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 3, 0, &sum, 8, NULL, fd_body, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 3, 0, &sum, 8, &id, NULL, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 0, 3, 0, &sum, 8, &id, fd_body, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_parallel_scan_fused(NULL, 0, 3, 0, &sum, 8, &id, fd_body, fd_combine, NULL), WEFT_EINVAL);
    WT_ASSERT(sum == 7, "sum changed by a refused call");
    WT_ASSERT_EQ(weft_parallel_scan_fused(s, 3, 3, 0, &sum, 8, &id, fd_body, fd_combine, NULL), WEFT_OK);
    WT_ASSERT(sum == 0, "empty range: sum %g, want the identity", sum);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

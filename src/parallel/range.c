/* This file is private to weft: the algorithms over a range that
 * parallel.c's loop runs block by block: weft_parallel_transform,
 * weft_parallel_find, and the scans (weft_parallel_scan,
 * weft_parallel_scan_inclusive and weft_parallel_scan_exclusive). Each
 * is one weft_parallel_for over the caller's range (two for a scan),
 * which gives it the loop's chunking, balance, callers (tasks, bound and
 * outside threads) and blocking rules unchanged.
 *
 * Transform hands the body runs of consecutive elements, its pointers
 * already offset, so that a body's inner loop is the caller's own
 * (vectorized where the caller's compiler can), one indirect call per
 * run rather than per element.
 *
 * Find: chunks run in no set order, so the first match is the smallest
 * index any chunk reports. `best` holds the smallest so far; a chunk that
 * starts at or after it is skipped without calling the body, so once a
 * match is known the work left beyond it is a load per chunk. Chunks that
 * began before the match finish (a body is never interrupted).
 *
 * A scan works on blocks of consecutive iterations fixed by the range
 * and the grain alone (never by the worker count). Each block has a sum
 * (its iterations folded from the identity, or from its first element)
 * and a prefix (block 0's: the identity, or init; block k + 1's: block
 * k's prefix folded with block k's sum), and writes its outputs folding
 * its iterations onto its prefix. The prefixes are thus a left-to-right
 * fold of whole blocks, whoever computes them, so the result is the same
 * at every worker count and on every run, floating point included
 * (though not the sequential left fold's, whose grouping differs).
 *   1. First pass, parallel_for over the blocks: a block folds its sum;
 *      if its prefix is in place it writes its outputs at once (its input
 *      still in the cache) and puts the next block's prefix in place. A
 *      thread that walks blocks in order (the only one, or the one that
 *      has block 0) thus reads its input once.
 *   2. The caller puts in place, in order, the prefixes the first pass
 *      did not reach (every sum is known by then).
 *   3. Second pass, over the blocks whose outputs are not written yet,
 *      listed in order by the caller in step 2 and run as a loop of
 *      their own: a loop over every block would leave the done ones'
 *      chunks empty, and a thread holding those (an outside caller's
 *      share is the loop's front, the blocks it wrote in the first pass)
 *      idle while another writes the rest alone.
 * The input is read twice only where blocks ran ahead of their prefix.
 *
 * A block never waits for another, so blocks may block on one another in
 * any order parallel_for allows (a later block on an earlier one always).
 * Only the first pass's loop may fail, and it runs every chunk or none:
 * then nothing is written. The second may not (outputs are being
 * written): without a loop its blocks run on the caller (weft__run_all).
 *
 * Synchronization
 *   best   find's smallest match so far (end: none). Lowered by CAS from
 *          the chunk that found a match; read by every chunk before it
 *          starts. Relaxed: it holds an index and orders nothing (a skip
 *          on a stale value costs a body call, never a wrong answer, since
 *          the minimum wins whatever the order); the caller reads it after
 *          parallel_for returns, whose wait carries every chunk's writes.
 *   ready  a scan block's: its prefix is in place. Stored (release) by
 *          the first pass of the block before it, after writing the
 *          prefix; loaded (acquire) once by the block's own first pass,
 *          which writes its outputs only if it sees it. A store after
 *          that load leaves the block to the second pass, never to both.
 *   slots  a block's sum, written by its first pass; its prefix, by the
 *          block before it or by the caller in step 2; its running sum,
 *          by whoever writes its outputs; done, by the same; left, by
 *          the caller in step 2. The caller
 *          reads them after the first loop's wait, which carries every
 *          chunk's writes, and the second loop's queueing publishes what
 *          the caller wrote.
 *   out    each element (of a transform or a scan) written by the one
 *          chunk that holds its index.
 */
#include <stdatomic.h>

#include "algo.h"

/* ---- transform ------------------------------------------------------------ */

struct xform {
    unsigned char *out;
    const unsigned char *in;
    size_t out_size, in_size;
    weft_map_fn fn;
    void *arg;
};

static void xform_chunk(size_t b, size_t e, void *p)
{
    struct xform *x = p;
    x->fn(x->out + b * x->out_size, x->in ? x->in + b * x->in_size : NULL, b, e - b, x->arg);
}

int weft_parallel_transform(weft_sched *s, void *out, size_t out_size, const void *in,
                            size_t in_size, size_t count, size_t grain,
                            weft_map_fn fn, void *arg)
{
    if (!s || !out || !fn || out_size == 0 || (in && in_size == 0) || (!in && in_size != 0))
        return WEFT_EINVAL;
    if (count > SIZE_MAX / out_size || (in && count > SIZE_MAX / in_size))
        return WEFT_EINVAL;
    /* In place is one element onto itself; any other overlap would have
     * a chunk read what another already wrote. */
    if (in && (in == out ? in_size != out_size
                         : weft__overlap(in, count * in_size, out, count * out_size)))
        return WEFT_EINVAL;
    struct xform x = { .out = out, .in = in, .out_size = out_size, .in_size = in_size,
                       .fn = fn, .arg = arg };
    return weft_parallel_for(s, 0, count, grain, xform_chunk, &x);
}

/* ---- find ------------------------------------------------------------------- */

struct find {
    weft_find_fn fn;
    void *arg;
    atomic_size_t best;   /* the smallest match so far; the range's end: none */
};

static void find_chunk(size_t b, size_t e, void *p)
{
    struct find *f = p;
    size_t best = atomic_load_explicit(&f->best, memory_order_relaxed);   /* relaxed: an index only (see the block above) */
    if (b >= best)
        return;   /* a match before this chunk is known: its answer cannot win */
    size_t i = f->fn(b, e, f->arg);
    if (i >= e || i < b)
        return;   /* no match here (an answer out of the chunk counts as none) */
    while (i < best && !atomic_compare_exchange_weak_explicit(&f->best, &best, i,
                                                              memory_order_relaxed, memory_order_relaxed))
        ;   /* relaxed: the minimum wins in any order; parallel_for's wait publishes it */
}

int weft_parallel_find(weft_sched *s, size_t begin, size_t end, size_t grain,
                       weft_find_fn fn, void *arg, size_t *index)
{
    if (!s || !fn || !index || begin > end)
        return WEFT_EINVAL;
    struct find f = { .fn = fn, .arg = arg };
    atomic_init(&f.best, end);
    int rc = weft_parallel_for(s, begin, end, grain, find_chunk, &f);
    if (rc == WEFT_OK)
        *index = atomic_load_explicit(&f.best, memory_order_relaxed);   /* relaxed: the loop's wait ordered every chunk's store before this */
    return rc;
}

/* ---- scans ------------------------------------------------------------------ */

/* The head of a block's slot; its values follow at WEFT_CACHELINE. */
struct slot_head {
    atomic_int ready;            /* the block's prefix is in place (step 2 done for it) */
    bool done;                   /* the block's outputs are written */
    size_t left;                 /* step 3's chunk k writes the outputs of block slot k's left */
};

struct scan {
    size_t begin, end, step, nblocks;
    unsigned char *slots;
    size_t size, value, stride;  /* bytes of a sum; of a value in a slot, and of a slot */
    const void *first;           /* the prefix of block 0: identity, or init */
    void (*fold)(void *, const void *, void *);   /* combine, or op */
    /* the range form */
    weft_scan_fn body;
    const void *identity;
    /* the element forms */
    unsigned char *out;
    const unsigned char *in;
    weft_op_fn op;
    bool exclusive;
    void *arg;
};

/* Block k's slot: its head, then four values: its sum (from the identity,
 * or from its first element), its prefix, the running sum of its final
 * pass, and an element kept aside by an exclusive scan in place. */
static struct slot_head *head(const struct scan *c, size_t k)
{
    return (struct slot_head *)(void *)(c->slots + k * c->stride);
}

static unsigned char *val(const struct scan *c, size_t k, unsigned v)
{
    return c->slots + k * c->stride + WEFT_CACHELINE + v * c->value;
}

enum { SUM, PREFIX, RUN, ASIDE };

static size_t block_end(const struct scan *c, size_t lo)
{
    return c->end - lo > c->step ? lo + c->step : c->end;
}

/* Folds block k into its sum: from the identity (range form) or from its
 * first element (an element scan has no identity, only init). */
static void block_sum(const struct scan *c, size_t k)
{
    unsigned char *acc = val(c, k, SUM);
    size_t lo = c->begin + k * c->step, hi = block_end(c, lo);
    if (c->body) {
        memcpy(acc, c->identity, c->size);
        c->body(lo, hi, acc, false, c->arg);
        return;
    }
    size_t sz = c->size;
    weft__elem_copy(acc, c->in + lo * sz, sz);
    for (size_t i = lo + 1; i < hi; i++)
        c->op(acc, c->in + i * sz, c->arg);
}

/* Writes block k's outputs from its prefix. An exclusive scan in place
 * keeps in[i] aside before out[i], the same element, is written. */
static void block_final(const struct scan *c, size_t k)
{
    unsigned char *acc = val(c, k, RUN), *tmp = val(c, k, ASIDE);
    size_t lo = c->begin + k * c->step, hi = block_end(c, lo), sz = c->size;
    memcpy(acc, val(c, k, PREFIX), sz);
    if (c->body) {
        c->body(lo, hi, acc, true, c->arg);
        return;
    }
    const unsigned char *in = c->in + lo * sz;
    unsigned char *out = c->out + lo * sz;
    if (!c->exclusive) {
        for (size_t i = lo; i < hi; i++, in += sz, out += sz) {
            c->op(acc, in, c->arg);
            weft__elem_copy(out, acc, sz);
        }
    } else if (c->in != c->out) {
        for (size_t i = lo; i < hi; i++, in += sz, out += sz) {
            weft__elem_copy(out, acc, sz);
            c->op(acc, in, c->arg);
        }
    } else {
        for (size_t i = lo; i < hi; i++, in += sz, out += sz) {
            weft__elem_copy(tmp, in, sz);
            weft__elem_copy(out, acc, sz);
            c->op(acc, tmp, c->arg);
        }
    }
}

/* Step 2 for block k + 1: its prefix is block k's prefix folded with
 * block k's sum. */
static void next_prefix(const struct scan *c, size_t k)
{
    unsigned char *p = val(c, k + 1, PREFIX);
    memcpy(p, val(c, k, PREFIX), c->size);
    c->fold(p, val(c, k, SUM), c->arg);
}

/* Steps 1 and, where it can, 3 for blocks [b, e): each block folds its
 * sum (the last needs none); if its prefix is in place it writes its
 * outputs at once, while its input is still in the cache, and puts the
 * next block's prefix in place. */
static void first_pass(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    for (size_t k = b; k < e; k++) {
        if (k + 1 < c->nblocks)
            block_sum(c, k);
        if (k > 0 && !atomic_load_explicit(&head(c, k)->ready, memory_order_acquire))   /* acquire: pairs with the release below, from block k - 1 */
            continue;   /* left to the second pass */
        block_final(c, k);
        head(c, k)->done = true;
        if (k + 1 < c->nblocks) {
            next_prefix(c, k);
            atomic_store_explicit(&head(c, k + 1)->ready, 1, memory_order_release);   /* release: publishes the prefix */
        }
    }
}

/* Step 3 for chunks [b, e): the blocks the first pass left, numbered
 * in order (a chunk per left block, so that they split evenly between
 * the threads however the first pass left them). */
static void second_pass(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    for (size_t k = b; k < e; k++)
        block_final(c, head(c, k)->left);
}

/* Fixes c's blocks from the length and the grain (weft__scan_plan). */
static void plan(struct scan *c, size_t n, size_t grain)
{
    c->nblocks = weft__scan_plan(n, grain, &c->step);
}

/* Runs the scan, slots from the caller's frame or s's scratch; sum (if
 * not NULL) receives the whole fold. Fails only before the first pass
 * has written anything (its loop runs every chunk or none). */
static int scan_run(weft_sched *s, struct scan *c, void *sum)
{
    c->value = (c->size + 15) & ~(size_t)15;   /* each value aligned as malloc's */
    if (c->value < c->size || c->value > (SIZE_MAX - WEFT_CACHELINE) / 8)
        return WEFT_ENOMEM;
    c->stride = (WEFT_CACHELINE + 4 * c->value + WEFT_CACHELINE - 1) & ~(size_t)(WEFT_CACHELINE - 1);
    if (c->nblocks > SIZE_MAX / c->stride)
        return WEFT_ENOMEM;
    size_t bytes = c->nblocks * c->stride, cap = 0;
    _Alignas(WEFT_CACHELINE) unsigned char local[WEFT__ALGO_STACK];
    c->slots = local;
    if (bytes > sizeof local && !(c->slots = weft__scratch_get(s, bytes, &cap)))
        return WEFT_ENOMEM;
    for (size_t k = 0; k < c->nblocks; k++) {
        atomic_init(&head(c, k)->ready, 0);
        head(c, k)->done = false;
    }
    memcpy(val(c, 0, PREFIX), c->first, c->size);
    int rc = weft_parallel_for(s, 0, c->nblocks, 1, first_pass, c);
    if (rc == WEFT_OK) {
        /* Every block's sum is in place now (the loop's wait carries
         * them): the prefixes the first pass did not reach, in order. */
        size_t left = 0;
        for (size_t k = 0; k < c->nblocks; k++) {
            /* A block may have missed a prefix put in place after it
             * looked: it is left too, its prefix already there. The
             * left ones are listed in order, the j-th in slot j (j <= k:
             * that slot's own fields were read already). */
            if (!head(c, k)->done)
                head(c, left++)->left = k;
            if (k + 1 < c->nblocks && !atomic_load_explicit(&head(c, k + 1)->ready, memory_order_relaxed))   /* relaxed: the loop's wait ordered every store */
                next_prefix(c, k);
        }
        weft__run_all(s, left, second_pass, c);   /* outputs are being written: may not fail */
        if (sum)   /* the last block's running sum: the last output's value */
            memmove(sum, val(c, c->nblocks - 1, RUN), c->size);
    }
    if (c->slots != local)
        weft__scratch_put(s, c->slots, cap);
    return rc;
}

int weft_parallel_scan(weft_sched *s, size_t begin, size_t end, size_t grain,
                       void *sum, size_t sum_size, const void *identity,
                       weft_scan_fn body, weft_combine_fn combine, void *arg)
{
    if (!s || !sum || sum_size == 0 || !identity || !body || !combine || begin > end)
        return WEFT_EINVAL;
    if (begin == end) {
        memmove(sum, identity, sum_size);
        return WEFT_OK;
    }
    struct scan c = { .begin = begin, .end = end, .size = sum_size, .first = identity, .fold = combine,
                      .body = body, .identity = identity, .arg = arg };
    plan(&c, end - begin, grain);
    return scan_run(s, &c, sum);
}

static int elem_scan(weft_sched *s, void *out, const void *in, size_t count, size_t size,
                     size_t grain, const void *init, weft_op_fn op, void *arg, bool exclusive)
{
    if (!s || !out || !in || size == 0 || !init || !op || count > SIZE_MAX / size)
        return WEFT_EINVAL;
    if (in != out && weft__overlap(in, count * size, out, count * size))
        return WEFT_EINVAL;
    if (count == 0)
        return WEFT_OK;
    struct scan c = { .begin = 0, .end = count, .size = size, .first = init, .fold = op,
                      .out = out, .in = in, .op = op, .exclusive = exclusive, .arg = arg };
    plan(&c, count, grain);
    return scan_run(s, &c, NULL);
}

int weft_parallel_scan_inclusive(weft_sched *s, void *out, const void *in, size_t count,
                                 size_t size, size_t grain, const void *init,
                                 weft_op_fn op, void *arg)
{
    return elem_scan(s, out, in, count, size, grain, init, op, arg, false);
}

int weft_parallel_scan_exclusive(weft_sched *s, void *out, const void *in, size_t count,
                                 size_t size, size_t grain, const void *init,
                                 weft_op_fn op, void *arg)
{
    return elem_scan(s, out, in, count, size, grain, init, op, arg, true);
}

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
 * A scan is done in three steps over blocks of consecutive iterations
 * fixed by the range and the grain alone (never by the worker count):
 *   1. every block but the last folds its iterations into a sum of its
 *      own, in parallel (parallel_for over the blocks, one block a chunk);
 *   2. the caller folds the block sums in order, leaving in each block's
 *      slot the fold of everything before the block (its prefix);
 *   3. every block runs again from its prefix, writing its outputs, in
 *      parallel; the last block's running sum ends as the whole fold,
 *      the same value as the last output.
 * Each output is the prefix of its block, itself a left-to-right fold of
 * whole blocks, folded with the block's elements in order; since the
 * blocks do not depend on who runs them, the result is the same at every
 * worker count and on every run, floating point included (though not
 * the sequential left fold's, whose grouping differs). The input is read
 * twice and the output written once, as any scan that runs in parallel.
 *
 * A block never waits for another inside a step, so blocks may block
 * on one another in any order parallel_for allows (a later block on an
 * earlier one always). Step 1 writes only the slots: if its loop fails
 * nothing the caller sees has changed. Step 3's loop cannot be refused
 * halfway (parallel_for runs every chunk or none): if it is refused the
 * call fails with the outputs untouched.
 *
 * Synchronization
 *   best   find's smallest match so far (end: none). Lowered by CAS from
 *          the chunk that found a match; read by every chunk before it
 *          starts. Relaxed: it holds an index and orders nothing (a skip
 *          on a stale value costs a body call, never a wrong answer, since
 *          the minimum wins whatever the order); the caller reads it after
 *          parallel_for returns, whose wait carries every chunk's writes.
 *   slots  a scan's: slot k is written by block k in step 1 and read by
 *          the caller in step 2 after the loop's wait (which carries the
 *          chunk's writes); the caller writes the prefixes before step 3's
 *          loop, whose queueing of each chunk publishes them; block k then
 *          uses slot k alone as its running sum.
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

/* Blocks a scan aims for when the grain is 0, and at most. */
#define WEFT__SCAN_BLOCKS 1024

struct scan {
    size_t begin, end, step, nblocks;
    unsigned char *slots;
    size_t size, stride;         /* bytes of a sum, and of a block's slot */
    /* the range form */
    weft_scan_fn body;
    weft_combine_fn combine;
    const void *identity;
    /* the element forms */
    unsigned char *out;
    const unsigned char *in;
    weft_op_fn op;
    bool exclusive;
    void *arg;
};

static size_t block_end(const struct scan *c, size_t lo)
{
    return c->end - lo > c->step ? lo + c->step : c->end;
}

/* Step 1 for blocks [b, e) of the range form: each from the identity. */
static void range_sums(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    for (size_t k = b; k < e; k++) {
        unsigned char *slot = c->slots + k * c->stride;
        size_t lo = c->begin + k * c->step;
        memcpy(slot, c->identity, c->size);
        c->body(lo, block_end(c, lo), slot, false, c->arg);
    }
}

/* Step 3 for blocks [b, e) of the range form: each from its prefix. */
static void range_final(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    for (size_t k = b; k < e; k++) {
        size_t lo = c->begin + k * c->step;
        c->body(lo, block_end(c, lo), c->slots + k * c->stride, true, c->arg);
    }
}

/* Step 1 for blocks [b, e) of an element scan: each from its first
 * element (an element scan has no identity, only init). */
static void elem_sums(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    size_t sz = c->size;
    for (size_t k = b; k < e; k++) {
        unsigned char *acc = c->slots + k * c->stride;
        size_t lo = k * c->step, hi = block_end(c, lo);
        weft__elem_copy(acc, c->in + lo * sz, sz);
        for (size_t i = lo + 1; i < hi; i++)
            c->op(acc, c->in + i * sz, c->arg);
    }
}

/* Step 3 for blocks [b, e) of an element scan. An exclusive scan in
 * place keeps in[i] aside before out[i], the same element, is written. */
static void elem_final(size_t b, size_t e, void *p)
{
    struct scan *c = p;
    size_t sz = c->size;
    for (size_t k = b; k < e; k++) {
        unsigned char *acc = c->slots + k * c->stride, *tmp = acc + sz;
        size_t lo = k * c->step, hi = block_end(c, lo);
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
}

/* Step 2: turns each block's sum into its prefix, starting from first,
 * with the slots nblocks and nblocks + 1 as the running sum and a spare.
 * The last block has no sum (step 1 skips it: nothing comes after it).
 * fold is combine or the element operator (both fold their second
 * argument into their first). */
static void prefixes(struct scan *c, const void *first, void (*fold)(void *, const void *, void *))
{
    unsigned char *run = c->slots + c->nblocks * c->stride;
    unsigned char *tmp = run + c->stride;
    memcpy(run, first, c->size);
    for (size_t k = 0; k + 1 < c->nblocks; k++) {
        unsigned char *slot = c->slots + k * c->stride;
        memcpy(tmp, slot, c->size);
        memcpy(slot, run, c->size);
        fold(run, tmp, c->arg);
    }
    memcpy(c->slots + (c->nblocks - 1) * c->stride, run, c->size);
}

/* Fixes c's blocks from the length and the grain: grain-sized blocks,
 * made whole multiples of the grain when there would be more than
 * WEFT__SCAN_BLOCKS of them. */
static void plan(struct scan *c, size_t n, size_t grain)
{
    size_t step = grain ? grain : weft__div_up(n, WEFT__SCAN_BLOCKS);
    size_t nb = weft__div_up(n, step);
    if (nb > WEFT__SCAN_BLOCKS)
        step *= weft__div_up(nb, WEFT__SCAN_BLOCKS);   /* no overflow: nb > 1, so step < n */
    c->step = step;
    c->nblocks = weft__div_up(n, step);
}

/* Runs the three steps, slots from the caller's frame or s's scratch;
 * first is step 2's starting value; sum (if not NULL) receives the whole
 * fold. */
static int scan_run(weft_sched *s, struct scan *c, size_t slot_bytes, const void *first,
                    void (*fold)(void *, const void *, void *), weft_range_fn sums,
                    weft_range_fn final, void *sum)
{
    c->stride = (slot_bytes + WEFT_CACHELINE - 1) & ~(size_t)(WEFT_CACHELINE - 1);
    if (c->stride < slot_bytes || c->nblocks + 2 > SIZE_MAX / c->stride)
        return WEFT_ENOMEM;
    size_t bytes = (c->nblocks + 2) * c->stride, cap = 0;
    _Alignas(WEFT_CACHELINE) unsigned char local[WEFT__ALGO_STACK];
    c->slots = local;
    if (bytes > sizeof local && !(c->slots = weft__scratch_get(s, bytes, &cap)))
        return WEFT_ENOMEM;
    int rc = c->nblocks > 1 ? weft_parallel_for(s, 0, c->nblocks - 1, 1, sums, c) : WEFT_OK;
    if (rc == WEFT_OK) {
        prefixes(c, first, fold);
        rc = weft_parallel_for(s, 0, c->nblocks, 1, final, c);
    }
    if (rc == WEFT_OK && sum)   /* the last block's running sum: the last output's value */
        memmove(sum, c->slots + (c->nblocks - 1) * c->stride, c->size);
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
    struct scan c = { .begin = begin, .end = end, .size = sum_size, .body = body,
                      .combine = combine, .identity = identity, .arg = arg };
    plan(&c, end - begin, grain);
    return scan_run(s, &c, sum_size, identity, combine, range_sums, range_final, sum);
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
    if (size > SIZE_MAX / 2)
        return WEFT_ENOMEM;
    struct scan c = { .begin = 0, .end = count, .size = size, .out = out, .in = in,
                      .op = op, .exclusive = exclusive, .arg = arg };
    plan(&c, count, grain);
    /* A slot holds the running sum and, for an exclusive scan in place,
     * the element kept aside. */
    return scan_run(s, &c, 2 * size, init, op, elem_sums, elem_final, NULL);
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

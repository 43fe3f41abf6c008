/* This file is private to weft: weft_parallel_transform and
 * weft_parallel_find, the two element-wise algorithms, each one
 * weft_parallel_for over the caller's range (parallel.c), which gives
 * them its chunking, its balance, its callers (tasks, bound and outside
 * threads) and its blocking rules unchanged.
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
 * Synchronization
 *   best   find's smallest match so far (end: none). Lowered by CAS from
 *          the chunk that found a match; read by every chunk before it
 *          starts. Relaxed: it holds an index and orders nothing (a skip
 *          on a stale value costs a body call, never a wrong answer, since
 *          the minimum wins whatever the order); the caller reads it after
 *          parallel_for returns, whose wait carries every chunk's writes.
 *   out    each element written by the one chunk that holds its index.
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

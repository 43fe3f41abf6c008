/*
 * weft/parallel.h: Parallel loops and algorithms: for, reduce, transform,
 * scan, sort and find over an index range or an array.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_PARALLEL_H
#define WEFT_PUBLIC_PARALLEL_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * weft_parallel_for and weft_parallel_reduce cut an index range
 * [begin, end) into chunks of `grain` iterations and run them on whichever
 * worker is free, returning once every chunk has run. Uneven loops
 * balance; bodies may spawn, block and nest loops. A reduce gives the same
 * result on every run and at every worker count. The algorithms below
 * them (transform, scan, sort, find) are built on the same loop and
 * share its rules; a scan, like a reduce, gives the same result at every
 * worker count.
 *
 * See docs/reference/parallel.md for chunking and the automatic grain,
 * balance, which chunks may wait for which, how a task, a bound thread
 * and an outside thread wait, reduce's grouping and determinism, and its
 * scratch memory. */

/** A parallel_for body: runs iterations [begin, end) of one chunk. */
typedef void (*weft_range_fn)(size_t begin, size_t end, void *arg);
/** A parallel_reduce body: folds iterations [begin, end) into partial. */
typedef void (*weft_reduce_fn)(size_t begin, size_t end, void *partial, void *arg);
/** A parallel_reduce combiner: folds from into into (associative). */
typedef void (*weft_combine_fn)(void *into, const void *from, void *arg);

/** Calls body(b, e, arg) once per chunk of [begin, end), e - b <= grain
 * (grain 0: about 64 chunks per worker), and returns once all have run.
 * Returns WEFT_OK (begin == end: no call), WEFT_EINVAL (s or body NULL,
 * begin > end), WEFT_ENOMEM (no task to be had: no chunk ran), or
 * WEFT_ESHUTDOWN (from outside s, not a task or bound thread of it,
 * while s is being destroyed).
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_for(weft_sched *s, size_t begin, size_t end, size_t grain,
                               weft_range_fn body, void *arg);

/** Reduces [begin, end) into result (result_size bytes): body folds each
 * chunk into a partial that starts as a copy of identity, combine folds
 * the partials in order (grain 0: about 1024 chunks). begin == end copies
 * identity to result. Returns WEFT_OK, or WEFT_EINVAL (a pointer NULL,
 * result_size 0, begin > end), WEFT_ENOMEM (no memory for the partials
 * or the loop's tasks), WEFT_ESHUTDOWN (as parallel_for); result is
 * untouched on failure.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_reduce(weft_sched *s, size_t begin, size_t end, size_t grain,
                                  void *result, size_t result_size, const void *identity,
                                  weft_reduce_fn body, weft_combine_fn combine, void *arg);

/* ---- algorithms (docs/reference/parallel.md, "Algorithms") ---------------- */

/** A transform body: maps count elements, in (NULL for the index form:
 * elements first, first + 1, ...) to out, both already offset to the
 * run's first element. */
typedef void (*weft_map_fn)(void *out, const void *in, size_t first, size_t count, void *arg);

/** Maps count elements of in (in_size bytes each) to out (out_size
 * bytes each), calling fn on runs of at most grain elements (grain 0:
 * about 64 runs per worker); in NULL (in_size 0) is the index form, fn
 * then computes each element from its index. out may be in itself
 * (same sizes), not overlap it otherwise. Returns WEFT_OK (count 0: no
 * call), WEFT_EINVAL (s, out or fn NULL, out_size 0, in and out
 * overlapping otherwise, a size overflowing), WEFT_ENOMEM or
 * WEFT_ESHUTDOWN (as parallel_for: no element was mapped).
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_transform(weft_sched *s, void *out, size_t out_size, const void *in,
                                     size_t in_size, size_t count, size_t grain,
                                     weft_map_fn fn, void *arg);

/** A scan body: folds iterations [begin, end) into sum, in order; when
 * final is true sum starts as the fold of everything before begin and
 * the body writes each iteration's output as it goes. */
typedef void (*weft_scan_fn)(size_t begin, size_t end, void *sum, bool final, void *arg);
/** An element scan's operator: *acc = *acc (op) *elem (associative). */
typedef void (*weft_op_fn)(void *acc, const void *elem, void *arg);

/** Scans [begin, end) in blocks fixed by the range and the grain alone
 * (grain 0: about 1024 blocks): body folds each block but the last from
 * identity (final false), combine folds those sums in order into each
 * block's prefix, and body runs each block from its prefix (final true).
 * sum (sum_size bytes) receives the fold of the whole range (the last
 * output's value); begin == end copies identity to it. The same result at every worker count, floating point
 * included. Returns WEFT_OK, WEFT_EINVAL (a pointer NULL, sum_size 0,
 * begin > end), WEFT_ENOMEM (no memory for the block sums: no body
 * ran), WEFT_ESHUTDOWN (as parallel_for: no body ran).
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_scan(weft_sched *s, size_t begin, size_t end, size_t grain,
                                void *sum, size_t sum_size, const void *identity,
                                weft_scan_fn body, weft_combine_fn combine, void *arg);

/** A fused scan body: folds iterations [begin, end) into sum, which
 * starts as the identity; when prefix is not NULL (the fold of the blocks
 * before begin) it also writes each iteration's output, prefix folded
 * with the fold so far. sum must come out the same with and without a
 * prefix. */
typedef void (*weft_scan_block_fn)(size_t begin, size_t end, void *sum, const void *prefix,
                                   void *arg);

/** Scans [begin, end) as weft_parallel_scan does, in the same fixed
 * blocks, but body folds each block from identity whether or not it
 * writes, and gets its prefix apart, so that a block whose prefix is
 * known when it starts is read once: at one thread every block is.
 * Output i of block k is prefix_k op (block k's fold up to i), where
 * prefix_0 is identity and prefix_k+1 = prefix_k op sum_k: the same at
 * every worker count, floating point included. sum receives the fold
 * of every block's sum; begin == end copies identity to it. Returns as
 * weft_parallel_scan.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_scan_fused(weft_sched *s, size_t begin, size_t end, size_t grain,
                                      void *sum, size_t sum_size, const void *identity,
                                      weft_scan_block_fn body, weft_combine_fn combine,
                                      void *arg);

/** out[i] = init op in[0] op ... op in[i] over count elements of size
 * bytes (out may be in), in blocks fixed by count and grain (grain 0:
 * about 1024 blocks): the same result at every worker count. Returns
 * WEFT_OK (count 0: nothing written), WEFT_EINVAL (a pointer NULL, size
 * 0, in and out overlapping but not equal, count * size overflowing),
 * WEFT_ENOMEM, WEFT_ESHUTDOWN; out is untouched on failure.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_scan_inclusive(weft_sched *s, void *out, const void *in, size_t count,
                                          size_t size, size_t grain, const void *init,
                                          weft_op_fn op, void *arg);

/** out[i] = init op in[0] op ... op in[i - 1] (out[0] = init), as
 * weft_parallel_scan_inclusive otherwise: the same returns.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_scan_exclusive(weft_sched *s, void *out, const void *in, size_t count,
                                          size_t size, size_t grain, const void *init,
                                          weft_op_fn op, void *arg);

/** A sort's comparison: < 0, 0, > 0 as a before, equal to, after b. */
typedef int (*weft_cmp_fn)(const void *a, const void *b, void *arg);

/** Sorts count elements of size bytes at base by cmp, in place, using no
 * memory beyond the stack (a quicksort: equal elements in no set
 * order). Returns WEFT_OK, or WEFT_EINVAL (s, cmp, or base with count >
 * 0 NULL, size 0, count * size overflowing: base untouched). It does not
 * fail otherwise: where no task can be had (memory, s being destroyed)
 * the calling thread sorts alone.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_sort(weft_sched *s, void *base, size_t count, size_t size,
                                weft_cmp_fn cmp, void *arg);

/** Sorts as weft_parallel_sort, stably (equal elements keep their
 * order): a merge sort through scratch, count * size bytes the caller
 * passes, or NULL: the call takes them from s (kept and reused, as
 * reduce's). The same returns, and WEFT_EINVAL for a scratch that
 * overlaps base, WEFT_ENOMEM when none could be had: base untouched.
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_sort_stable(weft_sched *s, void *base, size_t count, size_t size,
                                       void *scratch, weft_cmp_fn cmp, void *arg);

/** A find body: the first index in [begin, end) that matches, or end. */
typedef size_t (*weft_find_fn)(size_t begin, size_t end, void *arg);

/** Stores in *index the first index of [begin, end) that matches (end if
 * none): fn runs on blocks of at most grain (grain 0: about 64 per
 * worker); once a match is known, blocks after it are not started.
 * Returns WEFT_OK, WEFT_EINVAL (s, fn or index NULL, begin > end),
 * WEFT_ENOMEM or WEFT_ESHUTDOWN (as parallel_for: *index untouched).
 * Callable from: any thread (a task's fiber waits; see the reference). */
WEFT_API int weft_parallel_find(weft_sched *s, size_t begin, size_t end, size_t grain,
                                weft_find_fn fn, void *arg, size_t *index);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_PARALLEL_H */

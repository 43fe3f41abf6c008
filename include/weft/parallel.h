/*
 * weft/parallel.h: Parallel loops: for and reduce over an index range.
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
 * result on every run and at every worker count.
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

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_PARALLEL_H */

/*
 * weft/parallel.h: Parallel loops: for and reduce over an index range.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_PARALLEL_H
#define WEFT_PUBLIC_PARALLEL_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* Both cut [begin, end) into chunks of `grain` iterations (the last one
 * shorter) and hand each chunk to body, on whichever worker is free.
 * Before a chunk runs, everything after it has been offered to other
 * workers, so one slow chunk holds up nothing but itself: uneven loops
 * balance. grain 0 picks one (parallel_for: about 64 chunks per
 * worker). They return once every chunk has run. Callable from: a task
 * (its fiber waits, its worker runs other work); a bound thread, which
 * with no workers runs the chunks itself (and other work while a chunk
 * blocks), and beside workers queues them and, helping, runs chunks and
 * other work while it waits (bound with WEFT_BIND_NO_HELP: only its
 * pinned tasks); or any other thread. Such a thread runs chunks itself when a CPU is spare
 * for it: about 1/(workers + 1) of them while the workers run the rest
 * and help with its share once free (fewer workers than the CPUs s's
 * creator may run on); with a worker per CPU it sleeps until they are
 * done. If s has no workers, such a thread runs every chunk itself, in
 * order (so there a chunk must not wait for a later one: bind the thread
 * to let the chunks run as tasks). begin == end is a no-op; EINVAL: s or
 * a function NULL, or begin > end; ESHUTDOWN: from outside s (not a task
 * or bound thread of s) while s is being destroyed. Bodies may spawn,
 * block and nest loops, and a chunk may wait for any other chunk of the
 * same loop (as a task may wait for another: while a chunk is blocked
 * the chunks after it are queued, one worker or many), except on such an
 * outside thread, and in parallel_reduce for a later chunk of its own run
 * of chunks (below). */
typedef void (*weft_range_fn)(size_t begin, size_t end, void *arg);
typedef void (*weft_reduce_fn)(size_t begin, size_t end, void *partial, void *arg);
typedef void (*weft_combine_fn)(void *into, const void *from, void *arg);

/* Calls body(b, e, arg) once per chunk, with e - b <= grain. */
WEFT_API int weft_parallel_for(weft_sched *s, size_t begin, size_t end, size_t grain,
                               weft_range_fn body, void *arg);   /* grain 0 = auto */

/* Reduces [begin, end) into result (result_size bytes; its old content is
 * ignored). body(b, e, partial, arg) folds a chunk into partial, which
 * starts as a copy of identity; combine(into, from, arg) folds from into
 * into (associative; identity must be its neutral element). Chunks are
 * grouped into at most 1024 runs of consecutive chunks, each folded in
 * order from the identity by one fiber (so with more than 1024 chunks a
 * chunk must not wait for a later one of its run; below that every chunk
 * is a run of its own), and the runs are combined in order on the
 * calling thread. The grouping depends on the range and grain only, so
 * the result is the same on every run and at every worker count, for
 * floating-point sums too (grain 0 aims at 1024 chunks, whatever the
 * worker count). The partials take 64-byte-rounded result_size per run of
 * chunks: up to 2 KiB on the caller's stack, beyond that in scratch
 * blocks the scheduler keeps and reuses (the first calls may allocate
 * them; ENOMEM if they cannot). */
WEFT_API int weft_parallel_reduce(weft_sched *s, size_t begin, size_t end, size_t grain,
                                  void *result, size_t result_size, const void *identity,
                                  weft_reduce_fn body, weft_combine_fn combine, void *arg);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_PARALLEL_H */

/*
 * weft/alloc.h: Allocation hooks: where every heap allocation weft makes goes.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_ALLOC_H
#define WEFT_PUBLIC_ALLOC_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* Every heap allocation weft makes goes through one of these hooks:
 *  - a scheduler's: weft_config.allocator, for everything the scheduler
 *    makes (the scheduler itself, its workers and bound threads, queues,
 *    task records, timer heaps, weft_parallel_reduce's scratch blocks),
 *    from create to destroy;
 *  - the process-wide one (weft_set_allocator), for graphs and channels
 *    (made without a scheduler), and for a scheduler whose config leaves
 *    both hooks NULL: it keeps the one set when it was created.
 * Not through a hook: fiber stacks (each fiber, its struct included, is
 * one mmap with a guard region), the alternate signal stacks of worker and
 * bound threads (mmap), and the threads themselves (pthread_create).
 *
 * alloc returns memory aligned to at least 64 bytes for sizes >= 64, or
 * NULL. free gets every block back through the allocator that made it,
 * with the size alloc was asked for. Both may be called from any thread
 * at once, workers included; neither may call into weft.
 *
 * When alloc returns NULL: the call that needed the memory fails with
 * WEFT_ENOMEM and changes nothing (a create leaves *out NULL). This holds
 * for create, bind, spawn, the graph calls, the parallel helpers and
 * weft_chan_create. Growing a worker's timer heap (past 256 timed waits
 * armed at once on it) fails the timed wait that needed it with
 * WEFT_ENOMEM; a sleep then sleeps the thread. Not an allocation through
 * the hook, and also never an abort: mapping a fiber stack. When a task
 * blocks and its worker has no ready or idle fiber to go on with and none
 * can be mapped (memory, or vm.max_map_count: a fiber takes two
 * mappings), the wait returns WEFT_ENOMEM at once and changes nothing
 * (wait group, event, condition variable, channel, weft_graph_wait,
 * weft_wait_until, weft_wait_idle); weft_sleep sleeps the thread,
 * weft_yield does nothing, and weft_mutex_lock, which cannot fail, sleeps
 * the thread briefly between tries. Fibers stay bounded by what the work
 * needs, not by the number of tasks started: see "tasks". */
typedef struct weft_allocator {
    void *(*alloc)(size_t size, void *ctx);
    void (*free)(void *ptr, size_t size, void *ctx);
    void *ctx;
} weft_allocator;

/* Sets the process-wide allocator (see above). NULL, or a NULL hook,
 * restores malloc/free. Callable from: any thread, before any weft object
 * that uses it exists. */
WEFT_API void weft_set_allocator(const weft_allocator *a);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_ALLOC_H */

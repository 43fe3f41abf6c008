/*
 * weft/alloc.h: Allocation hooks: where every heap allocation weft makes goes.
 *
 * weft allocates through a weft_allocator: a scheduler's own (set in its
 * weft_config) for everything that scheduler makes, and a process-wide
 * one for graphs, channels, and schedulers that set none. Fiber stacks,
 * alternate signal stacks and threads are mapped or made directly. When
 * a hook returns NULL the call that needed the memory fails with
 * WEFT_ENOMEM and changes nothing.
 * See docs/reference/alloc.md for which allocations go through which
 * hook, and what each call does when memory (or a fiber stack) runs out.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_ALLOC_H
#define WEFT_PUBLIC_ALLOC_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** A pair of allocation hooks and their context. alloc returns memory
 * aligned to at least 64 bytes for sizes >= 64, or NULL. free gets every
 * block back through the allocator that made it, with the size alloc was
 * asked for. Both may be called from any thread at once, workers
 * included; neither may call into weft. */
typedef struct weft_allocator {
    void *(*alloc)(size_t size, void *ctx);           /**< a block, or NULL */
    void (*free)(void *ptr, size_t size, void *ctx);  /**< a block back */
    void *ctx;                                        /**< passed to both */
} weft_allocator;

/** Sets the process-wide allocator, used by graphs, channels and the
 * schedulers created after it whose config leaves both hooks NULL. NULL,
 * or a NULL hook, restores malloc/free.
 * Callable from: any thread, before any weft object that uses it exists. */
WEFT_API void weft_set_allocator(const weft_allocator *a);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_ALLOC_H */

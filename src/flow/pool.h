/* This file is private to weft: src/flow's cell pools, where dependent
 * async handles and task group members come from and go back to.
 *
 * A pool hands out cells of one size (a multiple of 64 bytes, cache-line
 * aligned), carved from slabs of WEFT__FLOW_SLAB_CELLS cells taken from
 * the process-wide allocator (weft_set_allocator). A freed cell is kept
 * for the next get, never given back while the process runs, so a
 * program that keeps 10^6 handles in flight allocates while it first
 * reaches that many and nothing after: the allocator sees one slab per
 * WEFT__FLOW_SLAB_CELLS cells of the peak. weft_set_allocator (callable
 * only while no weft object exists) frees every slab to the allocator
 * that made it first.
 */
#ifndef WEFT_FLOW_POOL_H
#define WEFT_FLOW_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "spin.h"

#define WEFT__FLOW_SLAB_CELLS 64
/* Free lists a pool keeps apart, so that threads freeing and taking
 * cells at once seldom meet on one lock: a worker uses the stripe of its
 * thread id, any other thread one drawn from its stack's address. */
#define WEFT__FLOW_STRIPES 16

typedef struct weft__flow_stripe {
    weft__spin lock;
    void *head;                  /* free cells, linked through their first word */
    char pad_[64 - sizeof(weft__spin) - sizeof(void *)];
} weft__flow_stripe;

typedef struct weft__flow_pool {
    weft__flow_stripe stripe[WEFT__FLOW_STRIPES];
    size_t cell;                 /* bytes per cell, a multiple of 64 */
    weft__spin slab_lock;
    void *slabs;                 /* every slab, linked through its first word */
    bool registered;             /* on the list give_back walks */
    struct weft__flow_pool *next_pool;   /* the list give_back walks */
} weft__flow_pool;

#define WEFT__FLOW_POOL_INIT(bytes) \
    { .cell = ((bytes) + 63) / 64 * 64, .slab_lock = WEFT__SPIN_INIT }

/* Puts p on the list of pools (for fork and weft_set_allocator): called
 * from a constructor of the file that owns p. */
void weft__flow_pool_register(weft__flow_pool *p);
/* A cell of pool p (its contents undefined), or NULL: out of memory.
 * Callable from: any thread. */
void *weft__flow_get(weft__flow_pool *p);
/* Gives c, a cell of p, back. Callable from: any thread. */
void  weft__flow_put(weft__flow_pool *p, void *c);

#ifdef WEFT_TEST_SEAMS
/* Called by weft_async_spawn after it has attached (or found finished)
 * predecessor i, before it counts the finished ones: a test holds the
 * window open there to finish a predecessor mid-attach. NULL: nothing. */
extern void (*weft__flow_attach_seam)(size_t i);
#endif

#endif /* WEFT_FLOW_POOL_H */

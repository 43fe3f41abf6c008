/* This file is private to weft: the short lock each fiber-aware primitive
 * keeps its state and wait queues under.
 *
 * Held for a few dozen instructions (never across a block or a wake-up
 * that can sleep), so a test-and-test-and-set lock beats a futex. The
 * holder may be a plain thread that the kernel preempts: waiters back off
 * (backoff.h), a bounded spin, then yielding the CPU instead of burning
 * it. A graph's lock is one too (graph.h), taken with patience where a
 * report must not hang on it (weft__graph_lock_for).
 *
 * Synchronization
 *   v   0 free, 1 held. Taken by exchange (acquire), released by store
 *       (release); each release pairs with the next taker's acquire.
 */
#ifndef WEFT_SPIN_H
#define WEFT_SPIN_H

#include <stdatomic.h>
#include <stdbool.h>

#include "backoff.h"
#include "base.h"
#include "os.h"

typedef struct weft__spin {
    atomic_uint v;
} weft__spin;

#define WEFT__SPIN_INIT { 0 }

static inline void weft__spin_init(weft__spin *l)
{
    atomic_init(&l->v, 0);
}

static inline bool weft__spin_trylock(weft__spin *l)
{
    return atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
           atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0;   /* acquire: pairs with the release in weft__spin_unlock */
}

/* The contended half of weft__spin_lock, out of line so that the
 * uncontended lock inlined into a primitive is one exchange and a test,
 * with no spin counter kept in a register across the primitive. */
static __attribute__((noinline, cold, unused)) void weft__spin_lock_slow(weft__spin *l)
{
    weft__backoff b = WEFT__BACKOFF_INIT;
    for (;;) {
        while (atomic_load_explicit(&l->v, memory_order_relaxed))   /* relaxed: only a hint; the exchange below decides */
            weft__backoff_step(&b);   /* the holder may be preempted */
        if (atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0)   /* acquire: pairs with the release in weft__spin_unlock */
            return;
    }
}

static inline void weft__spin_lock(weft__spin *l)
{
    if (WEFT_LIKELY(atomic_exchange_explicit(&l->v, 1, memory_order_acquire) == 0))   /* acquire: pairs with the release in weft__spin_unlock */
        return;
    weft__spin_lock_slow(l);
}

static inline void weft__spin_unlock(weft__spin *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);   /* release: pairs with the acquire exchange of the next holder */
}

/* Adapters for weft__wait's lock_fn / unlock_fn. */
static inline void weft__spin_lock_fn(void *l)
{
    weft__spin_lock(l);
}

static inline void weft__spin_unlock_fn(void *l)
{
    weft__spin_unlock(l);
}

#endif /* WEFT_SPIN_H */

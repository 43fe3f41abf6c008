/* This file is private to weft: the wait group's state word (event_wg.c)
 * for the layers above that count with one on a hot path (src/flow's task
 * groups): the common cases of an add, a done and a test for zero, inline
 * and with no checks, over the same word and protocol as the public calls
 * (event_wg.c, "Protocol"); anything else goes to those calls.
 *
 * Synchronization: as event_wg.c's, whose word this is. weft__wg_add1 is
 * a fetch_add (relaxed: an increment publishes nothing, and never ends a
 * wait, so it never becomes a releaser); weft__wg_done's CAS is the public
 * done's (acq_rel), taken inline only when it does not reach zero with
 * waiters counted; weft__wg_ended's load is the wait's first (acquire).
 */
#ifndef WEFT_WG_H
#define WEFT_WG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "weft.h"
#include "spin.h"
#include "wait.h"

/* state: count << 28 | waiters << 8 | releasers. */
#define WG_RELEASER     ((uint64_t)1)
#define WG_RELEASERS    ((uint64_t)0xff)
#define WG_WAITER       ((uint64_t)1 << 8)
#define WG_WAITERS      ((uint64_t)0xfffff << 8)
#define WG_SHIFT        28
#define WG_LOW          (((uint64_t)1 << WG_SHIFT) - 1)
#define WG_LIMIT        ((int64_t)1 << 35)          /* |count| must stay below */

static inline int64_t wg_count(uint64_t v)
{
    return (int64_t)v >> WG_SHIFT;   /* arithmetic shift (gcc, clang) */
}

typedef struct wg_impl {
    _Atomic uint64_t state;
    weft__spin lock;
    uint32_t tag;             /* WEFT__TAG_WAITGROUP while alive */
    weft__waitq q;
} wg_impl;

_Static_assert(sizeof(wg_impl) <= sizeof(weft_waitgroup), "wait group fits its public body");
_Static_assert(_Alignof(wg_impl) <= _Alignof(weft_waitgroup), "wait group alignment");

static inline wg_impl *wg_of(weft_waitgroup *p)
{
    return (wg_impl *)(void *)p->private_;
}

/* weft_waitgroup_add(p, 1), for a caller whose count stays far inside
 * the range (one per task it has in flight). Callable from: any thread. */
static inline void weft__wg_add1(weft_waitgroup *p)
{
    atomic_fetch_add_explicit(&wg_of(p)->state, (uint64_t)1 << WG_SHIFT,
                              memory_order_relaxed);   /* relaxed: see the top */
}

/* weft_waitgroup_done(p): inline unless it ends the count with waiters
 * to wake (or the CAS loses a race). Callable from: any thread. */
static inline void weft__wg_done(weft_waitgroup *p)
{
    wg_impl *g = wg_of(p);
    uint64_t v = atomic_load_explicit(&g->state, memory_order_relaxed);   /* relaxed: the CAS decides */
    if (WEFT_LIKELY(!(wg_count(v) == 1 && (v & WG_WAITERS))) &&
        atomic_compare_exchange_strong_explicit(&g->state, &v, v - ((uint64_t)1 << WG_SHIFT),
                                                memory_order_acq_rel, memory_order_relaxed))   /* acq_rel: as the public done's */
        return;
    weft_waitgroup_done(p);
}

/* Is p's count at or below zero with no releaser still inside it (so that
 * the caller may free it)? A weft_waitgroup_wait that would return at
 * once, without its wait for releasers. Callable from: any thread. */
static inline bool weft__wg_ended(weft_waitgroup *p)
{
    uint64_t v = atomic_load_explicit(&wg_of(p)->state, memory_order_acquire);   /* acquire: pairs with the dones' acq_rel */
    return wg_count(v) <= 0 && !(v & WG_RELEASERS);
}

#endif /* WEFT_WG_H */

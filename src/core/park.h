/* This file is private to weft: the interface of park.c: two-phase
 * parking, and the submitter's side of it.
 */
#ifndef WEFT_PARK_H
#define WEFT_PARK_H

#include "core.h"

int  weft__park_init(weft_sched *s);
void weft__park_fini(weft_sched *s);
void weft__park_setup_fences(void);
/* Wakes one parked worker if none is searching (weft__notify_work's slow
 * half). */
void weft__notify_slow(weft_sched *s);
/* Wakes worker w if it is parked (after giving it a ready fiber). */
void weft__wake_worker(weft_sched *s, weft__worker *w);
void weft__wake_all(weft_sched *s);
/* Parks w until woken or until deadline (0 = none). */
void weft__park(weft__worker *w, uint64_t deadline);
/* Leave the searching state; the last searcher hands off. */
void weft__stop_searching(weft__worker *w);
bool weft__try_start_searching(weft__worker *w);

/* The parking side's StoreLoad barrier (membarrier(2), else a seq_cst
 * fence): pairs with weft__fence_submit. Rare callers only: a parker, a
 * bind with no workers (spawn_bound.c, "Spawns of a bound thread with no workers"). */
void weft__fence_park(void);

/* Set once, before any worker exists (park.c): the parking side uses
 * membarrier(2), so submitters need only a compiler barrier. */
extern bool weft__use_membarrier;

/* The StoreLoad half a submitter pays after publishing work and before
 * reading the parking counters; pairs with the parker's fence (park.c). */
static inline void weft__fence_submit(void)
{
    if (WEFT_LIKELY(weft__use_membarrier))
        atomic_signal_fence(memory_order_seq_cst);   /* compiler only: pairs with membarrier in fence_park */
    else
        atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with fence_park */
}

/* After publishing work: whether a parked worker must be woken (none is
 * searching and some sleep), the submitter's side of the park protocol. */
static inline bool weft__notify_check(weft_sched *s)   /* after a StoreLoad fence */
{
    return atomic_load_explicit(&s->nsearching, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->nidle, memory_order_relaxed) != 0;
}

static inline bool weft__notify_needed(weft_sched *s)
{
    weft__fence_submit();
    return weft__notify_check(s);
}

/* After publishing work: wakes one parked worker if none is searching. */
static inline void weft__notify_work(weft_sched *s)
{
    if (weft__notify_needed(s))
        weft__notify_slow(s);
}

#endif /* WEFT_PARK_H */

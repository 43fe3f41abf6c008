/* This file is private to weft: the interface of task.c: task records,
 * their pools and spares, spawns counted, the idle test.
 */
#ifndef WEFT_TASK_H
#define WEFT_TASK_H

#include <stdbool.h>

#include "core.h"

/* Frees p's slabs. Callable from: destroy, once no record is in use. */
void weft__task_pool_fini(weft_sched *s, weft__task_pool *p);
/* Hands p's slabs and free records to s's spares, leaving p empty: for a
 * pool whose owner leaves (unbind) while records of its slabs may be
 * queued or pooled elsewhere. Callable from: p's owner. */
void weft__task_pool_retire(weft_sched *s, weft__task_pool *p);
void weft__spares_fini(weft_sched *s);
bool weft__sched_is_idle(weft_sched *s);
/* The global ring's locked push for t, counted on w (NULL: ext_spawned),
 * then the park check with a full fence. Callable from: w's owner, or
 * any thread with w NULL. */
void weft__submit_global(weft_sched *s, weft__worker *w, weft__task *t);

/* Steps B2-B3 of "Spawns of a bound thread with no workers" (spawn_bound.c): self has just
 * been listed as a bound thread of s, which has no workers; what other
 * bound threads spawned onto their own deques goes to the global ring.
 * Callable from: bind, after it listed self (outside bound_lock). */
void weft__bound_reclaim(weft_sched *s, weft__worker *self);

/* A bound thread with no workers that found nothing else: moves up to
 * 32 of its spilled spawns, oldest first, onto its deque and takes the
 * newest of them; NULL if none is spilled. Out of line, so that the
 * loop's steal, where it is asked, stays as workers run it. Callable
 * from: owner (the loop's steal). */
weft__task *weft__spill_take(weft__worker *w);
/* Moves v's spilled spawns to the global ring (H4's hand-back). Callable
 * from: v's owner. */
void weft__spill_hand_back(weft_sched *s, weft__worker *v);
/* Frees w's spill array. Callable from: its worker's fini. */
void weft__spill_fini(weft_sched *s, weft__worker *w);

/* The oldest half of w's full deque (512 at most) into batch: their
 * count. Callable from: w's owner. */
static inline unsigned weft__pop_older_half(weft__worker *w, weft__node *batch[static 512])
{
    unsigned half = w->deque_capacity / 2;
    if (half > 512)
        half = 512;
    return weft__deque_pop_oldest(&w->deque, batch, half);
}

/* H2 of "Spawns of a bound thread with no workers" (spawn_bound.c): w's
 * deque is full; run it, or spill its older half, then queue t.
 * Callable from: w's owner, on its host fiber. */
void weft__burst_full(weft_sched *s, weft__worker *w, weft__task *t);
/* S1-S3 of "Spawns of a bound thread beside workers" (spawn_bound.c): t,
 * filled in, from the host fiber of bound thread w, with no hint;
 * returns WEFT_OK. Callable from: w's owner, on its host fiber. */
int weft__spawn_beside(weft_sched *s, weft__worker *w, weft__task *t);

/* Counts a spawn about to be queued, before its record is published:
 * on w (its owner, a plain store) or, w NULL, on the scheduler's outside
 * count (an RMW). Release: pairs with the acquire loads of the idle test
 * (task.c). */
static inline void weft__count_spawn(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w != NULL))
        atomic_store_explicit(&w->spawned, atomic_load_explicit(&w->spawned, memory_order_relaxed) + 1,
                              memory_order_release);   /* relaxed: our own count; release: as above */
    else
        atomic_fetch_add_explicit(&s->ext_spawned, 1, memory_order_release);
}

#endif /* WEFT_TASK_H */

/* This file is private to weft: spawning from threads that are not
 * workers of the scheduler (plain threads, bound threads), through a
 * port of the global queue kept per thread and scheduler (extspawn.c),
 * and the outside rule every such spawn follows.
 */
#ifndef WEFT_EXTSPAWN_H
#define WEFT_EXTSPAWN_H

#include "core_api.h"

/* The outside rule (sched.c, Synchronization): a thread with no worker
 * of s announces itself in ext_inflight, then reads shutdown. false:
 * destroy has begun, refuse with WEFT_ESHUTDOWN (nothing to undo). true:
 * s is not freed before the matching weft__outside_leave, and what the
 * caller queues meanwhile is waited for by destroy. Inline: every
 * outside spawn pays it. Callable from: any thread that is not one of
 * s's. */
static inline bool weft__outside_enter(weft_sched *s)
{
    atomic_fetch_add(&s->ext_inflight, 1);        /* seq_cst: Dekker with destroy's shutdown store, then its ext_inflight load */
    if (WEFT_LIKELY(!atomic_load(&s->shutdown)))   /* seq_cst: pairs with destroy's store (sched.c) */
        return true;
    atomic_fetch_sub(&s->ext_inflight, 1);        /* seq_cst (release): refused, our last touch of s */
    return false;
}

/* Ends what weft__outside_enter (true) began. Callable from: its caller. */
static inline void weft__outside_leave(weft_sched *s)
{
    atomic_fetch_sub(&s->ext_inflight, 1);   /* seq_cst (release): our last touch of s; pairs with destroy's load after it set shutdown */
}

/* weft_spawn from a thread that is neither a worker nor bound to s:
 * WEFT_ESHUTDOWN once destroy has started, else fn(arg) runs once
 * (WEFT_OK), or WEFT_ENOMEM and it never runs. Callable from: any
 * thread that is not one of s's. */
int  weft__spawn_outside(weft_sched *s, weft_fn fn, void *arg, weft_hint hint);

/* Queues t (a record the caller owns, filled in) at NORMAL priority
 * through the calling thread's port of s, counted there, and wakes a
 * worker if one must be; without a port (none to be had) or for the
 * YIELD hint, through weft__submit_global. w: NULL from a thread with no
 * worker of s, inside weft__outside_enter; or the calling bound thread's
 * worker (beside workers; or, with none, on its own code). Callable from:
 * those threads. */
void weft__submit_outside(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint);

/* weft__submit_outside for the bound thread w beside workers, at
 * NORMAL priority with no hint, unless its port's ring is full with its
 * overflow list empty (a push would start the list, under the port's
 * lock): then false, having done nothing (t is still the caller's, and
 * uncounted). Callable from: w's thread. */
bool weft__submit_bound_try(weft_sched *s, weft__worker *w, weft__task *t);

/* Gives the bound thread w's port back (weft__submit_outside claims it).
 * Callable from: w's thread, at unbind, while it is still bound. */
void weft__bound_port_release(weft__worker *w);

/* A task record for a thread with no worker of s to fill in and queue:
 * from its port's spare records when it has a port, else from s's
 * spares. NULL: out of memory. Callable from: such a thread, inside
 * weft__outside_enter. */
weft__task *weft__task_alloc_outside(weft_sched *s);

/* s is going: drops it from the list that threads consult before
 * touching a scheduler their ports came from. Callable from: destroy,
 * once no external spawn is in flight (after the ext_inflight wait),
 * before s is freed. */
void weft__xspawn_forget(weft_sched *s);

/* task.c: moves up to WEFT__SLAB_TASKS spare records of s (a full
 * magazine, else what `loose` holds, else a new slab's) into slot[],
 * for the caller to keep. Returns how many; 0: out of memory. Callable
 * from: any thread, while s is not being freed. */
unsigned weft__task_refill(weft_sched *s, weft__task **slot);

#endif /* WEFT_EXTSPAWN_H */

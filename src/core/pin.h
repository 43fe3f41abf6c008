/* This file is private to weft: the interface of pin.c: thread ids, pinned
 * tasks, priorities, bound threads pumping (its calls for the layers above
 * are in core_api.h).
 */
#ifndef WEFT_PIN_H
#define WEFT_PIN_H

#include "core.h"

/* The next task pinned to w's thread, oldest first, or NULL. Callable
 * from: owner. */
weft__task *weft__take_pinned(weft__worker *w);
/* Lists w (a bound thread's worker, not listed) in s->bound[] under
 * the smallest free id >= nworkers, which it stores in w->index; O(log
 * n). WEFT_ENOMEM, nothing changed: no room could be made. Caller holds
 * bound_lock. */
int  weft__bound_add(weft_sched *s, weft__worker *w);
/* Takes w out of s->bound[] and frees its id; O(log n), allocates
 * nothing. Caller holds bound_lock. */
void weft__bound_remove(weft_sched *s, weft__worker *w);
/* Frees the tables of bound threads (destroy, nobody bound). */
void weft__bound_fini(weft_sched *s);
/* Unbind's first step: closes w's box of pinned tasks to every thread
 * but w (their pins get WEFT_EINVAL from now on). Callable from: w's
 * owner. */
void weft__bound_close(weft__worker *w);
/* Unbind's second step, after weft__bound_close: runs what is pinned to
 * w and waits for the tasks w started that are blocked, until none is
 * left. Callable from: w's owner, on its host fiber. */
void weft__bound_drain(weft__worker *w);
/* A bound thread beside workers with nothing to run sleeps until woken
 * (weft__wake_worker) or deadline (0 = none); it is never in the idle
 * set: work for any thread wakes a worker. Callable from: owner (park.c). */
void weft__bound_park(weft__worker *w, uint64_t deadline);

/* weft_spawn_ex with o->sem, past its checks (not pinned): proc.c.
 * Callable from: any thread. */
int  weft__spawn_sem(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o);

#endif /* WEFT_PIN_H */

/* This file is private to weft: the interface of suspend.c: suspending
 * fibers, and the host primitives block through.
 */
#ifndef WEFT_SUSPEND_H
#define WEFT_SUSPEND_H

#include "core.h"

/* Suspends the current fiber of w until weft__ready(f). Callable
 * from: a fiber on its own worker. */
void weft__suspend(weft__worker *w);
/* A bound thread of a scheduler without workers, on its own code, hands
 * what is queued on its deque and LIFO slot to the global ring (its
 * tasks' spawns, when it goes back to its own code; its own spawns, when
 * another thread binds: spawn_bound.c, "Spawns of a bound thread with no workers"). Callable
 * from: owner, on its host fiber. */
void weft__bound_hand_back(weft__worker *w);
/* Blocking for fiber-aware primitives on workers and on bound threads in
 * single-threaded mode (src/fiber/wait.h). */
extern const weft__host weft__core_host;

/* Fibers blocked on a bound thread past which its host's spawns stop
 * running the burst and spill instead (spawn_bound.c). */
#define WEFT__BURST_BLOCKED 32
/* The host of a bound thread with no workers, its deque full: suspends
 * while the thread's loop runs tasks, until the deque is empty, or
 * `most` more tasks have completed on the thread, or more than
 * WEFT__BURST_BLOCKED fibers are blocked there; false, having done
 * nothing, if no fiber could run the loop. Callable from: owner, on its
 * host fiber (wait_until.c). */
bool weft__host_drain(weft__worker *w, unsigned most);

/* The host of a bound thread beside workers whose spawn found its port
 * full: runs t (filled in, not yet counted) at once, on a fiber of the
 * thread's own (its side fiber), and returns when t has returned or
 * blocked; a task that blocks goes on when the thread next waits in
 * weft. false, having done nothing, when it cannot now: a fiber of the
 * thread is ready (the host would not be at the head of the ready FIFO),
 * WEFT__BURST_BLOCKED fibers are blocked there, the thread does not help
 * (WEFT_BIND_NO_HELP), or no fiber can be mapped. Callable from: owner, on its host fiber
 * (wait_until.c). */
bool weft__host_run(weft__worker *w, weft__task *t);

#endif /* WEFT_SUSPEND_H */

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
 * another thread binds: task.c, "Spawns of a bound thread"). Callable
 * from: owner, on its host fiber. */
void weft__bound_hand_back(weft__worker *w);
/* Blocking for fiber-aware primitives on workers and on bound threads in
 * single-threaded mode (src/fiber/wait.h). */
extern const weft__host weft__core_host;

#endif /* WEFT_SUSPEND_H */

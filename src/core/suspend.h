/* This file is private to weft: the interface of suspend.c: suspending
 * fibers, and the host primitives block through.
 */
#ifndef WEFT_SUSPEND_H
#define WEFT_SUSPEND_H

#include "core.h"

/* Suspends the current fiber of w until weft__ready(f). Callable
 * from: a fiber on its own worker. */
void weft__suspend(weft__worker *w);
/* Blocking for fiber-aware primitives on workers and on bound threads in
 * single-threaded mode (src/fiber/wait.h). */
extern const weft__host weft__core_host;

#endif /* WEFT_SUSPEND_H */

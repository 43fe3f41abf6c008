/* This file is private to weft: the interface of ready.c: fibers made
 * ready again.
 */
#ifndef WEFT_READY_H
#define WEFT_READY_H

#include "core.h"

/* Makes a fiber suspended by weft__suspend runnable again. Callable from:
 * any thread. */
void weft__ready(weft__fiber *f);
/* As weft__ready, but from f's own worker f runs next (ahead of the ready
 * FIFO), at most cfg.lifo_budget times in a row before other work gets a
 * turn. Callable from: any thread (elsewhere it is weft__ready). */
void weft__ready_next(weft__fiber *f);
/* Waits until no other thread is inside weft__ready for w: a waker from
 * outside touches w and its scheduler after the fiber it woke may have
 * finished. Callable from: destroy and unbind, before freeing w. */
void weft__worker_wait_wakers(weft__worker *w);

#endif /* WEFT_READY_H */

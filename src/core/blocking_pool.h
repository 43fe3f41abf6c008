/* This file is private to weft: the interface of blocking_pool.c: the
 * blocking pool (weft_call_blocking).
 */
#ifndef WEFT_BLOCKING_POOL_H
#define WEFT_BLOCKING_POOL_H

#include "core.h"

#ifdef WEFT_TEST_SEAMS
/* blocking_pool.c. Test seam: how long an idle pool thread waits before it
 * leaves (10 s). */
extern uint64_t weft__bpool_keep_ns;
#endif
/* Waits for every call in flight on s's blocking pool, stops and joins
 * its threads, frees it. Callable from: destroy, after the workers left. */
void weft__bpool_fini(weft_sched *s);

#endif /* WEFT_BLOCKING_POOL_H */

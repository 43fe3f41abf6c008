/* This file is private to weft: the interface of worker_life.c: a worker's
 * or a bound thread's start and end.
 */
#ifndef WEFT_WORKER_LIFE_H
#define WEFT_WORKER_LIFE_H

#include "core.h"

void *weft__worker_thread(void *arg);
int  weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound);
void weft__worker_fini(weft__worker *w);

#endif /* WEFT_WORKER_LIFE_H */

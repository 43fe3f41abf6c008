/* This file is private to weft: the interface of timer.c: the timer heap
 * (weft_sleep, deadlines of waits).
 */
#ifndef WEFT_TIMER_H
#define WEFT_TIMER_H

#include "core.h"

typedef struct weft__timer {
    uint64_t deadline;          /* CLOCK_MONOTONIC ns */
    void (*fire)(struct weft__timer *t);   /* runs on the owning worker */
    unsigned index;             /* slot in the heap, while armed */
} weft__timer;

bool weft__timer_arm(weft__worker *w, weft__timer *t);   /* false: out of memory, not armed */
bool weft__timer_disarm(weft__worker *w, weft__timer *t);

#endif /* WEFT_TIMER_H */

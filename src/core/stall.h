/* This file is private to weft: the interface of stall.c: what blocked
 * fibers wait on, the stall watchdog, state dumps.
 */
#ifndef WEFT_STALL_H
#define WEFT_STALL_H

#include <stdio.h>

#include "core.h"

/* Test seam: schedulers created from now on track blocked fibers even
 * with the watchdog off, for weft__sched_dump_all (the test harness). */
#ifdef WEFT_TEST_SEAMS
extern bool weft__stall_track_all;
#endif
/* Lists s among the live schedulers and starts its watchdog thread if
 * cfg.watchdog_ns asks for one; ENOMEM leaves nothing behind. Callable
 * from: create, once the workers run. */
int  weft__stall_start(weft_sched *s);
/* Stops the watchdog and unlists s. Callable from: destroy, before the
 * workers are freed. */
void weft__stall_stop(weft_sched *s);
/* The tracking hooks, called only when w->track. Callable from: owner. */
void weft__track_note(weft__worker *w, const char *what, const void *obj, uint64_t deadline);
void weft__track_suspend(weft__worker *w, weft__fiber *self);
void weft__track_resume(weft__worker *w, weft__fiber *self);
void weft__track_run(weft__worker *w, weft_fn fn, void *arg, const char *name);
/* The kind a layer registered for entry (weft__task_namer_add), NULL if
 * none: names in traces for functions no symbol table names. */
const char *weft__task_kind(weft_fn fn);
/* Writes the state of s (blocked fibers if tracked, workers, queues). */
void weft__sched_dump(weft_sched *s, FILE *out);
/* weft__sched_dump for every live scheduler; waits at most about a
 * second for any lock. For the test harness on a hang. Callable from:
 * any thread that is not a worker. */
void weft__sched_dump_all(FILE *out);

#endif /* WEFT_STALL_H */

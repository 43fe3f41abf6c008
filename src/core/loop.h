/* This file is private to weft: the interface of worker.c: the loop every
 * fiber of a worker runs, its looks for queued work, and when a worker
 * runs short of fibers.
 */
#ifndef WEFT_LOOP_H
#define WEFT_LOOP_H

#include "core.h"

/* The loop every fiber of a worker runs (worker.c): returns only on the
 * host fiber when the scheduler exits. Callable from: owner. */
void weft__worker_loop(weft__worker *w);

/* Is there anything w could run now (queues, inbox, lifo slots)? Used
 * by parking to re-check after announcing idle. */
bool weft__work_visible(weft__worker *w);
/* Is a task queued anywhere (global ring, any deque or LIFO slot)? */
bool weft__work_queued(weft_sched *s);

/* Fibers held by tasks (blocked, yielded or polling) on one worker past
 * which it runs short: ready fibers then go before new tasks, pollers
 * are polled and yielded fibers let back in at every pick, and YIELD
 * spawns go depth first, so that the number of fibers stays bounded by
 * what the work needs, not by how many tasks were started. */
#define WEFT__FIBERS_SOFT 256

/* Callable from: owner. */
static inline bool weft__short_of_fibers(const weft__worker *w)
{
    return w->blocked >= WEFT__FIBERS_SOFT;
}

/* A bound thread of a scheduler without workers, running a task on one
 * of its loop's fibers (not its own code): what such a task spawns goes
 * on the thread's own deque and LIFO slot, as on a worker, so recursive
 * work runs depth first; the loop hands what is left there to the
 * global ring before the thread goes back to its own code. (What its own
 * code spawns goes there too, by another path: spawn_bound.c, "Spawns of a
 * bound thread with no workers".) Callable from: owner. */
static inline bool weft__bound_runs_tasks(const weft__worker *w)
{
    return w->bound && w->s->nworkers == 0 && w->cur != &w->host;
}

#endif /* WEFT_LOOP_H */

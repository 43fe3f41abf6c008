/* This file is private to weft: what the files of a worker share.
 *
 * A worker's code is split by concern: worker.c (the loop: picking,
 * stealing, parking; worker threads), ready.c (fibers made ready: the
 * inbox, the FIFO, run_next), suspend.c (fibers on block: suspending, the
 * fiber to go on with, the host), wait_until.c (weft_wait_until, weft_yield)
 * and timer.c (the timer heap, weft_sleep). Their entry points
 * for the rest of core are in their own headers (loop.h, ready.h,
 * suspend.h, timer.h, core_api.h); here are the names they use among
 * themselves, and the small helpers their hot paths inline, as they did
 * when the files were one (a helper one file uses stays static there).
 *
 * Everything here is owner only: it runs on the worker's own thread, on
 * whichever of its fibers is current.
 */
#ifndef WEFT_WORKER_H
#define WEFT_WORKER_H

#include "core.h"
#include "rand.h"
#include "stall.h"
#include "timer.h"
#include "trace.h"

/* Full looks at the scheduler's queues (and the clock) in weft__spin_for_work:
 * one every this many pauses (about a microsecond at 27 ns a pause).
 * weft__spin_until looks at the clock as often. */
#define WEFT__SPIN_SCAN 32
/* A look at the epoll set (a system call, with fd waits registered) every
 * this many of those scans: readiness is seen within about 4 us. */
#define WEFT__SPIN_IO_SCANS 4
/* The learnt spin budget (weft__spin_for_work): a probe of this many
 * scans when it has fallen to 0, every WEFT__SPIN_PROBE_EVERY-th spin. */
#define WEFT__SPIN_PROBE_SCANS 2u
#define WEFT__SPIN_PROBE_EVERY 16u

static inline weft__fstate *weft__fstate_of(weft__fiber *f)
{
    return f->host;
}

static inline weft__task *weft__as_task(weft__node *n)
{
    return (weft__task *)(void *)n;
}

/* ---- worker.c ------------------------------------------------------------ */

/* Entry of every fiber a worker creates: runs the loop, never returns. */
void weft__fiber_main(void *arg);
/* Is a task or a due timer waiting on this worker? */
bool weft__local_work_waiting(weft__worker *w);
/* One step of the loop on a bound thread's own stack when no fiber can
 * be had. Callable from: owner, on its host fiber. */
void weft__host_runs_one(weft__worker *w);

/* Takes the task in w's LIFO slot, if any. */
static inline weft__task *weft__take_lifo(weft__worker *w)
{
    if (!atomic_load_explicit(&w->lifo, memory_order_relaxed))
        return NULL;
    weft__node *n = atomic_exchange_explicit(&w->lifo, NULL,
                                             memory_order_acquire);   /* acquire: pairs with the exchange in submit */
    if (n)
        WEFT_TSAN_ACQUIRE(n);
    return n ? weft__as_task(n) : NULL;
}

/* Runs a task taken from a queue: the loop, and wait_until's inline runs. */
static inline __attribute__((always_inline)) void weft__run_task(weft__worker *w, weft__task *t)
{
    weft_fn fn;
    void *arg;
    const char *name = NULL;
    WEFT_TSAN_ACQUIRE(t);
    if (weft__node_is_hook(&t->node)) {
        /* A hook record (node.h): its layer's; core reads nothing else. */
        fn = atomic_load_explicit(&weft__record_hook, memory_order_relaxed);   /* set before any hook record was queued */
        arg = t;
        /* Its layer reports each task it runs (the graph's visits); the
         * stall tracker still notes the record. */
        if (WEFT_UNLIKELY(w->track))
            weft__track_run(w, fn, arg, NULL);
        else
            fn(arg);
        atomic_store_explicit(&w->completed, atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                              memory_order_release);   /* relaxed: our own count; release: pairs with acquire in is_idle */
        return;
    } else {
        fn = t->fn;
        arg = t->arg;
        if (WEFT_UNLIKELY(t->flags & WEFT__TASK_NAMED)) {
            /* Cleared at every run: the record goes back to a pool whose
             * other takers (weft_spawn, loop pieces) never look at flags. */
            name = (const char *)(uintptr_t)t->data[0];
            t->flags &= ~(uint32_t)WEFT__TASK_NAMED;
        }
        weft__task_free(w->s, w, t);   /* read out: the record is free for the task's children */
    }
    if (WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_run(w, fn, arg, name);   /* fn(arg), traced, observed, noted for stall reports */
    else
        fn(arg);
    /* Still on the same worker: a task that blocked resumed here. */
    atomic_store_explicit(&w->completed, atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                          memory_order_release);   /* relaxed: our own count; release: pairs with acquire in is_idle */
}

/* ---- ready.c ------------------------------------------------------------- */

/* The next resumable fiber, or NULL. */
weft__fiber *weft__take_ready(weft__worker *w);
/* weft__core_host's wake and wake_next (weft__ready, weft__ready_next of
 * the waiter's fiber). Callable from: any thread. */
void weft__host_wake(weft__waiter *wt);
void weft__host_wake_next(weft__waiter *wt);

static inline void weft__ready_append(weft__worker *w, weft__fiber *f)
{
    f->next = NULL;
    if (w->ready_tail)
        w->ready_tail->next = f;
    else
        w->ready_head = f;
    w->ready_tail = f;
}

/* Moves the inbox to the owner's FIFO, oldest first. */
static inline void weft__drain_inbox(weft__worker *w)
{
    if (!atomic_load_explicit(&w->inbox, memory_order_relaxed))
        return;
    weft__fiber *f = atomic_exchange_explicit(&w->inbox, NULL,
                                              memory_order_acquire);  /* acquire: pairs with release CAS in weft__ready */
    weft__fiber *rev = NULL;
    while (f) {
        weft__fiber *n = f->next;
        f->next = rev;
        rev = f;
        f = n;
    }
    while (rev) {
        weft__fiber *n = rev->next;
        weft__ready_append(w, rev);
        rev = n;
    }
}

/* The run_next fiber regardless of its budget (the streak starts over).
 * Callable from: owner, once nothing else local is waiting. */
static inline weft__fiber *weft__take_run_next(weft__worker *w)
{
    weft__fiber *f = w->run_next;
    w->run_next = NULL;
    w->next_streak = 0;
    w->fiber_streak++;
    return f;
}

/* Have ready fibers run long enough (fiber_streak) while something else
 * waits that only the loop serves? If nothing waits, the count starts
 * over, so the check costs a few loads once per global_interval
 * resumptions. */
static inline bool weft__others_turn(weft__worker *w)
{
    if (w->fiber_streak < w->global_interval)
        return false;
    if (w->yield_head || w->pollers || weft__local_work_waiting(w))
        return true;
    w->fiber_streak = 0;
    return false;
}

/* Spins up to spin_us for work for w, or until word (NULL: none) no
 * longer reads expect; true if either happened (worker.c). Callable
 * from: owner. */
bool weft__spin_for_work(weft__worker *w, const _Atomic unsigned char *word, unsigned expect);

/* ---- suspend.c ------------------------------------------------------------- */

/* An idle fiber of w to run the loop on, else a newly mapped one
 * (counted in fibers_created); NULL if none is idle and none can be
 * mapped. Callable from: owner. */
weft__fiber *weft__spare_fiber(weft__worker *w);
/* weft__have_fiber's case past its loads. */
bool weft__have_fiber_slow(weft__worker *w);
/* A wait fails for lack of a fiber: publishes what the fiber holds,
 * returns WEFT_ENOMEM. */
int weft__no_fiber(weft__worker *w);

/* Is there a fiber for w to go on with if the running one blocks now?
 * One ready or idle, or one mapped now and kept idle for the switch.
 * False only when none is ready or idle and none can be mapped (memory
 * or vm.max_map_count ran out): the caller then fails its wait with
 * WEFT_ENOMEM instead of blocking. Callable from: owner, before the
 * blocking fiber commits to leave. */
static inline bool weft__have_fiber(weft__worker *w)
{
    if (WEFT_LIKELY(w->idle_fibers || w->run_next || w->ready_head))
        return true;
    return weft__have_fiber_slow(w);
}

/* Switches w from fiber `from`, the current one, to `to`. */
static inline void weft__switch_from(weft__worker *w, weft__fiber *from, weft__fiber *to)
{
    w->cur = to;
    WEFT__STAT(w, fiber_switches, 1);
    if (WEFT_UNLIKELY(weft__hooks(w) & WEFT__HOOK_OBSERVE))
        weft__hook_switch(w, from, to);
    weft__fiber_switch(from, to);
    /* Back on `from`, on the same worker: fibers are pinned. */
}

static inline void weft__switch_to(weft__worker *w, weft__fiber *to)
{
    weft__switch_from(w, w->cur, to);
}

/* ---- timer.c ------------------------------------------------------------- */

/* Is the earliest timer due? The clock is read only with timers armed. */
static inline bool weft__timer_due(weft__worker *w)
{
    return w->ntimers && w->timers[0]->deadline <= weft__now_ns();
}

#endif /* WEFT_WORKER_H */

/* This file is private to weft: core's cross-file interfaces, the
 * prototypes its files call each other by (scheduler, workers, placing
 * and picking work, pins and bound threads, fibers, blocking, timers,
 * the poller, tracing hooks), beyond what the layers above call too
 * (core_api.h, which it includes). */
#ifndef WEFT_CORE_CALLS_H
#define WEFT_CORE_CALLS_H

#include <stdio.h>

#include "core.h"
#include "core_api.h"

/* ---- cross-file interfaces ------------------------------------------------ */


/* task.c */
/* Frees p's slabs. Callable from: destroy, once no record is in use. */
void weft__task_pool_fini(weft_sched *s, weft__task_pool *p);
/* Hands p's slabs and free records to s's spares, leaving p empty: for a
 * pool whose owner leaves (unbind) while records of its slabs may be
 * queued or pooled elsewhere. Callable from: p's owner. */
void weft__task_pool_retire(weft_sched *s, weft__task_pool *p);
void weft__spares_fini(weft_sched *s);
bool weft__sched_is_idle(weft_sched *s);
/* The global ring's locked push for t, counted on w (NULL: ext_spawned),
 * then the park check with a full fence. Callable from: w's owner, or
 * any thread with w NULL. */
void weft__submit_global(weft_sched *s, weft__worker *w, weft__task *t);

/* worker_life.c */
void *weft__worker_thread(void *arg);
int  weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound);
void weft__worker_fini(weft__worker *w);
/* worker.c, ready.c, suspend.c, wait_until.c, timer.c */
/* The loop every fiber of a worker runs (worker.c): returns only on the
 * host fiber when the scheduler exits. Callable from: owner. */
void weft__worker_loop(weft__worker *w);
/* Suspends the current fiber of w until weft__ready(f). Callable
 * from: a fiber on its own worker. */
void weft__suspend(weft__worker *w);
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
/* Blocking for fiber-aware primitives on workers and on bound threads in
 * single-threaded mode (src/fiber/wait.h). */
extern const weft__host weft__core_host;
bool weft__timer_arm(weft__worker *w, weft__timer *t);   /* false: out of memory, not armed */
bool weft__timer_disarm(weft__worker *w, weft__timer *t);

/* stall.c */
/* Test seam: schedulers created from now on track blocked fibers even
 * with the watchdog off, for weft__sched_dump_all (the test harness). */
extern bool weft__stall_track_all;
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

/* poller.c */
typedef struct weft__poller weft__poller;
/* s's poller, made now if it is not yet; NULL: out of memory or of
 * descriptors. Callable from: any thread. */
weft__poller *weft__poller_get(weft_sched *s);
/* A task's fd wait on its fiber: registers fd for events (EPOLL*) until
 * deadline (0 = none) and suspends. Returns the ready events (> 0),
 * WEFT_ETIMEDOUT, WEFT_ESHUTDOWN, WEFT_EINVAL (fd not open),
 * WEFT_ENOMEM, or 0: fd cannot be polled by epoll (a regular file), the
 * caller asks poll(2). Callable from: a fiber on its own worker w. */
int  weft__poller_wait(weft__worker *w, weft__poller *p, int fd, unsigned events,
                       uint64_t deadline, const char *what, const void *obj);
/* Parking in epoll_wait (park.c, step 3d): -1 if w may not (no fd wait
 * registered, or another worker sleeps there), else it slept until
 * readiness, deadline (0 = none), or its token: 1 if fibers of w were
 * made ready, 0 otherwise. Callable from: owner, in the idle set. */
int  weft__poller_sleep(weft__worker *w, uint64_t deadline);
/* Ends the epoll_wait of the worker sleeping there. Callable from: any
 * thread. */
void weft__poller_break(weft_sched *s);
/* A look without sleeping (epoll_wait, timeout 0): readiness found makes
 * its fibers ready. Callable from: owner. */
void weft__poller_poll(weft__worker *w);
/* Every pending wait returns WEFT_ESHUTDOWN; later ones do not wait.
 * Callable from: destroy, once shutdown is set. */
void weft__poller_shutdown(weft_sched *s);
/* Frees the poller. Callable from: destroy, after the workers left. */
void weft__poller_fini(weft_sched *s);

/* Are fd waits registered (a hint: relaxed)? Inline: the loop asks it
 * every global_interval picks. */
static inline bool weft__io_waiting(weft_sched *s)
{
    return atomic_load_explicit(&s->io_waiters, memory_order_relaxed) != 0;   /* relaxed: a hint; a wait's own worker parks or polls after registering it */
}

/* io.c. Test seam: true makes weft_pid_wait_for poll as without pidfd_open. */
extern atomic_bool weft__no_pidfd;

/* blocking_pool.c. Test seam: how long an idle pool thread waits before it
 * leaves (10 s). */
extern uint64_t weft__bpool_keep_ns;
/* Waits for every call in flight on s's blocking pool, stops and joins
 * its threads, frees it. Callable from: destroy, after the workers left. */
void weft__bpool_fini(weft_sched *s);

/* park.c */
int  weft__park_init(weft_sched *s);
void weft__park_fini(weft_sched *s);
void weft__park_setup_fences(void);
/* Wakes one parked worker if none is searching (weft__notify_work's slow
 * half). */
void weft__notify_slow(weft_sched *s);
/* Wakes worker w if it is parked (after giving it a ready fiber). */
void weft__wake_worker(weft_sched *s, weft__worker *w);
void weft__wake_all(weft_sched *s);
/* Parks w until woken or until deadline (0 = none). */
void weft__park(weft__worker *w, uint64_t deadline);
/* Leave the searching state; the last searcher hands off. */
void weft__stop_searching(weft__worker *w);
bool weft__try_start_searching(weft__worker *w);

void weft__futex_wait(atomic_uint *word, unsigned val, uint64_t timeout_ns);
void weft__futex_wake(atomic_uint *word, int n);

/* Is there anything w could run now (queues, inbox, lifo slots)? Used
 * by parking to re-check after announcing idle. */
bool weft__work_visible(weft__worker *w);
/* Is a task queued anywhere (global ring, any deque or LIFO slot)? */
bool weft__work_queued(weft_sched *s);

/* config.c: a config as a scheduler takes it.
 * The CPUs this thread may run on (its affinity mask, which a cpuset or
 * taskset narrows), else the online count. Callable from: any thread. */
unsigned weft__cpu_count(void);
/* Replaces c's zeros by their defaults (workers AUTO by ncpu), checks
 * it (WEFT_EINVAL: a rule of WEFT_CONFIG_TABLE broken), then stores
 * WEFT_WORKERS_NONE and WEFT_SPIN_NONE as 0, what src/core reads, and
 * resolves the allocator. Callable from: any thread. */
int  weft__config_take(weft_config *c, unsigned ncpu);


/* pin.c: thread ids, pinned tasks, priorities, bound threads pumping. */
/* The next task pinned to w's thread, oldest first, or NULL. Callable
 * from: owner. */
weft__task *weft__take_pinned(weft__worker *w);
/* Lists w (a bound thread's worker, not listed) in s->bound[] under
 * the smallest free id >= nworkers, which it stores in w->index; O(log
 * n). WEFT_ENOMEM, nothing changed: no room could be made. Caller holds
 * bound_lock. */
int  weft__bound_add(weft_sched *s, weft__worker *w);
/* Takes w out of s->bound[] and frees its id; O(log n), allocates
 * nothing. Caller holds bound_lock. */
void weft__bound_remove(weft_sched *s, weft__worker *w);
/* Frees the tables of bound threads (destroy, nobody bound). */
void weft__bound_fini(weft_sched *s);
/* Unbind's first step: closes w's box of pinned tasks to every thread
 * but w (their pins get WEFT_EINVAL from now on). Callable from: w's
 * owner. */
void weft__bound_close(weft__worker *w);
/* Unbind's second step, after weft__bound_close: runs what is pinned to
 * w and waits for the tasks w started that are blocked, until none is
 * left. Callable from: w's owner, on its host fiber. */
void weft__bound_drain(weft__worker *w);
/* A bound thread beside workers with nothing to run sleeps until woken
 * (weft__wake_worker) or deadline (0 = none); it is never in the idle
 * set: work for any thread wakes a worker. Callable from: owner (park.c). */
void weft__bound_park(weft__worker *w, uint64_t deadline);

/* ---- inline fast paths ---------------------------------------------------- */

/* Set once, before any worker exists (park.c): the parking side uses
 * membarrier(2), so submitters need only a compiler barrier. */
extern bool weft__use_membarrier;

/* The StoreLoad half a submitter pays after publishing work and before
 * reading the parking counters; pairs with the parker's fence (park.c). */
static inline void weft__fence_submit(void)
{
    if (WEFT_LIKELY(weft__use_membarrier))
        atomic_signal_fence(memory_order_seq_cst);   /* compiler only: pairs with membarrier in fence_park */
    else
        atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with fence_park */
}

/* After publishing work: whether a parked worker must be woken (none is
 * searching and some sleep), the submitter's side of the park protocol. */
static inline bool weft__notify_check(weft_sched *s)   /* after a StoreLoad fence */
{
    return atomic_load_explicit(&s->nsearching, memory_order_relaxed) == 0 &&
           atomic_load_explicit(&s->nidle, memory_order_relaxed) != 0;
}

static inline bool weft__notify_needed(weft_sched *s)
{
    weft__fence_submit();
    return weft__notify_check(s);
}

/* After publishing work: wakes one parked worker if none is searching. */
static inline void weft__notify_work(weft_sched *s)
{
    if (weft__notify_needed(s))
        weft__notify_slow(s);
}

/* ---- fibers running short ------------------------------------------------------ */

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
 * global ring before the thread goes back to its own code (nobody else
 * may look at its deque). Callable from: owner. */
static inline bool weft__bound_runs_tasks(const weft__worker *w)
{
    return w->bound && w->s->nworkers == 0 && w->cur != &w->host;
}

/* Counts a spawn about to be queued, before its record is published:
 * on w (its owner, a plain store) or, w NULL, on the scheduler's outside
 * count (an RMW). Release: pairs with the acquire loads of the idle test
 * (task.c). */
static inline void weft__count_spawn(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w != NULL))
        __atomic_store_n(&w->spawned, w->spawned + 1, __ATOMIC_RELEASE);
    else
        atomic_fetch_add_explicit(&s->ext_spawned, 1, memory_order_release);
}

#endif /* WEFT_CORE_CALLS_H */

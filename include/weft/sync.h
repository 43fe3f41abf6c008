/*
 * weft/sync.h: Fiber-aware sync primitives: block the fiber, not the thread.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_SYNC_H
#define WEFT_PUBLIC_SYNC_H

#include "defs.h"

WEFT_BEGIN_DECLS

/* ---- fiber-aware sync: blocks the fiber, not the thread -------------
 * Usable from tasks, bound threads and plain threads alike, mixed on one
 * object: a task suspends its fiber and its worker runs other work; a
 * bound thread runs tasks while it waits (with workers = 0, every queued
 * task; beside workers, its pinned tasks and, unless bound with
 * WEFT_BIND_NO_HELP, other ready work); any other thread sleeps in the
 * kernel. Waiting allocates nothing.
 *
 * The bodies are public so they can be embedded; every field is private.
 * Initialize with _init before use; _destroy while anyone is blocked on
 * the object aborts with a message naming it. Once a wait has returned
 * WEFT_OK, the call that satisfied it (done, signal, send, unlock) no
 * longer touches the object: the waiter may destroy and free it at once
 * if nobody else still uses it.
 *
 * Timed waits (_wait_for, _recv_for, _send_for) take a relative timeout
 * in nanoseconds on CLOCK_MONOTONIC. Each wait ends exactly once: WEFT_OK
 * (notified, or the object was ready) or WEFT_ETIMEDOUT, never both and
 * never a lost notification. A timeout of 0 only polls (no wait, no fiber
 * switch), except on a condition variable, where it still releases and
 * re-takes the mutex. A wait may end later than its timeout, never
 * earlier. A task's wait (timed or not) may also return WEFT_ENOMEM at
 * once, having waited for nothing and changed nothing, when its worker
 * has no fiber to go on with and none can be mapped ("allocation");
 * a condition variable's wait then returns holding the mutex, which it
 * has released and taken again meanwhile. */

typedef struct weft_waitgroup { uint64_t private_[8]; } weft_waitgroup;
typedef struct weft_event     { uint64_t private_[8]; } weft_event;
typedef struct weft_mutex     { uint64_t private_[8]; } weft_mutex;
typedef struct weft_cond      { uint64_t private_[8]; } weft_cond;

/* Wait group: a counter; wait returns once it is zero. add(n) before
 * starting n pieces of work, done() as each ends. A total below zero is a
 * bug: debug builds (NDEBUG not defined) abort with a message naming the
 * wait group; release builds treat any total <= 0 as zero, so waiters are
 * released and later waits return at once until adds make it positive.
 * A wait group may be reused once its waiters have returned. The total
 * must stay within +-2^35 (more aborts), and at most 2^20 - 1 waiters. */
WEFT_API void weft_waitgroup_init(weft_waitgroup *wg, int64_t count);
WEFT_API void weft_waitgroup_add(weft_waitgroup *wg, int64_t delta);
WEFT_API void weft_waitgroup_done(weft_waitgroup *wg);     /* add(-1) */
WEFT_API int  weft_waitgroup_wait(weft_waitgroup *wg);
WEFT_API int  weft_waitgroup_wait_for(weft_waitgroup *wg, uint64_t timeout_ns);
WEFT_API void weft_waitgroup_destroy(weft_waitgroup *wg);

/* Event. Manual reset: signal wakes every waiter and stays set until
 * clear. Auto reset: signal wakes exactly one waiter, or, if none waits,
 * stays set until one wait consumes it. */
WEFT_API void weft_event_init(weft_event *ev, bool manual_reset, bool signalled);
WEFT_API void weft_event_signal(weft_event *ev);
WEFT_API void weft_event_clear(weft_event *ev);
WEFT_API bool weft_event_test(weft_event *ev);              /* consumes nothing */
WEFT_API int  weft_event_wait(weft_event *ev);
WEFT_API int  weft_event_wait_for(weft_event *ev, uint64_t timeout_ns);
WEFT_API void weft_event_destroy(weft_event *ev);

/* Mutex: not recursive. Under contention a locker spins briefly, then
 * sleeps in a FIFO queue; unlock wakes at most one sleeper (the oldest),
 * which then competes with running lockers. A sleeper woken and passed
 * over after waiting more than 1 ms is handed the lock directly by the
 * next unlock. Unlocking a mutex that is not locked aborts. */
WEFT_API void weft_mutex_init(weft_mutex *m);
WEFT_API void weft_mutex_lock(weft_mutex *m);
WEFT_API bool weft_mutex_trylock(weft_mutex *m);            /* true: now held */
WEFT_API void weft_mutex_unlock(weft_mutex *m);
WEFT_API void weft_mutex_destroy(weft_mutex *m);            /* must be unlocked */

/* Condition variable: wait atomically releases m (which must be held)
 * and blocks; it returns holding m again, also after WEFT_ETIMEDOUT.
 * signal wakes exactly one waiter (the oldest), broadcast every waiter
 * waiting when it is called. No spurious wake-ups, but the predicate may
 * have changed again by the time m is re-taken: wait in a loop. */
WEFT_API void weft_cond_init(weft_cond *c);
WEFT_API int  weft_cond_wait(weft_cond *c, weft_mutex *m);
WEFT_API int  weft_cond_wait_for(weft_cond *c, weft_mutex *m, uint64_t timeout_ns);
WEFT_API void weft_cond_signal(weft_cond *c);
WEFT_API void weft_cond_broadcast(weft_cond *c);
WEFT_API void weft_cond_destroy(weft_cond *c);

/* Counting semaphore: acquire takes a unit, waiting while none is left;
 * release gives one back and wakes the oldest waiter. Waiters are served
 * in FIFO order, a unit released with waiters queued goes to the oldest
 * (no barging). count from 0 to 2^62 at init (another count is a bug
 * that init, which returns nothing, reports by aborting with a message
 * naming the semaphore, as _destroy with waiters does); release past
 * 2^62 is a bug (debug builds abort). try_acquire never waits; acquire_for with
 * timeout 0 only polls. weft_task_set_semaphore (graph tasks) waits in
 * the same queue without holding a fiber; such a task that is cancelled
 * while it waits leaves the queue at once, and the waiters behind it
 * keep their order. */
typedef struct weft_sem       { uint64_t private_[8]; } weft_sem;
WEFT_API void weft_sem_init(weft_sem *s, int64_t count);
WEFT_API int  weft_sem_acquire(weft_sem *s);
WEFT_API bool weft_sem_try_acquire(weft_sem *s);                /* true: took one */
WEFT_API int  weft_sem_acquire_for(weft_sem *s, uint64_t timeout_ns);
WEFT_API void weft_sem_release(weft_sem *s);
WEFT_API void weft_sem_destroy(weft_sem *s);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_SYNC_H */

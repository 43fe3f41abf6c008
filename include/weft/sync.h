/*
 * weft/sync.h: Fiber-aware sync primitives: block the fiber, not the thread.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_SYNC_H
#define WEFT_PUBLIC_SYNC_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** @file
 * Wait groups, events, mutexes, condition variables and semaphores that
 * block the fiber, not the thread. Tasks, bound threads and plain threads
 * may use one object together: a task suspends its fiber and its worker
 * runs other work, a bound thread runs tasks while it waits, any other
 * thread sleeps in the kernel. Waiting allocates nothing. The objects are
 * caller-allocated: _init before use, _destroy once nobody is blocked.
 *
 * See docs/reference/sync.md for where a wait blocks, timeouts and their
 * races, WEFT_ENOMEM from a task's wait, destroying right after a wait,
 * and each primitive's full semantics (fairness, bounds, misuse). */

/* ---- types: bodies public only to be embedded; every field is private */

/** Wait group: a counter that waiters wait to see reach zero. */
typedef struct weft_waitgroup { uint64_t private_[8]; } weft_waitgroup;
/** Event, manual or auto reset. */
typedef struct weft_event     { uint64_t private_[8]; } weft_event;
/** Mutex, not recursive. */
typedef struct weft_mutex     { uint64_t private_[8]; } weft_mutex;
/** Condition variable, used with a weft_mutex. */
typedef struct weft_cond      { uint64_t private_[8]; } weft_cond;
/** Counting semaphore with FIFO service. */
typedef struct weft_sem       { uint64_t private_[8]; } weft_sem;

/* ---- wait group ------------------------------------------------------ */

/** Initializes wg with a total of count: add(n) before starting n pieces
 * of work, done() as each ends. The total must stay within +-2^35.
 * Callable from: any thread. */
WEFT_API void weft_waitgroup_init(weft_waitgroup *wg, int64_t count);
/** Adds delta (may be negative) to the total; reaching zero or below
 * releases every waiter. A total below zero is a bug (debug builds abort);
 * past +-2^35 aborts. Callable from: any thread. */
WEFT_API void weft_waitgroup_add(weft_waitgroup *wg, int64_t delta);
/** Same as weft_waitgroup_add(wg, -1).
 * Callable from: any thread. */
WEFT_API void weft_waitgroup_done(weft_waitgroup *wg);
/** Waits until the total is zero (at once if it is already). Returns
 * WEFT_OK, or WEFT_ENOMEM at once from a task whose worker has no fiber
 * to go on with. At most 2^20 - 1 waiters at once.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_waitgroup_wait(weft_waitgroup *wg);
/** As weft_waitgroup_wait, for at most timeout_ns (relative, monotonic;
 * 0 only polls): WEFT_OK, WEFT_ETIMEDOUT or WEFT_ENOMEM.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_waitgroup_wait_for(weft_waitgroup *wg, uint64_t timeout_ns);
/** Ends wg's life; it aborts with a message naming wg if anyone still
 * waits on it. Callable from: any thread. */
WEFT_API void weft_waitgroup_destroy(weft_waitgroup *wg);

/* ---- event ----------------------------------------------------------- */

/** Initializes ev: manual_reset true keeps it set until cleared, false
 * lets one wait consume each signal; signalled gives the first state.
 * Callable from: any thread. */
WEFT_API void weft_event_init(weft_event *ev, bool manual_reset, bool signalled);
/** Sets ev. Manual reset: wakes every waiter, stays set until cleared.
 * Auto reset: wakes exactly one waiter, or stays set until one wait
 * consumes it. Callable from: any thread. */
WEFT_API void weft_event_signal(weft_event *ev);
/** Clears ev (a no-op if not set).
 * Callable from: any thread. */
WEFT_API void weft_event_clear(weft_event *ev);
/** Returns whether ev is set, consuming nothing (also on auto reset).
 * Callable from: any thread. */
WEFT_API bool weft_event_signalled(weft_event *ev);
/** Waits until ev is set (an auto-reset event is consumed). Returns
 * WEFT_OK, or WEFT_ENOMEM at once from a task whose worker has no fiber
 * to go on with. Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_event_wait(weft_event *ev);
/** As weft_event_wait, for at most timeout_ns (relative, monotonic; 0
 * only polls): WEFT_OK, WEFT_ETIMEDOUT or WEFT_ENOMEM.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_event_wait_for(weft_event *ev, uint64_t timeout_ns);
/** Ends ev's life; it aborts with a message naming ev if anyone still
 * waits on it. Callable from: any thread. */
WEFT_API void weft_event_destroy(weft_event *ev);

/* ---- mutex ----------------------------------------------------------- */

/** Initializes m, unlocked.
 * Callable from: any thread. */
WEFT_API void weft_mutex_init(weft_mutex *m);
/** Takes m, waiting while another holds it (a short spin, then a sleep
 * in a FIFO queue). Not recursive. Never fails.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API void weft_mutex_lock(weft_mutex *m);
/** Takes m if it is free, never waiting. Returns true if m is now held
 * by the caller, false if not. Callable from: any thread. */
WEFT_API bool weft_mutex_try_lock(weft_mutex *m);
/** Releases m and wakes at most one sleeper (the oldest). Unlocking a
 * mutex that is not locked aborts. Callable from: any thread. */
WEFT_API void weft_mutex_unlock(weft_mutex *m);
/** Ends m's life; m must be unlocked with nobody waiting, else it aborts
 * with a message naming m. Callable from: any thread. */
WEFT_API void weft_mutex_destroy(weft_mutex *m);

/* ---- condition variable ---------------------------------------------- */

/** Initializes c.
 * Callable from: any thread. */
WEFT_API void weft_cond_init(weft_cond *c);
/** Wakes exactly one waiter (the oldest), if any.
 * Callable from: any thread. */
WEFT_API void weft_cond_signal(weft_cond *c);
/** Wakes every waiter waiting when it is called.
 * Callable from: any thread. */
WEFT_API void weft_cond_broadcast(weft_cond *c);
/** Atomically releases m (which the caller must hold) and waits for a
 * signal; returns holding m again. No spurious wake-ups, but wait in a
 * loop on the predicate. Returns WEFT_OK, or WEFT_ENOMEM at once from a
 * task whose worker has no fiber to go on with (m released and re-taken).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_cond_wait(weft_cond *c, weft_mutex *m);
/** As weft_cond_wait, for at most timeout_ns (relative, monotonic):
 * WEFT_OK, WEFT_ETIMEDOUT or WEFT_ENOMEM, each holding m again. A
 * timeout of 0 still releases and re-takes m.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_cond_wait_for(weft_cond *c, weft_mutex *m, uint64_t timeout_ns);
/** Ends c's life; it aborts with a message naming c if anyone still
 * waits on it. Callable from: any thread. */
WEFT_API void weft_cond_destroy(weft_cond *c);

/* ---- counting semaphore ---------------------------------------------- */

/** Initializes s with count units, from 0 to 2^62; another count is a
 * bug, reported by aborting with a message naming s.
 * Callable from: any thread. */
WEFT_API void weft_sem_init(weft_sem *s, int64_t count);
/** Takes a unit if one is free, never waiting. Returns
 * true if it took one, false if not. Callable from: any thread. */
WEFT_API bool weft_sem_try_acquire(weft_sem *s);
/** Takes a unit, waiting in FIFO order while none is left. Returns
 * WEFT_OK, or WEFT_ENOMEM at once from a task whose worker has no fiber
 * to go on with. Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_sem_acquire(weft_sem *s);
/** As weft_sem_acquire, for at most timeout_ns (relative, monotonic; 0
 * only polls): WEFT_OK, WEFT_ETIMEDOUT or WEFT_ENOMEM.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_sem_acquire_for(weft_sem *s, uint64_t timeout_ns);
/** Gives a unit back: to the oldest waiter if any queue (no barging).
 * Releasing past 2^62 units is a bug (debug builds abort).
 * Callable from: any thread. */
WEFT_API void weft_sem_release(weft_sem *s);
/** Ends s's life; it aborts with a message naming s if anyone still
 * waits on it. Callable from: any thread. */
WEFT_API void weft_sem_destroy(weft_sem *s);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_SYNC_H */

/* This file is private to weft: how fiber-aware primitives block.
 *
 * A primitive (mutex, event, channel, ...) keeps a queue of waiters under
 * its own lock. A waiter lives in the blocked caller's frame. Blocking
 * goes through the host the calling thread has installed: a worker (or a
 * bound thread in single-threaded mode) suspends the fiber and runs other
 * work; any other thread sleeps on a futex. The fiber layer does not know
 * the scheduler: core installs its host per thread (weft__host_set).
 *
 * Every wait ends exactly once, notified or timed out: the waiter's state
 * goes from PENDING to NOTIFIED or to TIMEDOUT by one compare-and-swap, and
 * only the winner of that CAS acts (the notifier wakes the waiter; the
 * timeout makes the waiter remove itself from the queue).
 */
#ifndef WEFT_WAIT_H
#define WEFT_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fiber.h"

enum {
    WEFT__WAIT_PENDING = 0,
    WEFT__WAIT_NOTIFIED = 1,
    WEFT__WAIT_TIMEDOUT = 2,
};

typedef struct weft__waiter {
    struct weft__waiter *next, *prev;  /* the primitive's queue, under its lock */
    bool queued;                       /* in the queue (under the primitive's lock) */
    atomic_uint state;                 /* PENDING -> NOTIFIED | TIMEDOUT, once; futex word */
    uint64_t deadline;                 /* CLOCK_MONOTONIC ns; 0 = none */
    weft__fiber *fiber;                /* set by the host: the suspended fiber, or NULL */
    const struct weft__host *host;     /* who wakes it; NULL = a thread on the futex */
    const void *obj;                   /* what is waited on, for stall reports */
    const char *what;                  /* "mutex", "event", ... */
    uintptr_t data;                    /* the primitive's own (channel: element pointer) */
} weft__waiter;

/* How a thread blocks. Installed per thread by the scheduler; threads with
 * no host sleep on the waiter's futex word. */
typedef struct weft__host {
    /* Blocks the calling fiber until weft__waiter_notify or the deadline.
     * unlock(lock) is called once the waiter can no longer miss its
     * wake-up and before anything else runs on this thread. On return the
     * state is NOTIFIED or TIMEDOUT. */
    void (*block)(weft__waiter *w, void (*unlock)(void *), void *lock);
    /* Makes w's fiber runnable again. Callable from: any thread. */
    void (*wake)(weft__waiter *w);
} weft__host;

/* Callable from: the thread itself. NULL removes the host. */
void weft__host_set(const weft__host *h);
const weft__host *weft__host_get(void);

/* Initializes w as PENDING with an optional absolute deadline. */
void weft__waiter_init(weft__waiter *w, const void *obj, const char *what, uint64_t deadline);

/* Queue helpers; caller holds the primitive's lock. FIFO order. */
typedef struct weft__waitq {
    weft__waiter *head, *tail;
} weft__waitq;

void weft__waitq_push(weft__waitq *q, weft__waiter *w);
void weft__waitq_remove(weft__waitq *q, weft__waiter *w);
/* A won wake-up: what is needed to wake the waiter, copied out of it
 * before the CAS (a thread waiter may return as soon as the CAS lands). */
typedef struct weft__wakeup {
    weft__waiter *w;                   /* NULL: nobody was woken */
    const struct weft__host *host;
    atomic_uint *word;
} weft__wakeup;

/* Pops the oldest waiter that is still PENDING and marks it NOTIFIED;
 * waiters found TIMEDOUT are unlinked and skipped. .w is NULL if none.
 * Before the CAS the caller may read or write the waiter (its data); after
 * it, only through weft__wakeup_fire. Caller holds the primitive's lock. */
weft__wakeup weft__waitq_take(weft__waitq *q);

/* Wakes the waiter won by weft__waitq_take; safe after dropping the
 * primitive's lock. Callable from: any thread. */
void weft__wakeup_fire(weft__wakeup t);

/* Blocks on w, which the caller has queued under `lock` (still held).
 * Releases the lock. Returns WEFT_OK when notified, WEFT_ETIMEDOUT when
 * the deadline passed first; in that case w is off the queue again
 * (weft__wait re-takes the lock with relock to unlink it) and the lock is
 * not held on return. */
int weft__wait(weft__waitq *q, weft__waiter *w,
               void (*lock_fn)(void *), void (*unlock_fn)(void *), void *lock);

/* Monotonic clock in ns. */
uint64_t weft__clock_ns(void);

#endif /* WEFT_WAIT_H */

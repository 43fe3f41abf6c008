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
 * goes from PENDING to CLAIMED (a notifier won it) or to TIMEDOUT (its
 * deadline won) by one compare-and-swap, and only the winner acts. A
 * claimed waiter cannot leave until the notifier stores NOTIFIED, so the
 * notifier may hand it data (a channel element) in between.
 */
#ifndef WEFT_WAIT_H
#define WEFT_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fiber.h"
#include "os.h"

enum {
    WEFT__WAIT_PENDING = 0,
    WEFT__WAIT_NOTIFIED = 1,
    WEFT__WAIT_TIMEDOUT = 2,
    WEFT__WAIT_CLAIMED = 3,   /* a notifier won; NOTIFIED follows */
    /* Or'ed into PENDING or CLAIMED by a hostless thread about to sleep
     * on the word (wait.c, "Spinning, then sleeping"): a claim keeps it,
     * and the release's exchange reads it to know whether a futex wake
     * is owed. Never set on a fiber's waiter. */
    WEFT__WAIT_SLEEP = 4,
};

typedef struct weft__waiter {
    struct weft__waiter *next, *prev;  /* the primitive's queue, under its lock */
    bool queued;                       /* in the queue (under the primitive's lock) */
    atomic_uint state;                 /* PENDING -> CLAIMED -> NOTIFIED, or
                                          PENDING -> TIMEDOUT; futex word */
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
    /* Blocks the calling fiber until its waiter is woken or the deadline
     * passes. unlock(lock) is called once the waiter can no longer miss
     * its wake-up and before anything else runs on this thread. On return
     * the state is NOTIFIED or TIMEDOUT, and the result WEFT_OK. Or
     * WEFT_ENOMEM, at once and with nothing done (lock still held, w
     * still queued): there is no fiber for the thread to go on with
     * while this one waits, and none can be mapped. */
    int (*block)(weft__waiter *w, void (*unlock)(void *), void *lock);
    /* Makes w's fiber runnable again. Callable from: any thread. */
    void (*wake)(weft__waiter *w);
    /* As wake, but when the caller runs on the fiber's own worker the
     * fiber runs next, ahead of other ready fibers, up to the scheduler's
     * lifo_budget times in a row (then it is an ordinary wake). NULL: use
     * wake. Callable from: any thread. */
    void (*wake_next)(weft__waiter *w);
    /* Whether the calling thread may spin on a waiter's word instead of
     * suspending: it has nothing else to run (no other ready fiber, no
     * task it could take) and spinning is configured. NULL: never. */
    bool (*may_spin)(void);
    /* Spins while *word reads expect, while the thread still has nothing
     * else to run and for at most about its scheduler's spin time;
     * returns the last value read (acquire). Called only after may_spin
     * said yes. A primitive uses it after queueing a waiter whose waker
     * writes word on a line both sides touch anyway (a channel's
     * hand-off slot): a wake from another core then costs a cache-line
     * transfer instead of a suspension, an inbox push and a resumption.
     * Callable from: the thread itself, on a fiber that may block. */
    unsigned (*spin)(const _Atomic unsigned char *word, unsigned expect);
} weft__host;

/* Callable from: the thread itself. NULL removes the host. */
void weft__host_set(const weft__host *h);

/* The calling thread's host, as weft__host_set left it; read inline by
 * weft__wait. Written by its own thread only. */
extern WEFT_TLS const weft__host *weft__tls_host;

/* Per thread, set beside its host (weft__host_set_next): a word that is
 * not NULL while the thread has a fiber lined up to run next (a worker's
 * run_next), so that weft__may_spin says no without a call in the
 * common case where it must: two fibers of one worker handing work to
 * each other block with it set every time. NULL pointer: no such word. */
extern WEFT_TLS weft__fiber *const *weft__tls_next;

/* Callable from: the thread itself. */
void weft__host_set_next(weft__fiber *const *next);

/* The calling thread's host's may_spin (see weft__host): false when it
 * has none, or has a fiber lined up next. */
static inline bool weft__may_spin(void)
{
    weft__fiber *const *next = weft__tls_next;
    if (next && *next)
        return false;
    const weft__host *h = weft__tls_host;
    return h && h->may_spin && h->may_spin();
}

static inline unsigned weft__spin_while(const _Atomic unsigned char *word, unsigned expect)
{
    return weft__tls_host->spin(word, expect);
}

/* Initializes w as PENDING with an optional absolute deadline (inline:
 * it is on every blocking path). */
static inline void weft__waiter_init(weft__waiter *w, const void *obj, const char *what,
                                     uint64_t deadline)
{
    w->next = w->prev = NULL;
    w->queued = false;
    atomic_init(&w->state, WEFT__WAIT_PENDING);
    w->deadline = deadline;
    w->fiber = NULL;
    w->host = NULL;
    w->obj = obj;
    w->what = what;
    w->data = 0;
}

/* The absolute deadline timeout_ns from now, for weft__waiter_init; 0
 * (none) when it lies beyond any representable time, as WEFT__FOREVER
 * does (without reading the clock). */
#define WEFT__FOREVER UINT64_MAX
uint64_t weft__deadline_slow(uint64_t timeout_ns);
static inline uint64_t weft__deadline(uint64_t timeout_ns)
{
    return timeout_ns >= UINT64_MAX / 2 ? 0 : weft__deadline_slow(timeout_ns);
}

/* Queue helpers; caller holds the primitive's lock. FIFO order. */
typedef struct weft__waitq {
    weft__waiter *head, *tail;
} weft__waitq;

static inline void weft__waitq_push(weft__waitq *q, weft__waiter *w)
{
    w->next = NULL;
    w->prev = q->tail;
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    w->queued = true;
}

/* Puts w first: for a waiter that was woken, lost a race and waits again
 * without losing its place. */
void weft__waitq_push_front(weft__waitq *q, weft__waiter *w);

/* Unlinks w if it is queued. */
static inline void weft__waitq_remove(weft__waitq *q, weft__waiter *w)
{
    if (!w->queued)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        q->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->tail = w->prev;
    w->next = w->prev = NULL;
    w->queued = false;
}
static inline bool weft__waitq_empty(const weft__waitq *q)
{
    return q->head == NULL;
}

/* Claims a PENDING waiter whose timeout may race us (it has a
 * deadline): false when the timeout won. A hostless waiter's SLEEP bit
 * is kept. Caller holds the primitive's lock. */
static inline bool weft__waiter_try_claim(weft__waiter *w)
{
    unsigned expect = WEFT__WAIT_PENDING;
    for (;;) {
        if (atomic_compare_exchange_strong_explicit(&w->state, &expect,
                WEFT__WAIT_CLAIMED | (expect & WEFT__WAIT_SLEEP),
                memory_order_relaxed, memory_order_relaxed))   /* relaxed: the lock orders the waiter's set-up before us; this CAS only decides the race with the timeout's CAS */
            return true;
        if ((expect & ~(unsigned)WEFT__WAIT_SLEEP) != WEFT__WAIT_PENDING)
            return false;   /* TIMEDOUT: it no longer wants a wake-up */
        /* The waiter went to sleep meanwhile: claim with its bit. */
    }
}

/* weft__waitq_claim past its inline case (wait.c): the head has a
 * deadline, so a CAS decides the race with its timeout. */
weft__waiter *weft__waitq_claim_slow(weft__waitq *q);

/* Pops the oldest waiter that is still PENDING and marks it CLAIMED;
 * waiters found TIMEDOUT are unlinked and skipped. NULL if none. Until
 * it is released (weft__wake) the caller owns the waiter: it may read
 * and write the waiter and what its data points to (the waiter cannot
 * leave). Caller holds the primitive's lock. Inline for the common
 * head, one without a deadline: nothing races its claim. */
static inline weft__waiter *weft__waitq_claim(weft__waitq *q)
{
    weft__waiter *w = q->head;
    if (!w)
        return NULL;
    if (WEFT_UNLIKELY(w->deadline != 0))
        return weft__waitq_claim_slow(q);
    q->head = w->next;
    if (w->next)
        w->next->prev = NULL;
    else
        q->tail = NULL;
    w->queued = false;   /* its links are stale now: a push sets both, claim_all sets next */
    /* No deadline, no timeout to race with: nobody else writes the state
     * while it is PENDING, so a store claims it; but a hostless thread
     * may set its SLEEP bit meanwhile, which an or keeps. */
    if (WEFT_LIKELY(w->host != NULL))
        atomic_store_explicit(&w->state, WEFT__WAIT_CLAIMED,
                              memory_order_relaxed);   /* relaxed: the lock orders the waiter's set-up before us; NOTIFIED's release store publishes the rest */
    else
        atomic_fetch_or_explicit(&w->state, WEFT__WAIT_CLAIMED,
                                 memory_order_relaxed);   /* relaxed: as the store */
    return w;
}
/* Claims every PENDING waiter in q (so: those waiting now) and returns
 * them linked through next, oldest first; *n (may be NULL) gets their
 * number. Caller holds the lock. */
weft__waiter *weft__waitq_claim_all(weft__waitq *q, unsigned *n);

/* Wakes the thread sleeping on a released thread waiter's word (which
 * may be dead by now: harmless, see wait.c). */
static inline void weft__wake_word(atomic_uint *word)
{
    weft__os_word_wake(word, 1);
}

static inline void weft__release(weft__waiter *w, bool next)
{
    const weft__host *h = w->host;      /* copied before the store */
    atomic_uint *word = &w->state;
    if (!h) {
        /* A hostless thread: one exchange, and a futex wake only if it
         * went to sleep (SLEEP); while it spins the store is the whole
         * wake-up. Release: publishes what the notifier wrote (pairs
         * with the waiter's acquire load). An RMW reads the newest value,
         * so it sees a SLEEP set before it; one set after it fails (the
         * waiter's CAS expects PENDING or CLAIMED). */
        unsigned old = atomic_exchange_explicit(word, WEFT__WAIT_NOTIFIED, memory_order_release);
        if (old & WEFT__WAIT_SLEEP)
            weft__wake_word(word);
        return;
    }
    atomic_store_explicit(&w->state, WEFT__WAIT_NOTIFIED,
                          memory_order_release);   /* release: publishes what the notifier wrote; pairs with the waiter's acquire load */
    if (next && h->wake_next)
        h->wake_next(w);                /* a suspended fiber cannot resume before this */
    else
        h->wake(w);
}

/* Releasing a claimed waiter: stores NOTIFIED, then wakes it (the host's
 * wake, or futex_wake). Call it after dropping the primitive's lock, as
 * the primitive's last access: a thread waiter may see NOTIFIED and
 * return at once, and its caller may then free the primitive. Touches
 * the waiter only until the store (a fiber's frame lives until the wake
 * anyway). Callable from: any thread. NULL does nothing. */
static inline void weft__wake(weft__waiter *w)
{
    if (w)
        weft__release(w, false);
}

/* As weft__wake through the host's wake_next: a fiber woken from its own
 * worker runs next. */
static inline void weft__wake_next(weft__waiter *w)
{
    if (w)
        weft__release(w, true);
}

/* weft__wake on each waiter of a claimed list. */
void weft__wake_list(weft__waiter *list);

/* weft__wait's two cold halves (wait.c): a hostless thread sleeps on the
 * futex; a wait that did not end NOTIFIED (so: TIMEDOUT) unlinks itself. */
void weft__block_thread(weft__waiter *w);
int weft__wait_timedout(weft__waitq *q, weft__waiter *w, unsigned state,
                        void (*lock_fn)(void *), void (*unlock_fn)(void *), void *lock);

/* Blocks on w, which the caller has queued under `lock` (still held).
 * Releases the lock. Returns WEFT_OK when notified, WEFT_ETIMEDOUT when
 * the deadline passed first; in that case w is off the queue again
 * (weft__wait re-takes the lock with lock_fn to unlink it, then calls
 * unlock_fn) and the lock is not held on return. WEFT_ENOMEM when the
 * host had no fiber to go on with: nothing waited, w is off the queue,
 * the lock released. Inline: every blocking call of every primitive
 * goes through it, and the fast path (a host, notified) is a few
 * instructions around the host's block. */
static inline int weft__wait(weft__waitq *q, weft__waiter *w,
                             void (*lock_fn)(void *), void (*unlock_fn)(void *), void *lock)
{
    const weft__host *h = weft__tls_host;
    w->host = h;   /* under the lock: a notifier reads it before its store */
    if (WEFT_LIKELY(h != NULL)) {
        if (WEFT_UNLIKELY(h->block(w, unlock_fn, lock) != WEFT_OK)) {
            weft__waitq_remove(q, w);   /* still under the lock: nobody saw it */
            unlock_fn(lock);
            return WEFT_ENOMEM;
        }
    } else {
        unlock_fn(lock);
        weft__block_thread(w);
    }
    unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);  /* acquire: pairs with the notifier's release store */
    if (WEFT_LIKELY(s == WEFT__WAIT_NOTIFIED))
        return WEFT_OK;
    return weft__wait_timedout(q, w, s, lock_fn, unlock_fn, lock);
}

/* The test seams exist only in the library the tests link
 * (WEFT_TEST_SEAMS); libweft has none. */
#ifdef WEFT_TEST_SEAMS
/* Test seam (mutex.c): when set, an unlock that owes a wake-up calls it
 * after its release of the lock word and before it posts that wake-up,
 * so a test can hold the window open. NULL outside tests; set by a test
 * before its threads start. */
extern void (*weft__mutex_unlock_pause)(void);

/* Test seam (chan.c): when set, a spinner that a peer or close has
 * popped calls it before it reads the hand-off slot, so a test can hold
 * open the window in which that peer's caller may destroy the channel. */
extern void (*weft__chan_popped_pause)(void);

/* Test seam (wait.c): when set, a hostless thread about to sleep on its
 * waiter's word calls it with phase 0 before it sets SLEEP, and with
 * phase 1 after (before the futex wait), so a test can release the
 * waiter in either window. */
extern void (*weft__wait_sleep_pause)(int phase);
#endif

/* The monotonic clock in ns: every deadline of weft is on it. */
static inline uint64_t weft__now_ns(void)
{
    return weft__os_now_ns();
}

#endif /* WEFT_WAIT_H */

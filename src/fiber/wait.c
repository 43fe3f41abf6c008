/* This file is private to weft: waiters, wait queues and the two ways of
 * blocking (a host's fiber suspension, or a futex for threads with none).
 *
 * Synchronization
 *   queue links, queued   under the primitive's lock.
 *   state                 PENDING -> CLAIMED (notifier, CAS under the
 *                         primitive's lock; a plain store when the waiter
 *                         has no deadline, as then nothing races it) ->
 *                         NOTIFIED (the same notifier, store-release), or
 *                         PENDING -> TIMEDOUT (the waiter's own timeout,
 *                         CAS). The winner of the CAS acts; the loser
 *                         backs off. Also the futex word a hostless
 *                         thread sleeps on.
 *   weft__tls_host, weft__tls_next: per thread, written by that thread
 *                         only.
 *
 * Protocol
 *   Waiter                                 Notifier
 *   1. under the lock: init, push,         1. under the lock: claim the
 *      set host (and fiber, in block)         oldest PENDING waiter by CAS
 *   2. unlock; block until state is           (TIMEDOUT ones are unlinked);
 *      NOTIFIED or TIMEDOUT                   write into it (data)
 *   3. deadline: CAS PENDING->TIMEDOUT;    2. unlock: the last access to
 *      if that fails a notifier owns us:      the primitive
 *      wait for NOTIFIED                   3. store NOTIFIED (release),
 *   4. TIMEDOUT: relock, unlink, unlock       then the host's wake, or
 *                                             futex_wake
 *
 * Lifetime: a waiter lives in the blocked frame. A notifier touches it
 * only between claiming it and storing NOTIFIED, then through what it
 * copied out before the store. The store comes after the notifier's
 * last access to the primitive, because a thread waiter may see NOTIFIED
 * and return at once (without waiting for the futex_wake), and whoever
 * it returns to may free the primitive. A fiber cannot resume before it is
 * woken (its timeout lost the CAS), so the frame is alive for the wake. A
 * thread on a futex may see NOTIFIED and return before the notifier's
 * futex_wake; that wake then names a dead address, which the kernel
 * treats as a wake of nobody (or a spurious wake-up of whoever sleeps
 * there later, which futex users re-check anyway).
 */
#include "wait.h"

WEFT_TLS const weft__host *weft__tls_host;
WEFT_TLS weft__fiber *const *weft__tls_next;

void weft__host_set(const weft__host *h)
{
    weft__tls_host = h;
}

void weft__host_set_next(weft__fiber *const *next)
{
    weft__tls_next = next;
}

uint64_t weft__deadline_slow(uint64_t timeout_ns)
{
    uint64_t now = weft__now_ns();
    /* Past about 290 years from boot, "never" is the honest answer. */
    if (timeout_ns >= UINT64_MAX / 2 - now)
        return 0;
    return now + timeout_ns;
}

void weft__waitq_push_front(weft__waitq *q, weft__waiter *w)
{
    w->prev = NULL;
    w->next = q->head;
    if (q->head)
        q->head->prev = w;
    else
        q->tail = w;
    q->head = w;
    w->queued = true;
}

weft__waiter *weft__waitq_claim_slow(weft__waitq *q)
{
    while (q->head) {
        weft__waiter *w = q->head;
        weft__waitq_remove(q, w);
        if (!w->deadline) {
            /* No deadline, no timeout to race with: nobody else writes
             * the state while it is PENDING, so a store claims it. */
            atomic_store_explicit(&w->state, WEFT__WAIT_CLAIMED,
                                  memory_order_relaxed);   /* relaxed: as for the CAS below */
            return w;
        }
        unsigned expect = WEFT__WAIT_PENDING;
        if (atomic_compare_exchange_strong_explicit(&w->state, &expect, WEFT__WAIT_CLAIMED,
                memory_order_relaxed, memory_order_relaxed))   /* relaxed: the lock orders the waiter's set-up before us; this CAS only decides the race with the timeout's CAS */
            return w;
        /* Timed out meanwhile: it no longer wants a wake-up; skip it. */
    }
    return NULL;
}

weft__waiter *weft__waitq_claim_all(weft__waitq *q, unsigned *n)
{
    weft__waiter *head = NULL, **tail = &head;
    unsigned k = 0;
    weft__waiter *w;
    while ((w = weft__waitq_claim(q)) != NULL) {
        *tail = w;                  /* the link is ours while it is claimed */
        tail = &w->next;
        k++;
    }
    *tail = NULL;
    if (n)
        *n = k;
    return head;
}

void weft__wake_list(weft__waiter *list)
{
    while (list) {
        weft__waiter *next = list->next;   /* read before the release */
        weft__wake(list);
        list = next;
    }
}

/* Hostless: sleep on the state word until it is NOTIFIED or TIMEDOUT. */
void weft__block_thread(weft__waiter *w)
{
    for (;;) {
        unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);  /* acquire: pairs with the notifier's release store */
        if (s == WEFT__WAIT_NOTIFIED || s == WEFT__WAIT_TIMEDOUT)
            return;
        if (s == WEFT__WAIT_CLAIMED) {
            /* A notifier owns us and is about to store NOTIFIED and wake
             * the word: no deadline applies any more. */
            weft__os_word_wait(&w->state, WEFT__WAIT_CLAIMED, 0);
            continue;
        }
        uint64_t rel = 0;   /* no limit */
        if (w->deadline) {
            uint64_t now = weft__now_ns();
            if (now >= w->deadline) {
                unsigned expect = WEFT__WAIT_PENDING;
                atomic_compare_exchange_strong_explicit(&w->state, &expect, WEFT__WAIT_TIMEDOUT,
                    memory_order_relaxed, memory_order_relaxed);   /* relaxed: decides the race with the claim CAS; the loop's acquire load reads the outcome */
                continue;   /* ours (TIMEDOUT), or a notifier's (CLAIMED/NOTIFIED) */
            }
            rel = w->deadline - now;
        }
        weft__os_word_wait(&w->state, WEFT__WAIT_PENDING, rel);   /* EINTR, EAGAIN, timeout: loop re-checks */
    }
}

int weft__wait_timedout(weft__waitq *q, weft__waiter *w, unsigned s,
                        void (*lock_fn)(void *), void (*unlock_fn)(void *), void *lock)
{
    if (WEFT_UNLIKELY(s != WEFT__WAIT_TIMEDOUT))
        weft__panic("wait: %s %p resumed in state %u, neither notified nor timed out",
                    w->what, w->obj, s);
    /* Timed out: no notifier claimed us; take ourselves off the queue (a
     * notifier may have skipped and unlinked us already). */
    lock_fn(lock);
    weft__waitq_remove(q, w);
    unlock_fn(lock);
    return WEFT_ETIMEDOUT;
}

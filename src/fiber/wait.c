/* This file is private to weft: waiters, wait queues and the two ways of
 * blocking (a host's fiber suspension, or a futex for threads with none).
 *
 * Synchronization
 *   queue links, queued   under the primitive's lock.
 *   state                 PENDING -> NOTIFIED (notifier, CAS acq_rel) or
 *                         PENDING -> TIMEDOUT (the waiter's own timeout,
 *                         CAS acq_rel). The winner acts; the loser backs off.
 *                         Also the futex word a hostless thread sleeps on.
 *   host                  per thread, written by that thread only.
 *
 * Lifetime: a waiter lives in the blocked frame. A notifier touches it
 * only between winning the CAS and waking it; a fiber cannot resume before
 * it is woken (its timeout lost the CAS), so the frame is alive. A thread
 * on a futex may see NOTIFIED and return before the notifier's
 * futex_wake; that wake then names a dead address, which the kernel
 * treats as a wake of nobody (or a spurious wake-up of whoever sleeps
 * there later, which futex users re-check anyway).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wait.h"

static WEFT_TLS const weft__host *host;

void weft__host_set(const weft__host *h)
{
    host = h;
}

const weft__host *weft__host_get(void)
{
    return host;
}

uint64_t weft__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void weft__waiter_init(weft__waiter *w, const void *obj, const char *what, uint64_t deadline)
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

void weft__waitq_push(weft__waitq *q, weft__waiter *w)
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

void weft__waitq_remove(weft__waitq *q, weft__waiter *w)
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

weft__wakeup weft__waitq_take(weft__waitq *q)
{
    while (q->head) {
        weft__waiter *w = q->head;
        weft__waitq_remove(q, w);
        weft__wakeup t = { w, w->host, &w->state };   /* copied before the CAS */
        unsigned expect = WEFT__WAIT_PENDING;
        if (atomic_compare_exchange_strong_explicit(&w->state, &expect, WEFT__WAIT_NOTIFIED,
                memory_order_acq_rel, memory_order_acquire))   /* acq_rel: pairs with the timeout's CAS and the waiter's acquire load */
            return t;
        /* Timed out meanwhile: it no longer wants a wake-up; skip it. */
    }
    return (weft__wakeup){ NULL, NULL, NULL };
}

static void futex_wait(atomic_uint *word, unsigned val, const struct timespec *rel)
{
    syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, val, rel, NULL, 0);
}

void weft__wakeup_fire(weft__wakeup t)
{
    if (!t.w)
        return;
    if (t.host)
        t.host->wake(t.w);   /* a suspended fiber cannot resume before this */
    else
        syscall(SYS_futex, (void *)t.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Hostless: sleep on the state word until it leaves PENDING or the
 * deadline passes. */
static void block_thread(weft__waiter *w)
{
    for (;;) {
        if (atomic_load_explicit(&w->state, memory_order_acquire) != WEFT__WAIT_PENDING)  /* acquire: pairs with the CASes */
            return;
        struct timespec rel, *rp = NULL;
        if (w->deadline) {
            uint64_t now = weft__clock_ns();
            if (now >= w->deadline) {
                unsigned expect = WEFT__WAIT_PENDING;
                atomic_compare_exchange_strong_explicit(&w->state, &expect, WEFT__WAIT_TIMEDOUT,
                    memory_order_acq_rel, memory_order_acquire);   /* pairs with the notifier's CAS */
                return;   /* either ours (TIMEDOUT) or the notifier's (NOTIFIED) */
            }
            uint64_t d = w->deadline - now;
            rel.tv_sec = (time_t)(d / 1000000000u);
            rel.tv_nsec = (long)(d % 1000000000u);
            rp = &rel;
        }
        futex_wait(&w->state, WEFT__WAIT_PENDING, rp);   /* EINTR, EAGAIN, timeout: loop re-checks */
    }
}

int weft__wait(weft__waitq *q, weft__waiter *w,
               void (*lock_fn)(void *), void (*unlock_fn)(void *), void *lock)
{
    const weft__host *h = host;
    w->host = h;   /* under the lock: a notifier reads it before its CAS */
    if (h) {
        h->block(w, unlock_fn, lock);
    } else {
        unlock_fn(lock);
        block_thread(w);
    }
    if (atomic_load_explicit(&w->state, memory_order_acquire) == WEFT__WAIT_NOTIFIED)  /* acquire: pairs with the notifier's CAS */
        return WEFT_OK;
    /* Timed out: the notifier never saw us win; take ourselves off the
     * queue (it may have skipped and unlinked us already). */
    lock_fn(lock);
    weft__waitq_remove(q, w);
    unlock_fn(lock);
    return WEFT_ETIMEDOUT;
}

/* This file is private to weft: wait groups and events, the two
 * primitives that are a flag or a counter plus a wait queue.
 *
 * Synchronization
 *   wait group
 *     count    the outstanding total. Changed by weft_waitgroup_add with
 *              fetch_add (acq_rel) from any thread, without the lock;
 *              read by waiters (acquire), first without the lock, then
 *              under it.
 *     q        waiters, under lock.
 *   event
 *     signalled  0 or 1. Set (release) by signal under lock; consumed by
 *              an auto-reset waiter with CAS 1 -> 0 (acquire), with or
 *              without the lock; cleared by clear (relaxed); read by test
 *              and manual-reset waiters (acquire).
 *     manual   set at init, read-only after.
 *     q        waiters, under lock.
 *
 * Protocol (wait group; the event's is the same with signalled for
 * count <= 0)
 *   Waiter                             Adder taking count to <= 0
 *   1. count <= 0? return              1. fetch_add: count <= 0 now
 *   2. lock; count <= 0? unlock,       2. lock; wake every waiter queued
 *      return                             so far (weft__waitq_wake_all,
 *   3. queue; unlock and block            tickets: not later ones)
 *   The waiter's check in 2 and its queueing happen under the lock the
 *   adder takes after step 1, so either the waiter sees the new count or
 *   the adder sees the waiter: no lost wake-up. Tickets keep a wake-up
 *   from reaching a waiter that arrived after the count rose again.
 */
#include <stdatomic.h>

#include "spin.h"
#include "wait.h"

/* ---- wait group ---------------------------------------------------------- */

typedef struct wg_impl {
    _Atomic int64_t count;
    weft__spin lock;
    weft__waitq q;
} wg_impl;

_Static_assert(sizeof(wg_impl) <= sizeof(weft_waitgroup), "wait group fits its public body");
_Static_assert(_Alignof(wg_impl) <= _Alignof(weft_waitgroup), "wait group alignment");

static inline wg_impl *wg_of(weft_waitgroup *p)
{
    return (wg_impl *)(void *)p->private_;
}

void weft_waitgroup_init(weft_waitgroup *p, int64_t count)
{
    wg_impl *g = wg_of(p);
    atomic_init(&g->count, count);
    weft__spin_init(&g->lock);
    g->q = (weft__waitq){ 0 };
}

void weft_waitgroup_add(weft_waitgroup *p, int64_t delta)
{
    wg_impl *g = wg_of(p);
    int64_t old = atomic_fetch_add_explicit(&g->count, delta,
                                            memory_order_acq_rel);   /* acq_rel: each adder's work is released to the one that reaches zero, which releases it on to the waiters (acquire in wait) */
    int64_t now = old + delta;
#ifdef WEFT_DEBUG
    if (WEFT_UNLIKELY(now < 0))
        weft__panic("waitgroup_add: wait group %p went negative (%lld %+lld = %lld)",
                    (void *)p, (long long)old, (long long)delta, (long long)now);
#endif
    /* Release builds: a total below zero counts as zero (documented). */
    if (old > 0 && now <= 0) {
        weft__spin_lock(&g->lock);
        weft__waitq_wake_all(&g->q, NULL, NULL, weft__spin_lock_fn, weft__spin_unlock_fn, &g->lock);
    }
}

void weft_waitgroup_done(weft_waitgroup *p)
{
    weft_waitgroup_add(p, -1);
}

/* timeout_ns: 0 polls; WEFT__FOREVER waits without a deadline. */
static int wg_wait(weft_waitgroup *p, uint64_t timeout_ns)
{
    wg_impl *g = wg_of(p);
    if (atomic_load_explicit(&g->count, memory_order_acquire) <= 0)   /* acquire: pairs with the adders' acq_rel */
        return WEFT_OK;
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    weft__waiter w;
    weft__waiter_init(&w, p, "wait group", weft__deadline(timeout_ns));
    weft__spin_lock(&g->lock);
    if (atomic_load_explicit(&g->count, memory_order_acquire) <= 0) {   /* acquire: as above */
        weft__spin_unlock(&g->lock);
        return WEFT_OK;
    }
    weft__waitq_push(&g->q, &w);
    return weft__wait(&g->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &g->lock);
}

int weft_waitgroup_wait(weft_waitgroup *p)
{
    return wg_wait(p, WEFT__FOREVER);
}

int weft_waitgroup_wait_for(weft_waitgroup *p, uint64_t timeout_ns)
{
    return wg_wait(p, timeout_ns);
}

void weft_waitgroup_destroy(weft_waitgroup *p)
{
    wg_impl *g = wg_of(p);
    weft__spin_lock(&g->lock);
    bool waiting = !weft__waitq_empty(&g->q);
    weft__spin_unlock(&g->lock);
    if (WEFT_UNLIKELY(waiting))
        weft__panic("waitgroup_destroy: wait group %p destroyed while tasks or threads wait on it "
                    "(count %lld)", (void *)p, (long long)atomic_load(&g->count));
}

/* ---- event ----------------------------------------------------------------- */

typedef struct ev_impl {
    atomic_uint signalled;
    weft__spin lock;
    bool manual;
    weft__waitq q;
} ev_impl;

_Static_assert(sizeof(ev_impl) <= sizeof(weft_event), "event fits its public body");
_Static_assert(_Alignof(ev_impl) <= _Alignof(weft_event), "event alignment");

static inline ev_impl *ev_of(weft_event *p)
{
    return (ev_impl *)(void *)p->private_;
}

void weft_event_init(weft_event *p, bool manual_reset, bool signalled)
{
    ev_impl *e = ev_of(p);
    atomic_init(&e->signalled, signalled ? 1u : 0u);
    weft__spin_init(&e->lock);
    e->manual = manual_reset;
    e->q = (weft__waitq){ 0 };
}

void weft_event_signal(weft_event *p)
{
    ev_impl *e = ev_of(p);
    weft__spin_lock(&e->lock);
    if (e->manual) {
        atomic_store_explicit(&e->signalled, 1, memory_order_release);   /* release: pairs with the waiters' acquire */
        weft__waitq_wake_all(&e->q, NULL, NULL, weft__spin_lock_fn, weft__spin_unlock_fn, &e->lock);
        return;
    }
    /* Auto-reset: a waiter takes the signal, or it stays set for the next. */
    weft__wakeup t = weft__waitq_take(&e->q);
    if (!t.w)
        atomic_store_explicit(&e->signalled, 1, memory_order_release);   /* release: pairs with the CAS in ev_consume */
    weft__spin_unlock(&e->lock);
    weft__wakeup_fire(t);
}

void weft_event_clear(weft_event *p)
{
    atomic_store_explicit(&ev_of(p)->signalled, 0, memory_order_relaxed);   /* relaxed: clearing publishes nothing */
}

bool weft_event_test(weft_event *p)
{
    return atomic_load_explicit(&ev_of(p)->signalled, memory_order_acquire) != 0;   /* acquire: pairs with the release in signal */
}

/* Takes the signal if it is set: a manual-reset event keeps it. */
static bool ev_consume(ev_impl *e)
{
    if (e->manual)
        return atomic_load_explicit(&e->signalled, memory_order_acquire) != 0;   /* acquire: pairs with the release in signal */
    unsigned one = 1;
    return atomic_load_explicit(&e->signalled, memory_order_relaxed) == 1 &&
           atomic_compare_exchange_strong_explicit(&e->signalled, &one, 0,
               memory_order_acquire, memory_order_relaxed);   /* acquire: pairs with the release in signal */
}

static int ev_wait(weft_event *p, uint64_t timeout_ns)
{
    ev_impl *e = ev_of(p);
    if (ev_consume(e))
        return WEFT_OK;
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    weft__waiter w;
    weft__waiter_init(&w, p, "event", weft__deadline(timeout_ns));
    weft__spin_lock(&e->lock);
    if (ev_consume(e)) {
        weft__spin_unlock(&e->lock);
        return WEFT_OK;
    }
    weft__waitq_push(&e->q, &w);
    return weft__wait(&e->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &e->lock);
}

int weft_event_wait(weft_event *p)
{
    return ev_wait(p, WEFT__FOREVER);
}

int weft_event_wait_for(weft_event *p, uint64_t timeout_ns)
{
    return ev_wait(p, timeout_ns);
}

void weft_event_destroy(weft_event *p)
{
    ev_impl *e = ev_of(p);
    weft__spin_lock(&e->lock);
    bool waiting = !weft__waitq_empty(&e->q);
    weft__spin_unlock(&e->lock);
    if (WEFT_UNLIKELY(waiting))
        weft__panic("event_destroy: event %p destroyed while tasks or threads wait on it", (void *)p);
}

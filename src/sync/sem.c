/* This file is private to weft: the counting semaphore (weft_sem).
 *
 * A count of free units and a FIFO of waiters. Two kinds of waiter share
 * the FIFO: weft__waiters of threads and fibers blocked in acquire (a
 * weft__waitq, as the other primitives keep), and records that hold no
 * fiber (weft__sem_rec, sem.h: graph tasks). Each waiter draws a ticket
 * under the lock as it queues; a release hands its unit to the queued
 * waiter with the smallest ticket, whichever queue it is in.
 *
 * No barging: while anyone is queued the count is 0 and a release does
 * not add to it; it hands its unit straight to the oldest waiter. So a
 * unit never goes to a newcomer while an older waiter waits, and an
 * uncontended acquire or release is one CAS on the state word.
 *
 * Synchronization
 *   state    count << 1 | WAITERS. Every change is an atomic RMW.
 *            WAITERS is set and cleared under lock only, and while it is
 *            set the count is 0: an acquire sets it (with its CAS) only
 *            when the count is 0 or someone is queued, and a release that
 *            sees it adds nothing to the count (it goes to the lock). So
 *            WAITERS => count == 0.
 *            Acquire's CAS count - 1 (acquire) pairs with the release CAS
 *            count + 1 (release) of the unit it takes; RMWs extend
 *            release sequences, so it also sees every earlier release.
 *            A unit handed over carries the releaser's work through the
 *            waiter's NOTIFIED store (release; wait.h), or for a record
 *            through grant's queueing of its task (core's queues).
 *   q        fiber/thread waiters, under lock; a waiter's ticket is in
 *            its data field.
 *   rhead, rtail  record waiters (doubly linked, so that one can be
 *            withdrawn from the middle), under lock; a record's `queued`
 *            too.
 *   ticket   the next ticket, under lock.
 *   tag      written by init and destroy only.
 *
 * Protocol
 *   Acquire                                Release
 *   1. CAS count - 1 if count > 0           1. CAS count + 1 if !WAITERS:
 *      (so !WAITERS): done.                    done; that CAS was its last
 *   2. lock; CAS: count - 1 if count > 0       access.
 *      and nobody is queued (unlock, done);  2. WAITERS: lock; unlink the
 *      else set WAITERS (count is 0, or        oldest waiter by ticket; a
 *      an older waiter is queued).             timed-out one is skipped (its
 *   3. take a ticket; queue; unlock; block     timeout won the CAS on its
 *      (weft__wait). A record returns false    state). Found: unlock, then
 *      here; grant is its wake-up.             wake it (or call grant). The
 *   4. timed out (or ENOMEM): relock,          unit is its: the count never
 *      unlink; the unlock clears WAITERS       held it.
 *      if both queues are empty.             3. Both queues empty (the
 *                                               waiters timed out): clear
 *                                               WAITERS, unlock, go to 1.
 *   The waiter's CAS that sets WAITERS and the releaser's CAS that adds a
 *   unit are on one word: either the release sees WAITERS and comes to
 *   the lock (where the waiter is queued before it unlocks), or the
 *   waiter's CAS sees the unit and takes it. No lost wake-up.
 *
 *   A record's wait can end without a unit (its graph task was
 *   cancelled): weft__sem_withdraw unlinks it under the lock if it is
 *   still queued; step 2 of release unlinks under the same lock, so
 *   exactly one of them takes it, and a withdrawn record was handed
 *   nothing (the count never held a unit for it). The unlock clears
 *   WAITERS if both queues are then empty. Before a record queues (step
 *   3) its drop callback is asked under the lock: the owner's cancel,
 *   which marks the task and then withdraws, either finds the record
 *   queued or is seen by drop (attr.c, "Ending a wait").
 *
 * Lifetime: once an acquire has returned WEFT_OK the release that gave
 * it the unit no longer touches the semaphore. A unit in the count was
 * put there by a release's CAS, its last access; a unit handed over was
 * never in the count, and its releaser unlocks before it wakes the
 * waiter (or calls grant, which does not touch the semaphore).
 */
#include <stdatomic.h>

#include "sem.h"
#include "spin.h"
#include "wait.h"

/* Life tag (base.h's scheme; the kinds there are the older primitives'). */
#define SEM_TAG 0x73650001u

#define SEM_WAITERS ((uint64_t)1)
#define SEM_UNIT    ((uint64_t)2)            /* count << 1 */
#define SEM_MAX     ((uint64_t)1 << 62)      /* the documented limit of the count */

typedef struct sem_impl {
    _Atomic uint64_t state;
    weft__spin lock;
    uint32_t tag;               /* SEM_TAG while alive */
    uint64_t ticket;            /* under lock */
    weft__waitq q;              /* under lock; data = ticket */
    weft__sem_rec *rhead, *rtail;   /* under lock */
} sem_impl;

_Static_assert(sizeof(sem_impl) <= sizeof(weft_sem), "semaphore fits its public body");
_Static_assert(_Alignof(sem_impl) <= _Alignof(weft_sem), "semaphore alignment");

static inline sem_impl *sem_of(weft_sem *p)
{
    return (sem_impl *)(void *)p->private_;
}

static inline bool sem_queued(const sem_impl *m)
{
    return m->q.head != NULL || m->rhead != NULL;
}

/* weft__wait's lock adapters. The unlock clears WAITERS once both queues
 * are empty: after a waiter that timed out (or had no fiber, ENOMEM) has
 * unlinked itself. While a waiter blocks it is queued, so then it does
 * nothing. The count is 0 while WAITERS is set, so clearing it makes no
 * unit visible: relaxed. */
static void sem_lock_fn(void *p)
{
    weft__spin_lock(&((sem_impl *)p)->lock);
}

static void sem_unlock_fn(void *p)
{
    sem_impl *m = p;
    if (!sem_queued(m) && (atomic_load_explicit(&m->state, memory_order_relaxed) & SEM_WAITERS))   /* under lock: only the lock holder changes WAITERS */
        atomic_fetch_and_explicit(&m->state, ~SEM_WAITERS, memory_order_relaxed);   /* relaxed: count is 0; nothing to publish */
    weft__spin_unlock(&m->lock);
}

void weft_sem_init(weft_sem *p, int64_t count)
{
    if (count < 0 || (uint64_t)count > SEM_MAX)
        weft__panic("sem_init: semaphore %p: count %lld out of range (0 to 2^62)",
                    (void *)p, (long long)count);
    sem_impl *m = sem_of(p);
    atomic_init(&m->state, (uint64_t)count * SEM_UNIT);
    weft__spin_init(&m->lock);
    m->tag = SEM_TAG;
    m->ticket = 0;
    m->q = (weft__waitq){ 0 };
    m->rhead = m->rtail = NULL;
}

/* Step 1 of acquire: takes a unit if the count has one (then nobody is
 * queued). */
static inline bool sem_try(sem_impl *m)
{
    uint64_t v = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS decides */
    while (v >= SEM_UNIT) {
        if (atomic_compare_exchange_weak_explicit(&m->state, &v, v - SEM_UNIT,
                memory_order_acquire, memory_order_relaxed))   /* acquire: pairs with the release CAS that added the unit */
            return true;
    }
    return false;
}

/* Step 2, under lock: takes a unit (true) if the count has one and nobody
 * is queued, else sets WAITERS (false): the caller queues. */
static bool sem_take_or_mark(sem_impl *m)
{
    uint64_t v = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS decides */
    for (;;) {
        bool take = v >= SEM_UNIT && !sem_queued(m);
        uint64_t nv = take ? v - SEM_UNIT : v | SEM_WAITERS;
        if (atomic_compare_exchange_weak_explicit(&m->state, &v, nv,
                memory_order_acquire, memory_order_relaxed))   /* acquire: as in sem_try; setting WAITERS orders nothing */
            return take;
    }
}

/* Step 3's place in line. Caller holds the lock. */
static inline uint64_t sem_ticket(sem_impl *m)
{
    return m->ticket++;
}

bool weft_sem_try_acquire(weft_sem *p)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_try_acquire", "semaphore", p);
    return sem_try(m);
}

/* timeout_ns: 0 polls; WEFT__FOREVER waits without a deadline. */
static int sem_acquire(weft_sem *p, uint64_t timeout_ns, const char *call)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, call, "semaphore", p);
    if (WEFT_LIKELY(sem_try(m)))
        return WEFT_OK;
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    weft__waiter w;
    weft__waiter_init(&w, p, "semaphore", weft__deadline(timeout_ns));
    weft__spin_lock(&m->lock);
    if (sem_take_or_mark(m)) {
        weft__spin_unlock(&m->lock);
        return WEFT_OK;
    }
    w.data = sem_ticket(m);
    weft__waitq_push(&m->q, &w);
    /* OK: a release handed us its unit. ETIMEDOUT or ENOMEM: unlinked
     * again, nothing taken, and sem_unlock_fn cleared WAITERS if we were
     * the last. */
    return weft__wait(&m->q, &w, sem_lock_fn, sem_unlock_fn, m);
}

int weft_sem_acquire(weft_sem *p)
{
    return sem_acquire(p, WEFT__FOREVER, "sem_acquire");
}

int weft_sem_acquire_for(weft_sem *p, uint64_t timeout_ns)
{
    return sem_acquire(p, timeout_ns, "sem_acquire_for");
}

weft__sem_took weft__sem_take_or_queue(weft_sem *p, weft__sem_rec *r)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_take_or_queue", "semaphore", p);
    if (sem_try(m))
        return WEFT__SEM_TAKEN;
    weft__spin_lock(&m->lock);
    if (sem_take_or_mark(m)) {
        weft__spin_unlock(&m->lock);
        return WEFT__SEM_TAKEN;
    }
    if (r->drop && r->drop(r)) {
        sem_unlock_fn(m);   /* WAITERS was set for us: cleared if nobody else is queued */
        return WEFT__SEM_DROPPED;
    }
    r->ticket = sem_ticket(m);
    r->next = NULL;
    r->prev = m->rtail;
    r->queued = true;
    if (m->rtail)
        m->rtail->next = r;
    else
        m->rhead = r;
    m->rtail = r;
    weft__spin_unlock(&m->lock);
    return WEFT__SEM_QUEUED;
}

/* Unlinks a queued record. Caller holds the lock. */
static void sem_rec_unlink(sem_impl *m, weft__sem_rec *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        m->rhead = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else
        m->rtail = r->prev;
    r->next = r->prev = NULL;
    r->queued = false;
}

bool weft__sem_withdraw(weft_sem *p, weft__sem_rec *r)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_withdraw", "semaphore", p);
    weft__spin_lock(&m->lock);
    bool was = r->queued;
    if (was)
        sem_rec_unlink(m, r);
    sem_unlock_fn(m);   /* clears WAITERS if nobody is left: the count stays 0, no unit was r's */
    return was;
}

/* Claims a waiter unlinked from q: false if its timeout won the race
 * (weft__waitq_claim's CAS, made here because the oldest waiter must be
 * chosen across both queues first). Caller holds the lock. */
static bool sem_claim(weft__waiter *w)
{
    return weft__waiter_try_claim(w);   /* keeps a sleeping thread's SLEEP bit (wait.h) */
}

/* Step 2 of release, under lock: hands the unit to the oldest waiter.
 * true: *wo (a claimed waiter) or *ro (a record) got it; false: nobody
 * waits (WAITERS was stale: the waiters timed out). */
static bool sem_hand(sem_impl *m, weft__waiter **wo, weft__sem_rec **ro)
{
    for (;;) {
        weft__waiter *w = m->q.head;
        weft__sem_rec *r = m->rhead;
        if (w && (!r || w->data < r->ticket)) {
            weft__waitq_remove(&m->q, w);
            if (sem_claim(w)) {
                *wo = w;
                return true;
            }
            continue;   /* timed out: it unlinks itself again (a no-op) and leaves */
        }
        if (!r)
            return false;
        sem_rec_unlink(m, r);
        *ro = r;
        return true;
    }
}

/* The release past step 1: WAITERS was set. */
static __attribute__((noinline)) void sem_release_slow(weft_sem *p, sem_impl *m)
{
    for (;;) {
        weft__waiter *w = NULL;
        weft__sem_rec *r = NULL;
        weft__spin_lock(&m->lock);
        bool handed = sem_hand(m, &w, &r);
        sem_unlock_fn(m);   /* clears WAITERS if nobody is left */
        if (handed) {
            /* The unlock was our last access to the semaphore. */
            if (w)
                weft__wake(w);
            else
                r->grant(r);
            return;
        }
        /* Nobody to hand it to: step 1 again (a newcomer may have set
         * WAITERS meanwhile; then it gets the unit). */
        uint64_t v = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS decides */
        while (!(v & SEM_WAITERS)) {
            if (atomic_compare_exchange_weak_explicit(&m->state, &v, v + SEM_UNIT,
                    memory_order_release, memory_order_relaxed))   /* release: publishes the holder's work; pairs with acquire in sem_try / sem_take_or_mark */
                return;
        }
    }
}

void weft_sem_release(weft_sem *p)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_release", "semaphore", p);
    uint64_t v = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS decides */
    while (!(v & SEM_WAITERS)) {
#ifdef WEFT_DEBUG
        if (WEFT_UNLIKELY(v / SEM_UNIT >= SEM_MAX))
            weft__panic("sem_release: semaphore %p: count past 2^62 (more releases than acquires?)",
                        (void *)p);
#endif
        if (atomic_compare_exchange_weak_explicit(&m->state, &v, v + SEM_UNIT,
                memory_order_release, memory_order_relaxed))   /* release: publishes the holder's work; pairs with acquire in sem_try / sem_take_or_mark */
            return;   /* our last access */
    }
    sem_release_slow(p, m);
}

#ifdef WEFT_TEST_SEAMS
size_t weft__sem_waiting(weft_sem *p)
{
    sem_impl *m = sem_of(p);
    size_t n = 0;
    weft__spin_lock(&m->lock);
    for (weft__waiter *w = m->q.head; w; w = w->next)
        n++;
    for (weft__sem_rec *r = m->rhead; r; r = r->next)
        n++;
    weft__spin_unlock(&m->lock);
    return n;
}
#endif

void weft_sem_destroy(weft_sem *p)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_destroy", "semaphore", p);
    uint64_t v = atomic_load_explicit(&m->state, memory_order_acquire);   /* acquire: a misuse check */
    weft__spin_lock(&m->lock);
    bool waiting = (v & SEM_WAITERS) || sem_queued(m);
    weft__spin_unlock(&m->lock);
    if (WEFT_UNLIKELY(waiting))
        weft__panic("sem_destroy: semaphore %p destroyed while tasks or threads wait on it", (void *)p);
    m->tag = WEFT__TAG_DEAD;
}

#ifdef WEFT_TEST_SEAMS
/* A test seam (sem.h): how many waiters have queued on s since its init,
 * read under the lock that queues them. */
uint64_t weft__sem_tickets(weft_sem *p)
{
    sem_impl *m = sem_of(p);
    WEFT__CHECK_TAG(m->tag, SEM_TAG, "sem_tickets", "semaphore", p);
    weft__spin_lock(&m->lock);
    uint64_t n = m->ticket;
    weft__spin_unlock(&m->lock);
    return n;
}
#endif

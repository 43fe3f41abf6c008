/* This file is private to weft: the fiber-aware mutex and the condition
 * variable that waits on it.
 *
 * The mutex follows the design of Go's sync.Mutex: a lock word with a
 * waiter count, a short spin, and two modes. In normal mode a woken
 * waiter competes with running callers for the lock, which keeps a
 * contended lock moving at the speed of whoever runs (a fiber that just
 * unlocked can lock again without a switch). A woken waiter that loses
 * the race after waiting longer than WEFT__STARVE_NS turns on starvation
 * mode and sleeps again at the head of the queue: the next unlock hands
 * the lock straight to it (newcomers meanwhile queue without spinning),
 * and it turns the mode off as it takes the lock. At most one woken
 * waiter is on its way at any time (WOKEN), so an unlock never wakes a
 * herd.
 *
 * Where this departs from Go: Go stays in starvation mode while the new
 * owner itself waited over 1 ms and others wait, so every lock goes
 * through a hand-off until the queue drains. That is cheap when the
 * next waiter can run at once; here it often sits on another worker,
 * asleep, and a hand-off costs a thread wake-up (5-100 us on a VM,
 * more with more workers than cores). A hand-off that slow makes every
 * waiter behind it wait over 1 ms too, so the mode never ended: with 64
 * workers on 2 cores, 64 x 20000 increments took 0.2-94 s instead of
 * 30 ms, one wake-up per increment (Go has the same collapse under
 * heavy contention, golang/go#33747). One hand-off per starved waiter
 * keeps the guarantee that matters: a waiter woken and passed over
 * after 1 ms gets the lock at the next unlock; lockers run in normal
 * mode in between.
 *
 * Synchronization
 *   mutex
 *     state   LOCKED | WOKEN | STARVING | waiters << WAITER_SHIFT. Every
 *             change is an atomic RMW by a locker or unlocker; see below.
 *             LOCKED is set by the CAS that acquires (acquire) and cleared
 *             by unlock's CAS (release): the pair that carries the
 *             critical section from one owner to the next. In starvation
 *             mode unlock clears LOCKED but STARVING keeps everyone else
 *             out; the new owner is told through the wait queue (the
 *             waiter's state word, release/acquire) and sets LOCKED
 *             itself.
 *     sema, q wake-ups granted and not yet consumed, and the sleepers:
 *             under lock (a semaphore: release before acquire is kept).
 *   condition variable
 *     q       waiters, under lock. signal claims the oldest, broadcast all
 *             of them (those waiting at the call: the lock keeps others
 *             out), and both release them after dropping the lock.
 *
 * Protocol (mutex)
 *   Lock                                     Unlock
 *   1. CAS 0 -> LOCKED: done.                1. CAS LOCKED -> 0: done.
 *   2. Spin a few rounds while LOCKED and    2. One CAS: clear LOCKED, and
 *      not STARVING; a spinner sets WOKEN       in normal mode, if waiters
 *      so unlock wakes nobody meanwhile.        and neither WOKEN nor
 *   3. CAS in one step: LOCKED (unless          STARVING, also waiters-1
 *      STARVING), waiters+1 if we will          and WOKEN: the wake-up is
 *      sleep, STARVING if we starve, WOKEN      ours to post. (LOCKED not
 *      cleared if we set it or were woken.      set: panic, nothing
 *      If the old word had neither LOCKED       changed.)
 *      nor STARVING, we own it.              3. Claimed a wake-up: post the
 *   4. Sleep on the semaphore (a re-sleep       semaphore (wakes one
 *      goes first in the queue: it keeps        sleeper). STARVING: post
 *      its place).                              it as a hand-off: the
 *   5. Woken: if STARVING, we were handed       oldest sleeper owns the
 *      the lock: add LOCKED, drop our           lock.
 *      waiter count, and leave starvation
 *      mode. Else go to 2 as the WOKEN waiter.
 *   Unlock releases the lock and claims the wake-up in the same CAS:
 *   once LOCKED is clear another caller may lock, unlock and, as the
 *   last user, destroy and free the mutex (lock; --refs; unlock;
 *   destroy), so after its release an unlock may touch the mutex only
 *   while it owes a post that a sleeping lock call needs (see
 *   unlock_slow). A release first and a claim after it, as two steps,
 *   touched freed memory in that pattern.
 *
 * Protocol (condition variable wait)
 *   1. lock q; queue the waiter; unlock q, then the mutex: a
 *      signal after the mutex is released finds the waiter queued.
 *   2. block until notified or the deadline (the timeout's CAS decides).
 *   3. lock the mutex again, in both cases, then return.
 */
#include <stdatomic.h>

#include "spin.h"
#include "wait.h"

/* ---- mutex ------------------------------------------------------------------ */

enum {
    M_LOCKED = 1u,
    M_WOKEN = 2u,
    M_STARVING = 4u,
    M_WAITER_SHIFT = 3,
};
#define M_WAITER (1u << M_WAITER_SHIFT)

/* A waiter that waited this long turns on hand-off (Go uses 1 ms). */
#define WEFT__STARVE_NS 1000000u
/* Spin before sleeping: rounds of pauses. Short on purpose: on one worker
 * the owner cannot run while we spin, and a plain-thread owner may be
 * preempted. */
#define WEFT__SPIN_ROUNDS 4
#define WEFT__SPIN_PAUSES 30

typedef struct mutex_impl {
    atomic_uint state;
    weft__spin lock;          /* guards sema and q */
    uint32_t tag;             /* WEFT__TAG_MUTEX while alive */
    unsigned sema;
    weft__waitq q;
} mutex_impl;

_Static_assert(sizeof(mutex_impl) <= sizeof(weft_mutex), "mutex fits its public body");
_Static_assert(_Alignof(mutex_impl) <= _Alignof(weft_mutex), "mutex alignment");

static inline mutex_impl *mutex_of(weft_mutex *p)
{
    return (mutex_impl *)(void *)p->private_;
}

void weft_mutex_init(weft_mutex *p)
{
    mutex_impl *m = mutex_of(p);
    atomic_init(&m->state, 0);
    weft__spin_init(&m->lock);
    m->tag = WEFT__TAG_MUTEX;
    m->sema = 0;
    m->q = (weft__waitq){ 0 };
}

/* Sleeps until sema_post grants a wake-up. first: queue at the head. */
static void sema_wait(mutex_impl *m, weft_mutex *p, bool first)
{
    for (;;) {
        weft__spin_lock(&m->lock);
        if (m->sema > 0) {
            m->sema--;
            weft__spin_unlock(&m->lock);
            return;
        }
        weft__waiter w;
        weft__waiter_init(&w, p, "mutex", 0);
        if (first)
            weft__waitq_push_front(&m->q, &w);
        else
            weft__waitq_push(&m->q, &w);
        /* No deadline: OK, or ENOMEM when a task's worker has no fiber to
         * go on with (none can be mapped). A lock cannot fail: the thread
         * then sleeps a moment in the kernel and queues again. */
        if (weft__wait(&m->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &m->lock) == WEFT_OK)
            return;
        weft__os_sleep_ns(WEFT__RETRY_NS);
    }
}

/* Grants one wake-up: to the oldest sleeper, or kept for the next. */
static void sema_post(mutex_impl *m, bool handoff)
{
    weft__spin_lock(&m->lock);
    weft__waiter *w = weft__waitq_claim(&m->q);
    if (!w)
        m->sema++;
    weft__spin_unlock(&m->lock);
    if (handoff)
        weft__wake_next(w);   /* the new owner runs next on our worker */
    else
        weft__wake(w);
}

static void lock_slow(mutex_impl *m, weft_mutex *p)
{
    uint64_t wait_start = 0;
    bool starving = false, awoke = false;
    int rounds = 0;
    unsigned old = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS below decides */
    for (;;) {
        /* 2. Spin while an owner holds it in normal mode. */
        if ((old & (M_LOCKED | M_STARVING)) == M_LOCKED && rounds < WEFT__SPIN_ROUNDS) {
            if (!awoke && !(old & M_WOKEN) && (old >> M_WAITER_SHIFT) != 0 &&
                atomic_compare_exchange_weak_explicit(&m->state, &old, old | M_WOKEN,
                    memory_order_relaxed, memory_order_relaxed))   /* relaxed: a hint to unlock, orders no data */
                awoke = true;
            for (int i = 0; i < WEFT__SPIN_PAUSES; i++)
                weft__cpu_relax();
            rounds++;
            old = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: as above */
            continue;
        }
        /* 3. One CAS: take it, or count ourselves as a sleeper. */
        unsigned new = old;
        if (!(old & M_STARVING))
            new |= M_LOCKED;              /* a starving mutex goes to the queue */
        if (old & (M_LOCKED | M_STARVING))
            new += M_WAITER;
        if (starving && (old & M_LOCKED))
            new |= M_STARVING;
        if (awoke) {
            if (WEFT_UNLIKELY(!(new & M_WOKEN)))
                weft__panic("mutex_lock: mutex %p: inconsistent state %#x", (void *)p, old);
            new &= ~M_WOKEN;
        }
        if (!atomic_compare_exchange_weak_explicit(&m->state, &old, new,
                memory_order_acquire, memory_order_relaxed))   /* acquire: pairs with unlock's release CAS */
            continue;
        if (!(old & (M_LOCKED | M_STARVING)))
            return;                       /* ours */
        /* 4. Sleep; a second sleep keeps its place at the head. */
        bool again = wait_start != 0;
        if (!again)
            wait_start = weft__now_ns();
        sema_wait(m, p, again);
        starving = starving || weft__now_ns() - wait_start > WEFT__STARVE_NS;
        old = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the wake-up (acquire in weft__wait) ordered it */
        if (old & M_STARVING) {
            /* 5. Handed to us: LOCKED is ours to set. */
            if (WEFT_UNLIKELY((old & (M_LOCKED | M_WOKEN)) || (old >> M_WAITER_SHIFT) == 0))
                weft__panic("mutex_lock: mutex %p: inconsistent state %#x after hand-off", (void *)p, old);
            unsigned delta = M_LOCKED - M_WAITER - M_STARVING;   /* back to normal mode (see the top) */
            atomic_fetch_add_explicit(&m->state, delta, memory_order_acquire);   /* acquire: the unlocker's release reached us through the wait queue too */
            return;
        }
        awoke = true;
        rounds = 0;
    }
}

void weft_mutex_lock(weft_mutex *p)
{
    mutex_impl *m = mutex_of(p);
    WEFT__CHECK_TAG(m->tag, WEFT__TAG_MUTEX, "mutex_lock", "mutex", p);
    unsigned expect = 0;
    if (WEFT_LIKELY(atomic_compare_exchange_weak_explicit(&m->state, &expect, M_LOCKED,
            memory_order_acquire, memory_order_relaxed)))   /* acquire: pairs with unlock's release CAS */
        return;
    lock_slow(m, p);
}

bool weft_mutex_try_lock(weft_mutex *p)
{
    mutex_impl *m = mutex_of(p);
    WEFT__CHECK_TAG(m->tag, WEFT__TAG_MUTEX, "mutex_trylock", "mutex", p);
    unsigned old = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: the CAS decides */
    if (old & (M_LOCKED | M_STARVING))
        return false;
    return atomic_compare_exchange_strong_explicit(&m->state, &old, old | M_LOCKED,
               memory_order_acquire, memory_order_relaxed);   /* acquire: pairs with unlock's release CAS */
}

#ifdef WEFT_TEST_SEAMS
void (*weft__mutex_unlock_pause)(void);
#endif

/* Unlock past its fast path: sleepers, a woken or spinning waiter on its
 * way, starvation mode, or not locked at all. old: the lock word as the
 * fast path's CAS found it. */
static void unlock_slow(mutex_impl *m, weft_mutex *p, unsigned old)
{
    unsigned new;
    bool wake;
    do {
        if (WEFT_UNLIKELY(!(old & M_LOCKED)))
            weft__panic("mutex_unlock: mutex %p is not locked", (void *)p);
        new = old - M_LOCKED;
        /* 2. Claim a wake-up unless nobody sleeps, a woken or spinning
         * waiter is on its way (WOKEN), or the lock is handed off
         * (STARVING: the post below wakes the new owner). */
        wake = (old >> M_WAITER_SHIFT) != 0 && !(old & (M_WOKEN | M_STARVING));
        if (wake)
            new = (new - M_WAITER) | M_WOKEN;
    } while (!atomic_compare_exchange_weak_explicit(&m->state, &old, new,
                 memory_order_release, memory_order_relaxed));   /* release: pairs with the next owner's acquire CAS (or, after a hand-off, its acquire fetch_add) */
    bool handoff = (old & M_STARVING) != 0;
    if (!wake && !handoff)
        return;   /* nothing owed: the CAS was our last access */
    /* 3. We still touch m, and that is safe: we owe a post that a lock
     * call inside weft_mutex_lock is waiting for, so no caller can get to
     * a legal destroy first.
     *   - WOKEN (ours): we took one sleeper off the count, and every
     *     counted sleeper consumes exactly one post (one per claim or
     *     hand-off). With ours not made, one lock call stays in sema_wait,
     *     holding its use of the mutex; others may lock and unlock in the
     *     meantime, but none of them is its last user. WOKEN itself stays
     *     set until that call runs again, and destroy refuses a word that
     *     is not 0.
     *   - STARVING: LOCKED is clear but nobody can take the lock (lockers
     *     queue, trylock fails) until our post hands it to the oldest
     *     sleeper; it is as if we still held it.
     * sema_post's last access to m is its spin unlock: a sleeper it
     * claims is released after that, and one not yet queued finds the
     * wake-up in sema only under the spin lock. */
#ifdef WEFT_TEST_SEAMS
    if (WEFT_UNLIKELY(weft__mutex_unlock_pause != NULL))
        weft__mutex_unlock_pause();
#endif
    sema_post(m, handoff);
}

void weft_mutex_unlock(weft_mutex *p)
{
    mutex_impl *m = mutex_of(p);
    WEFT__CHECK_TAG(m->tag, WEFT__TAG_MUTEX, "mutex_unlock", "mutex", p);
    unsigned old = M_LOCKED;
    if (WEFT_LIKELY(atomic_compare_exchange_strong_explicit(&m->state, &old, 0,
            memory_order_release, memory_order_relaxed)))   /* release: pairs with the next owner's acquire CAS; relaxed on failure: unlock_slow's CAS decides */
        return;   /* no sleeper, no flag: nobody to wake */
    unlock_slow(m, p, old);
}

void weft_mutex_destroy(weft_mutex *p)
{
    mutex_impl *m = mutex_of(p);
    WEFT__CHECK_TAG(m->tag, WEFT__TAG_MUTEX, "mutex_destroy", "mutex", p);
    unsigned s = atomic_load_explicit(&m->state, memory_order_relaxed);   /* relaxed: a misuse check */
    if (WEFT_UNLIKELY(s != 0))
        weft__panic("mutex_destroy: mutex %p destroyed while %s (%u waiting)", (void *)p,
                    (s & M_LOCKED) ? "locked" : "in use", s >> M_WAITER_SHIFT);
    m->tag = WEFT__TAG_DEAD;
}

/* For the condition variable: is p held by someone? */
static bool mutex_held(weft_mutex *p)
{
    return atomic_load_explicit(&mutex_of(p)->state, memory_order_relaxed) & M_LOCKED;   /* relaxed: a misuse check */
}

/* ---- condition variable -------------------------------------------------------- */

typedef struct cond_impl {
    weft__spin lock;
    uint32_t tag;             /* WEFT__TAG_COND while alive */
    weft__waitq q;
} cond_impl;

_Static_assert(sizeof(cond_impl) <= sizeof(weft_cond), "condition variable fits its public body");
_Static_assert(_Alignof(cond_impl) <= _Alignof(weft_cond), "condition variable alignment");

static inline cond_impl *cond_of(weft_cond *p)
{
    return (cond_impl *)(void *)p->private_;
}

void weft_cond_init(weft_cond *p)
{
    cond_impl *c = cond_of(p);
    weft__spin_init(&c->lock);
    c->tag = WEFT__TAG_COND;
    c->q = (weft__waitq){ 0 };
}

/* weft__wait's lock callbacks for a condition wait: the first unlock
 * also releases the user's mutex (step 1); the relock after a timeout
 * only needs the queue's lock. */
typedef struct cond_locks {
    weft__spin *lock;
    weft_mutex *m;
    bool released;
} cond_locks;

static void cond_lock_fn(void *p)
{
    weft__spin_lock(((cond_locks *)p)->lock);
}

static void cond_unlock_fn(void *p)
{
    cond_locks *l = p;
    weft__spin_unlock(l->lock);
    if (!l->released) {
        l->released = true;
        weft_mutex_unlock(l->m);
    }
}

static int cond_wait(weft_cond *p, weft_mutex *m, uint64_t timeout_ns)
{
    WEFT__CHECK_TAG(cond_of(p)->tag, WEFT__TAG_COND, "cond_wait", "condition variable", p);
    WEFT__CHECK_TAG(mutex_of(m)->tag, WEFT__TAG_MUTEX, "cond_wait", "mutex", m);
    if (WEFT_UNLIKELY(!mutex_held(m)))
        weft__panic("cond_wait: condition variable %p waited on with mutex %p not locked",
                    (void *)p, (void *)m);
    /* A zero timeout is no shortcut here: there is nothing to poll, and a
     * caller looping on it must let the signaller take the mutex. */
    cond_impl *c = cond_of(p);
    weft__waiter w;
    weft__waiter_init(&w, p, "condition variable", weft__deadline(timeout_ns));
    cond_locks l = { &c->lock, m, false };
    weft__spin_lock(&c->lock);
    weft__waitq_push(&c->q, &w);
    int rc = weft__wait(&c->q, &w, cond_lock_fn, cond_unlock_fn, &l);
    weft_mutex_lock(m);
    return rc;
}

int weft_cond_wait(weft_cond *p, weft_mutex *m)
{
    return cond_wait(p, m, WEFT__FOREVER);
}

int weft_cond_wait_for(weft_cond *p, weft_mutex *m, uint64_t timeout_ns)
{
    return cond_wait(p, m, timeout_ns);
}

void weft_cond_signal(weft_cond *p)
{
    cond_impl *c = cond_of(p);
    WEFT__CHECK_TAG(c->tag, WEFT__TAG_COND, "cond_signal", "condition variable", p);
    weft__spin_lock(&c->lock);
    weft__waiter *w = weft__waitq_claim(&c->q);
    weft__spin_unlock(&c->lock);
    weft__wake(w);
}

void weft_cond_broadcast(weft_cond *p)
{
    cond_impl *c = cond_of(p);
    WEFT__CHECK_TAG(c->tag, WEFT__TAG_COND, "cond_broadcast", "condition variable", p);
    weft__spin_lock(&c->lock);
    weft__waiter *all = weft__waitq_claim_all(&c->q, NULL);
    weft__spin_unlock(&c->lock);
    weft__wake_list(all);
}

void weft_cond_destroy(weft_cond *p)
{
    cond_impl *c = cond_of(p);
    WEFT__CHECK_TAG(c->tag, WEFT__TAG_COND, "cond_destroy", "condition variable", p);
    weft__spin_lock(&c->lock);
    bool waiting = !weft__waitq_empty(&c->q);
    weft__spin_unlock(&c->lock);
    if (WEFT_UNLIKELY(waiting))
        weft__panic("cond_destroy: condition variable %p destroyed while tasks or threads wait on it",
                    (void *)p);
    c->tag = WEFT__TAG_DEAD;
}

/* This file is private to weft: wait groups and events, the two
 * primitives that are a counter or a flag plus a wait queue.
 *
 * Both keep everything that waiters test without the lock in one atomic
 * state word, with two counts beside the value: waiters (queued under the
 * lock, or about to leave after a timeout) and releasers (callers that
 * saw waiters and are still inside the primitive to wake them). The word
 * lets the common cases skip the lock entirely, and makes destruction
 * safe the way users expect: once a wait returns WEFT_OK the object may
 * be freed at once, because
 *   - an add or signal that found no waiters made its last access in the
 *     CAS that published the count or the flag;
 *   - one that found waiters is counted in releasers until its last
 *     access, and a waiter that saw the count or flag without being woken
 *     waits (briefly: a releaser never blocks) for releasers to drain;
 *   - woken waiters are released (weft__wake_list) only after that last
 *     access.
 * The releasers count is a small field (8 bits in a wait group, 7 in an
 * event). When it is full, the next caller that would count itself waits
 * for a slot (spinning, then yielding) and retries: releasers never
 * block, so the field drains. Nothing limits how many callers may add or
 * signal at once.
 *
 * Synchronization
 *   wait group state   count (signed, high bits) | waiters | releasers.
 *     Changed by CAS, but for wg.h's weft__wg_add1 (src/flow's task
 *     groups): a fetch_add of one to the count, which never ends a wait
 *     (only a fall to <= 0 does) and so needs no test. add: count += delta, and
 *     releasers + 1 if it takes count from > 0 to <= 0 while waiters > 0
 *     (acq_rel: each adder's work reaches the one that ends at zero, and
 *     from it the waiters); wg.h's inline done is this CAS. wait:
 *     waiters + 1 under lock, only while count > 0.
 *     Releaser: waiters - n (under lock) for the n it claimed, then
 *     releasers - 1 (release) as its last access. A timed-out waiter:
 *     waiters - 1 after unlinking itself.
 *   event state        SIGNALLED | releasers | waiters, same rules:
 *     signal sets SIGNALLED by CAS when no waiter is counted (release);
 *     else it counts itself a releaser, and under lock hands the signal
 *     to one claimed waiter (auto reset) or claims all of them (manual
 *     reset; SIGNALLED set in the same CAS). Auto-reset waiters consume
 *     SIGNALLED by CAS (acquire); manual-reset ones only read it.
 *   q                  waiters, under lock.
 *
 * Protocol (wait group; the event's is the same with SIGNALLED for
 * count <= 0)
 *   Waiter                               Adder
 *   1. load: count <= 0? wait for         1. CAS count += delta; if it
 *      releasers == 0; return OK             reached <= 0 with waiters,
 *   2. lock; CAS waiters + 1 if count        releasers + 1 in the same CAS
 *      > 0, else unlock and go to 1's        (releasers full: wait for a
 *      wait for releasers                    slot, then CAS again)
 *   3. queue; unlock; block               2. (releaser) lock; claim every
 *   4. timed out: waiters - 1                queued waiter; waiters - n;
 *                                            unlock; releasers - 1
 *                                         3. release the claimed waiters
 *   The waiter's registration and the adder's CAS are on one word, so the
 *   adder either counts the waiter (and claims it: the waiter queues
 *   before it unlocks, the adder claims under the same lock) or the
 *   waiter sees the new count: no lost wake-up.
 */
#include <stdatomic.h>

#include "backoff.h"
#include "spin.h"
#include "wait.h"
#include "wg.h"

/* Waits until no releaser is inside the object any more. A releaser
 * holds the spin lock at most for a few claims and never blocks, and on
 * the caller's own worker none can be running (fibers do not preempt),
 * so this ends quickly. acquire: pairs with the releasers' release. */
#define WAIT_RELEASERS(state, mask)                                             \
    do {                                                                        \
        weft__backoff b_ = WEFT__BACKOFF_INIT;                                  \
        while (atomic_load_explicit((state), memory_order_acquire) & (mask))    \
            weft__backoff_step(&b_);                                            \
    } while (0)

/* One round of waiting for a releaser slot: a full releasers field holds
 * callers that are inside to wake waiters, each a few claims under the
 * spin lock and one atomic from leaving, and none of them blocks. One may
 * be a plain thread the kernel preempted: after a bounded spin, yield
 * the CPU. A fiber never waits here for a releaser on its own worker:
 * fibers do not preempt one another and a releaser never suspends, so a
 * releaser on this worker could only be the fiber itself. b counts the
 * rounds. */
static inline void releaser_slot_backoff(weft__backoff *b)
{
    weft__backoff_step(b);
}

/* ---- wait group ---------------------------------------------------------- */

/* The state word, wg_impl and wg_of: wg.h (shared with src/flow's groups). */

static void wg_range(weft_waitgroup *p, int64_t v)
{
    if (WEFT_UNLIKELY(v >= WG_LIMIT || v <= -WG_LIMIT))
        weft__panic("waitgroup_add: wait group %p: total %lld out of range (|total| < 2^35)",
                    (void *)p, (long long)v);
}

void weft_waitgroup_init(weft_waitgroup *p, int64_t count)
{
    wg_impl *g = wg_of(p);
    wg_range(p, count);
    atomic_init(&g->state, (uint64_t)count << WG_SHIFT);
    weft__spin_init(&g->lock);
    g->tag = WEFT__TAG_WAITGROUP;
    g->q = (weft__waitq){ 0 };
}

void weft_waitgroup_add(weft_waitgroup *p, int64_t delta)
{
    wg_impl *g = wg_of(p);
    WEFT__CHECK_TAG(g->tag, WEFT__TAG_WAITGROUP, "waitgroup_add", "wait group", p);
    wg_range(p, delta);
    uint64_t v = atomic_load_explicit(&g->state, memory_order_relaxed), nv;   /* relaxed: the CAS decides */
    int64_t old, now;
    bool release;
    for (weft__backoff backoff = WEFT__BACKOFF_INIT;;) {
        old = wg_count(v);
        now = old + delta;
        wg_range(p, now);
        release = old > 0 && now <= 0 && (v & WG_WAITERS);
        if (WEFT_UNLIKELY(release && (v & WG_RELEASERS) == WG_RELEASERS)) {
            /* No releaser slot: wait for one to leave, then try again
             * (the count too may have changed meanwhile). */
            releaser_slot_backoff(&backoff);
            v = atomic_load_explicit(&g->state, memory_order_relaxed);   /* relaxed: only says whether to try again; the CAS decides */
            continue;
        }
        nv = ((uint64_t)now << WG_SHIFT) | (v & WG_LOW);
        if (release)
            nv += WG_RELEASER;
        if (atomic_compare_exchange_weak_explicit(&g->state, &v, nv,
                memory_order_acq_rel, memory_order_relaxed))   /* acq_rel: adders' work flows to the one reaching zero and on to the waiters (acquire in wait) */
            break;
    }
#ifdef WEFT_DEBUG
    if (WEFT_UNLIKELY(now < 0))
        weft__panic("waitgroup_add: wait group %p went negative (%lld %+lld = %lld)",
                    (void *)p, (long long)old, (long long)delta, (long long)now);
#endif
    /* Release builds: a total below zero counts as zero (documented). */
    if (!release)
        return;   /* no waiter counted: the CAS was our last access */
    unsigned n;
    weft__spin_lock(&g->lock);
    weft__waiter *all = weft__waitq_claim_all(&g->q, &n);
    atomic_fetch_sub_explicit(&g->state, (uint64_t)n * WG_WAITER,
                              memory_order_relaxed);   /* relaxed: bookkeeping under the lock */
    weft__spin_unlock(&g->lock);
    atomic_fetch_sub_explicit(&g->state, WG_RELEASER,
                              memory_order_release);   /* release: our last access; pairs with WAIT_RELEASERS */
    weft__wake_list(all);
}

void weft_waitgroup_done(weft_waitgroup *p)
{
    weft_waitgroup_add(p, -1);
}

/* timeout_ns: 0 polls; WEFT__FOREVER waits without a deadline. */
static int wg_wait(weft_waitgroup *p, uint64_t timeout_ns)
{
    wg_impl *g = wg_of(p);
    WEFT__CHECK_TAG(g->tag, WEFT__TAG_WAITGROUP, "waitgroup_wait", "wait group", p);
    uint64_t v = atomic_load_explicit(&g->state, memory_order_acquire);   /* acquire: pairs with the adders' acq_rel */
    if (wg_count(v) <= 0) {
        WAIT_RELEASERS(&g->state, WG_RELEASERS);
        return WEFT_OK;
    }
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    weft__waiter w;
    weft__waiter_init(&w, p, "wait group", weft__deadline(timeout_ns));
    weft__spin_lock(&g->lock);
    v = atomic_load_explicit(&g->state, memory_order_acquire);   /* acquire: as above */
    do {
        if (wg_count(v) <= 0) {
            weft__spin_unlock(&g->lock);
            WAIT_RELEASERS(&g->state, WG_RELEASERS);
            return WEFT_OK;
        }
        if (WEFT_UNLIKELY((v & WG_WAITERS) == WG_WAITERS))
            weft__panic("waitgroup_wait: wait group %p: too many waiters", (void *)p);
    } while (!atomic_compare_exchange_weak_explicit(&g->state, &v, v + WG_WAITER,
                 memory_order_acquire, memory_order_acquire));   /* acquire: a count <= 0 read here must show the adders' work */
    weft__waitq_push(&g->q, &w);
    int rc = weft__wait(&g->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &g->lock);
    if (rc != WEFT_OK)
        atomic_fetch_sub_explicit(&g->state, WG_WAITER, memory_order_relaxed);   /* relaxed: bookkeeping; nobody claimed us */
    return rc;
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
    WEFT__CHECK_TAG(g->tag, WEFT__TAG_WAITGROUP, "waitgroup_destroy", "wait group", p);
    uint64_t v = atomic_load_explicit(&g->state, memory_order_acquire);   /* acquire: a misuse check */
    if (WEFT_UNLIKELY(v & (WG_WAITERS | WG_RELEASERS)))
        weft__panic("waitgroup_destroy: wait group %p destroyed while tasks or threads wait on it "
                    "(count %lld)", (void *)p, (long long)wg_count(v));
    g->tag = WEFT__TAG_DEAD;
}

/* ---- event ----------------------------------------------------------------- */

/* state: waiters << 8 | releasers << 1 | SIGNALLED. */
#define EV_SIGNALLED    1u
#define EV_RELEASER     2u
#define EV_RELEASERS    0xfeu
#define EV_WAITER       (1u << 8)
#define EV_WAITERS      (~0u << 8)

typedef struct ev_impl {
    atomic_uint state;
    weft__spin lock;
    uint32_t tag;             /* WEFT__TAG_EVENT while alive */
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
    atomic_init(&e->state, signalled ? EV_SIGNALLED : 0u);
    weft__spin_init(&e->lock);
    e->tag = WEFT__TAG_EVENT;
    e->manual = manual_reset;
    e->q = (weft__waitq){ 0 };
}

void weft_event_signal(weft_event *p)
{
    ev_impl *e = ev_of(p);
    WEFT__CHECK_TAG(e->tag, WEFT__TAG_EVENT, "event_signal", "event", p);
    unsigned v = atomic_load_explicit(&e->state, memory_order_relaxed), nv;   /* relaxed: the CAS decides */
    for (weft__backoff backoff = WEFT__BACKOFF_INIT;;) {
        if (!(v & EV_WAITERS)) {
            if (v & EV_SIGNALLED)
                return;                               /* already set: signals coalesce */
            nv = v | EV_SIGNALLED;
        } else if (WEFT_UNLIKELY((v & EV_RELEASERS) == EV_RELEASERS)) {
            /* No releaser slot: wait for one to leave, then try again
             * (the waiters may be gone by then, and we only set the flag). */
            releaser_slot_backoff(&backoff);
            v = atomic_load_explicit(&e->state, memory_order_relaxed);   /* relaxed: only says whether to try again; the CAS decides */
            continue;
        } else {
            nv = (v + EV_RELEASER) | (e->manual ? EV_SIGNALLED : 0u);
        }
        if (atomic_compare_exchange_weak_explicit(&e->state, &v, nv,
                memory_order_release, memory_order_relaxed))   /* release: pairs with the waiters' acquire */
            break;
    }
    if (!(v & EV_WAITERS))
        return;   /* the CAS was our last access */
    weft__waiter *list;
    unsigned n;
    weft__spin_lock(&e->lock);
    if (e->manual) {
        list = weft__waitq_claim_all(&e->q, &n);
    } else {
        /* One waiter takes the signal; if every counted one has timed
         * out meanwhile, the signal stays set for the next wait. */
        list = weft__waitq_claim(&e->q);
        n = list != NULL;
        if (list)
            list->next = NULL;
        else
            atomic_fetch_or_explicit(&e->state, EV_SIGNALLED, memory_order_release);   /* release: pairs with the waiters' acquire */
    }
    atomic_fetch_sub_explicit(&e->state, n * EV_WAITER, memory_order_relaxed);   /* relaxed: bookkeeping under the lock */
    weft__spin_unlock(&e->lock);
    atomic_fetch_sub_explicit(&e->state, EV_RELEASER,
                              memory_order_release);   /* release: our last access; pairs with WAIT_RELEASERS */
    weft__wake_list(list);
}

void weft_event_clear(weft_event *p)
{
    WEFT__CHECK_TAG(ev_of(p)->tag, WEFT__TAG_EVENT, "event_clear", "event", p);
    atomic_fetch_and_explicit(&ev_of(p)->state, ~EV_SIGNALLED,
                              memory_order_relaxed);   /* relaxed: clearing publishes nothing */
}

bool weft_event_signalled(weft_event *p)
{
    WEFT__CHECK_TAG(ev_of(p)->tag, WEFT__TAG_EVENT, "event_test", "event", p);
    return atomic_load_explicit(&ev_of(p)->state, memory_order_acquire) & EV_SIGNALLED;   /* acquire: pairs with the release in signal */
}

/* Takes the signal if it is set (a manual-reset event keeps it). v: the
 * state as last read; updated on failure. */
static bool ev_take(ev_impl *e, unsigned *v)
{
    while (*v & EV_SIGNALLED) {
        if (e->manual)
            return true;
        if (atomic_compare_exchange_weak_explicit(&e->state, v, *v & ~EV_SIGNALLED,
                memory_order_acquire, memory_order_acquire))   /* acquire: pairs with the release in signal */
            return true;
    }
    return false;
}

static int ev_wait(weft_event *p, uint64_t timeout_ns)
{
    ev_impl *e = ev_of(p);
    WEFT__CHECK_TAG(e->tag, WEFT__TAG_EVENT, "event_wait", "event", p);
    unsigned v = atomic_load_explicit(&e->state, memory_order_acquire);   /* acquire: pairs with the release in signal */
    if (ev_take(e, &v)) {
        WAIT_RELEASERS(&e->state, EV_RELEASERS);
        return WEFT_OK;
    }
    if (timeout_ns == 0)
        return WEFT_ETIMEDOUT;
    weft__waiter w;
    weft__waiter_init(&w, p, "event", weft__deadline(timeout_ns));
    weft__spin_lock(&e->lock);
    v = atomic_load_explicit(&e->state, memory_order_acquire);   /* acquire: as above */
    for (;;) {
        if (ev_take(e, &v)) {
            weft__spin_unlock(&e->lock);
            WAIT_RELEASERS(&e->state, EV_RELEASERS);
            return WEFT_OK;
        }
        if (WEFT_UNLIKELY((v & EV_WAITERS) == EV_WAITERS))
            weft__panic("event_wait: event %p: too many waiters", (void *)p);
        if (atomic_compare_exchange_weak_explicit(&e->state, &v, v + EV_WAITER,
                memory_order_acquire, memory_order_acquire))   /* acquire: a SIGNALLED read here pairs with signal's release */
            break;
    }
    weft__waitq_push(&e->q, &w);
    int rc = weft__wait(&e->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &e->lock);
    if (rc != WEFT_OK)
        atomic_fetch_sub_explicit(&e->state, EV_WAITER, memory_order_relaxed);   /* relaxed: bookkeeping; nobody claimed us */
    return rc;
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
    WEFT__CHECK_TAG(ev_of(p)->tag, WEFT__TAG_EVENT, "event_destroy", "event", p);
    unsigned v = atomic_load_explicit(&ev_of(p)->state, memory_order_acquire);   /* acquire: a misuse check */
    if (WEFT_UNLIKELY(v & (EV_WAITERS | EV_RELEASERS)))
        weft__panic("event_destroy: event %p destroyed while tasks or threads wait on it", (void *)p);
    ev_of(p)->tag = WEFT__TAG_DEAD;
}

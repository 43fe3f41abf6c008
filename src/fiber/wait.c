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
#include "backoff.h"
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
            /* No deadline, no timeout to race with: nobody but a hostless
             * waiter's SLEEP writes the state while it is PENDING, and an
             * or keeps that. */
            atomic_fetch_or_explicit(&w->state, WEFT__WAIT_CLAIMED,
                                     memory_order_relaxed);   /* relaxed: the lock orders the waiter's set-up before us */
            return w;
        }
        if (weft__waiter_try_claim(w))
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

/* ---- Spinning, then sleeping ------------------------------------------
 *
 * A thread with no host (not a worker, not bound) that waits for a run
 * it started, over and over, would pay a futex sleep and a futex wake
 * per wait when each lasts microseconds. So it first spins on the word
 * for a budget learnt from its own waits (per thread: spin_ns), then
 * announces its sleep in the word itself:
 *   Waiter                                 Notifier
 *   1. spin while PENDING/CLAIMED, up to   1. claim: a store or an or (a
 *      the budget (acquire loads)             CAS with a deadline) that
 *   2. CAS s -> s | SLEEP (s: PENDING         keeps SLEEP
 *      or CLAIMED); failed: look again     2. release: exchange in
 *   3. futex-wait while the word reads        NOTIFIED; if the old value
 *      s | SLEEP; look again                  had SLEEP: futex wake
 * The exchange and the CAS are RMWs on one word: either the CAS comes
 * first and the exchange reads SLEEP (and wakes), or the exchange comes
 * first and the CAS fails on NOTIFIED (the waiter returns). A waiter
 * that is spinning costs its notifier one exchange: no system call on
 * either side. tests/stress/stress_waitword.c forces both orders
 * through the seam below.
 *
 * The budget: a wait that ended during the spin raises it to four times
 * its length (at most WEFT__THREAD_SPIN_NS); one that had to sleep
 * halves it. So waits that end within microseconds are caught spinning,
 * a long wait (a 2 s idle one) spins a few microseconds at most, and on
 * a loaded machine, where the spin takes the CPU the notifier needs and
 * fails, it falls to nothing: then every 16th wait spins a short probe,
 * so that the budget grows back once the load is gone. */
#define WEFT__THREAD_SPIN_NS 50000u   /* the cap: a worker's default spin_us */
#define WEFT__THREAD_PROBE_NS 2000u
static WEFT_TLS uint32_t spin_ns = WEFT__THREAD_SPIN_NS / 4;
static WEFT_TLS uint32_t spin_skipped;   /* waits without a spin since the last probe */

#ifdef WEFT_TEST_SEAMS
void (*weft__wait_sleep_pause)(int phase);
#define SLEEP_PAUSE(phase) do { if (weft__wait_sleep_pause) weft__wait_sleep_pause(phase); } while (0)
#else
#define SLEEP_PAUSE(phase) ((void)0)
#endif

/* Step 1: spins while the word reads PENDING or CLAIMED, until `until`;
 * returns the last value read (acquire). */
static unsigned spin_on(weft__waiter *w, uint64_t until)
{
    for (unsigned n = 1;; n++) {
        unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);  /* acquire: pairs with the notifier's release exchange */
        if (s == WEFT__WAIT_NOTIFIED || s == WEFT__WAIT_TIMEDOUT)
            return s;
        /* No sched_yield here: measured, it made waits on a loaded
         * machine 5-20 times longer (the yielder goes behind everything
         * queued on its CPU); a spin that keeps failing shrinks instead. */
        if (n % 64 == 0 && weft__now_ns() >= until)
            return s;
        weft__cpu_relax();
    }
}

/* Hostless: spin, then sleep on the state word until it is NOTIFIED or
 * TIMEDOUT. */
void weft__block_thread(weft__waiter *w)
{
    uint64_t t0 = weft__now_ns();
    uint32_t budget = spin_ns;
    if (budget == 0 && ++spin_skipped % 16 == 0)
        budget = WEFT__THREAD_PROBE_NS;
    bool spun = false;   /* the wait ended during the spin */
    if (budget) {
        uint64_t until = t0 + budget;
        if (w->deadline && w->deadline < until)
            until = w->deadline;
        spun = spin_on(w, until) == WEFT__WAIT_NOTIFIED;
    }
    for (;;) {
        unsigned s = atomic_load_explicit(&w->state, memory_order_acquire);  /* acquire: pairs with the notifier's release exchange */
        if (s == WEFT__WAIT_NOTIFIED || s == WEFT__WAIT_TIMEDOUT)
            break;
        uint64_t rel = 0;   /* no limit */
        if ((s & ~(unsigned)WEFT__WAIT_SLEEP) == WEFT__WAIT_PENDING && w->deadline) {
            uint64_t now = weft__now_ns();
            if (now >= w->deadline) {
                atomic_compare_exchange_strong_explicit(&w->state, &s, WEFT__WAIT_TIMEDOUT,
                    memory_order_relaxed, memory_order_relaxed);   /* relaxed: decides the race with the claim CAS; the loop's acquire load reads the outcome */
                continue;   /* ours (TIMEDOUT), or a notifier's (CLAIMED/NOTIFIED) */
            }
            rel = w->deadline - now;
        }
        /* Once CLAIMED, no deadline applies: the notifier is about to
         * store NOTIFIED. Step 2: announce the sleep. */
        if (!(s & WEFT__WAIT_SLEEP)) {
            SLEEP_PAUSE(0);   /* a test's notifier may release us before the CAS */
            if (!atomic_compare_exchange_strong_explicit(&w->state, &s, s | WEFT__WAIT_SLEEP,
                    memory_order_relaxed, memory_order_relaxed))   /* relaxed: an RMW on the word the exchange also RMWs (above) */
                continue;   /* claimed, released or timed out meanwhile */
            s |= WEFT__WAIT_SLEEP;
            SLEEP_PAUSE(1);   /* or after it, before the futex wait */
        }
        weft__os_word_wait(&w->state, s, rel);   /* step 3; EINTR, EAGAIN, timeout: loop re-checks */
    }
    if (spun) {
        uint64_t want = 4 * (weft__now_ns() - t0) + 1000;
        if (want > WEFT__THREAD_SPIN_NS)
            want = WEFT__THREAD_SPIN_NS;
        if (want > spin_ns)
            spin_ns = (uint32_t)want;
    } else if (budget) {
        spin_ns /= 2;
        if (spin_ns < 500)
            spin_ns = 0;
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

/* This file is private to weft: two-phase parking of idle workers.
 *
 * Synchronization
 *   nsearching  workers stealing now, or about to look (step 4). Written
 *               with atomic RMW by any worker entering/leaving the
 *               searching state, and by a notifier on behalf of the
 *               worker it wakes; read by submitters (relaxed, after their
 *               StoreLoad barrier).
 *   nidle       workers in the idle set. Written under idle_lock; read
 *               by submitters like nsearching.
 *   idle set    an intrusive list of parked workers (workers and bound
 *               threads alike) and each one's in_idle flag: written under idle_lock only; in_idle is
 *               also read without the lock by targeted wakers.
 *   token       per-worker futex word: set to 1 by the waker that chose
 *               the worker (under nothing: it was removed from the set
 *               under the lock first, so exactly one waker sets it);
 *               cleared by the worker itself. The store is seq_cst: the
 *               waker then reads poll_owner, and a worker sleeping in
 *               epoll_wait gets a write to the poller's eventfd instead
 *               of a futex wake (Dekker with the owner's CAS then token
 *               load, poller.c).
 *   sleeping, token (bound threads beside workers)
 *               a bound thread sets sleeping before its re-check and
 *               sleeps on its token (weft__bound_park); a waker
 *               (weft__wake_worker) reads sleeping after its push and
 *               gives the token, exchange 0 -> 1. Seq_cst fences on both
 *               sides, never membarrier (see weft__bound_park).
 *   poll_owner  the parked worker sleeping in epoll_wait while fd waits
 *               are registered (poller.c). choose_sleeper passes over it
 *               while another worker sleeps (relaxed read: a preference),
 *               so new work wakes a futex sleeper and readiness keeps a
 *               worker waiting for it.
 *
 * Protocol (models/park.pml checks it; step numbers match):
 *   Worker going idle                     Submitter
 *   3a. lock; join the idle set;          1. publish the work (queue
 *       nidle++; if searching: leave;        store)
 *       unlock                            2. StoreLoad barrier
 *                                         3. if nsearching == 0 and
 *   3b. StoreLoad barrier                    nidle > 0: lock; pop one
 *   3c. re-check every queue: if work,       idle worker; nidle--;
 *       lock; if still in the set, leave     nsearching++ for it;
 *       it and search (past the cap);        unlock; set its token;
 *       else a notifier chose us: wait       futex-wake it
 *       for its token. Go back.
 *   3d. futex-wait for the token (or, as
 *       poll_owner, epoll_wait for it and
 *       for fd readiness); woken workers
 *       start out searching. One that
 *       readiness made fibers ready for
 *       leaves the set itself, as at a
 *       deadline, and runs them.
 *   Either the submitter's check sees the worker in the set (and wakes
 *   it), or the worker's re-check sees the work: the two barriers forbid
 *   both reads missing both writes (the store-buffering case).
 *   2. The last searcher that finds work wakes another (hand-off), so work
 *   found in a burst is not left to a single thread; unless every other
 *   worker is idle and nothing is queued (see weft__stop_searching).
 *   4. A worker about to wake a thread outside the scheduler as the last
 *   act of a record (a graph run's end, for a plain thread waiting in
 *   weft_graph_wait), with nothing visible to run, joins the searchers
 *   first (weft__search_before_wake), under the cap, before the wake's
 *   release store; then it returns to its loop and looks. The woken
 *   thread's next submit (a plain thread's run + wait cycle) then sees it
 *   searching and wakes nobody: before, it found nobody searching and
 *   the waker not yet in the idle set (on a shared CPU the woken thread
 *   preempts its waker), woke a second worker for the one task, and the
 *   waker parked; both paid a sleep and a wake every cycle. Nothing is
 *   lost: the searcher leaves the state only as every searcher does,
 *   finding work (weft__stop_searching: the hand-off, 2) or parking
 *   (3a, then its barrier and re-check); and the woken thread reads the
 *   count after acquiring the wake, which the increment precedes. What
 *   it costs: between the wake and its look the worker runs no user
 *   code (the record's end: the walk returns to the loop), but it may be
 *   preempted there, and work submitted meanwhile waits for it instead
 *   of waking a parked worker; a record that goes on running user code
 *   after a wake (an event set mid-task) never takes this step.
 *
 * The StoreLoad barrier is asymmetric when the kernel allows it: the
 * parking side (rare, about to sleep anyway) calls membarrier(2), which
 * puts a full barrier into every running thread of the process; the
 * submitting side (every spawn) then needs only a compiler barrier. Without
 * membarrier (old kernels, seccomp, TSAN builds) both sides use a seq_cst
 * fence.
 */
#define _GNU_SOURCE
#include <string.h>

#include "loop.h"
#include "park.h"
#include "pin.h"
#include "poller.h"
#include "trace.h"

/* ---- fences ------------------------------------------------------------ */

/* Set once, at the first scheduler creation, before any worker exists. */
bool weft__use_membarrier;
static pthread_once_t fence_once = PTHREAD_ONCE_INIT;

static void setup_fences(void)
{
#if !defined(WEFT_TSAN)
    weft__use_membarrier = weft__os_barrier_setup();
#endif
}

void weft__park_setup_fences(void)
{
    pthread_once(&fence_once, setup_fences);
}

void weft__fence_park(void)
{
    if (weft__use_membarrier) {
        /* A full barrier runs on every running thread of the process:
         * pairs with fence_submit, a compiler barrier only in this mode.
         * A plain fence here would not pair with that, so a failure (the
         * kernel short of memory for its CPU mask) is retried, never
         * replaced: a lost wakeup would hang a worker. */
        int e;
        for (unsigned tries = 1; (e = weft__os_barrier()) != 0; tries++) {
            if (tries == 1000)
                weft__panic("park: membarrier keeps failing (%s); cannot park safely",
                            strerror(e));
            weft__os_yield();
        }
        return;
    }
    atomic_thread_fence(memory_order_seq_cst);      /* StoreLoad: pairs with fence_submit */
}

/* ---- the idle set ------------------------------------------------------- */

int weft__park_init(weft_sched *s)
{
    pthread_mutex_init(&s->idle_lock, NULL);
    s->idle_head = NULL;
    atomic_init(&s->nidle, 0);
    atomic_init(&s->nsearching, 0);
    unsigned half = s->nworkers / 2;
    s->max_searching = s->cfg.max_searching ? s->cfg.max_searching : (half ? half : 1);
    return WEFT_OK;
}

void weft__park_fini(weft_sched *s)
{
    pthread_mutex_destroy(&s->idle_lock);
}

/* Caller holds idle_lock. */
static void idle_add(weft_sched *s, weft__worker *w)
{
    w->idle_prev = NULL;
    w->idle_next = s->idle_head;
    if (s->idle_head)
        s->idle_head->idle_prev = w;
    s->idle_head = w;
    atomic_store_explicit(&w->in_idle, true, memory_order_relaxed);      /* under idle_lock */
    atomic_fetch_add_explicit(&s->nidle, 1, memory_order_relaxed);       /* under idle_lock */
}

/* Caller holds idle_lock; w is in the set. */
static void idle_remove(weft_sched *s, weft__worker *w)
{
    if (w->idle_prev)
        w->idle_prev->idle_next = w->idle_next;
    else
        s->idle_head = w->idle_next;
    if (w->idle_next)
        w->idle_next->idle_prev = w->idle_prev;
    atomic_store_explicit(&w->in_idle, false, memory_order_relaxed);     /* under idle_lock */
    atomic_fetch_sub_explicit(&s->nidle, 1, memory_order_relaxed);       /* under idle_lock */
}

static void give_token(weft__worker *w)
{
    weft_sched *s = w->s;
    atomic_store_explicit(&w->token, 1, memory_order_seq_cst);  /* seq_cst: release, pairs with acquire in weft__park; and before the owner load (Dekker with weft__poller_sleep) */
    if (atomic_load_explicit(&s->poll_owner, memory_order_seq_cst) == w)   /* seq_cst: see the store above */
        weft__poller_break(s);   /* it sleeps in epoll_wait, not on its futex */
    else
        weft__os_word_wake(&w->token, 1);
}

/* Pops one idle worker and counts it as searching. Returns NULL if the
 * conditions no longer hold. */
static weft__worker *choose_sleeper(weft_sched *s)
{
    weft__worker *w = NULL;
    pthread_mutex_lock(&s->idle_lock);
    if (s->idle_head &&
        atomic_load_explicit(&s->nsearching, memory_order_relaxed) == 0) {
        w = s->idle_head;
        /* The worker sleeping in epoll_wait (poller.c) goes last: it
         * would leave the poller for the work, and fd readiness would
         * wait for a worker to park again. (relaxed: a preference.) */
        if (w->idle_next && atomic_load_explicit(&s->poll_owner, memory_order_relaxed) == w)
            w = w->idle_next;
        idle_remove(s, w);
        atomic_fetch_add_explicit(&s->nsearching, 1, memory_order_relaxed);  /* on w's behalf */
    }
    pthread_mutex_unlock(&s->idle_lock);
    return w;
}

/* Callable from: any thread, after weft__notify_work's fence and check. */
void weft__notify_slow(weft_sched *s)
{
    weft__worker *w = choose_sleeper(s);
    if (w)
        give_token(w);
}

void weft__wake_worker(weft_sched *s, weft__worker *w)
{
    if (WEFT_UNLIKELY(weft__bound_beside(w))) {
        /* Asleep on its own futex (weft__bound_park), never in the set,
         * which fences with a plain fence: so do we, whatever the mode. */
        atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: the push before sleeping's load; pairs with the fence in weft__bound_park */
        /* Only the waker that gives the token (0 -> 1) makes the system
         * call: the token stays 1 until the thread parks again, so a second
         * wake before then (a pin's push and its pin_ev signal readying the
         * thread's host, or two pins) finds it given and has nobody to wake
         * (a pinned round trip made ~2 futex wakes a trip, most to nobody). */
        if (atomic_load_explicit(&w->sleeping, memory_order_relaxed) &&
            atomic_exchange_explicit(&w->token, 1, memory_order_release) == 0)   /* release: pairs with the acquire load in weft__bound_park */
            weft__os_word_wake(&w->token, 1);
        return;
    }
    weft__fence_submit();                   /* StoreLoad: the inbox push before in_idle's load */
    if (!atomic_load_explicit(&w->in_idle, memory_order_relaxed))
        return;
    bool chosen = false;
    pthread_mutex_lock(&s->idle_lock);
    if (atomic_load_explicit(&w->in_idle, memory_order_relaxed)) {
        idle_remove(s, w);
        atomic_fetch_add_explicit(&s->nsearching, 1, memory_order_relaxed);  /* on w's behalf */
        chosen = true;
    }
    pthread_mutex_unlock(&s->idle_lock);
    if (chosen)
        give_token(w);
}

void weft__wake_all(weft_sched *s)
{
    for (;;) {
        weft__worker *w = NULL;
        pthread_mutex_lock(&s->idle_lock);
        if (s->idle_head) {
            w = s->idle_head;
            idle_remove(s, w);
            atomic_fetch_add_explicit(&s->nsearching, 1, memory_order_relaxed);  /* on w's behalf */
        }
        pthread_mutex_unlock(&s->idle_lock);
        if (!w)
            return;
        give_token(w);
    }
}

/* ---- searching ------------------------------------------------------------ */

bool weft__try_start_searching(weft__worker *w)
{
    weft_sched *s = w->s;
    if (w->searching)
        return true;
    unsigned n = atomic_load_explicit(&s->nsearching, memory_order_relaxed);
    while (n < s->max_searching) {
        if (atomic_compare_exchange_weak_explicit(&s->nsearching, &n, n + 1,
                memory_order_relaxed, memory_order_relaxed)) {
            w->searching = true;
            return true;
        }
    }
    return false;
}

/* The hand-off (step 2) is for work whose submitter saw us searching and
 * so woke nobody. It is skipped, saving a futex wake on the way to the
 * task just found and a wasted wake-up of another worker, when every
 * other worker is in the idle set and nothing is queued anywhere. Why no
 * submitter can then be relying on us:
 *   - Another worker in the idle set went there with its own deque and
 *     LIFO slot empty (it runs or loses to thieves what it queued before
 *     it looks for other work), and after its re-check (3c) had seen the
 *     global ring empty behind its own pushes: nothing it submitted is
 *     waiting. One that leaves the set after our read of nidle does so
 *     with a locked RMW after our RMW on nsearching, so its later
 *     submits read nsearching = 0 and wake for themselves (a worker
 *     that leaves on its own, at a park deadline, fences after leaving;
 *     the others leave counted as searching).
 *   - Every other submitter (outside threads, bound threads, the YIELD
 *     hint) pushes to the global ring and then runs a full fence before
 *     reading nsearching (weft__submit), whatever the fence mode. Against
 *     our seq_cst RMW on nsearching, then our reads of the queues, that
 *     is the store-buffering pair: it reads nsearching = 0 and wakes a
 *     worker itself, or we see its push and hand off.
 *   - Our own pushes (the rest of a batch from the global ring) are in
 *     our deque, which we see.
 * A worker-side submit's only barrier in membarrier mode is the parker's
 * membarrier (3b), which does not cover this check; hence the first
 * condition, under which no worker but us is running tasks. */
void weft__stop_searching(weft__worker *w)
{
    if (!w->searching)
        return;
    w->searching = false;
    weft_sched *s = w->s;
    /* seq_cst RMW: a full barrier between finding the work and the
     * hand-off's read of nidle. */
    if (atomic_fetch_sub_explicit(&s->nsearching, 1, memory_order_seq_cst) != 1)
        return;   /* not the last searcher: the last one hands off */
    if (atomic_load_explicit(&s->nidle, memory_order_relaxed) == 0)
        return;   /* nobody to wake */
    /* StoreLoad: our RMW above before the reads below on any processor
     * (on x86 the RMW is a full barrier already); pairs with the fence
     * after an outside push (weft__submit) and after leaving the idle
     * set at a deadline (weft__park). */
    atomic_thread_fence(memory_order_seq_cst);
    if (!w->bound && atomic_load_explicit(&s->nidle, memory_order_relaxed) + 1 == s->nworkers &&
        !weft__work_queued(s))
        return;   /* nobody can be counting on us (above) */
    weft__worker *o = choose_sleeper(s);
    if (o)
        give_token(o);
}

/* Step 4 (top of this file). Relaxed loads of the queues: a hint, as in
 * the loop; work missed here is found by the look that follows. */
void weft__search_before_wake(weft__worker *w)
{
    if (w->bound || w->searching || weft__fstate_cur(w)->depth != 0 || weft__work_visible(w))
        return;   /* a bound thread never searches; a record run inline (wait_until) has a task to go back to; with work in sight the submit should wake another */
    (void)weft__try_start_searching(w);   /* at the cap: others search, and the submit wakes nobody anyway */
}

/* ---- parking ----------------------------------------------------------------- */

/* A parked worker leaves the idle set on its own (a deadline, or fd
 * readiness for its fibers): true if it did; false if a notifier chose
 * it meanwhile (then its token is on the way). */
static bool leave_idle(weft_sched *s, weft__worker *w)
{
    pthread_mutex_lock(&s->idle_lock);
    bool still = atomic_load_explicit(&w->in_idle, memory_order_relaxed);
    if (still)
        idle_remove(s, w);
    pthread_mutex_unlock(&s->idle_lock);
    if (still) {
        /* Our leaving (nidle's decrement) before any load of our later
         * submits: a searcher that read us idle and skipped its hand-off
         * has made nsearching 0 first, so those loads see it
         * (weft__stop_searching). x86 orders this by the locked RMW
         * already. */
        atomic_thread_fence(memory_order_seq_cst);
    }
    return still;
}

void weft__park(weft__worker *w, uint64_t deadline)
{
    weft_sched *s = w->s;

    /* 3a. Announce. */
    pthread_mutex_lock(&s->idle_lock);
    idle_add(s, w);
    if (w->searching) {
        w->searching = false;
        atomic_fetch_sub_explicit(&s->nsearching, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&s->idle_lock);

    /* 3b. */
    weft__fence_park();

    /* 3c. Re-check. */
    bool wait = true;
    if (weft__work_visible(w) || atomic_load_explicit(&s->exiting, memory_order_relaxed)) {
        pthread_mutex_lock(&s->idle_lock);
        if (atomic_load_explicit(&w->in_idle, memory_order_relaxed)) {
            idle_remove(s, w);
            /* Search, even past max_searching: the work seen may sit in
             * another worker's deque, and a worker the cap turned away
             * would only come back here (a membarrier per round). */
            atomic_fetch_add_explicit(&s->nsearching, 1, memory_order_relaxed);
            w->searching = true;
            wait = false;
        }
        pthread_mutex_unlock(&s->idle_lock);
        if (!wait)
            return;
        /* Else a notifier already chose us: its token is on the way. */
    }

    /* 3d. Sleep: on the futex, or in epoll_wait while fd waits are
     * registered and no other worker sleeps there (poller.c); then the
     * token comes as a write to the poller's eventfd (give_token). */
    WEFT__STAT(w, parks, 1);
    if (WEFT_UNLIKELY(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))
        weft__hook_park(w);
    for (;;) {
        if (atomic_load_explicit(&w->token, memory_order_acquire))   /* acquire: pairs with give_token */
            break;
        uint64_t timeout = 0;
        if (deadline) {
            uint64_t now = weft__now_ns();
            if (now >= deadline) {
                /* Timed out: leave the set ourselves, unless someone
                 * chose us meanwhile (then take their token). */
                if (leave_idle(s, w)) {
                    if (WEFT_UNLIKELY(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))
                        weft__hook_unpark(w);
                    return;
                }
                continue;
            }
            timeout = deadline - now;
        }
        int polled = weft__poller_sleep(w, deadline);
        if (polled < 0) {
            weft__os_word_wait(&w->token, 0, timeout);
        } else if (polled > 0 && leave_idle(s, w)) {
            /* Readiness made fibers of ours ready: go and run them. The
             * poller is free meanwhile: if fd waits are left and nobody
             * searches, another idle worker is woken to sleep in it (it
             * spins first, so a short burst brings us back there). */
            if (weft__io_waiting(s) && weft__notify_needed(s))
                weft__notify_slow(s);
            if (WEFT_UNLIKELY(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))
                weft__hook_unpark(w);
            return;
        }
    }
    atomic_store_explicit(&w->token, 0, memory_order_relaxed);
    WEFT__STAT(w, wakeups, 1);
    if (WEFT_UNLIKELY(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE)))
        weft__hook_unpark(w);
    /* The waker counted us in nsearching. */
    w->searching = true;
}

/* A bound thread beside workers parks on its own futex: the idle set's
 * steps 3b and 3c with `sleeping` for the set, and a seq_cst fence on
 * both sides (here, and in weft__wake_worker after the push to its inbox
 * or its box of pins). Either the waker sees sleeping and sets the token,
 * or the re-check here sees the push. Plain fences, not membarrier: only
 * weft__wake_worker wakes this thread (spawns to the queues never do: it
 * is not in the set), so its one waker can pay the fence; membarrier was
 * a second system call on every sleep, an interrupt of the other CPU,
 * and over a third of the system calls of a pinned round trip. A token
 * left over from a waker that saw an earlier sleep only ends one later
 * sleep early: the loop looks again. */
void weft__bound_park(weft__worker *w, uint64_t deadline)
{
    atomic_store_explicit(&w->token, 0, memory_order_relaxed);
    atomic_store_explicit(&w->sleeping, true, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: sleeping before the re-check; pairs with the fence in weft__wake_worker */
    if (!weft__work_visible(w)) {
        WEFT__STAT(w, parks, 1);
        bool hooked = weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE);
        if (WEFT_UNLIKELY(hooked))
            weft__hook_park(w);
        while (!atomic_load_explicit(&w->token, memory_order_acquire)) {   /* acquire: pairs with weft__wake_worker */
            uint64_t timeout = 0;
            if (deadline) {
                uint64_t now = weft__now_ns();
                if (now >= deadline)
                    break;
                timeout = deadline - now;
            }
            weft__os_word_wait(&w->token, 0, timeout);
        }
        if (WEFT_UNLIKELY(hooked))
            weft__hook_unpark(w);
    }
    atomic_store_explicit(&w->sleeping, false, memory_order_relaxed);
}

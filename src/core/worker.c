/* This file is private to weft: the worker loop: what a worker runs next
 * (ready fibers, its own queues, the global ring, stealing), spinning and
 * parking when nothing is runnable, and worker threads.
 *
 * Synchronization
 *   deque, lifo   a worker's queues: pushed by the owner, taken by the
 *                 owner and by thieves (deque.c; lifo by atomic exchange,
 *                 acq_rel, pairing with the exchange in weft__submit).
 *                 Only the owner fills lifo (a NEXT spawn's exchange, or
 *                 grab_global's release store into a slot it saw empty:
 *                 nobody else can fill it meanwhile); anyone may empty it
 *                 with an acquire exchange. A thief takes it only after
 *                 a grace period (steal_lifo) during which it re-reads
 *                 the slot, relaxed, as a hint.
 *   global        the scheduler's ring (global_ring.c): any thread pushes and
 *                 pops; a worker takes a batch at a time, runs the first,
 *                 puts the second in its LIFO slot if that is empty and
 *                 the rest on its deque, where others may steal them.
 *   a bound thread's deque and LIFO slot (no workers): its own, taken
 *                 by others only as suspend.c says; a bound thread
 *                 beside workers keeps none and takes one global task at
 *                 a time.
 *   The queries weft__work_queued, weft__work_visible and
 *                 weft__local_work_waiting load with relaxed order: they
 *                 are hints; a worker about to sleep runs its re-check
 *                 after its StoreLoad barrier (park.c, step 3c).
 *   searching, parking: park.c (weft__try_start_searching before a steal,
 *                 weft__stop_searching once work is found, weft__park).
 *   completed     written by the owner only, a release store after every
 *                 task (weft__run_task, worker.h); read with acquire by
 *                 weft__sched_is_idle (task.c).
 *   exiting       set by destroy (sched.c, release); the loop reads it
 *                 with acquire before it leaves.
 *   idle_waiters, idle_gen: a worker about to park bumps idle_gen
 *                 (release) and futex-wakes it when a thread waits for
 *                 the scheduler to go idle (sched.c).
 *   inbox         polled by weft__spin_for_work with a relaxed load, as a hint;
 *                 the owner empties it with an acquire exchange (ready.c).
 *   io_waiters    fd waits registered (poller.c), read relaxed as a hint:
 *                 while it is not 0 the loop looks at the epoll set without
 *                 sleeping every global_interval picks, before it
 *                 spins and while it spins (weft__spin_for_work, also a
 *                 channel's spin in place), so readiness is seen while
 *                 every worker is busy or spinning
 *                 (the bound: global_interval picks of any worker, unless
 *                 one task runs long); readiness found makes its fibers
 *                 ready (poller.c), this worker's onto its ready FIFO.
 *   side_burst    a bound thread's spawns run tasks of its own
 *                 (spawn_bound.c): read relaxed, as a hint, before
 *                 parking (a worker gives its CPU away once first).
 *   tick, global_left, lifo_streak, rng, shuffle_rng, cur, idle_fibers,
 *                 pollers, yield list, timers, blocked, the streaks: owner
 *                 only. The loop fires due timers (timer.c), polls
 *                 wait_until pollers and releases yielded fibers
 *                 (wait_until.c) into the ready FIFO (ready.c).
 *
 * Every fiber of a worker runs the loop (suspend.c, "Fibers"). Each pass:
 * due timers; a ready fiber unless it is the others' turn (ready.c); a
 * local task; past that, the yielded fibers and pollers, an over-budget
 * run_next, a steal if this worker may search; then spinning (spin_us at
 * most, for a budget learnt from the spins before: spin_scans, owner
 * only, weft__spin_for_work) and parking (park.c).
 *
 * Pick order (pick_local): every global_interval-th tick the global ring;
 * then the LIFO slot (at most lifo_budget times in a row); the deque; the
 * global ring (a batch); stealing (searching workers only: each victim's
 * deque, oldest first, then its LIFO slot after a grace period).
 */
#define _GNU_SOURCE
#include <string.h>

#include "loop.h"
#include "park.h"
#include "pin.h"
#include "poller.h"
#include "steal.h"
#include "suspend.h"
#include "task.h"
#include "timer.h"
#include "worker.h"

/* ---- picking work ------------------------------------------------------------------ */

/* Takes a batch from the global ring: runs the first, queues the rest.
 * The second goes to the LIFO slot (when it is empty; never in shuffle
 * mode), so it runs next here unless the first runs long: tasks
 * submitted back to back from outside are often a pair that talk to each
 * other (a producer and its consumer, a ping and its pong), and the first
 * blocks on the second at once. On the deque, the oldest item, a thief
 * woken by this very grab (the hand-off) took it in 3 to 6 runs of 20
 * with the workers asleep, and fibers never migrate: the pair then talked
 * across cores for its whole life, at 10 to 100 times the cost of a
 * round trip on one worker (benchmarks/placement.c). A thief leaves a
 * LIFO slot alone for a grace period (steal, below), as Go's leaves
 * runnext; a task that waits longer is stolen as before. */
static weft__task *grab_global(weft__worker *w)
{
    weft_sched *s = w->s;
    /* A peek first: two loads, where a pop that finds the ring empty
     * costs dozens of instructions, and searching workers ask often. A
     * push it misses is found as a pop racing it would miss it. */
    if (weft__inject_empty(&s->global))
        return NULL;
    weft__node *batch[32];
    unsigned max = 1 + w->deque_capacity / 4;
    if (max > 32)
        max = 32;
    if (w->bound && w->s->nworkers > 0)
        max = 1;   /* such a thread keeps no deque: it runs no loop */
    unsigned n = weft__inject_pop_batch(&s->global, batch, max);
    if (!n)
        return NULL;
    WEFT__STAT(w, global_grabs, 1);
    unsigned i = 1;
    if (n > 1 && !w->shuffle && !atomic_load_explicit(&w->lifo, memory_order_relaxed)) {
        /* Only the owner fills the slot and thieves only empty it: it
         * stays empty until this store. */
        WEFT_TSAN_RELEASE(batch[1]);
        atomic_store_explicit(&w->lifo, batch[1], memory_order_release);   /* release: publishes the task; pairs with the acquire exchange in steal and weft__take_lifo */
        i = 2;
    }
    for (; i < n; i++) {
        if (!weft__deque_push(&w->deque, batch[i])) {
            weft__inject_push_batch(&s->global, batch + i, n - i);
            break;
        }
    }
    if (n > 1)
        weft__notify_work(s);   /* others may take what we queued */
    return weft__as_task(batch[0]);
}

/* Shuffle mode: a task drawn at random from the LIFO slot, the deque and
 * the global ring (whose tasks join the deque first). Only with one
 * worker, so nobody steals. Callable from: owner. */
static weft__task *pick_shuffled(weft__worker *w)
{
    weft__task *t = weft__take_lifo(w);
    if (t && !weft__deque_push(&w->deque, &t->node))
        return t;
    while ((t = grab_global(w)) != NULL) {
        if (!weft__deque_push(&w->deque, &t->node))
            return t;
    }
    if (weft__deque_size(&w->deque) > 1)
        weft__deque_swap_newest(&w->deque, weft__next_rand(&w->shuffle_rng));
    weft__node *n = weft__deque_pop(&w->deque);
    if (n)
        WEFT__STAT(w, local_runs, 1);
    return n ? weft__as_task(n) : NULL;
}

/* NORMAL work in the usual order (see the top of this file). Callable
 * from: owner. */
static inline __attribute__((always_inline)) weft__task *pick_normal(weft__worker *w)
{
    weft_sched *s = w->s;
    weft__task *t;
    w->tick++;
    if (--w->global_left == 0) {   /* every global_interval-th tick; a countdown, not a division */
        w->global_left = w->global_interval;
        /* fd readiness while this worker is busy: a look without
         * sleeping (poller.c); its fibers run from the next pick. */
        if (WEFT_UNLIKELY(weft__io_waiting(s)))
            weft__poller_poll(w);
        t = grab_global(w);
        if (t) {
            WEFT__STAT(w, global_runs, 1);
            return t;
        }
    }
    if (w->lifo_streak < s->cfg.lifo_budget) {
        t = weft__take_lifo(w);
        if (t) {
            w->lifo_streak++;
            WEFT__STAT(w, lifo_runs, 1);
            return t;
        }
    }
    w->lifo_streak = 0;
    weft__node *n = weft__deque_pop(&w->deque);
    if (n) {
        WEFT__STAT(w, local_runs, 1);
        return weft__as_task(n);
    }
    t = weft__take_lifo(w);   /* over budget, but nothing else is local */
    if (t) {
        WEFT__STAT(w, lifo_runs, 1);
        return t;
    }
    t = grab_global(w);
    if (t) {
        WEFT__STAT(w, global_runs, 1);
        return t;
    }
    return NULL;
}

/* The oldest task of a priority ring, or NULL. */
static weft__task *pop_ring(weft__inject *q)
{
    weft__node *n;
    if (weft__inject_empty(q) || weft__inject_pop_batch(q, &n, 1) == 0)
        return NULL;
    return weft__as_task(n);
}

/* A bound thread beside workers: its pinned tasks; then, helping, one
 * task at a time from the rings, HIGH first (it keeps no deque: nobody
 * could steal from it). Stealing is the loop's. */
static weft__task *pick_bound(weft__worker *w)
{
    weft_sched *s = w->s;
    weft__task *t = weft__take_pinned(w);
    if (t || w->no_help)
        return t;
    bool prio = atomic_load_explicit(&s->prio_used, memory_order_relaxed);   /* relaxed: a hint (pin.c) */
    if (prio && (t = pop_ring(&s->prio_high)) != NULL)
        return t;
    if ((t = grab_global(w)) != NULL)
        return t;
    return prio ? pop_ring(&s->prio_low) : NULL;
}

/* pick_local once priorities or pins are in play: HIGH work, pinned
 * tasks, NORMAL work, LOW work; every priority_interval-th pick serves
 * NORMAL or LOW first (in turn), so neither starves. */
static __attribute__((noinline)) weft__task *pick_placed(weft__worker *w)
{
    weft_sched *s = w->s;
    weft__task *t;
    if (weft__bound_beside(w))
        return pick_bound(w);
    bool prio = atomic_load_explicit(&s->prio_used, memory_order_relaxed);   /* relaxed: a hint (pin.c) */
    if (prio) {
        if (--w->prio_left == 0) {
            w->prio_left = s->cfg.priority_interval;
            w->prio_turn = !w->prio_turn;
            t = w->prio_turn ? pop_ring(&s->prio_low) : pick_normal(w);
            if (t)
                return t;
        }
        if ((t = pop_ring(&s->prio_high)) != NULL)
            return t;
    }
    if ((t = weft__take_pinned(w)) != NULL)
        return t;
    if ((t = pick_normal(w)) != NULL)
        return t;
    return prio ? pop_ring(&s->prio_low) : NULL;
}

/* Callable from: owner. NULL when nothing is runnable without stealing. */
static weft__task *pick_local(weft__worker *w)
{
    weft_sched *s = w->s;
    if (WEFT_UNLIKELY(s->cfg.shuffle))
        return pick_shuffled(w);
    /* Relaxed loads: hints. A pin pushed after the look is found at the
     * next pick, or by the re-check before parking (work_visible). */
    if (WEFT_UNLIKELY(atomic_load_explicit(&s->prio_used, memory_order_relaxed) ||
                      atomic_load_explicit(&w->pins_in, memory_order_relaxed) || w->placed))
        return pick_placed(w);
    return pick_normal(w);
}

/* Is a task or a due timer waiting on this worker (not counting
 * stealable work elsewhere)? Cheap: loads only, and the clock only with
 * timers armed. Callable from: owner. */
bool weft__local_work_waiting(weft__worker *w)
{
    if (weft__worker_has_queued(w))
        return true;
    if (w->pin_head || atomic_load_explicit(&w->pins_in, memory_order_relaxed))
        return true;
    if (!weft__inject_empty(&w->s->global))
        return true;
    return weft__timer_due(w);
}

bool weft__work_queued(weft_sched *s)
{
    if (!weft__inject_empty(&s->global) || !weft__inject_empty(&s->prio_high) ||
        !weft__inject_empty(&s->prio_low))
        return true;
    for (unsigned i = 0; i < s->nworkers; i++) {
        weft__worker *v = &s->workers[i];
        if (weft__deque_size(&v->deque) || atomic_load_explicit(&v->lifo, memory_order_relaxed))
            return true;
    }
    return false;
}

bool weft__work_visible(weft__worker *w)
{
    weft_sched *s = w->s;
    if (w->ready_head || w->run_next || atomic_load_explicit(&w->inbox, memory_order_relaxed))
        return true;
    if (w->pin_head || atomic_load_explicit(&w->pins_in, memory_order_relaxed))
        return true;
    if (weft__bound_beside(w) && w->no_help)
        return false;   /* nothing but its own fibers and pins is its business */
    if (w->bound && (weft__worker_has_queued(w) ||
                     atomic_load_explicit(&w->nspill, memory_order_relaxed)))   /* relaxed: nspill a hint (spawn_bound.c) */
        return true;   /* a bound thread's own queues (weft__bound_runs_tasks): nobody else's work */
    return weft__work_queued(s);
}

/* A thief that finds a victim's deque empty and its LIFO slot full
 * waits this long before it takes the slot's task. The slot holds what
 * its owner meant to run next: a NEXT spawn, or the second task of a
 * batch from the global ring (grab_global), and the usual case is that
 * the task the owner runs now is about to block on it (a spawn and its
 * consumer, a ping and its pong) and the owner takes it within a
 * microsecond. Stolen, the pair would talk across cores for its whole
 * life (fibers are pinned). Go's runqgrab waits 3 us for its runnext
 * likewise. Half of it is a spin re-reading the slot; then the thief
 * yields its CPU once, in case the owner waits for that CPU (a woken
 * thief often lands on its waker's), and looks again. */
#define WEFT__LIFO_GRACE_NS 3000

/* Takes victim's LIFO slot after the grace period, if it is still full.
 * Callable from: a thief (steal). */
static __attribute__((noinline)) weft__node *steal_lifo(weft__worker *victim)
{
    uint64_t until = weft__now_ns() + WEFT__LIFO_GRACE_NS / 2;
    for (unsigned n = 1;; n++) {
        if (!atomic_load_explicit(&victim->lifo, memory_order_relaxed))   /* relaxed: a hint; the exchange below acquires */
            return NULL;   /* its owner took it */
        weft__cpu_relax();
        if (n % WEFT__SPIN_SCAN == 0 && weft__now_ns() >= until)
            break;
    }
    weft__os_yield();
    if (!atomic_load_explicit(&victim->lifo, memory_order_relaxed))   /* relaxed: as above */
        return NULL;
    weft__node *node = atomic_exchange_explicit(&victim->lifo, NULL,
                                                memory_order_acquire);    /* acquire: pairs with the exchange in submit and the store in grab_global */
    if (node)
        WEFT_TSAN_ACQUIRE(node);
    return node;
}

/* Visits every other worker once, from a random start with a random
 * stride coprime with the worker count (Go's steal order). */
static weft__task *steal(weft__worker *w)
{
    weft_sched *s = w->s;
    unsigned n = s->nworkers;
    if (n == 0)   /* w is a bound thread: its own spilled spawns, oldest first (spawn_bound.c) */
        return weft__spill_take(w);
    if (n == 1 && !w->bound)
        return NULL;
    uint64_t r = weft__next_rand(&w->rng);
    unsigned start = (unsigned)(r % n);
    unsigned stride = s->coprimes[(r >> 32) % s->ncoprimes];
    for (unsigned k = 0; k < n; k++) {
        weft__worker *victim = &s->workers[weft__victim(start, stride, k, n)];
        if (victim == w)
            continue;
        WEFT__STAT(w, steal_attempts, 1);
        weft__node *node = weft__deque_steal(&victim->deque);
        if (!node && atomic_load_explicit(&victim->lifo, memory_order_relaxed))
            node = steal_lifo(victim);
        if (node) {
            WEFT__STAT(w, steals, 1);
            if (WEFT_UNLIKELY(weft__hooks(w) & WEFT__HOOK_TRACE))
                weft__hook_steal(w, victim);
            return weft__as_task(node);
        }
    }
    return NULL;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* Fires the timers that are due. Callable from: owner. */
static void fire_due_timers(weft__worker *w)
{
    if (!w->ntimers)
        return;
    uint64_t now = weft__now_ns();
    while (w->ntimers && w->timers[0]->deadline <= now) {
        weft__timer *t = w->timers[0];
        weft__timer_disarm(w, t);
        t->fire(t);
    }
}

/* Yielded fibers rejoin the ready FIFO. Callable from: owner. */
static void release_yielded(weft__worker *w)
{
    if (!w->yield_head)
        return;
    if (w->ready_tail)
        w->ready_tail->next = w->yield_head;
    else
        w->ready_head = w->yield_head;
    w->ready_tail = w->yield_tail;
    w->yield_head = w->yield_tail = NULL;
}

/* Polls the fibers suspended in wait_until; ready ones move to the FIFO. */
static void poll_waiters(weft__worker *w)
{
    weft__fiber **pp = &w->pollers;
    while (*pp) {
        weft__fiber *f = *pp;
        weft__fstate *st = weft__fstate_of(f);
        if (st->pred(st->pred_ctx)) {
            *pp = st->poll_next;
            st->poll_next = NULL;
            weft__ready_append(w, f);
        } else {
            pp = &st->poll_next;
        }
    }
}

/* Shuffle mode: is a fiber ready? Callable from: owner. */
static bool fiber_waiting(weft__worker *w)
{
    return w->ready_head || w->run_next || atomic_load_explicit(&w->inbox, memory_order_relaxed);
}

static void notify_idle_waiters(weft_sched *s)
{
    if (atomic_load_explicit(&s->idle_waiters, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&s->idle_gen, 1, memory_order_release);  /* release: pairs with acquire in wait_idle */
        weft__os_word_wake(&s->idle_gen, INT32_MAX);
    }
}

/* When nothing is runnable: how long to sleep. Pollers are re-checked
 * with a growing back-off; timers wake at their deadline. So is the
 * epoll set by a bound thread beside workers while fibers of its own
 * wait on descriptors: it never sleeps in epoll_wait (that is a parked
 * worker's, park.c), and a worker looks only between tasks, so with
 * every worker in a long task nobody else would see the readiness. */
static uint64_t park_deadline(weft__worker *w, unsigned idle_rounds)
{
    uint64_t d = 0;
    if (w->ntimers)
        d = w->timers[0]->deadline;
    if (w->pollers || (WEFT_UNLIKELY(w->io_waits) && weft__bound_beside(w))) {
        unsigned shift = idle_rounds < 10 ? idle_rounds : 10;
        uint64_t p = weft__now_ns() + (1000u << shift);   /* 1 us .. 1 ms */
        if (!d || p < d)
            d = p;
    }
    return d;
}

/* The spin's budget, learnt (owner only: spin_scans, spin_skipped). A
 * spin that found something raises it to four times the scans it took;
 * one that found nothing halves it, down to 0: then only every
 * WEFT__SPIN_PROBE_EVERY-th spin looks, for WEFT__SPIN_PROBE_SCANS scans,
 * so that the budget grows back when hand-offs get quick again. Why: a
 * spin pays only when what it waits for comes from a thread running on
 * another CPU. On a machine with fewer free CPUs than spinning threads
 * (two workers and a bound thread on two cores, or one core taken by
 * other work) the spin holds the very CPU its waker needs, and every
 * hand-off costs a spin period or a time slice: measured, a pinned round
 * trip took 0.96 ms on average with spin_us 50 against 3.9 us with
 * spinning off (issue 36). Spins that keep failing now stop, and the
 * thread sleeps at once; spins that succeed keep their length. A fiber
 * spinning in place on a channel's slot (word) learns apart from the
 * loop (slot_spin_scans): its peer has just run, so its spins succeed
 * where the loop's idle ones fail, and one budget would let the loop's
 * failures stop them. */
static inline bool spin_won(weft__worker *w, unsigned *budget, unsigned n)
{
    unsigned want = 4 * (n / WEFT__SPIN_SCAN + 1);
    if (WEFT_UNLIKELY(want > *budget)) {
        unsigned cap = 2 * w->s->cfg.spin_us + 2;   /* spin_us bounds the time anyway */
        *budget = want < cap ? want : cap;
    }
    return true;
}

#ifdef WEFT_TEST_SEAMS
/* Test seam: when true, a spin that fails keeps its budget, so a test of
 * what happens while a fiber waits in place (chan_handoff) gets such
 * waits on a loaded machine too, where failed spins would stop them.
 * false outside tests; libweft has no such variable. */
bool weft__spin_keep_budget;
#define KEEP_BUDGET() (weft__spin_keep_budget)
#else
#define KEEP_BUDGET() false
#endif

static inline bool spin_lost(unsigned *budget)
{
    if (!KEEP_BUDGET())
        *budget /= 2;
    return false;
}

/* Spins up to the learnt budget (above), and up to cfg.spin_us, for work
 * to show up; true if it did, or if
 * word (NULL: none) no longer reads expect (a fiber waiting in place on
 * a channel's slot, suspend.c's host_spin: the same spin moved into the
 * fiber). The inbox, where a fiber of this worker lands when another
 * thread wakes it (a channel's reply from another worker, an event set
 * elsewhere), is polled at every pause: it is this worker's own line,
 * read-only while nothing arrives, so the hand-off costs one cache miss
 * instead of the rest of a back-off step (an exponential back-off capped
 * at 4096 empty iterations, about 1.3 us, made a two-worker ping-pong
 * wait out half a step per message: 1.2 us a round trip against 0.6 us
 * now). Tasks anywhere else (deques, LIFO slots, the global ring) and
 * this worker's due timers are looked for every WEFT__SPIN_SCAN pauses
 * (so spin_us counts from the first of those looks), with its
 * wait_until predicates and, less often, the epoll set: anything that
 * can make work ready for this worker ends the spin. Callable from:
 * owner, with nothing runnable locally. */
bool weft__spin_for_work(weft__worker *w, const _Atomic unsigned char *word, unsigned expect)
{
    unsigned *learnt = word ? &w->slot_spin_scans : &w->spin_scans;
    unsigned budget = *learnt;
    if (WEFT_UNLIKELY(budget == 0)) {
        if (++w->spin_skipped % WEFT__SPIN_PROBE_EVERY != 0)
            return false;
        budget = WEFT__SPIN_PROBE_SCANS;
    }
    uint64_t until = 0;   /* read at the first scan: most spins end sooner, and a clock read at the start delays the first look */
    for (unsigned n = 1;; n++) {
        if (word && atomic_load_explicit(word, memory_order_acquire) != expect)   /* acquire: pairs with the waker's release store */
            return spin_won(w, learnt, n);
        if (atomic_load_explicit(&w->inbox, memory_order_relaxed) ||
            atomic_load_explicit(&w->pins_in, memory_order_relaxed))   /* relaxed: hints; the exchanges that take them acquire */
            return spin_won(w, learnt, n);
        if (n % WEFT__SPIN_SCAN == 0) {
            if (weft__work_visible(w) || weft__timer_due(w))   /* a sleep shorter than spin_us ends on time */
                return spin_won(w, learnt, n);
            /* Readiness that nobody announces to this worker: its
             * wait_until predicates (owner only, see wait_until.c) and the
             * epoll set (a descriptor or child made ready while no
             * worker sleeps in epoll_wait: only a look finds it). Left
             * to the loop, a fiber waiting on either would wait out the
             * whole spin (spin_us, up to 1 s) behind a channel's spinner
             * or the loop's own spin. The set costs a system call: every
             * WEFT__SPIN_IO_SCANS-th scan, and only with fd waits
             * registered. Readiness of this worker's fibers lands on its
             * ready FIFO, others' in their inboxes (poller.c). */
            if (w->pollers) {
                poll_waiters(w);
                if (w->ready_head)
                    return spin_won(w, learnt, n);
            }
            if (n % (WEFT__SPIN_SCAN * WEFT__SPIN_IO_SCANS) == 0 && weft__io_waiting(w->s)) {
                weft__poller_poll(w);
                if (w->ready_head)
                    return spin_won(w, learnt, n);
            }
            if (n / WEFT__SPIN_SCAN >= budget)
                return spin_lost(learnt);
            uint64_t now = weft__now_ns();
            if (!until)
                until = now + (uint64_t)w->s->cfg.spin_us * 1000u;
            else if (now >= until)
                return spin_lost(learnt);
        }
        weft__cpu_relax();
    }
}

/* The loop every fiber of a worker runs. Returns only on the host fiber
 * when the scheduler exits (or, on a bound thread, never: it switches to
 * the host fiber once that is ready). */
void weft__worker_loop(weft__worker *w)
{
    weft_sched *s = w->s;
    unsigned idle_rounds = 0;
    for (;;) {
        /* Resumable fibers first, in the order they were made ready.
         * Short of fibers, every fiber that could go on is let in before
         * a new task may start (and take another fiber if it blocks). */
        if (WEFT_UNLIKELY(weft__short_of_fibers(w))) {
            release_yielded(w);
            if (w->pollers && (w->tick & 3) == 0)   /* every 4th pick: a poll walks every poller */
                poll_waiters(w);
        } else if ((w->tick & 15) == 0 && w->pollers) {
            poll_waiters(w);
        }
        fire_due_timers(w);
        weft__fiber *f = NULL;
        /* Shuffle mode draws between a ready fiber and a task, except
         * when short of fibers: then fibers first there too, or a storm
         * of yields would start a fiber per task. */
        if (WEFT_UNLIKELY(s->cfg.shuffle) ? weft__short_of_fibers(w) || !weft__local_work_waiting(w) ||
                                                !fiber_waiting(w) ||
                                                (weft__next_rand(&w->shuffle_rng) & 1)
                                          : !weft__others_turn(w))
            f = weft__take_ready(w);
        if (f) {
            /* A ready fiber is work found: leave the searching state as
             * for a task (the last searcher hands off). A searcher that
             * kept its place while the fiber ran would make submitters
             * skip waking parked workers (they count on it to find
             * their work) and keep others from searching. */
            weft__stop_searching(w);
            weft__fiber *self = w->cur;
            self->next = w->idle_fibers;
            w->idle_fibers = self;
            weft__switch_to(w, f);
            idle_rounds = 0;
            continue;
        }
        weft__task *t = pick_local(w);
        if (!t && w->fiber_streak) {
            /* No local task (after the others' turn, or with no fiber
             * ready): let yielded fibers and pollers in, go on. */
            w->fiber_streak = 0;
            release_yielded(w);
            if (w->pollers)
                poll_waiters(w);
            if (w->ready_head || w->run_next)
                continue;
        }
        if (!t && w->run_next) {
            /* Over budget with nothing local to let through: go on. */
            f = weft__take_run_next(w);
            weft__stop_searching(w);   /* as for a ready fiber above */
            weft__fiber *self = w->cur;
            self->next = w->idle_fibers;
            w->idle_fibers = self;
            weft__switch_to(w, f);
            idle_rounds = 0;
            continue;
        }
        bool stolen = false;
        if (!t && WEFT_UNLIKELY(weft__bound_beside(w))) {
            /* A helping bound thread steals without joining the
             * searchers: submitters count on searchers to find their
             * work, and this thread goes back to its own code when its
             * wait ends. */
            if (!w->no_help) {
                t = steal(w);
                stolen = t != NULL;
            }
        } else if (!t && weft__try_start_searching(w)) {
            t = steal(w);
            stolen = t != NULL;
        }
        if (t) {
            if (w->searching)
                weft__stop_searching(w);   /* the last searcher hands off */
            if (stolen)
                WEFT__STAT(w, stolen_runs, 1);
            w->next_streak = 0;
            w->fiber_streak = 0;
            weft__run_task(w, t);
            release_yielded(w);
            idle_rounds = 0;
            continue;
        }
        /* Nothing to run. */
        if (w->yield_head) {
            release_yielded(w);
            continue;
        }
        if (w->pollers) {
            poll_waiters(w);
            if (w->ready_head)
                continue;
        }
        if (WEFT_UNLIKELY(weft__io_waiting(s))) {
            weft__poller_poll(w);   /* before spinning: readiness may be there already */
            if (w->ready_head)
                continue;
        }
        /* A bound thread that does not help spins only with a CPU to
         * spare: on a full machine its spin holds the CPU that the thread
         * it waits for needs (a round trip then costs two spin periods). */
        if (idle_rounds < 64 && s->cfg.spin_us &&
            !(WEFT_UNLIKELY(w->no_help) && !s->spare_cpu)) {
            /* Spin a little before sleeping: work often comes right back. */
            bool found = weft__spin_for_work(w, NULL, 0);
            idle_rounds++;
            if (found)
                continue;
        }
        if (WEFT_UNLIKELY(weft__bound_beside(w))) {
            /* Its own futex, never the idle set; it leaves the loop when
             * its host fiber is ready (the wait it is in ended). */
            /* Pollers: re-checked every 32 us at most; the epoll set
             * (io_waits, park_deadline): every 1 ms at most. */
            weft__bound_park(w, park_deadline(w, w->pollers && idle_rounds > 5 ? 5 : idle_rounds));
            idle_rounds++;
            continue;
        }
        if (atomic_load_explicit(&s->exiting, memory_order_acquire) &&
            !w->blocked && !w->pollers && !w->ntimers && !weft__work_visible(w)) {
            weft__stop_searching(w);
            if (w->cur == &w->host)
                return;
            /* Leave on the thread's own stack (a worker's host waits in
             * weft__worker_thread; it is in idle_fibers only if it ran
             * the loop, which it does when no first fiber could be made). */
            weft__fiber *self = w->cur;
            self->next = w->idle_fibers;
            w->idle_fibers = self;
            for (weft__fiber **pp = &w->idle_fibers; *pp; pp = &(*pp)->next) {
                if (*pp == &w->host) {
                    *pp = w->host.next;
                    break;
                }
            }
            weft__switch_to(w, &w->host);
            continue;   /* not reached for workers: the host returns */
        }
        /* A bound thread spawning faster than the workers take its
         * queue runs the rest itself (spawn_bound.c, "Spawns of a bound
         * thread beside workers"). Sharing its CPU with it, a worker
         * that parked would be woken by its next spawn and take the CPU
         * back from it at once for that one task, a sleep and a wake-up
         * a task: so it gives its CPU away once first, not parked yet
         * (the spawns meanwhile wake nobody), and looks again. */
        if (WEFT_UNLIKELY(atomic_load_explicit(&s->side_burst, memory_order_relaxed)) && idle_rounds < 2) {   /* relaxed: a hint */
            idle_rounds = 2;   /* once per idle stretch: a task found sets it back to 0 */
            weft__os_yield();
            continue;
        }
        notify_idle_waiters(s);
        weft__park(w, park_deadline(w, idle_rounds));
        idle_rounds++;
    }
}

/* Entry of every fiber a worker creates: its state lives in this frame. */
void weft__fiber_main(void *arg)
{
    weft__worker *w = arg;
    weft__fstate st = { .w = w };
    w->cur->host = &st;
    weft__worker_loop(w);
    weft__panic("fiber_main: a worker loop returned on a pooled fiber");
}

/* A bound thread of a scheduler without workers waits in its own code
 * (weft_sched_wait_idle, destroy, unbind) and no fiber can be had: one step of
 * the loop on the thread's own stack, as a worker's host runs the loop
 * when it cannot map its first fiber. Due timers fire, pollers are
 * polled and a queued task runs here, nested under the wait; a task that
 * blocks in it gets WEFT_ENOMEM from its wait. With nothing to do, a
 * short sleep: what would change that comes from other threads.
 * Callable from: owner, on its host fiber. */
__attribute__((noinline)) void weft__host_runs_one(weft__worker *w)
{
    fire_due_timers(w);
    release_yielded(w);
    if (w->pollers)
        poll_waiters(w);
    if (w->ready_head || w->run_next)
        return;   /* a fiber can go on after all: have_fiber will say so */
    weft__task *t = pick_local(w);
    if (t) {
        weft__fstate_cur(w)->nest++;   /* nested under the wait (fstate.nest) */
        weft__run_task(w, t);
        weft__fstate_cur(w)->nest--;
        weft__bound_hand_back(w);   /* its spawns went on this thread's deque */
        return;
    }
    weft__os_sleep_ns(WEFT__RETRY_NS);
}

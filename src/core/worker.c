/* This file is private to weft: the worker loop, picking and stealing,
 * fibers on block, timers, wait_until, yield and sleep.
 *
 * Synchronization
 *   deque, lifo   a worker's queues: pushed by the owner, taken by the
 *                 owner and by thieves (deque.c; lifo by atomic exchange,
 *                 acq_rel, pairing with the exchange in weft__submit).
 *   inbox         fibers made ready by other threads: a Treiber stack,
 *                 pushed with CAS (release) by any thread, emptied by the
 *                 owner with one exchange (acquire). The owner then keeps
 *                 them in its own FIFO (ready_head/tail), owner only.
 *   wakers        threads between announcing a push to the inbox and
 *                 their last touch of the worker (RMW; release on the way
 *                 out). Destroy and unbind wait for 0 before freeing:
 *                 the woken fiber can finish, and the scheduler go idle,
 *                 before its waker has returned.
 *   run_next, next_streak: owner only. A fiber woken by the running fiber
 *                 of its own worker through weft__ready_next waits in
 *                 run_next and goes before the FIFO, at most lifo_budget
 *                 times in a row; then one FIFO fiber or one local task
 *                 (deque, LIFO slot, global ring) goes first. A fiber it
 *                 displaces from run_next joins the FIFO's tail.
 *   fiber_streak: owner only. Ready fibers go before tasks, and a fiber
 *                 that blocks switches straight to the next ready one,
 *                 bypassing the loop. So that fibers waking each other
 *                 (or a short timed wait in a loop) cannot starve the
 *                 rest, after global_interval resumptions in a row the
 *                 loop gets a turn when something else waits: it fires
 *                 due timers, runs one local task, releases yielded
 *                 fibers and polls wait_until pollers.
 *   cur, idle_fibers, pollers, timers, blocked: owner only.
 *   held          per fiber (weft__fstate, core.h): owner only. What the
 *                 fiber runs next without having queued it; submitted by
 *                 suspend and weft_yield before the fiber leaves, and by
 *                 no_fiber and thread_sleep before the thread waits.
 *   a bound thread's deque and LIFO slot (workers = 0): owner only, and
 *                 nobody else looks at them (no workers, no stealing);
 *                 filled only by its tasks' spawns, and empty whenever its
 *                 own code runs (bound_hand_back on every host resume).
 *
 * Blocking a fiber (host_block; weft_wait_until, weft_sleep alike):
 *   1. Under the primitive's lock, with the waiter queued: have_fiber,
 *      so that a fiber to go on with exists (ready, idle, or mapped now
 *      and left idle). If none: publish what the fiber holds, return
 *      WEFT_ENOMEM; the caller unqueues the waiter, nothing was seen.
 *   2. Arm the timer if the wait has a deadline (same failure as 1).
 *   3. Unlock. A notifier may now make this fiber ready: it only queues
 *      it on this worker, which cannot look before step 5.
 *   4. Publish what the fiber holds (weft__publish_held).
 *   5. next_fiber, which finds what step 1 promised, and switch.
 *   6. Resumed (pinned, on this worker): disarm the timer; on a bound
 *      thread's host, hand its deque back.
 *
 * Fibers. Every fiber of a worker runs the same loop. A task runs on the
 * fiber that picked it. When it blocks (weft__suspend), its fiber leaves
 * and the worker continues on a ready fiber, an idle one, or a new one.
 * When the loop finds a ready fiber it switches to it and becomes idle
 * itself; the resumed fiber finishes its task and carries on with the
 * loop. Fibers are pinned: only their own worker resumes them, so a fiber
 * made ready before it has finished switching out is harmless (its
 * worker cannot look at the inbox until the switch is done).
 *
 * Pick order (weft__pick): every global_interval-th tick the global ring;
 * then the LIFO slot (at most lifo_budget times in a row); the deque; the
 * global ring (a batch); stealing (searching workers only).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sched.h>
#include <time.h>

#include <ck_backoff.h>

#include "core.h"

/* Deepest nesting of tasks run inline by wait_until before the waiting
 * fiber is switched out instead. */
#define WEFT__INLINE_DEPTH 64

uint64_t weft__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline weft__fstate *fstate(weft__fiber *f)
{
    return f->host;
}

/* ---- timers: a binary min-heap per worker, owner only ------------------ */

static void heap_swap(weft__worker *w, unsigned a, unsigned b)
{
    weft__timer *t = w->timers[a];
    w->timers[a] = w->timers[b];
    w->timers[b] = t;
    w->timers[a]->index = a;
    w->timers[b]->index = b;
}

static void heap_up(weft__worker *w, unsigned i)
{
    while (i > 0) {
        unsigned p = (i - 1) / 2;
        if (w->timers[p]->deadline <= w->timers[i]->deadline)
            break;
        heap_swap(w, i, p);
        i = p;
    }
}

static void heap_down(weft__worker *w, unsigned i)
{
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->ntimers && w->timers[l]->deadline < w->timers[m]->deadline)
            m = l;
        if (r < w->ntimers && w->timers[r]->deadline < w->timers[m]->deadline)
            m = r;
        if (m == i)
            return;
        heap_swap(w, i, m);
        i = m;
    }
}

/* Callable from: owner. Timers live in the waiter's frame; the heap holds
 * pointers, grown by doubling (amortized, and only past the warm size).
 * false: the heap could not grow (out of memory), nothing armed. */
bool weft__timer_arm(weft__worker *w, weft__timer *t)
{
    if (w->ntimers == w->timer_cap) {
        unsigned cap = w->timer_cap ? w->timer_cap * 2 : 64;
        weft__timer **n = weft__alloc_with(&w->s->cfg.allocator, sizeof *n * cap);
        if (!n)
            return false;
        if (w->timers) {
            memcpy(n, w->timers, sizeof *n * w->ntimers);
            weft__free_with(&w->s->cfg.allocator, w->timers, sizeof *n * w->timer_cap);
        }
        w->timers = n;
        w->timer_cap = cap;
    }
    t->index = w->ntimers;
    w->timers[w->ntimers++] = t;
    heap_up(w, t->index);
    return true;
}

/* Callable from: owner. False if t had fired already. */
bool weft__timer_disarm(weft__worker *w, weft__timer *t)
{
    unsigned i = t->index;
    if (i >= w->ntimers || w->timers[i] != t)
        return false;
    w->ntimers--;
    if (i != w->ntimers) {
        w->timers[i] = w->timers[w->ntimers];
        w->timers[i]->index = i;
        heap_down(w, i);
        heap_up(w, i);
    }
    t->index = ~0u;
    return true;
}

static bool timer_due(weft__worker *w)
{
    return w->ntimers && w->timers[0]->deadline <= weft__now_ns();
}

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

/* ---- ready fibers ----------------------------------------------------------- */

static void ready_append(weft__worker *w, weft__fiber *f)
{
    f->next = NULL;
    if (w->ready_tail)
        w->ready_tail->next = f;
    else
        w->ready_head = f;
    w->ready_tail = f;
}

/* Moves the inbox to the owner's FIFO, oldest first. Callable from: owner. */
static void drain_inbox(weft__worker *w)
{
    if (!atomic_load_explicit(&w->inbox, memory_order_relaxed))
        return;
    weft__fiber *f = atomic_exchange_explicit(&w->inbox, NULL,
                                              memory_order_acquire);  /* acquire: pairs with release CAS in weft__ready */
    weft__fiber *rev = NULL;
    while (f) {
        weft__fiber *n = f->next;
        f->next = rev;
        rev = f;
        f = n;
    }
    while (rev) {
        weft__fiber *n = rev->next;
        ready_append(w, rev);
        rev = n;
    }
}

static uint64_t next_rand(uint64_t *s);

/* Shuffle mode: is a fiber ready? Callable from: owner. */
static bool fiber_waiting(weft__worker *w)
{
    return w->ready_head || w->run_next || atomic_load_explicit(&w->inbox, memory_order_relaxed);
}

/* Shuffle mode: any ready fiber, run_next included, drawn at random.
 * Callable from: owner. */
static weft__fiber *take_ready_shuffled(weft__worker *w)
{
    drain_inbox(w);
    if (w->run_next) {
        ready_append(w, w->run_next);
        w->run_next = NULL;
    }
    unsigned n = 0;
    for (weft__fiber *f = w->ready_head; f; f = f->next)
        n++;
    if (!n)
        return NULL;
    unsigned k = n > 1 ? (unsigned)(next_rand(&w->shuffle_rng) % n) : 0;
    weft__fiber **pp = &w->ready_head, *prev = NULL;
    while (k--) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    weft__fiber *f = *pp;
    *pp = f->next;
    if (w->ready_tail == f)
        w->ready_tail = prev;
    f->next = NULL;
    w->fiber_streak++;
    return f;
}

/* The next resumable fiber, or NULL. run_next goes first while within
 * its budget; past it, the FIFO's head. A run_next fiber over budget is
 * left for the caller to weigh against local tasks. The inbox joins the
 * FIFO's tail every time, not only when the FIFO is empty: fibers of this
 * worker that wake each other keep the FIFO from ever emptying, and a
 * fiber woken from another thread would wait for ever behind them.
 * Callable from: owner. */
static weft__fiber *take_ready(weft__worker *w)
{
    if (WEFT_UNLIKELY(w->shuffle))
        return take_ready_shuffled(w);
    weft__fiber *f = w->run_next;
    if (f && w->next_streak < w->lifo_budget) {
        w->run_next = NULL;
        w->next_streak++;
        w->fiber_streak++;
        return f;
    }
    drain_inbox(w);
    f = w->ready_head;
    if (f) {
        w->ready_head = f->next;
        if (!w->ready_head)
            w->ready_tail = NULL;
        f->next = NULL;
        w->next_streak = 0;
        w->fiber_streak++;
    }
    return f;
}

/* The run_next fiber regardless of its budget (the streak starts over).
 * Callable from: owner, once nothing else local is waiting. */
static weft__fiber *take_run_next(weft__worker *w)
{
    weft__fiber *f = w->run_next;
    w->run_next = NULL;
    w->next_streak = 0;
    w->fiber_streak++;
    return f;
}

void weft__ready(weft__fiber *f)
{
    weft__fstate *st = fstate(f);
    weft__worker *w = st->w;
    if (weft__tls_worker == w) {
        ready_append(w, f);
        return;
    }
    /* Once f is in the inbox it may run and finish, and the scheduler
     * may be destroyed (or a bound thread unbound) while we still wake
     * the worker: announce ourselves first, leave after. */
    atomic_fetch_add_explicit(&w->wakers, 1, memory_order_relaxed);   /* relaxed: the release CAS below publishes it; seen by weft__worker_wait_wakers through the task's completion */
    weft__fiber *head = atomic_load_explicit(&w->inbox, memory_order_relaxed);
    do {
        f->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&w->inbox, &head, f,
                 memory_order_release, memory_order_relaxed));  /* release: pairs with acquire in drain_inbox */
    weft__wake_worker(w->s, w);
    atomic_fetch_sub_explicit(&w->wakers, 1, memory_order_release);   /* release: our last touch of w; pairs with the acquire in weft__worker_wait_wakers */
}

void weft__worker_wait_wakers(weft__worker *w)
{
    while (atomic_load_explicit(&w->wakers, memory_order_acquire))   /* acquire: pairs with the release in weft__ready */
        sched_yield();
}

void weft__ready_next(weft__fiber *f)
{
    weft__worker *w = fstate(f)->w;
    if (weft__tls_worker != w) {
        weft__ready(f);
        return;
    }
    if (w->run_next)
        ready_append(w, w->run_next);
    w->run_next = f;
}

/* ---- fibers --------------------------------------------------------------------- */

static void loop(weft__worker *w);
static void release_yielded(weft__worker *w);

/* Entry of every fiber a worker creates: its state lives in this frame. */
static void fiber_main(void *arg)
{
    weft__worker *w = arg;
    weft__fstate st = { .w = w };
    w->cur->host = &st;
    loop(w);
    weft__panic("fiber_main: a worker loop returned on a pooled fiber");
}

/* Is a task or a due timer waiting on this worker (not counting
 * stealable work elsewhere)? Cheap: loads only, and the clock only with
 * timers armed. Callable from: owner. */
static bool local_work_waiting(weft__worker *w)
{
    if (weft__deque_size(&w->deque) || atomic_load_explicit(&w->lifo, memory_order_relaxed))
        return true;
    if (!weft__inject_empty(&w->s->global))
        return true;
    return timer_due(w);
}

/* Have ready fibers run long enough (fiber_streak) while something else
 * waits that only the loop serves? If nothing waits, the count starts
 * over, so the check costs a few loads once per global_interval
 * resumptions. Callable from: owner. */
static bool others_turn(weft__worker *w)
{
    if (w->fiber_streak < w->global_interval)
        return false;
    if (w->yield_head || w->pollers || local_work_waiting(w))
        return true;
    w->fiber_streak = 0;
    return false;
}

/* A fiber to continue on: a ready one, an idle one (to run the loop), or
 * a new one; NULL only if none is ready or idle and none can be mapped
 * (memory or vm.max_map_count ran out), which have_fiber rules out first.
 * next_fiber's cases past its first. */
static __attribute__((noinline)) weft__fiber *next_fiber_slow(weft__worker *w)
{
    weft__fiber *f;
    if (!others_turn(w)) {
        f = take_ready(w);
        if (f)
            return f;
        if (w->run_next && !local_work_waiting(w))
            return take_run_next(w);   /* over budget, but nothing else is waiting */
    }
    f = w->idle_fibers;
    if (f) {
        w->idle_fibers = f->next;
        f->next = NULL;
        return f;
    }
    if (weft__fiber_create(&w->fibers, &f, fiber_main, w) == WEFT_OK) {
        WEFT__STAT(w, fibers_created, 1);
        return f;
    }
    /* None can be mapped: a ready fiber goes on whatever its turn (the
     * fairness above only orders them). have_fiber, asked before a fiber
     * commits to block, found one of these or an idle one; NULL is then
     * unreachable. */
    f = take_ready(w);
    if (!f && w->run_next)
        f = take_run_next(w);
    return f;
}

/* As next_fiber_slow, with its first cases inline: a fiber woken by the
 * running one (run_next), while it is not the others' turn, goes next if
 * it is within its budget, or, past it, if nothing else waits (no ready
 * fiber, no local task, no due timer), and its streak starts over. That
 * is what take_ready and next_fiber_slow would pick there, in the same
 * order; it is the case of fibers handing work to each other (a channel
 * ping-pong suspends through it on every message). */
static inline __attribute__((always_inline)) weft__fiber *next_fiber(weft__worker *w)
{
    weft__fiber *f = w->run_next;
    if (WEFT_LIKELY(f != NULL && w->fiber_streak < w->global_interval && !w->shuffle)) {
        if (WEFT_LIKELY(w->next_streak < w->lifo_budget)) {
            w->run_next = NULL;
            w->next_streak++;
            w->fiber_streak++;
            return f;
        }
        if (!w->ready_head && !atomic_load_explicit(&w->inbox, memory_order_relaxed) &&
            !local_work_waiting(w))   /* relaxed: a hint, as in drain_inbox; a fiber pushed later waits its turn */
            return take_run_next(w);
    }
    return next_fiber_slow(w);
}

/* Switches w from fiber `from`, the current one, to `to`. */
static inline void switch_from(weft__worker *w, weft__fiber *from, weft__fiber *to)
{
    w->cur = to;
    WEFT__STAT(w, fiber_switches, 1);
    weft__fiber_switch(from, to);
    /* Back on `from`, on the same worker: fibers are pinned. */
}

static inline void switch_to(weft__worker *w, weft__fiber *to)
{
    switch_from(w, w->cur, to);
}

static weft__task *take_lifo(weft__worker *w);
static void poll_waiters(weft__worker *w);
static void fire_due_timers(weft__worker *w);

/* A bound thread of a scheduler without workers goes back to its own
 * code: what its tasks queued on its deque and LIFO slot, which nobody
 * else looks at, goes to the global ring, oldest first, for whichever
 * bound thread blocks next (weft__bound_runs_tasks). Callable from:
 * owner, on its host fiber. */
static __attribute__((noinline)) void bound_hand_back(weft__worker *w)
{
    if (!weft__deque_size(&w->deque) && !atomic_load_explicit(&w->lifo, memory_order_relaxed))   /* relaxed: only this thread writes it */
        return;   /* the usual case: nothing left behind */
    weft__task *t = take_lifo(w);
    weft__node *batch[64];
    unsigned n;
    while ((n = weft__deque_pop_oldest(&w->deque, batch, 64)) != 0)
        weft__inject_push_batch(&w->s->global, batch, n);
    if (t)
        weft__inject_push(&w->s->global, &t->node);
    weft__notify_work(w->s);
}

/* Is there a fiber for w to go on with if the running one blocks now?
 * One ready or idle, or one mapped now and kept idle for the switch.
 * False only when none is ready or idle and none can be mapped (memory
 * or vm.max_map_count ran out): the caller then fails its wait with
 * WEFT_ENOMEM instead of blocking. Callable from: owner, before the
 * blocking fiber commits to leave. */
static __attribute__((noinline)) bool have_fiber_slow(weft__worker *w)
{
    drain_inbox(w);
    if (w->ready_head)
        return true;
    weft__fiber *f;
    if (weft__fiber_create(&w->fibers, &f, fiber_main, w) != WEFT_OK)
        return false;
    WEFT__STAT(w, fibers_created, 1);
    f->next = w->idle_fibers;
    w->idle_fibers = f;
    return true;
}

/* Callable from: owner (see have_fiber_slow). */
static inline bool have_fiber(weft__worker *w)
{
    if (WEFT_LIKELY(w->idle_fibers || w->run_next || w->ready_head))
        return true;
    return have_fiber_slow(w);
}

/* weft__suspend for self = w->cur, with w->track read once by the caller (host_block's fast
 * path passes false, which folds the tracking away). */
static inline __attribute__((always_inline)) void suspend(weft__worker *w, weft__fiber *self, bool track)
{
    weft__publish_held(w);   /* nothing stays private while we cannot run it */
    weft__fiber *next = next_fiber(w);
    if (next == self)
        return;   /* made ready before it could leave */
    if (WEFT_UNLIKELY(next == NULL))
        weft__panic("suspend: no fiber for worker %u to go on with (have_fiber was not asked)", w->index);
    if (WEFT_UNLIKELY(track))
        weft__track_suspend(w, self);
    w->blocked++;
    switch_from(w, self, next);
    w->blocked--;
    if (WEFT_UNLIKELY(track))
        weft__track_resume(w, self);
    if (WEFT_UNLIKELY(self == &w->host) && w->bound)
        bound_hand_back(w);
}

void weft__suspend(weft__worker *w)
{
    suspend(w, w->cur, w->track);   /* one load of track: kept in a register across the switch */
}

/* ---- picking work ------------------------------------------------------------------ */

static weft__task *as_task(weft__node *n)
{
    return (weft__task *)(void *)n;
}

static weft__task *take_lifo(weft__worker *w)
{
    if (!atomic_load_explicit(&w->lifo, memory_order_relaxed))
        return NULL;
    weft__node *n = atomic_exchange_explicit(&w->lifo, NULL,
                                             memory_order_acquire);   /* acquire: pairs with the exchange in submit */
    if (n)
        WEFT_TSAN_ACQUIRE(n);
    return n ? as_task(n) : NULL;
}

/* Takes a batch from the global ring: runs the first, queues the rest. */
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
    for (unsigned i = 1; i < n; i++) {
        if (!weft__deque_push(&w->deque, batch[i])) {
            weft__inject_push_batch(&s->global, batch + i, n - i);
            break;
        }
    }
    if (n > 1)
        weft__notify_work(s);   /* others may take what we queued */
    return as_task(batch[0]);
}


/* xorshift64 */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Visits every other worker once, from a random start with a random
 * stride coprime with the worker count (Go's steal order). */
static weft__task *steal(weft__worker *w)
{
    weft_sched *s = w->s;
    unsigned n = s->nworkers;
    if (n == 0 || (n == 1 && !w->bound))
        return NULL;
    uint64_t r = next_rand(&w->rng);
    unsigned start = (unsigned)(r % n);
    unsigned stride = s->coprimes[(r >> 32) % s->ncoprimes];
    for (unsigned k = 0; k < n; k++) {
        weft__worker *victim = &s->workers[weft__victim(start, stride, k, n)];
        if (victim == w)
            continue;
        WEFT__STAT(w, steal_attempts, 1);
        weft__node *node = weft__deque_steal(&victim->deque);
        if (!node && atomic_load_explicit(&victim->lifo, memory_order_relaxed)) {
            node = atomic_exchange_explicit(&victim->lifo, NULL,
                                            memory_order_acquire);    /* acquire: pairs with the exchange in submit */
            if (node)
                WEFT_TSAN_ACQUIRE(node);
        }
        if (node) {
            WEFT__STAT(w, steals, 1);
            return as_task(node);
        }
    }
    return NULL;
}

/* Shuffle mode: a task drawn at random from the LIFO slot, the deque and
 * the global ring (whose tasks join the deque first). Only with one
 * worker, so nobody steals. Callable from: owner. */
static weft__task *pick_shuffled(weft__worker *w)
{
    weft__task *t = take_lifo(w);
    if (t && !weft__deque_push(&w->deque, &t->node))
        return t;
    while ((t = grab_global(w)) != NULL) {
        if (!weft__deque_push(&w->deque, &t->node))
            return t;
    }
    if (weft__deque_size(&w->deque) > 1)
        weft__deque_swap_newest(&w->deque, next_rand(&w->shuffle_rng));
    weft__node *n = weft__deque_pop(&w->deque);
    if (n)
        WEFT__STAT(w, local_runs, 1);
    return n ? as_task(n) : NULL;
}

/* Callable from: owner. NULL when nothing is runnable without stealing. */
static weft__task *pick_local(weft__worker *w)
{
    weft_sched *s = w->s;
    weft__task *t;
    if (WEFT_UNLIKELY(s->cfg.shuffle))
        return pick_shuffled(w);
    w->tick++;
    if (--w->global_left == 0) {   /* every global_interval-th tick; a countdown, not a division */
        w->global_left = w->global_interval;
        t = grab_global(w);
        if (t) {
            WEFT__STAT(w, global_runs, 1);
            return t;
        }
    }
    if (w->lifo_streak < s->cfg.lifo_budget) {
        t = take_lifo(w);
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
        return as_task(n);
    }
    t = take_lifo(w);   /* over budget, but nothing else is local */
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

bool weft__work_queued(weft_sched *s)
{
    if (!weft__inject_empty(&s->global))
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
    if (w->bound && (weft__deque_size(&w->deque) || atomic_load_explicit(&w->lifo, memory_order_relaxed)))   /* relaxed: only this thread writes them */
        return true;   /* a bound thread's own queues (weft__bound_runs_tasks): nobody else's work */
    return weft__work_queued(s);
}

/* ---- running ------------------------------------------------------------------------ */

static inline __attribute__((always_inline)) void run_task(weft__worker *w, weft__task *t)
{
    weft_fn fn = t->fn;
    void *arg = t->arg;
    WEFT_TSAN_ACQUIRE(t);
    weft__task_free(w->s, w, t);   /* read out: the record is free for the task's children */
    if (WEFT_UNLIKELY(w->track))
        weft__track_run(w, fn, arg);   /* fn(arg), noted for stall reports */
    else
        fn(arg);
    /* Still on the same worker: a task that blocked resumed here. */
    __atomic_store_n(&w->completed, w->completed + 1, __ATOMIC_RELEASE);   /* release: pairs with acquire in is_idle */
}

/* Polls the fibers suspended in wait_until; ready ones move to the FIFO. */
static void poll_waiters(weft__worker *w)
{
    weft__fiber **pp = &w->pollers;
    while (*pp) {
        weft__fiber *f = *pp;
        weft__fstate *st = fstate(f);
        if (st->pred(st->pred_ctx)) {
            *pp = st->poll_next;
            st->poll_next = NULL;
            ready_append(w, f);
        } else {
            pp = &st->poll_next;
        }
    }
}

static void notify_idle_waiters(weft_sched *s)
{
    if (atomic_load_explicit(&s->idle_waiters, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&s->idle_gen, 1, memory_order_release);  /* release: pairs with acquire in wait_idle */
        weft__futex_wake(&s->idle_gen, INT32_MAX);
    }
}

/* When nothing is runnable: how long to sleep. Pollers are re-checked
 * with a growing back-off; timers wake at their deadline. */
static uint64_t park_deadline(weft__worker *w, unsigned idle_rounds)
{
    uint64_t d = 0;
    if (w->ntimers)
        d = w->timers[0]->deadline;
    if (w->pollers) {
        unsigned shift = idle_rounds < 10 ? idle_rounds : 10;
        uint64_t p = weft__now_ns() + (1000u << shift);   /* 1 us .. 1 ms */
        if (!d || p < d)
            d = p;
    }
    return d;
}

/* Full looks at the scheduler's queues (and the clock) in spin_for_work:
 * one every this many pauses (about a microsecond at 27 ns a pause). */
#define WEFT__SPIN_SCAN 32

/* Spins up to cfg.spin_us for work to show up; true if it did. The inbox,
 * where a fiber of this worker lands when another thread wakes it (a
 * channel's reply from another worker, an event set elsewhere), is
 * polled at every pause: it is this worker's own line, read-only while
 * nothing arrives, so the hand-off costs one cache miss instead of the
 * rest of a back-off step (an exponential back-off capped at 4096 empty
 * iterations, about 1.3 us, made a two-worker ping-pong wait out half a
 * step per message: 1.2 us a round trip against 0.6 us now). Tasks
 * anywhere else (deques, LIFO slots, the global ring) are looked for
 * every WEFT__SPIN_SCAN pauses. Callable from: owner, with nothing
 * runnable locally. */
static bool spin_for_work(weft__worker *w)
{
    uint64_t until = weft__now_ns() + (uint64_t)w->s->cfg.spin_us * 1000u;
    for (unsigned n = 1;; n++) {
        if (atomic_load_explicit(&w->inbox, memory_order_relaxed))   /* relaxed: a hint; drain_inbox's exchange acquires */
            return true;
        if (n % WEFT__SPIN_SCAN == 0) {
            if (weft__work_visible(w))
                return true;
            if (weft__now_ns() >= until)
                return false;
        }
        weft__cpu_relax();
    }
}

/* The loop every fiber of a worker runs. Returns only on the host fiber
 * when the scheduler exits (or, on a bound thread, never: it switches to
 * the host fiber once that is ready). */
static void loop(weft__worker *w)
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
        if (WEFT_UNLIKELY(s->cfg.shuffle) ? !local_work_waiting(w) || !fiber_waiting(w) ||
                                                (next_rand(&w->shuffle_rng) & 1)
                                          : !others_turn(w))
            f = take_ready(w);
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
            switch_to(w, f);
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
            f = take_run_next(w);
            weft__stop_searching(w);   /* as for a ready fiber above */
            weft__fiber *self = w->cur;
            self->next = w->idle_fibers;
            w->idle_fibers = self;
            switch_to(w, f);
            idle_rounds = 0;
            continue;
        }
        bool stolen = false;
        if (!t && weft__try_start_searching(w)) {
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
            run_task(w, t);
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
        if (idle_rounds < 64 && s->cfg.spin_us) {
            /* Spin a little before sleeping: work often comes right back. */
            bool found = spin_for_work(w);
            idle_rounds++;
            if (found)
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
            switch_to(w, &w->host);
            continue;   /* not reached for workers: the host returns */
        }
        notify_idle_waiters(s);
        weft__park(w, park_deadline(w, idle_rounds));
        idle_rounds++;
    }
}

/* ---- the host: how fiber-aware primitives block on a worker --------------------- */

typedef struct wait_timer {
    weft__timer timer;
    weft__waiter *waiter;
} wait_timer;

/* Runs on the waiter's own worker. Only the winner of the CAS acts. */
static void wait_timeout(weft__timer *t)
{
    weft__waiter *wt = WEFT_CONTAINER_OF(t, wait_timer, timer)->waiter;
    unsigned expect = WEFT__WAIT_PENDING;
    if (atomic_compare_exchange_strong_explicit(&wt->state, &expect, WEFT__WAIT_TIMEDOUT,
            memory_order_acq_rel, memory_order_acquire))   /* pairs with the notifier's CAS */
        weft__ready(wt->fiber);
}

/* A wait fails for lack of a fiber (or a timer slot): the caller will
 * not block, but may sleep its thread before trying again (a mutex lock)
 * or return an error its user may ignore, so what the fiber holds goes
 * to the queues now, where others can take it. Callable from: owner. */
static __attribute__((noinline)) int no_fiber(weft__worker *w)
{
    weft__publish_held(w);
    return WEFT_ENOMEM;
}

/* host_block's general case: the stall tracker notes what the fiber
 * waits on (and weft__suspend lists it), a deadline arms a timer. */
static __attribute__((noinline))
int host_block_slow(weft__worker *w, weft__waiter *wt, void (*unlock)(void *), void *lock)
{
    /* Both failures come before anything is done: the caller unqueues wt. */
    if (!have_fiber(w))
        return no_fiber(w);
    wait_timer tm = { .timer = { .deadline = wt->deadline, .fire = wait_timeout }, .waiter = wt };
    if (wt->deadline && !weft__timer_arm(w, &tm.timer))
        return no_fiber(w);   /* the timer heap could not grow: as good as no fiber */
    if (WEFT_UNLIKELY(w->track))
        weft__track_note(w, wt->what, wt->obj, wt->deadline);
    unlock(lock);
    weft__suspend(w);
    if (wt->deadline)
        weft__timer_disarm(w, &tm.timer);
    return WEFT_OK;
}

/* The common case inline: no deadline, no stall tracking. It is
 * weft__suspend without the tracking, in the same frame as the unlock. */
static int host_block(weft__waiter *wt, void (*unlock)(void *), void *lock)
{
    weft__worker *w = weft__tls_worker;
    weft__fiber *self = w->cur;
    wt->fiber = self;
    if (WEFT_UNLIKELY(wt->deadline != 0 || w->track))
        return host_block_slow(w, wt, unlock, lock);
    if (WEFT_UNLIKELY(!have_fiber(w)))
        return no_fiber(w);   /* nothing done: the caller unqueues wt */
    /* Safe to unlock before switching: a notifier's wake only queues this
     * fiber on its own worker, which cannot look before we are out. */
    unlock(lock);
    suspend(w, self, false);
    return WEFT_OK;
}

static void host_wake(weft__waiter *wt)
{
    weft__ready(wt->fiber);
}

static void host_wake_next(weft__waiter *wt)
{
    weft__ready_next(wt->fiber);
}

const weft__host weft__core_host = { host_block, host_wake, host_wake_next };

/* ---- worker threads ---------------------------------------------------------- */

int weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->index = index;
    w->bound = bound;
    w->track = s->track;
    w->rng = (s->cfg.seed ? s->cfg.seed : 0x9e3779b97f4a7c15ull) + 0x632be59bd9b4e019ull * (index + 1);
    w->shuffle_rng = (s->cfg.seed ? s->cfg.seed : 0x9e3779b97f4a7c15ull) ^ 0xd1b54a32d192ed03ull;
    w->shuffle_rng += !w->shuffle_rng;   /* xorshift never leaves 0 */
    w->deque_capacity = s->cfg.local_capacity;
    w->lifo_budget = s->cfg.lifo_budget;
    w->global_interval = s->cfg.global_interval;
    w->global_left = w->global_interval;
    w->shuffle = s->cfg.shuffle;
    /* Shuffle mode: a child takes its chances in the loop. A bound
     * thread's children go to the workers; with none, its tasks' children
     * go on its own deque, as on a worker (weft__bound_runs_tasks). */
    w->inline_depth = (bound && s->nworkers > 0) || w->shuffle ? 0 : WEFT__INLINE_DEPTH;
    int rc = weft__deque_init(&w->deque, s->cfg.local_capacity, &s->cfg.allocator);
    if (rc != WEFT_OK)
        return rc;
    rc = weft__fiber_pool_init(&w->fibers, s->cfg.fiber_stack_size, 64);
    if (rc != WEFT_OK) {
        weft__deque_fini(&w->deque);
        return rc;
    }
    /* The timer heap at a working size now (2 KiB), so that timed waits
     * and sleeps allocate nothing, the first ones included, until more
     * than 256 fibers on this worker wait with a deadline at once. */
    w->timer_cap = 256;
    w->timers = weft__alloc_with(&s->cfg.allocator, sizeof *w->timers * w->timer_cap);
    if (!w->timers) {
        weft__fiber_pool_fini(&w->fibers);
        weft__deque_fini(&w->deque);
        return WEFT_ENOMEM;
    }
    return WEFT_OK;
}

void weft__worker_fini(weft__worker *w)
{
    while (w->idle_fibers) {
        weft__fiber *f = w->idle_fibers;
        w->idle_fibers = f->next;
        if (f != &w->host)
            weft__fiber_release(&w->fibers, f);
    }
    weft__fiber_pool_fini(&w->fibers);
    weft__deque_fini(&w->deque);
    weft__task_pool_fini(w->s, &w->pool);
    if (w->timers)
        weft__free_with(&w->s->cfg.allocator, w->timers, sizeof *w->timers * w->timer_cap);
    w->timers = NULL;
}

void *weft__worker_thread(void *arg)
{
    weft__worker *w = arg;
    weft_sched *s = w->s;
    weft__tls_worker = w;
    if (weft__fiber_thread_enter(&w->host) != WEFT_OK)
        weft__panic("worker_thread: cannot set up worker %u (alternate signal stack)", w->index);
    weft__fstate st = { .w = w };
    w->host.host = &st;
    w->host.name = "worker";
    w->cur = &w->host;
    weft__host_set(&weft__core_host);
    if (s->cfg.on_worker_start)
        s->cfg.on_worker_start(w->index, s->cfg.hook_ctx);
    /* Every fiber of this worker starts with the thread's FP control
     * state as the start hook left it. */
    weft__fiber_pool_take_fp(&w->fibers);
    /* The loop, and so every task, runs on fibers: a task's stack is the
     * configured fiber_stack_size with the guard below it, so an
     * overflow is reported, never a plain SIGSEGV on the thread's own
     * stack. The host waits here until the scheduler exits (the loop
     * switches back to it). If no fiber can be mapped now, the host runs
     * the loop itself, as a worker once did, rather than fail. */
    weft__fiber *first;
    if (weft__fiber_create(&w->fibers, &first, fiber_main, w) == WEFT_OK) {
        WEFT__STAT(w, fibers_created, 1);
        switch_to(w, first);
    } else {
        loop(w);
    }
    /* The worker has left: from its stop hook, weft calls act as from an
     * outside thread (a spawn returns WEFT_ESHUTDOWN instead of landing
     * in a deque nobody will look at again). */
    weft__host_set(NULL);
    weft__fiber_thread_leave();
    weft__tls_worker = NULL;
    if (s->cfg.on_worker_stop)
        s->cfg.on_worker_stop(w->index, s->cfg.hook_ctx);
    return NULL;
}

/* ---- waiting -------------------------------------------------------------------- */

/* Single-threaded mode: a bound thread runs the loop on its own fibers
 * while its host fiber is blocked. */
static void bound_block(weft__worker *w)
{
    weft__suspend(w);
}

/* Work-first: runs the running fiber's own newest child inline, a
 * bounded number of levels deep. False when the deque's newest task is
 * not one of ours (it goes back where it was), or too deep. The pop
 * expects an item: this is a join, right after its spawns. */
static bool run_own_child(weft__worker *w, weft__fiber *self, weft__fstate *st)
{
    if (st->depth >= w->inline_depth)
        return false;   /* too deep, or never inline here (inline_depth 0) */
    weft__node *n = weft__deque_pop_expected(&w->deque);
    if (!n)
        return false;
    weft__task *t = as_task(n);
    if (t->spawner != self) {
        if (!weft__deque_push(&w->deque, n))
            weft__inject_push(&w->s->global, n);
        return false;
    }
    WEFT__STAT(w, local_runs, 1);
    st->depth++;
    run_task(w, t);
    st->depth--;
    return true;
}

bool weft__help_until(weft__worker *w, bool (*pred)(void *), void *ctx)
{
    weft__fiber *self = w->cur;
    weft__fstate *st = fstate(self);
    while (!pred(ctx)) {
        if (!run_own_child(w, self, st))
            return pred(ctx);
    }
    return true;
}

bool weft__spin_until(weft_sched *s, bool (*pred)(void *), void *ctx)
{
    if (pred(ctx))
        return true;
    if (!s->spare_cpu || s->cfg.spin_us == 0)
        return false;   /* spinning would take a CPU from a worker */
    /* A pause between looks, as spin_for_work: it leaves the core's
     * resources to a worker on a sibling hardware thread. */
    uint64_t until = weft__now_ns() + (uint64_t)s->cfg.spin_us * 1000u;
    for (unsigned n = 1;; n++) {
        if (pred(ctx))
            return true;
        if (n % WEFT__SPIN_SCAN == 0 && weft__now_ns() >= until)
            return false;
        weft__cpu_relax();
    }
}

/* A bound thread of a scheduler without workers waits in its own code
 * (weft_wait_idle, destroy, unbind) and no fiber can be had: one step of
 * the loop on the thread's own stack, as a worker's host runs the loop
 * when it cannot map its first fiber. Due timers fire, pollers are
 * polled and a queued task runs here, nested under the wait; a task that
 * blocks in it gets WEFT_ENOMEM from its wait. With nothing to do, a
 * short sleep: what would change that comes from other threads.
 * Callable from: owner, on its host fiber. */
static __attribute__((noinline)) void host_runs_one(weft__worker *w)
{
    fire_due_timers(w);
    release_yielded(w);
    if (w->pollers)
        poll_waiters(w);
    if (w->ready_head || w->run_next)
        return;   /* a fiber can go on after all: have_fiber will say so */
    weft__task *t = pick_local(w);
    if (t) {
        run_task(w, t);
        bound_hand_back(w);   /* its spawns went on this thread's deque */
        return;
    }
    struct timespec ts = { 0, WEFT__RETRY_NS };
    nanosleep(&ts, NULL);
}

int weft_wait_until(bool (*pred)(void *ctx), void *ctx)
{
    if (!pred)
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    if (!w)
        return WEFT_ENOTBOUND;
    weft__fiber *self = w->cur;
    weft__fstate *st = fstate(self);
    while (!pred(ctx)) {
        if (run_own_child(w, self, st))
            continue;
        if (w->bound && w->s->nworkers > 0) {
            /* A bound thread beside workers: its tasks went to the
             * workers (it has no deque); look again after a short sleep.
             * It runs none of them on this stack: a task that blocked
             * here would block the thread's own code under it, and tasks
             * that wait in turn would nest without bound. */
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
            continue;
        }
        /* Switch out and let the loop re-poll us: unless no fiber could
         * go on meanwhile (none can be mapped). */
        if (!have_fiber(w)) {
            if (self == &w->host && w->bound) {
                host_runs_one(w);   /* a bound thread's own code: it may not fail (destroy, unbind) */
                continue;
            }
            return no_fiber(w);
        }
        st->pred = pred;
        st->pred_ctx = ctx;
        st->poll_next = w->pollers;
        w->pollers = self;
        if (w->bound)
            bound_block(w);
        else
            weft__suspend(w);
        st->pred = NULL;
    }
    return WEFT_OK;
}

void weft_yield(void)
{
    weft__worker *w = weft__tls_worker;
    if (!w || (w->bound && w->s->nworkers > 0)) {
        /* A bound thread beside workers runs no loop (as in weft_sleep). */
        sched_yield();
        return;
    }
    /* Nothing to let through? Other yielded fibers, due timers and
     * wait_until pollers count: only the loop releases, fires and polls
     * them, so two fibers spinning on yield, or one spinning while a
     * sleeper's timer is due, would otherwise starve the others. */
    if (!w->ready_head && !w->yield_head && !w->pollers && !timer_due(w) &&
        !weft__work_visible(w))
        return;
    /* Go behind what is queued: the loop lets yielded fibers back in only
     * after it has run a task or found nothing to run. */
    weft__fiber *next = w->idle_fibers;
    if (next) {
        w->idle_fibers = next->next;
        next->next = NULL;
    } else if (weft__fiber_create(&w->fibers, &next, fiber_main, w) == WEFT_OK) {
        WEFT__STAT(w, fibers_created, 1);
    } else {
        return;   /* no fiber to go on with: the yield does nothing */
    }
    weft__publish_held(w);
    weft__fiber *self = w->cur;
    self->next = NULL;
    if (w->yield_tail)
        w->yield_tail->next = self;
    else
        w->yield_head = self;
    w->yield_tail = self;
    w->blocked++;
    switch_to(w, next);
    w->blocked--;
    if (WEFT_UNLIKELY(self == &w->host) && w->bound)
        bound_hand_back(w);
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

typedef struct sleep_timer {
    weft__timer timer;
    weft__fiber *fiber;
} sleep_timer;

static void sleep_fire(weft__timer *t)
{
    sleep_timer *st = WEFT_CONTAINER_OF(t, sleep_timer, timer);
    weft__ready(st->fiber);
}

/* weft_sleep on the thread itself. What the fiber holds goes to the
 * queues first: the thread runs nothing meanwhile. Callable from: any
 * thread (w NULL when it is no worker). */
static int thread_sleep(weft__worker *w, uint64_t ns)
{
    if (w)
        weft__publish_held(w);
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return WEFT_OK;
}

int weft_sleep(uint64_t ns)
{
    weft__worker *w = weft__tls_worker;
    /* A bound thread beside workers runs no loop; and with no fiber to go
     * on with (none can be mapped), the thread itself sleeps. */
    if (!w || (w->bound && w->s->nworkers > 0) || !have_fiber(w))
        return thread_sleep(w, ns);
    uint64_t now = weft__now_ns();
    /* A sleep past the clock's range lasts "forever" (until the end of
     * the clock), not a wrapped, short deadline. */
    uint64_t deadline = ns < UINT64_MAX - now ? now + ns : UINT64_MAX;
    sleep_timer st = { .timer = { .deadline = deadline, .fire = sleep_fire },
                       .fiber = w->cur };
    if (!weft__timer_arm(w, &st.timer))
        return thread_sleep(w, ns);   /* the timer heap could not grow: the thread sleeps */
    if (WEFT_UNLIKELY(w->track))
        weft__track_note(w, "sleep", NULL, st.timer.deadline);
    weft__suspend(w);
    return WEFT_OK;
}

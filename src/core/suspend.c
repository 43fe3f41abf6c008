/* This file is private to weft: fibers on block: suspending a fiber, the
 * fiber a worker goes on with, and the host through which fiber-aware
 * primitives block on a worker (weft__core_host).
 *
 * Synchronization
 *   cur, idle_fibers, blocked: owner only.
 *   run_next, ready FIFO, inbox: see ready.c; next_fiber reads the inbox
 *                 with a relaxed load, as a hint.
 *   held          per fiber (weft__fstate, core.h): owner only. What the
 *                 fiber runs next without having queued it; submitted by
 *                 suspend before the fiber leaves, and by no_fiber before
 *                 a failed wait returns (weft_yield and thread_sleep do
 *                 the same: wait_until.c, timer.c).
 *   a bound thread's deque and LIFO slot (no workers): pushed and
 *                 popped by the owner only; filled by its tasks' spawns,
 *                 which bound_hand_back moves to the global ring on every
 *                 host resume, and by its own code's spawns
 *                 (spawn_bound.c, "Spawns of a bound thread with no
 *                 workers"), which stay there until it waits, unless
 *                 another thread binds: that one steals them
 *                 (the deque's steal) into the global ring.
 *   a waiter's state (weft__waiter, src/fiber/wait.h): a timed wait's
 *                 timer and its notifier race to end it with a CAS from
 *                 WEFT__WAIT_PENDING; only the winner makes it ready.
 *
 * Fibers. Every fiber of a worker runs the same loop (worker.c). A task
 * runs on the fiber that picked it. When it blocks (weft__suspend), its
 * fiber leaves and the worker continues on a ready fiber, an idle one, or
 * a new one. When the loop finds a ready fiber it switches to it and
 * becomes idle itself; the resumed fiber finishes its task and carries on
 * with the loop. Fibers are pinned: only their own worker resumes them,
 * so a fiber made ready before it has finished switching out is harmless
 * (its worker cannot look at the inbox until the switch is done).
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
 * Waiting in place (host_may_spin, host_spin): a primitive whose waker
 * writes a word both sides touch anyway (a channel's hand-off slot) may
 * first ask whether the fiber can spin on it instead: yes only while its
 * worker has nothing else to run (weft__tls_next, the worker's run_next,
 * is read inline by weft__may_spin before it calls in). The spin is the
 * loop's weft__spin_for_work moved into the fiber: inbox and pins at
 * every pause, all visible work and due timers every WEFT__SPIN_SCAN
 * pauses, spin_us at most; anything found ends it and the fiber blocks
 * as above.
 */
#include "park.h"
#include "ready.h"
#include "suspend.h"
#include "task.h"
#include "timer.h"
#include "worker.h"

/* A fiber to continue on: a ready one, an idle one (to run the loop), or
 * a new one; NULL only if none is ready or idle and none can be mapped
 * (memory or vm.max_map_count ran out), which have_fiber rules out first.
 * next_fiber's cases past its first. */
static __attribute__((noinline)) weft__fiber *next_fiber_slow(weft__worker *w)
{
    weft__fiber *f;
    if (!weft__others_turn(w)) {
        f = weft__take_ready(w);
        if (f)
            return f;
        if (w->run_next && !weft__local_work_waiting(w))
            return weft__take_run_next(w);   /* over budget, but nothing else is waiting */
    }
    f = weft__spare_fiber(w);
    if (f)
        return f;
    /* None can be mapped: a ready fiber goes on whatever its turn (the
     * fairness above only orders them). have_fiber, asked before a fiber
     * commits to block, found one of these or an idle one; NULL is then
     * unreachable. */
    f = weft__take_ready(w);
    if (!f && w->run_next)
        f = weft__take_run_next(w);
    return f;
}

/* As next_fiber_slow, with its first cases inline: a fiber woken by the
 * running one (run_next), while it is not the others' turn, goes next if
 * it is within its budget, or, past it, if nothing else waits (no ready
 * fiber, no local task, no due timer), and its streak starts over. That
 * is what weft__take_ready and next_fiber_slow would pick there, in the
 * same order; it is the case of fibers handing work to each other (a
 * channel ping-pong suspends through it on every message). */
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
            !weft__local_work_waiting(w))   /* relaxed: a hint, as in weft__drain_inbox; a fiber pushed later waits its turn */
            return weft__take_run_next(w);
    }
    return next_fiber_slow(w);
}

/* A bound thread of a scheduler without workers goes back to its own
 * code: what its tasks queued on its deque and LIFO slot, which nobody
 * else looks at, goes to the global ring, oldest first, for whichever
 * bound thread blocks next (weft__bound_runs_tasks). Callable from:
 * owner, on its host fiber. */
__attribute__((noinline)) void weft__bound_hand_back(weft__worker *w)
{
    if (WEFT_UNLIKELY(atomic_load_explicit(&w->s->side_burst, memory_order_relaxed)))   /* relaxed: a hint (core.h) */
        atomic_store_explicit(&w->s->side_burst, false, memory_order_relaxed);   /* the host waited: its burst is over */
    if (!weft__worker_has_queued(w) &&
        !atomic_load_explicit(&w->nspill, memory_order_relaxed))   /* relaxed: a hint (spawn_bound.c) */
        return;   /* the usual case: nothing left behind */
    weft__spill_hand_back(w->s, w);   /* the oldest first */
    weft__task *t = weft__take_lifo(w);
    weft__node *batch[64];
    unsigned n;
    while ((n = weft__deque_pop_oldest(&w->deque, batch, 64)) != 0)
        weft__inject_push_batch(&w->s->global, batch, n);
    if (t)
        weft__inject_push(&w->s->global, &t->node);
    weft__notify_work(w->s);
}

weft__fiber *weft__spare_fiber(weft__worker *w)
{
    weft__fiber *f = w->idle_fibers;
    if (f) {
        w->idle_fibers = f->next;
        f->next = NULL;
        return f;
    }
    if (weft__fiber_create(&w->fibers, &f, weft__fiber_main, w) != WEFT_OK)
        return NULL;
    WEFT__STAT(w, fibers_created, 1);
    return f;
}

/* weft__have_fiber's slow case: no fiber idle, ready or run_next without
 * looking at the inbox. Callable from: owner, before the blocking fiber
 * commits to leave. */
__attribute__((noinline)) bool weft__have_fiber_slow(weft__worker *w)
{
    weft__drain_inbox(w);
    if (w->ready_head)
        return true;
    weft__fiber *f = weft__spare_fiber(w);   /* none idle: a new one */
    if (!f)
        return false;
    f->next = w->idle_fibers;   /* kept idle for the switch that follows */
    w->idle_fibers = f;
    return true;
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
        weft__hook_suspend(w, self);
    w->blocked++;
    weft__switch_from(w, self, next);
    w->blocked--;
    if (WEFT_UNLIKELY(track))
        weft__hook_resume(w, self);
    if (WEFT_UNLIKELY(self == &w->host) && w->bound)
        weft__bound_hand_back(w);
}

void weft__suspend(weft__worker *w)
{
    suspend(w, w->cur, weft__hooks(w) & (WEFT__HOOK_TRACK | WEFT__HOOK_TRACE));   /* read once: kept in a register across the switch */
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
__attribute__((noinline)) int weft__no_fiber(weft__worker *w)
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
    if (!weft__have_fiber(w))
        return weft__no_fiber(w);
    wait_timer tm = { .timer = { .deadline = wt->deadline, .fire = wait_timeout }, .waiter = wt };
    if (wt->deadline && !weft__timer_arm(w, &tm.timer))
        return weft__no_fiber(w);   /* the timer heap could not grow: as good as no fiber */
    if (WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_note(w, wt->what, wt->obj, wt->deadline);
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
    if (WEFT_UNLIKELY(wt->deadline != 0 || (weft__hooks(w) & (WEFT__HOOK_TRACK | WEFT__HOOK_TRACE))))
        return host_block_slow(w, wt, unlock, lock);
    if (WEFT_UNLIKELY(!weft__have_fiber(w)))
        return weft__no_fiber(w);   /* nothing done: the caller unqueues wt */
    /* Safe to unlock before switching: a notifier's wake only queues this
     * fiber on its own worker, which cannot look before we are out. */
    unlock(lock);
    suspend(w, self, false);
    return WEFT_OK;
}

/* ---- spinning in place (the host's spin) ------------------------------------ */

/* May the running fiber spin where it is instead of suspending? Only
 * while its worker has nothing else to run: no ready fiber, nothing held
 * by the fiber, no local or global task, no pin, no due timer, no poller
 * or yielded fiber; with spinning configured (spin_us), not while
 * tracing (a trace shows every wait as a block and a wake) and not in
 * shuffle mode (which wants every wait to be a switch). The stall
 * tracker does not mind: a fiber that spins is running, for spin_us at
 * most, far below any watchdog period. Callable from: owner. */
static bool host_may_spin(void)
{
    weft__worker *w = weft__tls_worker;
    return !w->ready_head && w->s->cfg.spin_us && !w->shuffle &&   /* run_next: weft__may_spin read it inline (weft__tls_next) */
           !(weft__hooks(w) & WEFT__HOOK_TRACE) && !w->yield_head && !w->pollers &&
           !atomic_load_explicit(&w->inbox, memory_order_relaxed) &&   /* relaxed: hints, as in weft__spin_for_work */
           !weft__fstate_cur(w)->held && !weft__local_work_waiting(w);
}

/* A fiber whose waker will write *word (a channel's hand-off slot) spins
 * on it as its worker would otherwise spin in the loop
 * (weft__spin_for_work, with the same looks at the inbox, pins, visible
 * work and due timers), but with no switch out and back, no queue push
 * and no inbox line in between: a wake from another core is a transfer
 * of the line the waker writes anyway. It gives up (returns expect) as
 * soon as anything else this worker could run shows up, or at its learnt
 * budget (slot_spin_scans, worker.c: spin_us at most, none while such
 * spins keep failing); the caller then blocks as usual. Called after
 * host_may_spin said yes. */
static unsigned host_spin(const _Atomic unsigned char *word, unsigned expect)
{
    weft__spin_for_work(weft__tls_worker, word, expect);
    return atomic_load_explicit(word, memory_order_acquire);   /* acquire: pairs with the waker's release store */
}

/* Its wake side is in ready.c. */
const weft__host weft__core_host = { host_block, weft__host_wake, weft__host_wake_next, host_may_spin, host_spin };

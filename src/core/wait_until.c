/* This file is private to weft: waiting in a task: weft_wait_until (with
 * its work-first inline runs), weft__help_until and
 * weft__help_hooks_until (a layer's records: a subflow join's sub-graph),
 * weft__spin_until,
 * weft_yield, a bound thread's spawn burst (weft__host_drain: its
 * host waits, as in weft_wait_until, for its loop to run its full deque)
 * and, beside workers, its side runs (weft__host_run: its spawn runs
 * tasks on a side fiber while its port is full; spawn_bound.c, "Spawns of a
 * bound thread beside workers").
 *
 * Synchronization
 *   pollers       owner only. Fibers suspended in weft_wait_until (and a
 *                 bound thread's host in weft__host_drain), linked
 *                 through their weft__fstate.poll_next, with their pred
 *                 and pred_ctx set while listed. The loop polls them
 *                 (worker.c, poll_waiters) and moves those whose pred
 *                 holds to the ready FIFO; a poller is never made ready
 *                 from another thread.
 *   yield_head, yield_tail: owner only. Fibers that yielded; the loop
 *                 lets them back into the ready FIFO (release_yielded,
 *                 worker.c) after it has run a task or found nothing to
 *                 run.
 *   depth         per fiber (weft__fstate): owner only. How deep the
 *                 fiber's inline runs of its own children nest.
 *   held          per fiber (weft__fstate, core.h): owner only. Submitted
 *                 by weft_yield before the fiber leaves (and by
 *                 weft__suspend and no_fiber, suspend.c).
 *   side_fiber, side_task, side_run, side_batch, side_i, side_n: owner
 *                 only (the host and its side fiber, never at once). The
 *                 port's tail, lowered to take tasks back: global_ring.c
 *                 (T1-T3).
 *   side_burst    (the scheduler's): a hint, relaxed; set here, cleared
 *                 when the host next waits (suspend.c), read by workers
 *                 about to park (worker.c).
 *
 * weft_wait_until blocks as host_block does (suspend.c, "Blocking a
 * fiber"): have_fiber first, then it joins the pollers and suspends; no
 * lock, as nobody else looks at the poll list.
 */
#define _GNU_SOURCE

#include "loop.h"
#include "park.h"
#include "suspend.h"
#include "task.h"
#include "worker.h"

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
    weft__task *t = weft__as_task(n);
    if (weft__node_is_hook(n) || t->spawner != self) {   /* a hook record is nobody's child */
        if (!weft__deque_push(&w->deque, n))
            weft__inject_push(&w->s->global, n);
        return false;
    }
    WEFT__STAT(w, local_runs, 1);
    st->depth++;
    st->nest++;   /* the child is not the task it runs under (fstate.nest) */
    weft__run_task(w, t);
    st->nest--;
    st->depth--;
    return true;
}

/* run_own_child for a layer's records (weft__help_hooks_until): the
 * newest record on the deque, if it is a hook record that mine(rec, ctx)
 * calls the caller's, run through the layer's hook (weft__run_task), as
 * deep as a child may nest. */
static bool run_own_hook(weft__worker *w, weft__fstate *st, bool (*mine)(weft__task *, void *), void *ctx)
{
    if (st->depth >= w->inline_depth)
        return false;   /* too deep, or never inline here (inline_depth 0) */
    weft__node *n = weft__deque_pop(&w->deque);
    if (!n)
        return false;
    if (!weft__node_is_hook(n) || !mine(weft__as_task(n), ctx)) {
        if (!weft__deque_push(&w->deque, n))
            weft__inject_push(&w->s->global, n);
        return false;
    }
    WEFT__STAT(w, local_runs, 1);
    st->depth++;
    st->nest++;   /* as run_own_child's */
    weft__run_task(w, weft__as_task(n));
    st->nest--;
    st->depth--;
    return true;
}

bool weft__help_hooks_until(weft__worker *w, bool (*pred)(void *), bool (*mine)(weft__task *, void *), void *ctx)
{
    weft__fstate *st = weft__fstate_cur(w);
    while (!pred(ctx)) {
        if (!run_own_hook(w, st, mine, ctx))
            return pred(ctx);
    }
    return true;
}

bool weft__help_until(weft__worker *w, bool (*pred)(void *), void *ctx)
{
    weft__fiber *self = w->cur;
    weft__fstate *st = weft__fstate_of(self);
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
    /* A pause between looks, as weft__spin_for_work: it leaves the core's
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

int weft_wait_until(bool (*pred)(void *ctx), void *ctx)
{
    if (!pred)
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    if (!w)
        return WEFT_ENOTBOUND;
    weft__fiber *self = w->cur;
    weft__fstate *st = weft__fstate_of(self);
    while (!pred(ctx)) {
        if (run_own_child(w, self, st))
            continue;
        /* Switch out and let the loop re-poll us: unless no fiber could
         * go on meanwhile (none can be mapped). */
        if (!weft__have_fiber(w)) {
            if (self == &w->host && w->bound) {
                weft__host_runs_one(w);   /* a bound thread's own code: it may not fail (destroy, unbind) */
                continue;
            }
            return weft__no_fiber(w);
        }
        st->pred = pred;
        st->pred_ctx = ctx;
        st->poll_next = w->pollers;
        w->pollers = self;
        weft__suspend(w);   /* on a bound thread's host too: its loop runs on other fibers meanwhile */
        st->pred = NULL;
    }
    return WEFT_OK;
}

/* ---- a bound thread's burst (spawn_bound.c, "Spawns of a bound thread with no workers") ------------ */

typedef struct burst {
    weft__worker *w;
    uint64_t done_end;   /* completions after which the host goes on regardless */
} burst;

/* The host may go on: its deque is empty, or the burst has run long
 * enough, or blocked tasks hold too many fibers. */
static bool burst_over(void *arg)
{
    const burst *b = arg;
    weft__worker *w = b->w;
    if (atomic_load_explicit(&w->completed, memory_order_relaxed) >= b->done_end ||   /* relaxed: our own count */
        w->blocked > WEFT__BURST_BLOCKED)
        return true;
    return weft__deque_size(&w->deque) == 0;
}

bool weft__host_drain(weft__worker *w, unsigned most)
{
    if (!weft__have_fiber(w))
        return false;
    burst b = { .w = w, .done_end = atomic_load_explicit(&w->completed, memory_order_relaxed) + most };   /* relaxed: our own count */
    weft__fiber *self = w->cur;
    weft__fstate *st = weft__fstate_of(self);
    st->pred = burst_over;
    st->pred_ctx = &b;
    st->poll_next = w->pollers;
    w->pollers = self;
    if (WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_note(w, "spawn burst", NULL, 0);   /* what a trace or stall report shows the host waiting on */
    weft__suspend(w);
    st->pred = NULL;
    return true;
}

/* ---- a bound thread's side runs (spawn_bound.c, "Spawns of a bound thread beside workers") -- */

/* The side fiber's entry. Between runs it waits switched out at the
 * bottom of its loop; each switch to it runs w->side_task, then the
 * newest tasks of the thread's port while more than half its ring lies
 * below them (the workers take the oldest meanwhile). Back from those
 * without having left (side_fiber still names it), it clears side_run,
 * takes the host off the ready FIFO, where weft__host_run put it, and
 * switches to it. A task that blocked was left by the host (side_fiber
 * no longer names it): the fiber then runs the worker loop as any
 * other, for good. */
static void side_main(void *arg)
{
    weft__worker *w = arg;
    weft__fstate st = { .w = w };
    weft__fiber *self = w->cur;
    self->host = &st;
    for (;;) {
        weft__run_task(w, w->side_task);
        unsigned keep = (w->port->ring.mask + 1) / 2;   /* >= WEFT__PRING_TAKE_MAX (checked by weft__host_run) */
        while (w->side_fiber == self) {
            if (w->side_i == w->side_n) {
                w->side_i = 0;
                w->side_n = weft__inject_port_pop(w->port, keep, w->side_batch, WEFT__SIDE_BATCH);
                if (w->side_n == 0)
                    break;
            }
            weft__run_task(w, weft__as_task(w->side_batch[w->side_i++]));   /* counted as pushed through the port */
        }
        if (w->side_fiber != self)
            break;
        w->side_run = false;
        weft__fiber *host = w->ready_head;   /* appended to an empty FIFO; only this fiber's leaving would take it */
        if (WEFT_UNLIKELY(host != &w->host))
            weft__panic("side run: the host is not at the head of the ready FIFO");
        w->ready_head = host->next;
        if (!w->ready_head)
            w->ready_tail = NULL;
        host->next = NULL;
        weft__switch_from(w, self, host);
    }
    weft__worker_loop(w);
    weft__panic("side run: a worker loop returned on a pooled fiber");
}

bool weft__host_run(weft__worker *w, weft__task *t)
{
    if (w->ready_head || w->blocked >= WEFT__BURST_BLOCKED || w->no_help || w->port == NULL ||
        (w->port->ring.mask + 1) / 2 < WEFT__PRING_TAKE_MAX)
        return false;
    weft__fiber *f = w->side_fiber;
    if (f == NULL) {
        if (weft__fiber_create(&w->fibers, &f, side_main, w) != WEFT_OK)
            return false;
        WEFT__STAT(w, fibers_created, 1);
        w->side_fiber = f;
    }
    if (!atomic_load_explicit(&w->s->side_burst, memory_order_relaxed))   /* relaxed: a hint (core.h) */
        atomic_store_explicit(&w->s->side_burst, true, memory_order_relaxed);
    weft__fiber *host = w->cur;
    weft__count_spawn(w->s, w);
    w->side_task = t;
    w->side_run = true;
    weft__ready_append(w, host);   /* a task that blocks hands the thread back to the host (suspend's next_fiber) */
    w->blocked++;
    weft__switch_from(w, host, f);
    w->blocked--;
    if (WEFT_UNLIKELY(w->side_run)) {
        /* A task left the fiber (blocked, yielded) and the loop resumed
         * us from the ready FIFO: the fiber is the task's now, and goes
         * on with the loop once the task returns; the next run makes a
         * new one. */
        w->side_run = false;
        w->side_fiber = NULL;
        if (w->side_i != w->side_n) {
            /* The rest of its batch, which nobody else could see: to the
             * shared queue (counted already, through the port). */
            weft__inject_push_batch(&w->s->global, w->side_batch + w->side_i, w->side_n - w->side_i);
            w->side_i = w->side_n = 0;
        }
    }
    /* A pop that found the port too short put its tail back up: a worker
     * that looked in between may have found the port empty and parked. */
    weft__notify_work(w->s);
    return true;
}

void weft_yield(void)
{
    weft__worker *w = weft__tls_worker;
    if (!w) {
        weft__os_yield();
        return;
    }
    /* Nothing to let through? Other yielded fibers, due timers and
     * wait_until pollers count: only the loop releases, fires and polls
     * them, so two fibers spinning on yield, or one spinning while a
     * sleeper's timer is due, would otherwise starve the others. */
    if (!w->ready_head && !w->yield_head && !w->pollers && !weft__timer_due(w) &&
        !weft__work_visible(w))
        return;
    /* Go behind what is queued: the loop lets yielded fibers back in only
     * after it has run a task or found nothing to run. */
    weft__fiber *next = weft__spare_fiber(w);
    if (!next)
        return;   /* no fiber to go on with: the yield does nothing */
    weft__publish_held(w);
    weft__fiber *self = w->cur;
    self->next = NULL;
    if (w->yield_tail)
        w->yield_tail->next = self;
    else
        w->yield_head = self;
    w->yield_tail = self;
    /* A trace draws a yield as a wait: the task's stretch ends here. */
    bool traced = weft__hooks(w) & WEFT__HOOK_TRACE;
    if (WEFT_UNLIKELY(traced)) {
        w->note_what = "yield";
        weft__trace_suspend(w, self);
    }
    w->blocked++;
    weft__switch_to(w, next);
    w->blocked--;
    if (WEFT_UNLIKELY(traced))
        weft__trace_resume(w, self);
    if (WEFT_UNLIKELY(self == &w->host) && w->bound)
        weft__bound_hand_back(w);
}

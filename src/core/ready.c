/* This file is private to weft: fibers made ready: the inbox, the
 * owner's FIFO, run_next, which ready fiber goes next, and the wake side
 * of weft__core_host.
 *
 * Synchronization
 *   inbox         fibers made ready by other threads: a Treiber stack,
 *                 pushed with CAS (release) by any thread, emptied by the
 *                 owner with one exchange (acquire; weft__drain_inbox,
 *                 worker.h). The owner then keeps them in its own FIFO
 *                 (ready_head/tail), owner only.
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
 *                 loop gets a turn when something else waits
 *                 (weft__others_turn, worker.h): it fires due timers,
 *                 runs one local task, releases yielded fibers and polls
 *                 wait_until pollers.
 *
 * A fiber is made ready only on the worker it is pinned to (suspend.c): a
 * fiber made ready before it has finished switching out is harmless, as
 * its worker cannot look at the inbox until the switch is done.
 */

#include "park.h"
#include "ready.h"
#include "worker.h"

/* Shuffle mode: any ready fiber, run_next included, drawn at random.
 * Callable from: owner. */
static weft__fiber *take_ready_shuffled(weft__worker *w)
{
    weft__drain_inbox(w);
    if (w->run_next) {
        weft__ready_append(w, w->run_next);
        w->run_next = NULL;
    }
    unsigned n = 0;
    for (weft__fiber *f = w->ready_head; f; f = f->next)
        n++;
    if (!n)
        return NULL;
    unsigned k = n > 1 ? (unsigned)(weft__next_rand(&w->shuffle_rng) % n) : 0;
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
weft__fiber *weft__take_ready(weft__worker *w)
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
    weft__drain_inbox(w);
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

void weft__ready(weft__fiber *f)
{
    weft__fstate *st = weft__fstate_of(f);
    weft__worker *w = st->w;
    weft__worker *me = weft__tls_worker;
    if (WEFT_UNLIKELY(me != NULL && (weft__hooks(me) & WEFT__HOOK_TRACE)))
        weft__hook_wake(me, f);   /* the arrow's tail, before f can run */
    if (me == w) {
        weft__ready_append(w, f);
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
                 memory_order_release, memory_order_relaxed));  /* release: pairs with acquire in weft__drain_inbox */
    weft__wake_worker(w->s, w);
    atomic_fetch_sub_explicit(&w->wakers, 1, memory_order_release);   /* release: our last touch of w; pairs with the acquire in weft__worker_wait_wakers */
}

void weft__worker_wait_wakers(weft__worker *w)
{
    while (atomic_load_explicit(&w->wakers, memory_order_acquire))   /* acquire: pairs with the release in weft__ready */
        weft__os_yield();
}

void weft__ready_next(weft__fiber *f)
{
    weft__worker *w = weft__fstate_of(f)->w;
    if (weft__tls_worker != w) {
        weft__ready(f);
        return;
    }
    if (WEFT_UNLIKELY(weft__hooks(w) & WEFT__HOOK_TRACE))
        weft__hook_wake(w, f);
    if (w->run_next)
        weft__ready_append(w, w->run_next);
    w->run_next = f;
}

/* The wake side of weft__core_host (suspend.c): here, so that the wake
 * inlines weft__ready. Callable from: any thread. */
void weft__host_wake(weft__waiter *wt)
{
    weft__ready(wt->fiber);
}

void weft__host_wake_next(weft__waiter *wt)
{
    weft__ready_next(wt->fiber);
}

/* This file is private to weft: a worker's life. weft__worker_init and
 * weft__worker_fini make and free what a worker or bound thread owns
 * (deque, fiber pool, timer heap, pin event); weft__worker_thread is a
 * worker thread's body: it sets up its host fiber, runs the loop
 * (worker.c, weft__worker_loop) on a fiber, and leaves when the
 * scheduler exits. Callable from: sched.c's create and destroy, bind and
 * unbind (init, fini), pthread_create (the thread). */
#define _GNU_SOURCE
#include <string.h>

#include "loop.h"
#include "suspend.h"
#include "task.h"
#include "worker.h"
#include "worker_life.h"

/* Deepest nesting of tasks run inline by wait_until before the waiting
 * fiber is switched out instead. */
#define WEFT__INLINE_DEPTH 64

/* ---- worker threads ---------------------------------------------------------- */

int weft__worker_init(weft_sched *s, weft__worker *w, unsigned index, bool bound)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->index = index;
    w->bound = bound;
    w->placed = bound && s->nworkers > 0;   /* beside workers: pick_bound; with none, pick_normal as a worker */
    w->track = s->track;
    atomic_init(&w->hooks, (unsigned char)weft__hooks_initial(s));
    w->rng = (s->cfg.seed ? s->cfg.seed : 0x9e3779b97f4a7c15ull) + 0x632be59bd9b4e019ull * (index + 1);
    w->shuffle_rng = (s->cfg.seed ? s->cfg.seed : 0x9e3779b97f4a7c15ull) ^ 0xd1b54a32d192ed03ull;
    w->shuffle_rng += !w->shuffle_rng;   /* xorshift never leaves 0 */
    w->deque_capacity = s->cfg.local_capacity;
    w->lifo_budget = s->cfg.lifo_budget;
    w->global_interval = s->cfg.global_interval;
    w->global_left = w->global_interval;
    w->spin_scans = 2 * s->cfg.spin_us + 2;   /* spin_us bounds the time; spins teach the rest (worker.c) */
    w->slot_spin_scans = w->spin_scans;
    w->prio_left = s->cfg.priority_interval;
    w->shuffle = s->cfg.shuffle;
    weft_event_init(&w->pin_ev, false, false);
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
    if (w->side_fiber)
        weft__fiber_release(&w->fibers, w->side_fiber);   /* parked between runs (wait_until.c): never switched to again */
    w->side_fiber = NULL;
    while (w->idle_fibers) {
        weft__fiber *f = w->idle_fibers;
        w->idle_fibers = f->next;
        if (f != &w->host)
            weft__fiber_release(&w->fibers, f);
    }
    weft__fiber_pool_fini(&w->fibers);
    weft__deque_fini(&w->deque);
    weft_event_destroy(&w->pin_ev);
    weft__task_pool_fini(w->s, &w->pool);
    weft__spill_fini(w->s, w);
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
    weft__host_set_next(&w->run_next);
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
    weft__fiber *first = weft__spare_fiber(w);
    if (first) {
        weft__switch_to(w, first);
    } else {
        weft__worker_loop(w);
    }
    /* The worker has left: from its stop hook, weft calls act as from an
     * outside thread (a spawn returns WEFT_ESHUTDOWN instead of landing
     * in a deque nobody will look at again). */
    weft__host_set(NULL);
    weft__host_set_next(NULL);
    weft__fiber_thread_leave();
    weft__tls_worker = NULL;
    if (s->cfg.on_worker_stop)
        s->cfg.on_worker_stop(w->index, s->cfg.hook_ctx);
    return NULL;
}

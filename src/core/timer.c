/* This file is private to weft: the per-worker timer heap, and
 * weft_sleep on it.
 *
 * Synchronization
 *   timers, ntimers, timer_cap: owner only. A binary min-heap by
 *                 deadline of pointers to timers that live in their
 *                 waiters' frames (weft__timer, core.h). Armed by a fiber
 *                 before it blocks (host_block_slow in suspend.c,
 *                 weft_sleep here), fired by the loop (worker.c) when
 *                 due, or disarmed by a timed wait resumed before that.
 *                 A fire runs on the owning worker and only makes a fiber
 *                 ready: a timed wait's races the notifier with a CAS on
 *                 the waiter's state (wait_timeout, suspend.c); a sleep's
 *                 has nobody to race.
 *   held          per fiber (weft__fstate, core.h): owner only. Submitted
 *                 by thread_sleep before the thread itself sleeps.
 *
 * weft_sleep blocks as host_block does (suspend.c, "Blocking a fiber"):
 * have_fiber first, then the timer, then weft__suspend.
 */
#define _GNU_SOURCE
#include <string.h>

#include "ready.h"
#include "suspend.h"
#include "timer.h"
#include "worker.h"

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

/* ---- weft_sleep ------------------------------------------------------------ */

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
    weft__os_sleep_ns(ns);
    return WEFT_OK;
}

int weft_sleep(uint64_t ns)
{
    weft__worker *w = weft__tls_worker;
    /* With no fiber to go on with (none can be mapped), the thread
     * itself sleeps. */
    if (!w || !weft__have_fiber(w))
        return thread_sleep(w, ns);
    uint64_t now = weft__now_ns();
    /* A sleep past the clock's range lasts "forever" (until the end of
     * the clock), not a wrapped, short deadline. */
    uint64_t deadline = ns < UINT64_MAX - now ? now + ns : UINT64_MAX;
    sleep_timer st = { .timer = { .deadline = deadline, .fire = sleep_fire },
                       .fiber = w->cur };
    if (!weft__timer_arm(w, &st.timer))
        return thread_sleep(w, ns);   /* the timer heap could not grow: the thread sleeps */
    if (WEFT_UNLIKELY(weft__hooks(w)))
        weft__hook_note(w, "sleep", NULL, st.timer.deadline);
    weft__suspend(w);
    return WEFT_OK;
}

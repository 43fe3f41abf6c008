/* This file is private to weft: placement beyond hints (priorities and
 * pinned tasks), thread ids, and bound threads pumping their pinned work
 * (weft_pinned_run, weft_pinned_wait_for, what unbind runs first).
 *
 * Synchronization
 *   prio_high, prio_low
 *                 rings like the global one (global_ring.c): any thread pushes,
 *                 any thread that picks pops. A push is followed by a
 *                 seq_cst fence and the park check, as a locked push to
 *                 the global ring is (weft__submit_global), so a parked
 *                 worker is woken for it. No ports here (extspawn.c):
 *                 HIGH and LOW spawns from outside take the ring's lock.
 *   prio_used     set (relaxed) before the first push to either ring, never
 *                 cleared: a hint that lets pick_local skip the rings with
 *                 one load; a worker about to park re-checks the rings
 *                 themselves after its barrier (weft__work_queued).
 *   pins_in       a thread's inbox of pinned tasks: a Treiber stack, any
 *                 thread pushes with a release CAS, the owner takes all
 *                 with an acquire exchange into pin_head/pin_tail (owner
 *                 only), oldest first. The pusher then wakes the owner as
 *                 a fiber's waker does (weft__wake_worker, park.c): the
 *                 same barrier pairs, so a parked owner sees the push or
 *                 is woken. A bound owner in weft_pinned_wait_for is
 *                 woken by the pin_ev signal alone (below).
 *   bound threads' boxes
 *                 a bound thread's worker may be freed by unbind: a pin to
 *                 it looks it up by id (by_id) and pushes and wakes under
 *                 bound_lock. Unbind closes the box (pins_closed) under the
 *                 same lock first, then runs what was pinned, so a pin
 *                 from another thread either landed before the close (and
 *                 is run: unbind looks again under the lock until the box
 *                 is empty) or is refused with EINVAL. Closing first is
 *                 what makes unbind end: a drain that closed only once it
 *                 saw the box empty ran for as long as other threads kept
 *                 pinning (a CI run spent 15 minutes in one). Pins the
 *                 thread makes to itself, from tasks it runs in that
 *                 drain, still land: they are part of what it finishes.
 *                 A worker's box lives as long as the scheduler; pins to
 *                 it from outside follow the external-spawn rule
 *                 (weft__outside_enter: ext_inflight, then shutdown:
 *                 WEFT_ESHUTDOWN). weft_spawn_ex from outside takes its
 *                 record, and gives a refused one back, inside that
 *                 announcement too; its NORMAL work goes through the
 *                 thread's port of the global ring (extspawn.c).
 *   pin_waiting, pin_ev
 *                 weft_pinned_wait_for: the owner sets pin_waiting (seq_cst)
 *                 and re-checks its box before it waits on pin_ev (an
 *                 auto-reset event); a pinner reads pin_waiting after its
 *                 push (seq_cst fence) and signals: Dekker, so one of the
 *                 two sees the other. The signal readies the host fiber,
 *                 which wakes the thread (weft__ready), so a pinner that
 *                 signals makes no other wake; one that reads pin_waiting
 *                 false wakes the thread for the push (weft__wake_worker):
 *                 the owner's re-check comes after its own clearing of
 *                 pin_waiting and a fence, so it sees the push or is
 *                 woken. A pin the thread makes to itself,
 *                 from a task it runs while its host fiber sleeps in that
 *                 wait, reads pin_waiting too and signals (both owner
 *                 only): without it the pin would run unseen and the wait
 *                 sleep on to its timeout, or for ever. A spare signal
 *                 only makes a later wait look again.
 *   pump_depth    owner only: pinned tasks weft_pinned_run runs on the
 *                 thread's own stack, so that unbind and destroy can tell
 *                 they are called from a task.
 */
#include <string.h>

#include "extspawn.h"
#include "park.h"
#include "pin.h"
#include "task.h"
#include "worker.h"

/* ---- a thread's box of pinned tasks ------------------------------------------ */

/* Any thread but the owner: pushes n on w's box. */
static void pin_push(weft__worker *w, weft__node *n)
{
    weft__node *head = atomic_load_explicit(&w->pins_in, memory_order_relaxed);
    do {
        weft__node_set_next(n, head);   /* keeps a hook record's mark */
    } while (!atomic_compare_exchange_weak_explicit(&w->pins_in, &head, n,
                 memory_order_release, memory_order_relaxed));   /* release: pairs with the acquire exchange in pin_drain */
}

/* The owner appends n to its FIFO. */
static void pin_append(weft__worker *w, weft__node *n)
{
    weft__node_set_next(n, NULL);
    if (w->pin_tail)
        weft__node_set_next(w->pin_tail, n);
    else
        w->pin_head = n;
    w->pin_tail = n;
    w->placed = true;
}

/* Moves the box to the owner's FIFO, oldest first. */
static void pin_drain(weft__worker *w)
{
    weft__node *n = atomic_exchange_explicit(&w->pins_in, NULL, memory_order_acquire);   /* acquire: pairs with the release CAS in pin_push */
    weft__node *rev = NULL;
    while (n) {
        weft__node *next = weft__node_next(n);
        weft__node_set_next(n, rev);
        rev = n;
        n = next;
    }
    while (rev) {
        weft__node *next = weft__node_next(rev);
        pin_append(w, rev);
        rev = next;
    }
}

weft__task *weft__take_pinned(weft__worker *w)
{
    if (!w->pin_head) {
        if (!atomic_load_explicit(&w->pins_in, memory_order_relaxed))   /* relaxed: a hint; the exchange acquires */
            return NULL;
        pin_drain(w);
    }
    weft__node *n = w->pin_head;
    w->pin_head = weft__node_next(n);
    if (!w->pin_head) {
        w->pin_tail = NULL;
        w->placed = weft__bound_beside(w);   /* as weft__worker_init set it */
    }
    WEFT_TSAN_ACQUIRE(n);
    w->pinned_runs++;
    return weft__as_task(n);
}

/* ---- placement ------------------------------------------------------------------- */

/* The bound thread of s with id `id` whose box is open to `self` (the
 * caller's worker of s, or NULL): one slot of by_id. An unbinding
 * thread's box is closed to every thread but itself. Caller holds
 * bound_lock. */
static weft__worker *bound_by_id(weft_sched *s, int id, const weft__worker *self)
{
    if (id < 0 || (unsigned)id < s->nworkers || (unsigned)id - s->nworkers >= s->ids_top)
        return NULL;
    weft__worker *b = s->by_id[(unsigned)id - s->nworkers];
    return b && (!b->pins_closed || b == self) ? b : NULL;
}

/* Pins t to `thread`; w: the caller's worker of s, or NULL. */
static int place_pinned(weft_sched *s, weft__worker *w, weft__task *t, int thread)
{
    WEFT_TSAN_RELEASE(t);
    if ((unsigned)thread < s->nworkers) {
        weft__worker *to = &s->workers[thread];
        weft__count_spawn(s, w);
        if (to == w) {
            pin_append(w, &t->node);
            return WEFT_OK;
        }
        pin_push(to, &t->node);
        weft__wake_worker(s, to);
        return WEFT_OK;
    }
    pthread_mutex_lock(&s->bound_lock);
    weft__worker *to = bound_by_id(s, thread, w);
    if (!to) {
        pthread_mutex_unlock(&s->bound_lock);
        return WEFT_EINVAL;
    }
    weft__count_spawn(s, w);
    if (to == w) {
        /* A task this thread runs while its own code waits in
         * weft_pinned_wait_for (helping, or any task with no workers): that
         * wait sleeps on pin_ev and must hear of the pin as it would from
         * another thread. Owner only on both sides: no fence. */
        pin_append(w, &t->node);
        if (atomic_load_explicit(&w->pin_waiting, memory_order_relaxed))
            weft_event_signal(&w->pin_ev);
    } else {
        /* One wake, after all is published. The thread waiting in
         * weft_pinned_wait_for is woken by the signal alone (it readies
         * its host fiber: an inbox push and weft__wake_worker); a wake of
         * its own before the signal woke the thread to find its host
         * still waiting, and it slept again, to be woken by the signal
         * (measured: two sleeps and two wakes a round trip where one
         * does). A thread not in that wait is woken for the push. */
        pin_push(to, &t->node);
        atomic_thread_fence(memory_order_seq_cst);   /* the push before pin_waiting's load: pairs with wait_pinned's store and re-check */
        if (atomic_load_explicit(&to->pin_waiting, memory_order_relaxed))
            weft_event_signal(&to->pin_ev);
        else
            weft__wake_worker(s, to);
    }
    pthread_mutex_unlock(&s->bound_lock);   /* to may unbind from here on */
    return WEFT_OK;
}

/* HIGH or LOW: its ring; then wake a parked worker as for the global
 * ring (weft__submit_global). */
static void place_prio(weft_sched *s, weft__worker *w, weft__task *t, int prio)
{
    weft__count_spawn(s, w);
    if (!atomic_load_explicit(&s->prio_used, memory_order_relaxed))
        atomic_store_explicit(&s->prio_used, true, memory_order_relaxed);   /* a hint (see Synchronization) */
    weft__inject_push(prio == WEFT_PRIORITY_HIGH ? &s->prio_high : &s->prio_low, &t->node);
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: as after a global push in weft__submit_global */
    if (weft__notify_check(s))
        weft__notify_slow(s);
}

/* weft__submit_placed past the outside check. w: the caller's worker of
 * s, or NULL from a thread inside weft__outside_enter (then NORMAL work
 * goes through its port of the global ring, extspawn.c). */
static int place(weft_sched *s, weft__worker *w, weft__task *t, int prio, int thread, weft_hint hint)
{
    if (thread >= 0)
        return place_pinned(s, w, t, thread);
    if (prio != WEFT_PRIORITY_NORMAL)
        place_prio(s, w, t, prio);
    else if (w)
        weft__submit(s, w, t, hint);
    else
        weft__submit_outside(s, NULL, t, hint);
    return WEFT_OK;
}

int weft__submit_placed(weft_sched *s, weft__worker *w, weft__task *t, int prio, int thread)
{
    if (w && w->s == s)
        return place(s, w, t, prio, thread, WEFT_HINT_NONE);
    if (!weft__outside_enter(s))   /* the outside rule, as weft_spawn's (extspawn.h) */
        return WEFT_ESHUTDOWN;
    int rc = place(s, NULL, t, prio, thread, WEFT_HINT_NONE);
    weft__outside_leave(s);
    return rc;
}

bool weft__thread_valid(weft_sched *s, int id)
{
    if (id < 0)
        return false;
    if ((unsigned)id < s->nworkers)
        return true;
    weft__worker *self = weft__tls_worker;
    pthread_mutex_lock(&s->bound_lock);
    bool ok = bound_by_id(s, id, self && self->s == s ? self : NULL) != NULL;
    pthread_mutex_unlock(&s->bound_lock);
    return ok;
}

/* ---- spawn with options ------------------------------------------------------------ */

/* weft_spawn_ex past its checks. w: the caller's worker of s, or NULL
 * from a thread inside weft__outside_enter. From outside, a record for
 * the global queue or a priority ring comes from the thread's port
 * (extspawn.c); one pinned to a thread from s's spares, as before ports:
 * pins from outside are not the hot path ports are for, and this keeps
 * the pin boxes' records out of the port caches (see the issue 22 note:
 * a hang once seen in stress_pin with them there, never reproduced). */
static int spawn_placed(weft_sched *s, weft__worker *w, weft_fn fn, void *arg,
                        const weft_spawn_opts *o, int thread)
{
    weft__task *t = w ? weft__task_alloc(s, w) :
                    thread >= 0 ? weft__task_alloc(s, NULL) : weft__task_alloc_outside(s);
    if (!t)
        return WEFT_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    t->spawner = w ? w->cur : NULL;
    t->flags &= WEFT__TASK_POOLED;
    if (o->name) {
        t->flags |= WEFT__TASK_NAMED;
        t->data[0] = (uint64_t)(uintptr_t)o->name;
    }
    int rc = place(s, w, t, (int)o->priority, thread, o->hint);
    if (rc != WEFT_OK)
        weft__task_free(s, w, t);
    return rc;
}

int weft_spawn_ex(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o)
{
    if (!o)
        return weft_spawn(s, fn, arg);
    if (!s || !fn || (unsigned)o->priority > WEFT_PRIORITY_LOW ||
        (unsigned)o->hint > WEFT_HINT_YIELD || (o->pinned && o->thread < 0))
        return WEFT_EINVAL;
    int thread = o->pinned ? o->thread : -1;
    if (o->sem)
        return o->pinned ? WEFT_EINVAL : weft__spawn_sem(s, fn, arg, o);   /* proc.c */
    if (thread < 0 && o->priority == WEFT_PRIORITY_NORMAL && !o->name)
        return weft_spawn_hint(s, fn, arg, o->hint);
    weft__worker *w = weft__tls_worker;
    if (w && w->s != s)
        w = NULL;
    if (w)
        return spawn_placed(s, w, fn, arg, o, thread);
    /* From outside: the record is taken (from the thread's port, or from
     * s's spares) and, if refused, given back inside the announcement,
     * so that destroy frees nothing under either. */
    if (!weft__outside_enter(s))
        return WEFT_ESHUTDOWN;
    int rc = spawn_placed(s, NULL, fn, arg, o, thread);
    weft__outside_leave(s);
    return rc;
}

/* ---- thread ids -------------------------------------------------------------------- */

int weft_thread_id(void)
{
    weft__worker *w = weft__tls_worker;
    return w ? (int)w->index : -1;
}

/* Bound threads' ids. The smallest free id is given at bind (the
 * header's rule), and a program may bind thousands of threads: a scan
 * of bound[] per candidate id made a bind O(n^2) (11 ms with 3,000 bound).
 * Ids below nworkers + ids_top have been given; those given back wait
 * in id_free, a binary min-heap, so the smallest free id is its root,
 * else ids_top: bind and unbind are O(log n), a pin's look-up one slot
 * of by_id, and bound[] loses an entry by moving its last one into the
 * hole (bound_pos). Everything under bound_lock. */

static void heap_swap(unsigned *h, unsigned i, unsigned j)
{
    unsigned t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_push(weft_sched *s, unsigned id)
{
    unsigned *h = s->id_free;
    unsigned i = s->nfree++;
    h[i] = id;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
        s->bind_steps++;
    }
}

static unsigned heap_pop(weft_sched *s)
{
    unsigned *h = s->id_free;
    unsigned top = h[0];
    h[0] = h[--s->nfree];
    for (unsigned i = 0;;) {
        unsigned l = 2 * i + 1, m = i;
        if (l < s->nfree && h[l] < h[m])
            m = l;
        if (l + 1 < s->nfree && h[l + 1] < h[m])
            m = l + 1;
        if (m == i)
            break;
        heap_swap(h, i, m);
        i = m;
        s->bind_steps++;
    }
    return top;
}

/* Grows *arr (n entries of size each, room for *cap) to room for need:
 * doubling, so growth is O(1) amortized. False, nothing changed: out of
 * memory. */
static bool grow(weft_sched *s, void **arr, unsigned n, unsigned *cap, unsigned need, size_t size)
{
    if (need <= *cap)
        return true;
    unsigned c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    void *p = weft__alloc_with(&s->cfg.allocator, size * c);
    if (!p)
        return false;
    if (*arr) {
        memcpy(p, *arr, size * n);
        weft__free_with(&s->cfg.allocator, *arr, size * *cap);
    }
    *arr = p;
    *cap = c;
    return true;
}

int weft__bound_add(weft_sched *s, weft__worker *w)
{
    if (!grow(s, (void **)&s->bound, s->nbound, &s->bound_cap, s->nbound + 1, sizeof *s->bound))
        return WEFT_ENOMEM;
    if (s->nfree == 0) {
        /* A new id: room for it in both tables (the heap may hold every
         * id given, once all are back, and unbind must not allocate).
         * A table grown before the other failed stays grown: harmless. */
        if (!grow(s, (void **)&s->id_free, s->nfree, &s->free_cap, s->ids_top + 1, sizeof *s->id_free) ||
            !grow(s, (void **)&s->by_id, s->ids_top, &s->ids_cap, s->ids_top + 1, sizeof *s->by_id))
            return WEFT_ENOMEM;
    }
    unsigned slot = s->nfree ? heap_pop(s) : s->ids_top++;
    s->bind_steps++;
    s->by_id[slot] = w;
    w->index = s->nworkers + slot;
    w->bound_pos = s->nbound;
    s->bound[s->nbound++] = w;
    atomic_store_explicit(&s->nbound_seen, s->nbound, memory_order_relaxed);   /* under bound_lock; ordered for readers by the bind's heavy fence (spawn_bound.c, "Spawns of a bound thread with no workers") */
    return WEFT_OK;
}

void weft__bound_remove(weft_sched *s, weft__worker *w)
{
    unsigned pos = w->bound_pos;
    if (pos >= s->nbound || s->bound[pos] != w)
        weft__panic("bound_remove: thread %u not listed", w->index);
    weft__worker *last = s->bound[--s->nbound];
    atomic_store_explicit(&s->nbound_seen, s->nbound, memory_order_relaxed);   /* under bound_lock; a stale larger value only sends a spawn the old way */
    s->bound[pos] = last;
    last->bound_pos = pos;
    unsigned slot = w->index - s->nworkers;
    s->by_id[slot] = NULL;
    heap_push(s, slot);
    s->bind_steps++;
}

void weft__bound_fini(weft_sched *s)
{
    const weft_allocator *a = &s->cfg.allocator;
    if (s->bound)
        weft__free_with(a, s->bound, sizeof *s->bound * s->bound_cap);
    if (s->by_id)
        weft__free_with(a, s->by_id, sizeof *s->by_id * s->ids_cap);
    if (s->id_free)
        weft__free_with(a, s->id_free, sizeof *s->id_free * s->free_cap);
    s->bound = NULL;
    s->by_id = NULL;
    s->id_free = NULL;
}

/* ---- a bound thread's pump ------------------------------------------------------- */

int weft_pinned_run(uint64_t budget_ns)
{
    weft__worker *w = weft__tls_worker;
    if (!w || !w->bound)
        return WEFT_ENOTBOUND;
    if (w->cur != &w->host || w->pump_depth)
        return 0;   /* from a task on this thread: it would nest under it */
    /* Its own fibers that are ready again first: they go on behind this
     * yield (the loop, on another fiber, resumes them). */
    if (w->ready_head || w->run_next || atomic_load_explicit(&w->inbox, memory_order_relaxed))
        weft_yield();
    uint64_t deadline = budget_ns >= UINT64_MAX / 2 ? UINT64_MAX : weft__now_ns() + budget_ns;
    int ran = 0;
    for (;;) {
        weft__task *t = weft__take_pinned(w);
        if (!t)
            break;
        /* On the thread's own stack, under this call: a task that blocks
         * here suspends the host fiber, and the loop runs meanwhile. */
        w->pump_depth++;
        weft__fstate_cur(w)->nest++;   /* nested under the host's own code (fstate.nest) */
        weft__run_task(w, t);
        weft__fstate_cur(w)->nest--;
        w->pump_depth--;
        ran++;
        if (deadline != UINT64_MAX && weft__now_ns() >= deadline)
            break;
    }
    return ran;
}

int weft_pinned_wait_for(uint64_t timeout_ns)
{
    weft__worker *w = weft__tls_worker;
    if (!w || !w->bound)
        return WEFT_ENOTBOUND;
    uint64_t runs = w->pinned_runs;
    uint64_t deadline = weft__deadline(timeout_ns);
    int rc = WEFT_OK;
    atomic_store(&w->pin_waiting, true);   /* seq_cst: before the re-check; pairs with the pinner's fence */
    while (!w->pin_head && !atomic_load_explicit(&w->pins_in, memory_order_relaxed) &&
           w->pinned_runs == runs) {   /* ran meanwhile (this thread runs its pins whenever it waits) */
        uint64_t left = UINT64_MAX;
        if (deadline) {
            uint64_t now = weft__now_ns();
            if (now >= deadline) {
                rc = WEFT_ETIMEDOUT;
                break;
            }
            left = deadline - now;
        }
        if (timeout_ns == 0) {
            rc = WEFT_ETIMEDOUT;
            break;
        }
        weft_event_wait_for(&w->pin_ev, left);
    }
    atomic_store_explicit(&w->pin_waiting, false, memory_order_relaxed);
    return rc;
}

/* ---- unbinding ------------------------------------------------------------------------- */

static bool quiet_pred(void *ctx)
{
    weft__worker *w = ctx;
    /* The host fiber counts among the blocked while it is switched out
     * to let the loop poll this. */
    unsigned mine = w->blocked - (w->cur != &w->host ? 1u : 0u);
    return mine == 0 && !w->pin_head && !atomic_load_explicit(&w->pins_in, memory_order_relaxed);
}

void weft__bound_close(weft__worker *w)
{
    pthread_mutex_lock(&w->s->bound_lock);
    w->pins_closed = true;   /* from here on only w pins to w (bound_by_id) */
    pthread_mutex_unlock(&w->s->bound_lock);
}

void weft__bound_drain(weft__worker *w)
{
    weft_sched *s = w->s;
    for (;;) {
        weft_pinned_run(UINT64_MAX);
        if (!quiet_pred(w))
            weft_wait_until(quiet_pred, w);   /* its blocked tasks end, what is pinned runs */
        pthread_mutex_lock(&s->bound_lock);
        bool more = w->pin_head || atomic_load_explicit(&w->pins_in, memory_order_relaxed);   /* under bound_lock: every pin to w is made under it */
        pthread_mutex_unlock(&s->bound_lock);
        if (!more)
            return;
    }
}

/* This file is private to weft: spawns of a bound thread from its own
 * code (its host fiber), with no workers and beside them (task.c has
 * every other spawn): the thread's own deque with its spill array, its
 * port with the side runs, and the hand-over of its deque when another
 * thread binds.
 *
 * Synchronization
 *   spill, spill_head, spill_n, spill_cap (per bound thread): under
 *               bound_lock; nspill mirrors the count, stored under it,
 *               read by the owner relaxed as a hint.
 *   a bound thread's deque (no workers): pushed and popped by its owner;
 *               stolen by a thread that binds (B3), under bound_lock.
 *   nbound_seen, nbound: H4 and B1 below (Dekker).
 *   the port's ring (beside workers): its owner pushes and takes back,
 *               the workers take (global_ring.c, P1-P3, T1-T3).
 *   side_* (per bound thread): owner only (wait_until.c).
 *
 * Spawns of a bound thread beside workers, from its own code (the host
 * fiber; spawn_beside): through its port of the global ring (extspawn.c,
 * kept in w->port), its own FIFO that the workers take from lock-free,
 * oldest first:
 *   S1. The port's ring has room (and its overflow list is empty): push,
 *       lock-free, and wake a worker if one must be (as any port push).
 *       The list in use (S3 below, or the thread's tasks' own spawns):
 *       behind it, under its lock, as before.
 *   S2. Full, so the workers are behind: the thread runs the task itself,
 *       then takes back the port's newest tasks, 32 at a time, newest
 *       first, and runs them, until half the ring is left (the workers
 *       go on taking the oldest meanwhile): weft__host_run. It runs
 *       them on a side fiber of its own, never on the caller's stack,
 *       with the host first on the ready FIFO: a task that blocks (or
 *       yields) hands the thread back to the caller's spawns at once, as
 *       in the burst with no workers below, and the rest of its batch
 *       goes to the shared queue; it goes on when the thread next waits
 *       in weft. No lock, and the records in use stay few and in the
 *       thread's cache; a job system that runs the task inline when its
 *       queue is full does the same. Not with more than
 *       WEFT__BURST_BLOCKED fibers blocked on the thread, nor on a thread
 *       that does not help (WEFT_BIND_NO_HELP), nor when no fiber can be
 *       had: then
 *   S3. the port's locked push, behind the full ring, as before.
 * Taking back from the port is safe against its consumers because no
 * consumer takes more than WEFT__PRING_TAKE_MAX at once (global_ring.h,
 * weft__pring_pop). While such a thread's spawns run tasks, a worker
 * about to park first gives its CPU away once (worker.c, side_burst).
 *
 * Spawns of a bound thread with no workers, from its own code (the
 * host fiber), a weft_spawn goes on its own deque as a worker's does
 * (a push, no lock, no fence): nobody else runs tasks while it is in its
 * own code if it is the only bound thread, and it runs them from there
 * when it next waits in weft, or when the deque is full.
 *
 * A full deque (a burst): the host runs it, on fibers of its own
 * (weft__burst_full, weft__host_drain): the host suspends as in
 * weft_wait_until, and the thread's loop runs the deque, newest first as
 * a worker would, until it is empty (or a deque's worth of tasks have
 * completed, or more than WEFT__BURST_BLOCKED fibers are blocked: every
 * task it takes does one or the other); then the
 * host goes on with its spawns. A task that blocks gives the loop back
 * at once, so a task may still wait for one the caller has yet to spawn
 * (the caller's spawns go on once the deque is empty); the spawn never
 * runs a task on the caller's own stack, which would then wait under
 * it. The records stay few and hot (those of the last deque's worth),
 * as in a job system that runs the task inline when its queue is full:
 * 10^6 empty tasks spawned then waited for cost 57 instructions a task,
 * against 187 with the spill below. Why the bounds: tasks that all wait
 * for something the caller does after its burst (a gate it opens) would
 * otherwise hold a fiber each, and tasks that keep spawning (a task
 * that re-queues itself until the caller says stop) would keep the
 * deque from emptying; with more than WEFT__BURST_BLOCKED blocked, or
 * when no fiber can be had, the spawn spills instead.
 *
 * The spill: the deque's older half, in one step, to the end of the
 * thread's spill array (w->spill, grown as needed; the global ring if it
 * cannot grow), from which the thread's loop refills its deque, 32 at a
 * time, oldest first, once it finds nothing else (weft__spill_take, from
 * steal: with no workers there is nobody to steal from, so it costs
 * workers nothing). The array is a plain FIFO of pointers under
 * bound_lock, taken twice per 128 spawns. The deque stays private only
 * while no other thread is bound, since a second bound thread waiting in
 * weft must be able to run the first's spawns; two sides, Dekker on
 * nbound_seen and the deque:
 *   spawn from the host (task.c,          bind, no workers (weft__bound_reclaim)
 *   spawn_host)
 *   H1. count it in w->spawned            B1. under bound_lock: listed;
 *   H2. push on w's deque (full: run it,      nbound_seen = nbound
 *       or its older half to the spill    B2. weft__fence_park (membarrier:
 *       array, under bound_lock)              a full barrier on every thread)
 *   H3. weft__fence_submit                B3. under bound_lock: steal every
 *   H4. nbound_seen != 1: hand the deque      other bound thread's deque
 *       and the spill array to the global     empty, and take its spill
 *       ring and wake one                     array, into the global ring
 *       (weft__bound_hand_back)
 * Either H4 reads B1's store and A hands its deque over itself, or its
 * push (H2) precedes B2's barrier and B3 finds it (a spill under
 * bound_lock is ordered with B1 and B3 by the lock itself); every later spawn of
 * A reads nbound_seen >= 2 at H4 (B2 ordered the store before it) until
 * an unbind lowers it. Stealing is safe against the owner's pops (the
 * Chase-Lev steal), and bound_lock keeps the victim's worker allocated
 * (unbind leaves bound[] under it, its deque empty: with no workers it
 * waits for idle first). Not in shuffle mode, whose owner-side swap is
 * not safe against a thief: there the host spawns through its port.
 * Such spawns carry no spawner (t->spawner NULL), so a wait on the host
 * never runs one inline on the host's stack (sched.c, in_task).
 *
 */
#include <string.h>

#include "extspawn.h"
#include "loop.h"
#include "park.h"
#include "suspend.h"
#include "task.h"

/* ---- a bound thread's spill array ("... with no workers") ------------------ */

/* Room for k more in w's spill array: the live part moved to the front,
 * else a larger array. false: no memory. Caller holds bound_lock. */
static bool spill_room(weft_sched *s, weft__worker *w, unsigned k)
{
    if (w->spill_head != 0 && w->spill_n + k > w->spill_cap) {
        unsigned live = w->spill_n - w->spill_head;
        memmove(w->spill, w->spill + w->spill_head, live * sizeof *w->spill);
        w->spill_head = 0;
        w->spill_n = live;
    }
    if (w->spill_n + k <= w->spill_cap)
        return true;
    unsigned cap = w->spill_cap ? w->spill_cap : 1024;
    while (cap < w->spill_n + k) {
        if (cap > UINT32_MAX / 2)
            return false;
        cap *= 2;
    }
    weft__node **a = weft__alloc_with(&s->cfg.allocator, cap * sizeof *a);
    if (a == NULL)
        return false;
    if (w->spill) {
        memcpy(a, w->spill, w->spill_n * sizeof *a);
        weft__free_with(&s->cfg.allocator, w->spill, w->spill_cap * sizeof *a);
    }
    w->spill = a;
    w->spill_cap = cap;
    return true;
}

/* Caller holds bound_lock. */
static void spill_count(weft__worker *w)
{
    if (w->spill_head == w->spill_n)
        w->spill_head = w->spill_n = 0;
    atomic_store_explicit(&w->nspill, w->spill_n - w->spill_head, memory_order_relaxed);   /* under bound_lock; a hint for the owner */
}

/* H2 with a full deque: its older half to the end of w's spill array
 * (the global ring without memory for it), then t on the deque. */
static __attribute__((noinline)) void spill_and_push(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__node *batch[512];
    unsigned n = weft__pop_older_half(w, batch);
    pthread_mutex_lock(&s->bound_lock);
    bool kept = spill_room(s, w, n);
    if (kept) {
        memcpy(w->spill + w->spill_n, batch, n * sizeof *batch);
        w->spill_n += n;
        spill_count(w);
    }
    pthread_mutex_unlock(&s->bound_lock);
    if (!kept)
        weft__inject_push_batch(&s->global, batch, n);
    WEFT__STAT(w, offloads, 1);
    if (!weft__deque_push(&w->deque, &t->node))
        weft__inject_push(&s->global, &t->node);
}

/* H2 with a full deque: the loop runs it while the host waits (a burst,
 * see "Spawns of a bound thread with no workers"), then t goes on the emptied deque;
 * else, or if the loop left it full, spill_and_push. */
__attribute__((noinline)) void weft__burst_full(weft_sched *s, weft__worker *w, weft__task *t)
{
    if (w->blocked < WEFT__BURST_BLOCKED && weft__host_drain(w, w->deque_capacity) &&
        weft__deque_push(&w->deque, &t->node))
        return;
    spill_and_push(s, w, t);
}

/* Moves up to 32 of w's spilled spawns, oldest first, onto its deque;
 * true if it moved any. Callable from: owner. */
static bool spill_refill(weft__worker *w)
{
    weft_sched *s = w->s;
    unsigned k = 0;
    if (atomic_load_explicit(&w->nspill, memory_order_relaxed) != 0) {   /* relaxed: a hint; exact under the lock */
        pthread_mutex_lock(&s->bound_lock);
        unsigned max = w->spill_n - w->spill_head;
        if (max > 32)
            max = 32;
        k = weft__deque_push_many(&w->deque, w->spill + w->spill_head, max);
        w->spill_head += k;
        spill_count(w);
        pthread_mutex_unlock(&s->bound_lock);
    }
    return k != 0;
}

weft__task *weft__spill_take(weft__worker *w)
{
    if (!spill_refill(w))
        return NULL;
    weft__node *n = weft__deque_pop(&w->deque);   /* the newest of those 32: as pick_normal would */
    return n ? (weft__task *)(void *)n : NULL;
}

void weft__spill_hand_back(weft_sched *s, weft__worker *v)
{
    if (atomic_load_explicit(&v->nspill, memory_order_relaxed) == 0)   /* relaxed: a hint; the callers' orders (H4, B3) are by bound_lock or the fences */
        return;
    pthread_mutex_lock(&s->bound_lock);
    if (v->spill_n > v->spill_head)
        weft__inject_push_batch(&s->global, v->spill + v->spill_head, v->spill_n - v->spill_head);
    v->spill_head = v->spill_n;
    spill_count(v);
    pthread_mutex_unlock(&s->bound_lock);
}

void weft__spill_fini(weft_sched *s, weft__worker *w)
{
    if (w->spill)
        weft__free_with(&s->cfg.allocator, w->spill, w->spill_cap * sizeof *w->spill);
    w->spill = NULL;
    w->spill_head = w->spill_n = w->spill_cap = 0;
}

void weft__bound_reclaim(weft_sched *s, weft__worker *self)
{
    if (s->cfg.shuffle)
        return;   /* host spawns go through the port there */
    weft__fence_park();   /* B2: pairs with H3 */
    weft__node *batch[64];
    unsigned n = 0;
    pthread_mutex_lock(&s->bound_lock);   /* B3: the others' workers stay allocated */
    for (unsigned i = 0; i < s->nbound; i++) {
        weft__worker *v = s->bound[i];
        if (v == self)
            continue;
        if (v->spill_n > v->spill_head) {   /* under bound_lock, as its owner writes it; oldest first */
            weft__inject_push_batch(&s->global, v->spill + v->spill_head, v->spill_n - v->spill_head);
            v->spill_head = v->spill_n;
            spill_count(v);
        }
        while (weft__deque_size(&v->deque) != 0) {
            weft__node *node = weft__deque_steal(&v->deque);
            if (node == NULL)
                continue;   /* its owner or another thief took one: look again */
            batch[n++] = node;
            if (n == 64) {
                weft__inject_push_batch(&s->global, batch, n);
                n = 0;
            }
        }
        if (n) {
            weft__inject_push_batch(&s->global, batch, n);
            n = 0;
        }
    }
    pthread_mutex_unlock(&s->bound_lock);
    weft__notify_work(s);
}

/* S1-S3 of "Spawns of a bound thread beside workers" (above): t, filled
 * in, from the host fiber of a bound thread beside workers. */
int weft__spawn_beside(weft_sched *s, weft__worker *w, weft__task *t)
{
    t->spawner = NULL;   /* never run inline on the host's stack (as spawn_host's) */
    if (WEFT_LIKELY(weft__submit_bound_try(s, w, t)))   /* S1 */
        return WEFT_OK;
    if (weft__host_run(w, t))                           /* S2 */
        return WEFT_OK;
    weft__submit_outside(s, w, t, WEFT_HINT_NONE);      /* S3: the port's locked push */
    return WEFT_OK;
}

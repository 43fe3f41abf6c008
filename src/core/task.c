/* This file is private to weft: task records, spawn, and idle accounting.
 *
 * Synchronization
 *   pool        a worker's free records (an array): owner only.
 *   full, empty magazines of spare records (full: WEFT__SLAB_TASKS each)
 *               and empty magazines, shared between pools: under
 *               spare_lock. A pool takes or gives a whole magazine in
 *               one lock round trip, copying 512 bytes of pointers and
 *               touching no record.
 *   loose       the magazine threads with no pool give records back to
 *               one at a time (and take them from, when they have no
 *               port: extspawn.c): under spare_lock.
 *   ports       a thread spawning from outside keeps spare records in
 *               its port of s (extspawn.c), taken a magazine at a time
 *               by weft__task_refill under spare_lock; the records are
 *               then the port owner's, as a pool's are its worker's.
 *   nfull       full's length: written under spare_lock, peeked
 *               without it (relaxed) only to skip the lock.
 *   spare_slabs slabs made for threads with no pool, and those of pools
 *               retired by unbind (their records live on elsewhere):
 *               under spare_lock; freed by destroy.
 *   spawned, completed (per worker)
 *               written by their worker only (relaxed load + release
 *               store: no locked instruction on the spawn path); read by
 *               anyone in weft__sched_is_idle.
 *   ext_spawned spawns from threads with no worker that do not go
 *               through a port: atomic RMW.
 *   pushed (per port, global_ring.h)
 *               submits through a port (plain threads, bound threads
 *               beside workers, a bound thread of a scheduler with none
 *               on its own code: extspawn.c): written by the port's
 *               owner only (relaxed load + release store, before the
 *               item is published), read with acquire by
 *               weft__sched_is_idle. A bound thread's submits through
 *               its port are counted there, not in its `spawned`.
 *
 * Spawns of a bound thread beside workers, from its own code (the host
 * fiber; spawn_beside): through its port of the global ring (extspawn.c,
 * kept in w->port), its own FIFO that the workers take from lock-free,
 * oldest first:
 *   S1. The port's ring has room (and its overflow list is empty): push,
 *       lock-free, and wake a worker if one must be (as any port push).
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
 * (burst_full, weft__host_drain): the host suspends as in
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
 *   spawn from the host (spawn_host)      bind, no workers (weft__bound_reclaim)
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
 * Idle test (wait_idle, destroy): read every `completed` first, then
 * every `spawned`. Counters only grow and a task's spawn is counted
 * before it can complete, so if the sums are equal there was an instant,
 * the end of the first pass, at which nothing was outstanding: each
 * completed value is at most its value then, each spawned value at least.
 * A running task's children are counted (spawn, release) before the task's
 * own completion (release, later in the same thread), so a reader that
 * sees the completion also sees the spawns (acquire loads).
 */
#include <string.h>

#include "extspawn.h"
#include "loop.h"
#include "park.h"
#include "suspend.h"
#include "task.h"

WEFT_TLS weft__worker *weft__tls_worker;

/* ---- records ------------------------------------------------------------- */

/* A slab: a header (its link and a magazine, nine cache lines), then
 * WEFT__SLAB_TASKS records: 4672 bytes, 73 per record. The magazine is
 * the slab's only in that they are made and freed together: it carries
 * any records.
 *
 * Why one magazine per slab: it is exactly enough. With S slabs there are
 * S magazines and 64 S records, and every magazine is on `full` (holding
 * exactly 64), on `empty`, or is `loose`. A pool spills only when it
 * holds 128 records plus the one being freed; if then no magazine were
 * empty, the S - 1 besides `loose` would hold 64 each, and with the
 * pool's 129 the total would exceed 64 S. Likewise a thread without a
 * pool frees into `loose`, and needs an empty magazine only when `loose`
 * is full (or there is none yet), with 64 S + 1 records then counted if
 * none were empty. So spilling never allocates and never fails. Records
 * that a port holds (weft__task_refill) only leave more magazines
 * empty: the count still holds. */
typedef struct slab {
    struct slab *next;
    weft__mag mag;
    _Alignas(WEFT_CACHELINE) weft__task tasks[WEFT__SLAB_TASKS];
} slab;

/* A new slab, listed on *slabs, its records marked pooled. Returns its
 * magazine holding all of them, placed so that they go out (from the top)
 * in address order: a burst then writes fresh records in one ascending
 * stream. */
static weft__mag *slab_new(weft_sched *s, void **slabs)
{
    slab *sl = weft__alloc_with(&s->cfg.allocator, sizeof(slab));
    if (!sl)
        return NULL;
    sl->next = *slabs;
    *slabs = sl;
    for (int i = 0; i < WEFT__SLAB_TASKS; i++) {
        sl->tasks[i].node.next = NULL;   /* a task record: no hook mark (node.h) */
        sl->tasks[i].flags = WEFT__TASK_POOLED;
        sl->mag.slot[WEFT__SLAB_TASKS - 1 - i] = &sl->tasks[i];
    }
    sl->mag.n = WEFT__SLAB_TASKS;
    return &sl->mag;
}

static void slabs_free(weft_sched *s, void *slabs)
{
    for (slab *sl = slabs, *next; sl; sl = next) {
        next = sl->next;
        weft__free_with(&s->cfg.allocator, sl, sizeof(slab));
    }
}

/* The spare stacks. Caller holds spare_lock. */
static void push_mag(weft__mag **stack, weft__mag *m)
{
    m->next = *stack;
    *stack = m;
}

static weft__mag *pop_mag(weft__mag **stack)
{
    weft__mag *m = *stack;
    if (m)
        *stack = m->next;
    return m;
}

static void set_nfull(weft_sched *s, int delta)
{
    atomic_store_explicit(&s->nfull, atomic_load_explicit(&s->nfull, memory_order_relaxed) + (unsigned)delta,
                          memory_order_relaxed);   /* under spare_lock; peeked in alloc_slow, which locks before acting */
}

/* A record freed on a thread with no pool (or a retiring pool's) goes
 * into `loose`; a full `loose` goes on the full stack first. Caller holds
 * spare_lock. */
static void loose_put(weft_sched *s, weft__task *t)
{
    weft__mag *m = s->loose;
    if (!m || m->n == WEFT__SLAB_TASKS) {
        if (m) {
            push_mag(&s->full, m);
            set_nfull(s, 1);
        }
        m = pop_mag(&s->empty);
        if (!m)
            weft__panic("task_free_slow: no empty magazine");   /* see slab: cannot happen */
        s->loose = m;
    }
    m->slot[m->n++] = t;
}

/* A pool just refilled with a magazine: its records are about to be
 * written by the next spawns, in the order they leave the pool (from the
 * top). They are likely cold and, once bursts have shuffled them, in no
 * address order the hardware prefetcher could follow: ask for all of
 * them now, for writing, so that the misses overlap each other instead
 * of stalling the spawns one store at a time. */
static void prefetch_pool(const weft__task_pool *p)
{
    for (unsigned i = p->n; i-- > 0;)
        __builtin_prefetch(p->slot[i], 1);
}

/* Moves full magazine m's records into empty pool p; m is left empty.
 * Sequential reads of one array: no record is touched. */
static void pool_take(weft__task_pool *p, weft__mag *m)
{
    memcpy(p->slot, m->slot, sizeof m->slot);
    p->n = WEFT__SLAB_TASKS;
    m->n = 0;
}

/* The pool is empty (or there is none): a full magazine from the spares,
 * else a new slab. */
weft__task *weft__task_alloc_slow(weft_sched *s, weft__worker *w)
{
    if (w != NULL) {
        weft__task_pool *p = &w->pool;   /* p->n == 0 */
        weft__mag *m = NULL;
        if (atomic_load_explicit(&s->nfull, memory_order_relaxed)) {   /* a peek: only decides whether to lock */
            pthread_mutex_lock(&s->spare_lock);
            m = pop_mag(&s->full);
            if (m) {
                set_nfull(s, -1);
                pool_take(p, m);
                push_mag(&s->empty, m);
            }
            pthread_mutex_unlock(&s->spare_lock);
            if (m)
                prefetch_pool(p);
        }
        if (!m) {
            m = slab_new(s, &p->slabs);
            if (!m)
                return NULL;
            pool_take(p, m);   /* fresh: in address order, no prefetch needed */
            pthread_mutex_lock(&s->spare_lock);
            push_mag(&s->empty, m);
            pthread_mutex_unlock(&s->spare_lock);
        }
        return p->slot[--p->n];
    }
    /* No pool on this thread: one record from `loose`, refilled from the
     * full stack or a new slab. */
    weft__task *t = NULL;
    pthread_mutex_lock(&s->spare_lock);
    weft__mag *m = s->loose;
    if (!m || m->n == 0) {
        weft__mag *next = pop_mag(&s->full);
        if (next)
            set_nfull(s, -1);
        else
            next = slab_new(s, &s->spare_slabs);
        if (next) {
            if (m)
                push_mag(&s->empty, m);
            s->loose = m = next;
        }
    }
    if (m && m->n)
        t = m->slot[--m->n];
    pthread_mutex_unlock(&s->spare_lock);
    return t;
}

unsigned weft__task_refill(weft_sched *s, weft__task **slot)
{
    unsigned n = 0;
    pthread_mutex_lock(&s->spare_lock);
    weft__mag *m = pop_mag(&s->full);
    if (m) {
        set_nfull(s, -1);
    } else if (s->loose && s->loose->n) {
        /* `loose` stays, empty: it is where outside frees go. */
        n = s->loose->n;
        memcpy(slot, s->loose->slot, n * sizeof *slot);
        s->loose->n = 0;
    } else {
        m = slab_new(s, &s->spare_slabs);   /* fresh: in address order */
    }
    if (m) {
        memcpy(slot, m->slot, sizeof m->slot);
        n = WEFT__SLAB_TASKS;
        m->n = 0;
        push_mag(&s->empty, m);
    }
    pthread_mutex_unlock(&s->spare_lock);
    return n;
}

/* The pool is full (or there is none): give records back to the spares. */
void weft__task_free_slow(weft_sched *s, weft__worker *w, weft__task *t)
{
    if (w != NULL) {
        /* Records drift to the workers that run them; once a pool holds
         * WEFT__POOL_TASKS, its older half goes back as a full magazine,
         * so memory stays flat. The newer half stays, warm. */
        weft__task_pool *p = &w->pool;   /* p->n == WEFT__POOL_TASKS */
        pthread_mutex_lock(&s->spare_lock);
        weft__mag *m = pop_mag(&s->empty);
        if (!m)
            weft__panic("task_free_slow: no empty magazine");   /* see slab: cannot happen */
        memcpy(m->slot, p->slot, sizeof m->slot);
        m->n = WEFT__SLAB_TASKS;
        push_mag(&s->full, m);
        set_nfull(s, 1);
        pthread_mutex_unlock(&s->spare_lock);
        memmove(p->slot, p->slot + WEFT__SLAB_TASKS, sizeof m->slot);
        p->n = WEFT__POOL_TASKS - WEFT__SLAB_TASKS;
        p->slot[p->n++] = t;
        return;
    }
    pthread_mutex_lock(&s->spare_lock);
    loose_put(s, t);
    pthread_mutex_unlock(&s->spare_lock);
}

void weft__task_pool_fini(weft_sched *s, weft__task_pool *p)
{
    slabs_free(s, p->slabs);
    memset(p, 0, sizeof *p);
}

void weft__task_pool_retire(weft_sched *s, weft__task_pool *p)
{
    pthread_mutex_lock(&s->spare_lock);
    if (p->slabs) {
        slab *last = p->slabs;
        while (last->next)
            last = last->next;
        last->next = s->spare_slabs;
        s->spare_slabs = p->slabs;
    }
    for (unsigned i = 0; i < p->n; i++)
        loose_put(s, p->slot[i]);
    pthread_mutex_unlock(&s->spare_lock);
    memset(p, 0, sizeof *p);
}

/* ---- scratch blocks ------------------------------------------------------ */

/* Sits at the start of a free block. */
struct weft__scratch {
    struct weft__scratch *next;
    size_t cap;
};

void *weft__scratch_get(weft_sched *s, size_t size, size_t *cap)
{
    pthread_mutex_lock(&s->spare_lock);
    struct weft__scratch **pp = &s->scratch;
    while (*pp && (*pp)->cap < size)
        pp = &(*pp)->next;
    struct weft__scratch *b = *pp;
    if (b)
        *pp = b->next;
    pthread_mutex_unlock(&s->spare_lock);
    if (b) {
        *cap = b->cap;
        return b;
    }
    size_t c = 4096;   /* powers of two: few sizes, so blocks get reused */
    while (c < size && c <= SIZE_MAX / 2)
        c *= 2;
    if (c < size)
        return NULL;
    void *p = weft__alloc_with(&s->cfg.allocator, c);
    if (p)
        *cap = c;
    return p;
}

void weft__scratch_put(weft_sched *s, void *p, size_t cap)
{
    struct weft__scratch *b = p;
    b->cap = cap;
    pthread_mutex_lock(&s->spare_lock);
    b->next = s->scratch;
    s->scratch = b;
    pthread_mutex_unlock(&s->spare_lock);
}

void weft__spares_fini(weft_sched *s)
{
    while (s->scratch) {
        struct weft__scratch *b = s->scratch;
        s->scratch = b->next;
        weft__free_with(&s->cfg.allocator, b, b->cap);
    }
    /* The magazines live in the slabs, freed here and by the pools: the
     * stacks are dropped, not walked. */
    slabs_free(s, s->spare_slabs);
    s->spare_slabs = NULL;
    s->full = s->empty = s->loose = NULL;
    atomic_store_explicit(&s->nfull, 0, memory_order_relaxed);   /* no other thread is left */
    weft__xspawn_forget(s);   /* last: a thread giving a port back may still read s until then */
}

/* ---- idle accounting ---------------------------------------------------- */

bool weft__sched_is_idle(weft_sched *s)
{
    uint64_t done = 0, made = 0;
    for (unsigned i = 0; i < s->nworkers; i++)
        done += atomic_load_explicit(&s->workers[i].completed, memory_order_acquire);   /* pairs with release in run */
    pthread_mutex_lock(&s->bound_lock);
    for (unsigned i = 0; i < s->nbound; i++)
        done += atomic_load_explicit(&s->bound[i]->completed, memory_order_acquire);
    done += s->retired_completed;
    atomic_thread_fence(memory_order_seq_cst);   /* every completed read before any spawned read */
    for (unsigned i = 0; i < s->nworkers; i++)
        made += atomic_load_explicit(&s->workers[i].spawned, memory_order_acquire);     /* pairs with release in count_spawn */
    for (unsigned i = 0; i < s->nbound; i++)
        made += atomic_load_explicit(&s->bound[i]->spawned, memory_order_acquire);
    made += s->retired_spawned;
    pthread_mutex_unlock(&s->bound_lock);
    made += atomic_load_explicit(&s->ext_spawned, memory_order_acquire);
    made += weft__inject_ports_pushed(&s->global);   /* outside spawns through ports (extspawn.c); acquire */
    return made == done;
}

/* ---- hook records ------------------------------------------------------------ */

_Atomic(weft_fn) weft__record_hook;

void weft__set_record_hook(weft_fn hook)
{
    weft_fn none = NULL;
    atomic_compare_exchange_strong_explicit(&weft__record_hook, &none, hook,
        memory_order_relaxed, memory_order_relaxed);   /* relaxed: the queues publish it with the first hook record */
}

/* ---- submit and spawn ------------------------------------------------------- */

/* The oldest half of w's full deque (512 at most) into batch: their
 * count. Callable from: w's owner. */
static unsigned pop_older_half(weft__worker *w, weft__node *batch[static 512])
{
    unsigned half = w->deque_capacity / 2;
    if (half > 512)
        half = 512;
    return weft__deque_pop_oldest(&w->deque, batch, half);
}

/* w's deque is full: move its oldest half to the global ring, then push t.
 * Callable from: w's owner. */
static __attribute__((noinline)) void offload_and_push(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__node *batch[512];
    unsigned n = pop_older_half(w, batch);
    weft__inject_push_batch(&s->global, batch, n);
    WEFT__STAT(w, offloads, 1);
    if (!weft__deque_push(&w->deque, &t->node))
        weft__inject_push(&s->global, &t->node);
}

void weft__submit_global(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__count_spawn(s, w);
    weft__inject_push(&s->global, &t->node);
    /* A full fence in every fence mode: a searcher that finds nothing
     * queued may skip its hand-off, and this fence, not the parker's
     * membarrier, is what pairs with its check (weft__stop_searching). */
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with the RMW in weft__stop_searching, and with fence_park */
    if (weft__notify_check(s))
        weft__notify_slow(s);
}

void weft__submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint)
{
    /* Short of fibers (weft__short_of_fibers): a YIELD spawn goes on the
     * deque like any other, so the work goes depth first and its waiters
     * end before more start; breadth first, every task started waits on
     * a fiber of its own until its children, queued behind everything
     * else, have run. */
    if (w && WEFT_UNLIKELY(hint == WEFT_HINT_YIELD) && weft__short_of_fibers(w))
        hint = WEFT_HINT_NONE;
    if (WEFT_UNLIKELY(!w || (w->bound && !weft__bound_runs_tasks(w)) || hint == WEFT_HINT_YIELD)) {
        /* A bound thread (not on its loop with no workers): through its
         * port (extspawn.c). Outside a worker, or YIELD: the global ring.
         * A caller from outside that may use a port (it has announced
         * itself) calls weft__submit_outside instead. */
        if (w && hint != WEFT_HINT_YIELD)
            weft__submit_outside(s, w, t, hint);
        else
            weft__submit_global(s, w, t);
        return;
    }
    weft__count_spawn(s, w);
    if (hint == WEFT_HINT_NEXT) {
        WEFT_TSAN_RELEASE(t);
        weft__node *old = atomic_exchange_explicit(&w->lifo, &t->node,
                                                   memory_order_acq_rel);  /* acq_rel: publishes t, takes old; pairs with the exchange in weft__take_lifo/steal */
        if (!old)
            goto notify;
        WEFT_TSAN_ACQUIRE(old);
        t = (weft__task *)(void *)old;   /* the evicted task goes to the deque */
    }
    if (WEFT_UNLIKELY(!weft__deque_push(&w->deque, &t->node)))
        offload_and_push(s, w, t);
notify:
    if (WEFT_UNLIKELY(w->bound))
        return;   /* a bound thread's own queues: no other thread may take from them */
    weft__notify_work(s);
}

int weft__submit_external(weft_sched *s, weft__task *t, weft_hint hint)
{
    if (!weft__outside_enter(s))   /* the outside rule, as weft_spawn's (extspawn.h) */
        return WEFT_ESHUTDOWN;
    weft__submit_outside(s, NULL, t, hint);
    weft__outside_leave(s);
    return WEFT_OK;
}

/* ---- a bound thread's spill array ("Spawns of a bound thread") ------------- */

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
    unsigned n = pop_older_half(w, batch);
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
 * see "Spawns of a bound thread"), then t goes on the emptied deque;
 * else, or if the loop left it full, spill_and_push. */
static __attribute__((noinline)) void burst_full(weft_sched *s, weft__worker *w, weft__task *t)
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

/* H1-H4 of "Spawns of a bound thread" (above): t, filled in, from the
 * host fiber of a bound thread of a scheduler with no workers. */
static int spawn_host(weft_sched *s, weft__worker *w, weft__task *t)
{
    t->spawner = NULL;   /* never run inline on the host's stack (see above) */
    weft__count_spawn(s, w);                          /* H1 */
    if (WEFT_UNLIKELY(!weft__deque_push(&w->deque, &t->node)))
        burst_full(s, w, t);                          /* H2: run the deque, or spill its older half */
    weft__fence_submit();                             /* H3: StoreLoad; pairs with B2's weft__fence_park */
    if (WEFT_UNLIKELY(atomic_load_explicit(&s->nbound_seen, memory_order_relaxed) != 1))   /* H4: relaxed, after H3 */
        weft__bound_hand_back(w);
    return WEFT_OK;
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
static int spawn_beside(weft_sched *s, weft__worker *w, weft__task *t)
{
    t->spawner = NULL;   /* never run inline on the host's stack (as spawn_host's) */
    if (WEFT_LIKELY(weft__submit_bound_try(s, w, t)))   /* S1 */
        return WEFT_OK;
    if (weft__host_run(w, t))                           /* S2 */
        return WEFT_OK;
    weft__submit_outside(s, w, t, WEFT_HINT_NONE);      /* S3: the port's locked push */
    return WEFT_OK;
}

/* Every spawn but the common case (spawn_fast, below): hints, bound
 * threads, outside threads, bad arguments, an empty pool. */
static __attribute__((noinline))
int spawn_general(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    if (WEFT_UNLIKELY(!s || !fn || (unsigned)hint > WEFT_HINT_YIELD))
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    if (w && w->s != s)
        w = NULL;   /* a worker of another scheduler spawns from outside */
    if (WEFT_LIKELY(w != NULL)) {
        /* From one of s's threads: allowed during shutdown too, so that
         * tasks still running can finish their fork-join. */
        weft__task *t = weft__task_alloc(s, w);
        if (WEFT_UNLIKELY(!t))
            return WEFT_ENOMEM;
        t->fn = fn;
        t->arg = arg;
        if (WEFT_UNLIKELY(w->bound) && w->cur == &w->host && hint == WEFT_HINT_NONE && !s->cfg.shuffle) {
            if (s->nworkers == 0)
                return spawn_host(s, w, t);   /* on its own deque ("Spawns of a bound thread") */
            return spawn_beside(s, w, t);     /* its port, or run now ("... beside workers") */
        }
        t->spawner = w->cur;
        weft__submit(s, w, t, hint);   /* beside workers, a bound thread's: through its port (extspawn.c) */
        return WEFT_OK;
    }
    /* From outside: through the thread's port of s (extspawn.c). */
    return weft__spawn_outside(s, fn, arg, hint);
}

/* The common case's cold ends, as tail calls: spawn_fast then calls
 * nothing that returns to it, so weft_spawn and weft_spawn_hint need no
 * frame and no saved registers. */
static __attribute__((noinline)) int spawn_offload(weft_sched *s, weft__worker *w, weft__task *t)
{
    offload_and_push(s, w, t);
    weft__notify_work(s);
    return WEFT_OK;
}

static __attribute__((noinline)) int spawn_notify(weft_sched *s)
{
    weft__notify_slow(s);
    return WEFT_OK;
}

/* The common case, inline in both entry points: a task of s's worker
 * threads (not a bound one) spawning with no hint and a record in its
 * pool. w->s is never NULL, so w->s == s also rejects s == NULL. In
 * weft_spawn the hint test folds away. */
static inline __attribute__((always_inline))
int spawn_fast(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    weft__worker *w = weft__tls_worker;
    if (WEFT_UNLIKELY(!w || w->s != s || !fn || hint != WEFT_HINT_NONE || w->bound ||
                      w->pool.n == 0))
        return spawn_general(s, fn, arg, hint);
    weft__task *t = w->pool.slot[--w->pool.n];
    t->fn = fn;
    t->arg = arg;
    t->spawner = w->cur;
    weft__count_spawn(s, w);
    if (WEFT_UNLIKELY(!weft__deque_push(&w->deque, &t->node)))
        return spawn_offload(s, w, t);
    if (WEFT_UNLIKELY(weft__notify_needed(s)))
        return spawn_notify(s);   /* weft__notify_work, its slow half a tail call */
    return WEFT_OK;
}

int weft_spawn_hint(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    return spawn_fast(s, fn, arg, hint);
}

int weft_spawn(weft_sched *s, weft_fn fn, void *arg)
{
    return spawn_fast(s, fn, arg, WEFT_HINT_NONE);
}

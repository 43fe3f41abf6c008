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
 * Spawns of a bound thread from its own code (with no workers, or beside
 * them): spawn_bound.c.
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

/* w's deque is full: move its oldest half to the global ring, then push t.
 * Callable from: w's owner. */
static __attribute__((noinline)) void offload_and_push(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__node *batch[512];
    unsigned n = weft__pop_older_half(w, batch);
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

/* weft__submit, and with wake false weft__submit_quiet: the same
 * queues, no parked worker woken for a task queued on w's own. */
static inline void submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint, bool wake)
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
    if (WEFT_UNLIKELY(w->bound) || !wake)
        return;   /* a bound thread's own queues: no other thread may take from them */
    weft__notify_work(s);
}

void weft__submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint)
{
    submit(s, w, t, hint, true);
}

void weft__submit_quiet(weft_sched *s, weft__worker *w, weft__task *t)
{
    submit(s, w, t, WEFT_HINT_NEXT, false);
}

int weft__submit_external(weft_sched *s, weft__task *t, weft_hint hint)
{
    if (!weft__outside_enter(s))   /* the outside rule, as weft_spawn's (extspawn.h) */
        return WEFT_ESHUTDOWN;
    weft__submit_outside(s, NULL, t, hint);
    weft__outside_leave(s);
    return WEFT_OK;
}

/* H1-H4 of "Spawns of a bound thread with no workers" (spawn_bound.c):
 * t, filled in, from the host fiber of a bound thread of a scheduler
 * with no workers. Here, inline in spawn_general: the common case of a
 * burst is a push and a fence. */
static inline int spawn_host(weft_sched *s, weft__worker *w, weft__task *t)
{
    t->spawner = NULL;   /* never run inline on the host's stack (spawn_bound.c) */
    weft__count_spawn(s, w);                          /* H1 */
    if (WEFT_UNLIKELY(!weft__deque_push(&w->deque, &t->node)))
        weft__burst_full(s, w, t);                    /* H2: run the deque, or spill its older half */
    weft__fence_submit();                             /* H3: StoreLoad; pairs with B2's weft__fence_park */
    if (WEFT_UNLIKELY(atomic_load_explicit(&s->nbound_seen, memory_order_relaxed) != 1))   /* H4: relaxed, after H3 */
        weft__bound_hand_back(w);
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
                return spawn_host(s, w, t);   /* on its own deque (spawn_bound.c) */
            return weft__spawn_beside(s, w, t);   /* its port, or run now (spawn_bound.c) */
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

/* This file is private to weft: task records, spawn, and idle accounting.
 *
 * Synchronization
 *   pool        a worker's free records: owner only.
 *   spare       records shared between pools and with threads that have
 *               no pool (external spawns): under spare_lock.
 *   spare_slabs slabs made for the spare list, and those of pools retired
 *               by unbind (their records live on elsewhere): under
 *               spare_lock; freed by destroy.
 *   spawned, completed (per worker)
 *               written by their worker only (relaxed load + release
 *               store: no locked instruction on the spawn path); read by
 *               anyone in weft__sched_is_idle.
 *   ext_spawned spawns from threads with no worker: atomic RMW.
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

#include "core.h"

WEFT_TLS weft__worker *weft__tls_worker;

/* ---- records ------------------------------------------------------------- */

/* A slab: a header cache line, then WEFT__SLAB_TASKS records. */
typedef struct slab {
    struct slab *next;
    char pad_[WEFT_CACHELINE - sizeof(struct slab *)];
    weft__task tasks[WEFT__SLAB_TASKS];
} slab;

static weft__task *slab_new(weft_sched *s, void **slabs)
{
    slab *sl = weft__alloc_with(&s->cfg.allocator, sizeof(slab));
    if (!sl)
        return NULL;
    sl->next = *slabs;
    *slabs = sl;
    weft__task *head = NULL;
    for (int i = WEFT__SLAB_TASKS - 1; i >= 0; i--) {
        weft__task *t = &sl->tasks[i];
        t->flags = WEFT__TASK_POOLED;
        t->node.next = (weft__node *)(void *)head;   /* node is the first member */
        head = t;
    }
    return head;
}

static void slabs_free(weft_sched *s, void *slabs)
{
    for (slab *sl = slabs, *next; sl; sl = next) {
        next = sl->next;
        weft__free_with(&s->cfg.allocator, sl, sizeof(slab));
    }
}

#define TASK_NEXT(t) ((weft__task *)(void *)(t)->node.next)

/* Moves up to n records from the spare list to p. Caller: p's owner. */
static void refill(weft_sched *s, weft__task_pool *p, unsigned n)
{
    pthread_mutex_lock(&s->spare_lock);
    while (n-- && s->spare) {
        weft__task *t = s->spare;
        s->spare = TASK_NEXT(t);
        atomic_store_explicit(&s->nspare, atomic_load_explicit(&s->nspare, memory_order_relaxed) - 1, memory_order_relaxed);   /* under spare_lock */
        t->node.next = (weft__node *)(void *)p->free;
        p->free = t;
        p->count++;
    }
    pthread_mutex_unlock(&s->spare_lock);
}

/* The pool is empty (or there is none): refill from the spares or a new
 * slab. */
weft__task *weft__task_alloc_slow(weft_sched *s, weft__worker *w)
{
    if (w != NULL) {
        weft__task_pool *p = &w->pool;
        if (!p->free) {
            if (atomic_load_explicit(&s->nspare, memory_order_relaxed))   /* a peek: only decides whether to lock */
                refill(s, p, WEFT__SLAB_TASKS);
            if (!p->free) {
                p->free = slab_new(s, &p->slabs);
                if (!p->free)
                    return NULL;
                p->count = WEFT__SLAB_TASKS;
            }
        }
        weft__task *t = p->free;
        p->free = TASK_NEXT(t);
        p->count--;
        return t;
    }
    /* No pool on this thread: take from the spares. */
    pthread_mutex_lock(&s->spare_lock);
    if (!s->spare) {
        s->spare = slab_new(s, &s->spare_slabs);
        if (s->spare)
            atomic_store_explicit(&s->nspare, WEFT__SLAB_TASKS, memory_order_relaxed);   /* under spare_lock */
    }
    weft__task *t = s->spare;
    if (t) {
        s->spare = TASK_NEXT(t);
        atomic_store_explicit(&s->nspare, atomic_load_explicit(&s->nspare, memory_order_relaxed) - 1, memory_order_relaxed);   /* under spare_lock */
    }
    pthread_mutex_unlock(&s->spare_lock);
    return t;
}

/* The pool is full (or there is none): give records back to the spares. */
void weft__task_free_slow(weft_sched *s, weft__worker *w, weft__task *t)
{
    if (w != NULL) {
        weft__task_pool *p = &w->pool;
        t->node.next = (weft__node *)(void *)p->free;
        p->free = t;
        /* Records drift to the workers that run them; give a slab's worth
         * back once a pool holds more than two, so memory stays flat. */
        if (++p->count > 2 * WEFT__SLAB_TASKS) {
            pthread_mutex_lock(&s->spare_lock);
            for (int i = 0; i < WEFT__SLAB_TASKS; i++) {
                weft__task *x = p->free;
                p->free = TASK_NEXT(x);
                x->node.next = (weft__node *)(void *)s->spare;
                s->spare = x;
            }
            atomic_store_explicit(&s->nspare, atomic_load_explicit(&s->nspare, memory_order_relaxed) + WEFT__SLAB_TASKS, memory_order_relaxed);   /* under spare_lock */
            p->count -= WEFT__SLAB_TASKS;
            pthread_mutex_unlock(&s->spare_lock);
        }
        return;
    }
    pthread_mutex_lock(&s->spare_lock);
    t->node.next = (weft__node *)(void *)s->spare;
    s->spare = t;
    atomic_store_explicit(&s->nspare, atomic_load_explicit(&s->nspare, memory_order_relaxed) + 1, memory_order_relaxed);   /* under spare_lock */
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
    if (p->free) {
        weft__task *last = p->free;
        while (TASK_NEXT(last))
            last = TASK_NEXT(last);
        last->node.next = (weft__node *)(void *)s->spare;
        s->spare = p->free;
        atomic_store_explicit(&s->nspare, atomic_load_explicit(&s->nspare, memory_order_relaxed) + p->count, memory_order_relaxed);   /* under spare_lock */
    }
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
    slabs_free(s, s->spare_slabs);
    s->spare_slabs = NULL;
    s->spare = NULL;
    atomic_store_explicit(&s->nspare, 0, memory_order_relaxed);
}

/* ---- idle accounting ---------------------------------------------------- */

static void count_spawn(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w != NULL))
        __atomic_store_n(&w->spawned, w->spawned + 1, __ATOMIC_RELEASE);  /* release: pairs with acquire in is_idle */
    else
        atomic_fetch_add_explicit(&s->ext_spawned, 1, memory_order_release);  /* pairs with acquire in is_idle */
}

bool weft__sched_is_idle(weft_sched *s)
{
    uint64_t done = 0, made = 0;
    for (unsigned i = 0; i < s->nworkers; i++)
        done += __atomic_load_n(&s->workers[i].completed, __ATOMIC_ACQUIRE);   /* pairs with release in run */
    pthread_mutex_lock(&s->bound_lock);
    for (unsigned i = 0; i < s->nbound; i++)
        done += __atomic_load_n(&s->bound[i]->completed, __ATOMIC_ACQUIRE);
    done += s->retired_completed;
    atomic_thread_fence(memory_order_seq_cst);   /* every completed read before any spawned read */
    for (unsigned i = 0; i < s->nworkers; i++)
        made += __atomic_load_n(&s->workers[i].spawned, __ATOMIC_ACQUIRE);     /* pairs with release in count_spawn */
    for (unsigned i = 0; i < s->nbound; i++)
        made += __atomic_load_n(&s->bound[i]->spawned, __ATOMIC_ACQUIRE);
    made += s->retired_spawned;
    pthread_mutex_unlock(&s->bound_lock);
    made += atomic_load_explicit(&s->ext_spawned, memory_order_acquire);
    return made == done;
}

/* ---- submit and spawn ------------------------------------------------------- */

/* w's deque is full: move its oldest half to the global ring, then push t.
 * Callable from: w's owner. */
static __attribute__((noinline)) void offload_and_push(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__node *batch[512];
    unsigned half = w->deque_capacity / 2;
    if (half > 512)
        half = 512;
    unsigned n = weft__deque_pop_oldest(&w->deque, batch, half);
    weft__inject_push_batch(&s->global, batch, n);
    WEFT__STAT(w, offloads, 1);
    if (!weft__deque_push(&w->deque, &t->node))
        weft__inject_push(&s->global, &t->node);
}

void weft__submit(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint)
{
    count_spawn(s, w);
    if (w && !w->bound && hint != WEFT_HINT_YIELD) {
        if (hint == WEFT_HINT_NEXT) {
            WEFT_TSAN_RELEASE(t);
            weft__node *old = atomic_exchange_explicit(&w->lifo, &t->node,
                                                       memory_order_acq_rel);  /* acq_rel: publishes t, takes old; pairs with the exchange in take_lifo/steal */
            if (!old)
                goto notify;
            WEFT_TSAN_ACQUIRE(old);
            t = (weft__task *)(void *)old;   /* the evicted task goes to the deque */
        }
        if (WEFT_UNLIKELY(!weft__deque_push(&w->deque, &t->node)))
            offload_and_push(s, w, t);
    } else {
        /* Outside a worker, from a bound thread, or YIELD: the global ring. */
        weft__inject_push(&s->global, &t->node);
    }
notify:
    weft__notify_work(s);
}

int weft__submit_external(weft_sched *s, weft__task *t, weft_hint hint)
{
    /* Announce, then check shutdown: the same seq_cst pair with destroy's
     * store and load as weft_spawn_hint below. */
    atomic_fetch_add(&s->ext_inflight, 1);
    int rc = WEFT_ESHUTDOWN;
    if (!atomic_load(&s->shutdown)) {
        weft__submit(s, NULL, t, hint);
        rc = WEFT_OK;
    }
    atomic_fetch_sub(&s->ext_inflight, 1);
    return rc;
}

int weft_spawn_hint(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
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
        t->spawner = w->cur;
        if (WEFT_LIKELY(hint == WEFT_HINT_NONE && !w->bound)) {
            /* The common case, inline: count, push, maybe wake. */
            count_spawn(s, w);
            if (WEFT_LIKELY(weft__deque_push(&w->deque, &t->node))) {
                weft__notify_work(s);
                return WEFT_OK;
            }
            offload_and_push(s, w, t);
            weft__notify_work(s);
            return WEFT_OK;
        }
        weft__submit(s, w, t, hint);
        return WEFT_OK;
    }
    /* From outside: announce, then check shutdown (seq_cst pair with
     * destroy's store and load). */
    atomic_fetch_add(&s->ext_inflight, 1);
    int rc = WEFT_OK;
    if (atomic_load(&s->shutdown)) {
        rc = WEFT_ESHUTDOWN;
    } else {
        weft__task *t = weft__task_alloc(s, NULL);
        if (t) {
            t->fn = fn;
            t->arg = arg;
            t->spawner = NULL;
            weft__submit(s, NULL, t, hint);
        } else {
            rc = WEFT_ENOMEM;
        }
    }
    atomic_fetch_sub(&s->ext_inflight, 1);
    return rc;
}

int weft_spawn(weft_sched *s, weft_fn fn, void *arg)
{
    return weft_spawn_hint(s, fn, arg, WEFT_HINT_NONE);
}

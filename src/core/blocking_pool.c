/* This file is private to weft: the blocking pool: threads that run the
 * calls weft cannot see into (weft_call_blocking), so that a task's
 * worker goes on with other work meanwhile.
 *
 * Synchronization
 *   s->bpool   made once under s->io_lock, published with release, read
 *              with acquire; freed by destroy (weft__bpool_fini) after
 *              the workers have left.
 *   pool lock  (b->lock, a pthread mutex: pool threads sleep on b->cond
 *              under it) guards the queue, nthreads, idle, outside,
 *              queued, exited, closing and the slots (each thread's
 *              state: running, exited but not joined, free).
 *   a call     (struct call, in the caller's frame): fn and arg written
 *              before it is queued (under the pool lock); done and its
 *              waiter under the call's own spin lock. The pool thread
 *              sets done and claims the waiter under that lock, then
 *              releases it (weft__wake): the waiter's protocol
 *              (src/fiber/wait.h) makes that its last touch of the call,
 *              and a caller that finds done set returns at once.
 *
 * A call:
 *   Caller                                 Pool thread
 *   1. outside s's threads: ext_inflight    1. lock; take the oldest call
 *      + 1; shutdown? ESHUTDOWN; outside       (sleep on cond if none);
 *      + 1 (pool lock); ext_inflight - 1       idle - 1; unlock
 *   2. a task: have_fiber, else ENOMEM      2. fn(arg)
 *   3. lock; more queued calls than idle    3. call lock; done = true;
 *      threads, and fewer threads than        claim the waiter; unlock;
 *      blocking_threads: make one
 *      (none made and none exists:             wake it (weft__ready of its
 *      ENOMEM); queue; signal; unlock          fiber, or its futex)
 *   4. call lock; done? unlock, return;     4. lock; idle + 1; unlock
 *      else queue the waiter, weft__wait
 *   5. outside: lock; outside - 1; signal
 *      if closing; unlock (last touch)
 * A pool thread idle for keep_ns (10 s) leaves: under the
 * lock it marks its slot exited, its last touch of the pool; the next
 * thread made, or destroy, joins it.
 * destroy (weft__bpool_fini), once the workers have left (no task can
 * call any more): lock; closing = true; wait while outside > 0;
 * broadcast; wait while nthreads > 0 (they drain the queue first, the
 * last one signals); unlock; join every exited thread; free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#include "blocking_pool.h"
#include "worker.h"

typedef struct call {
    struct call *next;           /* the queue, under the pool lock */
    weft_fn fn;
    void *arg;
    weft__spin lock;
    bool done;                   /* under lock */
    weft__waitq q;               /* the caller, while it waits; under lock */
} call;

/* A slot of the threads array. */
enum { SLOT_FREE, SLOT_RUNNING, SLOT_EXITED };

typedef struct slot {
    pthread_t thread;
    unsigned state;              /* under the pool lock */
    struct weft__bpool *b;
} slot;

struct weft__bpool {
    weft_sched *s;
    pthread_mutex_t lock;
    pthread_cond_t cond;         /* pool threads wait for calls */
    pthread_cond_t drained;      /* destroy waits for outside callers and threads */
    call *head, *tail;           /* queued calls, oldest first */
    unsigned queued;             /* their number */
    unsigned nthreads, idle, outside, max, exited;
    bool closing;
    slot *slots;                 /* max of them */
};

/* How long a pool thread waits for a call before it leaves: 10 s, as
 * Tokio's blocking pool. A test seam in the tests' library (tests shorten
 * it), a constant in libweft. */
#define KEEP_NS 10000000000ull
#ifdef WEFT_TEST_SEAMS
uint64_t weft__bpool_keep_ns = KEEP_NS;
#define keep_ns weft__bpool_keep_ns
#else
#define keep_ns ((uint64_t)KEEP_NS)
#endif

typedef struct weft__bpool bpool;

static bpool *bpool_get(weft_sched *s)
{
    bpool *b = atomic_load_explicit(&s->bpool, memory_order_acquire);   /* acquire: pairs with the release below */
    if (WEFT_LIKELY(b != NULL))
        return b;
    pthread_mutex_lock(&s->io_lock);
    b = atomic_load_explicit(&s->bpool, memory_order_relaxed);   /* under io_lock */
    if (!b) {
        b = weft__calloc_with(&s->cfg.allocator, sizeof *b);
        slot *t = b ? weft__calloc_with(&s->cfg.allocator, sizeof *t * s->cfg.blocking_threads) : NULL;
        if (b && t) {
            b->s = s;
            b->slots = t;
            b->max = s->cfg.blocking_threads;
            pthread_mutex_init(&b->lock, NULL);
            pthread_cond_init(&b->cond, NULL);
            pthread_cond_init(&b->drained, NULL);
            atomic_store_explicit(&s->bpool, b, memory_order_release);   /* release: publishes the set-up */
        } else {
            if (b)
                weft__free_with(&s->cfg.allocator, b, sizeof *b);
            b = NULL;
        }
    }
    pthread_mutex_unlock(&s->io_lock);
    return b;
}

/* Absolute CLOCK_REALTIME time keep_ns from now, for the condition
 * variable's timed wait. */
static struct timespec keep_until(void)
{
    uint64_t ns = weft__os_wall_ns() + keep_ns;
    return (struct timespec){ (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
}

static void *pool_thread(void *arg)
{
    slot *me = arg;
    bpool *b = me->b;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        struct timespec until = keep_until();
        bool expired = false;
        while (!b->head && !b->closing && !expired)
            expired = pthread_cond_timedwait(&b->cond, &b->lock, &until) == ETIMEDOUT;
        if (!b->head) {
            /* Closing, or idle for keep_ns: leave. The next call that
             * makes a thread, or destroy, joins us. */
            b->nthreads--;
            b->idle--;
            me->state = SLOT_EXITED;
            b->exited++;
            if (b->closing && b->nthreads == 0)
                pthread_cond_broadcast(&b->drained);   /* destroy waits for the last one */
            break;
        }
        call *c = b->head;
        b->head = c->next;
        if (!b->head)
            b->tail = NULL;
        b->queued--;
        b->idle--;
        pthread_mutex_unlock(&b->lock);
        c->fn(c->arg);
        weft__spin_lock(&c->lock);
        c->done = true;
        weft__waiter *wt = weft__waitq_claim(&c->q);
        weft__spin_unlock(&c->lock);
        weft__wake(wt);   /* the last touch of the call: its frame may go now */
        pthread_mutex_lock(&b->lock);
        b->idle++;
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* Joins the threads that left (idle too long). Caller holds the pool
 * lock; the threads have done their last touch of the pool under it, so
 * each join waits at most for a thread's exit. */
static void reap_exited(bpool *b)
{
    for (unsigned i = 0; b->exited && i < b->max; i++) {
        if (b->slots[i].state == SLOT_EXITED) {
            weft__os_thread_join(b->slots[i].thread);
            b->slots[i].state = SLOT_FREE;
            b->exited--;
        }
    }
}

/* Makes a pool thread in a free slot; false if none could be made. Caller
 * holds the pool lock. */
static bool grow(bpool *b)
{
    reap_exited(b);
    for (unsigned i = 0; i < b->max; i++) {
        if (b->slots[i].state != SLOT_FREE)
            continue;
        b->slots[i].b = b;
        if (weft__os_thread_start(&b->slots[i].thread, pool_thread, &b->slots[i], NULL) != 0)
            return false;
        b->slots[i].state = SLOT_RUNNING;
        b->nthreads++;
        b->idle++;
        return true;
    }
    return false;
}

/* Queues c, making a thread if the queued calls outnumber the idle
 * threads and the pool may grow. false: no thread exists and none could
 * be made (nothing queued). */
static bool submit(bpool *b, call *c)
{
    pthread_mutex_lock(&b->lock);
    if (b->queued + 1 > b->idle && b->nthreads < b->max && !grow(b) && b->nthreads == 0) {
        pthread_mutex_unlock(&b->lock);
        return false;
    }
    c->next = NULL;
    if (b->tail)
        b->tail->next = c;
    else
        b->head = c;
    b->tail = c;
    b->queued++;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return true;
}

/* Waits for c to be done: a task's fiber is suspended (or, with no fiber
 * to go on with after all, the thread sleeps between looks); another
 * thread sleeps on the waiter's futex. */
static void wait_done(call *c)
{
    for (;;) {
        weft__spin_lock(&c->lock);
        if (c->done) {
            weft__spin_unlock(&c->lock);
            return;
        }
        weft__waiter w;
        weft__waiter_init(&w, (const void *)(uintptr_t)c->fn, "blocking call", 0);
        weft__waitq_push(&c->q, &w);
        if (weft__wait(&c->q, &w, weft__spin_lock_fn, weft__spin_unlock_fn, &c->lock) == WEFT_OK)
            return;
        /* ENOMEM: no fiber to go on with; the thread waits a little. */
        weft__os_sleep_ns(WEFT__RETRY_NS);
    }
}

int weft_call_blocking(weft_sched *s, weft_fn fn, void *arg)
{
    if (!s || !fn)
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    bool own = w && w->s == s;   /* a task or bound thread of s: destroy waits for it */
    if (!own) {
        /* As an outside spawn (task.c): announce, then check shutdown;
         * destroy waits out the announced ones. */
        atomic_fetch_add(&s->ext_inflight, 1);   /* seq_cst: Dekker with destroy's shutdown store */
        if (atomic_load(&s->shutdown)) {
            atomic_fetch_sub(&s->ext_inflight, 1);
            return WEFT_ESHUTDOWN;
        }
    }
    int rc = WEFT_OK;
    bpool *b = bpool_get(s);
    if (b && !own) {
        pthread_mutex_lock(&b->lock);
        b->outside++;   /* destroy's weft__bpool_fini waits for it */
        pthread_mutex_unlock(&b->lock);
    }
    if (!own)
        atomic_fetch_sub(&s->ext_inflight, 1);   /* seq_cst: counted in outside now */
    if (!b)
        return WEFT_ENOMEM;
    if (w && weft__tls_host && !weft__have_fiber(w))
        rc = weft__no_fiber(w);
    call c = { .fn = fn, .arg = arg, .done = false };
    weft__spin_init(&c.lock);
    if (rc == WEFT_OK && !submit(b, &c))
        rc = WEFT_ENOMEM;
    if (rc == WEFT_OK)
        wait_done(&c);
    if (!own) {
        pthread_mutex_lock(&b->lock);
        if (--b->outside == 0 && b->closing)
            pthread_cond_broadcast(&b->drained);
        pthread_mutex_unlock(&b->lock);   /* our last touch of s */
    }
    return rc;
}

void weft__bpool_fini(weft_sched *s)
{
    bpool *b = atomic_load_explicit(&s->bpool, memory_order_acquire);   /* acquire: pairs with the release in bpool_get */
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->closing = true;
    while (b->outside)
        pthread_cond_wait(&b->drained, &b->lock);
    pthread_cond_broadcast(&b->cond);
    while (b->nthreads)   /* each leaves once the queue is empty */
        pthread_cond_wait(&b->drained, &b->lock);
    pthread_mutex_unlock(&b->lock);
    /* Every slot is free or exited now (written under the lock, which we
     * took after): join the exited ones. */
    for (unsigned i = 0; i < b->max; i++)
        if (b->slots[i].state == SLOT_EXITED)
            weft__os_thread_join(b->slots[i].thread);
    pthread_cond_destroy(&b->cond);
    pthread_cond_destroy(&b->drained);
    pthread_mutex_destroy(&b->lock);
    weft__free_with(&s->cfg.allocator, b->slots, sizeof *b->slots * b->max);
    weft__free_with(&s->cfg.allocator, b, sizeof *b);
    atomic_store_explicit(&s->bpool, NULL, memory_order_relaxed);   /* destroy: nobody else runs */
}

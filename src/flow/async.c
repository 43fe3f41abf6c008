/* This file is private to weft: dependent async tasks (weft_async_*).
 *
 * A handle is one pool cell (pool.h) holding the task's own queue record,
 * an event its waiters sleep on, and the links by which it waits for its
 * predecessors. Each predecessor keeps a list of links to the tasks that
 * follow it ("successors"), closed when it finishes.
 *
 * Counting predecessors: the classic race is a predecessor finishing
 * while a successor is attached to it, which could count it as pending
 * with nobody left to count it done (the successor never runs) or count
 * it twice. The successor list settles it with one word, succ:
 *   1. spawn sets pending = n + 1 (the + 1 keeps the task from starting
 *      while links are still being attached);
 *   2. for each predecessor P, spawn pushes its link onto P->succ by CAS,
 *      unless P->succ reads CLOSED: then P has finished and the link is
 *      not pushed; spawn counts it in `closed`;
 *   3. spawn subtracts 1 + closed from pending; the subtraction that
 *      reaches zero queues the task;
 *   4. a finishing task exchanges its succ for CLOSED (so no link is
 *      pushed after), then walks the links it took, subtracting one from
 *      each successor's pending; the subtraction that reaches zero queues
 *      that successor.
 * Each link is either pushed before the exchange (and counted down in 4)
 * or refused after it (and counted down in 3), never both: the CAS and
 * the exchange are on one word, so one of them comes first.
 *
 * Continuations: a finishing task runs one successor it made ready
 * itself, on the same fiber, in a loop (async_entry), and queues the
 * others; so a chain runs on one fiber with no queue in between, and a
 * wavefront's second successor goes to whichever worker is idle.
 *
 * Lifetime: refs counts the owners: the task itself until it has
 * finished, and the caller's reference if it asked for one (plus
 * weft_async_retain's). A successor is kept by its own task reference
 * until it has run, so the links in it outlive every predecessor's walk
 * (a predecessor reads a link's next before its subtraction, after which
 * the successor may run, finish and go back to the pool). The last
 * release ends the event and returns the cell.
 *
 * Synchronization
 *   succ      links pushed with CAS (release: the link's fields), taken
 *             with one exchange (acq_rel: the finishing task's writes go
 *             out with it, and the links' fields come in).
 *   pending   fetch_sub (acq_rel): the subtraction reaching zero has every
 *             predecessor's writes and publishes them with the queueing.
 *   finished  stored (release) after result, before the event is set;
 *             loaded (acquire) by weft_async_done and the waits.
 *   refs      fetch_add relaxed (the adder already holds a reference);
 *             fetch_sub acq_rel, the last one sees every owner's writes
 *             before the cell is reused.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "core_api.h"
#include "pool.h"

/* Links kept in the handle; more predecessors take an array from the
 * process-wide allocator. */
#define WEFT__ASYNC_LINKS 4
#define WEFT__ASYNC_CLOSED ((uintptr_t)1)

typedef struct weft__alink weft__alink;
struct weft__alink {
    weft__alink *next;
    weft_async *to;
};

struct weft_async {
    weft__task rec;              /* queued when every predecessor is done */
    weft_event done;             /* set when fn has returned */
    _Atomic(uintptr_t) succ;     /* weft__alink list, or CLOSED */
    atomic_uint refs;
    atomic_int pending;          /* predecessors not finished, + 1 during spawn */
    atomic_bool finished;
    weft_sched *s;
    weft_async_fn fn;
    void *arg;
    void *result;
    weft__alink *extra;          /* links past WEFT__ASYNC_LINKS */
    size_t nextra;
    weft__alink links[WEFT__ASYNC_LINKS];
};

#ifdef WEFT_TEST_SEAMS
void (*weft__flow_attach_seam)(size_t i);
#endif

static weft__flow_pool async_pool = WEFT__FLOW_POOL_INIT(sizeof(struct weft_async));

__attribute__((constructor)) static void async_pool_register(void)
{
    weft__flow_pool_register(&async_pool);   /* fork and weft_set_allocator find it (pool.c) */
}

static void async_free(weft_async *h)
{
    weft_event_destroy(&h->done);
    if (h->extra)
        weft__free(h->extra, h->nextra * sizeof(weft__alink));
    weft__flow_put(&async_pool, h);
}

void weft_async_release(weft_async *h)
{
    if (h && atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1)   /* acq_rel: see the top */
        async_free(h);
}

void weft_async_retain(weft_async *h)
{
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);   /* relaxed: the caller holds one */
}

/* Queues h, ready: from one of h->s's threads with w its worker, else
 * from outside (refused once destroy has started). */
static int async_queue(weft_async *h, weft__worker *w)
{
    h->rec.spawner = NULL;   /* not a child of whoever made it ready: no inline run in their waits */
    h->rec.flags = 0;        /* not pooled: core reads it out and leaves it */
    if (w) {
        weft__submit(h->s, w, &h->rec, WEFT_HINT_NONE);
        return WEFT_OK;
    }
    return weft__submit_external(h->s, &h->rec, WEFT_HINT_NONE);
}

/* May a successor made ready on w run inline, as a continuation of the
 * task that ended? Not on a bound thread that runs only its pinned tasks,
 * and not while tracing or an observer is on (they see each task as core
 * runs it). */
static bool may_continue(weft__worker *w)
{
    return !weft__only_pinned(w) && !(weft__hooks(w) & (WEFT__HOOK_TRACE | WEFT__HOOK_OBSERVE));
}

static void async_entry(void *arg)
{
    weft_async *h = arg;
    weft__worker *w = weft__tls_worker;   /* a task of h->s: never NULL here */
    for (;;) {
        h->result = h->fn(h->arg);
        atomic_store_explicit(&h->finished, true, memory_order_release);   /* pairs with the acquire in done and the waits */
        /* Step 4 (see the top). */
        uintptr_t l = atomic_exchange_explicit(&h->succ, WEFT__ASYNC_CLOSED, memory_order_acq_rel);
        weft_event_signal(&h->done);
        /* The last successor made ready (the first attached: the one the
         * deque would hand back first) goes on here, on this fiber, once h
         * is released, so a chain costs no trip through a queue; the
         * others are queued, where idle workers take them. Keeping the
         * first ready one instead walked a wavefront down its columns
         * rather than along its rows, and ran 1.2-2x slower at 2 workers. */
        weft_async *next = NULL;
        bool inline_ok = may_continue(w);
        for (weft__alink *k = (weft__alink *)l; k;) {
            weft__alink *nk = k->next;   /* before the subtraction: after it the link may be gone */
            weft_async *to = k->to;
            if (atomic_fetch_sub_explicit(&to->pending, 1, memory_order_acq_rel) == 1) {   /* acq_rel: see the top */
                if (next)
                    (void)async_queue(next, w);   /* from a thread of s: cannot fail */
                next = to;
            }
            k = nk;
        }
        weft_async_release(h);   /* the task's own reference */
        if (!next)
            return;
        if (!inline_ok) {
            (void)async_queue(next, w);
            return;
        }
        /* next counts as spawned and run now, as a graph continuation
         * does: this task is still outstanding, so the scheduler cannot
         * look idle early. */
        weft__count_inline(w);
        if (WEFT_UNLIKELY(weft__worker_tracks(w)))
            weft__track_task(w, async_entry, next);   /* stall reports name the task running now */
        h = next;
    }
}

int weft_async_spawn(weft_sched *s, weft_async_fn fn, void *arg, weft_async *const *preds,
                     size_t n, weft_async **out)
{
    if (!s || !fn || (n && !preds) || n > (size_t)INT32_MAX - 1)
        return WEFT_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!preds[i] || preds[i]->s != s)
            return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    if (w && weft__worker_sched(w) != s)
        w = NULL;   /* a thread of another scheduler spawns from outside */
    if (!w && weft__sched_closing(s))
        return WEFT_ESHUTDOWN;
    weft_async *h = weft__flow_get(&async_pool);
    if (!h)
        return WEFT_ENOMEM;
    h->extra = NULL;
    h->nextra = 0;
    if (n > WEFT__ASYNC_LINKS) {
        h->nextra = n - WEFT__ASYNC_LINKS;
        h->extra = weft__alloc(h->nextra * sizeof(weft__alink));
        if (!h->extra) {
            weft__flow_put(&async_pool, h);
            return WEFT_ENOMEM;
        }
    }
    memset(&h->rec, 0, sizeof h->rec);
    h->rec.fn = async_entry;
    h->rec.arg = h;
    weft_event_init(&h->done, true, false);
    atomic_init(&h->succ, 0);
    atomic_init(&h->refs, out ? 2u : 1u);
    atomic_init(&h->pending, (int)n + 1);   /* step 1 */
    atomic_init(&h->finished, false);
    h->s = s;
    h->fn = fn;
    h->arg = arg;
    h->result = NULL;
    /* Step 2. */
    int closed = 0;
    for (size_t i = 0; i < n; i++) {
        weft__alink *k = i < WEFT__ASYNC_LINKS ? &h->links[i] : &h->extra[i - WEFT__ASYNC_LINKS];
        k->to = h;
        weft_async *p = preds[i];
        uintptr_t head = atomic_load_explicit(&p->succ, memory_order_acquire);   /* acquire: a CLOSED seen here carries p's writes */
        for (;;) {
            if (head == WEFT__ASYNC_CLOSED) {
                closed++;
                break;
            }
            k->next = (weft__alink *)head;
            if (atomic_compare_exchange_weak_explicit(&p->succ, &head, (uintptr_t)k,
                                                      memory_order_release, memory_order_acquire))
                break;   /* release: the link's fields before it is seen; acquire on failure: as the load */
        }
#ifdef WEFT_TEST_SEAMS
        if (weft__flow_attach_seam)
            weft__flow_attach_seam(i);
#endif
    }
    /* Step 3. */
    if (atomic_fetch_sub_explicit(&h->pending, 1 + closed, memory_order_acq_rel) == 1 + closed) {
        int rc = async_queue(h, w);
        if (rc != WEFT_OK) {
            /* Refused (destroy began since the check): no link was pushed
             * that is still waiting, since every one was counted down. */
            async_free(h);
            return rc;
        }
    }
    if (out)
        *out = h;
    return WEFT_OK;
}

bool weft_async_done(const weft_async *h)
{
    return atomic_load_explicit(&((weft_async *)h)->finished, memory_order_acquire);   /* pairs with async_entry's release */
}

void *weft_async_result(const weft_async *h)
{
    return weft_async_done(h) ? h->result : NULL;
}

int weft_async_wait(weft_async *h)
{
    if (weft_async_done(h))
        return WEFT_OK;
    if (weft__sched_unserved_here(h->s))
        return WEFT_ENOTBOUND;   /* nobody here would run it (core_api.h) */
    return weft_event_wait(&h->done);
}

int weft_async_wait_for(weft_async *h, uint64_t timeout_ns)
{
    if (weft_async_done(h))
        return WEFT_OK;
    if (weft__sched_unserved_here(h->s))
        return WEFT_ENOTBOUND;   /* nobody here would run it (core_api.h) */
    return weft_event_wait_for(&h->done, timeout_ns);
}

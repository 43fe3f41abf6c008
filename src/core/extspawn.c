/* This file is private to weft: spawns from outside the workers, through
 * a port per thread and scheduler.
 *
 * A thread that queues work to s without being one of its workers (a
 * plain thread; a bound thread, on its own code or running a task
 * beside workers) keeps, in thread-local storage, an entry for s: s, s's
 * id, and a port of s's global queue (global_ring.h). The port is a
 * single-producer queue that workers take from like the main one, so a
 * push is a slot store and a tail store; it also carries up to a
 * magazine of spare task records for a plain thread (a bound thread has
 * its pool), refilled a magazine at a time under spare_lock: the lock is
 * paid once per 64 spawns, not per spawn. A thread keeps entries for two
 * schedulers at once (one that spawns to two in turn pays no miss); a
 * third evicts one of them (in turn, not the least recently used).
 *
 * What goes through the port: every NORMAL-priority submit from such a
 * thread but the YIELD hint (which goes behind everything, on the main
 * queue): weft_spawn and weft_spawn_hint, weft_spawn_ex with a name,
 * graph runs and parallel loops started from outside
 * (weft__submit_external), and everything a bound thread queues through
 * weft__submit. HIGH and LOW work still takes the locked push to its
 * ring (pin.c), and pinned work the pinned thread's box.
 *
 * A bound thread keeps its port in its worker instead (w->port, claimed
 * at its first submit through a port, given back by unbind): no entry
 * to look up per spawn, and nothing to guard, since s outlives every
 * thread bound to it.
 *
 * Why an id and not the pointer: s may be destroyed and another
 * scheduler created at the same address. Ids come from a process-wide
 * counter and are never reused, so an entry whose id is not s->xid is
 * stale: its port (freed with the old scheduler) is never touched again.
 *
 * Synchronization
 *   xc[], xc_victim  thread-local (xc[] on the heap on Windows: see
 *                    there): only the owning thread.
 *   port             owned by the thread whose entry names it: its queue
 *                    as global_ring.c says (single producer), its record cache
 *                    (ncache, cache[]) read and written by the owner only.
 *                    Claimed and released under the queue's main lock,
 *                    which orders one owner's use before the next's.
 *   xid              s's id: 0 until the first entry for s is made, then
 *                    stored once under reg_lock (relaxed: the value is
 *                    all that is read, and a reader compares it with an
 *                    id it got from the same store, or from an older
 *                    scheduler, which never equals it).
 *   reg_head, xprev, xnext, reg_last_id
 *                    the schedulers that have an id (every one that a
 *                    thread's entry may name): under reg_lock. A
 *                    scheduler is listed from its first entry until
 *                    destroy, which unlists it (weft__xspawn_forget)
 *                    just before it frees s.
 *   ext_inflight, shutdown  the outside rule (sched.c;
 *                    weft__outside_enter/leave): a plain thread announces
 *                    itself (seq_cst RMW) before it reads shutdown and
 *                    leaves after its last touch of s, so destroy frees
 *                    nothing a spawn that saw shutdown unset still uses,
 *                    and waits for what it queued.
 *
 * Spawning.
 *   plain thread (weft__spawn_outside)
 *     1. weft__outside_enter: ext_inflight += 1, read shutdown (seq_cst
 *        both); set: WEFT_ESHUTDOWN, touching nothing more.
 *     2. The entry for s (made now if missing: id, port claim), a record
 *        from the port's cache (refilled under spare_lock when empty).
 *     3. Push through the port (counted in port->pushed first).
 *     4. The park protocol's check (notify_after_push): wake a worker if
 *        one must be.
 *     5. weft__outside_leave: ext_inflight -= 1 (seq_cst), our last touch
 *        of s.
 *   a record the caller filled in (weft__submit_outside): steps 2-4, in
 *   the caller's steps 1 and 5; a bound thread needs neither (destroy
 *   refuses while a thread other than its caller is bound). A bound
 *   thread's own spawn beside workers tries step 3 lock-free only
 *   (weft__submit_bound_try): with the port full it runs tasks itself
 *   (spawn_bound.c, "Spawns of a bound thread beside workers").
 *
 * Giving a port back. An entry is dropped when the thread needs it for
 * another scheduler, and at thread exit (a pthread key's destructor). Its
 * scheduler may be gone by then, so the thread looks before it touches:
 *   1. lock reg_lock; find the entry's scheduler in the list by pointer
 *      and id. Not found: it was destroyed (or is past
 *      weft__xspawn_forget, freeing everything): drop the entry, touching
 *      nothing. Found: s stays allocated while we hold reg_lock (destroy
 *      unlists it under reg_lock before freeing s).
 *   2. weft__outside_enter.
 *   3. Not shut down: destroy, if it starts now, waits in its
 *      ext_inflight loop for step 4 before freeing anything: release the
 *      port (main lock of s's queue; its cached records go with it, for
 *      the next owner). Shut down: release nothing (destroy frees the
 *      ports, records and all); touch nothing else of s.
 *   4. weft__outside_leave; unlock reg_lock.
 * The port's queued items stay where they are: workers take them as
 * ever, and the idle test counts them through port->pushed.
 * Lock order: reg_lock, then a queue's main lock (step 3; port claims).
 * A holder of reg_lock takes no other lock, and a holder of a queue lock
 * takes none at all, so a caller may hold any lock of its own (a graph's)
 * when an entry is made or dropped.
 *
 * fork(2): reg_lock is taken around fork (pthread_atfork, registered with
 * the thread-exit key), so that the child never inherits it held by a
 * thread it does not have; and the child forgets the forking thread's
 * entries without giving their ports back: that would take the queue
 * lock of a parent's scheduler, which a thread the child does not have
 * may hold. The parent's schedulers are of no use in the child (their
 * workers did not survive fork), so their ports, like those the other
 * threads held, just stay claimed there. A scheduler the child makes
 * works as in any process.
 *
 * Memory: one port per thread and scheduler in use at once, each with
 * at most 64 records; a released port keeps its records for the next
 * thread that claims one. A queue makes at most WEFT__INJECT_PORTS_MAX
 * ports (the workers look at each one): a thread that finds none free
 * spawns the way it did before ports (a record from `loose`, the main
 * queue, ext_spawned) and asks again every PORTLESS_RETRY spawns; so does
 * a thread whose port could not be allocated. The entries themselves are
 * thread-local (no allocation), so a thread that never spawns from
 * outside pays nothing.
 */
#include <stdatomic.h>
#include <string.h>

#include "extspawn.h"
#include "os.h"
#include "park.h"
#include "task.h"

/* ---- the list of schedulers with an id ---------------------------------- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_sched *reg_head;      /* under reg_lock */
static uint64_t reg_last_id;      /* under reg_lock */

/* s's id, given now if it has none. Callable from: a thread that s
 * cannot be freed under (announced in ext_inflight with shutdown unset,
 * or bound to s). */
static uint64_t sched_id(weft_sched *s)
{
    uint64_t id = atomic_load_explicit(&s->xid, memory_order_relaxed);   /* written once, under reg_lock */
    if (WEFT_LIKELY(id != 0))
        return id;
    pthread_mutex_lock(&reg_lock);
    id = atomic_load_explicit(&s->xid, memory_order_relaxed);   /* under reg_lock: exact */
    if (id == 0) {
        id = ++reg_last_id;
        s->xprev = NULL;
        s->xnext = reg_head;
        if (reg_head)
            reg_head->xprev = s;
        reg_head = s;
        atomic_store_explicit(&s->xid, id, memory_order_relaxed);   /* under reg_lock; see Synchronization */
    }
    pthread_mutex_unlock(&reg_lock);
    return id;
}

void weft__xspawn_forget(weft_sched *s)
{
    /* An id is given only inside a spawn destroy has waited for, so a 0
     * here is final. */
    if (atomic_load_explicit(&s->xid, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&reg_lock);
    if (s->xprev)
        s->xprev->xnext = s->xnext;
    else
        reg_head = s->xnext;
    if (s->xnext)
        s->xnext->xprev = s->xprev;
    s->xprev = s->xnext = NULL;
    pthread_mutex_unlock(&reg_lock);
}

/* ---- the thread's entries ------------------------------------------------ */

#define XC_ENTRIES 2

/* Spawns a thread makes without a port (none to be had: out of memory,
 * or the queue has its most ports) before it asks for one again. */
#define PORTLESS_RETRY 256

typedef struct xentry {
    weft_sched *s;                /* NULL: unused */
    uint64_t id;                  /* s's id when the entry was made; never 0 */
    weft__inject_port *port;      /* a port of s->global, claimed by this thread; NULL: none yet */
    unsigned retry;               /* without a port: spawns until the next try for one */
} xentry;

/* The thread's entries. On Windows they live on the heap, the
 * thread-local holding only their address: a thread made with
 * CreateThread (an engine's job thread) runs the key's destructor
 * (winpthreads, from a TLS callback at its exit) after mingw's emulated
 * thread-locals may have been freed, so the destructor must not touch a
 * thread-local: it gets the array as its argument, and frees it
 * (tests/core/test_extspawn_win.c: heap corruption in about one run in
 * four under Wine before). From the OS, not the process-wide allocator:
 * it lives as long as the thread, past every scheduler, where a user's
 * allocator (or a test counting its blocks) would see it outstanding.
 * Elsewhere thread-locals are the loader's and
 * outlive the destructors: the array is one, with no indirection on the
 * spawn path. */
#ifdef _WIN32
static WEFT_TLS xentry *xc;   /* NULL until the thread's first outside spawn */
#else
static WEFT_TLS xentry xc[XC_ENTRIES];
#endif
static WEFT_TLS unsigned xc_victim;   /* the entry a miss evicts next */

/* Steps 1-4 of "Giving a port back". Callable from: the entry's thread. */
static void entry_drop(xentry *e)
{
    if (e->s == NULL)
        return;
    if (e->port != NULL) {
        pthread_mutex_lock(&reg_lock);
        for (weft_sched *q = reg_head; q; q = q->xnext) {
            if (q != e->s || atomic_load_explicit(&q->xid, memory_order_relaxed) != e->id)
                continue;   /* relaxed: under reg_lock, where xid is written */
            if (weft__outside_enter(q)) {                          /* step 2 */
                weft__inject_port_release(&q->global, e->port);   /* step 3 */
                weft__outside_leave(q);                            /* step 4 */
            }
            break;
        }
        pthread_mutex_unlock(&reg_lock);
    }
    /* A portless entry holds nothing of its scheduler. */
    e->s = NULL;
    e->id = 0;
    e->port = NULL;
}

static pthread_key_t xc_key;
static bool xc_key_ok;
static pthread_once_t xc_key_once = PTHREAD_ONCE_INIT;

/* Thread exit: every port goes back. Another destructor may spawn again
 * after this one ran; that entry sets the key again, and the C library
 * calls this again. */
static void xc_thread_exit(void *entries)
{
    xentry *x = entries;   /* the thread's xc, which this must not read (above) */
    for (unsigned i = 0; i < XC_ENTRIES; i++)
        entry_drop(&x[i]);
#ifdef _WIN32
    weft__os_free_aligned(x);
#endif
}

/* fork(2) (see the top): the child inherits reg_lock free, and the
 * forking thread's entries forgotten. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void)
{
    for (unsigned i = 0; i < XC_ENTRIES; i++)
        xc[i] = (xentry){ 0 };   /* their ports stay claimed in the child's copy of their queues */
    pthread_mutex_unlock(&reg_lock);
}

static void xc_key_create(void)
{
    xc_key_ok = pthread_key_create(&xc_key, xc_thread_exit) == 0 &&
                weft__os_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

/* The entry of s it hits, else NULL. Inline: every outside spawn asks. */
static inline xentry *entry_hit(weft_sched *s)
{
#ifdef _WIN32
    if (WEFT_UNLIKELY(xc == NULL))
        return NULL;   /* entry_new makes them */
#endif
    uint64_t id = atomic_load_explicit(&s->xid, memory_order_relaxed);   /* see Synchronization: 0 matches no entry */
    for (unsigned i = 0; i < XC_ENTRIES; i++)
        if (xc[i].s == s && xc[i].id == id)
            return &xc[i];
    return NULL;
}

/* A port for e, if one can be had now; else e stays portless for
 * PORTLESS_RETRY spawns. Callable from: e's thread, as entry_new. */
static void entry_claim(weft_sched *s, xentry *e)
{
    e->port = weft__inject_port_claim(&s->global);
    e->retry = PORTLESS_RETRY;
}

/* A new entry for s, with a port claimed if one can be had: an entry
 * naming an older scheduler at s's address, else a free one, else the
 * victim. NULL when there is no thread-exit hook (a port could not go
 * back): the caller goes the way of a thread without a port. Callable
 * from: a thread s cannot be freed under (as sched_id). */
static __attribute__((noinline)) xentry *entry_new(weft_sched *s)
{
    pthread_once(&xc_key_once, xc_key_create);
    if (!xc_key_ok)
        return NULL;
#ifdef _WIN32
    if (xc == NULL) {
        xc = weft__os_alloc_aligned(WEFT_CACHELINE, XC_ENTRIES * sizeof *xc);
        if (xc == NULL)
            return NULL;   /* the way of a thread without a port */
        memset(xc, 0, XC_ENTRIES * sizeof *xc);
    }
#endif
    if (pthread_setspecific(xc_key, xc) != 0)
        return NULL;
    uint64_t id = sched_id(s);
    xentry *e = NULL;
    for (unsigned i = 0; i < XC_ENTRIES && !e; i++)
        if (xc[i].s == s)
            e = &xc[i];   /* stale: its scheduler is gone */
    for (unsigned i = 0; i < XC_ENTRIES && !e; i++)
        if (xc[i].s == NULL)
            e = &xc[i];
    if (!e)
        e = &xc[xc_victim++ % XC_ENTRIES];
    entry_drop(e);
    e->s = s;
    e->id = id;
    entry_claim(s, e);
    return e;
}

/* The calling thread's entry for s, made now if it has none, with a port
 * if one can be had (NULL: neither). Inline: every outside spawn asks. */
static inline xentry *entry_get(weft_sched *s)
{
    xentry *e = entry_hit(s);
    if (WEFT_UNLIKELY(e == NULL))
        return entry_new(s);
    if (WEFT_UNLIKELY(e->port == NULL) && --e->retry == 0)
        entry_claim(s, e);
    return e;
}

/* ---- spawning ------------------------------------------------------------------ */

/* After a push through a port: the outside submitter's half of the park
 * protocol, which pairs with two readers of the queues (park.c):
 *  - a worker going idle (steps 3a-3c): weft__fence_submit, a compiler
 *    barrier against the parker's membarrier (a seq_cst fence where
 *    there is none), as a worker's own submit does;
 *  - the last searcher, which skips its hand-off when it reads every
 *    other worker idle and nothing queued (weft__stop_searching). Only a
 *    full fence between our push and our reads pairs with its seq_cst
 *    RMW on nsearching, so whenever we might leave the push to a
 *    searcher, or need to wake someone, we fence and look again
 *    (weft__submit_global's protocol).
 * Reading nsearching == 0 and nidle == 0 after the compiler barrier
 * alone, we return: an idle worker that our read of nidle missed has
 * paired with our push through its membarrier, so its re-check (3c)
 * sees the push and it leaves the idle set to search; and a searcher
 * that skips its hand-off has read some other worker idle (with one
 * worker it never skips: it is the one that runs our push), which is
 * such a worker. A spawner beside a busy pool pays no fence. */
static inline void notify_after_push(weft_sched *s)
{
    weft__fence_submit();   /* StoreLoad against a parker: pairs with fence_park */
    if (WEFT_LIKELY(atomic_load_explicit(&s->nsearching, memory_order_relaxed) == 0 &&
                    atomic_load_explicit(&s->nidle, memory_order_relaxed) == 0))
        return;   /* relaxed, after fence_submit: see above */
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: pairs with the RMW in weft__stop_searching, and with fence_park */
    if (weft__notify_check(s))
        weft__notify_slow(s);
}

/* The port's cache ran dry: a magazine from s's spares. Ask for every
 * record now, for writing: they were last written by the workers that
 * ran them, so the misses overlap instead of stalling one spawn each. */
static __attribute__((noinline)) bool refill(weft_sched *s, weft__inject_port *p)
{
    unsigned n = weft__task_refill(s, (weft__task **)p->cache);
    for (unsigned i = 0; i < n; i++)
        __builtin_prefetch(p->cache[i], 1);
    p->ncache = n;
    return n != 0;
}

/* Without a port (none could be had): a record from s's spares, the
 * main queue. */
static __attribute__((noinline)) int spawn_portless(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    weft__task *t = weft__task_alloc(s, NULL);
    if (t == NULL)
        return WEFT_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    t->spawner = NULL;
    weft__submit_global(s, NULL, t);
    return WEFT_OK;
}

/* Step 2 of a plain spawn: a record from the port's cache. */
static inline weft__task *port_record(weft_sched *s, weft__inject_port *p)
{
    if (WEFT_UNLIKELY(p->ncache == 0) && !refill(s, p))
        return NULL;
    return p->cache[--p->ncache];
}

/* Steps 2-4 of a plain spawn, inside the announcement: s cannot be freed
 * under us. */
static int spawn_announced(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    xentry *e = entry_get(s);
    if (WEFT_UNLIKELY(e == NULL || e->port == NULL))
        return spawn_portless(s, fn, arg, hint);
    weft__inject_port *p = e->port;
    weft__task *t = port_record(s, p);
    if (WEFT_UNLIKELY(t == NULL))
        return WEFT_ENOMEM;
    t->fn = fn;
    t->arg = arg;
    t->spawner = NULL;
    if (WEFT_UNLIKELY(hint == WEFT_HINT_YIELD)) {
        weft__submit_global(s, NULL, t);   /* behind everything: the main queue's tail */
        return WEFT_OK;
    }
    weft__inject_port_push(p, &t->node);  /* step 3: counted in p->pushed before it is published */
    notify_after_push(s);                 /* step 4 */
    return WEFT_OK;
}

int weft__spawn_outside(weft_sched *s, weft_fn fn, void *arg, weft_hint hint)
{
    if (!weft__outside_enter(s))   /* step 1 */
        return WEFT_ESHUTDOWN;
    int rc = spawn_announced(s, fn, arg, hint);
    weft__outside_leave(s);        /* step 5 */
    return rc;
}

/* A bound thread's port, claimed now if it has none (NULL: none could
 * be had; asked again after PORTLESS_RETRY submits). A bound thread keeps
 * it in its worker, not in an entry: no lookup per submit, and s cannot
 * be freed under it (destroy refuses while another thread is bound).
 * Callable from: the bound thread w. */
static inline weft__inject_port *bound_port(weft_sched *s, weft__worker *w)
{
    if (WEFT_LIKELY(w->port != NULL))
        return w->port;
    if (w->port_retry != 0 && --w->port_retry != 0)
        return NULL;
    w->port = weft__inject_port_claim(&s->global);
    if (w->port == NULL)
        w->port_retry = PORTLESS_RETRY;
    return w->port;
}

void weft__bound_port_release(weft__worker *w)
{
    if (w->port != NULL)
        weft__inject_port_release(&w->s->global, w->port);
    w->port = NULL;
    w->port_retry = 0;
}

void weft__submit_outside(weft_sched *s, weft__worker *w, weft__task *t, weft_hint hint)
{
    if (WEFT_LIKELY(hint != WEFT_HINT_YIELD)) {
        weft__inject_port *p;
        if (w != NULL) {
            p = bound_port(s, w);
        } else {
            xentry *e = entry_get(s);
            p = e != NULL ? e->port : NULL;
        }
        if (WEFT_LIKELY(p != NULL)) {
            weft__inject_port_push(p, &t->node);   /* counted in the port, not in w->spawned or ext_spawned */
            notify_after_push(s);
            return;
        }
    }
    weft__submit_global(s, w, t);   /* the main queue, as without ports */
}

bool weft__submit_bound_try(weft_sched *s, weft__worker *w, weft__task *t)
{
    weft__inject_port *p = bound_port(s, w);
    if (WEFT_UNLIKELY(p == NULL)) {
        weft__submit_global(s, w, t);   /* no port to be had: the main queue, as weft__submit_outside */
        return true;
    }
    if (WEFT_UNLIKELY(ck_pr_load_uint(&p->l.over_len) != 0))   /* only we make it non-zero */
        weft__inject_port_push(p, &t->node);   /* behind the list, under its lock: a side run could take nothing back */
    else if (!weft__inject_port_try_push(p, &t->node))
        return false;   /* the ring full: nothing done */
    notify_after_push(s);
    return true;
}

weft__task *weft__task_alloc_outside(weft_sched *s)
{
    xentry *e = entry_get(s);
    if (WEFT_LIKELY(e != NULL && e->port != NULL))
        return port_record(s, e->port);
    return weft__task_alloc(s, NULL);
}

/* This file is private to weft: scheduler life cycle, binding, stats and
 * wait_idle (the config: config.c).
 *
 * Synchronization
 *   shutdown   set once by destroy (seq_cst), under bound_lock; external
 *              spawners announce themselves in ext_inflight (seq_cst)
 *              before reading it, so destroy, after setting it, waits out
 *              every spawn that did not see it (Dekker on the two
 *              variables). bind reads it under bound_lock.
 *   ext_inflight
 *              threads that are neither workers nor listed in bound[] and
 *              still use s: external spawns and submits between their
 *              shutdown check and their last touch of s
 *              (weft__outside_enter/leave, extspawn.h), threads giving a
 *              port of s back (extspawn.c), and unbinds that have left
 *              bound[] and are still freeing into s. seq_cst RMWs; destroy
 *              frees nothing before it has read 0 after setting shutdown.
 *   exiting    set by destroy once the scheduler is idle; workers read it
 *              when they run out of work.
 *   bound[], nbound, by_id, id_free, retired_*
 *              bound threads' workers, their ids (pin.c, "Thread ids":
 *              O(log n) a bind) and the counts of those gone: under
 *              bound_lock.
 *
 * Unbind racing destroy. destroy may be retried by one thread while
 * others unbind (it refuses with EBUSY while any other thread is bound).
 * Leaving bound[] is what lets destroy through, and unbind still has work
 * to do on s afterwards (retiring its pool into s's spares, freeing its
 * worker through s's allocator), so:
 *   unbind                                destroy
 *   1. ext_inflight += 1 (seq_cst)        a. lock bound_lock; nbound
 *   2. retire the pool (spare_lock)          counts only the caller? else
 *   3. lock bound_lock; leave bound[];       unlock, EBUSY
 *      fold its counts; unlock            b. shutdown = true; unlock
 *   4. free its worker (s's allocator)    c. wait until ext_inflight == 0
 *   5. ext_inflight -= 1 (seq_cst):       d. ... free s
 *      its last touch of s
 * If destroy's (a) sees the thread gone, (a) follows its (3) in
 * bound_lock's order, so (1) happens before (c)'s loads: destroy waits
 * for (5), whose release makes every touch of s before it happen before
 * destroy's frees. If (a) comes first, the thread is still counted:
 * EBUSY, and s is left as it was.
 *
 * Destroy refuses first. With no workers (WEFT_WORKERS_NONE) and tasks queued, a destroy
 * from a plain thread binds to run them; its bind (BIND_DESTROY_FIRST)
 * does (a) and (b) in the same hold of bound_lock in which it lists the
 * caller, after everything that can fail: a refusal leaves s as it was,
 * having run nothing and waited for nobody (it once bound, saw the
 * others, then unbound, and that unbind ran the queue or waited for
 * tasks pinned to the others), and no thread can bind between the check
 * and shutdown.
 *
 * Waits parked outside s. A graph task waiting for a semaphore unit
 * (weft_task_set_semaphore) sits in the semaphore's FIFO, on no queue of
 * s and holding no fiber: s's idle test cannot see it, and a release
 * from any thread, at any time, queues it on s. So such waits are listed
 * here (weft__parked, core.h): parked, parked_closed under parked_lock;
 * parked_handoffs by RMW (its increment under parked_lock too).
 *   the waiting side                       destroy (after shutdown is
 *   1. lock; closed? unlock, false: do        set)
 *      not wait (skipped, or a unit        a. lock; closed = true
 *      taken at once); else link; unlock   b. for each listed p: end(p)
 *   2. queue on what it waits for             (withdraw it, queue its task
 *      (the semaphore), or not (a unit        on s): ended, unlinked; not
 *      was free: weft__parked_remove)         now (not queued yet, or
 *   3. handed its unit (or cancelled) by      being handed off): kept
 *      another thread: lock; unlink;       c. unlock; any kept? yield, a
 *      handoffs += 1; unlock. Queue its       again
 *      task on s; handoffs -= 1            d. wait until handoffs == 0
 *      (weft__parked_handoff, _done).      e. drain s again: the tasks
 *                                             ended are skipped there
 * Every step of both sides is under parked_lock, so no fence is needed:
 * a wait that links before (a) is seen by (b) and stays listed until it
 * is ended there, by its own thread (2) or by a handoff (3), whose
 * increment (under the lock) (d) then waits out; one that comes after
 * (a) sees closed and does not wait. (b) retries only while a wait is
 * between 1 and 2, or between its hand-off under the semaphore's lock
 * and 3: both short and never blocked on destroy. After (d) nothing
 * waits outside s and nobody will queue on it but its own tasks, which
 * (e) finishes. destroy ends the waits before its drain, not after one:
 * a task of s may wait for the run of a task parked here, and then s
 * would not go idle while the wait lasts. Lock order: a graph's lock,
 * parked_lock, a semaphore's.
 */
#define _GNU_SOURCE
#include <string.h>

#include "blocking_pool.h"
#include "config.h"
#include "extspawn.h"
#include "park.h"
#include "pin.h"
#include "poller.h"
#include "ready.h"
#include "stall.h"
#include "steal.h"
#include "suspend.h"
#include "task.h"
#include "trace.h"
#include "worker_life.h"

static unsigned gcd(unsigned a, unsigned b)
{
    while (b) {
        unsigned t = a % b;
        a = b;
        b = t;
    }
    return a;
}

unsigned weft__coprimes(unsigned n, unsigned *out)
{
    unsigned k = 0;
    for (unsigned i = 1; i <= n; i++)
        if (gcd(i, n) == 1)
            out[k++] = i;
    return k;
}

/* Frees what create made so far: the first `inited` workers, the arrays,
 * the struct. Queues and parking are undone by the caller. */
static void destroy_partial(weft_sched *s, unsigned inited)
{
    weft_allocator a = s->cfg.allocator;   /* s itself goes back through it */
    for (unsigned i = 0; i < inited; i++)
        weft__worker_fini(&s->workers[i]);
    if (s->workers)
        weft__free_with(&a, s->workers, sizeof(weft__worker) * (s->nworkers ? s->nworkers : 1));
    if (s->coprimes)
        weft__free_with(&a, s->coprimes, sizeof(unsigned) * (s->nworkers ? s->nworkers : 1));
    weft__spares_fini(s);
    pthread_mutex_destroy(&s->spare_lock);
    pthread_mutex_destroy(&s->bound_lock);
    pthread_mutex_destroy(&s->parked_lock);
    pthread_mutex_destroy(&s->io_lock);
    pthread_mutex_destroy(&s->trace_lock);
    weft__free_with(&a, s, sizeof *s);
}

/* The scheduler's three rings: NORMAL's (global) and HIGH's and LOW's. */
static void fini_rings(weft_sched *s)
{
    weft__inject_fini(&s->global);
    weft__inject_fini(&s->prio_high);
    weft__inject_fini(&s->prio_low);
}

int weft_sched_create(weft_sched **out, const weft_config *cfg)
{
    if (!out)
        return WEFT_EINVAL;
    *out = NULL;
    weft_config c;
    if (cfg)
        c = *cfg;
    else
        weft_config_init(&c);
    unsigned ncpu = weft__os_cpu_count();
    int rc = weft__config_take(&c, ncpu);
    if (rc != WEFT_OK)
        return rc;

    weft__park_setup_fences();
    /* From here on every allocation goes through c.allocator (resolved by
     * weft__config_take), which s keeps in s->cfg for destroy. */
    weft_sched *s = weft__calloc_with(&c.allocator, sizeof *s);
    if (!s)
        return WEFT_ENOMEM;
    s->cfg = c;
    s->nworkers = c.workers;
    s->spare_cpu = ncpu > c.workers;
#ifdef WEFT_TEST_SEAMS
    s->track = c.watchdog_ns != 0 || weft__stall_track_all;
#else
    s->track = c.watchdog_ns != 0;
#endif
    if (c.observer) {
        s->obs = *c.observer;   /* the caller's struct need not outlive create */
        s->cfg.observer = &s->obs;
    }
    pthread_mutex_init(&s->trace_lock, NULL);
    /* Taken per spawn from outside and per magazine by the workers:
     * brief, so waiters spin before they sleep. */
    weft__mutex_init_brief(&s->spare_lock);
    pthread_mutex_init(&s->bound_lock, NULL);
    pthread_mutex_init(&s->parked_lock, NULL);
    pthread_mutex_init(&s->io_lock, NULL);
    size_t n = s->nworkers ? s->nworkers : 1;
    s->workers = weft__alloc_with(&s->cfg.allocator, sizeof(weft__worker) * n);
    s->coprimes = weft__alloc_with(&s->cfg.allocator, sizeof(unsigned) * n);
    if (!s->workers || !s->coprimes) {
        destroy_partial(s, 0);
        return WEFT_ENOMEM;
    }
    s->ncoprimes = weft__coprimes((unsigned)n, s->coprimes);
    rc = weft__inject_init(&s->global, 1024, &s->cfg.allocator);
    if (rc != WEFT_OK) {
        destroy_partial(s, 0);
        return rc;
    }
    rc = weft__inject_init(&s->prio_high, 256, &s->cfg.allocator);
    if (rc == WEFT_OK) {
        rc = weft__inject_init(&s->prio_low, 256, &s->cfg.allocator);
        if (rc != WEFT_OK)
            weft__inject_fini(&s->prio_high);
    }
    if (rc != WEFT_OK) {
        weft__inject_fini(&s->global);
        destroy_partial(s, 0);
        return rc;
    }
    rc = weft__park_init(s);
    if (rc != WEFT_OK) {
        fini_rings(s);
        destroy_partial(s, 0);
        return rc;
    }
    unsigned inited = 0;
    for (; inited < s->nworkers; inited++) {
        rc = weft__worker_init(s, &s->workers[inited], inited, false);
        if (rc != WEFT_OK)
            break;
    }
    unsigned started = 0;
    if (rc == WEFT_OK) {
        for (; started < s->nworkers; started++) {
            if (weft__os_thread_start(&s->workers[started].thread, weft__worker_thread,
                                      &s->workers[started], NULL) != 0) {
                rc = WEFT_ENOMEM;
                break;
            }
        }
    }
    if (rc == WEFT_OK)
        rc = weft__stall_start(s);   /* the watchdog, if asked for */
    if (rc != WEFT_OK) {
        /* Stop the threads that did start: nothing was queued yet. */
        atomic_store(&s->exiting, true);
        weft__wake_all(s);
        for (unsigned i = 0; i < started; i++)
            weft__os_thread_join(s->workers[i].thread);
        weft__park_fini(s);
        fini_rings(s);
        destroy_partial(s, inited);
        return rc;
    }
    *out = s;
    return WEFT_OK;
}

static bool idle_pred(void *ctx)
{
    return weft__sched_is_idle(ctx);
}

/* ---- waits parked outside s ---------------------------------------------------- */

/* Caller holds parked_lock. */
static void parked_link(weft_sched *s, weft__parked *p)
{
    p->prev = NULL;
    p->next = s->parked;
    if (s->parked)
        s->parked->prev = p;
    s->parked = p;
}

/* Caller holds parked_lock. */
static void parked_unlink(weft_sched *s, weft__parked *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        s->parked = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->next = p->prev = NULL;
}

bool weft__parked_add(weft_sched *s, weft__parked *p)
{
    pthread_mutex_lock(&s->parked_lock);
    bool open = !s->parked_closed;   /* step 1; under parked_lock */
    if (open)
        parked_link(s, p);
    pthread_mutex_unlock(&s->parked_lock);
    return open;
}

void weft__parked_remove(weft_sched *s, weft__parked *p)
{
    pthread_mutex_lock(&s->parked_lock);
    parked_unlink(s, p);
    pthread_mutex_unlock(&s->parked_lock);
}

void weft__parked_handoff(weft_sched *s, weft__parked *p)
{
    pthread_mutex_lock(&s->parked_lock);
    parked_unlink(s, p);
    atomic_fetch_add_explicit(&s->parked_handoffs, 1, memory_order_relaxed);   /* relaxed (step 3): under parked_lock, which orders it before the load of a destroy that finds the list without p */
    pthread_mutex_unlock(&s->parked_lock);
}

void weft__parked_handoff_done(weft_sched *s)
{
    atomic_fetch_sub_explicit(&s->parked_handoffs, 1, memory_order_release);   /* release: our last touch of s; pairs with destroy's acquire (step d) */
}

/* Steps a-d: ends every wait parked outside s and waits out the threads
 * handing one off. Their tasks are queued on s (and skipped there).
 * Callable from: destroy, after it set shutdown. */
static void end_parked(weft_sched *s)
{
    for (;;) {
        pthread_mutex_lock(&s->parked_lock);
        s->parked_closed = true;   /* step a */
        weft__parked *kept = NULL;
        /* Step b. Unlinked before end: once end has queued its task, p
         * may be gone (the run can end and its graph be destroyed). One
         * that cannot end now goes back after the pass. */
        for (weft__parked *p; (p = s->parked) != NULL;) {
            parked_unlink(s, p);
            if (!p->end(p)) {
                p->next = kept;
                kept = p;
            }
        }
        bool any = kept != NULL;
        while (kept) {
            weft__parked *p = kept;
            kept = p->next;
            parked_link(s, p);
        }
        pthread_mutex_unlock(&s->parked_lock);
        if (!any)
            break;
        weft__os_yield();   /* step c */
    }
    while (atomic_load_explicit(&s->parked_handoffs, memory_order_acquire) != 0)   /* acquire, step d: pairs with the release in weft__parked_handoff_done */
        weft__os_yield();
}

/* Are waits parked outside s? A look, for destroy's refusal. */
static bool parked_any(weft_sched *s)
{
    pthread_mutex_lock(&s->parked_lock);
    bool any = s->parked != NULL;
    pthread_mutex_unlock(&s->parked_lock);
    return any;
}

/* Waits on a thread that cannot run tasks: the workers bump idle_gen when
 * they run dry. A short timeout covers the race with the last one. */
static void wait_idle_blocking(weft_sched *s)
{
    atomic_fetch_add(&s->idle_waiters, 1);
    while (!weft__sched_is_idle(s)) {
        unsigned gen = atomic_load_explicit(&s->idle_gen, memory_order_acquire);  /* pairs with release in notify_idle_waiters */
        if (weft__sched_is_idle(s))
            break;
        weft__os_word_wait(&s->idle_gen, gen, 1000000);
    }
    atomic_fetch_sub(&s->idle_waiters, 1);
}

/* Is the caller, one of w's scheduler's own threads, inside a task? A
 * worker runs nothing else (its hooks aside). A bound thread runs tasks
 * only on its loop's fibers, in single-threaded mode: its own code is on
 * its host fiber (its spawns carry no spawner, so wait_until runs none
 * inline there: spawn_bound.c, "Spawns of a bound thread with no workers"). The one exception, when no fiber
 * can be mapped at all (worker.c, host_runs_one), reads as "not in a
 * task": such a task's waits fail with WEFT_ENOMEM anyway. */
static bool in_task(const weft__worker *w)
{
    return !w->bound || w->cur != &w->host || w->pump_depth != 0;
}

int weft_sched_wait_idle(weft_sched *s)
{
    if (!s)
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    if (w && w->s == s) {
        if (in_task(w))
            return WEFT_EBUSY;   /* a task would wait for itself */
        return weft_wait_until(idle_pred, s);
    }
    if (s->nworkers == 0)
        return WEFT_ENOTBOUND;   /* nobody else could run the tasks */
    wait_idle_blocking(s);
    return WEFT_OK;
}

/* How bind_thread binds: for the caller (weft_sched_bind_ex), or for
 * destroy with no workers, which runs queued tasks on the caller: at its
 * start (DESTROY_FIRST: refused with EBUSY while any thread is bound, and
 * shutdown set under the same hold of bound_lock, so that no thread binds
 * between the refusal check and destroy's decision) or once shutdown is
 * set (DESTROY_LATE: tasks spawned while destroy started). */
enum bind_mode { BIND_USER, BIND_DESTROY_FIRST, BIND_DESTROY_LATE };

static int bind_thread(weft_sched *s, enum bind_mode mode, unsigned flags);

static void refuse_bound(unsigned others)
{
    if (others)
        fprintf(stderr, "weft: weft_sched_destroy: %u other thread%s still bound to the "
                        "scheduler; refused (WEFT_EBUSY)\n", others, others == 1 ? " is" : "s are");
    else
        fprintf(stderr, "weft: weft_sched_destroy: other threads are still bound to the "
                        "scheduler; refused (WEFT_EBUSY)\n");
}

int weft_sched_destroy(weft_sched *s)
{
    if (!s)
        return WEFT_EINVAL;
    weft__worker *w = weft__tls_worker;
    bool own = w && w->s == s;   /* the caller is s's bound thread (or worker) */
    if (own && in_task(w)) {
        if (w->bound)
            fprintf(stderr, "weft: weft_sched_destroy called from a task running on a bound "
                            "thread of the scheduler it would destroy; refused (WEFT_EBUSY)\n");
        else
            fprintf(stderr, "weft: weft_sched_destroy called from worker %u of the scheduler "
                            "it would destroy; refused (WEFT_EBUSY)\n", w->index);
        return WEFT_EBUSY;
    }
    if (!own && w && s->nworkers == 0 && (!weft__sched_is_idle(s) || parked_any(s))) {
        /* Nobody could run what is queued (or the tasks of the parked
         * waits destroy ends): this thread is taken by another
         * scheduler, so it cannot bind to s to run them. */
        fprintf(stderr, "weft: weft_sched_destroy of a scheduler with no workers and queued "
                        "tasks, called from a thread of another scheduler; refused (WEFT_EBUSY)\n");
        return WEFT_EBUSY;
    }
    /* Bound threads other than the caller would be left bound to freed
     * memory: refuse while any is. Checked, and shutdown set, under
     * bound_lock, where bind checks shutdown: none can bind after. The
     * refusal comes first, before anything runs or waits: a refused
     * destroy changes nothing. */
    if (!w && s->nworkers == 0 && (!weft__sched_is_idle(s) || parked_any(s))) {
        /* Single-threaded mode from an unbound thread: bind for the while,
         * so that what is queued runs here (nobody else would run it, nor
         * the tasks of the parked waits destroy ends).
         * The bind itself refuses while another thread is bound, and
         * sets shutdown in the same hold of bound_lock. */
        int rc = bind_thread(s, BIND_DESTROY_FIRST, 0);
        if (rc == WEFT_EBUSY)
            refuse_bound(0);
        if (rc != WEFT_OK)
            return rc;
        own = true;
    } else {
        pthread_mutex_lock(&s->bound_lock);
        unsigned others = s->nbound - (own ? 1u : 0u);
        if (others) {
            pthread_mutex_unlock(&s->bound_lock);
            refuse_bound(others);
            return WEFT_EBUSY;
        }
        atomic_store(&s->shutdown, true);                   /* seq_cst: pairs with ext_inflight */
        pthread_mutex_unlock(&s->bound_lock);
    }
    /* No new external spawns; wait out those already past the check,
     * and unbinds that have left bound[] but still use s (they announced
     * themselves in ext_inflight before leaving it, under bound_lock,
     * which we took after: the load below sees them). */
    while (atomic_load(&s->ext_inflight) != 0)              /* seq_cst (acquire): pairs with the subs in spawn and unbind */
        weft__os_yield();
    /* fd and pid waits end with WEFT_ESHUTDOWN, and later ones do not
     * wait: "finish every task" must not hang on input that never comes.
     * Blocking calls are waited for (weft__bpool_fini, below). */
    weft__poller_shutdown(s);
    /* Graph tasks waiting for semaphore units ("Waits parked outside
     * s") end now, as a cancel ends them: their tasks are skipped by the
     * drain below. Not after a first drain: a task of s may wait for
     * their runs, and s would never go idle. destroy waits out the
     * releases that handed one a unit meanwhile and are queueing it. */
    end_parked(s);
    if (!own && !w && s->nworkers == 0 && !weft__sched_is_idle(s)) {
        /* Spawned by other threads since the first look. */
        if (bind_thread(s, BIND_DESTROY_LATE, 0) == WEFT_OK)
            own = true;
        else
            fprintf(stderr, "weft: weft_sched_destroy: cannot bind to run the tasks queued "
                            "while it started (out of memory); they are dropped\n");
    }
    if (own) {
        weft_wait_until(idle_pred, s);    /* bound thread: runs what is left, or waits for it */
        weft_sched_unbind();              /* it is bound to s no more */
    } else if (s->nworkers) {
        wait_idle_blocking(s);
    }
    atomic_store_explicit(&s->exiting, true, memory_order_release);  /* pairs with acquire in loop */
    weft__wake_all(s);
    for (unsigned i = 0; i < s->nworkers; i++) {
        /* A worker may go back to sleep between wake_all and reading
         * exiting; it re-checks exiting after announcing idle. */
        weft__os_thread_join(s->workers[i].thread);
    }
    weft__bpool_fini(s);   /* no task is left to call it; outside callers are waited for */
    weft__stall_stop(s);
    for (unsigned i = 0; i < s->nworkers; i++) {
        weft__worker_wait_wakers(&s->workers[i]);   /* a thread that woke a fiber may still be leaving */
        weft__worker_fini(&s->workers[i]);
    }
    weft__poller_fini(s);
    weft__park_fini(s);
    fini_rings(s);
    weft__trace_fini(s);   /* every thread that could record is gone */
    weft_allocator a = s->cfg.allocator;   /* s itself goes back through it */
    weft__bound_fini(s);
    pthread_mutex_destroy(&s->spare_lock);
    pthread_mutex_destroy(&s->bound_lock);
    pthread_mutex_destroy(&s->parked_lock);
    pthread_mutex_destroy(&s->io_lock);
    pthread_mutex_destroy(&s->trace_lock);
    weft__free_with(&a, s->workers, sizeof(weft__worker) * (s->nworkers ? s->nworkers : 1));
    weft__free_with(&a, s->coprimes, sizeof(unsigned) * (s->nworkers ? s->nworkers : 1));
    weft__spares_fini(s);
    weft__free_with(&a, s, sizeof *s);
    return WEFT_OK;
}

/* ---- binding ------------------------------------------------------------------- */

/* weft_sched_bind for a thread that is no worker and not bound; mode:
 * see enum bind_mode. Everything that can fail comes before the thread
 * is listed (under bound_lock): a bind that fails, or that destroy's
 * refusal check turns down, leaves s as it was. */
static int bind_thread(weft_sched *s, enum bind_mode mode, unsigned flags)
{
    const weft_allocator *a = &s->cfg.allocator;
    weft__worker *w = weft__alloc_with(a, sizeof *w);
    if (!w)
        return WEFT_ENOMEM;
    int rc = weft__worker_init(s, w, s->nworkers, true);
    if (rc != WEFT_OK) {
        weft__free_with(a, w, sizeof *w);
        return rc;
    }
    rc = weft__fiber_thread_enter(&w->host);
    if (rc != WEFT_OK) {
        weft__fiber_thread_leave();
        weft__worker_fini(w);
        weft__free_with(a, w, sizeof *w);
        return rc;
    }
    pthread_mutex_lock(&s->bound_lock);
    rc = WEFT_OK;
    if (mode != BIND_DESTROY_LATE && atomic_load(&s->shutdown))   /* seq_cst; destroy sets it under bound_lock */
        rc = WEFT_ESHUTDOWN;
    else if (mode == BIND_DESTROY_FIRST && s->nbound != 0)
        rc = WEFT_EBUSY;   /* destroy's refusal: other threads are bound */
    else
        rc = weft__bound_add(s, w);   /* its id, and listed; ENOMEM */
    if (rc != WEFT_OK) {
        pthread_mutex_unlock(&s->bound_lock);
        weft__fiber_thread_leave();
        weft__worker_fini(w);
        weft__free_with(a, w, sizeof *w);
        return rc;
    }
    if (mode == BIND_DESTROY_FIRST)
        atomic_store(&s->shutdown, true);   /* seq_cst: pairs with ext_inflight (destroy's wait follows) */
    w->no_help = (flags & WEFT_BIND_NO_HELP) != 0;
    pthread_mutex_unlock(&s->bound_lock);
    if (s->nworkers == 0)
        weft__bound_reclaim(s, w);   /* steps B2-B3 of "Spawns of a bound thread with no workers" (spawn_bound.c) */

    w->bound_state.w = w;
    w->host.host = &w->bound_state;
    w->host.name = "bound thread";
    w->cur = &w->host;
    weft__tls_worker = w;
    weft__trace_attach(w);   /* recorded from now on if s records */
    /* Blocking runs the loop here: with no workers, every queued task;
     * beside workers, the tasks pinned here and, unless WEFT_BIND_NO_HELP,
     * other ready work (worker.c, pick_bound). */
    weft__host_set(&weft__core_host);
    weft__host_set_next(&w->run_next);
    return WEFT_OK;
}

int weft_sched_bind_ex(weft_sched *s, unsigned flags)
{
    if (!s || (flags & ~WEFT_BIND_NO_HELP))
        return WEFT_EINVAL;
    if (weft__tls_worker)
        return WEFT_EBUSY;   /* already a worker or bound */
    return bind_thread(s, BIND_USER, flags);
}

int weft_sched_bind(weft_sched *s)
{
    return weft_sched_bind_ex(s, 0);
}

void weft_sched_unbind(void)
{
    weft__worker *w = weft__tls_worker;
    if (!w || !w->bound)
        return;
    if (in_task(w)) {
        /* The task's frames live on this thread's worker: freeing it
         * here would pull the stack from under them. */
        fprintf(stderr, "weft: weft_sched_unbind called from a task running on the bound "
                        "thread; ignored (the thread stays bound)\n");
        return;
    }
    weft_sched *s = w->s;
    /* Pins from other threads are refused from here on: with the box
     * open, threads that kept pinning would keep this call running. */
    weft__bound_close(w);
    /* In single-threaded mode nobody else runs what is queued. */
    if (s->nworkers == 0)
        weft_wait_until(idle_pred, s);
    /* What is pinned here, and the tasks this thread started that are
     * blocked (their fibers are its own), run before it leaves. */
    weft__bound_drain(w);
    weft__bound_port_release(w);   /* its queued items stay; workers take them as ever */
    weft__trace_detach(w);   /* its events stay for weft_trace_write */
    /* Step 1 of unbind (see Synchronization): announce, while still
     * listed, that this thread goes on using s after it leaves bound[]. */
    atomic_fetch_add(&s->ext_inflight, 1);   /* seq_cst: before leaving bound[]; a destroy that sees us gone waits for the sub below */
    weft__host_set(NULL);
    weft__host_set_next(NULL);
    weft__fiber_thread_leave();
    weft__tls_worker = NULL;
    weft__worker_wait_wakers(w);   /* a thread that woke one of our fibers may still be leaving */
    /* Records from w's slabs may be queued or pooled anywhere by now:
     * its slabs and free records stay with s until destroy. */
    weft__task_pool_retire(s, &w->pool);
    pthread_mutex_lock(&s->bound_lock);
    weft__bound_remove(s, w);
    /* Keep its counts: idle accounting sums over every worker ever. */
    s->retired_spawned += atomic_load_explicit(&w->spawned, memory_order_relaxed);       /* relaxed: our own counts */
    s->retired_completed += atomic_load_explicit(&w->completed, memory_order_relaxed);
    pthread_mutex_unlock(&s->bound_lock);
    /* Out of bound[]: nobody reads w any more, and s is still ours until
     * the sub below (destroy waits for it before it frees anything). */
    weft__worker_fini(w);
    weft__free_with(&s->cfg.allocator, w, sizeof *w);
    atomic_fetch_sub(&s->ext_inflight, 1);   /* seq_cst (release): our last touch of s; pairs with destroy's load after it set shutdown */
}

weft_sched *weft_sched_current(void)
{
    weft__worker *w = weft__tls_worker;
    return w ? w->s : NULL;
}

unsigned weft_sched_workers(const weft_sched *s)
{
    return s ? s->nworkers : 0;
}

int weft_thread_worker_index(void)
{
    weft__worker *w = weft__tls_worker;
    return w && !w->bound ? (int)w->index : -1;
}

int weft_sched_stats(const weft_sched *s, unsigned worker, weft_worker_stats *out)
{
    if (!s || !out || worker >= s->nworkers)
        return WEFT_EINVAL;
    const weft__stats *st = &s->workers[worker].stats;
#define LOAD(f) out->f = atomic_load_explicit(&((weft__stats *)st)->f, memory_order_relaxed)
    /* tasks_run is the worker's completion count, which the idle test
     * keeps anyway: one counter per task, not two. */
    out->tasks_run = atomic_load_explicit(&s->workers[worker].completed, memory_order_acquire);   /* pairs with release in run_task */
    LOAD(lifo_runs); LOAD(local_runs); LOAD(global_runs);
    LOAD(stolen_runs); LOAD(steal_attempts); LOAD(steals); LOAD(offloads);
    LOAD(global_grabs); LOAD(parks); LOAD(wakeups); LOAD(fibers_created);
    LOAD(fiber_switches);
#undef LOAD
    return WEFT_OK;
}

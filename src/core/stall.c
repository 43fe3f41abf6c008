/* This file is private to weft: stall reports. Which fibers are blocked
 * on what and in which task, a watchdog thread that notices when no task
 * completes, and the state dump the test harness prints on a hang.
 *
 * Synchronization
 *   track         s->track, w->track: set at creation, before any worker
 *                 runs; w->track is read by its owner only. Off (the
 *                 default) costs one predictable branch in run_task and
 *                 on each blocking path, nothing else.
 *   blocked list  per worker, w->blocked_list and w->nblocked: the fibers
 *                 inside weft__suspend, each by the weft__blocked record
 *                 in its fstate (on its own stack). Linked and unlinked by
 *                 the owner, under w->reg_lock; read by reports under it.
 *   a record      what, obj, deadline, fiber, task_fn, task_arg: written
 *                 by its fiber's thread while the fiber is not listed;
 *                 read by reports only while it is listed, under reg_lock.
 *                 The lock orders the writes before the reads, and a
 *                 listed fiber is suspended, so nobody writes them then.
 *   run_fn, run_arg  per worker: the task running now (0: none). Relaxed
 *                 stores by the owner, relaxed loads by reports: two
 *                 words, so a report may pair one task's function with
 *                 another's argument. They are printed, never followed.
 *   live list     every scheduler between create and destroy: live_lock.
 *   namers        the tables of task namers and wait namers: added under
 *                 namer_lock; task namers read without it (an entry is
 *                 complete before nnamers, stored with release, counts it).
 *   watchdog      stop: under wd->lock, with wd->cond to wake the thread.
 *
 * Why a lock, and why the reader is not the owner. A record lives on a
 * suspended fiber's stack: once the fiber resumes its frame is reused,
 * and a fiber stack beyond the pool's cache is unmapped. A reader must
 * keep the fiber from getting past its unlink while it reads, which is
 * what reg_lock does. Asking the workers to describe themselves instead
 * would fail exactly when it matters: a worker stuck in a task never
 * answers. reg_lock is taken only by its owner and by the rare report,
 * so it is uncontended and orders nothing between workers. Describing a
 * graph task, or a graph waited for, takes the graph layer's locks under
 * reg_lock, each for a bounded time; no path holds one of them while
 * taking a reg_lock (weft__wait unlocks the primitive before the fiber
 * suspends), so the order live_lock -> bound_lock -> reg_lock -> the
 * namers' locks has no cycle.
 *
 * Protocol
 *   Fiber (owner thread)                  Watchdog, every period/4
 *   1. note what it waits on (host_block, 1. sum every worker's completed
 *      sleep; wait_until: fstate.pred)       (acquire) and count listed
 *   2. lock; link; unlock; switch out        fibers (each under reg_lock)
 *   3. resumed: lock; unlink; unlock;     2. a task completed, or nothing
 *      clear the note                        is listed: the stall clock
 *                                            starts over
 *                                         3. else, once the clock passes
 *                                            the period and not yet for
 *                                            this stall: build the report
 *                                            under the locks, deliver it
 *                                            with no lock held
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "core_api.h"
#include "stall.h"

#ifdef WEFT_TEST_SEAMS
bool weft__stall_track_all;
#endif

static inline weft__fstate *fstate_of(weft__fiber *f)
{
    return f->host;
}

/* ---- tracking: called by the owner only, and only when w->track ---------- */

static void publish_running(weft__worker *w, weft_fn fn, void *arg, const char *name)
{
    atomic_store_explicit(&w->run_name, (uintptr_t)name, memory_order_relaxed);  /* relaxed: printed only */
    atomic_store_explicit(&w->run_fn, (uintptr_t)fn, memory_order_relaxed);    /* relaxed: printed only */
    atomic_store_explicit(&w->run_arg, (uintptr_t)arg, memory_order_relaxed);  /* relaxed: printed only */
}

void weft__track_note(weft__worker *w, const char *what, const void *obj, uint64_t deadline)
{
    weft__blocked *b = &fstate_of(w->cur)->blk;
    b->what = what;
    b->obj = obj;
    b->deadline = deadline;
}

void weft__track_suspend(weft__worker *w, weft__fiber *self)
{
    weft__fstate *st = fstate_of(self);
    weft__blocked *b = &st->blk;
    if (st->pred) {
        /* wait_until sets its poll just before suspending and clears it
         * right after: it is the one path that leaves no note. (A note
         * can be stale: weft__suspend returns early, unlisted, when the
         * fiber was woken before it could leave.) */
        b->what = "wait_until";
        b->obj = st->pred_ctx;
        b->deadline = 0;
    } else if (!b->what) {
        b->what = "suspend";   /* a blocking path that left no note */
    }
    b->fiber = self;
    weft__spin_lock(&w->reg_lock);
    b->prev = NULL;
    b->next = w->blocked_list;
    if (b->next)
        b->next->prev = b;
    w->blocked_list = b;
    w->nblocked++;
    weft__spin_unlock(&w->reg_lock);
    publish_running(w, NULL, NULL, NULL);   /* the worker goes back to its loop, or to another fiber */
}

void weft__track_resume(weft__worker *w, weft__fiber *self)
{
    weft__blocked *b = &fstate_of(self)->blk;
    weft__spin_lock(&w->reg_lock);
    if (b->prev)
        b->prev->next = b->next;
    else
        w->blocked_list = b->next;
    if (b->next)
        b->next->prev = b->prev;
    w->nblocked--;
    weft__spin_unlock(&w->reg_lock);
    b->prev = b->next = NULL;
    b->what = NULL;
    b->obj = NULL;
    b->deadline = 0;
    publish_running(w, b->task_fn, b->task_arg, b->task_name);
}

void weft__track_run(weft__worker *w, weft_fn fn, void *arg, const char *name)
{
    /* wait_until may run a task inline inside another on the same fiber:
     * keep the outer one and put it back after. */
    weft__blocked *b = &fstate_of(w->cur)->blk;
    weft_fn outer_fn = b->task_fn;
    void *outer_arg = b->task_arg;
    const char *outer_name = b->task_name;
    b->task_fn = fn;
    b->task_arg = arg;
    b->task_name = name;
    publish_running(w, fn, arg, name);
    fn(arg);
    /* The same fiber: fibers are pinned and return where they called. */
    b->task_fn = outer_fn;
    b->task_arg = outer_arg;
    b->task_name = outer_name;
    publish_running(w, outer_fn, outer_arg, outer_name);
}

void weft__track_task(weft__worker *w, weft_fn fn, void *arg)
{
    weft__blocked *b = &fstate_of(w->cur)->blk;
    b->task_fn = fn;
    b->task_arg = arg;
    b->task_name = NULL;
    publish_running(w, fn, arg, NULL);
}

/* ---- task namers ---------------------------------------------------------- */

#define NAMERS 8

typedef struct namer {
    weft_fn entry;
    const char *kind;
    weft__describe_fn describe;
} namer;

static pthread_mutex_t namer_lock = PTHREAD_MUTEX_INITIALIZER;
/* Entries are written under namer_lock before nnamers counts them
 * (release) and never change: weft__task_kind reads without the lock. */
static namer namers[NAMERS];
static atomic_uint nnamers;

void weft__task_namer_add(weft_fn entry, const char *kind, weft__describe_fn describe)
{
    pthread_mutex_lock(&namer_lock);
    unsigned n = atomic_load_explicit(&nnamers, memory_order_relaxed);   /* under namer_lock */
    bool known = false;
    for (unsigned i = 0; i < n; i++)
        known |= namers[i].entry == entry;
    if (!known && n < NAMERS) {
        namers[n] = (namer){ entry, kind, describe };
        atomic_store_explicit(&nnamers, n + 1, memory_order_release);   /* pairs with weft__task_kind */
    }
    pthread_mutex_unlock(&namer_lock);
}

/* Wait namers: a layer above describes the objects its waiters name
 * (a waiter's `what`), e.g. how far a graph being waited for has got. */
typedef struct wait_namer {
    const char *what;
    weft__describe_fn describe;
} wait_namer;

static wait_namer wait_namers[NAMERS];
static unsigned nwait_namers;

void weft__wait_namer_add(const char *what, weft__describe_fn describe)
{
    pthread_mutex_lock(&namer_lock);
    bool known = false;
    for (unsigned i = 0; i < nwait_namers; i++)
        known |= strcmp(wait_namers[i].what, what) == 0;
    if (!known && nwait_namers < NAMERS)
        wait_namers[nwait_namers++] = (wait_namer){ what, describe };
    pthread_mutex_unlock(&namer_lock);
}

static weft__describe_fn find_wait_namer(const char *what)
{
    weft__describe_fn d = NULL;
    pthread_mutex_lock(&namer_lock);
    for (unsigned i = 0; i < nwait_namers; i++)
        if (strcmp(wait_namers[i].what, what) == 0)
            d = wait_namers[i].describe;
    pthread_mutex_unlock(&namer_lock);
    return d;
}

static namer find_namer(uintptr_t fn)
{
    namer n = { 0 };
    unsigned k = atomic_load_explicit(&nnamers, memory_order_acquire);   /* pairs with the add's release */
    for (unsigned i = 0; i < k; i++)
        if ((uintptr_t)namers[i].entry == fn)
            n = namers[i];
    return n;
}

const char *weft__task_kind(weft_fn fn)
{
    return find_namer((uintptr_t)fn).kind;
}

/* ---- the report's text ------------------------------------------------------ */

/* A growing string through weft's allocator; on failure it keeps what
 * fits and says so at the end. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool truncated;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        if (b->truncated)
            break;
        size_t cap = b->cap ? b->cap * 2 : 2048;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *np = weft__alloc(cap);
        if (!np) {
            b->truncated = true;
            break;
        }
        if (b->p) {
            memcpy(np, b->p, b->len + 1);
            weft__free(b->p, b->cap);
        }
        b->p = np;
        b->cap = cap;
    }
    /* Out of memory: keep what fit. */
    if (b->p && b->cap > b->len + 1)
        b->len = b->cap - 1;
}

static void sb_free(sbuf *b)
{
    if (b->p)
        weft__free(b->p, b->cap);
    *b = (sbuf){ 0 };
}

static double secs(uint64_t ns)
{
    return (double)ns / 1e9;
}

/* Takes l within patience_ns (0: wait as long as it takes). */
static bool spin_lock_for(weft__spin *l, uint64_t patience_ns)
{
    if (!patience_ns) {
        weft__spin_lock(l);
        return true;
    }
    uint64_t until = weft__now_ns() + patience_ns;
    while (!weft__spin_trylock(l)) {
        if (weft__now_ns() > until)
            return false;
        weft__os_yield();
    }
    return true;
}

static bool mutex_lock_for(pthread_mutex_t *m, uint64_t patience_ns)
{
    if (!patience_ns) {
        pthread_mutex_lock(m);
        return true;
    }
    uint64_t until = weft__now_ns() + patience_ns;
    while (pthread_mutex_trylock(m) != 0) {
        if (weft__now_ns() > until)
            return false;
        weft__os_sleep_ns(1000000);
    }
    return true;
}

static void worker_label(weft_sched *s, weft__worker *w, unsigned bound_pos, char *buf, size_t cap)
{
    if (w->bound)
        snprintf(buf, cap, "bound thread %u (id %u%s)", bound_pos, w->index,
                 w->no_help ? ", not helping" : "");
    else
        snprintf(buf, cap, "worker %u", w->index);
    WEFT_UNUSED(s);
}

static void put_task(sbuf *b, weft_fn fn, void *arg, const char *name)
{
    if (!fn) {
        sb_printf(b, "no task (the thread's own code)");
        return;
    }
    if (name) {
        sb_printf(b, "task \"%s\" (fn %p, arg %p)", name, (void *)(uintptr_t)fn, arg);
        return;
    }
    namer n = find_namer((uintptr_t)fn);
    if (n.describe) {
        char desc[512];
        n.describe(arg, desc, sizeof desc);
        sb_printf(b, "%s %s", n.kind, desc);
    } else {
        sb_printf(b, "task fn %p (arg %p)", (void *)(uintptr_t)fn, arg);
    }
}

/* One line per fiber listed on w; returns how many. */
static unsigned put_fibers(weft_sched *s, weft__worker *w, unsigned bound_pos, sbuf *b,
                           uint64_t now, uint64_t patience_ns)
{
    char who[48];
    worker_label(s, w, bound_pos, who, sizeof who);
    if (!spin_lock_for(&w->reg_lock, patience_ns)) {
        sb_printf(b, "  %s: its fiber list is locked; skipped\n", who);
        return 0;
    }
    unsigned n = 0;
    for (weft__blocked *x = w->blocked_list; x; x = x->next, n++) {
        sb_printf(b, "  fiber %p on %s: ", (void *)x->fiber, who);
        if (strcmp(x->what, "sleep") == 0) {
            sb_printf(b, "sleeps");
        } else if (strcmp(x->what, "wait_until") == 0) {
            weft__fstate *st = WEFT_CONTAINER_OF(x, weft__fstate, blk);
            sb_printf(b, "waits on wait_until ctx %p (predicate %p)", (void *)x->obj,
                      (void *)(uintptr_t)st->pred);
        } else if (strcmp(x->what, "fd") == 0 || strcmp(x->what, "child pid") == 0) {
            sb_printf(b, "waits on %s %d", x->what, (int)(intptr_t)x->obj);   /* io.c: the number, not an address */
        } else {
            sb_printf(b, "waits on %s %p", x->what, (void *)x->obj);
            /* The record is listed, so its fiber still waits on obj; the
             * describer keeps obj alive while it reads it. */
            weft__describe_fn describe = find_wait_namer(x->what);
            if (describe) {
                char desc[512];
                describe((void *)x->obj, desc, sizeof desc);
                if (desc[0])
                    sb_printf(b, " (%s)", desc);
            }
        }
        if (x->deadline)
            sb_printf(b, " (%s in %.3f s)", strcmp(x->what, "sleep") == 0 ? "wakes" : "times out",
                      x->deadline > now ? secs(x->deadline - now) : 0.0);
        sb_printf(b, "; runs ");
        put_task(b, x->task_fn, x->task_arg, x->task_name);
        sb_printf(b, "\n");
    }
    weft__spin_unlock(&w->reg_lock);
    return n;
}

static void put_worker(weft_sched *s, weft__worker *w, unsigned bound_pos, sbuf *b)
{
    char who[48];
    worker_label(s, w, bound_pos, who, sizeof who);
    sb_printf(b, "  %s: ", who);
    uintptr_t fn = atomic_load_explicit(&w->run_fn, memory_order_relaxed);    /* relaxed: printed only */
    uintptr_t arg = atomic_load_explicit(&w->run_arg, memory_order_relaxed);  /* relaxed: printed only */
    if (atomic_load_explicit(&w->in_idle, memory_order_relaxed))              /* relaxed: a snapshot */
        sb_printf(b, "parked");
    else if (!w->track)
        sb_printf(b, "active");
    else if (fn && atomic_load_explicit(&w->run_name, memory_order_relaxed))   /* relaxed: printed only; a static string */
        sb_printf(b, "running task \"%s\"", (const char *)atomic_load_explicit(&w->run_name, memory_order_relaxed));
    else if (fn) {
        namer n = find_namer(fn);
        /* Not described: the task may end and its object go meanwhile. */
        if (n.kind)
            sb_printf(b, "running %s %p", n.kind, (void *)arg);
        else
            sb_printf(b, "running task fn %p (arg %p)", (void *)fn, (void *)arg);
    } else {
        sb_printf(b, "looking for work");
    }
    sb_printf(b, "; deque %u, lifo slot %s, inbox %s",
              weft__deque_size(&w->deque),
              atomic_load_explicit(&w->lifo, memory_order_relaxed) ? "full" : "empty",   /* relaxed: a snapshot */
              atomic_load_explicit(&w->inbox, memory_order_relaxed) ? "not empty" : "empty");
    sb_printf(b, "; tasks completed: %" PRIu64 "\n",
              (uint64_t)atomic_load_explicit(&w->completed, memory_order_acquire));   /* pairs with release in run_task */
}

/* The body of a report on s: blocked fibers (if tracked), then workers
 * and queues. Returns the number of fibers listed. */
static unsigned put_state(weft_sched *s, sbuf *b, uint64_t patience_ns)
{
    uint64_t now = weft__now_ns();
    unsigned listed = 0;
    if (!s->track) {
        sb_printf(b, "  (blocked fibers are listed when weft_config.watchdog_ns is set)\n");
    } else {
        for (unsigned i = 0; i < s->nworkers; i++)
            listed += put_fibers(s, &s->workers[i], 0, b, now, patience_ns);
        if (mutex_lock_for(&s->bound_lock, patience_ns)) {
            for (unsigned i = 0; i < s->nbound; i++)
                listed += put_fibers(s, s->bound[i], i, b, now, patience_ns);
            pthread_mutex_unlock(&s->bound_lock);
        }
        if (!listed)
            sb_printf(b, "  no fiber is blocked\n");
    }
    for (unsigned i = 0; i < s->nworkers; i++)
        put_worker(s, &s->workers[i], 0, b);
    if (mutex_lock_for(&s->bound_lock, patience_ns)) {
        for (unsigned i = 0; i < s->nbound; i++)
            put_worker(s, s->bound[i], i, b);
        pthread_mutex_unlock(&s->bound_lock);
    } else {
        sb_printf(b, "  bound threads: their list is locked; skipped\n");
    }
    sb_printf(b, "  global queue: %u tasks\n", weft__inject_size(&s->global));
    if (b->truncated)
        sb_printf(b, "  (out of memory: report cut short)\n");
    return listed;
}

/* Fibers listed over every worker of s. Callable from: the watchdog. */
static unsigned count_blocked(weft_sched *s)
{
    unsigned n = 0;
    for (unsigned i = 0; i < s->nworkers; i++) {
        weft__worker *w = &s->workers[i];
        weft__spin_lock(&w->reg_lock);
        n += w->nblocked;
        weft__spin_unlock(&w->reg_lock);
    }
    pthread_mutex_lock(&s->bound_lock);
    for (unsigned i = 0; i < s->nbound; i++) {
        weft__worker *w = s->bound[i];
        weft__spin_lock(&w->reg_lock);
        n += w->nblocked;
        weft__spin_unlock(&w->reg_lock);
    }
    pthread_mutex_unlock(&s->bound_lock);
    return n;
}

/* Tasks completed so far, bound threads (present and past) included; it
 * only grows. Callable from: any thread. */
static uint64_t count_completed(weft_sched *s)
{
    uint64_t done = 0;
    for (unsigned i = 0; i < s->nworkers; i++)
        done += atomic_load_explicit(&s->workers[i].completed, memory_order_acquire);   /* pairs with release in run_task */
    pthread_mutex_lock(&s->bound_lock);
    for (unsigned i = 0; i < s->nbound; i++)
        done += atomic_load_explicit(&s->bound[i]->completed, memory_order_acquire);
    done += s->retired_completed;
    pthread_mutex_unlock(&s->bound_lock);
    return done;
}

/* ---- dumps ------------------------------------------------------------------ */

static void dump(weft_sched *s, FILE *out, uint64_t patience_ns)
{
    sbuf b = { 0 };
    sb_printf(&b, "weft: scheduler %p (%u workers):\n", (void *)s, s->nworkers);
    put_state(s, &b, patience_ns);
    if (b.p)
        fputs(b.p, out);
    fflush(out);
    sb_free(&b);
}

void weft__sched_dump(weft_sched *s, FILE *out)
{
    dump(s, out, 0);
}

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_sched *live_head;

/* fork(2): live_lock and namer_lock are process-wide; a thread the child
 * does not have (a scheduler being made or destroyed, a stall report, a
 * layer adding its namer) could hold one at the fork, and the child's
 * first weft_sched_create would wait for it for ever. They are taken
 * around fork in the documented order (live_lock, then namer_lock: see the
 * top), so the child inherits both free and the lists whole. The parent's
 * schedulers stay on the child's live list: their threads are gone, and
 * weft.h says a child may not use them (a dump would still name them). */
static void live_fork_prepare(void)
{
    pthread_mutex_lock(&live_lock);
    pthread_mutex_lock(&namer_lock);
}

static void live_fork_release(void)
{
    pthread_mutex_unlock(&namer_lock);
    pthread_mutex_unlock(&live_lock);
}

__attribute__((constructor)) static void live_fork_register(void)
{
    (void)weft__os_atfork(live_fork_prepare, live_fork_release, live_fork_release);   /* as alloc.c's */
}

void weft__sched_dump_all(FILE *out)
{
    /* On a hang: any lock might be the stuck one, so none is waited on
     * for long. */
    const uint64_t patience = 200000000;   /* 200 ms */
    if (!mutex_lock_for(&live_lock, 5 * patience)) {
        fprintf(out, "weft: the list of schedulers is locked; no dump\n");
        fflush(out);
        return;
    }
    if (!live_head)
        fprintf(out, "weft: no scheduler is alive\n");
    for (weft_sched *s = live_head; s; s = s->live_next)
        dump(s, out, patience);
    pthread_mutex_unlock(&live_lock);
    fflush(out);
}

/* ---- the watchdog ----------------------------------------------------------- */

typedef struct weft__watchdog {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;             /* the default (wall) clock */
    bool stop;                       /* under lock */
} weft__watchdog;

/* true if a report went out. Callable from: the watchdog. */
static bool report_stall(weft_sched *s, uint64_t stalled_ns, unsigned blocked)
{
    sbuf b = { 0 };
    sb_printf(&b, "weft: stall: no task has completed for %.3f s and %u fiber%s blocked "
                  "(scheduler %p, %u workers):\n",
              secs(stalled_ns), blocked, blocked == 1 ? " is" : "s are", (void *)s, s->nworkers);
    unsigned listed = put_state(s, &b, 0);
    /* Nothing listed any more: it ended while we looked; not a stall. */
    bool sent = listed && b.p;
    if (sent) {
        if (s->cfg.on_stall) {
            s->cfg.on_stall(b.p, s->cfg.hook_ctx);
        } else {
            fputs(b.p, stderr);
            fflush(stderr);
        }
    }
    sb_free(&b);
    return sent;
}

static void *watchdog_main(void *arg)
{
    weft_sched *s = arg;
    weft__watchdog *wd = s->watchdog;
    const uint64_t period = s->cfg.watchdog_ns;
    uint64_t tick = period / 4;
    if (tick > 1000000000u)
        tick = 1000000000u;
    uint64_t seen = count_completed(s);
    uint64_t since = weft__now_ns();
    bool reported = false;

    pthread_mutex_lock(&wd->lock);
    while (!wd->stop) {
        /* The default (wall) clock's deadline, as blocking_pool.c's:
         * winpthreads refuses CLOCK_MONOTONIC for a condition variable, and
         * a monotonic deadline read as a wall one lies in 1970, which made
         * this loop spin on Windows. A wall clock step only moves one tick. */
        uint64_t due = weft__os_wall_ns() + tick;
        struct timespec ts = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };
        while (!wd->stop && pthread_cond_timedwait(&wd->cond, &wd->lock, &ts) != ETIMEDOUT)
            ;
        if (wd->stop)
            break;
        pthread_mutex_unlock(&wd->lock);

        uint64_t done = count_completed(s);
        unsigned blocked = count_blocked(s);
        uint64_t now = weft__now_ns();
        if (done != seen || blocked == 0) {
            /* Progress, or nobody waits: any stall starts from here. */
            seen = done;
            since = now;
            reported = false;
        } else if (!reported && now - since >= period) {
            reported = report_stall(s, now - since, blocked);
        }
        pthread_mutex_lock(&wd->lock);
    }
    pthread_mutex_unlock(&wd->lock);
    return NULL;
}

static void watchdog_free(weft_sched *s, weft__watchdog *wd)
{
    pthread_cond_destroy(&wd->cond);
    pthread_mutex_destroy(&wd->lock);
    weft__free_with(&s->cfg.allocator, wd, sizeof *wd);
}

int weft__stall_start(weft_sched *s)
{
    if (s->cfg.watchdog_ns) {
        weft__watchdog *wd = weft__calloc_with(&s->cfg.allocator, sizeof *wd);
        if (!wd)
            return WEFT_ENOMEM;
        pthread_mutex_init(&wd->lock, NULL);
        pthread_cond_init(&wd->cond, NULL);   /* the default clock: see watchdog_main */
        s->watchdog = wd;
        if (weft__os_thread_start(&wd->thread, watchdog_main, s, "weft-watchdog") != 0) {
            s->watchdog = NULL;
            watchdog_free(s, wd);
            return WEFT_ENOMEM;
        }
    }
    pthread_mutex_lock(&live_lock);
    s->live_prev = NULL;
    s->live_next = live_head;
    if (live_head)
        live_head->live_prev = s;
    live_head = s;
    pthread_mutex_unlock(&live_lock);
    return WEFT_OK;
}

void weft__stall_stop(weft_sched *s)
{
    pthread_mutex_lock(&live_lock);
    if (s->live_prev)
        s->live_prev->live_next = s->live_next;
    else
        live_head = s->live_next;
    if (s->live_next)
        s->live_next->live_prev = s->live_prev;
    pthread_mutex_unlock(&live_lock);

    weft__watchdog *wd = s->watchdog;
    if (!wd)
        return;
    pthread_mutex_lock(&wd->lock);
    wd->stop = true;
    pthread_cond_signal(&wd->cond);
    pthread_mutex_unlock(&wd->lock);
    weft__os_thread_join(wd->thread);
    s->watchdog = NULL;
    watchdog_free(s, wd);
}

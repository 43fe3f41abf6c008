/* This file is private to weft: what stall reports say about graphs. A
 * blocked graph task is named, and followed by what its run has failed
 * and skipped so far (also for the graphs it runs inside as a module); a
 * graph that a fiber waits for (weft_graph_wait) is followed by the same.
 * Core knows nothing of graphs: it calls back through the two namer hooks
 * (weft__task_namer_add for tasks whose record function is
 * weft__node_entry, weft__wait_namer_add for waits on "graph"), which
 * graph.c registers once.
 *
 * A failure is shown as the task's name and its code:
 *     task "link" (failed: ETIMEDOUT, -6)
 * (the code's name when it is one of weft's, which a user's -errno may
 * share, so the number is always there too). Only the first failure of a
 * run has a known code (weft_graph_failed_task); others count as failed.
 *
 * Synchronization
 *   Both describers run on the reporting thread, under the reg_lock of
 *   the worker on which the fiber is listed; every lock they take is
 *   waited for a bounded time (DESCRIBE_PATIENCE_NS): a report must come
 *   even when the graph is stuck holding its lock.
 *   A task: its fiber is blocked in it, so its run is in flight and the
 *   task and its graph stay (the fiber cannot resume past its unlisting
 *   while the reg_lock is held); so do the graphs that run it as a module
 *   (module.c: an outer run stays in flight while its module runs). A
 *   module's parent is read under the sub graph's lock, and the parent's
 *   lock is taken after that one is released: never child before parent.
 *   A waited graph: a waiter stays listed until its fiber resumes, after
 *   the run's end has woken it, and by then the graph may be destroyed
 *   (weft.h allows that at once). So graphs that tracked fibers wait for
 *   are kept in a list (`listed`), under listed_lock: weft_graph_wait adds
 *   g before it blocks (once; the flag is set under the lock, a relaxed
 *   load skips the lock after), weft_graph_destroy removes it before it
 *   frees g, and the describer reads g only while it holds listed_lock
 *   and has found g in the list. Lock order: reg_lock -> listed_lock ->
 *   a graph's lock; destroy takes listed_lock with no graph lock held.
 *   Counts are read from each task's state (weft_task_state) under
 *   the graph's lock: a snapshot, each task's taken at its own moment.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"

/* How long a report waits for a lock (see above). During a run a graph's
 * lock is held only briefly: by waits, renames, a dump's rendering and
 * the end of the run. */
#define DESCRIBE_PATIENCE_NS ((uint64_t)10 * 1000 * 1000)
/* States read per graph, at most: a report holds a worker's reg_lock. */
#define SCAN_MAX ((uint32_t)1 << 20)
/* The characters of a name shown, at most: a report line is 512 bytes. */
#define NAME_SHOWN 40

/* ---- text into a fixed buffer --------------------------------------------- */

typedef struct line {
    char *p;
    size_t len, cap;                /* cap >= 1; p[len] == '\0'; cut short when full */
} line;

static void say(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(line *l, const char *fmt, ...)
{
    if (l->len + 1 >= l->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->len = (size_t)k < l->cap - l->len ? l->len + (size_t)k : l->cap - 1;
}

/* Task i of g as "name" (control characters as '?', cut to NAME_SHOWN)
 * or #i. Caller holds g's lock. */
static void say_task(line *l, const weft_graph *g, uint32_t i)
{
    const char *name = g->names && i < g->names_cap ? g->names[i] : NULL;
    if (!name) {
        say(l, "#%u", i);
        return;
    }
    char shown[NAME_SHOWN + 4];
    size_t n = 0;
    for (; *name && n < NAME_SHOWN; name++)
        shown[n++] = (unsigned char)*name < 0x20 || *name == 0x7f ? '?' : *name;
    if (*name)
        for (int k = 0; k < 3; k++)
            shown[n++] = '.';
    shown[n] = '\0';
    say(l, "\"%s\"", shown);
}

/* A failure word's code: a user's (weft_task_fail) as a plain number,
 * "code -5", never by a weft name it may happen to equal; weft's by its
 * name, "EINVAL, -1". */
static void say_code(line *l, uint64_t fail)
{
    int err = weft__fail_code(fail);
    const char *name = weft_err_name(err);
    if (!(fail & WEFT__FAIL_USER) && strcmp(name, "UNKNOWN") != 0)
        say(l, "%s, %d", name, err);
    else
        say(l, "code %d", err);
}

/* What g's run has failed and skipped so far: "F failed, S skipped so
 * far" and the first failure, "; first failure: task "x" (failed: CODE)".
 * all: also when nothing failed or was skipped (else nothing is said and
 * false returned). Caller holds g's lock. */
static bool say_failures(line *l, const weft_graph *g, bool all)
{
    uint32_t failed = 0, skipped = 0, n = g->n < SCAN_MAX ? g->n : SCAN_MAX;
    for (uint32_t i = 0; i < n; i++) {
        weft_task_status st = weft_task_state(weft__graph_node(g, i));
        failed += st == WEFT_TASK_FAILED;
        skipped += st == WEFT_TASK_SKIPPED;
    }
    /* Written by the failing visit, the code first (run.c: fail_task):
     * the index may lag it by a moment. Relaxed: printed only. */
    uint64_t err = atomic_load_explicit(&((weft_graph *)g)->fail_err, memory_order_relaxed);
    uint32_t first = atomic_load_explicit(&((weft_graph *)g)->failed, memory_order_relaxed);
    if (!all && !failed && !skipped && !err)
        return false;
    say(l, "%u failed, %u skipped so far", failed, skipped);
    if (n < g->n)
        say(l, " in its first %u tasks", n);
    if (err) {
        say(l, "; first failure: ");
        if (first != WEFT__NO_TASK && first < g->n) {
            say(l, "task ");
            say_task(l, g, first);
            say(l, " (failed: ");
        } else {
            say(l, "a task (failed: ");
        }
        say_code(l, err);
        say(l, ")");
    }
    return true;
}

/* ---- a blocked graph task ---------------------------------------------------- */

/* The task's name in quotes (control characters as '?') or its number,
 * its and its graph's addresses, then what its run has failed or
 * skipped so far if anything, and for a module's graph the same of the
 * graphs it runs inside: "#N, name not read: graph busy" if g's lock was
 * not had in time. Callable from: a report, under the reg_lock of the
 * worker on which a fiber blocked inside t (see above). */
void weft__report_task(void *arg, char *buf, size_t cap)
{
    weft_task *t = arg;
    weft_graph *g = t->g;
    line l = { buf, 0, cap };
    if (!cap)
        return;
    buf[0] = '\0';
    if (!weft__graph_lock_for(g, DESCRIBE_PATIENCE_NS)) {
        say(&l, "#%u, name not read: graph busy (task %p of graph %p)", t->index, (void *)t, (void *)g);
        return;
    }
    say_task(&l, g, t->index);
    say(&l, " (task %p of graph %p", (void *)t, (void *)g);
    size_t mark = l.len;
    say(&l, ": ");
    if (!say_failures(&l, g, false))
        l.len = mark, buf[mark] = '\0';   /* nothing to say */
    const weft_task *m = weft__graph_up(g);   /* a module's, or a subflow's (subflow.c) */
    weft__graph_unlock(g);
    say(&l, ")");
    /* Up the modules it runs in: each outer run is in flight while its
     * module's is, so each task and graph stays. */
    for (unsigned depth = 0; m && depth < WEFT__MODULE_DEPTH; depth++) {
        weft_graph *outer = m->g;
        if (!weft__graph_lock_for(outer, DESCRIBE_PATIENCE_NS)) {
            say(&l, "; in a module of graph %p (busy)", (void *)outer);
            return;
        }
        say(&l, weft__is_subflow(outer, m) ? "; in subflow " : "; in module ");
        say_task(&l, outer, m->index);
        say(&l, " of graph %p", (void *)outer);
        mark = l.len;
        say(&l, " (");
        if (say_failures(&l, outer, false))
            say(&l, ")");
        else
            l.len = mark, buf[mark] = '\0';
        m = weft__graph_up(outer);
        weft__graph_unlock(outer);
    }
}

/* ---- a waited graph ---------------------------------------------------------- */

static pthread_mutex_t listed_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_graph *listed_head;     /* under listed_lock */

/* fork(2): listed_lock is process-wide; a thread the child does not have
 * (a waiter listing its graph, a destroy unlisting one) could hold it at
 * the fork, and the child's first weft_graph_wait would wait for it for
 * ever. Taken around fork, so the child inherits it free and the list
 * whole. Nothing waits for another process-wide lock while holding it
 * (a report takes it with patience, under the core's locks). */
static void listed_fork_prepare(void)
{
    pthread_mutex_lock(&listed_lock);
}

static void listed_fork_release(void)
{
    pthread_mutex_unlock(&listed_lock);
}

__attribute__((constructor)) static void listed_fork_register(void)
{
    (void)weft__os_atfork(listed_fork_prepare, listed_fork_release, listed_fork_release);   /* as block_cache.c's */
}

void weft__report_list(weft_graph *g)
{
    if (atomic_load_explicit(&g->listed, memory_order_relaxed))   /* relaxed: set once under listed_lock; a stale false takes the lock */
        return;
    pthread_mutex_lock(&listed_lock);
    if (!atomic_load_explicit(&g->listed, memory_order_relaxed)) {   /* under listed_lock */
        g->listed_prev = NULL;
        g->listed_next = listed_head;
        if (listed_head)
            listed_head->listed_prev = g;
        listed_head = g;
        atomic_store_explicit(&g->listed, true, memory_order_relaxed);   /* under listed_lock */
    }
    pthread_mutex_unlock(&listed_lock);
}

void weft__report_unlist(weft_graph *g)
{
    /* A wait that listed g happened before this destroy (weft.h: none may
     * race it), so the flag is seen. */
    if (!atomic_load_explicit(&g->listed, memory_order_relaxed))
        return;
    pthread_mutex_lock(&listed_lock);   /* waits out a describer reading g */
    if (g->listed_prev)
        g->listed_prev->listed_next = g->listed_next;
    else
        listed_head = g->listed_next;
    if (g->listed_next)
        g->listed_next->listed_prev = g->listed_prev;
    atomic_store_explicit(&g->listed, false, memory_order_relaxed);   /* under listed_lock */
    pthread_mutex_unlock(&listed_lock);
}

static bool listed_lock_for(uint64_t patience_ns)
{
    uint64_t until = weft__now_ns() + patience_ns;
    while (pthread_mutex_trylock(&listed_lock) != 0) {
        if (weft__now_ns() > until)
            return false;
        weft__os_sleep_ns(100 * 1000);
    }
    return true;
}

/* What the run of graph arg (waited for) has failed and skipped so far;
 * nothing if g is not listed (its waiter is not a tracked fiber, or g is
 * being destroyed). Callable from: a report, under the reg_lock of the
 * worker on which the waiting fiber is listed. */
void weft__report_wait(void *arg, char *buf, size_t cap)
{
    line l = { buf, 0, cap };
    if (!cap)
        return;
    buf[0] = '\0';
    if (!listed_lock_for(DESCRIBE_PATIENCE_NS)) {
        say(&l, "not described: busy");
        return;
    }
    weft_graph *g = listed_head;
    while (g && g != arg)
        g = g->listed_next;
    if (g) {
        /* Found under listed_lock: g stays until we let go of it. */
        if (weft__graph_lock_for(g, DESCRIBE_PATIENCE_NS)) {
            say_failures(&l, g, true);
            weft__graph_unlock(g);
        } else {
            say(&l, "not described: graph busy");
        }
    }
    pthread_mutex_unlock(&listed_lock);
}

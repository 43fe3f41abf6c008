/* This file is private to weft: what a build tool's jobs need: child
 * processes started off the worker (weft_proc_spawn, weft_proc_run_for),
 * waits for signals (weft_signal_block, weft_signal_wait_for), and spawned
 * tasks behind a semaphore (weft_spawn_opts.sem, its own part below).
 *
 * Synchronization
 *   Processes and signals: nothing shared of their own. A spawn from a
 *   task hands its arguments to a blocking-pool thread through
 *   weft_call_blocking, which returns only once the call has (the pool's
 *   queue orders the hand-over both ways). The set of blocked signals is
 *   the OS seam's (sig_blocked, linux.c).
 *   Jobs behind a semaphore: see "Spawned tasks behind a semaphore".
 *
 * Why the blocking pool: posix_spawn returns only once the child has
 * exec'd (glibc's clone with CLONE_VFORK: the parent thread is stopped
 * until then), 1 ms typically and tens of ms when the machine is busy.
 * On the worker that stall holds every task queued behind the spawner;
 * on a pool thread it holds only that thread, and the task's fiber is
 * suspended as for any blocking call. Many spawns at once use many pool
 * threads (up to weft_config.blocking_threads), each stalled on its own
 * child. A plain thread spawns on itself: it would sleep meanwhile anyway.
 *
 * Signals: weft_signal_block blocks them in the caller and records them
 * (linux.c) so that every thread weft starts blocks them too; a wait
 * opens a signalfd for its set and waits for it to be readable as for
 * any descriptor (weft_fd_wait_for), then takes one signal. No handler
 * is installed, so nothing runs in signal context, and a sanitizer that
 * defers handlers (TSAN) does not delay the wait. A signalfd per wait
 * costs one descriptor and three syscalls, nothing next to a signal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#if defined(_WIN32) && !defined(SIGKILL)
#define SIGKILL 9   /* the CRT has none: weft__os_proc_kill's "end it" (windows.c) */
#endif

#include "extspawn.h"
#include "io.h"
#include "park.h"
#include "pin.h"
#include "sem.h"
#include "task.h"
#include "worker.h"

/* ---- spawn -------------------------------------------------------------------------- */

typedef struct spawn_call {
    const weft_proc_spec *spec;
    int pid;
    int err;   /* 0 or -errno, weft__os_proc_spawn's */
} spawn_call;

/* On a pool thread (or the caller, from a plain thread). */
static void spawn_here(void *arg)
{
    spawn_call *c = arg;
    c->err = weft__os_proc_spawn(c->spec, &c->pid);
}

static bool spec_ok(const weft_proc_spec *spec)
{
    if (!spec->argv || !spec->argv[0] || spec->pgroup < WEFT_PROC_NEW_GROUP)
        return false;
#if defined(_WIN32)
    if (spec->pgroup > 0)
        return false;   /* joining a group: no counterpart on Windows (weft/proc.h) */
#endif
    for (int i = 0; i < 3; i++) {
        const weft_proc_redirect *r = &spec->stdio[i];
        if ((unsigned)r->kind > WEFT_PROC_NULL || (r->kind == WEFT_PROC_FD && r->fd < 0) ||
            (r->kind == WEFT_PROC_PATH && !r->path))
            return false;
    }
    return true;
}

int weft_proc_spawn(weft_sched *s, const weft_proc_spec *spec, int *pid, int *pidfd)
{
    if (!s || !spec || !pid || !spec_ok(spec))
        return WEFT_EINVAL;
    spawn_call c = { .spec = spec };
    if (weft__tls_worker) {
        int rc = weft_call_blocking(s, spawn_here, &c);
        if (rc != WEFT_OK)
            return rc;
    } else {
        if (!weft__outside_enter(s))   /* the outside rule, as weft_call_blocking's */
            return WEFT_ESHUTDOWN;
        spawn_here(&c);
        weft__outside_leave(s);
    }
    if (c.err)
        return c.err == -ENOMEM || c.err == -EAGAIN ? WEFT_ENOMEM : WEFT_ENOEXEC;
    *pid = c.pid;
    if (pidfd) {
#if defined(_WIN32)
        *pidfd = -1;   /* no pidfd: the process ID is the handle's stand-in (weft/proc.h) */
#else
        int fd = weft__os_child_handle(c.pid);   /* the child is ours and not reaped: it names it */
        *pidfd = fd >= 0 ? fd : -1;
#endif
    }
    return WEFT_OK;
}

int weft_proc_run_for(weft_sched *s, const weft_proc_spec *spec, int *status, uint64_t timeout_ns)
{
    int pid;
    int rc = weft_proc_spawn(s, spec, &pid, NULL);
    if (rc != WEFT_OK)
        return rc;
    rc = weft_pid_wait_for(pid, status, timeout_ns);
    if (rc == WEFT_OK || rc == WEFT_EINVAL)
        return rc;   /* EINVAL: another wait reaped it first */
    /* Timed out, or cut short (ENOMEM, ESHUTDOWN): the child is killed and
     * reaped, so that no wait of ours leaves one behind. The reap blocks
     * this thread for as long as a killed process takes to end. */
    if (spec->pgroup == WEFT_PROC_NEW_GROUP)
        weft__os_proc_kill(-pid, SIGKILL);
    weft__os_proc_kill(pid, SIGKILL);
    while (weft__os_child_reap(pid, status) == 0)
        weft__os_sleep_ns(100000);
    return rc;
}

/* ---- signals ------------------------------------------------------------------------ */

int weft_signal_block(uint64_t sigs)
{
    if (sigs == 0)
        return WEFT_EINVAL;
    return weft__os_signal_block(sigs) == 0 ? WEFT_OK : WEFT_EINVAL;
}

int weft_signal_wait_for(uint64_t sigs, uint64_t timeout_ns)
{
    if (sigs == 0 || (sigs & ~weft__os_signal_blocked()))
        return WEFT_EINVAL;
    int fd = weft__os_signal_open(sigs);
    if (fd < 0)
        return fd == -EINVAL ? WEFT_EINVAL : WEFT_ENOMEM;
    uint64_t deadline = weft__deadline(timeout_ns);
    int rc;
    for (;;) {
        int got = weft__os_signal_take(fd);
        if (got != 0) {
            rc = got > 0 ? got : WEFT_EINVAL;   /* < 0: a read of a signalfd that cannot fail did */
            break;
        }
        uint64_t left = timeout_ns;
        if (deadline) {
            uint64_t now = weft__now_ns();
            left = deadline > now ? deadline - now : 0;
        }
        if (left == 0) {
            rc = WEFT_ETIMEDOUT;
            break;
        }
        /* Readable: a signal of the set is pending. Another waiter may
         * take it first; then the take above finds none and this waits
         * again with the time left. A wait that ends at its timeout takes
         * one last look, as the fd wait's own does. */
        rc = weft_fd_wait_for(fd, WEFT__OS_IN, left);
        if (rc < 0) {
            got = rc == WEFT_ETIMEDOUT ? weft__os_signal_take(fd) : 0;
            if (got > 0)
                rc = got;
            break;
        }
    }
    weft__os_close(fd);
    return rc;
}

/* ---- spawned tasks behind a semaphore ------------------------------------------------
 *
 * weft_spawn_opts.sem: a task that waits for its unit holding no fiber,
 * as graph tasks do with weft_task_set_semaphore.
 *
 * A job is a task record and a small record of its own (a `job`, below)
 * that waits on the semaphore's FIFO as a record waiter (sem.h): no fiber,
 * no worker, no queue slot. The task record is taken at the spawn, so
 * that nothing can fail once the unit is granted; its fn is job_run, which
 * runs the user's fn and then gives the unit back.
 *
 *   1. spawn    take a task record and a job; count the task as spawned
 *               (weft__count_spawn: wait_idle and destroy now wait for
 *               it); weft__sem_take_or_queue.
 *   2. unit     TAKEN: queue the task now (step 3). QUEUED: the release
 *               that hands the job a unit calls grant, on the releasing
 *               thread, which does step 3.
 *   3. queue    push the record on the global ring (or its priority's),
 *               without counting it again, then the StoreLoad fence and
 *               the park check of any global push (weft__submit_global).
 *   4. run      job_run frees the job, runs fn, releases the unit: the
 *               release may grant the next job (step 2 on this thread).
 *
 * Why counted at the spawn and not at the queueing: a job waiting for a
 * unit is work the scheduler has not done; counted only when queued,
 * weft_sched_wait_idle could return (and destroy go on) while jobs still
 * wait, and a grant could then touch a freed scheduler. Counted at the
 * spawn, the job keeps s alive until its task completes, and every grant
 * of a job of s comes from a release made before that, so s is valid
 * for it. The idle test's proof (task.c) holds as for any spawn: the
 * count comes first, and the completion is the task record's.
 *
 * Synchronization of this part
 *   job         written by the spawner before take_or_queue; the
 *               semaphore's lock orders it before grant on the releasing
 *               thread; the global ring's push orders it before job_run.
 *   prio_used   as in pin.c (a hint, relaxed).
 *   Nothing else of its own: the semaphore's queue is sem.c's, the rings
 *   are global_ring.c's.
 */
typedef struct job {
    weft__sem_rec rec;    /* on the semaphore's FIFO while it waits */
    weft_sched *s;
    weft_sem *sem;
    weft__task *t;        /* its task record: fn job_run, arg the job */
    weft_fn fn;
    void *arg;
    int prio;
} job;

/* Step 4, on a worker: the user's fn, then the unit back. */
static void job_run(void *arg)
{
    job *j = arg;
    weft_sched *s = j->s;
    weft_sem *sem = j->sem;
    weft_fn fn = j->fn;
    void *a = j->arg;
    weft__free_with(&s->cfg.allocator, j, sizeof *j);
    fn(a);
    weft_sem_release(sem);   /* may grant the next job: its step 3 runs here */
}

/* Step 3: queues a task counted already, from any thread. */
static void queue_counted(weft_sched *s, weft__task *t, int prio)
{
    weft__inject *q = &s->global;
    if (prio != WEFT_PRIORITY_NORMAL) {
        if (!atomic_load_explicit(&s->prio_used, memory_order_relaxed))
            atomic_store_explicit(&s->prio_used, true, memory_order_relaxed);   /* a hint (pin.c) */
        q = prio == WEFT_PRIORITY_HIGH ? &s->prio_high : &s->prio_low;
    }
    WEFT_TSAN_RELEASE(t);
    weft__inject_push(q, &t->node);
    atomic_thread_fence(memory_order_seq_cst);   /* StoreLoad: as after a global push in weft__submit_global */
    if (weft__notify_check(s))
        weft__notify_slow(s);
}

/* Step 2, QUEUED: a release handed the job a unit. Callable from: the
 * releasing thread, any thread, after its last access to the semaphore.
 * The job is counted as spawned, so s is valid (see the essay). */
static void grant(weft__sem_rec *r)
{
    job *j = WEFT_CONTAINER_OF(r, job, rec);
    queue_counted(j->s, j->t, j->prio);
}

int weft__spawn_sem(weft_sched *s, weft_fn fn, void *arg, const weft_spawn_opts *o)
{
    weft__worker *w = weft__tls_worker;
    if (w && w->s != s)
        w = NULL;
    if (!w && !weft__outside_enter(s))   /* the outside rule, as weft_spawn's */
        return WEFT_ESHUTDOWN;
    int rc = WEFT_ENOMEM;
    weft__task *t = weft__task_alloc(s, w);
    job *j = t ? weft__alloc_with(&s->cfg.allocator, sizeof *j) : NULL;
    if (!j) {
        if (t)
            weft__task_free(s, w, t);
        goto out;
    }
    *j = (job){ .s = s, .sem = o->sem, .t = t, .fn = fn, .arg = arg, .prio = (int)o->priority };
    j->rec.grant = grant;
    t->fn = job_run;
    t->arg = j;
    t->spawner = NULL;   /* never run inline by a waiting spawner: it may not have its unit */
    t->flags &= WEFT__TASK_POOLED;
    if (o->name) {
        t->flags |= WEFT__TASK_NAMED;
        t->data[0] = (uint64_t)(uintptr_t)o->name;
    }
    weft__count_spawn(s, w);   /* step 1: before the unit can be granted */
    if (weft__sem_take_or_queue(o->sem, &j->rec) == WEFT__SEM_TAKEN)
        queue_counted(s, t, j->prio);
    rc = WEFT_OK;
out:
    if (!w)
        weft__outside_leave(s);
    return rc;
}

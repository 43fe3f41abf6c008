/* This file is private to weft: child processes started off the worker
 * (weft_proc_spawn, weft_proc_run_for) and waits for signals
 * (weft_signal_block, weft_signal_wait_for).
 *
 * Synchronization
 *   Nothing shared of its own. A spawn from a task hands its arguments to
 *   a blocking-pool thread through weft_call_blocking, which returns only
 *   once the call has (the pool's queue orders the hand-over both ways).
 *   The set of blocked signals is the OS seam's (sig_blocked, linux.c).
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

#include "extspawn.h"
#include "io.h"
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
        int fd = weft__os_child_handle(c.pid);   /* the child is ours and not reaped: it names it */
        *pidfd = fd >= 0 ? fd : -1;
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
        return rc == WEFT_OK ? WEFT_OK : WEFT_ENOEXEC;   /* EINVAL: reaped by someone else */
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

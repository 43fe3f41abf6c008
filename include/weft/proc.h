/*
 * weft/proc.h: Child processes started off the worker, and waits for signals.
 *
 * A task starts a command with weft_proc_spawn: the fork and exec run on a
 * thread of the scheduler's blocking pool while the task's fiber is
 * suspended, so the worker goes on with other tasks; the child is then
 * awaited with weft_pid_wait_for (weft/io.h). Signals a program wants to
 * handle (Ctrl-C, SIGTERM) are blocked with weft_signal_block and waited
 * for by a task with weft_signal_wait_for, which reads them from a
 * signalfd: no handler runs, so a wait sees a signal at once, sanitizers
 * included. Children started here get the signal mask and dispositions
 * back as they were before weft_signal_block.
 * Windows: spawn is CreateProcessW (argv joined and quoted by the C
 * runtime's rules, a pid is the process ID kept valid until a wait sees
 * it end, status the exit code, *pidfd -1, WEFT_PROC_FD a CRT descriptor,
 * WEFT_PROC_NULL is NUL, WEFT_PROC_NEW_GROUP a job object, pgroup > 0
 * WEFT_EINVAL, a timeout's kill TerminateProcess with exit code 1); no
 * signals: weft_signal_block and weft_signal_wait_for return WEFT_EINVAL.
 * See docs/reference/proc.md for the blocking pool's part, redirections,
 * process groups, which threads must block the signals, and cancelling a
 * build from a signal.
 * Part of weft.h, the header users include; includable alone.
 */
#ifndef WEFT_PUBLIC_PROC_H
#define WEFT_PUBLIC_PROC_H

#include "defs.h"
#include "errors.h"

WEFT_BEGIN_DECLS

/** What a child's stdin, stdout or stderr is (weft_proc_redirect.kind). */
typedef enum weft_proc_io {
    WEFT_PROC_INHERIT = 0,  /**< the caller's descriptor (the default) */
    WEFT_PROC_FD,           /**< a duplicate of .fd (dup2: 1 for stderr
                                 after stdout's redirection is 2>&1) */
    WEFT_PROC_PATH,         /**< the file .path: read for stdin; for
                                 stdout and stderr written, made if
                                 missing, truncated unless .append */
    WEFT_PROC_NULL          /**< /dev/null */
} weft_proc_io;

/** One of a child's three standard descriptors. */
typedef struct weft_proc_redirect {
    weft_proc_io kind;      /**< INHERIT */
    int fd;                 /**< FD: the caller's descriptor (>= 0) */
    const char *path;       /**< PATH: the file */
    bool append;            /**< PATH, for stdout and stderr: append */
} weft_proc_redirect;

/** weft_proc_spec.pgroup: the child leads a new process group. */
#define WEFT_PROC_NEW_GROUP (-1)

/** A command to start; all zero but argv = argv[0] found on PATH, the
 * caller's environment, directory, descriptors and process group. */
typedef struct weft_proc_spec {
    const char *const *argv;   /**< the arguments, NULL-terminated; argv[0]
                                    is looked up on PATH unless it holds a
                                    '/' */
    const char *const *envp;   /**< the environment, NULL-terminated; NULL:
                                    the caller's */
    const char *cwd;           /**< the child's directory; NULL: the caller's */
    weft_proc_redirect stdio[3];   /**< stdin, stdout, stderr, in that order */
    int pgroup;                /**< 0: the caller's group; > 0: joins that
                                    group; WEFT_PROC_NEW_GROUP: leads a new
                                    one (kill(-pid, sig) then reaches it and
                                    its own children) */
} weft_proc_spec;

/** A signal's bit in the masks below: WEFT_SIG(SIGINT) | WEFT_SIG(SIGTERM).
 * sig from 1 to 64. */
#define WEFT_SIG(sig) (UINT64_C(1) << ((sig) - 1))

/** Starts the command spec describes as a child process, the fork and
 * exec on a thread of s's blocking pool (from a plain thread: on the
 * caller); `*pid` gets its process id (an int: a pid_t on POSIX), to be
 * awaited with weft_pid_wait_for. pidfd NULL: none wanted; else `*pidfd`
 * gets a descriptor for the child (Linux pidfd, close-on-exec; the caller
 * closes it) or -1 where the kernel has none. The child's signal mask and
 * dispositions are those the caller had before weft_signal_block.
 * Returns WEFT_OK, WEFT_EINVAL (s, spec, argv, argv[0] or pid NULL; a
 * redirection's kind out of range, FD with fd < 0, PATH with path NULL;
 * pgroup below -1), WEFT_ENOEXEC (the command could not be started: not
 * found, not executable, a redirection's file or cwd could not be opened;
 * no child is left), WEFT_ENOMEM (out of memory, processes or a pool
 * thread), WEFT_ESHUTDOWN (s is being destroyed and the caller is not one
 * of its threads). Nothing is started on failure.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_proc_spawn(weft_sched *s, const weft_proc_spec *spec, int *pid, int *pidfd);

/** weft_proc_spawn, then weft_pid_wait_for: `*status` (may be NULL) gets
 * the wait status. At the timeout the child is killed (SIGKILL, its group
 * too when it leads one) and reaped, and WEFT_ETIMEDOUT is returned.
 * Errors as weft_proc_spawn's, WEFT_EINVAL also when another wait reaped
 * the child first, and WEFT_ESHUTDOWN from a task of s while s is being
 * destroyed (the child is killed and reaped first).
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_proc_run_for(weft_sched *s, const weft_proc_spec *spec, int *status,
                                uint64_t timeout_ns);

/** Blocks the signals of sigs (WEFT_SIG bits) in the calling thread and
 * in every thread weft starts from now on (workers, the blocking pool,
 * timers), adding them to those blocked before, so that they stay pending
 * for weft_signal_wait_for. Every other thread of the process must block
 * them too (a signal goes to any thread that does not): call it on the
 * main thread before creating schedulers or other threads, which then
 * inherit the mask. Returns WEFT_OK, or WEFT_EINVAL (sigs 0, SIGKILL or
 * SIGSTOP among them, or a bit past the platform's signals).
 * Callable from: any thread. */
WEFT_API int  weft_signal_block(uint64_t sigs);

/** Waits until one of the signals of sigs is pending for the process and
 * takes it (it is not delivered again), or timeout_ns passes (relative,
 * monotonic; 0 looks once, UINT64_MAX waits for ever). Returns the
 * signal's number (> 0), WEFT_ETIMEDOUT, WEFT_EINVAL (sigs 0, or one of
 * them not blocked with weft_signal_block), WEFT_ENOMEM (out of memory or
 * descriptors: nothing taken), WEFT_ESHUTDOWN (from a task whose scheduler
 * is being destroyed). Two waits for one signal: one of them takes it.
 * Callable from: any thread (a task suspends its fiber). */
WEFT_API int  weft_signal_wait_for(uint64_t sigs, uint64_t timeout_ns);

WEFT_END_DECLS

#endif /* WEFT_PUBLIC_PROC_H */

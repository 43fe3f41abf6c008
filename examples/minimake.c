/* minimake: a tiny make, one graph task per target.
 *
 * Reads a Makefile-like file and builds every target in it, in parallel on
 * a weft scheduler. Each target is a task (named after it, so the DOT dump
 * reads like the file); each prerequisite that is a target is an edge.
 *
 *   # a comment
 *   app: main.o util.o       a rule: one target, then its prerequisites
 *   <TAB>cc -o app main.o    zero or more commands, run in order with
 *                            /bin/sh -c, exactly as written (no variables);
 *                            as make does, one that is plain words is run
 *                            without a shell
 *
 * A prerequisite that is not a target must name an existing file: it is a
 * leaf and gets no task. As make does, a target is rebuilt only when it is
 * out of date: no file of its name exists, or a prerequisite is newer (by
 * mtime, to the nanosecond) or is not a file (a target that makes none, as
 * `all`, is always out of date, and so are the targets that need it). A
 * target without commands is an empty task, a join point. When a command fails, the rest of its target's
 * commands do not run and its task fails (weft_task_fail): weft skips
 * everything that depends on it and, as make does, stops the build (the
 * graph is fail-fast: targets not started yet are skipped, those running
 * finish); with -k independent targets go on. A cycle is found by
 * weft_graph_run (WEFT_ECYCLE) and named by weft_graph_find_cycle.
 *
 *   minimake [-j N] [-k] [-n] [-d FILE] [-t FILE] MAKEFILE
 *     -j N     at most N commands at once (default: one per CPU): a
 *              semaphore of N units that each target with commands takes
 *              before it starts (weft_task_set_semaphore: a target waiting
 *              for one holds no fiber). The scheduler keeps its default
 *              workers (one per CPU): a command is started with
 *              weft_proc_spawn (the fork and exec on weft's blocking pool)
 *              and awaited with weft_pid_wait_for, both suspending the
 *              target's task, not its worker, so 64 commands that sleep
 *              run at once on 2 cores.
 *     -k       keep going: after a failure, build what does not depend on it
 *     -n       dry run: print the commands in an order that respects the
 *              dependencies (the graph runs, the commands do not)
 *     -d FILE  write the graph as Graphviz DOT to FILE, after the run
 *              (failed targets red, skipped ones grey)
 *     -t FILE  trace the run (weft_trace_start before the graph runs, stop
 *              after it) and write the trace to FILE as Chrome trace-event
 *              JSON: open it in ui.perfetto.dev, or draw it with
 *              tools/trace_plot.py
 *
 * Ctrl-C (SIGINT) or SIGTERM cancels the build: a task waits for them
 * (weft_signal_wait_for; main blocks them before any thread starts),
 * cancels the graph (targets not started are skipped) and sends the
 * signal to every running command's process group (each command leads
 * one), then the targets reap their commands and remove a target file
 * that an interrupted command wrote, as make does. No child is left.
 *
 * Exit status: 0 everything built, 1 a command failed, 2 bad input or
 * usage, 128 + the signal's number when a signal cancelled the build.
 *
 * On Windows (the _WIN32 forms below) a command runs as
 * `%ComSpec% /d /s /c COMMAND` (cmd.exe) in minimake's console group, so
 * that Ctrl-C reaches it from the console as it reaches minimake; a
 * status is the exit code. weft_proc_spawn quotes COMMAND by the C
 * runtime's rules, which cmd does not undo, so a command holding a double
 * quote or ending in a backslash is refused as bad input. There are no
 * signals to wait for: a console control handler (Ctrl-C, Ctrl-Break)
 * signals a weft_event the watching task waits on, which cancels the
 * graph; the running commands got the Ctrl-C themselves and minimake
 * waits for them (exit 130 after Ctrl-C, 149 after Ctrl-Break: 128 +
 * SIGINT or SIGBREAK). mtimes come from GetFileAttributesEx, to 100 ns.
 * minimake/Makefile.win.mm is the sample project in cmd's commands.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sys/stat.h>
#include <sys/wait.h>
#endif

#include <weft.h>

struct target {
    char *name;
    int line;                       /* where its rule is */
    char **cmds;    size_t ncmds;
    char **prereqs; size_t nprereqs;    /* as written */
    size_t *deps;   size_t ndeps;       /* the prerequisites that are targets */
    weft_task *task;
    int pid;        /* its command running now, else 0: under run_lock */
    int status;     /* written by its task: the failed command's wait status
                       (Windows: its exit code), 0 if all went well */
    bool ran;       /* written with status: that command started and was
                       awaited (else status means nothing) */
};

/* Written by main before the run, read by the tasks (the run orders it). */
static struct target *targets;
static size_t ntargets;
static const char *file;
static bool dry_run;
static bool keep_going;

/* A failed command's task fails with this, a code of minimake's own:
 * weft_graph_wait then returns WEFT_EFAILED, and weft_graph_fail_code
 * gives this back (any int but 0 would do). */
#define MINIMAKE_EFAILED (-100)

/* -j: targets with commands take a unit of `jobs` before they start. */
static weft_sem jobs;
static long slots;

static weft_sched *sched;
static weft_graph *graph;

/* Cancelling: `interrupted` is the signal that cancelled the build (0:
 * none) and each target's pid, both under run_lock. A target stores its
 * command's pid and reads `interrupted` under the lock; the watcher sets
 * `interrupted` and signals every pid stored under it: so each command is
 * signalled by one or the other (or both: harmless, it is not reaped yet). */
static weft_mutex run_lock;
static int interrupted;
static atomic_int commands_run;

static void *xrealloc(void *p, size_t size)
{
    if (!(p = realloc(p, size ? size : 1))) {
        fputs("minimake: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

#define PUSH(arr, n, v) ((arr) = xrealloc((arr), ((n) + 1) * sizeof *(arr)), (arr)[(n)++] = (v))

/* "minimake: FILE:LINE: message" on stderr. */
static void error_at(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "minimake: %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static long find(const char *name)
{
    for (size_t i = 0; i < ntargets; i++)
        if (strcmp(targets[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* ---- what differs on Windows ----------------------------------------- */

/* A file's last change (seconds and nanoseconds since the platform's
 * epoch: only compared), its size, and whether it is a plain file. */
struct stamp {
    long long sec;
    long nsec;
    long long size;
    bool regular;
};

/* Fills *st for path; false: no such file (or none that can be seen). */
static bool stamp_of(const char *path, struct stamp *st)
{
#ifdef _WIN32
    WIN32_FILE_ATTRIBUTE_DATA a;
    if (!GetFileAttributesExA(path, GetFileExInfoStandard, &a))
        return false;
    /* 100 ns ticks since 1601 */
    unsigned long long ticks = (unsigned long long)a.ftLastWriteTime.dwHighDateTime << 32 |
                               a.ftLastWriteTime.dwLowDateTime;
    st->sec = (long long)(ticks / 10000000);
    st->nsec = (long)(ticks % 10000000) * 100;
    st->size = (long long)a.nFileSizeHigh << 32 | a.nFileSizeLow;
    st->regular = !(a.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE));
#else
    struct stat s;
    if (stat(path, &s) != 0)
        return false;
    st->sec = s.st_mtim.tv_sec;
    st->nsec = s.st_mtim.tv_nsec;
    st->size = s.st_size;
    st->regular = S_ISREG(s.st_mode);
#endif
    return true;
}

/* How a command that ran ended, from its status: on POSIX a wait status;
 * on Windows the exit code, and no signals. */
#ifdef _WIN32
#define CMD_EXITED(st)    true
#define CMD_EXIT_CODE(st) (st)
#define CMD_SIGNALED(st)  false
#define CMD_SIGNAL(st)    0
#else
#define CMD_EXITED(st)    WIFEXITED(st)
#define CMD_EXIT_CODE(st) WEXITSTATUS(st)
#define CMD_SIGNALED(st)  WIFSIGNALED(st)
#define CMD_SIGNAL(st)    WTERMSIG(st)
#endif

/* Whether cmd reaches the shell as written; false after saying why. On
 * Windows weft_proc_spawn quotes cmd /c's argument by the C runtime's
 * rules (a quote inside escaped with a backslash, backslashes doubled
 * before the closing quote), which cmd reads literally. */
static bool cmd_ok(const char *cmd, int lineno)
{
#ifdef _WIN32
    size_t n = strlen(cmd);
    if (strchr(cmd, '"') || (n && cmd[n - 1] == '\\')) {
        error_at(lineno, "on Windows a command cannot hold a double quote or end in a"
                 " backslash (cmd would not get it as written)");
        return false;
    }
#else
    (void)cmd, (void)lineno;
#endif
    return true;
}

/* weft_pid_wait_for could not wait (out of memory or descriptors): waits
 * blocking the worker; false if that fails too. (On Windows weft's own
 * handle to the process then stays open: one, on a path out of memory.) */
static bool wait_blocking(int pid, int *status)
{
#ifdef _WIN32
    HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    DWORD code;
    bool ok = h && WaitForSingleObject(h, INFINITE) == WAIT_OBJECT_0 && GetExitCodeProcess(h, &code);
    if (h)
        CloseHandle(h);
    if (ok)
        *status = (int)code;
    return ok;
#else
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            return false;
    return true;
#endif
}

#ifdef _WIN32
/* Ctrl-C and Ctrl-Break: on_ctrl runs on a thread the console starts (a
 * plain thread: weft_event_signal is allowed there), stores which one as
 * SIGINT or SIGBREAK in ctrl_sig, the first only, and sets ctrl_event
 * (manual reset), which watch_signals waits on. main sets it too, ctrl_sig
 * left 0, to end that wait before it destroys the scheduler. The handler
 * stays installed until the process ends, so ctrl_event is never
 * destroyed. */
static weft_event ctrl_event;
static atomic_int ctrl_sig;

static BOOL WINAPI on_ctrl(DWORD type)
{
    if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT)
        return FALSE;   /* the console closing, logoff, shutdown: the default */
    int none = 0;
    atomic_compare_exchange_strong(&ctrl_sig, &none, type == CTRL_C_EVENT ? SIGINT : SIGBREAK);
    weft_event_signal(&ctrl_event);
    return TRUE;
}
#endif

/* ---- reading the file ------------------------------------------------ */

/* A rule line "target: prereqs" (comment stripped, p at its first
 * non-blank); false after reporting what is wrong with it. */
static bool rule(char *p, int lineno)
{
    char *colon = strchr(p, ':'), *save, *name;
    if (!colon) {
        error_at(lineno, "expected 'target: prerequisites', found no ':'"
                 " (commands must start with a tab)");
        return false;
    }
    *colon = '\0';
    if (!(name = strtok_r(p, " \t", &save)) || strtok_r(NULL, " \t", &save)) {
        error_at(lineno, "expected exactly one target name before ':'");
        return false;
    }
    long prev = find(name);
    if (prev >= 0) {
        error_at(lineno, "duplicate target '%s' (first defined at line %d)",
                 name, targets[prev].line);
        return false;
    }
    struct target t = { .name = name, .line = lineno };
    for (char *w = strtok_r(colon + 1, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        PUSH(t.prereqs, t.nprereqs, w);
    PUSH(targets, ntargets, t);
    return true;
}

/* Splits text (the whole file, kept until the end: names and commands
 * point into it) into rules; returns the number of errors. */
static int parse(char *text)
{
    int lineno = 0, errors = 0;
    long cur = -1;      /* the rule commands go to; -1 none yet, -2 a bad one */
    for (char *line = text, *next; line; line = next) {
        lineno++;
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        line[strcspn(line, "\r")] = '\0';
        if (line[0] == '\t') {                     /* a command */
            if (line[1 + strspn(line + 1, " \t")] == '\0')
                continue;
            if (cur == -1)
                errors++, error_at(lineno, "command line before any target");
            else if (cur >= 0 && !cmd_ok(line + 1, lineno))
                errors++;
            else if (cur >= 0)
                PUSH(targets[cur].cmds, targets[cur].ncmds, line + 1);
            continue;
        }
        line[strcspn(line, "#")] = '\0';
        char *p = line + strspn(line, " \t");
        if (*p == '\0')
            continue;                               /* blank or comment */
        if (rule(p, lineno))
            cur = (long)ntargets - 1;
        else
            cur = -2, errors++;
    }
    return errors;
}

/* Turns prerequisites into deps; returns the number of errors. */
static int resolve(void)
{
    int errors = 0;
    for (size_t i = 0; i < ntargets; i++) {
        struct target *t = &targets[i];
        for (size_t j = 0; j < t->nprereqs; j++) {
            const char *p = t->prereqs[j];
            long k = find(p);
            struct stamp st;
            if (k == (long)i) {
                error_at(t->line, "dependency cycle: %s -> %s", p, p);
                errors++;
            } else if (k >= 0) {
                PUSH(t->deps, t->ndeps, (size_t)k);
            } else if (!stamp_of(p, &st)) {
                error_at(t->line, "unknown prerequisite '%s' of target '%s'"
                         " (neither a target nor an existing file)", p, t->name);
                errors++;
            }                                       /* else a leaf file */
        }
    }
    return errors;
}

/* Names a cycle of the graph (after weft_graph_run said ECYCLE), in the
 * file's terms: each target needs the next. weft lists it in edge order
 * (each task precedes the next: is needed by it), so it is printed
 * backwards. */
static void print_cycle(weft_graph *g)
{
    size_t len = weft_graph_find_cycle(g, NULL, 0);
    weft_task **cyc = len ? calloc(len, sizeof *cyc) : NULL;
    if (!cyc || weft_graph_find_cycle(g, cyc, len) != len) {
        fprintf(stderr, "minimake: %s: dependency cycle\n", file);
        free(cyc);
        return;
    }
    size_t *idx = calloc(len, sizeof *idx);
    for (size_t c = 0; idx && c < len; c++)
        for (size_t i = 0; i < ntargets; i++)
            if (targets[i].task == cyc[c])
                idx[c] = i;
    if (idx) {
        fprintf(stderr, "minimake: %s:%d: dependency cycle: ", file, targets[idx[len - 1]].line);
        for (size_t c = len; c-- > 0;)
            fprintf(stderr, "%s -> ", targets[idx[c]].name);
        fprintf(stderr, "%s (each needs the next)\n", targets[idx[len - 1]].name);
    }
    free(idx);
    free(cyc);
}

/* ---- building --------------------------------------------------------- */

/* Is t's file newer than every prerequisite's (all of them files)? Read
 * when t's task starts: its prerequisites are built by then. */
static bool up_to_date(const struct target *t)
{
    struct stamp ts, ps;
    if (!stamp_of(t->name, &ts))
        return false;
    for (size_t i = 0; i < t->nprereqs; i++) {
        if (!stamp_of(t->prereqs[i], &ps))
            return false;   /* a target that makes no file: always newer */
        if (ps.sec > ts.sec || (ps.sec == ts.sec && ps.nsec > ts.nsec))
            return false;
    }
    return true;
}

#ifndef _WIN32
/* As make does, a command with nothing for a shell to do (no quoting,
 * expansion, redirection, operator; not a shell builtin or keyword) runs
 * without one: its words are the argv. Fills argv (max words) and returns
 * true; false: it needs /bin/sh. buf holds the words (as long as cmd). */
static bool plain_words(const char *cmd, char *buf, const char **argv, size_t max)
{
    static const char *const shell_words[] = {
        ".", ":", "alias", "break", "case", "cd", "command", "continue", "eval", "exec",
        "exit", "export", "for", "getopts", "hash", "if", "read", "readonly", "return",
        "set", "shift", "times", "trap", "type", "ulimit", "umask", "unalias", "unset",
        "until", "wait", "while", "{", "!", NULL };
    if (cmd[strcspn(cmd, "\"'`$&|;<>()*?[]{}~#=%\\\n")] != '\0')
        return false;
    strcpy(buf, cmd);
    size_t n = 0;
    char *save;
    for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (n + 1 >= max)
            return false;
        argv[n++] = w;
    }
    argv[n] = NULL;
    if (n == 0)
        return false;
    for (size_t i = 0; shell_words[i]; i++)
        if (strcmp(argv[0], shell_words[i]) == 0)
            return false;
    return true;
}
#endif

/* Runs cmd for target t: on POSIX in its own process group, directly if
 * it is plain words, else with /bin/sh -c; on Windows with cmd /c, in
 * minimake's console group (a new one would not get Ctrl-C). *status gets
 * its status; false: it could not start or be awaited. Callable from: a
 * task (its worker goes on while the command starts and runs). */
static bool run_cmd(struct target *t, const char *cmd, int *status)
{
#ifdef _WIN32
    const char *shell = getenv("ComSpec");
    weft_proc_spec spec = {
        .argv = (const char *const[]){ shell && *shell ? shell : "cmd.exe", "/d", "/s", "/c", cmd, NULL },
    };
    int pid, err = weft_proc_spawn(sched, &spec, &pid, NULL);
    if (err) {
        fprintf(stderr, "minimake: cannot start %s: %s\n", spec.argv[0], weft_strerror(err));
        return false;
    }
#else
    const char *words[64];
    char *buf = xrealloc(NULL, strlen(cmd) + 1);
    bool direct = plain_words(cmd, buf, words, sizeof words / sizeof words[0]);
    weft_proc_spec spec = {
        .argv = direct ? words : (const char *const[]){ "/bin/sh", "-c", cmd, NULL },
        .pgroup = WEFT_PROC_NEW_GROUP,
    };
    int pid, err = weft_proc_spawn(sched, &spec, &pid, NULL);
    if (err == WEFT_ENOEXEC && direct) {
        fprintf(stderr, "minimake: %s: command not found or not executable\n", words[0]);
        free(buf);
        *status = 127 << 8;   /* as sh reports it: exit status 127 */
        return true;
    }
    free(buf);
    if (err) {
        fprintf(stderr, "minimake: cannot start /bin/sh: %s\n", weft_strerror(err));
        return false;
    }
#endif
    atomic_fetch_add(&commands_run, 1);
    weft_mutex_lock(&run_lock);
    t->pid = pid;
    int sig = interrupted;
    weft_mutex_unlock(&run_lock);
#ifdef _WIN32
    (void)sig;   /* started after Ctrl-C: it got none, and runs to its end */
#else
    if (sig)
        kill(-pid, sig);   /* the watcher had already looked: see run_lock */
#endif
    bool ok = weft_pid_wait_for(pid, status, UINT64_MAX) == WEFT_OK || wait_blocking(pid, status);
    weft_mutex_lock(&run_lock);
    t->pid = 0;
    weft_mutex_unlock(&run_lock);
    return ok;
}

/* An interrupted command may have left t's file half written: remove it
 * if the command made or changed it (before: its stamp then, existed:
 * whether it had one). */
static void remove_partial(const struct target *t, const struct stamp *before, bool existed)
{
    struct stamp now;
    if (!stamp_of(t->name, &now) || !now.regular)
        return;
    if (existed && now.sec == before->sec && now.nsec == before->nsec && now.size == before->size)
        return;
    fprintf(stderr, "minimake: *** Deleting file '%s'\n", t->name);
    remove(t->name);
}

/* A target's task: its commands in order, unless it is up to date. On a
 * failure the task fails: weft skips whatever depends on it. The task
 * holds a unit of `jobs` (-j) from before its first command to after its
 * last, as a job of make -j does. Callable from: a worker (a task of the
 * graph). */
static void build(void *arg)
{
    struct target *t = arg;
    if (up_to_date(t))
        return;
    for (size_t i = 0; i < t->ncmds; i++) {
        if (!dry_run) {
            weft_mutex_lock(&run_lock);
            int sig = interrupted;
            weft_mutex_unlock(&run_lock);
            if (sig) {
                weft_task_fail(MINIMAKE_EFAILED);   /* cancelled: start no command */
                break;
            }
        }
        printf("%s\n", t->cmds[i]);
        fflush(stdout);   /* before the command's output */
        if (dry_run)
            continue;
        struct stamp before;
        bool existed = stamp_of(t->name, &before);
        int st = 0;
        bool ran = run_cmd(t, t->cmds[i], &st);
        weft_mutex_lock(&run_lock);
        int sig = interrupted;
        weft_mutex_unlock(&run_lock);
        if (sig) {
            remove_partial(t, &before, existed);
            t->status = st;
            t->ran = ran;
            weft_task_fail(MINIMAKE_EFAILED);
            break;
        }
        if (ran && st == 0)
            continue;
        t->status = st;
        t->ran = ran;
        if (ran && CMD_EXITED(st))
            fprintf(stderr, "minimake: *** [%s] Error %d\n", t->name, CMD_EXIT_CODE(st));
        else if (ran && CMD_SIGNALED(st))
            fprintf(stderr, "minimake: *** [%s] killed by signal %d\n", t->name, CMD_SIGNAL(st));
        weft_task_fail(MINIMAKE_EFAILED);
        break;
    }
}

/* Waits for SIGINT or SIGTERM for the whole build; on one, cancels it.
 * Ends with WEFT_ESHUTDOWN once main destroys the scheduler. On Windows
 * waits for Ctrl-C or Ctrl-Break (ctrl_event), which main sets too before
 * destroying the scheduler. Callable from: a task. */
static void watch_signals(void *arg)
{
    (void)arg;
#ifdef _WIN32
    int sig = weft_event_wait(&ctrl_event) == WEFT_OK ? atomic_load(&ctrl_sig) : 0;
#else
    int sig = weft_signal_wait_for(WEFT_SIG(SIGINT) | WEFT_SIG(SIGTERM), UINT64_MAX);
#endif
    if (sig <= 0)
        return;
    weft_mutex_lock(&run_lock);
    interrupted = sig;
    if (graph)
        weft_graph_cancel(graph);   /* targets not started are skipped */
#ifndef _WIN32   /* on Windows the console gave the commands the Ctrl-C */
    for (size_t i = 0; i < ntargets; i++)
        if (targets[i].pid > 0)
            kill(-targets[i].pid, sig);
#endif
    weft_mutex_unlock(&run_lock);
}

/* Writes what put makes of obj (the DOT dump, the trace) to path. */
static int write_file(const char *path, int (*put)(void *obj, FILE *out), void *obj)
{
    FILE *out = fopen(path, "w");
    int err = out ? put(obj, out) : 0;
    bool bad = !out || ferror(out);
    if (out && fclose(out) != 0)
        bad = true;
    if (!bad && !err)
        return 0;
    fprintf(stderr, "minimake: cannot write %s: %s\n", path, err ? weft_strerror(err) : strerror(errno));
    return 2;
}

static int put_dot(void *g, FILE *out)
{
    return weft_graph_dump_dot(g, out);
}

/* The recording of the run, as JSON. */
static int put_trace(void *s, FILE *out)
{
    return weft_trace_write(s, out);
}

/* After the run: names the failed targets (the tasks weft saw fail),
 * then the skipped ones. */
static int report(void)
{
    const char *sep = "minimake: failed:";
    for (size_t i = 0; i < ntargets; i++) {
        if (weft_task_state(targets[i].task) == WEFT_TASK_FAILED) {
            int st = targets[i].status;
            if (targets[i].ran && CMD_EXITED(st))
                fprintf(stderr, "%s %s (exit %d)", sep, targets[i].name, CMD_EXIT_CODE(st));
            else if (targets[i].ran && CMD_SIGNALED(st))
                fprintf(stderr, "%s %s (signal %d)", sep, targets[i].name, CMD_SIGNAL(st));
            else
                fprintf(stderr, "%s %s (not started)", sep, targets[i].name);
            sep = "";
        }
    }
    if (*sep)
        return 0;                                   /* nothing failed */
    sep = keep_going ? "\nminimake: skipped (a prerequisite failed):"
                     : "\nminimake: skipped (a prerequisite failed, or the build stopped):";
    for (size_t i = 0; i < ntargets; i++) {
        if (weft_task_state(targets[i].task) == WEFT_TASK_SKIPPED) {
            fprintf(stderr, "%s %s", sep, targets[i].name);
            sep = "";
        }
    }
    fputc('\n', stderr);
    return 1;
}

static int usage(void)
{
    fputs("usage: minimake [-j N] [-k] [-n] [-d FILE.dot] [-t FILE.json] MAKEFILE\n", stderr);
    return 2;
}

int main(int argc, char **argv)
{
    weft_config cfg;
    weft_config_init(&cfg);
    const char *dot = NULL, *trace = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "j:knd:t:")) != -1) {
        char *end;
        long n;
        switch (opt) {
        case 'j':
            n = strtol(optarg, &end, 10);
            if (*end || end == optarg || n < 1 || n > 1024) {
                fprintf(stderr, "minimake: -j wants a number from 1 to 1024, not '%s'\n", optarg);
                return 2;
            }
            slots = n;
            break;
        case 'k': keep_going = true; break;
        case 'n': dry_run = true; break;
        case 'd': dot = optarg; break;
        case 't': trace = optarg; break;
        default:  return usage();
        }
    }
    if (optind != argc - 1)
        return usage();
    if (slots == 0) {
#ifdef _WIN32
        long cpus = (long)GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
#else
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#endif
        slots = cpus > 0 ? cpus : 1;
    }
#ifdef _WIN32
    weft_event_init(&ctrl_event, true, false);
    if (!SetConsoleCtrlHandler(on_ctrl, TRUE)) {
        fputs("minimake: cannot handle Ctrl-C\n", stderr);
        return 2;
    }
#else
    /* Before any thread starts: every thread of the process then blocks
     * them, and they stay pending for watch_signals. */
    if (weft_signal_block(WEFT_SIG(SIGINT) | WEFT_SIG(SIGTERM)) != WEFT_OK) {
        fputs("minimake: cannot block SIGINT and SIGTERM\n", stderr);
        return 2;
    }
#endif
    weft_sem_init(&jobs, slots);
    weft_mutex_init(&run_lock);
    file = argv[optind];

    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "minimake: cannot read %s: %s\n", file, strerror(errno));
        return 2;
    }
    size_t n = 0, cap = 4096;
    char *text = xrealloc(NULL, cap);
    for (size_t got; (got = fread(text + n, 1, cap - n - 1, f)) > 0;)
        if ((n += got) == cap - 1)
            text = xrealloc(text, cap *= 2);
    text[n] = '\0';
    if (ferror(f)) {
        fprintf(stderr, "minimake: cannot read %s: %s\n", file, strerror(errno));
        fclose(f);
        free(text);
        return 2;
    }
    fclose(f);

    int rc = 2, err = 0;
    weft_sched *s = NULL;
    weft_graph *g = NULL;
    if (parse(text) || resolve())
        goto out;

    if (!(err = weft_sched_create(&s, &cfg)))
        err = weft_graph_create(&g);
    sched = s;
    graph = g;
    if (!err)
        err = weft_graph_set_fail_fast(g, !keep_going);
    for (size_t i = 0; !err && i < ntargets; i++) {
        struct target *t = &targets[i];
        err = weft_graph_add_task(g, t->ncmds ? build : NULL, t, &t->task);
        if (!err)
            weft_task_set_name(t->task, t->name);
        if (!err && t->ncmds && !dry_run)
            err = weft_task_set_semaphore(t->task, &jobs);
    }
    for (size_t i = 0; !err && i < ntargets; i++)
        for (size_t j = 0; !err && j < targets[i].ndeps; j++)
            err = weft_task_succeed(targets[i].task, targets[targets[i].deps[j]].task);
    /* -t: 2^16 events per thread (2 MiB each) hold a build of thousands
     * of targets; a longer one keeps the last 2^16 of each thread. */
    bool tracing = false;
    if (!err && trace && !(tracing = (err = weft_trace_start(s, (size_t)1 << 16)) == WEFT_OK))
        fprintf(stderr, "minimake: cannot trace: %s\n", weft_strerror(err));
    else if (!err && (err = weft_spawn(s, watch_signals, NULL)) != WEFT_OK)
        fprintf(stderr, "minimake: %s\n", weft_strerror(err));
    else if (!err && (err = weft_graph_run(s, g)) == WEFT_ECYCLE) {
        print_cycle(g);
    } else if (!err) {
        weft_graph_wait(g);             /* WEFT_EFAILED if a command failed: report() tells which */
        weft_mutex_lock(&run_lock);
        int sig = interrupted;
        graph = NULL;                   /* a signal from now on cancels nothing */
        weft_mutex_unlock(&run_lock);
        if (sig) {
            fprintf(stderr, "minimake: *** interrupted by signal %d: build stopped\n", sig);
            rc = 128 + sig;
        } else {
            rc = report();
            if (rc == 0 && !dry_run && atomic_load(&commands_run) == 0)
                fprintf(stderr, "minimake: everything is up to date\n");
        }
    } else {
        fprintf(stderr, "minimake: %s\n", weft_strerror(err));
    }
    if (tracing && (weft_trace_stop(s) != WEFT_OK || write_file(trace, put_trace, s)))
        rc = 2;
    if (g && dot && write_file(dot, put_dot, g))
        rc = 2;

out:
    weft_mutex_lock(&run_lock);
    graph = NULL;
    weft_mutex_unlock(&run_lock);
    if (g)
        weft_graph_destroy(g);
#ifdef _WIN32
    weft_event_signal(&ctrl_event);     /* watch_signals' wait ends */
#endif
    if (s)
        weft_sched_destroy(s);          /* watch_signals' wait ends (WEFT_ESHUTDOWN) */
    for (size_t i = 0; i < ntargets; i++) {
        free(targets[i].cmds);
        free(targets[i].prereqs);
        free(targets[i].deps);
    }
    free(targets);
    free(text);
    weft_mutex_destroy(&run_lock);
    weft_sem_destroy(&jobs);
    return rc;
}

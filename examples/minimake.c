/* minimake: a tiny make, one graph task per target.
 *
 * Reads a Makefile-like file and builds every target in it, in parallel on
 * a weft scheduler. Each target is a task (named after it, so the DOT dump
 * reads like the file); each prerequisite that is a target is an edge.
 *
 *   # a comment
 *   app: main.o util.o       a rule: one target, then its prerequisites
 *   <TAB>cc -o app main.o    zero or more commands, run in order with
 *                            /bin/sh -c, exactly as written (no variables)
 *
 * A prerequisite that is not a target must name an existing file: it is a
 * leaf and gets no task. There are no timestamps: every target is built,
 * in the current directory, on every run. A target without commands is an
 * empty task, a join point. When a command fails, the rest of its target's
 * commands do not run and its task fails (weft_task_fail): weft skips
 * everything that depends on it and, as make does, stops the build (the
 * graph is fail-fast: targets not started yet are skipped, those running
 * finish); with -k independent targets go on. A cycle is found by
 * weft_graph_run (WEFT_ECYCLE) and named by weft_graph_find_cycle.
 *
 *   minimake [-j N] [-k] [-n] [-d FILE] [-t FILE] MAKEFILE
 *     -j N     at most N commands at once (default: one per CPU). The
 *              scheduler keeps its default workers (one per CPU): a
 *              command is started with posix_spawn and awaited with
 *              weft_pid_wait_for, which suspends the target's task, not its
 *              worker, so 64 commands that sleep run at once on 2 cores.
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
 * Exit status: 0 everything built, 1 a command failed, 2 bad input or usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <weft.h>

extern char **environ;

struct target {
    char *name;
    int line;                       /* where its rule is */
    char **cmds;    size_t ncmds;
    char **prereqs; size_t nprereqs;    /* as written */
    size_t *deps;   size_t ndeps;       /* the prerequisites that are targets */
    weft_task *task;
    int status;     /* written by its task: the failed command's wait status,
                       -1 if /bin/sh could not start, 0 if all went well */
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

/* Commands in flight: at most `slots` at once (-j), a counting semaphore
 * made of weft's fiber-aware mutex and condition variable, so a target
 * waiting for a slot holds no worker either. */
static weft_mutex slot_lock;
static weft_cond slot_free;
static long slots;

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
            struct stat st;
            if (k == (long)i) {
                error_at(t->line, "dependency cycle: %s -> %s", p, p);
                errors++;
            } else if (k >= 0) {
                PUSH(t->deps, t->ndeps, (size_t)k);
            } else if (stat(p, &st) != 0) {
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

/* A target's commands hold a slot from the first to the last, as a job
 * of make -j does. Callable from: a task. */
static void slot_take(void)
{
    weft_mutex_lock(&slot_lock);
    while (slots == 0)
        weft_cond_wait(&slot_free, &slot_lock);
    slots--;
    weft_mutex_unlock(&slot_lock);
}

static void slot_give(void)
{
    weft_mutex_lock(&slot_lock);
    slots++;
    weft_cond_signal(&slot_free);
    weft_mutex_unlock(&slot_lock);
}

/* Runs cmd with /bin/sh -c; returns its wait status, or -1. Callable
 * from: a task (its worker goes on while the command runs). */
static int run_sh(const char *cmd)
{
    char *argv[] = { "sh", "-c", (char *)cmd, NULL };
    pid_t pid;
    int status = -1, err = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
    if (err) {
        fprintf(stderr, "minimake: cannot start /bin/sh: %s\n", strerror(err));
    } else if ((err = weft_pid_wait_for(pid, &status, UINT64_MAX)) != WEFT_OK) {
        /* Out of memory or descriptors for the wait: block the worker. */
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR) {
                status = -1;
                break;
            }
    }
    return status;
}

/* A target's task: its commands in order. On a failure the task fails:
 * weft skips whatever depends on it. Callable from: a worker (a task of
 * the graph). */
static void build(void *arg)
{
    struct target *t = arg;
    if (!dry_run)
        slot_take();
    for (size_t i = 0; i < t->ncmds; i++) {
        printf("%s\n", t->cmds[i]);
        if (dry_run)
            continue;
        int st = run_sh(t->cmds[i]);
        if (st == 0)
            continue;
        t->status = st;
        if (st > 0 && WIFEXITED(st))
            fprintf(stderr, "minimake: *** [%s] Error %d\n", t->name, WEXITSTATUS(st));
        else if (st > 0 && WIFSIGNALED(st))
            fprintf(stderr, "minimake: *** [%s] killed by signal %d\n", t->name, WTERMSIG(st));
        weft_task_fail(MINIMAKE_EFAILED);
        break;
    }
    if (!dry_run)
        slot_give();
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
            if (st > 0 && WIFEXITED(st))
                fprintf(stderr, "%s %s (exit %d)", sep, targets[i].name, WEXITSTATUS(st));
            else if (st > 0 && WIFSIGNALED(st))
                fprintf(stderr, "%s %s (signal %d)", sep, targets[i].name, WTERMSIG(st));
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
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        slots = cpus > 0 ? cpus : 1;
    }
    weft_mutex_init(&slot_lock);
    weft_cond_init(&slot_free);
    file = argv[optind];
    setvbuf(stdout, NULL, _IOLBF, 0);   /* echoed commands before their output */

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
    if (!err)
        err = weft_graph_set_fail_fast(g, !keep_going);
    for (size_t i = 0; !err && i < ntargets; i++) {
        struct target *t = &targets[i];
        err = weft_graph_add_task(g, t->ncmds ? build : NULL, t, &t->task);
        if (!err)
            weft_task_set_name(t->task, t->name);
    }
    for (size_t i = 0; !err && i < ntargets; i++)
        for (size_t j = 0; !err && j < targets[i].ndeps; j++)
            err = weft_task_succeed(targets[i].task, targets[targets[i].deps[j]].task);
    /* -t: 2^16 events per thread (2 MiB each) hold a build of thousands
     * of targets; a longer one keeps the last 2^16 of each thread. */
    bool tracing = false;
    if (!err && trace && !(tracing = (err = weft_trace_start(s, (size_t)1 << 16)) == WEFT_OK))
        fprintf(stderr, "minimake: cannot trace: %s\n", weft_strerror(err));
    else if (!err && (err = weft_graph_run(s, g)) == WEFT_ECYCLE) {
        print_cycle(g);
    } else if (!err) {
        weft_graph_wait(g);             /* WEFT_EFAILED if a command failed: report() tells which */
        rc = report();
    } else {
        fprintf(stderr, "minimake: %s\n", weft_strerror(err));
    }
    if (tracing && (weft_trace_stop(s) != WEFT_OK || write_file(trace, put_trace, s)))
        rc = 2;
    if (g && dot && write_file(dot, put_dot, g))
        rc = 2;

out:
    if (g)
        weft_graph_destroy(g);
    if (s)
        weft_sched_destroy(s);
    for (size_t i = 0; i < ntargets; i++) {
        free(targets[i].cmds);
        free(targets[i].prereqs);
        free(targets[i].deps);
    }
    free(targets);
    free(text);
    weft_cond_destroy(&slot_free);
    weft_mutex_destroy(&slot_lock);
    return rc;
}

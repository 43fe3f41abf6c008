/* Child processes and signals (issue 34, items 3 and 4), from weft/proc.h:
 * weft_proc_spawn starts commands off the worker (exit codes, the three
 * redirections, cwd, envp, process groups, pidfds), bad input gets
 * WEFT_EINVAL or WEFT_ENOEXEC with no child left, weft_proc_run_for kills
 * and reaps at its timeout; 1,000 commands at -j 64 (a spawn semaphore)
 * have at least 60 in flight at once (forced: each command blocks reading
 * one byte of a pipe until 64 are running) and leave no zombie;
 * weft_signal_wait_for takes a signal sent to the process, times out,
 * refuses signals not blocked, and children get the mask back. At 0 (a
 * bound thread), 1 and 2 workers. The signal cases run in a forked child
 * (wt_run_child) that blocks the signals in every thread, as the header
 * asks. No timing assertions. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"

#define MS 1000000ull

static weft_sched *cur;
static atomic_int bad;   /* failures seen in tasks: asserted on the main thread */

#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            atomic_fetch_add(&bad, 1);                                           \
        }                                                                        \
    } while (0)

/* Runs body as one task of a scheduler with `workers` workers (0: this
 * thread bound) and waits for it. */
static void run_task(unsigned workers, weft_fn body, void *arg)
{
    cur = make_sched(workers);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(cur, body, arg), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    cur = NULL;
}

static bool no_children(void)
{
    return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

/* Spawns argv with spec's other fields from *base (may be NULL) and
 * waits for it: its wait status, or -1000 + the spawn's error. */
static int run(const char *const *argv, const weft_proc_spec *base)
{
    weft_proc_spec spec = base ? *base : (weft_proc_spec){ 0 };
    spec.argv = argv;
    int pid = -1, st = -1;
    int rc = weft_proc_spawn(cur, &spec, &pid, NULL);
    if (rc != WEFT_OK)
        return -1000 + rc;
    rc = weft_pid_wait_for(pid, &st, UINT64_MAX);
    return rc == WEFT_OK ? st : -2000 + rc;
}

/* ---- basics: exit codes, redirections, cwd, envp, groups, pidfds ---------------- */

static void basics(void *arg)
{
    (void)arg;
    char dir[] = "weft_proc_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[64], in[64];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(in, sizeof in, "%s/in", dir);

    int st = run((const char *const[]){ "true", NULL }, NULL);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    st = run((const char *const[]){ "sh", "-c", "exit 3", NULL }, NULL);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);

    /* stdout to a path, then appended to; stdin from a path. */
    weft_proc_spec sp = { .stdio[1] = { .kind = WEFT_PROC_PATH, .path = out } };
    st = run((const char *const[]){ "echo", "one", NULL }, &sp);
    CHECK(st == 0);
    sp.stdio[1].append = true;
    st = run((const char *const[]){ "echo", "two", NULL }, &sp);
    CHECK(st == 0);
    weft_proc_spec cmp = { .stdio[0] = { .kind = WEFT_PROC_PATH, .path = out } };
    st = run((const char *const[]){ "sh", "-c", "test \"$(cat)\" = \"$(printf 'one\\ntwo')\"", NULL }, &cmp);
    CHECK(st == 0);

    /* stdout and stderr (2>&1) into a pipe: the bytes arrive. */
    int p[2];
    CHECK(pipe2(p, O_CLOEXEC) == 0);
    weft_proc_spec pipe_sp = { .stdio = { { .kind = WEFT_PROC_NULL },
                                          { .kind = WEFT_PROC_FD, .fd = p[1] },
                                          { .kind = WEFT_PROC_FD, .fd = 1 } } };
    st = run((const char *const[]){ "sh", "-c", "printf ab; printf cd >&2", NULL }, &pipe_sp);
    CHECK(st == 0);
    close(p[1]);
    char buf[8] = { 0 };
    ssize_t n = 0, r;
    while (n < 4 && (r = read(p[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    CHECK(n == 4 && strcmp(buf, "abcd") == 0);
    close(p[0]);

    /* cwd and envp. */
    weft_proc_spec cwd_sp = { .cwd = dir, .stdio[1] = { .kind = WEFT_PROC_PATH, .path = "here" } };
    st = run((const char *const[]){ "sh", "-c", "echo $WEFT_X", NULL }, &cwd_sp);
    CHECK(st == 0);
    weft_proc_spec env_sp = { .envp = (const char *const[]){ "WEFT_X=42", "PATH=/bin:/usr/bin", NULL } };
    st = run((const char *const[]){ "sh", "-c", "test \"$WEFT_X\" = 42", NULL }, &env_sp);
    CHECK(st == 0);
    char here[80];
    snprintf(here, sizeof here, "%s/here", dir);
    struct stat sb;
    CHECK(stat(here, &sb) == 0);

    /* A new process group: the child leads it. */
    weft_proc_spec grp = { .argv = (const char *const[]){ "true", NULL }, .pgroup = WEFT_PROC_NEW_GROUP };
    int gpid = -1;
    CHECK(weft_proc_spawn(cur, &grp, &gpid, NULL) == WEFT_OK);
    CHECK(getpgid(gpid) == gpid);   /* a zombie keeps its group until reaped */
    CHECK(weft_pid_wait_for(gpid, &st, UINT64_MAX) == WEFT_OK && st == 0);

    /* A pidfd that names the child. */
    weft_proc_spec plain = { .argv = (const char *const[]){ "true", NULL } };
    int pid = -1, pfd = -2;
    CHECK(weft_proc_spawn(cur, &plain, &pid, &pfd) == WEFT_OK);
    CHECK(pid > 0 && pfd >= -1);
    if (pfd >= 0) {
        CHECK(weft_fd_wait_for(pfd, POLLIN, UINT64_MAX) > 0);
        close(pfd);
    }
    CHECK(weft_pid_wait_for(pid, &st, UINT64_MAX) == WEFT_OK && st == 0);

    /* Bad input: nothing started. */
    CHECK(run((const char *const[]){ "weft-no-such-command", NULL }, NULL) == -1000 + WEFT_ENOEXEC);
    weft_proc_spec nodir = { .cwd = "weft-no-such-dir" };
    CHECK(run((const char *const[]){ "true", NULL }, &nodir) == -1000 + WEFT_ENOEXEC);
    CHECK(weft_proc_spawn(cur, NULL, &pid, NULL) == WEFT_EINVAL);
    CHECK(weft_proc_spawn(NULL, &plain, &pid, NULL) == WEFT_EINVAL);
    CHECK(weft_proc_spawn(cur, &plain, NULL, NULL) == WEFT_EINVAL);
    weft_proc_spec b = plain;
    b.argv = (const char *const[]){ NULL };
    CHECK(weft_proc_spawn(cur, &b, &pid, NULL) == WEFT_EINVAL);
    b = plain;
    b.stdio[1].kind = WEFT_PROC_FD;
    b.stdio[1].fd = -1;
    CHECK(weft_proc_spawn(cur, &b, &pid, NULL) == WEFT_EINVAL);
    b = plain;
    b.stdio[0].kind = WEFT_PROC_PATH;
    CHECK(weft_proc_spawn(cur, &b, &pid, NULL) == WEFT_EINVAL);
    b = plain;
    b.stdio[2].kind = (weft_proc_io)9;
    CHECK(weft_proc_spawn(cur, &b, &pid, NULL) == WEFT_EINVAL);
    b = plain;
    b.pgroup = -2;
    CHECK(weft_proc_spawn(cur, &b, &pid, NULL) == WEFT_EINVAL);

    /* run_for: at the timeout the child is killed and reaped. */
    weft_proc_spec slow = { .argv = (const char *const[]){ "sleep", "30", NULL },
                            .pgroup = WEFT_PROC_NEW_GROUP };
    CHECK(weft_proc_run_for(cur, &slow, &st, 20 * MS) == WEFT_ETIMEDOUT);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    CHECK(weft_proc_run_for(cur, &plain, &st, UINT64_MAX) == WEFT_OK && st == 0);

    unlink(out);
    unlink(here);
    rmdir(dir);
    CHECK(no_children());
}

WT_TEST(proc, basics, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        run_task(w, basics, NULL);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
    }
    /* From a plain thread: spawned on the caller. */
    cur = make_sched(1);
    int st = run((const char *const[]){ "sh", "-c", "exit 5", NULL }, NULL);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 5);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    WT_ASSERT(no_children());
}

/* ---- 1,000 commands at -j 64: >= 60 in flight, no zombie ------------------------ */

#define JOBS 64

static int gate[2];             /* each command reads one byte of it */
static weft_sem slots;
static atomic_int spawned, reaped, max_flight;
static int total;

static void command(void *arg)
{
    (void)arg;
    weft_proc_spec sp = { .argv = (const char *const[]){ "dd", "bs=1", "count=1", "status=none", NULL },
                          .stdio = { { .kind = WEFT_PROC_FD, .fd = gate[0] },
                                     { .kind = WEFT_PROC_NULL } } };
    int pid, st = -1;
    int rc = weft_proc_spawn(cur, &sp, &pid, NULL);
    CHECK(rc == WEFT_OK);
    if (rc != WEFT_OK)
        return;
    int flight = atomic_fetch_add(&spawned, 1) + 1 - atomic_load(&reaped);
    for (int m = atomic_load(&max_flight); flight > m && !atomic_compare_exchange_weak(&max_flight, &m, flight);)
        ;
    CHECK(weft_pid_wait_for(pid, &st, UINT64_MAX) == WEFT_OK);
    CHECK(st == 0);
    atomic_fetch_add(&reaped, 1);
}

/* Lets one command end each time all that may run (64, or what is left)
 * are running and blocked on the gate. */
static void gatekeeper(void *arg)
{
    (void)arg;
    for (int released = 0; released < total; released++) {
        int need = total - released < JOBS ? total - released : JOBS;
        while (atomic_load(&spawned) - released < need)
            weft_sleep(MS / 4);
        CHECK(write(gate[1], "x", 1) == 1);
    }
}

static void many(void *arg)
{
    (void)arg;
    weft_spawn_opts o = { .sem = &slots };
    for (int i = 0; i < total; i++)
        CHECK(weft_spawn_ex(cur, command, NULL, &o) == WEFT_OK);
    CHECK(weft_spawn(cur, gatekeeper, NULL) == WEFT_OK);
}

WT_TEST(proc, thousand_at_j64, .timeout = 600)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        total = w == 2 ? 1000 : 200;
        atomic_store(&spawned, 0);
        atomic_store(&reaped, 0);
        atomic_store(&max_flight, 0);
        WT_ASSERT_EQ(pipe2(gate, O_CLOEXEC), 0);
        weft_sem_init(&slots, JOBS);
        run_task(w, many, NULL);
        WT_ASSERT_EQ(atomic_load(&bad), 0);
        WT_ASSERT_EQ(atomic_load(&reaped), total);
        WT_ASSERT(atomic_load(&max_flight) >= 60, "at most %d in flight", atomic_load(&max_flight));
        WT_ASSERT(atomic_load(&max_flight) <= JOBS, "%d in flight past -j", atomic_load(&max_flight));
        WT_ASSERT(no_children());
        weft_sem_destroy(&slots);
        close(gate[0]);
        close(gate[1]);
    }
}

/* ---- signals (in a forked child that blocks them before any thread) -------------- */

static atomic_int got_sig;

static void sig_waiter(void *arg)
{
    uint64_t sigs = (uint64_t)(uintptr_t)arg;
    atomic_store(&got_sig, weft_signal_wait_for(sigs, UINT64_MAX));
}

/* Sends sig to the process once the waiter is blocked (it is a task: its
 * fiber shows as waiting on the signalfd in the scheduler's state). */
static void *sender(void *arg)
{
    int sig = (int)(intptr_t)arg;
    for (int i = 0; i < 20000 && atomic_load(&got_sig) == 0; i++) {
        usleep(1000);
        if (i == 5)
            kill(getpid(), sig);
    }
    return NULL;
}

static void signals_child(void *arg)
{
    unsigned workers = (unsigned)(uintptr_t)arg;
    int fails = 0;
#define SCHECK(c) do { if (!(c)) { fprintf(stderr, "line %d: %s\n", __LINE__, #c); fails++; } } while (0)
    SCHECK(weft_signal_wait_for(WEFT_SIG(SIGUSR1), 0) == WEFT_EINVAL);   /* not blocked yet */
    SCHECK(weft_signal_block(0) == WEFT_EINVAL);
    SCHECK(weft_signal_block(WEFT_SIG(SIGKILL)) == WEFT_EINVAL);
    /* The harness's watchdog thread is started again with the signals
     * blocked: every thread of the process blocks them, as the header asks. */
    wt__watchdog_pause();
    SCHECK(weft_signal_block(WEFT_SIG(SIGUSR1) | WEFT_SIG(SIGUSR2)) == WEFT_OK);
    wt__watchdog_resume();
    weft_config c;
    weft_config_init(&c);
    c.workers = workers == 0 ? WEFT_WORKERS_NONE : workers;
    SCHECK(weft_sched_create(&cur, &c) == WEFT_OK);
    if (workers == 0)
        SCHECK(weft_sched_bind(cur) == WEFT_OK);
    /* A task waits; a plain thread started now (it inherits the mask)
     * sends the signal to the process. */
    for (int sig = SIGUSR1; sig <= SIGUSR2; sig += SIGUSR2 - SIGUSR1) {
        atomic_store(&got_sig, 0);
        SCHECK(weft_spawn(cur, sig_waiter, (void *)(uintptr_t)(WEFT_SIG(SIGUSR1) | WEFT_SIG(SIGUSR2))) == WEFT_OK);
        pthread_t t;
        SCHECK(pthread_create(&t, NULL, sender, (void *)(intptr_t)sig) == 0);
        SCHECK(weft_sched_wait_idle(cur) == WEFT_OK);
        pthread_join(t, NULL);
        SCHECK(atomic_load(&got_sig) == sig);
    }
    /* Pending before the wait: taken at once, also with timeout 0. */
    kill(getpid(), SIGUSR2);
    SCHECK(weft_signal_wait_for(WEFT_SIG(SIGUSR2), 0) == SIGUSR2);
    SCHECK(weft_signal_wait_for(WEFT_SIG(SIGUSR2), 0) == WEFT_ETIMEDOUT);
    SCHECK(weft_signal_wait_for(WEFT_SIG(SIGUSR1), 5 * MS) == WEFT_ETIMEDOUT);
    SCHECK(weft_signal_wait_for(WEFT_SIG(SIGTERM), 0) == WEFT_EINVAL);   /* not blocked with weft_signal_block */
    SCHECK(weft_signal_wait_for(0, 0) == WEFT_EINVAL);
    /* A child gets the mask back: SIGUSR1 to itself ends it. */
    weft_proc_spec sp = { .argv = (const char *const[]){ "sh", "-c", "kill -USR1 $$; exit 0", NULL } };
    int st = 0;
    SCHECK(weft_proc_run_for(cur, &sp, &st, UINT64_MAX) == WEFT_OK);
    SCHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR1);
    if (workers == 0)
        weft_sched_unbind();
    SCHECK(weft_sched_destroy(cur) == WEFT_OK);
    exit(fails ? 1 : 0);
#undef SCHECK
}

WT_TEST(proc, signals, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        char buf[4096];
        int st = wt_run_child(signals_child, (void *)(uintptr_t)w, buf, sizeof buf);
        WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "workers %u: status %#x: %s", w, st, buf);
    }
}

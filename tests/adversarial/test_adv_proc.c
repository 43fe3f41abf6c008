/* Adversarial tests of weft/proc.h (spawn, run, signals) and of fork,
 * written from the header and docs/reference/{proc,sched}.md alone
 * (Linux), at 0 (this thread bound), 1, 2 and 8 workers:
 *
 *   spawn_bad      each WEFT_EINVAL of weft_proc_spawn (NULLs, argv[0]
 *                  NULL, a kind out of range, FD -1, PATH NULL, pgroup -2)
 *                  and each WEFT_ENOEXEC (not found, not executable, a cwd
 *                  or stdin file that cannot be opened): no child is left;
 *                  run_for with timeout 0 kills and reaps its child
 *   run_for        exit codes; stdout to a file with stderr 2>&1 and stdin
 *                  from /dev/null; a timeout kills the child's whole new
 *                  group (its grandchild too) and reaps it; from a task,
 *                  the bound thread and a plain thread
 *   signals        block refusals (0, SIGKILL, SIGSTOP); a wait for a
 *                  signal not blocked: EINVAL; timeout 0: ETIMEDOUT; a
 *                  signal pending for a task's thread taken once; a
 *                  child spawned afterwards gets the mask from before
 *                  the block; destroy ends a task's signal wait
 *   fork_child     a plain thread forks while tasks block in fd, async,
 *                  group, pipeline and signal waits: the child makes a
 *                  fresh scheduler and uses every new call there */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adv_util.h"

/* Where the tests write their scratch files. */
static const char *tmp_dir(void)
{
    const char *t = getenv("TMPDIR");
    return t && t[0] && strlen(t) < 40 ? t : P_tmpdir;
}

static bool no_children(void)
{
    return waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
}

WT_TEST(adv_proc, spawn_bad)
{
    weft_sched *s = adv_sched(1);
    const char *ok_argv[] = { "true", NULL };
    const char *null0[] = { NULL };
    weft_proc_spec spec = { .argv = ok_argv };
    int pid = -7, pidfd = -7;
    WT_ASSERT_EQ(weft_proc_spawn(NULL, &spec, &pid, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_proc_spawn(s, NULL, &pid, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_proc_spawn(s, &spec, NULL, NULL), WEFT_EINVAL);
    weft_proc_spec b = { .argv = NULL };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b.argv = null0;
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b = spec;
    b.stdio[1].kind = (weft_proc_io)9;
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b = spec;
    b.stdio[2].kind = (weft_proc_io)-1;
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b = spec;
    b.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_FD, .fd = -1 };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b = spec;
    b.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = NULL };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    b = spec;
    b.pgroup = -2;
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_proc_run_for(s, &b, NULL, UINT64_MAX), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_proc_run_for(NULL, &spec, NULL, UINT64_MAX), WEFT_EINVAL);
    WT_ASSERT(no_children());

    const char *missing[] = { "weft-adv-no-such-command-xyz", NULL };
    b = (weft_proc_spec){ .argv = missing };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_ENOEXEC);
    const char *devnull[] = { "/dev/null", NULL };   /* not executable */
    b = (weft_proc_spec){ .argv = devnull };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_ENOEXEC);
    b = (weft_proc_spec){ .argv = ok_argv, .cwd = "/weft-adv-no-such-dir" };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_ENOEXEC);
    WT_ASSERT_EQ(weft_proc_run_for(s, &b, NULL, UINT64_MAX), WEFT_ENOEXEC);
    b = (weft_proc_spec){ .argv = ok_argv };
    b.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = "/weft-adv-no-such-file" };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_ENOEXEC);
    b.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_INHERIT };
    b.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = "/proc/weft-adv/x" };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_ENOEXEC);
    WT_ASSERT(no_children());

    /* Timeout 0: started, looked at once, killed and reaped. */
    const char *sleeper[] = { "sleep", "1000", NULL };
    b = (weft_proc_spec){ .argv = sleeper };
    int st0 = -1;
    WT_ASSERT_EQ(weft_proc_run_for(s, &b, &st0, 0), WEFT_ETIMEDOUT);
    WT_ASSERT(no_children());

    /* pidfd: a descriptor (or -1), close-on-exec; the child reaped by a wait. */
    b = (weft_proc_spec){ .argv = ok_argv };
    WT_ASSERT_EQ(weft_proc_spawn(s, &b, &pid, &pidfd), WEFT_OK);
    if (pidfd >= 0) {
        WT_ASSERT(fcntl(pidfd, F_GETFD) & FD_CLOEXEC);
        close(pidfd);
    }
    int st = -1;
    WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, UINT64_MAX), WEFT_OK);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    WT_ASSERT(no_children());
    adv_sched_end(s, 1);
}

/* ---- run_for --------------------------------------------------------------- */

typedef struct rjob {
    weft_sched *s;
    char out[96];
    atomic_long fails;
    int grandchild;
} rjob;

#define RFAIL(j, ...) do { fprintf(stderr, __VA_ARGS__); atomic_fetch_add(&(j)->fails, 1); } while (0)

static void run_body(void *arg)
{
    rjob *j = arg;
    int st = -1;
    const char *exit3[] = { "sh", "-c", "exit 3", NULL };
    weft_proc_spec sp = { .argv = exit3 };
    int rc = weft_proc_run_for(j->s, &sp, &st, UINT64_MAX);
    if (rc != WEFT_OK || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
        RFAIL(j, "exit 3: rc %d st %#x\n", rc, st);
    const char *both[] = { "sh", "-c", "cat; echo out; echo err >&2", NULL };
    sp = (weft_proc_spec){ .argv = both };
    sp.stdio[0] = (weft_proc_redirect){ .kind = WEFT_PROC_NULL };
    sp.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = j->out };
    sp.stdio[2] = (weft_proc_redirect){ .kind = WEFT_PROC_FD, .fd = 1 };
    rc = weft_proc_run_for(j->s, &sp, &st, UINT64_MAX);
    if (rc != WEFT_OK || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        RFAIL(j, "redirect: rc %d st %#x\n", rc, st);
    char text[64] = { 0 };
    int fd = open(j->out, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n != 8 || strcmp(text, "out\nerr\n") != 0)
        RFAIL(j, "file: %zd \"%s\"\n", n, text);
    /* A group whose leader starts a grandchild, then both sleep: the
     * timeout kills the group; the grandchild's pid is written first. */
    char script[160];
    snprintf(script, sizeof script, "sleep 1000 & echo $! > %s.gc; wait", j->out);
    const char *grp[] = { "sh", "-c", script, NULL };
    sp = (weft_proc_spec){ .argv = grp, .pgroup = WEFT_PROC_NEW_GROUP };
    char gcpath[112];
    snprintf(gcpath, sizeof gcpath, "%s.gc", j->out);
    unlink(gcpath);
    /* The timeout must not fire before the pid is written: wait for the
     * file in a loop of bounded timeouts (each run a fresh child). */
    for (int tries = 0; tries < 20; tries++) {
        rc = weft_proc_run_for(j->s, &sp, &st, (uint64_t)(50 + tries * 100) * 1000000);
        if (rc != WEFT_ETIMEDOUT)
            RFAIL(j, "group: rc %d\n", rc);
        FILE *f = fopen(gcpath, "r");
        int gc = 0;
        if (f) {
            if (fscanf(f, "%d", &gc) != 1)
                gc = 0;
            fclose(f);
        }
        if (gc > 0) {
            j->grandchild = gc;
            break;
        }
    }
    unlink(gcpath);
}

static void *run_thread(void *arg)
{
    run_body(arg);
    return NULL;
}

WT_TEST(adv_proc, run_for)
{
    /* The grandchild is re-parented to us when its parent dies, so that
     * we can see how it ended. */
    WT_ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        for (int caller = 0; caller < 3; caller++) {
            rjob j;
            memset(&j, 0, sizeof j);
            j.s = adv_sched(w);
            snprintf(j.out, sizeof j.out, "%s/weft-adv-run-%d-%u-%d", tmp_dir(), (int)getpid(), w,
                     caller);
            if (caller == 0)
                run_body(&j);
            else if (caller == 1)
                adv_run_in_task(j.s, run_body, &j);
            else
                adv_on_thread(run_thread, &j);
            unlink(j.out);
            WT_ASSERT(atomic_load(&j.fails) == 0, "w %u caller %d", w, caller);
            WT_ASSERT(j.grandchild > 0, "the grandchild's pid never came");
            int st = 0;
            WT_ASSERT_EQ(waitpid(j.grandchild, &st, 0), j.grandchild);
            WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "grandchild st %#x", st);
            /* Killed the other tries' grandchildren too. */
            while (waitpid(-1, &st, 0) > 0)
                WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
            WT_ASSERT(no_children());
            adv_sched_end(j.s, w);
        }
    }
}

/* ---- signals ----------------------------------------------------------------- */

typedef struct sigjob {
    atomic_long got[3];
} sigjob;

static void sig_waiter(void *arg)
{
    sigjob *j = arg;
    /* Pending for this thread before the wait: the test process has
     * threads that do not block SIGUSR1 (made before weft_signal_block),
     * so a process-directed one could go there. */
    if (pthread_kill(pthread_self(), SIGUSR1) != 0)
        atomic_store(&j->got[1], 99);
    atomic_store(&j->got[0], weft_signal_wait_for(WEFT_SIG(SIGUSR1), UINT64_MAX));
    if (atomic_load(&j->got[1]) == 99)
        return;
    atomic_store(&j->got[1], weft_signal_wait_for(WEFT_SIG(SIGUSR1), 0));
}

static void sig_forever(void *arg)
{
    sigjob *j = arg;
    atomic_store(&j->got[2], weft_signal_wait_for(WEFT_SIG(SIGUSR2), UINT64_MAX));
}

static char *sigblk_of_child(weft_sched *s, const char *path)
{
    const char *argv[] = { "sh", "-c", "grep SigBlk /proc/self/status", NULL };
    weft_proc_spec sp = { .argv = argv };
    sp.stdio[1] = (weft_proc_redirect){ .kind = WEFT_PROC_PATH, .path = path };
    int st = -1;
    if (weft_proc_run_for(s, &sp, &st, UINT64_MAX) != WEFT_OK)
        return NULL;
    static char line[2][128];
    static int k;
    char *out = line[k++ & 1];
    FILE *f = fopen(path, "r");
    if (!f || !fgets(out, 128, f))
        out[0] = 0;
    if (f)
        fclose(f);
    unlink(path);
    return out;
}

WT_TEST(adv_proc, signals)
{
    char path[96];
    snprintf(path, sizeof path, "%s/weft-adv-sig-%d", tmp_dir(), (int)getpid());
    weft_sched *s0 = adv_sched(1);
    char *before = sigblk_of_child(s0, path);
    WT_ASSERT(before && before[0]);
    char saved[128];
    snprintf(saved, sizeof saved, "%s", before);
    adv_sched_end(s0, 1);

    WT_ASSERT_EQ(weft_signal_block(0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_signal_block(WEFT_SIG(SIGKILL)), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_signal_block(WEFT_SIG(SIGSTOP) | WEFT_SIG(SIGUSR1)), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_signal_wait_for(0, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_signal_wait_for(WEFT_SIG(SIGUSR1), 0), WEFT_EINVAL);   /* refused above */
    WT_ASSERT_EQ(weft_signal_block(WEFT_SIG(SIGUSR1) | WEFT_SIG(SIGUSR2)), WEFT_OK);
    WT_ASSERT_EQ(weft_signal_wait_for(WEFT_SIG(SIGUSR1) | WEFT_SIG(SIGHUP), 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_signal_wait_for(WEFT_SIG(SIGUSR1), 0), WEFT_ETIMEDOUT);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = adv_sched(w);
        sigjob j;
        memset(&j, 0, sizeof j);
        adv_run_in_task(s, sig_waiter, &j);
        WT_ASSERT_EQ(atomic_load(&j.got[0]), SIGUSR1);
        WT_ASSERT_EQ(atomic_load(&j.got[1]), WEFT_ETIMEDOUT);   /* taken once */
        char *after = sigblk_of_child(s, path);
        WT_ASSERT(after && strcmp(after, saved) == 0, "child's mask \"%s\" was \"%s\"",
                  after ? after : "(none)", saved);
        if (w > 0) {
            atomic_store(&j.got[2], 1);
            WT_ASSERT_EQ(weft_spawn(s, sig_forever, &j), WEFT_OK);
            for (int tries = 0; tries < 20000; tries++) {   /* until it waits */
                char *st = wt_sched_state(s);
                bool waits = st && strstr(st, "waits on ");
                free(st);
                if (waits)
                    break;
                usleep(1000);
            }
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&j.got[2]), WEFT_ESHUTDOWN);
        } else {
            adv_sched_end(s, w);
        }
    }
}

/* ---- fork ------------------------------------------------------------------- */

static void *child_async(void *arg)
{
    return arg;
}

static void child_stage(weft_pipe *pf, void *arg)
{
    if (weft_pipe_token(pf) == 10)
        weft_pipe_stop(pf);
    else
        atomic_fetch_add((atomic_long *)arg, 1);
}

static void child_member(void *arg)
{
    atomic_fetch_add((atomic_long *)arg, 1);
}

/* Where a child is (a step number in memory the parent shares), so that
 * a child that hangs is reported with the step it hung in. */
static _Atomic int *child_step;

static void child_at(int step)
{
    if (child_step)
        atomic_store(child_step, step);
}

static int child_main(void)
{
    weft_sched *s = NULL;
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    child_at(1);
    if (weft_sched_create(&s, &c) != WEFT_OK)
        return 10;
    weft_async *h = NULL;
    int x = 5;
    child_at(2);
    if (weft_async_spawn(s, child_async, &x, NULL, 0, &h) != WEFT_OK || weft_async_wait(h) != 0 ||
        weft_async_result(h) != &x)
        return 11;
    weft_async_release(h);
    atomic_long n = 0;
    weft_pipe_stage st[2] = { { WEFT_PIPE_SERIAL, child_stage, &n },
                              { WEFT_PIPE_PARALLEL, child_stage, &n } };
    weft_pipeline *pl = NULL;
    child_at(3);
    if (weft_pipeline_create(2, st, 2, &pl) != WEFT_OK || weft_pipeline_run(s, pl) != WEFT_OK ||
        weft_pipeline_tokens(pl) != 10 || weft_pipeline_destroy(pl) != WEFT_OK)
        return 12;
    weft_group gr;
    atomic_long m = 0;
    child_at(4);
    if (weft_group_init(&gr, s) != WEFT_OK)
        return 13;
    child_at(5);
    for (int i = 0; i < 50; i++)
        weft_group_spawn(&gr, child_member, &m);
    child_at(6);
    if (weft_group_join(&gr) != WEFT_OK || atomic_load(&m) != 50)
        return 14;
    weft_group_destroy(&gr);
    int p[2];
    child_at(7);
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
        return 15;
    char b[4];
    child_at(8);
    if (weft_fd_read_for(p[0], b, 4, 1000000) != WEFT_ETIMEDOUT)
        return 16;
    const char *tr[] = { "true", NULL };
    weft_proc_spec sp = { .argv = tr };
    int status = -1;
    child_at(9);
    if (weft_proc_run_for(s, &sp, &status, UINT64_MAX) != WEFT_OK || status != 0)
        return 17;
    child_at(10);
    if (weft_signal_wait_for(WEFT_SIG(SIGUSR1), 0) != WEFT_ETIMEDOUT)
        return 18;
    child_at(11);
    weft_fd_close(p[0]);
    weft_fd_close(p[1]);
    child_at(12);
    if (weft_sched_destroy(s) != WEFT_OK)
        return 19;
    return 0;
}

typedef struct fjob {
    weft_sched *s;
    int p[2];
    weft_event gate;
    atomic_long fails;
} fjob;

static void blocked_reader(void *arg)
{
    fjob *j = arg;
    char b;
    if (weft_fd_read_for(j->p[0], &b, 1, UINT64_MAX) != 1)
        atomic_fetch_add(&j->fails, 1);
}

static void blocked_event(void *arg)
{
    fjob *j = arg;
    weft_event_wait(&j->gate);
}

static void *gate_async(void *arg)
{
    weft_event_wait(&((fjob *)arg)->gate);
    return NULL;
}

static void *fork_thread(void *arg)
{
    fjob *j = arg;
    for (int round = 0; round < 4; round++) {
        pid_t pid = fork();
        if (pid < 0) {
            atomic_fetch_add(&j->fails, 1);
            break;
        }
        if (child_step)
            atomic_store(child_step, 0);
        if (pid == 0)
            _exit(child_main());
        int st = -1;
        int rc = weft_pid_wait_for(pid, &st, 60ull * 1000000000);
        if (rc != WEFT_OK) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fprintf(stderr, "child %d: wait %d, the child at its step %d\n", round, rc,
                    child_step ? atomic_load(child_step) : -1);
            atomic_fetch_add(&j->fails, 1);
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "child %d: status %#x\n", round, st);
            atomic_fetch_add(&j->fails, 1);
        }
    }
    return NULL;
}

#if defined(__SANITIZE_THREAD__)
#define ADV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ADV_TSAN 1
#endif
#endif

WT_TEST(adv_proc, fork_child)
{
#ifdef ADV_TSAN
    WT_SKIP("under TSAN: no threads in a child of a multi-threaded fork");
#endif
    WT_ASSERT_EQ(weft_signal_block(WEFT_SIG(SIGUSR1)), WEFT_OK);
    void *m = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    child_step = m == MAP_FAILED ? NULL : m;
    WT_FOR_WORKERS(w, 1, 2, 8) {
        fjob j;
        memset(&j, 0, sizeof j);
        j.s = adv_sched(w);
        WT_ASSERT_EQ(pipe2(j.p, O_NONBLOCK | O_CLOEXEC), 0);
        weft_event_init(&j.gate, true, false);
        WT_ASSERT_EQ(weft_spawn(j.s, blocked_reader, &j), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(j.s, blocked_event, &j), WEFT_OK);
        weft_async *h = NULL;
        WT_ASSERT_EQ(weft_async_spawn(j.s, gate_async, &j, NULL, 0, &h), WEFT_OK);
        adv_on_thread(fork_thread, &j);
        weft_event_signal(&j.gate);
        WT_ASSERT_EQ(write(j.p[1], "x", 1), 1);
        WT_ASSERT_EQ(weft_async_wait(h), WEFT_OK);
        weft_async_release(h);
        adv_sched_end(j.s, w);
        WT_ASSERT(atomic_load(&j.fails) == 0, "w %u", w);
        weft_fd_close(j.p[0]);
        weft_fd_close(j.p[1]);
        weft_event_destroy(&j.gate);
    }
    if (child_step)
        munmap((void *)child_step, sizeof(int));
    child_step = NULL;
}

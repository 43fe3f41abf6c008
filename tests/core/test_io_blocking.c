/* Blocking without blocking a worker (issue 19): weft_pid_wait_for and
 * weft_call_blocking at 0 (a bound thread), 1 and 2 workers. The pidfd
 * and the polling fallback both reap children; the blocking pool grows to
 * its bound and no further, and shrinks back when idle; destroy waits for
 * blocking calls; stall reports name the descriptor, child or call a
 * fiber waits on. No timing assertions beyond lower bounds.
 * (test_io_fd.c has weft_fd_wait_for; io_util.h the helpers both
 * share.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <dirent.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "sched_util.h"
#include "io_util.h"

extern char **environ;

/* Test seam (io.c): pidfd_open counts as missing, so weft_pid_wait_for polls. */
extern atomic_bool weft__no_pidfd;

/* ---- weft_pid_wait_for ------------------------------------------------------------------------- */

static pid_t child(int code, unsigned sleep_ms)
{
    pid_t pid = fork();
    WT_ASSERT(pid >= 0);
    if (pid == 0) {
        if (sleep_ms)
            usleep(sleep_ms * 1000u);
        _exit(code);
    }
    return pid;
}

#define KIDS 8

static atomic_int kid_bad, kid_ok;

static void kid_task(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    pid_t pid = child((int)i + 3, 20 + 5 * i);
    int st = -1;
    int rc = weft_pid_wait_for(pid, &st, UINT64_MAX);
    if (rc == WEFT_OK && WIFEXITED(st) && WEXITSTATUS(st) == (int)i + 3)
        atomic_fetch_add(&kid_ok, 1);
    else
        atomic_fetch_add(&kid_bad, 1);
    /* Reaped: a second wait finds no such child. */
    if (weft_pid_wait_for(pid, &st, MS) != WEFT_EINVAL)
        atomic_fetch_add(&kid_bad, 1);
}

static void kid_timeout_task(void *arg)
{
    pid_t pid = child(0, 10000);
    int st = 0;
    if (weft_pid_wait_for(pid, &st, 2 * MS) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&kid_bad, 1);
    if (weft_pid_wait_for(pid, &st, 0) != WEFT_ETIMEDOUT)
        atomic_fetch_add(&kid_bad, 1);
    kill(pid, SIGKILL);
    if (weft_pid_wait_for(pid, &st, UINT64_MAX) != WEFT_OK || !WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
        atomic_fetch_add(&kid_bad, 1);
    else
        atomic_fetch_add(&kid_ok, 1);
}

static void setup_kids(weft_sched *s)
{
    for (unsigned i = 0; i < KIDS; i++)
        WT_ASSERT_EQ(weft_spawn(s, kid_task, (void *)(uintptr_t)i), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, kid_timeout_task, NULL), WEFT_OK);
}

static void check_kids(const char *how)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        atomic_store(&kid_bad, 0);
        atomic_store(&kid_ok, 0);
        run_on(w, setup_kids);
        WT_ASSERT_EQ(atomic_load(&kid_bad), 0);
        WT_ASSERT_EQ(atomic_load(&kid_ok), KIDS + 1);
        fprintf(stderr, "wait_pid (%s): %u workers: %d children reaped\n", how, w, KIDS + 1);
    }
    /* A plain thread. */
    pid_t pid = child(9, 5);
    int st = 0;
    WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, UINT64_MAX), WEFT_OK);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 9);
    pid = child(0, 10000);
    WT_ASSERT_EQ(weft_pid_wait_for(pid, &st, MS), WEFT_ETIMEDOUT);
    kill(pid, SIGKILL);
    WT_ASSERT_EQ(weft_pid_wait_for(pid, NULL, UINT64_MAX), WEFT_OK);
}

/* 200 children spawned at once from tasks (posix_spawn of sh, each
 * exiting with its own code): every status right, no zombie left. */
#define MANY_KIDS 200

static atomic_uint kids_right;

static void spawn_and_wait(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "sleep 0.0%u; exit %u", i % 10, i % 256);
    char *argv[] = { "sh", "-c", cmd, NULL };
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0) {
        atomic_fetch_add(&kid_bad, 1);
        return;
    }
    int st = -1;
    if (weft_pid_wait_for(pid, &st, UINT64_MAX) == WEFT_OK && WIFEXITED(st) &&
        WEXITSTATUS(st) == (int)(i % 256))
        atomic_fetch_add(&kids_right, 1);
    else
        atomic_fetch_add(&kid_bad, 1);
}

static unsigned many_kids;

static void setup_many_kids(weft_sched *s)
{
    for (unsigned i = 0; i < many_kids; i++)
        WT_ASSERT_EQ(weft_spawn(s, spawn_and_wait, (void *)(uintptr_t)i), WEFT_OK);
}

WT_TEST(io, wait_pid_200_children_at_once, .timeout = 300)
{
    many_kids = (unsigned)wt_scaled(MANY_KIDS, 40);
    WT_FOR_WORKERS(w, 0, 1, 2) {
        atomic_store(&kids_right, 0);
        atomic_store(&kid_bad, 0);
        run_on(w, setup_many_kids);
        WT_ASSERT_EQ(atomic_load(&kid_bad), 0);
        WT_ASSERT_EQ(atomic_load(&kids_right), many_kids);
        errno = 0;
        WT_ASSERT(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "a child is left (a zombie)");
        fprintf(stderr, "wait_pid: %u workers: %u children spawned at once, every status right, "
                "no zombie\n", w, many_kids);
    }
}

WT_TEST(io, wait_pid_reaps_children, .timeout = 120)
{
    check_kids("pidfd");
    /* Bad input: not children. */
    WT_ASSERT_EQ(weft_pid_wait_for(0, NULL, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(-1, NULL, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(1, NULL, MS), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_pid_wait_for(getpid(), NULL, UINT64_MAX), WEFT_EINVAL);
}

WT_TEST(io, wait_pid_without_pidfd_polls, .timeout = 120)
{
    atomic_store(&weft__no_pidfd, true);
    check_kids("polling");
}

/* ---- weft_call_blocking ------------------------------------------------------------------------ */

/* The blocking call waits for a task that can run only because the
 * caller's worker went on (one worker, or the bound thread). */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_cond_t cb_cond = PTHREAD_COND_INITIALIZER;

static bool cb_flag;

static atomic_int cb_rc;

static weft_sched *cb_s;

static void cb_blocks(void *arg)
{
    pthread_mutex_lock(&cb_lock);
    while (!cb_flag)
        pthread_cond_wait(&cb_cond, &cb_lock);
    pthread_mutex_unlock(&cb_lock);
    *(int *)arg = 42;
}

static void cb_caller(void *arg)
{
    int out = 0;
    atomic_store(&cb_rc, weft_call_blocking(cb_s, cb_blocks, &out));
    WT_ASSERT_EQ(out, 42);
}

static void cb_releaser(void *arg)
{
    weft_sleep(MS);
    pthread_mutex_lock(&cb_lock);
    cb_flag = true;
    pthread_cond_broadcast(&cb_cond);
    pthread_mutex_unlock(&cb_lock);
}

static void setup_cb(weft_sched *s)
{
    cb_s = s;
    WT_ASSERT_EQ(weft_spawn(s, cb_caller, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, cb_releaser, NULL), WEFT_OK);
}

static void set_int(void *arg)
{
    *(int *)arg = 7;
}

WT_TEST(io, call_blocking_frees_the_worker, .timeout = 60)
{
    WT_FOR_WORKERS(w, 0, 1, 2) {
        cb_flag = false;
        atomic_store(&cb_rc, 1);
        run_on(w, setup_cb);
        WT_ASSERT_EQ(atomic_load(&cb_rc), WEFT_OK);
    }
    /* From a plain thread; bad input. */
    weft_sched *s = make_sched(1);
    int v = 0;
    WT_ASSERT_EQ(weft_call_blocking(s, set_int, &v), WEFT_OK);
    WT_ASSERT_EQ(v, 7);
    WT_ASSERT_EQ(weft_call_blocking(NULL, set_int, &v), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_call_blocking(s, NULL, &v), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* The pool grows to blocking_threads and no further: calls past it queue. */
static atomic_int in_pool, max_in_pool;

static atomic_uint pool_done;

static void pool_call(void *arg)
{
    int n = atomic_fetch_add(&in_pool, 1) + 1;
    int m = atomic_load(&max_in_pool);
    while (n > m && !atomic_compare_exchange_weak(&max_in_pool, &m, n))
        ;
    usleep(3000);
    atomic_fetch_sub(&in_pool, 1);
}

static void pool_task(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, pool_call, NULL), WEFT_OK);
    atomic_fetch_add(&pool_done, 1);
}

/* Every call waits (up to 60 s, then gives up and says so) until all 64
 * are in: only 64 threads at once get them all through. (60 s: only a
 * pool that stops short of 64 waits that long, not one whose threads
 * start slowly on a loaded machine.) */
static atomic_uint rendezvous_in, rendezvous_missed;

static void rendezvous_call(void *arg)
{
    atomic_fetch_add(&rendezvous_in, 1);
    uint64_t t0 = wt_now_ns();
    while (atomic_load(&rendezvous_in) < 64) {
        if (wt_now_ns() - t0 > 60000 * MS) {
            atomic_fetch_add(&rendezvous_missed, 1);
            return;
        }
        usleep(200);
    }
}

static void rendezvous_task(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, rendezvous_call, NULL), WEFT_OK);
    atomic_fetch_add(&pool_done, 1);
}

WT_TEST(io, blocking_pool_is_bounded, .timeout = 240)
{
    weft_config c;
    weft_config_init(&c);
    WT_ASSERT_EQ(c.blocking_threads, 64);
    c.blocking_threads = 4097;
    WT_ASSERT(weft_config_check(&c) != NULL);
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    for (unsigned bound = 1; bound <= 3; bound++) {
        weft_config_init(&c);
        c.workers = 2;
        c.blocking_threads = bound;
        WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
        atomic_store(&max_in_pool, 0);
        atomic_store(&pool_done, 0);
        for (unsigned i = 0; i < 12; i++)
            WT_ASSERT_EQ(weft_spawn(s, pool_task, s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&pool_done), 12);
        WT_ASSERT(atomic_load(&max_in_pool) <= (int)bound, "%d calls at once past a bound of %u",
                  atomic_load(&max_in_pool), bound);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
    /* 0 means the default: 64 calls that all wait for each other need
     * 64 threads at once. */
    memset(&c, 0, sizeof c);
    weft_config_init(&c);
    c.blocking_threads = 0;
    c.workers = 1;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    atomic_store(&max_in_pool, 0);
    atomic_store(&pool_done, 0);
    atomic_store(&rendezvous_in, 0);
    atomic_store(&rendezvous_missed, 0);
    for (unsigned i = 0; i < 64; i++)
        WT_ASSERT_EQ(weft_spawn(s, rendezvous_task, s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&pool_done), 64);
    WT_ASSERT_EQ(atomic_load(&rendezvous_missed), 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* destroy waits for blocking calls in flight, from tasks and threads. */
static atomic_uint slow_done;

static void slow_call(void *arg)
{
    usleep(20000);
    atomic_fetch_add(&slow_done, 1);
}

static void slow_task(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, slow_call, NULL), WEFT_OK);
}

static atomic_bool slow_entered;

static void slow_call_flag(void *arg)
{
    atomic_store(&slow_entered, true);
    slow_call(arg);
}

static void *slow_thread(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, slow_call_flag, NULL), WEFT_OK);
    return NULL;
}

WT_TEST(io, destroy_waits_for_blocking_calls, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    atomic_store(&slow_done, 0);
    for (unsigned i = 0; i < 4; i++)
        WT_ASSERT_EQ(weft_spawn(s, slow_task, s), WEFT_OK);
    pthread_t th;
    atomic_store(&slow_entered, false);
    WT_ASSERT_EQ(pthread_create(&th, NULL, slow_thread, s), 0);
    while (!atomic_load(&slow_entered))   /* the thread's call is in: destroy must wait for it */
        usleep(100);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    pthread_join(th, NULL);
    WT_ASSERT_EQ(atomic_load(&slow_done), 5);
}

/* ---- stall reports name the descriptor ------------------------------------------------ */

static pthread_mutex_t rep_lock = PTHREAD_MUTEX_INITIALIZER;

static char rep_text[16384];

static atomic_uint rep_count;

static int rep_fd[2];

static void on_stall(const char *report, void *ctx)
{
    pthread_mutex_lock(&rep_lock);
    snprintf(rep_text, sizeof rep_text, "%s", report);
    pthread_mutex_unlock(&rep_lock);
    atomic_fetch_add(&rep_count, 1);
}

static pid_t rep_pid;

static atomic_bool rep_pid_done;

static bool rep_release;

static pthread_cond_t rep_cond = PTHREAD_COND_INITIALIZER;

static void stuck_on_pid(void *arg)
{
    int st;
    WT_ASSERT_EQ(weft_pid_wait_for(rep_pid, &st, UINT64_MAX), WEFT_OK);
    WT_ASSERT(WIFSIGNALED(st));
    atomic_store(&rep_pid_done, true);
}

static void noop(void *arg)
{
}

static void held_call(void *arg)
{
    pthread_mutex_lock(&rep_lock);
    while (!rep_release)
        pthread_cond_wait(&rep_cond, &rep_lock);
    pthread_mutex_unlock(&rep_lock);
}

static void stuck_in_call(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, held_call, NULL), WEFT_OK);
}

static void stuck_on_fd(void *arg)
{
    WT_ASSERT_EQ(weft_fd_wait_for(rep_fd[0], POLLIN, UINT64_MAX), WEFT_ESHUTDOWN);
}

WT_TEST(io, stall_report_names_the_fd, .timeout = 180)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.watchdog_ns = 20 * MS;
    c.on_stall = on_stall;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    make_pipe(rep_fd);
    WT_ASSERT_EQ(weft_spawn(s, stuck_on_fd, NULL), WEFT_OK);
    /* Reports are due every 20 ms; 30 s (at least) is for a hang only. */
    for (unsigned waited = 0; atomic_load(&rep_count) == 0 && waited < 30000; waited += 5)
        usleep(5000);
    WT_ASSERT(atomic_load(&rep_count) > 0, "no stall report");
    char want[64];
    snprintf(want, sizeof want, "waits on fd %d", rep_fd[0]);
    pthread_mutex_lock(&rep_lock);
    bool found = strstr(rep_text, want) != NULL;
    pthread_mutex_unlock(&rep_lock);
    WT_ASSERT(found, "the report does not say '%s':\n%s", want, rep_text);
    /* A child process and a blocking call are named too. */
    pid_t pid = child(0, 600000);   /* killed below; outlives any wait for the report */
    rep_pid = pid;
    atomic_store(&rep_count, 0);
    rep_release = false;
    WT_ASSERT_EQ(weft_spawn(s, stuck_on_pid, NULL), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, stuck_in_call, s), WEFT_OK);
    WT_ASSERT_EQ(weft_spawn(s, noop, NULL), WEFT_OK);   /* a completion: the next stall is reported anew */
    snprintf(want, sizeof want, "waits on child pid %d", (int)pid);
    found = false;
    for (unsigned waited = 0; !found && waited < 30000; waited += 5) {
        usleep(5000);
        pthread_mutex_lock(&rep_lock);
        found = atomic_load(&rep_count) > 0 && strstr(rep_text, want) && strstr(rep_text, "waits on blocking call");
        pthread_mutex_unlock(&rep_lock);
    }
    pthread_mutex_lock(&rep_lock);
    WT_ASSERT(found, "the report does not name the child and the call:\n%s", rep_text);
    rep_release = true;
    pthread_cond_broadcast(&rep_cond);
    pthread_mutex_unlock(&rep_lock);
    kill(pid, SIGKILL);
    while (!atomic_load(&rep_pid_done))   /* reaped before destroy would end the wait */
        usleep(1000);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* the fd wait ends with WEFT_ESHUTDOWN */
    close(rep_fd[0]);
    close(rep_fd[1]);
}

/* ---- the blocking pool shrinks back when idle ------------------------------------------------- */

extern uint64_t weft__bpool_keep_ns;

static unsigned count_threads(void)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/task");
    WT_ASSERT(d != NULL);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void nap_call(void *arg)
{
    usleep(20000);
}

static void nap_task(void *arg)
{
    WT_ASSERT_EQ(weft_call_blocking(arg, nap_call, NULL), WEFT_OK);
}

WT_TEST(io, blocking_pool_shrinks_when_idle, .timeout = 180)
{
    weft__bpool_keep_ns = 50 * MS;
    weft_sched *s = make_sched(1);
    unsigned base = count_threads();
    for (unsigned i = 0; i < 8; i++)
        WT_ASSERT_EQ(weft_spawn(s, nap_task, s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    unsigned peak = count_threads();
    WT_ASSERT(peak > base, "no pool thread was made (%u threads, %u before)", peak, base);
    unsigned now = peak;
    /* Idle threads leave 50 ms after their last call; 60 s (at least)
     * is for a pool that never shrinks, not for a loaded machine. */
    for (unsigned waited = 0; now > base && waited < 60000; waited += 10) {
        usleep(10000);
        now = count_threads();
    }
    WT_ASSERT_EQ(now, base);
    /* It grows again after shrinking (the exited threads are joined). */
    for (unsigned i = 0; i < 4; i++)
        WT_ASSERT_EQ(weft_spawn(s, nap_task, s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    fprintf(stderr, "pool: %u threads at the peak, back to %u when idle\n", peak, now);
}

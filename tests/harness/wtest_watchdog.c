/* This file is private to weft's tests: the per-test watchdog.
 *
 * Armed in the test's own process just before the test body runs (the
 * plain runner's child, or Criterion's .init, see wtest.h): a thread
 * waits until shortly before the test's timeout. If the test is still
 * running then, it prints which test hung and the state of every live
 * weft scheduler to stderr (blocked fibers with what they wait on and
 * their tasks, then each worker and its queues: weft__sched_dump_all), so
 * that a hang in CI says where it is stuck. The kill stays with the
 * runner (the plain runner's SIGQUIT then SIGKILL, Criterion's timeout);
 * if nobody has killed the test 2 s past its timeout, the watchdog exits
 * the process with status 124 itself.
 *
 * A thread, not a signal handler: the dump takes locks and allocates,
 * and under TSAN a handler would wait for the interrupted thread to
 * reach an interceptor, which a thread asleep in a raw futex never does.
 * wt_run_child stops the thread around its fork (wt__watchdog_pause,
 * _resume), so the process forks single-threaded as before (TSAN refuses
 * to start threads in the child of a multi-threaded fork), and the child
 * gets a watchdog of its own with the time that is left.
 *
 * Arming also makes every scheduler the test creates track its blocked
 * fibers (weft__stall_track_all), so the dump can list them: a lock per
 * suspend and resume, invisible to the tests.
 *
 * Synchronization: every field of `wd` is under wd.lock, except thread
 * (the owner thread's, the one that arms, pauses and resumes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "wtest.h"

/* Weak: the fiber-only build has no scheduler, and a test that never
 * creates one does not link that part of weft. */
#ifdef _WIN32
/* PE has no undefined weak data (the reference goes through a pointer
 * the linker must fill), and the Windows build has no scheduler yet: a
 * weak definition stands in, which weft's own overrides once it has one. */
bool weft__stall_track_all __attribute__((weak));
#else
extern bool weft__stall_track_all __attribute__((weak));
#endif
extern void weft__sched_dump_all(FILE *out) __attribute__((weak));
extern void weft__sched_dump(struct weft_sched *s, FILE *out) __attribute__((weak));

char *wt_sched_state(struct weft_sched *s)
{
    char *text = NULL;
    size_t len = 0;
    if (!weft__sched_dump)
        return NULL;
#ifdef _WIN32
    /* No open_memstream: a temporary file, read back. */
    FILE *f = tmpfile();
    if (!f)
        return NULL;
    weft__sched_dump(s, f);
    long n = ftell(f);
    text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        rewind(f);
        len = fread(text, 1, (size_t)n, f);
        text[len] = '\0';
    }
    fclose(f);
    return text;
#else
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    weft__sched_dump(s, f);
    fclose(f);
    return text;
#endif
}

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;     /* CLOCK_MONOTONIC; made once (init_once) */
    bool armed;              /* a test is being watched */
    bool running;            /* the thread exists */
    bool stop;               /* asks the thread to leave (pause) */
    char test[192];
    double timeout;          /* seconds, for the message */
    uint64_t dump_at;        /* CLOCK_MONOTONIC ns */
    uint64_t exit_at;
    pthread_t thread;
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* The default (wall) clock: winpthreads refuses CLOCK_MONOTONIC for a
 * condition variable (the deadlines below are converted). */
static void init_cond(void)
{
    pthread_cond_init(&wd.cond, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits until `at` or a pause; true if paused. Caller holds wd.lock. */
static bool wait_until_or_stop(uint64_t at)
{
    uint64_t now;
    while (!wd.stop && (now = now_ns()) < at) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t wall = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (at - now);
        ts = (struct timespec){ (time_t)(wall / 1000000000u), (long)(wall % 1000000000u) };
        pthread_cond_timedwait(&wd.cond, &wd.lock, &ts);
    }
    return wd.stop;
}

static void *watchdog(void *arg)
{
    pthread_mutex_lock(&wd.lock);
    if (wait_until_or_stop(wd.dump_at)) {
        pthread_mutex_unlock(&wd.lock);
        return arg;
    }
    char test[sizeof wd.test];
    memcpy(test, wd.test, sizeof test);
    double timeout = wd.timeout;
    uint64_t exit_at = wd.exit_at;
    pthread_mutex_unlock(&wd.lock);

    fprintf(stderr, "\nwtest: %s is still running close to its timeout (%.1f s); weft's state:\n",
            test, timeout);
    if (weft__sched_dump_all)
        weft__sched_dump_all(stderr);
    else
        fprintf(stderr, "wtest: (no weft scheduler in this test)\n");
    fflush(stderr);

    /* The runner kills us about now; if not, leave by ourselves. */
    pthread_mutex_lock(&wd.lock);
    bool paused = wait_until_or_stop(exit_at);
    pthread_mutex_unlock(&wd.lock);
    if (paused)
        return arg;   /* a fork in wt_run_child: the new thread takes over */
    fprintf(stderr, "wtest: %s timed out; exiting\n", test);
    fflush(stderr);
    _exit(124);
}

/* Starts the thread if a test is armed and it is not running. */
static void start(void)
{
    pthread_mutex_lock(&wd.lock);
    bool go = wd.armed && !wd.running;
    if (go) {
        wd.running = true;
        wd.stop = false;
    }
    pthread_mutex_unlock(&wd.lock);
    if (go && pthread_create(&wd.thread, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "wtest: cannot start the watchdog of %s\n", wd.test);
        pthread_mutex_lock(&wd.lock);
        wd.running = false;
        pthread_mutex_unlock(&wd.lock);
    }
}

void wt__watchdog_pause(void)
{
    pthread_once(&init_once, init_cond);
    pthread_mutex_lock(&wd.lock);
    bool running = wd.running;
    wd.stop = true;
    pthread_cond_broadcast(&wd.cond);
    pthread_mutex_unlock(&wd.lock);
    if (running)
        pthread_join(wd.thread, NULL);
    pthread_mutex_lock(&wd.lock);
    wd.running = false;
    wd.stop = false;
    pthread_mutex_unlock(&wd.lock);
}

void wt__watchdog_resume(void)
{
    start();
}

void wt_watchdog_arm(const char *suite, const char *name, double timeout_s)
{
    if (timeout_s <= 0) {
        const char *env = getenv("WEFT_TEST_TIMEOUT");
        timeout_s = env ? atof(env) : 120.0;
    }
    if (timeout_s <= 0)
        return;
    wt__watchdog_pause();   /* a watchdog armed before (inherited by a child) gives way */
#ifdef _WIN32
    weft__stall_track_all = true;
#else
    if (&weft__stall_track_all)
        weft__stall_track_all = true;
#endif
    double margin = timeout_s / 10 < 2.0 ? timeout_s / 10 : 2.0;
    uint64_t now = now_ns();
    pthread_mutex_lock(&wd.lock);
    snprintf(wd.test, sizeof wd.test, "%s::%s", suite, name);
    wd.timeout = timeout_s;
    wd.dump_at = now + (uint64_t)((timeout_s - margin) * 1e9);
    wd.exit_at = now + (uint64_t)((timeout_s + 2.0) * 1e9);
    wd.armed = true;
    pthread_mutex_unlock(&wd.lock);
    start();
}

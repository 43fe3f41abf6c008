/* This file is private to weft's tests: the plain runner behind wtest.h.
 *
 * Runs every registered test in a forked child (a crash or a hang fails
 * that test only), kills a child that outlives its timeout (default 120 s,
 * WEFT_TEST_TIMEOUT overrides; the child's watchdog prints weft's state
 * first) and ends with the line "N passed, N failed", plus ", N skipped"
 * when a test was disabled or called WT_SKIP (its child prints why and
 * exits with WT_SKIP_EXIT; under WEFT_TEST_NOFORK a skip ends the run).
 * Arguments: substrings; only tests whose "suite::name" contains one run.
 * WEFT_TEST_NOFORK=1 runs tests in-process (for a debugger).
 * Windows has no fork: each test runs in a new process of the program
 * instead (wtest_win.c), started with --wt-one SUITE::NAME.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#ifndef _WIN32
# include <sys/wait.h>
#endif
#include <time.h>
#include <unistd.h>

#include "wtest.h"

static struct wt_test *head, **tail = &head;

void wt_register(struct wt_test *t)
{
    *tail = t;
    tail = &t->next;
}

void wt_fail_at(const char *file, int line, const char *cond, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: assertion failed: %s", file, line, cond);
    /* fmt starts with a space (see wtest.h): never a zero-length format. */
    if (fmt && *fmt == ' ')
        fmt++;
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1);
}

void wt_skip_at(const char *file, int line, const char *fmt, ...)
{
    fprintf(stderr, "%s:%d: skipped", file, line);
    if (fmt && *fmt == ' ')
        fmt++;
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fflush(NULL);
    _exit(WT_SKIP_EXIT);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool selected(const struct wt_test *t, int argc, char **argv)
{
    if (argc <= 1)
        return true;
    char full[256];
    snprintf(full, sizeof full, "%s::%s", t->suite, t->name);
    for (int i = 1; i < argc; i++)
        if (strstr(full, argv[i]))
            return true;
    return false;
}

enum verdict { V_FAIL, V_PASS, V_SKIP };

/* Whether the child's end matches what the test expects; a skip is an
 * exit with WT_SKIP_EXIT where the test expects another code. */
static enum verdict judge(const struct wt_test *t, int status, bool timed_out, char *why, size_t cap)
{
    if (timed_out) {
        snprintf(why, cap, "timed out");
        return V_FAIL;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (t->opts->signal == sig)
            return V_PASS;
#ifdef _WIN32
        snprintf(why, cap, "ended by exception or abort (exit code %#x)", (unsigned)status);
#else
        snprintf(why, cap, "killed by signal %d (%s)", sig, strsignal(sig));
#endif
        return V_FAIL;
    }
    int code = WEXITSTATUS(status);
    if (code == WT_SKIP_EXIT && t->opts->exit_code != WT_SKIP_EXIT)
        return V_SKIP;
    if (t->opts->signal) {
        snprintf(why, cap, "expected signal %d, exited %d", t->opts->signal, code);
        return V_FAIL;
    }
    if (code != t->opts->exit_code) {
        snprintf(why, cap, "exit code %d", code);
        return V_FAIL;
    }
    return V_PASS;
}

static enum verdict run_one(const struct wt_test *t, double default_timeout, char *why, size_t cap)
{
    if (getenv("WEFT_TEST_NOFORK")) {
        t->fn();
        return V_PASS;
    }
    double limit = t->opts->timeout > 0 ? t->opts->timeout : default_timeout;
#ifdef _WIN32
    char args[300];
    snprintf(args, sizeof args, "--wt-one %s::%s", t->suite, t->name);
    bool timed_out;
    int status = wt__win_spawn(args, NULL, 0, limit, &timed_out);
    if (status == -1 && !timed_out) {
        snprintf(why, cap, "CreateProcess failed");
        return V_FAIL;
    }
    return judge(t, status, timed_out, why, cap);
#else
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, cap, "fork: %s", strerror(errno));
        return V_FAIL;
    }
    if (pid == 0) {
        wt_watchdog_arm(t->suite, t->name, limit);   /* dumps weft's state just before the kill */
        t->fn();
        fflush(NULL);
        _exit(0);
    }
    double start = now_s();
    int status = 0;
    bool timed_out = false;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            snprintf(why, cap, "waitpid: %s", strerror(errno));
            return V_FAIL;
        }
        if (now_s() - start > limit) {
            /* SIGQUIT first: a test may print its state on it. */
            kill(pid, SIGQUIT);
            usleep(200000);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = true;
            break;
        }
        usleep(1000);
    }
    return judge(t, status, timed_out, why, cap);
#endif
}

int main(int argc, char **argv)
{
#ifdef _WIN32
    wt__win_child_main(argc, argv);   /* a death test's child: does not return */
    if (argc == 3 && strcmp(argv[1], "--wt-one") == 0) {
        for (struct wt_test *t = head; t; t = t->next) {
            char full[256];
            snprintf(full, sizeof full, "%s::%s", t->suite, t->name);
            if (strcmp(full, argv[2]) != 0)
                continue;
            const char *e = getenv("WEFT_TEST_TIMEOUT");
            wt_watchdog_arm(t->suite, t->name, t->opts->timeout > 0 ? t->opts->timeout : e ? atof(e) : 120.0);
            t->fn();
            fflush(NULL);
            _exit(0);
        }
        fprintf(stderr, "no test %s\n", argv[2]);
        return 2;
    }
#endif
    const char *env = getenv("WEFT_TEST_TIMEOUT");
    double default_timeout = env ? atof(env) : 120.0;
    unsigned passed = 0, failed = 0, skipped = 0;

#ifdef _WIN32
    /* The C runtime has no line buffering (_IOLBF is full buffering, and
     * refuses a size of 0): unbuffered keeps the lines in order with the
     * children's. */
    setvbuf(stdout, NULL, _IONBF, 0);
#else
    setvbuf(stdout, NULL, _IOLBF, 0);
#endif
    for (struct wt_test *t = head; t; t = t->next) {
        if (!selected(t, argc, argv))
            continue;
        if (t->opts->disabled) {
            skipped++;
            continue;
        }
        char why[256] = "";
        double start = now_s();
        enum verdict v = run_one(t, default_timeout, why, sizeof why);
        double took = now_s() - start;
        if (v == V_PASS) {
            passed++;
            printf("[PASS] %s::%s (%.2f s)\n", t->suite, t->name, took);
        } else if (v == V_SKIP) {
            skipped++;
            printf("[SKIP] %s::%s (%.2f s)\n", t->suite, t->name, took);
        } else {
            failed++;
            printf("[FAIL] %s::%s: %s (%.2f s)\n", t->suite, t->name, why, took);
        }
    }
    if (skipped)
        printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
    else
        printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}

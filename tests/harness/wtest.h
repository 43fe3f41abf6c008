/* This file is private to weft's tests.
 *
 * One test source, two runners. With WEFT_TEST_CRITERION defined the
 * macros below are Criterion's; without it (the tsan preset, where
 * Criterion 2.4.1 cannot run, and the stress programs) they register with
 * the small runner in wtest_main.c, which forks each test, enforces its
 * timeout and prints "N passed, N failed".
 *
 *   WT_TEST(suite, name, .timeout = 10) { WT_ASSERT(x == 1, "x is %d", x); }
 *
 * Options understood by both: .timeout (seconds), .signal (expected
 * terminating signal), .exit_code, .disabled, .description.
 *
 * A test whose scenario did not arise (it retried a bounded number of
 * times) ends with WT_SKIP("scenario did not arise after %d tries", n):
 * not a failure of weft. Both runners print the reason and count the test
 * as skipped; neither counts it as failed.
 *
 * Every test has a watchdog (wtest_watchdog.c): shortly before its
 * timeout (.timeout, else WEFT_TEST_TIMEOUT, else 120 s) a test still
 * running prints the state of every live scheduler: blocked fibers, what
 * they wait on, their tasks, the workers. Under Criterion, WT_TEST sets
 * .init for it: tests do not set their own.
 */
#ifndef WEFT_WTEST_H
#define WEFT_WTEST_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A worker count of a test's loop as weft_config.workers: 0, the mode
 * with no workers, is WEFT_WORKERS_NONE there (a config's 0 is the
 * default, one worker per CPU). */
static inline unsigned wt_workers(unsigned n)
{
    return n ? n : ~0u;   /* WEFT_WORKERS_NONE */
}

/* Runs the statement after it once per worker count listed, in order,
 * with the unsigned W set to each in turn (0: no workers, the calling
 * thread bound; give weft_config wt_workers(W)):
 *
 *   WT_FOR_WORKERS(w, 0, 1, 2, 8) {
 *       weft_config c = { .workers = wt_workers(w) };
 *       ...
 *   }
 *
 * break and continue work as in a for loop. The list is a compound
 * literal indexed in the loop's condition; the index's name carries the
 * line, so loops nested on other lines do not shadow it. */
#define WT__CAT2(a, b) a##b
#define WT__CAT(a, b) WT__CAT2(a, b)
#define WT__NCOUNTS(...) (sizeof((const unsigned[]){ __VA_ARGS__ }) / sizeof(unsigned))
#define WT_FOR_WORKERS(W, ...)                                                  \
    for (unsigned WT__CAT(wt__k_, __LINE__) = 0, W = 0;                         \
         WT__CAT(wt__k_, __LINE__) < WT__NCOUNTS(__VA_ARGS__) &&                \
         ((W = ((const unsigned[]){ __VA_ARGS__ })[WT__CAT(wt__k_, __LINE__)]), 1); \
         WT__CAT(wt__k_, __LINE__)++)

/* Starts the calling process's watchdog for test suite::name (timeout_s
 * <= 0: the default) and makes schedulers created from now on track
 * their blocked fibers for its dump. The runners call it; a test may call
 * it in a child of its own. */
void wt_watchdog_arm(const char *suite, const char *name, double timeout_s);
/* Stops and restarts the watchdog thread (same deadline), so that
 * wt_run_child forks a single-threaded process. Harness only. */
void wt__watchdog_pause(void);
void wt__watchdog_resume(void);

/* The state of scheduler s as the watchdog prints it (blocked fibers,
 * what they wait on, their tasks, the workers), as a string the caller
 * frees; NULL without memory or in a build without the scheduler. Tests
 * wait for a fiber to show as blocked by polling it ("waits on event
 * 0x..."), which the harness makes possible by having every scheduler
 * track its blocked fibers. */
struct weft_sched;
char *wt_sched_state(struct weft_sched *s);

/* A test's options, as both runners take them. */
struct wt_opts {
    int unused_;
    double timeout;
    int signal;
    int exit_code;
    bool disabled;
    const char *description;
};

#ifdef WEFT_TEST_CRITERION

#include <criterion/criterion.h>

/* Criterion runs .init in the test's own process, before the body. The
 * options are read from a copy of our own: the test's Criterion data is
 * not reachable from there. */
#define WT_TEST(suite, name, ...)                                            \
    static const struct wt_opts wt_opts_##suite##_##name = { 0, __VA_ARGS__ };\
    static void wt_init_##suite##_##name(void)                               \
    { wt_watchdog_arm(#suite, #name, wt_opts_##suite##_##name.timeout); }    \
    Test(suite, name, .init = wt_init_##suite##_##name, ##__VA_ARGS__)
#define WT_ASSERT(...) cr_assert(__VA_ARGS__)
#define WT_FAIL(...) cr_assert_fail(__VA_ARGS__)
#define WT_SKIP(...) cr_skip_test(__VA_ARGS__)

#else /* plain runner */

struct wt_test {
    const char *suite;
    const char *name;
    void (*fn)(void);
    const struct wt_opts *opts;
    struct wt_test *next;
};

/* mingw-w64 calls the C runtime's formats "printf" and its own C99 ones
 * (which the tests get: __USE_MINGW_ANSI_STDIO) "gnu_printf". */
#ifdef _WIN32
# define WT__PRINTF gnu_printf
#else
# define WT__PRINTF printf
#endif

void wt_register(struct wt_test *t);
void wt_fail_at(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(WT__PRINTF, 4, 5)));
void wt_skip_at(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(WT__PRINTF, 3, 4)));

/* The exit status of a test child that called WT_SKIP (automake's). */
#define WT_SKIP_EXIT 77

#define WT_TEST(suite, name, ...)                                            \
    static void wt_fn_##suite##_##name(void);                                \
    static const struct wt_opts wt_opts_##suite##_##name = { 0, __VA_ARGS__ };\
    static struct wt_test wt_t_##suite##_##name = {                          \
        #suite, #name, wt_fn_##suite##_##name, &wt_opts_##suite##_##name, 0};\
    __attribute__((constructor)) static void wt_reg_##suite##_##name(void)   \
    { wt_register(&wt_t_##suite##_##name); }                                 \
    static void wt_fn_##suite##_##name(void)

#define WT_ASSERT(cond, ...)                                                 \
    do { if (!(cond)) wt_fail_at(__FILE__, __LINE__, #cond, " " __VA_ARGS__); } while (0)
#define WT_FAIL(...) wt_fail_at(__FILE__, __LINE__, "failure", " " __VA_ARGS__)
#define WT_SKIP(...) wt_skip_at(__FILE__, __LINE__, " " __VA_ARGS__)

#endif /* WEFT_TEST_CRITERION */

/* Equality with both values printed, for integers. */
#define WT_ASSERT_EQ(a, b)                                                   \
    do {                                                                     \
        long long wt_a_ = (long long)(a), wt_b_ = (long long)(b);           \
        WT_ASSERT(wt_a_ == wt_b_, "%s == %s: %lld != %lld", #a, #b, wt_a_, wt_b_); \
    } while (0)

/* ---- stress sizing and seeds -------------------------------------- */

/* WEFT_STRESS_SCALE sizes stress loops (1 in release; the presets set it
 * lower for sanitizer builds). Never below 0.001. */
static inline double wt_scale(void)
{
    const char *s = getenv("WEFT_STRESS_SCALE");
    double v = s ? atof(s) : 1.0;
    return v < 0.001 ? 0.001 : v;
}

/* n scaled, at least lo. */
static inline uint64_t wt_scaled(uint64_t n, uint64_t lo)
{
    double v = (double)n * wt_scale();
    return v < (double)lo ? lo : (uint64_t)v;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t wt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The run's seed: WEFT_SEED if set, else derived from the clock. Printed
 * once so a failing run can be replayed. */
static inline uint64_t wt_seed(void)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *s = getenv("WEFT_SEED");
        seed = s ? strtoull(s, NULL, 0) : ((uint64_t)time(NULL) * 2654435761u) | 1;
        fprintf(stderr, "seed: WEFT_SEED=%" PRIu64 "\n", seed);
    }
    return seed;
}

/* xorshift64*: a small, fast, reproducible generator for tests. */
static inline uint64_t wt_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 2685821657736338717ull;
}

/* Runs fn(arg) in a forked child with stderr captured into buf (NUL
 * terminated, truncated to cap). Returns the raw wait status. For death
 * tests that check the message, in either runner. */
int wt_run_child(void (*fn)(void *), void *arg, char *buf, size_t cap);

/* Waits up to deadline_ns for child pid (a fork of this process) and
 * returns its wait status, or: WT_REAP_HUNG (killed at the deadline),
 * WT_REAP_SANITIZER (killed early: a thread of it waits, a second on,
 * on a lock of the sanitizer runtime held at the fork by another thread
 * of this process; not weft's: see wtest_child.c; a test forks again), or
 * WT_REAP_ERROR (waitpid failed). Not on Windows. */
#define WT_REAP_HUNG (-1)
#define WT_REAP_ERROR (-2)
#define WT_REAP_SANITIZER (-3)
#ifndef _WIN32
#include <sys/types.h>
int wt_reap(pid_t pid, uint64_t deadline_ns);
#endif

/* How %p begins in weft's messages: 0x with glibc; mingw-w64's C99
 * printf writes the bare hex digits, zero-padded to 16 (user addresses
 * on x64 Windows are below 2^47, so the first two are 0). */
#ifdef _WIN32
# define WT_PTR0X "00"
#else
# define WT_PTR0X "0x"
#endif

#ifdef _WIN32
/* Windows has no fork and no wait status: wt_run_child starts the program
 * again (wtest_win.c) and returns the child's exit code, which these
 * read as a wait status. abort() exits with 3, read as SIGABRT; an
 * unhandled exception (0xC0000000 and up: an access violation, a stack
 * overflow) as SIGSEGV. */
# include <signal.h>
# define WIFSIGNALED(s) ((unsigned)(s) == 3u || (unsigned)(s) >= 0xC0000000u)
# define WTERMSIG(s)    ((unsigned)(s) == 3u ? SIGABRT : SIGSEGV)
# define WIFEXITED(s)   (!WIFSIGNALED(s))
# define WEXITSTATUS(s) ((int)((unsigned)(s) & 0xffu))
/* The harness's own: start this program with args (stderr into buf
 * unless buf is NULL; a timeout of 0: none), and its child side. */
int wt__win_spawn(const char *args, char *buf, size_t cap, double timeout_s, bool *timed_out);
bool wt__win_child_main(int argc, char **argv);
#endif

#endif /* WEFT_WTEST_H */

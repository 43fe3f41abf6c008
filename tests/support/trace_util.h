/* This file is private to weft's tests: helpers shared by the trace
 * tests (tests/core/test_trace_*.c).
 *
 * Schedulers opened and closed per worker count, recordings started,
 * stopped and captured with their return codes checked, batches of named
 * tasks, and short looks into a parsed trace (trace_check.h).
 *
 * Unlike trace_check, most of these assert (WT_ASSERT): call them from
 * the test's thread only. busy_ns, nap_ns, spin_until, spawn_named and
 * streq do not, and may be called from tasks. Built into each test with
 * its runner's definitions (Criterion or the plain runner, wtest.h). */
#ifndef WEFT_TEST_TRACE_UTIL_H
#define WEFT_TEST_TRACE_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_check.h"
#include "weft.h"
#include "wtest.h"

#define US  ((uint64_t)1000)
#define MS  ((uint64_t)1000000)
#define BIG ((size_t)1 << 16)

/* The worker counts a case runs with where it depends on them: 0 (the
 * test thread bound), 1, 2 and 8. */
static const unsigned wcounts[] = { 0, 1, 2, 8 };
#define NWCOUNTS (sizeof wcounts / sizeof wcounts[0])

/* Writes s's trace into t (tr_capture) and asserts that it is valid. */
#define CAPTURE(s, t)                                                        \
    do {                                                                     \
        char why_[2048];                                                     \
        bool ok_ = tr_capture((s), (t), NULL, why_, sizeof why_);            \
        WT_ASSERT(ok_, "%s", why_);                                          \
    } while (0)

/* A scheduler with `workers` workers and the observer obs (may be NULL). */
weft_sched *sched_new(unsigned workers, const weft_observer *obs);
/* workers 0: the test thread is bound (it runs the tasks while it waits). */
weft_sched *open_s(unsigned workers);
/* Undoes open_s. */
void close_s(weft_sched *s, unsigned workers);

/* weft_trace_start(s, n) and weft_trace_stop(s), asserted WEFT_OK. */
void start_ok(weft_sched *s, size_t n);
void stop_ok(weft_sched *s);

/* Spins for ns; sleeps for ns (the thread, not the fiber). */
void busy_ns(uint64_t ns);
void nap_ns(uint64_t ns);
/* Waits (yielding the thread) until *v >= want; false after ns. */
bool spin_until(atomic_int *v, int want, uint64_t ns);

/* weft_spawn_ex with only a name. */
int spawn_named(weft_sched *s, weft_fn fn, void *arg, const char *name);
/* n tasks named name, each sleeping `sleep` ns (weft_sleep) then busy for
 * `busy` ns; returns once all ran. */
void run_batch(weft_sched *s, const char *name, int n, uint64_t busy, uint64_t sleep);

/* The number of runs of tasks named name in t. */
size_t nruns(const tr_trace *t, const char *name);
/* Run r's slice k. */
const tr_event *slice(const tr_trace *t, const tr_run *r, size_t k);
/* Both non-NULL and equal. */
bool streq(const char *a, const char *b);
/* Every thread's X events number at most cap (each needs an event of its
 * thread's buffer). */
void assert_per_thread_at_most(const tr_trace *t, size_t cap, const char *what);

#endif /* WEFT_TEST_TRACE_UTIL_H */

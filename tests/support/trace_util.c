/* This file is private to weft's tests: see trace_util.h. */
#define _GNU_SOURCE
#include "trace_util.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

weft_sched *sched_new(unsigned workers, const weft_observer *obs)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.observer = obs;
    weft_sched *s = NULL;
    int rc = weft_sched_create(&s, &c);
    WT_ASSERT(rc == WEFT_OK, "create(%u workers): %s", workers, weft_err_name(rc));
    return s;
}

/* workers 0: the test thread is bound (it runs the tasks while it waits). */
weft_sched *open_s(unsigned workers)
{
    weft_sched *s = sched_new(workers, NULL);
    if (workers == 0)
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
    return s;
}

void close_s(weft_sched *s, unsigned workers)
{
    if (workers == 0)
        weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

void start_ok(weft_sched *s, size_t n)
{
    int rc = weft_trace_start(s, n);
    WT_ASSERT(rc == WEFT_OK, "weft_trace_start(s, %zu): %s", n, weft_err_name(rc));
}

void stop_ok(weft_sched *s)
{
    int rc = weft_trace_stop(s);
    WT_ASSERT(rc == WEFT_OK, "weft_trace_stop: %s", weft_err_name(rc));
}

void busy_ns(uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (wt_now_ns() < end) {
    }
}

void nap_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

bool spin_until(atomic_int *v, int want, uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (atomic_load(v) < want) {
        if (wt_now_ns() > end)
            return false;
        sched_yield();
    }
    return true;
}

int spawn_named(weft_sched *s, weft_fn fn, void *arg, const char *name)
{
    weft_spawn_opts o = { .name = name };
    return weft_spawn_ex(s, fn, arg, &o);
}

/* A batch of tasks under one name; each sleeps first if sleep_ns. */
struct batch {
    weft_waitgroup wg;
    atomic_int ran;
    uint64_t busy_ns, sleep_ns;
};

static void batch_task(void *p)
{
    struct batch *b = p;
    if (b->sleep_ns)
        weft_sleep(b->sleep_ns);
    if (b->busy_ns)
        busy_ns(b->busy_ns);
    atomic_fetch_add(&b->ran, 1);
    weft_waitgroup_done(&b->wg);
}

void run_batch(weft_sched *s, const char *name, int n, uint64_t busy, uint64_t sleep)
{
    struct batch b = { .busy_ns = busy, .sleep_ns = sleep };
    weft_waitgroup_init(&b.wg, n);
    for (int i = 0; i < n; i++) {
        int rc = spawn_named(s, batch_task, &b, name);
        WT_ASSERT(rc == WEFT_OK, "spawn %s: %s", name, weft_err_name(rc));
    }
    WT_ASSERT_EQ(weft_waitgroup_wait(&b.wg), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&b.ran), n);
    weft_waitgroup_destroy(&b.wg);
}

size_t nruns(const tr_trace *t, const char *name)
{
    return tr_runs_named(t, name, NULL, 0);
}

const tr_event *slice(const tr_trace *t, const tr_run *r, size_t k)
{
    return &t->ev[r->slices[k]];
}

bool streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* Every thread's X events number at most cap (each needs an event of its
 * thread's buffer). */
void assert_per_thread_at_most(const tr_trace *t, size_t cap, const char *what)
{
    for (int i = 0; i < t->nnames; i++) {
        size_t n = tr_count_tid(t, t->names_tid[i], 'X');
        WT_ASSERT(n <= cap, "%s: tid %d has %zu complete events with %zu events per thread", what,
                  t->names_tid[i], n, cap);
    }
}

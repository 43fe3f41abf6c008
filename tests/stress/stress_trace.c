/* Stress: tracing racing work, from weft.h's "tracing" section alone. A
 * plain C program (run under TSAN too) that prints "N passed, N failed".
 *
 *  - chaos_W: rounds of tests/support/trace_chaos.c at W workers: two
 *    plain threads, a bound thread and tasks call weft_trace_start, _stop
 *    and _write (to /dev/null and to memory, every trace parsed and
 *    checked) while tasks block on rendezvous channels, events and
 *    sleeps and a bound thread runs a graph with parallel loops; then a
 *    quiet start/stop: every task that ran in between is in the trace.
 *  - bind_churn: threads bind, run pinned tasks and zones, and unbind in
 *    a loop (a bound thread's buffer is made at bind) while another
 *    thread starts, stops and writes: every trace valid, no crash.
 *  - restart_cycles: a thousand start / work / write-while-recording /
 *    stop / write cycles with buffer sizes from 16 to 4096: each trace
 *    valid, each holds no task of an earlier recording.
 *
 * Sizes follow WEFT_STRESS_SCALE; WEFT_SEED replays the random choices.
 * A hang fails the test at its timeout (the watchdog prints weft's
 * state). Threads other than the test's record problems in atomics and
 * buffers; the test thread asserts. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "wtest.h"
#include "../support/trace_chaos.h"
#include "../support/trace_check.h"

#define MS ((uint64_t)1000000)

static void chaos(unsigned w)
{
    uint64_t rounds = wt_scaled(8, 2), dur = wt_scaled(400, 100) * MS;
    for (uint64_t r = 0; r < rounds; r++) {
        trace_chaos_stats st;
        char why[2048];
        bool ok = trace_chaos_round(w, dur, wt_seed() * 31 + r * 7 + w, &st, why, sizeof why);
        fprintf(stderr,
                "chaos: %u workers, round %" PRIu64 ": %" PRIu64 " starts (%" PRIu64 " busy), %" PRIu64 " stops, %" PRIu64
                " writes, %" PRIu64 " parsed, %" PRIu64 " from tasks, %" PRIu64 " batches, %" PRIu64 " graph runs%s\n",
                w, r, st.starts_ok, st.starts_busy, st.stops, st.writes, st.parsed, st.task_ops, st.batches,
                st.graph_runs, st.late_checked ? "" : "; final check skipped: events dropped");
        WT_ASSERT(ok, "%u workers, round %" PRIu64 ": %s", w, r, why);
    }
}

WT_TEST(stress_trace, chaos_0, .timeout = 600) { chaos(0); }
WT_TEST(stress_trace, chaos_1, .timeout = 600) { chaos(1); }
WT_TEST(stress_trace, chaos_2, .timeout = 600) { chaos(2); }
WT_TEST(stress_trace, chaos_8, .timeout = 600) { chaos(8); }

/* ---- bind_churn ------------------------------------------------------------------- */

struct churn {
    weft_sched *s;
    atomic_bool stop;
    atomic_int bad, binds;
    pthread_mutex_t lock;
    char err[1024];
};

static void churn_fail(struct churn *c, const char *what)
{
    pthread_mutex_lock(&c->lock);
    if (!atomic_load(&c->bad))
        snprintf(c->err, sizeof c->err, "%s", what);
    atomic_store(&c->bad, 1);
    pthread_mutex_unlock(&c->lock);
}

static void churn_task(void *p)
{
    weft_trace_begin("churn-zone-in-task");
    weft_trace_end();
    if ((uintptr_t)p % 2)
        weft_yield();
}

static void *churn_binder(void *p)
{
    struct churn *c = p;
    while (!atomic_load(&c->stop)) {
        int rc = weft_sched_bind(c->s);
        if (rc != WEFT_OK) {
            churn_fail(c, "bind failed");
            break;
        }
        atomic_fetch_add(&c->binds, 1);
        int id = weft_thread_id();
        for (uintptr_t i = 0; i < 4; i++) {
            weft_spawn_opts o = { .pinned = true, .thread = id, .name = "churn-pinned" };
            if (weft_spawn_ex(c->s, churn_task, (void *)i, &o) != WEFT_OK)
                churn_fail(c, "pinned spawn failed");
        }
        weft_trace_begin("churn-zone");
        if (weft_pinned_run(UINT64_MAX) < 0)
            churn_fail(c, "run_pinned failed");
        weft_trace_end();
        weft_sched_unbind();
    }
    return NULL;
}

static void *churn_tracer(void *p)
{
    struct churn *c = p;
    uint64_t rng = wt_seed() | 1;
    while (!atomic_load(&c->stop)) {
        switch (wt_rand(&rng) % 4) {
        case 0: {
            int rc = weft_trace_start(c->s, 16 + wt_rand(&rng) % 2000);
            if (rc != WEFT_OK && rc != WEFT_EBUSY)
                churn_fail(c, "start failed");
            break;
        }
        case 1:
            if (weft_trace_stop(c->s) != WEFT_OK)
                churn_fail(c, "stop failed");
            break;
        default: {
            tr_trace t;
            char why[1024];
            if (!tr_capture(c->s, &t, NULL, why, sizeof why))
                churn_fail(c, why);
            tr_free(&t);
            break;
        }
        }
    }
    return NULL;
}

WT_TEST(stress_trace, bind_churn, .timeout = 600)
{
    static const unsigned ws[] = { 0, 1, 2 };
    for (size_t wi = 0; wi < 3; wi++) {
        weft_config cfg;
        weft_config_init(&cfg);
        cfg.workers = wt_workers(ws[wi]);
        struct churn c = { 0 };
        pthread_mutex_init(&c.lock, NULL);
        WT_ASSERT_EQ(weft_sched_create(&c.s, &cfg), WEFT_OK);
        WT_ASSERT_EQ(weft_trace_start(c.s, 256), WEFT_OK);
        pthread_t b[3], tr;
        for (int i = 0; i < 3; i++)
            WT_ASSERT_EQ(pthread_create(&b[i], NULL, churn_binder, &c), 0);
        WT_ASSERT_EQ(pthread_create(&tr, NULL, churn_tracer, &c), 0);
        uint64_t end = wt_now_ns() + wt_scaled(1000, 200) * MS;
        while (wt_now_ns() < end && !atomic_load(&c.bad)) {
            struct timespec ts = { 0, 5000000 };
            nanosleep(&ts, NULL);
        }
        atomic_store(&c.stop, true);
        for (int i = 0; i < 3; i++)
            WT_ASSERT_EQ(pthread_join(b[i], NULL), 0);
        WT_ASSERT_EQ(pthread_join(tr, NULL), 0);
        fprintf(stderr, "bind_churn: %u workers: %d binds\n", ws[wi], atomic_load(&c.binds));
        WT_ASSERT(!atomic_load(&c.bad), "%u workers: %s", ws[wi], c.err);
        tr_trace t;
        char why[1024];
        bool ok = tr_capture(c.s, &t, NULL, why, sizeof why);
        WT_ASSERT(ok, "%u workers, after the churn: %s", ws[wi], why);
        tr_free(&t);
        WT_ASSERT_EQ(weft_sched_destroy(c.s), WEFT_OK);
        pthread_mutex_destroy(&c.lock);
    }
}

/* ---- restart_cycles ------------------------------------------------------------------- */

struct rc_batch {
    weft_waitgroup wg;
};

static void rc_task(void *p)
{
    struct rc_batch *b = p;
    weft_waitgroup_done(&b->wg);
}

static const char *const rc_names[2] = { "cycle-even", "cycle-odd" };

WT_TEST(stress_trace, restart_cycles, .timeout = 900)
{
    static const unsigned ws[] = { 0, 1, 2, 8 };
    uint64_t cycles = wt_scaled(250, 20), rng = wt_seed() | 1;
    for (size_t wi = 0; wi < 4; wi++) {
        unsigned w = ws[wi];
        weft_config cfg;
        weft_config_init(&cfg);
        cfg.workers = wt_workers(w);
        weft_sched *s = NULL;
        WT_ASSERT_EQ(weft_sched_create(&s, &cfg), WEFT_OK);
        if (w == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        for (uint64_t k = 0; k < cycles; k++) {
            size_t size = 16 + (size_t)(wt_rand(&rng) % 4081);
            const char *name = rc_names[k % 2], *other = rc_names[(k + 1) % 2];
            WT_ASSERT_EQ(weft_trace_start(s, size), WEFT_OK);
            struct rc_batch b;
            int n = 20 + (int)(wt_rand(&rng) % 50);
            weft_waitgroup_init(&b.wg, n);
            for (int i = 0; i < n; i++) {
                weft_spawn_opts o = { .name = name };
                WT_ASSERT_EQ(weft_spawn_ex(s, rc_task, &b, &o), WEFT_OK);
            }
            WT_ASSERT_EQ(weft_waitgroup_wait(&b.wg), WEFT_OK);
            weft_waitgroup_destroy(&b.wg);
            tr_trace t;
            char why[1024];
            bool ok = tr_capture(s, &t, NULL, why, sizeof why);
            WT_ASSERT(ok, "%u workers, cycle %" PRIu64 ", recording: %s", w, k, why);
            WT_ASSERT(tr_runs_named(&t, other, NULL, 0) == 0, "%u workers, cycle %" PRIu64 ": the last recording's tasks",
                      w, k);
            if (t.dropped == 0)
                WT_ASSERT((int)tr_runs_named(&t, name, NULL, 0) == n, "%u workers, cycle %" PRIu64 ": %zu of %d tasks", w,
                          k, tr_runs_named(&t, name, NULL, 0), n);
            tr_free(&t);
            WT_ASSERT_EQ(weft_trace_stop(s), WEFT_OK);
            ok = tr_capture(s, &t, NULL, why, sizeof why);
            WT_ASSERT(ok, "%u workers, cycle %" PRIu64 ", stopped: %s", w, k, why);
            tr_free(&t);
        }
        if (w == 0)
            weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* Tracing's calls and their return codes (weft_trace_start/stop/write),
 * written from weft.h alone (the "tracing" section) before the
 * implementation, as a user reads them. The other trace tests are
 * test_trace_tasks.c, _zones.c, _block.c, _race.c and _observer.c; the
 * helpers they share are in tests/support/trace_util.h.
 *
 * Each trace is written into memory and read back with the strict JSON
 * parser of tests/support/tjson.c; trace_check.c then checks what holds
 * for every trace (see trace_check.h) and the cases below what their
 * calls imply:
 *  - json_parser: the parser itself accepts and refuses what JSON does;
 *  - args, write_without_recording, write_errors, restart: the return
 *    codes and what a new recording discards;
 *  - full_buffer: 16, 17 (32: a power of two) and 64 events per thread
 *    and thousands of tasks: dropped > 0, at most that many slices per
 *    thread, the rest valid; a smaller start reuses the buffers whole;
 *  - from_task: start, stop and write called from a task;
 *  - two_schedulers, zero_workers: recordings are per scheduler, and one
 *    without workers records its bound thread;
 *  - enomem: a start or write that cannot allocate changes nothing.
 * Worker counts 0 (the test thread bound), 1, 2 and 8 where the case
 * depends on them.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into fields the test thread checks after a wait. */
#define _GNU_SOURCE
#include <math.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../support/tjson.h"
#include "../support/trace_check.h"
#include "../support/trace_util.h"

/* ---- the JSON parser itself --------------------------------------------------- */

static bool parses(const char *s)
{
    tj_value *v = tj_parse(s, strlen(s), NULL, 0);
    tj_free(v);
    return v != NULL;
}

WT_TEST(trace, json_parser, .timeout = 30)
{
    static const char *good[] = {
        "{}", "[]", "0", "-0", "1.5e+3", "-12.25E-2", "true", "null", " [ 1 , 2 ] ",
        "\"a\\u00e9\\ud83d\\ude00\\n\"", "{\"a\":[1,2,{\"b\":null}],\"c\":true,\"d\":false}",
        "\"\xc3\xa9\xe2\x82\xac\"",
    };
    static const char *bad[] = {
        "", "{", "[1,]", "{\"a\":1,}", "01", "+1", "1.", "1.e3", ".5", "NaN", "Infinity", "-Infinity",
        "nan", "-", "\"\x01\"", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "[1]x", "'a'", "{a:1}", "tru",
        "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "[1 2]", "{\"a\" 1}", "\"abc", "[1,,2]", "1 2",
        "\"tab\there\"", "[\"a\"\"b\"]",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        WT_ASSERT(parses(good[i]), "rejected valid JSON: %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        WT_ASSERT(!parses(bad[i]), "accepted invalid JSON: %s", bad[i]);

    const char *t = "{\"k\":\"a\\\"b\\\\c\\/d\\u0041\\ud83d\\ude00\\t\",\"n\":-1.25e2,\"arr\":[true,false,null]}";
    char err[128];
    tj_value *v = tj_parse(t, strlen(t), err, sizeof err);
    WT_ASSERT(v != NULL, "%s", err);
    WT_ASSERT(streq(tj_get_str(v, "k"), "a\"b\\c/dA\xf0\x9f\x98\x80\t"));
    double d = 0;
    WT_ASSERT(tj_get_num(v, "n", &d) && d == -125);
    const tj_value *arr = tj_get(v, "arr");
    WT_ASSERT(arr && arr->len == 3 && tj_at(arr, 0)->b && !tj_at(arr, 1)->b && tj_at(arr, 2)->type == TJ_NULL);
    WT_ASSERT(tj_at(arr, 3) == NULL && tj_get(v, "missing") == NULL && tj_get_str(v, "n") == NULL);
    tj_free(v);

    char deep[600];
    memset(deep, '[', 300);
    memset(deep + 300, ']', 300);
    tj_value *dv = tj_parse(deep, sizeof deep, NULL, 0);
    WT_ASSERT(dv == NULL, "300 nested arrays accepted past TJ_MAX_DEPTH");
}

/* ---- arguments and return codes ----------------------------------------------- */

WT_TEST(trace, args, .timeout = 120)
{
    FILE *devnull = fopen("/dev/null", "w");
    WT_ASSERT(devnull != NULL);
    WT_ASSERT_EQ(weft_trace_start(NULL, 64), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_trace_stop(NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_trace_write(NULL, devnull), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_trace_write(NULL, NULL), WEFT_EINVAL);

    WT_FOR_WORKERS(w, 0, 1) {
        weft_sched *s = open_s(w);
        WT_ASSERT_EQ(weft_trace_write(s, NULL), WEFT_EINVAL);
        WT_ASSERT_EQ(weft_trace_stop(s), WEFT_OK);   /* not recording */
        WT_ASSERT_EQ(weft_trace_stop(s), WEFT_OK);

        static const size_t refused[] = { 0, 1, 15, ((size_t)1 << 24) + 1, SIZE_MAX };
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
            int rc = weft_trace_start(s, refused[i]);
            WT_ASSERT(rc == WEFT_EINVAL, "weft_trace_start(s, %zu): %s, not EINVAL", refused[i], weft_err_name(rc));
        }
        /* The refusals changed nothing: s is not recording. */
        start_ok(s, 16);
        int rc = weft_trace_start(s, 16);
        WT_ASSERT(rc == WEFT_EBUSY, "second start: %s, not EBUSY", weft_err_name(rc));
        rc = weft_trace_start(s, 4096);
        WT_ASSERT(rc == WEFT_EBUSY, "second start with another size: %s, not EBUSY", weft_err_name(rc));
        rc = weft_trace_start(s, 15);
        WT_ASSERT(rc == WEFT_EBUSY || rc == WEFT_EINVAL, "start(15) while recording: %s", weft_err_name(rc));

        /* The refused starts changed nothing either: still recording into
         * buffers of 16. */
        run_batch(s, "busy-refused", 600, 0, 0);
        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(nruns(&t, "busy-refused") > 0, "nothing recorded after refused starts");
        WT_ASSERT(t.dropped > 0, "600 tasks into 16 events per thread and nothing dropped");
        assert_per_thread_at_most(&t, 16, "after EBUSY starts");
        tr_free(&t);
        stop_ok(s);
        stop_ok(s);

        /* Any size in [16, 2^24] is accepted, not only powers of two. */
        static const size_t sizes[] = { 16, 17, 100, 1000, 4095, 65537 };
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            start_ok(s, sizes[i]);
            run_batch(s, "sized", 20, 0, 0);
            stop_ok(s);
            CAPTURE(s, &t);
            WT_ASSERT(nruns(&t, "sized") > 0, "size %zu: nothing recorded", sizes[i]);
            tr_free(&t);
        }
        WT_ASSERT_EQ(weft_trace_write(s, devnull), WEFT_OK);
        close_s(s, w);
    }
    fclose(devnull);
}

WT_TEST(trace, write_without_recording, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        tr_trace t;
        CAPTURE(s, &t);   /* nothing ran yet */
        WT_ASSERT_EQ(tr_count(&t, 0, NULL, NULL) - tr_count(&t, 'M', NULL, NULL), 0);
        WT_ASSERT(t.dropped == 0 && t.events == 0, "%u workers: no recording, dropped %g, events %g", w, t.dropped,
                  t.events);
        tr_free(&t);

        /* Work and zones while nothing records leave nothing either. */
        run_batch(s, "unrecorded", 50, 0, 10 * US);
        weft_trace_begin("unrecorded-zone");
        weft_trace_end();
        CAPTURE(s, &t);
        WT_ASSERT(tr_count(&t, 0, NULL, NULL) == tr_count(&t, 'M', NULL, NULL),
                  "%u workers: %zu events without any recording", w, t.nev);
        WT_ASSERT(t.dropped == 0 && t.events == 0);
        tr_free(&t);

        /* An empty recording is valid too. */
        start_ok(s, 64);
        stop_ok(s);
        CAPTURE(s, &t);
        WT_ASSERT_EQ(nruns(&t, "unrecorded"), 0);
        tr_free(&t);
        close_s(s, w);
    }
}

WT_TEST(trace, write_errors, .timeout = 60)
{
    weft_sched *s = open_s(1);
    start_ok(s, 4096);
    run_batch(s, "for-io", 200, 0, 0);
    stop_ok(s);

    /* A stream that cannot be written. */
    FILE *ro = fopen("/dev/null", "r");
    WT_ASSERT(ro != NULL);
    int rc = weft_trace_write(s, ro);
    WT_ASSERT(rc == WEFT_EIO, "write to a read-only stream: %s, not EIO", weft_err_name(rc));
    fclose(ro);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        setvbuf(full, NULL, _IONBF, 0);   /* every write reaches the device and fails */
        rc = weft_trace_write(s, full);
        WT_ASSERT(rc == WEFT_EIO, "write to /dev/full, unbuffered: %s, not EIO", weft_err_name(rc));
        fclose(full);
    }

    /* The failures consumed nothing: two writes after the stop give the
     * same events, and the tasks are there, at the same times: a stopped
     * recording keeps the clock rate its first write measured (measured
     * anew, two writes differed by 0.3% on a loaded machine). The nap
     * lets a rate measured anew drift. */
    tr_trace a, b;
    CAPTURE(s, &a);
    nap_ns(20 * MS);
    CAPTURE(s, &b);
    WT_ASSERT(a.nev == b.nev, "two writes of a stopped recording: %zu and %zu events", a.nev, b.nev);
    for (size_t i = 0; i < a.nev; i++) {
        const tr_event *x = &a.ev[i], *y = &b.ev[i];
        WT_ASSERT(x->ph == y->ph && x->tid == y->tid && streq(x->name ? x->name : "", y->name ? y->name : "") &&
                      x->run == y->run,
                  "two writes of a stopped recording differ at event %zu", i);
        WT_ASSERT(x->ts == y->ts && x->dur == y->dur,
                  "two writes of a stopped recording: event %zu at %.4f+%.4f, then %.4f+%.4f", i, x->ts, x->dur,
                  y->ts, y->dur);
    }
    WT_ASSERT_EQ(nruns(&a, "for-io"), 200);
    tr_free(&a);
    tr_free(&b);
    close_s(s, 1);
}

WT_TEST(trace, restart, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        tr_trace t;
        start_ok(s, BIG);
        run_batch(s, "first", 30, 0, 5 * US);
        stop_ok(s);
        CAPTURE(s, &t);
        WT_ASSERT_EQ(nruns(&t, "first"), 30);
        tr_free(&t);

        start_ok(s, BIG);
        run_batch(s, "second", 30, 0, 5 * US);
        /* Written while still recording: so far. */
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        WT_ASSERT(nruns(&t, "first") == 0, "%u workers: a new recording still holds %zu runs of the last", w,
                  nruns(&t, "first"));
        WT_ASSERT_EQ(nruns(&t, "second"), 30);
        tr_free(&t);
        stop_ok(s);
        run_batch(s, "after-stop", 30, 0, 0);
        CAPTURE(s, &t);
        WT_ASSERT_EQ(nruns(&t, "first"), 0);
        WT_ASSERT_EQ(nruns(&t, "second"), 30);
        WT_ASSERT(nruns(&t, "after-stop") == 0, "%u workers: %zu tasks recorded after the stop", w,
                  nruns(&t, "after-stop"));
        tr_free(&t);
        close_s(s, w);
    }
}

/* ---- full buffers ------------------------------------------------------------------ */

static size_t pow2ceil(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

static void fb_graph_task(void *p)
{
    (void)p;
}

WT_TEST(trace, full_buffer, .timeout = 300)
{
    /* Buffers hold events_per_thread rounded up to a power of two, and a
     * start asking for fewer than the last reuses the last's whole: so
     * the sizes go up, and the limit is the largest power of two so far. */
    static const size_t sizes[] = { 16, 17, 64, 4096 };
    int ntasks = (int)wt_scaled(3000, 500);
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *prev = NULL;
        for (int i = 0; i < 100; i++) {
            weft_task *t = weft_graph_add(g, fb_graph_task, NULL);
            WT_ASSERT(t != NULL);
            weft_task_set_name(t, "fb-graph");
            if (prev && i % 3)
                WT_ASSERT_EQ(weft_task_precede(prev, t), WEFT_OK);
            prev = t;
        }
        size_t cap = 0;
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            if (pow2ceil(n) > cap)
                cap = pow2ceil(n);
            start_ok(s, n);
            run_batch(s, "fb", ntasks, 0, 0);
            run_batch(s, "fb-sleep", 50, 0, 10 * US);
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            tr_trace t;
            CAPTURE(s, &t);   /* while recording */
            if (cap < 100) {
                WT_ASSERT(t.dropped > 0, "%u workers, %zu per thread: %d tasks and nothing dropped", w, n, ntasks);
                assert_per_thread_at_most(&t, cap, "full buffer, recording");
            }
            tr_free(&t);
            stop_ok(s);
            CAPTURE(s, &t);   /* stopped */
            if (cap < 100) {
                WT_ASSERT(t.dropped > 0);
                assert_per_thread_at_most(&t, cap, "full buffer, stopped");
                /* What is left is the newest: some of the last batch. */
                WT_ASSERT(nruns(&t, "fb-graph") + nruns(&t, "fb-sleep") > 0,
                          "%u workers, %zu per thread: the newest tasks were dropped", w, n);
            } else {
                WT_ASSERT(nruns(&t, "fb-graph") == 100, "%u workers: %zu graph tasks recorded of 100", w,
                          nruns(&t, "fb-graph"));
            }
            tr_free(&t);
        }
        /* Fewer than the last start asked for: its 4096 are reused whole,
         * so 100 tasks fit. */
        start_ok(s, 16);
        run_batch(s, "fb-small", 100, 0, 0);
        stop_ok(s);
        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0 && nruns(&t, "fb-small") == 100,
                  "%u workers: start(16) after start(4096): %g dropped, %zu of 100 tasks (the buffers are reused whole)",
                  w, t.dropped, nruns(&t, "fb-small"));
        tr_free(&t);
        close_s(s, w);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
}

/* ---- tracing calls from tasks ----------------------------------------------------------- */

struct ft {
    weft_sched *s;
    weft_waitgroup inner, outer;
    char *text1, *text2;
    size_t len1, len2;
    int rc_start, rc_start2, rc_write1, rc_stop, rc_write2, rc_stop2;
};

static void ft_inner(void *p)
{
    struct ft *f = p;
    busy_ns(2 * US);
    weft_waitgroup_done(&f->inner);
}

static void ft_task(void *p)
{
    struct ft *f = p;
    f->rc_start = weft_trace_start(f->s, 4096);
    f->rc_start2 = weft_trace_start(f->s, 4096);
    weft_waitgroup_add(&f->inner, 10);
    for (int i = 0; i < 10; i++)
        if (spawn_named(f->s, ft_inner, f, "ft-inner") != WEFT_OK)
            weft_waitgroup_done(&f->inner);
    weft_waitgroup_wait(&f->inner);
    FILE *m = open_memstream(&f->text1, &f->len1);
    f->rc_write1 = m ? weft_trace_write(f->s, m) : -100;
    if (m)
        fclose(m);
    f->rc_stop = weft_trace_stop(f->s);
    m = open_memstream(&f->text2, &f->len2);
    f->rc_write2 = m ? weft_trace_write(f->s, m) : -100;
    if (m)
        fclose(m);
    f->rc_stop2 = weft_trace_stop(f->s);
    weft_waitgroup_done(&f->outer);
}

WT_TEST(trace, from_task, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        struct ft f = { .s = s };
        weft_waitgroup_init(&f.inner, 0);
        weft_waitgroup_init(&f.outer, 1);
        WT_ASSERT_EQ(spawn_named(s, ft_task, &f, "ft-outer"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&f.outer), WEFT_OK);
        WT_ASSERT_EQ(f.rc_start, WEFT_OK);
        WT_ASSERT_EQ(f.rc_start2, WEFT_EBUSY);
        WT_ASSERT_EQ(f.rc_write1, WEFT_OK);
        WT_ASSERT_EQ(f.rc_stop, WEFT_OK);
        WT_ASSERT_EQ(f.rc_write2, WEFT_OK);
        WT_ASSERT_EQ(f.rc_stop2, WEFT_OK);
        tr_trace t;
        char why[2048];
        bool ok = tr_parse(&t, f.text1, f.len1, w, why, sizeof why);
        WT_ASSERT(ok, "%u workers: written from a task while recording: %s", w, why);
        WT_ASSERT(nruns(&t, "ft-inner") == 10, "%u workers: %zu of 10 finished tasks in a trace written from a task", w,
                  nruns(&t, "ft-inner"));
        tr_free(&t);
        ok = tr_parse(&t, f.text2, f.len2, w, why, sizeof why);
        WT_ASSERT(ok, "%u workers: written from a task after its stop: %s", w, why);
        WT_ASSERT_EQ(nruns(&t, "ft-inner"), 10);
        tr_free(&t);
        weft_waitgroup_destroy(&f.inner);
        weft_waitgroup_destroy(&f.outer);
        close_s(s, w);
    }
}

/* ---- two schedulers record apart -------------------------------------------------------- */

WT_TEST(trace, two_schedulers, .timeout = 120)
{
    weft_sched *s1 = sched_new(1, NULL), *s2 = sched_new(2, NULL);
    start_ok(s1, BIG);
    start_ok(s2, BIG);
    run_batch(s1, "one", 20, 0, 5 * US);
    run_batch(s2, "two", 20, 0, 5 * US);
    stop_ok(s1);
    run_batch(s1, "one-later", 20, 0, 0);
    run_batch(s2, "two-later", 20, 0, 0);
    stop_ok(s2);
    tr_trace t1, t2;
    CAPTURE(s1, &t1);
    CAPTURE(s2, &t2);
    WT_ASSERT(nruns(&t1, "one") == 20 && nruns(&t1, "two") == 0 && nruns(&t1, "one-later") == 0 &&
                  nruns(&t1, "two-later") == 0,
              "scheduler 1's trace: one %zu, two %zu, one-later %zu, two-later %zu", nruns(&t1, "one"), nruns(&t1, "two"),
              nruns(&t1, "one-later"), nruns(&t1, "two-later"));
    WT_ASSERT(nruns(&t2, "two") == 20 && nruns(&t2, "one") == 0 && nruns(&t2, "two-later") == 20 &&
                  nruns(&t2, "one-later") == 0,
              "scheduler 2's trace: one %zu, two %zu, one-later %zu, two-later %zu", nruns(&t2, "one"), nruns(&t2, "two"),
              nruns(&t2, "one-later"), nruns(&t2, "two-later"));
    tr_free(&t1);
    tr_free(&t2);
    WT_ASSERT_EQ(weft_sched_destroy(s1), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s2), WEFT_OK);
}

/* ---- a scheduler without workers ------------------------------------------------------------ */

static void zw_graph_task(void *p)
{
    (void)p;
    busy_ns(1 * US);
}

WT_TEST(trace, zero_workers, .timeout = 120)
{
    weft_sched *s = open_s(0);
    int me = weft_thread_id();
    WT_ASSERT(me >= 0);
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    for (int i = 0; i < 10; i++) {
        weft_task *t = weft_graph_add(g, zw_graph_task, NULL);
        WT_ASSERT(t != NULL);
        weft_task_set_name(t, "zw-graph");
    }
    start_ok(s, BIG);
    run_batch(s, "zw", 50, 1 * US, 0);
    run_batch(s, "zw-sleep", 10, 0, 20 * US);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    weft_trace_begin("zw-zone");
    weft_trace_end();
    stop_ok(s);
    tr_trace t;
    CAPTURE(s, &t);
    WT_ASSERT_EQ(nruns(&t, "zw"), 50);
    WT_ASSERT_EQ(nruns(&t, "zw-sleep"), 10);
    WT_ASSERT_EQ(nruns(&t, "zw-graph"), 10);
    WT_ASSERT_EQ(tr_count(&t, 'X', "zone", "zw-zone"), 1);
    for (size_t i = 0; i < t.nev; i++)
        WT_ASSERT(t.ev[i].ph == 'M' || t.ev[i].tid == me, "an event (ph %c, name %s) on tid %d, not the bound thread's %d",
                  t.ev[i].ph, t.ev[i].name ? t.ev[i].name : "-", t.ev[i].tid, me);
    char want[32];
    snprintf(want, sizeof want, "bound thread %d", me);
    WT_ASSERT(streq(tr_thread_name(&t, me), want), "the bound thread is named \"%s\"",
              tr_thread_name(&t, me) ? tr_thread_name(&t, me) : "(nothing)");
    tr_free(&t);
    close_s(s, 0);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

/* ---- out of memory ------------------------------------------------------------------------ */

struct falloc {
    atomic_bool fail;
    atomic_ulong failed;
};

static void *fa_alloc(size_t size, void *ctx)
{
    struct falloc *f = ctx;
    if (atomic_load(&f->fail)) {
        atomic_fetch_add(&f->failed, 1);
        return NULL;
    }
    size_t r = (size + 63) & ~(size_t)63;
    return aligned_alloc(64, r ? r : 64);
}

static void fa_free(void *p, size_t size, void *ctx)
{
    (void)size;
    (void)ctx;
    free(p);
}

WT_TEST(trace, enomem, .timeout = 120)
{
    struct falloc fa = { 0 };
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    c.allocator = (weft_allocator){ fa_alloc, fa_free, &fa };
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    start_ok(s, 64);
    run_batch(s, "before-oom", 10, 0, 0);
    stop_ok(s);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    nap_ns(5 * MS);

    atomic_store(&fa.fail, true);
    int rc = weft_trace_start(s, BIG);
    atomic_store(&fa.fail, false);
    unsigned long failed = atomic_exchange(&fa.failed, 0);
    WT_ASSERT(rc == WEFT_OK || rc == WEFT_ENOMEM, "start with no memory: %s", weft_err_name(rc));
    if (failed > 0)
        WT_ASSERT(rc == WEFT_ENOMEM, "an allocation failed in weft_trace_start, yet it returned %s", weft_err_name(rc));
    tr_trace t;
    if (rc == WEFT_ENOMEM) {
        /* Nothing changed: not recording, the last recording still there. */
        CAPTURE(s, &t);
        WT_ASSERT(nruns(&t, "before-oom") == 10, "a failed start lost the last recording (%zu of 10 tasks)",
                  nruns(&t, "before-oom"));
        tr_free(&t);
        start_ok(s, BIG);
    }
    run_batch(s, "after-oom", 10, 0, 0);
    stop_ok(s);

    atomic_store(&fa.fail, true);
    FILE *devnull = fopen("/dev/null", "w");
    rc = weft_trace_write(s, devnull);
    atomic_store(&fa.fail, false);
    failed = atomic_exchange(&fa.failed, 0);
    fclose(devnull);
    WT_ASSERT(rc == WEFT_OK || rc == WEFT_ENOMEM, "write with no memory: %s", weft_err_name(rc));
    if (failed > 0)
        WT_ASSERT(rc == WEFT_ENOMEM, "an allocation failed in weft_trace_write, yet it returned %s", weft_err_name(rc));
    CAPTURE(s, &t);
    WT_ASSERT_EQ(nruns(&t, "after-oom"), 10);
    tr_free(&t);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

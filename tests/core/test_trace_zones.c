/* Tracing's zones (weft_trace_begin/end) and parallel loop chunks,
 * written from weft.h alone (the "tracing" section) before the
 * implementation, as a user reads them. Helpers:
 * tests/support/trace_util.h.
 *
 * Each trace is read back and checked as trace_check.h says (per thread,
 * the X events nest); the cases below check what their work implies:
 *  - zones: nested zones inside their task, begin(NULL), unmatched ends,
 *    a bound thread's own zones, nothing from threads of no scheduler;
 *  - chunks: one "chunk" event per chunk of weft_parallel_for and
 *    weft_parallel_reduce, each inside a task slice;
 *  - zones_deep: 100 nested zones and 1000 in a row;
 *  - dropped_in_json_events: zones into a buffer of 16 events:
 *    otherData's dropped and events are in one unit (JSON events), so
 *    dropped + the zones written is the zones recorded.
 * Worker counts 0 (the test thread bound), 1, 2 and 8.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into fields the test thread checks after a wait. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "../support/tjson.h"
#include "../support/trace_check.h"
#include "../support/trace_util.h"

/* ---- zones -------------------------------------------------------------------------- */

struct zt {
    weft_waitgroup wg;
};

static void zone_task(void *p)
{
    struct zt *z = p;
    weft_trace_end();   /* without its begin: ignored */
    weft_trace_begin("outer");
    busy_ns(20 * US);
    weft_trace_begin("inner");
    busy_ns(20 * US);
    weft_trace_end();
    weft_trace_begin(NULL);
    busy_ns(5 * US);
    weft_trace_end();
    weft_trace_end();
    weft_trace_end();   /* one more: ignored */
    weft_waitgroup_done(&z->wg);
}

struct bz {
    weft_sched *s;
    int id, rc;
};

/* A bound thread's own code: zones outside any task. */
static void *bound_zones(void *p)
{
    struct bz *b = p;
    b->rc = weft_sched_bind(b->s);
    if (b->rc != WEFT_OK)
        return NULL;
    b->id = weft_thread_id();
    weft_trace_begin("bound-own");
    busy_ns(20 * US);
    weft_trace_end();
    weft_sched_unbind();
    return NULL;
}

static void *plain_zones(void *p)
{
    (void)p;
    for (int i = 0; i < 100; i++) {
        weft_trace_begin("plain");
        weft_trace_end();
    }
    weft_trace_end();
    return NULL;
}

/* The X event of cat zone or chunk e lies in a task slice on its thread. */
static const tr_event *enclosing_task(const tr_trace *t, const tr_event *e)
{
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *x = &t->ev[i];
        if (x->ph == 'X' && streq(x->cat, "task") && x->tid == e->tid && x->ts <= e->ts + TR_EPS &&
            e->ts + e->dur <= x->ts + x->dur + TR_EPS)
            return x;
    }
    return NULL;
}

static const tr_event *enclosing_zone(const tr_trace *t, const tr_event *e, const char *name)
{
    for (size_t i = 0; i < t->nev; i++) {
        const tr_event *x = &t->ev[i];
        if (x != e && x->ph == 'X' && streq(x->cat, "zone") && streq(x->name, name) && x->tid == e->tid &&
            x->ts <= e->ts + TR_EPS && e->ts + e->dur <= x->ts + x->dur + TR_EPS)
            return x;
    }
    return NULL;
}

WT_TEST(trace, zones, .timeout = 120)
{
    enum { NZ = 5 };
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        int bound_id = -1;
        if (w == 0) {
            /* A begin before the recording: its end, recorded, is ignored. */
            weft_trace_begin("pre");
            start_ok(s, BIG);
            weft_trace_end();
            bound_id = weft_thread_id();
            weft_trace_begin("bound-own");
            busy_ns(20 * US);
            weft_trace_end();
        } else {
            start_ok(s, BIG);
            struct bz b = { .s = s, .id = -1 };
            pthread_t th;
            WT_ASSERT_EQ(pthread_create(&th, NULL, bound_zones, &b), 0);
            WT_ASSERT_EQ(pthread_join(th, NULL), 0);
            WT_ASSERT_EQ(b.rc, WEFT_OK);
            bound_id = b.id;
            /* The test thread is no thread of s: a no-op. */
            weft_trace_begin("outside");
            weft_trace_end();
        }
        pthread_t pth;
        WT_ASSERT_EQ(pthread_create(&pth, NULL, plain_zones, NULL), 0);
        WT_ASSERT_EQ(pthread_join(pth, NULL), 0);

        struct zt z;
        weft_waitgroup_init(&z.wg, NZ);
        for (int i = 0; i < NZ; i++)
            WT_ASSERT_EQ(spawn_named(s, zone_task, &z, "zoned"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&z.wg), WEFT_OK);
        weft_waitgroup_destroy(&z.wg);
        stop_ok(s);

        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        WT_ASSERT_EQ(nruns(&t, "zoned"), NZ);
        WT_ASSERT_EQ(tr_count(&t, 'X', "zone", "outer"), NZ);
        WT_ASSERT_EQ(tr_count(&t, 'X', "zone", "inner"), NZ);
        WT_ASSERT(tr_count(&t, 'X', "zone", "zone") == NZ, "%u workers: %zu zones named \"zone\" (begin(NULL)), want %d",
                  w, tr_count(&t, 'X', "zone", "zone"), NZ);
        WT_ASSERT(tr_count(&t, 0, NULL, "plain") == 0, "a plain thread's zones were recorded");
        WT_ASSERT(tr_count(&t, 0, NULL, "outside") == 0, "the unbound test thread's zones were recorded");
        WT_ASSERT(tr_count(&t, 0, NULL, "pre") == 0, "a zone begun before the start was written");
        WT_ASSERT(tr_count(&t, 'X', "zone", NULL) == 3 * NZ + 1, "%u workers: %zu zones, want %d", w,
                  tr_count(&t, 'X', "zone", NULL), 3 * NZ + 1);
        for (size_t i = 0; i < NZ; i++) {
            const tr_event *o = tr_find(&t, 'X', "zone", "outer", i);
            const tr_event *in = tr_find(&t, 'X', "zone", "inner", i);
            const tr_event *nz = tr_find(&t, 'X', "zone", "zone", i);
            const tr_event *task = enclosing_task(&t, o);
            WT_ASSERT(task && streq(task->name, "zoned"), "%u workers: zone outer (tid %d, %.4f+%.4f) is not inside its task",
                      w, o->tid, o->ts, o->dur);
            WT_ASSERT(enclosing_zone(&t, in, "outer"), "%u workers: zone inner is not inside an outer", w);
            WT_ASSERT(enclosing_zone(&t, nz, "outer"), "%u workers: the NULL-named zone is not inside an outer", w);
            WT_ASSERT(in->dur >= 15.0 && o->dur >= in->dur + 15.0, "%u workers: zone durations %.3f (outer), %.3f (inner) us",
                      w, o->dur, in->dur);
        }
        const tr_event *bo = tr_find(&t, 'X', "zone", "bound-own", 0);
        WT_ASSERT(bo != NULL, "%u workers: a bound thread's zone in its own code is missing", w);
        WT_ASSERT(bo->tid == bound_id, "%u workers: the bound thread's zone is on tid %d, not %d", w, bo->tid, bound_id);
        WT_ASSERT(bo->dur >= 15.0);
        tr_free(&t);
        close_s(s, w);
    }
}

/* ---- parallel loop chunks ---------------------------------------------------------------- */

struct loop {
    weft_sched *s;
    weft_waitgroup wg;
    atomic_int rc_for, rc_reduce;
    long sum;
    atomic_int hits[1000];
};

static void loop_body(size_t b, size_t e, void *arg)
{
    struct loop *l = arg;
    for (size_t i = b; i < e; i++)
        atomic_fetch_add(&l->hits[i], 1);
    busy_ns(2 * US);
}

static void reduce_body(size_t b, size_t e, void *partial, void *arg)
{
    (void)arg;
    for (size_t i = b; i < e; i++)
        *(long *)partial += (long)i;
}

static void reduce_combine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(long *)into += *(const long *)from;
}

static void loop_task(void *p)
{
    struct loop *l = p;
    atomic_store(&l->rc_for, weft_parallel_for(l->s, 0, 1000, 10, loop_body, l));
    long zero = 0;
    atomic_store(&l->rc_reduce,
                 weft_parallel_reduce(l->s, 5000, 5500, 10, &l->sum, sizeof l->sum, &zero, reduce_body, reduce_combine, l));
    weft_waitgroup_done(&l->wg);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

WT_TEST(trace, chunks, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        struct loop *l = calloc(1, sizeof *l);
        l->s = s;
        weft_waitgroup_init(&l->wg, 1);
        start_ok(s, BIG);
        WT_ASSERT_EQ(spawn_named(s, loop_task, l, "looper"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&l->wg), WEFT_OK);
        stop_ok(s);
        WT_ASSERT_EQ(atomic_load(&l->rc_for), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&l->rc_reduce), WEFT_OK);
        WT_ASSERT_EQ(l->sum, (5000L + 5499L) * 500L / 2);
        for (int i = 0; i < 1000; i++)
            WT_ASSERT_EQ(atomic_load(&l->hits[i]), 1);

        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        size_t n = tr_count(&t, 'X', "chunk", NULL);
        double fb[150], rb[150];
        size_t nf = 0, nr = 0;
        for (size_t i = 0; i < n && i < 150; i++) {
            const tr_event *c = tr_find(&t, 'X', "chunk", NULL, i);
            double b = 0, e = 0;
            tj_get_num(c->args, "begin", &b);
            tj_get_num(c->args, "end", &e);
            WT_ASSERT(e - b == 10, "%u workers: chunk [%g, %g) with grain 10", w, b, e);
            if (b < 1000)
                fb[nf++] = b;
            else if (b >= 5000)
                rb[nr++] = b;
            const tr_event *task = enclosing_task(&t, c);
            WT_ASSERT(task != NULL, "%u workers: chunk [%g, %g) on tid %d at %.4f is in no task slice", w, b, e, c->tid,
                      c->ts);
        }
        WT_ASSERT(nf == 100, "%u workers: %zu chunk events for weft_parallel_for's 100 chunks", w, nf);
        WT_ASSERT(nr == 50, "%u workers: %zu chunk events for weft_parallel_reduce's 50 chunks", w, nr);
        WT_ASSERT(n == 150, "%u workers: %zu chunk events in all, for 150 chunks", w, n);
        qsort(fb, nf, sizeof fb[0], cmp_double);
        qsort(rb, nr, sizeof rb[0], cmp_double);
        for (size_t i = 0; i < nf; i++)
            WT_ASSERT(fb[i] == 10.0 * (double)i, "%u workers: loop chunks do not cover [0, 1000) once", w);
        for (size_t i = 0; i < nr; i++)
            WT_ASSERT(rb[i] == 5000 + 10.0 * (double)i, "%u workers: reduce chunks do not cover [5000, 5500) once", w);
        tr_free(&t);
        close_s(s, w);
        weft_waitgroup_destroy(&l->wg);
        free(l);
    }
}

/* ---- deep zones ------------------------------------------------------------------------------- */

#define ZD 100

static const char *const zd_names[10] = { "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9" };

static void zd_task(void *p)
{
    struct zt *z = p;
    for (int i = 0; i < ZD; i++)
        weft_trace_begin(zd_names[i % 10]);
    busy_ns(5 * US);
    for (int i = 0; i < ZD; i++)
        weft_trace_end();
    for (int i = 0; i < 1000; i++) {
        weft_trace_begin("flat");
        weft_trace_end();
    }
    weft_waitgroup_done(&z->wg);
}

WT_TEST(trace, zones_deep, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        struct zt z;
        weft_waitgroup_init(&z.wg, 1);
        start_ok(s, BIG);
        WT_ASSERT_EQ(spawn_named(s, zd_task, &z, "deep"), WEFT_OK);
        WT_ASSERT_EQ(weft_waitgroup_wait(&z.wg), WEFT_OK);
        stop_ok(s);
        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        size_t deep = 0;
        for (int k = 0; k < 10; k++)
            deep += tr_count(&t, 'X', "zone", zd_names[k]);
        WT_ASSERT(deep == ZD, "%u workers: %zu of %d nested zones written", w, deep, ZD);
        WT_ASSERT(tr_count(&t, 'X', "zone", "flat") == 1000, "%u workers: %zu of 1000 zones in a row", w,
                  tr_count(&t, 'X', "zone", "flat"));
        /* Each level holds the next: the durations never grow inwards. */
        const tr_run *r;
        WT_ASSERT_EQ(tr_runs_named(&t, "deep", &r, 1), 1);
        for (size_t i = 0; i < t.nev; i++)
            if (t.ev[i].ph == 'X' && streq(t.ev[i].cat, "zone"))
                WT_ASSERT(t.ev[i].tid == r->tid && t.ev[i].ts >= r->begin - TR_EPS &&
                              t.ev[i].ts + t.ev[i].dur <= r->end + TR_EPS,
                          "%u workers: a zone outside its task", w);
        tr_free(&t);
        weft_waitgroup_destroy(&z.wg);
        close_s(s, w);
    }
}

/* ---- dropped, in the unit of events ---------------------------------------------------------- */

#define DZ_ROUNDS 50   /* two zones each, one inside the other */

WT_TEST(trace, dropped_in_json_events, .timeout = 60)
{
    static const size_t sizes[] = { 16, BIG };
    for (size_t k = 0; k < 2; k++) {
        weft_sched *s = open_s(0);   /* this thread bound: its own zones, nothing else */
        start_ok(s, sizes[k]);
        for (int i = 0; i < DZ_ROUNDS; i++) {
            weft_trace_begin("outer");
            weft_trace_begin("inner");
            weft_trace_end();
            weft_trace_end();
        }
        stop_ok(s);
        tr_trace t;
        CAPTURE(s, &t);
        size_t zones = tr_count(&t, 'X', "zone", NULL), meta = 0;
        for (size_t i = 0; i < t.nev; i++)
            meta += t.ev[i].ph == 'M';
        fprintf(stderr, "buffer of %zu: %zu zones written, dropped %.0f, events %.0f (%zu metadata)\n",
                sizes[k], zones, t.dropped, t.events, meta);
        WT_ASSERT(t.events == (double)t.nev, "otherData.events %.0f, %zu events in the file", t.events, t.nev);
        WT_ASSERT(t.dropped + (double)zones == 2 * DZ_ROUNDS,
                  "buffer of %zu: dropped %.0f + %zu zones written, %d recorded", sizes[k], t.dropped, zones,
                  2 * DZ_ROUNDS);
        WT_ASSERT(t.events - (double)meta == (double)zones, "buffer of %zu: events other than zones", sizes[k]);
        if (k == 0)
            WT_ASSERT(t.dropped > 0 && zones > 0 && zones <= 8, "buffer of 16: %zu zones kept", zones);
        else
            WT_ASSERT(t.dropped == 0);
        tr_free(&t);
        close_s(s, 0);
    }
}

/* This file is private to weft's tests: see trace_chaos.h.
 *
 * Nothing here asserts (a Criterion assert off the test's thread is not
 * safe): every thread and task records the first problem in the round's
 * err, and the round returns it. Tasks that call the tracing functions
 * announce it in `inflight` before they look at stop_chaos (both seq_cst),
 * so once phase 3 has stored stop_chaos and seen inflight at 0, no task
 * can start, stop or write a trace behind its back. */
#define _GNU_SOURCE
#include "trace_chaos.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace_check.h"
#include "weft.h"

#define NPAIRS 6
#define NEVENTS 6
#define NNOISE 8
#define MSGS 8
#define GN 40
#define LATE 100

struct chaos;

struct targ {
    struct chaos *c;
    struct spawner *sp;
    int i;
};

struct spawner {
    struct chaos *c;
    pthread_t th;
    bool bind;
    weft_waitgroup wg;
    weft_chan *ch[NPAIRS];
    weft_event ev[NEVENTS];
    struct targ args[NPAIRS + NEVENTS + NNOISE];
    uint64_t rng;
};

struct chaos {
    weft_sched *s;
    unsigned W;
    FILE *devnull;
    atomic_bool stop_chaos, stop_work;
    atomic_int inflight;
    atomic_int failed;
    pthread_mutex_t lock;
    char *err;
    size_t errcap;
    atomic_ulong starts_ok, starts_busy, stops, writes, parsed, task_ops, batches, graph_runs;
    weft_graph *g;
    struct targ gargs[GN];
    weft_waitgroup late_wg;
};

static void chaos_fail(struct chaos *c, const char *fmt, ...)
{
    pthread_mutex_lock(&c->lock);
    if (!atomic_load(&c->failed) && c->err && c->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errcap, fmt, ap);
        va_end(ap);
    }
    atomic_store(&c->failed, 1);
    pthread_mutex_unlock(&c->lock);
}

static uint64_t rnd(uint64_t *x)   /* xorshift64* */
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

static void nap_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy_ns_local(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
}

/* ---- the tracing calls ------------------------------------------------------ */

static void trace_op(struct chaos *c, uint64_t *rng, bool in_task)
{
    static const size_t sizes[] = { 16, 17, 64, 1000, 4096 };
    int rc;
    switch (rnd(rng) % 8) {
    case 0:
    case 1:
        rc = weft_trace_start(c->s, sizes[rnd(rng) % 5]);
        if (rc == WEFT_OK)
            atomic_fetch_add(&c->starts_ok, 1);
        else if (rc == WEFT_EBUSY)
            atomic_fetch_add(&c->starts_busy, 1);
        else
            chaos_fail(c, "weft_trace_start racing work%s: %s", in_task ? " (in a task)" : "", weft_err_name(rc));
        break;
    case 2:
    case 3:
        if ((rc = weft_trace_stop(c->s)) != WEFT_OK)
            chaos_fail(c, "weft_trace_stop racing work: %s", weft_err_name(rc));
        atomic_fetch_add(&c->stops, 1);
        break;
    case 4:
        if ((rc = weft_trace_write(c->s, c->devnull)) != WEFT_OK)
            chaos_fail(c, "weft_trace_write(/dev/null) racing work: %s", weft_err_name(rc));
        atomic_fetch_add(&c->writes, 1);
        break;
    case 5: {
        tr_trace t;
        char why[1024];
        if (!tr_capture(c->s, &t, NULL, why, sizeof why))
            chaos_fail(c, "a trace written while start/stop race work%s: %s", in_task ? " (in a task)" : "", why);
        tr_free(&t);
        atomic_fetch_add(&c->parsed, 1);
        break;
    }
    case 6:
        if ((rc = weft_trace_start(c->s, 15)) != WEFT_EINVAL)
            chaos_fail(c, "weft_trace_start(s, 15) racing work: %s, not EINVAL", weft_err_name(rc));
        if ((rc = weft_trace_write(c->s, NULL)) != WEFT_EINVAL)
            chaos_fail(c, "weft_trace_write(s, NULL) racing work: %s, not EINVAL", weft_err_name(rc));
        break;
    default:
        if (in_task)
            weft_sleep(2000);
        else
            nap_ns(20000);
        break;
    }
}

/* ---- the work: tasks that block on each other --------------------------------- */

static void pp_send(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < MSGS; i++) {
        int rc = weft_chan_send(a->sp->ch[a->i], &i);
        if (rc != WEFT_OK)
            chaos_fail(a->c, "chan_send: %s", weft_err_name(rc));
    }
    weft_waitgroup_done(&a->sp->wg);
}

static void pp_recv(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < MSGS; i++) {
        int v = -1, rc = weft_chan_recv(a->sp->ch[a->i], &v);
        if (rc != WEFT_OK || v != i)
            chaos_fail(a->c, "chan_recv: %s, got %d for %d", weft_err_name(rc), v, i);
    }
    weft_waitgroup_done(&a->sp->wg);
}

static void ev_wait(void *p)
{
    struct targ *a = p;
    int rc = weft_event_wait(&a->sp->ev[a->i]);
    if (rc != WEFT_OK)
        chaos_fail(a->c, "event_wait: %s", weft_err_name(rc));
    weft_waitgroup_done(&a->sp->wg);
}

static void ev_set(void *p)
{
    struct targ *a = p;
    weft_sleep(1000 * (uint64_t)(a->i % 3));
    weft_event_signal(&a->sp->ev[a->i]);
    weft_waitgroup_done(&a->sp->wg);
}

static void noise(void *p)
{
    struct targ *a = p;
    struct chaos *c = a->c;
    uint64_t rng = ((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u) ^ now_ns();
    rng |= 1;
    if (rnd(&rng) % 4 == 0) {
        atomic_fetch_add(&c->inflight, 1);           /* seq_cst: pairs with phase 3's store and load */
        if (!atomic_load(&c->stop_chaos)) {
            trace_op(c, &rng, true);
            atomic_fetch_add(&c->task_ops, 1);
        }
        atomic_fetch_sub(&c->inflight, 1);
    }
    if (rnd(&rng) % 2)
        weft_sleep(10000);
    weft_waitgroup_done(&a->sp->wg);
}

static int spawn_named(weft_sched *s, weft_fn fn, void *arg, const char *name)
{
    weft_spawn_opts o = { .name = name };
    return weft_spawn_ex(s, fn, arg, &o);
}

static void *spawner_main(void *p)
{
    struct spawner *sp = p;
    struct chaos *c = sp->c;
    int rc;
    if (sp->bind && (rc = weft_sched_bind(c->s)) != WEFT_OK) {
        chaos_fail(c, "spawner bind: %s", weft_err_name(rc));
        return NULL;
    }
    while (!atomic_load(&c->stop_work) && !atomic_load(&c->failed)) {
        int n = 0;
        weft_waitgroup_add(&sp->wg, 2 * NPAIRS + 2 * NEVENTS + NNOISE);
        for (int i = 0; i < NPAIRS; i++) {
            sp->args[n] = (struct targ){ c, sp, i };
            if (spawn_named(c->s, pp_send, &sp->args[n], "pp-send") != WEFT_OK ||
                spawn_named(c->s, pp_recv, &sp->args[n], "pp-recv") != WEFT_OK)
                chaos_fail(c, "spawn failed");
            n++;
        }
        for (int i = 0; i < NEVENTS; i++) {
            sp->args[n] = (struct targ){ c, sp, i };
            if (spawn_named(c->s, ev_wait, &sp->args[n], "ev-wait") != WEFT_OK ||
                spawn_named(c->s, ev_set, &sp->args[n], "ev-set") != WEFT_OK)
                chaos_fail(c, "spawn failed");
            n++;
        }
        for (int i = 0; i < NNOISE; i++) {
            sp->args[n] = (struct targ){ c, sp, i };
            if (spawn_named(c->s, noise, &sp->args[n], "noise") != WEFT_OK)
                chaos_fail(c, "spawn failed");
            n++;
        }
        if (atomic_load(&c->failed))
            break;   /* a spawn failed: the wait group would never reach 0 */
        if ((rc = weft_waitgroup_wait(&sp->wg)) != WEFT_OK)
            chaos_fail(c, "batch wait: %s", weft_err_name(rc));
        atomic_fetch_add(&c->batches, 1);
    }
    if (sp->bind)
        weft_sched_unbind();
    return NULL;
}

/* ---- the work: a graph, run again and again ----------------------------------- */

static void loop_body(size_t b, size_t e, void *arg)
{
    volatile size_t sink = 0;
    for (size_t i = b; i < e; i++)
        sink += i;
    (void)sink;
    (void)arg;
}

static void gtask(void *p)
{
    struct targ *a = p;
    switch (a->i % 4) {
    case 0: {
        volatile int sink = 0;
        for (int k = 0; k < 200; k++)
            sink += k;
        (void)sink;
        break;
    }
    case 1: {
        /* (Not weft_yield: test_trace_block.c's wait_kinds covers it on its own,
         * so that this round tests the races.) */
        weft_event e;
        weft_event_init(&e, true, true);
        if (weft_event_wait(&e) != WEFT_OK)
            chaos_fail(a->c, "wait on a set event failed");
        weft_event_destroy(&e);
        busy_ns_local(2000);
        break;
    }
    case 2:
        weft_sleep(5000);
        break;
    default: {
        int rc = weft_parallel_for(a->c->s, 0, 64, 8, loop_body, NULL);
        if (rc != WEFT_OK)
            chaos_fail(a->c, "parallel_for in a graph task: %s", weft_err_name(rc));
        break;
    }
    }
}

static void *graph_main(void *p)
{
    struct chaos *c = p;
    int rc = weft_sched_bind(c->s);
    if (rc != WEFT_OK) {
        chaos_fail(c, "graph thread bind: %s", weft_err_name(rc));
        return NULL;
    }
    while (!atomic_load(&c->stop_work) && !atomic_load(&c->failed)) {
        if ((rc = weft_graph_run(c->s, c->g)) != WEFT_OK || (rc = weft_graph_wait(c->g)) != WEFT_OK) {
            chaos_fail(c, "graph run/wait: %s", weft_err_name(rc));
            break;
        }
        atomic_fetch_add(&c->graph_runs, 1);
    }
    weft_sched_unbind();
    return NULL;
}

/* ---- the callers ---------------------------------------------------------------- */

struct caller {
    struct chaos *c;
    pthread_t th;
    bool bind;
    uint64_t rng;
};

static void *caller_main(void *p)
{
    struct caller *k = p;
    struct chaos *c = k->c;
    int rc;
    if (k->bind && (rc = weft_sched_bind(c->s)) != WEFT_OK) {
        chaos_fail(c, "caller bind: %s", weft_err_name(rc));
        return NULL;
    }
    while (!atomic_load(&c->stop_chaos) && !atomic_load(&c->failed))
        trace_op(c, &k->rng, false);
    if (k->bind)
        weft_sched_unbind();
    return NULL;
}

static void late_task(void *p)
{
    struct chaos *c = p;
    volatile int sink = 0;
    for (int k = 0; k < 100; k++)
        sink += k;
    (void)sink;
    weft_waitgroup_done(&c->late_wg);
}

/* Phase 3 (see trace_chaos.h). */
static void late_check(struct chaos *c, trace_chaos_stats *st)
{
    int rc;
    while (atomic_load(&c->inflight) != 0)   /* seq_cst: after our store of stop_chaos */
        nap_ns(10000);
    if ((rc = weft_trace_stop(c->s)) != WEFT_OK)
        {
            chaos_fail(c, "phase 3: stop: %s", weft_err_name(rc));
            return;
        }
    if ((rc = weft_trace_start(c->s, (size_t)1 << 16)) != WEFT_OK)
        {
            chaos_fail(c, "phase 3: start after a stop, nobody else calling: %s", weft_err_name(rc));
            return;
        }
    weft_waitgroup_add(&c->late_wg, LATE);
    for (int i = 0; i < LATE; i++)
        if ((rc = spawn_named(c->s, late_task, c, "late")) != WEFT_OK) {
            weft_waitgroup_add(&c->late_wg, -(int64_t)(LATE - i));
            {
                chaos_fail(c, "phase 3: spawn: %s", weft_err_name(rc));
                return;
            }
        }
    if ((rc = weft_waitgroup_wait(&c->late_wg)) != WEFT_OK)
        {
            chaos_fail(c, "phase 3: wait: %s", weft_err_name(rc));
            return;
        }
    if ((rc = weft_trace_stop(c->s)) != WEFT_OK)
        {
            chaos_fail(c, "phase 3: stop: %s", weft_err_name(rc));
            return;
        }
    tr_trace t;
    char why[1024];
    if (!tr_capture(c->s, &t, NULL, why, sizeof why)) {
        tr_free(&t);
        {
            chaos_fail(c, "phase 3: %s", why);
            return;
        }
    }
    size_t n = tr_runs_named(&t, "late", NULL, 0);
    if (t.dropped == 0) {
        st->late_checked = true;
        if (n != LATE)
            chaos_fail(c, "phase 3: %zu runs of the %d tasks that ran between start and stop (nothing dropped)", n,
                       LATE);
    }
    tr_free(&t);
}

static void build_graph(struct chaos *c, uint64_t *rng)
{
    weft_task *t[GN];
    if (weft_graph_create(&c->g) != WEFT_OK)
        {
            chaos_fail(c, "graph_create failed");
            return;
        }
    for (int i = 0; i < GN; i++) {
        c->gargs[i] = (struct targ){ c, NULL, i };
        char name[16];
        snprintf(name, sizeof name, "g%02d", i);
        if (!(t[i] = weft_graph_add(c->g, gtask, &c->gargs[i])))
            {
                chaos_fail(c, "graph_add failed");
                return;
            }
        weft_task_set_name(t[i], name);
        for (int k = 0; i > 0 && k < 2; k++)
            if (weft_task_precede(t[rnd(rng) % (uint64_t)i], t[i]) != WEFT_OK)
                {
                    chaos_fail(c, "precede failed");
                    return;
                }
    }
}

bool trace_chaos_round(unsigned workers, uint64_t duration_ns, uint64_t seed, trace_chaos_stats *st, char *why,
                       size_t cap)
{
    struct chaos *c = calloc(1, sizeof *c);
    struct spawner *sp = calloc(1, sizeof *sp);
    struct caller k[3];
    pthread_t gth;
    uint64_t rng = seed | 1;
    memset(st, 0, sizeof *st);
    if (!c || !sp) {
        free(c);
        free(sp);
        snprintf(why, cap, "out of memory");
        return false;
    }
    pthread_mutex_init(&c->lock, NULL);
    weft_waitgroup_init(&c->late_wg, 0);
    weft_waitgroup_init(&sp->wg, 0);
    for (int i = 0; i < NEVENTS; i++)
        weft_event_init(&sp->ev[i], false, false);
    c->err = why;
    c->errcap = cap;
    c->W = workers;
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = workers ? workers : WEFT_WORKERS_NONE;
    int rc = weft_sched_create(&c->s, &cfg);
    if (rc != WEFT_OK) {
        chaos_fail(c, "sched_create: %s", weft_err_name(rc));
        goto out;
    }
    if (!(c->devnull = fopen("/dev/null", "w"))) {
        chaos_fail(c, "fopen /dev/null failed");
        goto out;
    }
    for (int i = 0; i < NPAIRS; i++)
        if (weft_chan_create(&sp->ch[i], sizeof(int), 0) != WEFT_OK) {
            chaos_fail(c, "chan_create failed");
            goto out;
        }
    build_graph(c, &rng);
    if (atomic_load(&c->failed))
        goto out;

    sp->c = c;
    sp->bind = workers == 0;
    sp->rng = rnd(&rng) | 1;
    for (int i = 0; i < 3; i++)
        k[i] = (struct caller){ .c = c, .bind = i == 2, .rng = rnd(&rng) | 1 };
    if (pthread_create(&sp->th, NULL, spawner_main, sp) != 0 || pthread_create(&gth, NULL, graph_main, c) != 0) {
        chaos_fail(c, "pthread_create failed");
        goto out;   /* leaks a thread that may still run: the test fails anyway */
    }
    for (int i = 0; i < 3; i++)
        if (pthread_create(&k[i].th, NULL, caller_main, &k[i]) != 0) {
            chaos_fail(c, "pthread_create failed");
            goto out;
        }

    uint64_t end = now_ns() + duration_ns;
    while (now_ns() < end && !atomic_load(&c->failed))
        nap_ns(2000000);
    atomic_store(&c->stop_chaos, true);   /* seq_cst: pairs with the tasks' inflight announcement */
    for (int i = 0; i < 3; i++)
        pthread_join(k[i].th, NULL);
    if (!atomic_load(&c->failed))
        late_check(c, st);
    atomic_store(&c->stop_work, true);
    pthread_join(sp->th, NULL);
    pthread_join(gth, NULL);

out:
    if (c->s) {
        weft_trace_stop(c->s);
        if ((rc = weft_sched_destroy(c->s)) != WEFT_OK)
            chaos_fail(c, "sched_destroy: %s", weft_err_name(rc));
    }
    if (c->g)
        weft_graph_destroy(c->g);
    for (int i = 0; i < NPAIRS; i++)
        if (sp->ch[i])
            weft_chan_destroy(sp->ch[i]);
    for (int i = 0; i < NEVENTS; i++)
        weft_event_destroy(&sp->ev[i]);
    weft_waitgroup_destroy(&sp->wg);
    weft_waitgroup_destroy(&c->late_wg);
    if (c->devnull)
        fclose(c->devnull);
    st->starts_ok = atomic_load(&c->starts_ok);
    st->starts_busy = atomic_load(&c->starts_busy);
    st->stops = atomic_load(&c->stops);
    st->writes = atomic_load(&c->writes);
    st->parsed = atomic_load(&c->parsed);
    st->task_ops = atomic_load(&c->task_ops);
    st->batches = atomic_load(&c->batches);
    st->graph_runs = atomic_load(&c->graph_runs);
    bool ok = !atomic_load(&c->failed);
    pthread_mutex_destroy(&c->lock);
    free(sp);
    free(c);
    return ok;
}

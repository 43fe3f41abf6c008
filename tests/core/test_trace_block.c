/* Tracing of blocked fibers: the stretches of a task that blocks, what
 * each waited on (args.wait) and the "wake" flows into the next,
 * written from weft.h alone (the "tracing" section) before the
 * implementation, as a user reads them. Helpers:
 * tests/support/trace_util.h.
 *
 * Each trace is read back and checked as trace_check.h says (runs, flows);
 * the cases below check what their work implies:
 *  - blocked_channel, blocked_event: a task woken by another task shows
 *    a new slice that begins with a "wake" flow from the waker's slice,
 *    and its blocked slice says what it waited on;
 *  - wait_kinds: every way a task blocks (sync objects, channels, graph
 *    waits, weft_wait_until, weft_yield, weft_call_blocking,
 *    weft_fd_wait_for) ends a stretch with an args.wait.
 * Worker counts 0 (the test thread bound), 1, 2 and 8 where the case
 * depends on them.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into fields the test thread checks after a wait. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "../support/trace_check.h"
#include "../support/trace_util.h"

/* ---- blocked fibers: wake-up arrows ---------------------------------------------- */

/* Each stretch after the first of run r begins with a flow whose "s" lies
 * on the waker's thread, inside the waker's run w (when given). */
static void check_arrows(const tr_trace *t, const tr_run *r, const tr_run *waker, unsigned w)
{
    for (size_t k = 1; k < r->nslices; k++) {
        const tr_event *sl = slice(t, r, k);
        const tr_event *f = tr_flow_into(t, sl);
        WT_ASSERT(f != NULL, "%u workers: %s's slice %zu (ts %.4f) has no wake flow into it", w, r->name, k, sl->ts);
        const tr_event *s = tr_flow_start(t, f);
        WT_ASSERT(s != NULL, "%u workers: %s's wake flow has no start", w, r->name);
        WT_ASSERT(s->ts <= f->ts + TR_EPS);
        if (waker)
            WT_ASSERT(s->tid == waker->tid && s->ts >= waker->begin - TR_EPS && s->ts <= waker->end + TR_EPS,
                      "%u workers: %s's slice %zu woken from tid %d at %.4f, not inside %s (tid %d, [%.4f, %.4f])", w,
                      r->name, k, s->tid, s->ts, waker->name, waker->tid, waker->begin, waker->end);
    }
}

#define PP_N 50

struct pp {
    weft_chan *ch;
    weft_waitgroup wg;
    atomic_int bad;
};

static void pp_sender(void *p)
{
    struct pp *pp = p;
    for (int i = 0; i < PP_N; i++)
        if (weft_chan_send(pp->ch, &i) != WEFT_OK)
            atomic_fetch_add(&pp->bad, 1);
    weft_waitgroup_done(&pp->wg);
}

static void pp_receiver(void *p)
{
    struct pp *pp = p;
    for (int i = 0; i < PP_N; i++) {
        int v = -1;
        if (weft_chan_recv(pp->ch, &v) != WEFT_OK || v != i)
            atomic_fetch_add(&pp->bad, 1);
    }
    weft_waitgroup_done(&pp->wg);
}

WT_TEST(trace, blocked_channel, .timeout = 120)
{
    for (size_t wi = 0; wi < NWCOUNTS; wi++) {
        unsigned w = wcounts[wi];
        weft_sched *s = open_s(w);
        struct pp pp = { 0 };
        WT_ASSERT_EQ(weft_chan_create(&pp.ch, sizeof(int), 0), WEFT_OK);
        weft_waitgroup_init(&pp.wg, 2);
        start_ok(s, BIG);
        if (wi % 2) {
            WT_ASSERT_EQ(spawn_named(s, pp_sender, &pp, "pp-sender"), WEFT_OK);
            WT_ASSERT_EQ(spawn_named(s, pp_receiver, &pp, "pp-receiver"), WEFT_OK);
        } else {
            WT_ASSERT_EQ(spawn_named(s, pp_receiver, &pp, "pp-receiver"), WEFT_OK);
            WT_ASSERT_EQ(spawn_named(s, pp_sender, &pp, "pp-sender"), WEFT_OK);
        }
        WT_ASSERT_EQ(weft_waitgroup_wait(&pp.wg), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&pp.bad), 0);
        stop_ok(s);
        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        const tr_run *rs, *rr;
        WT_ASSERT_EQ(tr_runs_named(&t, "pp-sender", &rs, 1), 1);
        WT_ASSERT_EQ(tr_runs_named(&t, "pp-receiver", &rr, 1), 1);
        /* On one thread, every message on a rendezvous channel makes one
         * side wait (it cannot spin for the other); on more, at least one
         * does. */
        size_t blocks = rs->nslices - 1 + rr->nslices - 1;
        WT_ASSERT(blocks >= (w <= 1 ? PP_N : 1), "%u workers: %d rendezvous messages but only %zu blocked slices", w,
                  PP_N, blocks);
        for (size_t k = 0; k + 1 < rr->nslices; k++)
            WT_ASSERT(streq(slice(&t, rr, k)->wait, "channel receive"), "%u workers: receiver's slice %zu waits on \"%s\"",
                      w, k, slice(&t, rr, k)->wait);
        for (size_t k = 0; k + 1 < rs->nslices; k++)
            WT_ASSERT(strncmp(slice(&t, rs, k)->wait, "channel", 7) == 0, "%u workers: sender's slice %zu waits on \"%s\"",
                      w, k, slice(&t, rs, k)->wait);
        WT_ASSERT(slice(&t, rr, rr->nslices - 1)->wait == NULL && slice(&t, rs, rs->nslices - 1)->wait == NULL);
        check_arrows(&t, rr, rs, w);
        check_arrows(&t, rs, rr, w);
        tr_free(&t);
        close_s(s, w);
        weft_chan_destroy(pp.ch);
        weft_waitgroup_destroy(&pp.wg);
    }
}

struct evt {
    weft_event ev, ev_out;
    weft_waitgroup wg;
    atomic_int go, go_out;   /* the test saw the waiter blocked: signal now */
    atomic_int bad;
};

static void ev_waiter(void *p)
{
    struct evt *e = p;
    if (weft_event_wait(&e->ev) != WEFT_OK)
        atomic_fetch_add(&e->bad, 1);
    weft_waitgroup_done(&e->wg);
}

static void ev_setter(void *p)
{
    struct evt *e = p;
    while (!atomic_load(&e->go))
        weft_sleep(100 * US);
    weft_sleep(1 * MS);   /* it sleeps at least once */
    weft_event_signal(&e->ev);
    weft_waitgroup_done(&e->wg);
}

static void ev_outside_waiter(void *p)
{
    struct evt *e = p;
    if (weft_event_wait(&e->ev_out) != WEFT_OK)
        atomic_fetch_add(&e->bad, 1);
    weft_waitgroup_done(&e->wg);
}

static void ev_sleeper(void *p)
{
    struct evt *e = p;
    for (int i = 0; i < 3; i++)
        weft_sleep(1 * MS);
    weft_waitgroup_done(&e->wg);
}

/* A plain thread, not of s: its wake-up has no arrow. */
static void *ev_outside_setter(void *p)
{
    struct evt *e = p;
    while (!atomic_load(&e->go_out))
        nap_ns(100 * US);
    weft_event_signal(&e->ev_out);
    return NULL;
}


/* Whether s's state lists a fiber waiting on ev. The harness has every
 * scheduler track its blocked fibers (wtest_watchdog.c), so a wait shows
 * there once the fiber is blocked in it. */
static bool waits_listed(weft_sched *s, weft_event *ev)
{
    char *text = wt_sched_state(s);
    WT_ASSERT(text != NULL);
    char line[64];
    snprintf(line, sizeof line, "waits on event %p", (void *)ev);
    bool found = strstr(text, line) != NULL;
    free(text);
    return found;
}

/* Until the waiter on ev is blocked (a hang otherwise, caught by the
 * test's timeout); weft_sleep runs the tasks meanwhile on a bound thread. */
static void wait_blocked(weft_sched *s, weft_event *ev)
{
    while (!waits_listed(s, ev))
        WT_ASSERT_EQ(weft_sleep(100 * US), WEFT_OK);
}

/* Each signal comes once its waiter is seen blocked: a setter that slept
 * 20 ms after the waiter's flag stood in for that, and a waiter starved
 * between its flag and its wait on a loaded machine found the event set
 * and never blocked (so the blocked slice was checked only when the wait
 * took 10 ms, which a starved waiter that never blocked could take too). */
WT_TEST(trace, blocked_event, .timeout = 120)
{
    WT_FOR_WORKERS(w, 0, 1, 2, 8) {
        weft_sched *s = open_s(w);
        struct evt *e = calloc(1, sizeof *e);
        weft_event_init(&e->ev, false, false);
        weft_event_init(&e->ev_out, false, false);
        weft_waitgroup_init(&e->wg, 4);
        start_ok(s, BIG);
        pthread_t th;
        WT_ASSERT_EQ(pthread_create(&th, NULL, ev_outside_setter, e), 0);
        WT_ASSERT_EQ(spawn_named(s, ev_setter, e, "ev-setter"), WEFT_OK);
        WT_ASSERT_EQ(spawn_named(s, ev_waiter, e, "ev-waiter"), WEFT_OK);
        WT_ASSERT_EQ(spawn_named(s, ev_outside_waiter, e, "ev-outside"), WEFT_OK);
        WT_ASSERT_EQ(spawn_named(s, ev_sleeper, e, "sleeper"), WEFT_OK);
        wait_blocked(s, &e->ev);
        atomic_store(&e->go, 1);
        wait_blocked(s, &e->ev_out);
        atomic_store(&e->go_out, 1);
        WT_ASSERT_EQ(weft_waitgroup_wait(&e->wg), WEFT_OK);
        WT_ASSERT_EQ(pthread_join(th, NULL), 0);
        WT_ASSERT_EQ(atomic_load(&e->bad), 0);
        stop_ok(s);
        tr_trace t;
        CAPTURE(s, &t);
        WT_ASSERT(t.dropped == 0);
        const tr_run *rw, *rs, *ro, *rz;
        WT_ASSERT_EQ(tr_runs_named(&t, "ev-waiter", &rw, 1), 1);
        WT_ASSERT_EQ(tr_runs_named(&t, "ev-setter", &rs, 1), 1);
        WT_ASSERT_EQ(tr_runs_named(&t, "ev-outside", &ro, 1), 1);
        WT_ASSERT_EQ(tr_runs_named(&t, "sleeper", &rz, 1), 1);

        /* The sleeper: four stretches, three ended by "sleep". */
        WT_ASSERT(rz->nslices == 4, "%u workers: three sleeps gave %zu slices", w, rz->nslices);
        for (size_t k = 0; k < 3; k++)
            WT_ASSERT(streq(slice(&t, rz, k)->wait, "sleep"), "%u workers: sleeper's slice %zu waits on \"%s\"", w, k,
                      slice(&t, rz, k)->wait);
        WT_ASSERT(slice(&t, rz, 3)->wait == NULL);
        /* The setter slept too. */
        WT_ASSERT(rs->nslices >= 2 && streq(slice(&t, rs, rs->nslices - 2)->wait, "sleep"));

        /* Both waits blocked (each was seen so before its signal). */
        WT_ASSERT(rw->nslices == 2, "%u workers: a blocked event wait gave %zu slices", w, rw->nslices);
        WT_ASSERT(streq(slice(&t, rw, 0)->wait, "event"), "%u workers: waiter's blocked slice waits on \"%s\"", w,
                  slice(&t, rw, 0)->wait);
        check_arrows(&t, rw, rs, w);
        WT_ASSERT(ro->nslices == 2, "%u workers: an event wait woken from outside gave %zu slices", w, ro->nslices);
        WT_ASSERT(streq(slice(&t, ro, 0)->wait, "event"));
        tr_free(&t);
        close_s(s, w);
        weft_event_destroy(&e->ev);
        weft_event_destroy(&e->ev_out);
        weft_waitgroup_destroy(&e->wg);
        free(e);
    }
}

/* ---- every way a task blocks ---------------------------------------------------------- */

/* Task "holder" takes a resource, sets `held`, and gives it back once the
 * test has seen the blocker blocked (`go`); task "blocker" waits
 * (sleeping) until `held`, then blocks on the resource. The blocker's run
 * must show the block as a stretch with an args.wait (the header lists
 * weft_yield and weft_wait_until among the ways a task blocks too), and,
 * where the waker is the holder, a wake arrow into the next stretch.
 * (The holder used to give the resource back after 5 ms: a blocker
 * starved for that long on a loaded machine found it free and never
 * blocked.) */
enum wk {
    WK_MUTEX, WK_COND, WK_SEM, WK_WAITGROUP, WK_CHAN_SEND, WK_GRAPH, WK_WAIT_UNTIL, WK_YIELD, WK_CALL_BLOCKING,
    WK_WAIT_FD, WK_COUNT
};
static const char *const wk_names[WK_COUNT] = {
    "mutex", "cond", "semaphore", "waitgroup", "chan send", "graph wait", "wait_until", "yield", "call_blocking",
    "wait_fd",
};

struct wk_ctx {
    weft_sched *s;
    enum wk kind;
    atomic_int held, flag, go;
    weft_mutex m;
    weft_cond c;
    weft_sem sem;
    weft_waitgroup wg, done;
    weft_chan *ch;
    weft_graph *g;
    int pipe[2];
    atomic_int bad;
};

/* Until the test has seen the blocker blocked. */
static void wk_gate(struct wk_ctx *k)
{
    while (!atomic_load(&k->go))
        weft_sleep(100 * US);
}

static void wk_graph_task(void *p)
{
    wk_gate(p);
}

static bool wk_flag_set(void *p)
{
    return atomic_load(&((struct wk_ctx *)p)->flag) != 0;
}

static void wk_nap(void *p)   /* on a thread of the blocking pool */
{
    struct wk_ctx *k = p;
    while (!atomic_load(&k->go))
        nap_ns(100 * US);
}

static void wk_holder(void *p)
{
    struct wk_ctx *k = p;
    int v = 1;
    switch (k->kind) {
    case WK_MUTEX:
        weft_mutex_lock(&k->m);
        atomic_store(&k->held, 1);
        wk_gate(k);
        weft_mutex_unlock(&k->m);
        break;
    case WK_COND:
        atomic_store(&k->held, 1);
        wk_gate(k);
        weft_mutex_lock(&k->m);
        atomic_store(&k->flag, 1);
        weft_cond_signal(&k->c);
        weft_mutex_unlock(&k->m);
        break;
    case WK_SEM:
        atomic_store(&k->held, 1);
        wk_gate(k);
        weft_sem_release(&k->sem);
        break;
    case WK_WAITGROUP:
        atomic_store(&k->held, 1);
        wk_gate(k);
        weft_waitgroup_done(&k->wg);
        break;
    case WK_CHAN_SEND:
        if (weft_chan_send(k->ch, &v) != WEFT_OK)   /* fills the one slot */
            atomic_fetch_add(&k->bad, 1);
        atomic_store(&k->held, 1);
        wk_gate(k);
        if (weft_chan_recv(k->ch, &v) != WEFT_OK || weft_chan_recv(k->ch, &v) != WEFT_OK)
            atomic_fetch_add(&k->bad, 1);
        break;
    case WK_WAIT_UNTIL:
        atomic_store(&k->held, 1);
        wk_gate(k);
        atomic_store(&k->flag, 1);
        break;
    case WK_WAIT_FD:
        atomic_store(&k->held, 1);
        wk_gate(k);
        if (write(k->pipe[1], "x", 1) != 1)
            atomic_fetch_add(&k->bad, 1);
        break;
    default:   /* the blocker needs no partner, or the partner is busy work */
        atomic_store(&k->held, 1);
        busy_ns(1 * MS);
        break;
    }
    weft_waitgroup_done(&k->done);
}

static void wk_filler(void *p)
{
    struct wk_ctx *k = p;
    busy_ns(10 * US);
    weft_waitgroup_done(&k->done);
}

static void wk_blocker(void *p)
{
    struct wk_ctx *k = p;
    int v = 2, rc = WEFT_OK;
    while (!atomic_load(&k->held))
        weft_sleep(100 * US);
    switch (k->kind) {
    case WK_MUTEX:
        weft_mutex_lock(&k->m);
        weft_mutex_unlock(&k->m);
        break;
    case WK_COND:
        weft_mutex_lock(&k->m);
        while (!atomic_load(&k->flag) && rc == WEFT_OK)
            rc = weft_cond_wait(&k->c, &k->m);
        weft_mutex_unlock(&k->m);
        break;
    case WK_SEM:
        rc = weft_sem_acquire(&k->sem);
        break;
    case WK_WAITGROUP:
        rc = weft_waitgroup_wait(&k->wg);
        break;
    case WK_CHAN_SEND:
        rc = weft_chan_send(k->ch, &v);
        break;
    case WK_GRAPH:
        if ((rc = weft_graph_run(k->s, k->g)) == WEFT_OK)
            rc = weft_graph_wait(k->g);
        break;
    case WK_WAIT_UNTIL:
        rc = weft_wait_until(wk_flag_set, k);
        break;
    case WK_YIELD: {
        /* Something queued on this thread (pinned: not stolen) for the
         * yield to go behind. */
        weft_spawn_opts o = { .pinned = true, .thread = weft_thread_id(), .name = "wk-filler" };
        if ((rc = weft_spawn_ex(k->s, wk_filler, k, &o)) != WEFT_OK)
            weft_waitgroup_done(&k->done);
        weft_yield();
        break;
    }
    case WK_CALL_BLOCKING:
        rc = weft_call_blocking(k->s, wk_nap, k);
        break;
    case WK_WAIT_FD: {
        int r = weft_fd_wait_for(k->pipe[0], POLLIN, UINT64_MAX);
        rc = r > 0 ? WEFT_OK : r;
        break;
    }
    default:
        break;
    }
    if (rc != WEFT_OK)
        atomic_fetch_add(&k->bad, 1);
    weft_waitgroup_done(&k->done);
}

/* Until s's state lists the task named name as blocked in a wait (not a
 * sleep): a line "fiber ...: waits on ...; runs task "name" ...". */
static void wait_task_blocked(weft_sched *s, const char *name)
{
    char want[96];
    snprintf(want, sizeof want, "task \"%s\"", name);
    for (;;) {
        char *text = wt_sched_state(s);
        WT_ASSERT(text != NULL);
        bool found = false;
        for (char *line = strtok(text, "\n"); line && !found; line = strtok(NULL, "\n"))
            found = strstr(line, ": waits on ") && strstr(line, want);
        free(text);
        if (found)
            return;
        WT_ASSERT_EQ(weft_sleep(100 * US), WEFT_OK);   /* runs the tasks on a bound thread */
    }
}

WT_TEST(trace, wait_kinds, .timeout = 300)
{
    static const unsigned ws[] = { 0, 1, 2 };
    char seen[WK_COUNT][64];
    for (size_t wi = 0; wi < 3; wi++) {
        unsigned w = ws[wi];
        for (int kind = 0; kind < WK_COUNT; kind++) {
            weft_sched *s = open_s(w);
            struct wk_ctx *k = calloc(1, sizeof *k);
            k->s = s;
            k->kind = (enum wk)kind;
            weft_mutex_init(&k->m);
            weft_cond_init(&k->c);
            weft_sem_init(&k->sem, 0);
            weft_waitgroup_init(&k->wg, 1);
            weft_waitgroup_init(&k->done, kind == WK_YIELD ? 3 : 2);
            WT_ASSERT_EQ(weft_chan_create(&k->ch, sizeof(int), 1), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_create(&k->g), WEFT_OK);
            WT_ASSERT(weft_graph_add(k->g, wk_graph_task, k) != NULL);
            WT_ASSERT_EQ(pipe(k->pipe), 0);
            start_ok(s, BIG);
            WT_ASSERT_EQ(spawn_named(s, wk_holder, k, "wk-holder"), WEFT_OK);
            WT_ASSERT_EQ(spawn_named(s, wk_blocker, k, "wk-blocker"), WEFT_OK);
            if (kind != WK_YIELD)   /* a yield is a stretch of its own */
                wait_task_blocked(s, "wk-blocker");
            atomic_store(&k->go, 1);
            WT_ASSERT_EQ(weft_waitgroup_wait(&k->done), WEFT_OK);
            stop_ok(s);
            WT_ASSERT(atomic_load(&k->bad) == 0, "%u workers, %s: a call failed", w, wk_names[kind]);
            tr_trace t;
            char why[2048];
            bool ok = tr_capture(s, &t, NULL, why, sizeof why);
            WT_ASSERT(ok, "%u workers, %s: %s", w, wk_names[kind], why);
            const tr_run *r, *h;
            WT_ASSERT_EQ(tr_runs_named(&t, "wk-blocker", &r, 1), 1);
            WT_ASSERT_EQ(tr_runs_named(&t, "wk-holder", &h, 1), 1);
            /* The stretch that ended in the block is the last but one. */
            WT_ASSERT(r->nslices >= 2, "%u workers, %s: the blocker's run has %zu slice", w, wk_names[kind],
                      r->nslices);
            const tr_event *b = slice(&t, r, r->nslices - 2);
            WT_ASSERT(b->wait && b->wait[0], "%u workers, %s: the blocked stretch has no args.wait", w, wk_names[kind]);
            WT_ASSERT(strcmp(b->wait, "sleep") != 0,
                      "%u workers, %s: the blocker's last blocked stretch says \"sleep\": the block itself is not "
                      "a stretch", w, wk_names[kind]);
            snprintf(seen[kind], sizeof seen[kind], "%s", b->wait);
            bool task_waker = kind == WK_MUTEX || kind == WK_COND || kind == WK_SEM || kind == WK_WAITGROUP ||
                              kind == WK_CHAN_SEND;
            if (task_waker) {
                const tr_event *f = tr_flow_into(&t, slice(&t, r, r->nslices - 1));
                WT_ASSERT(f != NULL, "%u workers, %s: no wake arrow into the stretch after the block", w,
                          wk_names[kind]);
                const tr_event *st = tr_flow_start(&t, f);
                WT_ASSERT(st && st->tid == h->tid && st->ts >= h->begin - TR_EPS && st->ts <= h->end + TR_EPS,
                          "%u workers, %s: the wake arrow does not start in the holder's run", w, wk_names[kind]);
            }
            tr_free(&t);
            close_s(s, w);
            weft_mutex_destroy(&k->m);
            weft_cond_destroy(&k->c);
            weft_sem_destroy(&k->sem);
            weft_waitgroup_destroy(&k->wg);
            weft_waitgroup_destroy(&k->done);
            weft_chan_destroy(k->ch);
            WT_ASSERT_EQ(weft_graph_destroy(k->g), WEFT_OK);
            close(k->pipe[0]);
            close(k->pipe[1]);
            free(k);
        }
        fprintf(stderr, "wait_kinds: %u workers:", w);
        for (int kind = 0; kind < WK_COUNT; kind++)
            fprintf(stderr, " %s=\"%s\"", wk_names[kind], seen[kind]);
        fputc('\n', stderr);
    }
}

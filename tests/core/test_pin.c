/* Issue 22: thread ids, pinned tasks, priorities, bound threads that help
 * or not (WEFT_BIND_NO_HELP), weft_pinned_run and weft_pinned_wait_for. Written
 * from weft.h alone ("priorities and pinned tasks", weft_sched_bind_ex,
 * weft_thread_id, weft_config.priority_interval, weft_task_set_priority,
 * weft_task_set_pin), as a user reads it.
 *
 * Hangs. A broken rule here mostly shows as a hang: a bound thread that
 * sleeps in a weft call while a task pinned to it is queued, a worker
 * waiting for a main-thread task that was skipped. Each wait of the
 * wait_* tests has a rescuer thread: if the pinned task has not run
 * RESCUE_S seconds into the wait, the rescuer does the task's job itself
 * (opens what the bound thread waits for), and the test fails naming the
 * wait, the worker count, the bind flags and where the pin came from,
 * instead of hanging. Where nothing can rescue (weft_sched_wait_idle waits for
 * the pinned task itself; a graph waits for its pinned task), the test's
 * .timeout ends it and the watchdog prints the schedulers' state; each
 * case is printed to stderr before it runs so the log names the hung one.
 * Loops that spin in the test's own code give up after SPIN_NS.
 *
 * Runs at 0 (the test thread bound, no workers), 1, 2 and 8 workers,
 * WEFT_BIND_NO_HELP at 1, 2 and 8 (with no workers, who would run
 * unpinned tasks beside a NO_HELP thread is not documented). Sizes follow
 * WEFT_STRESS_SCALE. The volume tests (10^5 pins from every kind of
 * thread, a 1000-frame loop, pins racing unbind, bind churn) are in
 * tests/stress/stress_pin.c.
 *
 * Tasks never assert (a Criterion assert off the test's thread is not
 * safe): they record into atomics that the test thread checks. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "weft.h"
#include "sched_util.h"
#include "wtest.h"
#include "../graph/graph_util.h"


/* Both bound waits that only a broken rule (a hang) reaches: a bound
 * thread or a task starved of CPU on a loaded machine (CI: 2 cores, a
 * busy loop on each, three presets at once) gets its turn well before. */
#define RESCUE_S 30
#define SPIN_NS  ((uint64_t)60 * 1000000000u)
#define MS       ((uint64_t)1000000)

/* Worker counts with the bind flags tried at each. */
static const struct wcfg { unsigned workers, flags; } cfgs[] = {
    { 0, 0 }, { 1, 0 }, { 2, 0 }, { 8, 0 },
    { 1, WEFT_BIND_NO_HELP }, { 2, WEFT_BIND_NO_HELP }, { 8, WEFT_BIND_NO_HELP },
};
#define NCFGS (sizeof cfgs / sizeof cfgs[0])

static const char *flag_name(unsigned flags)
{
    return flags & WEFT_BIND_NO_HELP ? "NO_HELP" : "helping";
}

/* ---- helpers ---------------------------------------------------------- */

static weft_sched *sched_with(unsigned workers, unsigned priority_interval)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = wt_workers(workers);
    c.priority_interval = priority_interval;
    weft_sched *s = NULL;
    int rc = weft_sched_create(&s, &c);
    WT_ASSERT(rc == WEFT_OK, "create(%u workers, interval %u): %s", workers, priority_interval,
              weft_err_name(rc));
    return s;
}

/* Binds the calling thread to s; returns its id (checked >= workers). */
static int bind_as(weft_sched *s, unsigned flags)
{
    int rc = weft_sched_bind_ex(s, flags);
    WT_ASSERT(rc == WEFT_OK, "bind_ex(%s): %s", flag_name(flags), weft_err_name(rc));
    int id = weft_thread_id();
    WT_ASSERT(id >= (int)weft_sched_workers(s), "bound thread's id %d at %u workers", id,
              weft_sched_workers(s));
    return id;
}

static int spawn_pinned(weft_sched *s, weft_fn fn, void *arg, int thread)
{
    weft_spawn_opts o = { .pinned = true, .thread = thread };
    return weft_spawn_ex(s, fn, arg, &o);
}

static int spawn_prio(weft_sched *s, weft_fn fn, void *arg, weft_priority p)
{
    weft_spawn_opts o = { .priority = p };
    return weft_spawn_ex(s, fn, arg, &o);
}

/* Spins (giving the CPU away) until *v >= want or ns pass. */
static bool spin_until(atomic_int *v, int want, uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (atomic_load(v) < want) {
        if (wt_now_ns() > end)
            return false;
        sched_yield();
    }
    return true;
}

static void busy_ns(uint64_t ns)
{
    uint64_t end = wt_now_ns() + ns;
    while (wt_now_ns() < end) {
    }
}

static void nap_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static pthread_t start_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    WT_ASSERT_EQ(pthread_create(&t, NULL, fn, arg), 0);
    return t;
}

static void join_thread(pthread_t t)
{
    WT_ASSERT_EQ(pthread_join(t, NULL), 0);
}

/* ---- weft_thread_id --------------------------------------------------- */

struct idsample {
    atomic_int slot, arrived, timed_out;
    int need;
    int id[64], widx[64];
};

/* W of these must all run at once (a busy rendezvous), so each is on a
 * worker of its own: their ids are then every worker's. */
static void rendezvous(void *arg)
{
    struct idsample *r = arg;
    int k = atomic_fetch_add(&r->slot, 1);
    if (k < 64) {
        r->id[k] = weft_thread_id();
        r->widx[k] = weft_thread_worker_index();
    }
    atomic_fetch_add(&r->arrived, 1);
    if (!spin_until(&r->arrived, r->need, SPIN_NS))
        atomic_store(&r->timed_out, 1);
}

static void record_id(void *arg)
{
    atomic_store((atomic_int *)arg, weft_thread_id());
}

struct binder {
    weft_sched *s;
    pthread_t th;
    pthread_barrier_t *bound;
    sem_t leave;
    int rc, id, id_after;
};

static void *binder_main(void *p)
{
    struct binder *b = p;
    b->rc = weft_sched_bind(b->s);
    b->id = weft_thread_id();
    pthread_barrier_wait(b->bound);
    while (sem_wait(&b->leave) == -1 && errno == EINTR) {
    }
    weft_sched_unbind();
    b->id_after = weft_thread_id();
    return NULL;
}

static void binder_start(struct binder *b, weft_sched *s, pthread_barrier_t *bar)
{
    memset(b, 0, sizeof *b);
    b->s = s;
    b->bound = bar;
    b->id = b->id_after = -2;
    sem_init(&b->leave, 0, 0);
    b->th = start_thread(binder_main, b);
}

static void binder_stop(struct binder *b)
{
    sem_post(&b->leave);
    join_thread(b->th);
    sem_destroy(&b->leave);
    WT_ASSERT_EQ(b->id_after, -1);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

WT_TEST(pin, thread_ids, .timeout = 120)
{
    WT_FOR_WORKERS(W, 0, 1, 2, 8) {
        fprintf(stderr, "thread_ids at %u workers\n", W);
        weft_sched *s = make_sched(W);
        WT_ASSERT_EQ(weft_thread_id(), -1);   /* a plain thread */

        if (W > 0) {   /* workers: 0..W-1, the same as weft_thread_worker_index */
            static struct idsample r;
            memset(&r, 0, sizeof r);
            r.need = (int)W;
            for (unsigned i = 0; i < W; i++)
                WT_ASSERT_EQ(weft_spawn(s, rendezvous, &r), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&r.timed_out), 0);
            int ids[64];
            for (unsigned i = 0; i < W; i++) {
                WT_ASSERT_EQ(r.id[i], r.widx[i]);
                ids[i] = r.id[i];
            }
            qsort(ids, W, sizeof ids[0], cmp_int);
            for (unsigned i = 0; i < W; i++)
                WT_ASSERT(ids[i] == (int)i, "worker ids at %u workers: [%u] = %d", W, i, ids[i]);
        }

        /* The first bound thread takes the smallest id >= W: W. */
        WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        WT_ASSERT_EQ(weft_thread_id(), (int)W);
        if (W == 0) {   /* a task run by the bound thread sees its id */
            static atomic_int seen;
            atomic_store(&seen, -2);
            WT_ASSERT_EQ(weft_spawn(s, record_id, &seen), WEFT_OK);
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
            WT_ASSERT_EQ(atomic_load(&seen), 0);
        }

        /* Three more at once: W+1..W+3, distinct. */
        /* One barrier per step, destroyed once every binder has been
         * joined: a binder may still be inside pthread_barrier_wait when
         * this thread has left it. */
        pthread_barrier_t bar, bar2, bar3;
        pthread_barrier_init(&bar, NULL, 4);
        pthread_barrier_init(&bar2, NULL, 2);
        pthread_barrier_init(&bar3, NULL, 2);
        struct binder b[6];
        for (int i = 0; i < 3; i++)
            binder_start(&b[i], s, &bar);
        pthread_barrier_wait(&bar);
        int ids[3];
        for (int i = 0; i < 3; i++) {
            WT_ASSERT_EQ(b[i].rc, WEFT_OK);
            ids[i] = b[i].id;
        }
        qsort(ids, 3, sizeof ids[0], cmp_int);
        for (int i = 0; i < 3; i++)
            WT_ASSERT(ids[i] == (int)W + 1 + i, "bound ids at %u workers: %d %d %d", W, ids[0],
                      ids[1], ids[2]);

        /* The one with W+2 leaves; the next binder gets W+2 back. */
        int mid = -1;
        for (int i = 0; i < 3; i++)
            if (b[i].id == (int)W + 2)
                mid = i;
        binder_stop(&b[mid]);
        binder_start(&b[3], s, &bar2);
        pthread_barrier_wait(&bar2);
        WT_ASSERT_EQ(b[3].rc, WEFT_OK);
        WT_ASSERT(b[3].id == (int)W + 2, "reused id: %d, want the smallest free %u", b[3].id, W + 2);

        /* This thread leaves (id W free); the next binder gets W. */
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_thread_id(), -1);
        binder_start(&b[4], s, &bar3);
        pthread_barrier_wait(&bar3);
        WT_ASSERT_EQ(b[4].rc, WEFT_OK);
        WT_ASSERT(b[4].id == (int)W, "reused id: %d, want the smallest free %u", b[4].id, W);

        for (int i = 0; i < 5; i++)
            if (i != mid)
                binder_stop(&b[i]);
        pthread_barrier_destroy(&bar);
        pthread_barrier_destroy(&bar2);
        pthread_barrier_destroy(&bar3);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        WT_ASSERT_EQ(weft_thread_id(), -1);
    }
}

/* ---- pinned to workers: every task on the worker it names -------------- */

struct wpin;
struct wpin_arg { struct wpin *p; int target; };
struct wpin {
    weft_sched *s;
    unsigned W;
    int per;                  /* pins per target and source */
    struct wpin_arg arg[8];
    atomic_int runs[8], wrong, refused;
};

static void wpin_task(void *arg)
{
    struct wpin_arg *a = arg;
    if (weft_thread_id() != a->target)
        atomic_fetch_add(&a->p->wrong, 1);
    atomic_fetch_add(&a->p->runs[a->target], 1);
}

static void wpin_pin_all(struct wpin *p)
{
    for (int i = 0; i < p->per; i++)
        for (unsigned t = 0; t < p->W; t++)
            if (spawn_pinned(p->s, wpin_task, &p->arg[t], (int)t) != WEFT_OK)
                atomic_fetch_add(&p->refused, 1);
}

static void wpin_from_task(void *arg)
{
    wpin_pin_all(arg);
}

WT_TEST(pin, pinned_to_workers_run_there, .timeout = 120)
{
    int per = (int)wt_scaled(2000, 200);
    WT_FOR_WORKERS(w, 1, 2, 8) {
        static struct wpin p;
        memset(&p, 0, sizeof p);
        p.W = w;
        p.per = per;
        p.s = make_sched(p.W);
        for (unsigned t = 0; t < p.W; t++)
            p.arg[t] = (struct wpin_arg){ &p, (int)t };
        wpin_pin_all(&p);                                        /* from a plain thread */
        for (int i = 0; i < 4; i++)                              /* from workers */
            WT_ASSERT_EQ(weft_spawn(p.s, wpin_from_task, &p), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(p.s), WEFT_OK);
        WT_ASSERT(atomic_load(&p.refused) == 0, "%d pins to workers refused at %u workers (EINVAL: not implemented?)",
                  atomic_load(&p.refused), p.W);
        WT_ASSERT(atomic_load(&p.wrong) == 0, "%d pinned tasks ran on another worker at %u workers",
                  atomic_load(&p.wrong), p.W);
        for (unsigned t = 0; t < p.W; t++)
            WT_ASSERT(atomic_load(&p.runs[t]) == 5 * per, "worker %u ran %d of its %d pinned tasks", t,
                      atomic_load(&p.runs[t]), 5 * per);
        WT_ASSERT_EQ(weft_sched_destroy(p.s), WEFT_OK);
    }
}

/* ---- a bound thread runs its pinned tasks in every weft wait ----------- */

enum wait_kind { WK_IDLE, WK_GRAPH, WK_WAITGROUP, WK_EVENT, WK_MUTEX, WK_COND, WK_CHAN,
                 WK_WAIT_UNTIL, WK_SLEEP, WK_PFOR };
static const char *const wk_name[] = {
    "weft_sched_wait_idle", "weft_graph_wait", "weft_waitgroup_wait", "weft_event_wait",
    "weft_mutex_lock", "weft_cond_wait", "weft_chan_recv",
    "weft_wait_until", "weft_sleep", "weft_parallel_for",
};
enum pin_from { FROM_SELF, FROM_TASK, FROM_PLAIN, NFROM };
static const char *const from_name[] = {
    "the bound thread, before it waits", "a task, 1 ms into the wait", "a plain thread, 1 ms into the wait",
};

/* One case: the bound thread waits for something that opens only when a
 * task pinned to it has run (opened by that task: `gate`). */
struct wcase {
    weft_sched *s;
    enum wait_kind kind;
    int bound_id;
    atomic_int claimed;        /* who opened the gate: 1 the pinned task, 2 the rescuer, 3 pin refused */
    atomic_int p_runs, p_on;   /* the pinned task: times run, the id it ran on */
    atomic_int pin_rc, pinned; /* its spawn_ex's result, and that the call returned */
    _Atomic uint64_t pin_at;   /* wt_now_ns when the pin was made (WK_SLEEP's excuse) */
    atomic_int holder_in;      /* WK_MUTEX: the holder has the mutex */
    weft_event gate;           /* what a blocked task waits on (IDLE, GRAPH, EVENT, MUTEX, PFOR) */
    weft_waitgroup wg;
    weft_mutex m;
    weft_cond c;
    int cond_flag;             /* under m */
    weft_chan *ch;
    atomic_int until;
    sem_t finished;            /* the bound thread's wait returned: the rescuer stops */
};

static void open_gate(struct wcase *c)
{
    switch (c->kind) {
    case WK_WAITGROUP:
        weft_waitgroup_done(&c->wg);
        break;
    case WK_COND:
        weft_mutex_lock(&c->m);
        c->cond_flag = 1;
        weft_cond_signal(&c->c);
        weft_mutex_unlock(&c->m);
        break;
    case WK_CHAN: {
        int v = 1;
        (void)weft_chan_try_send(c->ch, &v);
        break;
    }
    case WK_WAIT_UNTIL:
        atomic_store(&c->until, 1);
        break;
    case WK_SLEEP:
        break;
    default:
        weft_event_signal(&c->gate);
        break;
    }
}

/* The gate opens once, by whoever comes first. */
static void claim_open(struct wcase *c, int who)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&c->claimed, &none, who))
        open_gate(c);
}

static void wc_pinned(void *arg)
{
    struct wcase *c = arg;
    atomic_store(&c->p_on, weft_thread_id());
    atomic_fetch_add(&c->p_runs, 1);
    claim_open(c, 1);
}

static void wc_pin(struct wcase *c)
{
    atomic_store(&c->pin_at, wt_now_ns());
    atomic_store(&c->pin_rc, spawn_pinned(c->s, wc_pinned, c, c->bound_id));
    atomic_store(&c->pinned, 1);
}

static void wc_pinner_task(void *arg)
{
    weft_sleep(MS);
    wc_pin(arg);
}

static void *wc_pinner_thread(void *arg)
{
    nap_ns(MS);
    wc_pin(arg);
    return NULL;
}

static void wc_gate_waiter(void *arg)
{
    weft_event_wait(&((struct wcase *)arg)->gate);
}

static void wc_holder(void *arg)
{
    struct wcase *c = arg;
    weft_mutex_lock(&c->m);
    atomic_store(&c->holder_in, 1);
    weft_event_wait(&c->gate);
    weft_mutex_unlock(&c->m);
}

static void wc_pfor_body(size_t b, size_t e, void *arg)
{
    if (b == 0)
        weft_event_wait(&((struct wcase *)arg)->gate);
}

static bool wc_until(void *arg)
{
    return atomic_load(&((struct wcase *)arg)->until) != 0;
}

/* Opens the gate itself when the pin was refused (at once) or when the
 * pinned task has not run after RESCUE_S (and says so). */
static void *wc_rescuer(void *arg)
{
    struct wcase *c = arg;
    uint64_t end = wt_now_ns() + (uint64_t)RESCUE_S * 1000000000u;
    while (wt_now_ns() < end) {
        if (sem_trywait(&c->finished) == 0)
            return NULL;
        if (atomic_load(&c->pinned) && atomic_load(&c->pin_rc) != WEFT_OK) {
            claim_open(c, 3);
            return NULL;
        }
        nap_ns(MS);
    }
    if (atomic_load(&c->p_runs) == 0 && c->kind != WK_SLEEP) {
        fprintf(stderr, "rescuer: the task pinned to the bound thread has not run %d s into %s%s\n",
                RESCUE_S, wk_name[c->kind],
                c->kind == WK_IDLE ? "; it waits for that task itself, so it hangs until the test's timeout" : "");
        claim_open(c, 2);
    }
    return NULL;
}

static void run_case(unsigned W, unsigned flags, enum wait_kind kind, enum pin_from from)
{
    fprintf(stderr, "case: %s at %u workers, %s bound thread, pinned from %s\n", wk_name[kind], W,
            flag_name(flags), from_name[from]);
    struct wcase *c = calloc(1, sizeof *c);
    WT_ASSERT(c != NULL);
    c->kind = kind;
    atomic_store(&c->pin_rc, 1);
    c->s = make_sched(W);
    c->bound_id = bind_as(c->s, flags);
    weft_event_init(&c->gate, true, false);
    weft_waitgroup_init(&c->wg, 1);
    weft_mutex_init(&c->m);
    weft_cond_init(&c->c);
    WT_ASSERT_EQ(weft_chan_create(&c->ch, sizeof(int), 1), WEFT_OK);
    sem_init(&c->finished, 0, 0);
    weft_graph *g = NULL;

    if (kind == WK_GRAPH) {
        g = new_graph();
        add(g, wc_gate_waiter, c);
    } else if (kind == WK_IDLE) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_gate_waiter, c), WEFT_OK);
    } else if (kind == WK_MUTEX) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_holder, c), WEFT_OK);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (!atomic_load(&c->holder_in) && wt_now_ns() < end) {
            if (W == 0)
                weft_yield();   /* with no workers, this thread runs the holder */
            else
                sched_yield();
        }
        WT_ASSERT(atomic_load(&c->holder_in), "the mutex holder task never ran (%u workers, %s)", W,
                  flag_name(flags));
    }
    pthread_t rescuer = start_thread(wc_rescuer, c), plain = rescuer;
    if (from == FROM_SELF) {
        wc_pin(c);
        WT_ASSERT(atomic_load(&c->pin_rc) == WEFT_OK, "spawn_ex pinned to the bound thread %d: %s",
                  c->bound_id, weft_err_name(atomic_load(&c->pin_rc)));
    } else if (from == FROM_TASK) {
        WT_ASSERT_EQ(weft_spawn(c->s, wc_pinner_task, c), WEFT_OK);
    } else {
        plain = start_thread(wc_pinner_thread, c);
    }

    int rc = WEFT_OK, v = 0;
    uint64_t wait_t0 = wt_now_ns();
    switch (kind) {
    case WK_IDLE:       rc = weft_sched_wait_idle(c->s); break;
    case WK_GRAPH:
        rc = weft_graph_run(c->s, g);
        if (rc == WEFT_OK)
            rc = weft_graph_wait(g);
        break;
    case WK_WAITGROUP:  rc = weft_waitgroup_wait(&c->wg); break;
    case WK_EVENT:      rc = weft_event_wait(&c->gate); break;
    case WK_MUTEX:
        weft_mutex_lock(&c->m);
        weft_mutex_unlock(&c->m);
        break;
    case WK_COND:
        weft_mutex_lock(&c->m);
        while (!c->cond_flag && rc == WEFT_OK)
            rc = weft_cond_wait(&c->c, &c->m);
        weft_mutex_unlock(&c->m);
        break;
    case WK_CHAN:       rc = weft_chan_recv(c->ch, &v); break;
    case WK_WAIT_UNTIL: rc = weft_wait_until(wc_until, c); break;
    case WK_SLEEP:      rc = weft_sleep(300 * MS); break;
    case WK_PFOR:       rc = weft_parallel_for(c->s, 0, 8, 1, wc_pfor_body, c); break;
    }
    uint64_t waited = wt_now_ns() - wait_t0;
    sem_post(&c->finished);
    join_thread(rescuer);
    if (from == FROM_PLAIN)
        join_thread(plain);

    WT_ASSERT(rc == WEFT_OK, "%s returned %s", wk_name[kind], weft_err_name(rc));
    if (from == FROM_TASK)
        WT_ASSERT(spin_until(&c->pinned, 1, SPIN_NS), "the pinning task never ran");
    WT_ASSERT(atomic_load(&c->pin_rc) == WEFT_OK, "spawn_ex pinned to bound thread %d from %s: %s",
              c->bound_id, from_name[from], weft_err_name(atomic_load(&c->pin_rc)));
    WT_ASSERT(atomic_load(&c->claimed) != 2,
              "the bound thread (%s, %u workers) waited in %s for %d s with a task pinned to it "
              "(from %s) and did not run it", flag_name(flags), W, wk_name[kind], RESCUE_S, from_name[from]);
    /* A sleep is the one wait that ends by itself: on a machine so
     * loaded that the thread got no CPU from the pin until its deadline,
     * its resumed fiber goes first (ready fibers before tasks) and the
     * pin is left for the pump. Only then: the sleep overran by 100 ms,
     * or the pinner (meant to pin 1 ms in) got its CPU only in the
     * sleep's last 100 ms or after it (seen in a loaded asan run); a pin
     * made early in the sleep must have run during it. */
    uint64_t pin_in = atomic_load(&c->pin_at) - wait_t0;   /* wraps to huge if made before: never excused */
    bool late_pin = from != FROM_SELF && pin_in > 200 * MS && pin_in < (uint64_t)1 << 62;
    if (kind == WK_SLEEP && atomic_load(&c->p_runs) == 0 && (waited > 400 * MS || late_pin)) {
        fprintf(stderr, "weft_sleep overran by %lld ms, pin made %llu ms in (a loaded machine): the "
                "pin is pumped\n", (long long)waited / (long long)MS - 300,
                (unsigned long long)(pin_in / MS));
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 1);
    }
    WT_ASSERT(atomic_load(&c->p_runs) == 1, "%s: the pinned task ran %d times during the wait "
              "(%u workers, %s, from %s)", wk_name[kind], atomic_load(&c->p_runs), W, flag_name(flags),
              from_name[from]);
    WT_ASSERT(atomic_load(&c->p_on) == c->bound_id, "%s: the pinned task ran on thread %d, not %d",
              wk_name[kind], atomic_load(&c->p_on), c->bound_id);

    WT_ASSERT_EQ(weft_sched_wait_idle(c->s), WEFT_OK);
    if (g)
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_chan_destroy(c->ch);
    weft_cond_destroy(&c->c);
    weft_mutex_destroy(&c->m);
    weft_waitgroup_destroy(&c->wg);
    weft_event_destroy(&c->gate);
    sem_destroy(&c->finished);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(c->s), WEFT_OK);
    free(c);
}

static void run_kind(enum wait_kind kind)
{
    for (size_t k = 0; k < NCFGS; k++)
        for (int from = 0; from < NFROM; from++)
            run_case(cfgs[k].workers, cfgs[k].flags, kind, (enum pin_from)from);
}

WT_TEST(pin, bound_runs_pinned_in_wait_idle, .timeout = 120)    { run_kind(WK_IDLE); }
WT_TEST(pin, bound_runs_pinned_in_graph_wait, .timeout = 120)   { run_kind(WK_GRAPH); }
WT_TEST(pin, bound_runs_pinned_in_waitgroup, .timeout = 120)    { run_kind(WK_WAITGROUP); }
WT_TEST(pin, bound_runs_pinned_in_event, .timeout = 120)        { run_kind(WK_EVENT); }
WT_TEST(pin, bound_runs_pinned_in_mutex, .timeout = 120)        { run_kind(WK_MUTEX); }
WT_TEST(pin, bound_runs_pinned_in_cond, .timeout = 120)         { run_kind(WK_COND); }
WT_TEST(pin, bound_runs_pinned_in_chan_recv, .timeout = 120)    { run_kind(WK_CHAN); }
WT_TEST(pin, bound_runs_pinned_in_wait_until, .timeout = 120)   { run_kind(WK_WAIT_UNTIL); }
WT_TEST(pin, bound_runs_pinned_in_sleep, .timeout = 120)        { run_kind(WK_SLEEP); }
WT_TEST(pin, bound_runs_pinned_in_parallel_for, .timeout = 120) { run_kind(WK_PFOR); }

/* ---- weft_pinned_run ---------------------------------------------------- */

struct orderlog {
    atomic_int n;
    int seq[512];
    atomic_int on[512];
    int bound_id;
    atomic_int wrong;
};

struct otask {
    struct orderlog *log;
    int id;
    uint64_t sleep_ns;   /* a thread sleep (not weft's): to overrun a budget */
};

static void ordered(void *arg)
{
    struct otask *t = arg;
    if (t->sleep_ns)
        nap_ns(t->sleep_ns);
    int k = atomic_fetch_add(&t->log->n, 1);
    if (k < 512)
        t->log->seq[k] = t->id;
    if (weft_thread_id() != t->log->bound_id)
        atomic_fetch_add(&t->log->wrong, 1);
}

struct opin {
    weft_sched *s;
    struct otask *tasks;
    int lo, hi, thread;
    atomic_int refused;
};

static void *opin_thread(void *arg)
{
    struct opin *p = arg;
    for (int i = p->lo; i < p->hi; i++) {
        weft_spawn_opts o = { .pinned = true, .thread = p->thread,
                              .priority = i % 2 ? WEFT_PRIORITY_LOW : WEFT_PRIORITY_NORMAL,
                              .name = "ordered" };
        if (weft_spawn_ex(p->s, ordered, &p->tasks[i], &o) != WEFT_OK)
            atomic_fetch_add(&p->refused, 1);
    }
    return NULL;
}

WT_TEST(pin, run_pinned_counts_in_pin_order, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "run_pinned_counts_in_pin_order at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct orderlog log;
        static struct otask tasks[200];
        memset(&log, 0, sizeof log);
        log.bound_id = bind_as(s, cfgs[k].flags);
        for (int i = 0; i < 200; i++)
            tasks[i] = (struct otask){ &log, i, 0 };
        /* 100 from this thread, then 100 from a plain thread: NORMAL and
         * LOW alternate (LOW counts as NORMAL for pinned tasks). */
        struct opin mine = { .s = s, .tasks = tasks, .lo = 0, .hi = 100, .thread = log.bound_id };
        opin_thread(&mine);
        struct opin other = { .s = s, .tasks = tasks, .lo = 100, .hi = 200, .thread = log.bound_id };
        join_thread(start_thread(opin_thread, &other));
        WT_ASSERT(atomic_load(&mine.refused) + atomic_load(&other.refused) == 0,
                  "%d pins to the bound thread refused", atomic_load(&mine.refused) + atomic_load(&other.refused));
        WT_ASSERT(atomic_load(&log.n) == 0, "%d pinned tasks ran before the thread pumped",
                  atomic_load(&log.n));
        int ran = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(ran == 200, "weft_pinned_run returned %d (%s), want 200", ran, ran < 0 ? weft_err_name(ran) : "");
        WT_ASSERT_EQ(atomic_load(&log.n), 200);
        WT_ASSERT_EQ(atomic_load(&log.wrong), 0);
        for (int i = 0; i < 200; i++)
            WT_ASSERT(log.seq[i] == i, "pinned task %d ran %d-th: not in pin order", log.seq[i], i);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 0);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* The clock is checked between tasks: a first task that sleeps 3 ms
 * overruns a 1 ms budget, so exactly one runs and the rest stay queued
 * for the next call. */
WT_TEST(pin, run_pinned_budget, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        weft_sched *s = make_sched(W);
        static struct orderlog log;
        static struct otask tasks[5];
        memset(&log, 0, sizeof log);
        log.bound_id = bind_as(s, cfgs[k].flags);
        for (int i = 0; i < 5; i++) {
            tasks[i] = (struct otask){ &log, i, i == 0 ? 3 * MS : 0 };
            WT_ASSERT_EQ(spawn_pinned(s, ordered, &tasks[i], log.bound_id), WEFT_OK);
        }
        int ran = weft_pinned_run(1 * MS);
        WT_ASSERT(ran == 1, "budget 1 ms, first task 3 ms: ran %d, want 1 (%u workers, %s)", ran, W,
                  flag_name(cfgs[k].flags));
        WT_ASSERT_EQ(atomic_load(&log.n), 1);
        WT_ASSERT_EQ(log.seq[0], 0);
        /* Queued: wait_pinned says so at once and runs nothing. */
        WT_ASSERT_EQ(weft_pinned_wait_for(UINT64_MAX), 0);
        WT_ASSERT_EQ(atomic_load(&log.n), 1);
        ran = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(ran == 4, "the second call ran %d, want the other 4", ran);
        for (int i = 0; i < 5; i++)
            WT_ASSERT_EQ(log.seq[i], i);
        WT_ASSERT_EQ(atomic_load(&log.wrong), 0);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

struct where_rc { atomic_int rc_run, rc_wait, id, done; };

static void call_pumps(void *arg)
{
    struct where_rc *w = arg;
    atomic_store(&w->id, weft_thread_id());
    atomic_store(&w->rc_run, weft_pinned_run(UINT64_MAX));
    atomic_store(&w->rc_wait, weft_pinned_wait_for(0));
    atomic_store(&w->done, 1);
}

WT_TEST(pin, pumps_refuse_workers_and_plain_threads, .timeout = 60)
{
    WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), WEFT_ENOTBOUND);   /* no scheduler at all */
    WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ENOTBOUND);
    WT_FOR_WORKERS(nw, 1, 2, 8) {
        weft_sched *s = make_sched(nw);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), WEFT_ENOTBOUND);   /* a plain thread */
        WT_ASSERT_EQ(weft_pinned_wait_for(MS), WEFT_ENOTBOUND);
        static struct where_rc w;
        memset(&w, 0, sizeof w);
        WT_ASSERT_EQ(weft_spawn(s, call_pumps, &w), WEFT_OK);        /* a worker */
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&w.rc_run), WEFT_ENOTBOUND);
        WT_ASSERT_EQ(atomic_load(&w.rc_wait), WEFT_ENOTBOUND);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* From a task running on the bound thread weft_pinned_run returns 0 and
 * runs nothing, even with a task pinned to that thread queued. */
struct nested_pump {
    weft_sched *s;
    int bound_id;
    atomic_int rc, p_runs, p_runs_seen, pin_rc, id;
};

static void np_pinned(void *arg)
{
    atomic_fetch_add(&((struct nested_pump *)arg)->p_runs, 1);
}

static void np_task(void *arg)
{
    struct nested_pump *n = arg;
    atomic_store(&n->id, weft_thread_id());
    atomic_store(&n->pin_rc, spawn_pinned(n->s, np_pinned, n, n->bound_id));
    atomic_store(&n->rc, weft_pinned_run(UINT64_MAX));
    atomic_store(&n->p_runs_seen, atomic_load(&n->p_runs));
}

WT_TEST(pin, run_pinned_from_a_task_on_the_bound_thread, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    static struct nested_pump n;
    memset(&n, 0, sizeof n);
    n.s = s;
    n.bound_id = bind_as(s, 0);
    atomic_store(&n.rc, 99);
    WT_ASSERT_EQ(weft_spawn(s, np_task, &n), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n.id), n.bound_id);
    WT_ASSERT(atomic_load(&n.pin_rc) == WEFT_OK, "pin: %s", weft_err_name(atomic_load(&n.pin_rc)));
    WT_ASSERT(atomic_load(&n.rc) == 0, "weft_pinned_run from a task on the bound thread: %d, want 0",
              atomic_load(&n.rc));
    WT_ASSERT(atomic_load(&n.p_runs_seen) == 0, "it ran the pinned task nested under the task");
    WT_ASSERT_EQ(atomic_load(&n.p_runs), 1);   /* wait_idle ran it */
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- weft_pinned_wait_for --------------------------------------------------- */

struct late_pin {
    weft_sched *s;
    int thread;
    atomic_int pin_rc, runs, started;
};

static void lp_pinned(void *arg)
{
    atomic_fetch_add(&((struct late_pin *)arg)->runs, 1);
}

static void lp_pin(struct late_pin *l)
{
    atomic_store(&l->pin_rc, spawn_pinned(l->s, lp_pinned, l, l->thread));
}

static void *lp_thread(void *arg)
{
    nap_ns(2 * MS);
    lp_pin(arg);
    return NULL;
}

static void lp_task(void *arg)
{
    weft_sleep(2 * MS);
    lp_pin(arg);
}

WT_TEST(pin, wait_pinned, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "wait_pinned at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct late_pin l;
        memset(&l, 0, sizeof l);
        l.s = s;
        l.thread = bind_as(s, cfgs[k].flags);

        /* Nothing pinned: ETIMEDOUT, not before its time. */
        WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ETIMEDOUT);
        uint64_t t0 = wt_now_ns();
        int rc = weft_pinned_wait_for(5 * MS);
        uint64_t dt = wt_now_ns() - t0;
        WT_ASSERT(rc == WEFT_ETIMEDOUT, "wait_pinned(5 ms) with nothing pinned: %s", weft_err_name(rc));
        WT_ASSERT(dt >= 5 * MS, "wait_pinned(5 ms) returned after %llu ns", (unsigned long long)dt);

        /* One queued: 0 at once, and not run. */
        lp_pin(&l);
        WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin to self: %s", weft_err_name(atomic_load(&l.pin_rc)));
        WT_ASSERT_EQ(weft_pinned_wait_for(UINT64_MAX), 0);
        WT_ASSERT_EQ(weft_pinned_wait_for(0), 0);
        WT_ASSERT_EQ(atomic_load(&l.runs), 0);
        WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 1);
        WT_ASSERT_EQ(atomic_load(&l.runs), 1);

        /* Pinned from a plain thread 2 ms into the wait: it wakes (a
         * 10 s timeout that expires fails the test). The two waits here
         * stay at 10 s, not 60 s like the test's other hang catchers:
         * where the pin is made and run on this thread itself (a task it
         * helps with, W > 0 below), the wait ends only at its timeout
         * today and then returns 0 (seen under tsan at 2 workers,
         * helping: 60 s waits ran the test past its timeout). A lost
         * wake-up of weft's, found by the timing audit (issue 30 item
         * 12) and left for a fix of its own. */
        pthread_t th = start_thread(lp_thread, &l);
        t0 = wt_now_ns();
        rc = weft_pinned_wait_for(10000 * MS);
        dt = wt_now_ns() - t0;
        join_thread(th);
        WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin from a plain thread: %s",
                  weft_err_name(atomic_load(&l.pin_rc)));
        WT_ASSERT(rc == 0, "wait_pinned did not wake for a pin from a plain thread: %s after %llu ms",
                  weft_err_name(rc), (unsigned long long)(dt / MS));
        /* A pin that arrives during the wait may run in it (the thread
         * runs its pins in any wait); if not, the pump runs it. */
        int pumped = weft_pinned_run(UINT64_MAX);
        WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
        WT_ASSERT_EQ(atomic_load(&l.runs), 2);

        /* Pinned from a task 2 ms into the wait (W = 0: the task is this
         * thread's own fiber, run meanwhile; that wait_pinned runs other
         * queued tasks there is not documented, so only W > 0). */
        if (W > 0) {
            WT_ASSERT_EQ(weft_spawn(s, lp_task, &l), WEFT_OK);
            rc = weft_pinned_wait_for(10000 * MS);
            WT_ASSERT(rc == 0, "wait_pinned did not wake for a pin from a worker: %s", weft_err_name(rc));
            WT_ASSERT(atomic_load(&l.pin_rc) == WEFT_OK, "pin from a worker: %s",
                      weft_err_name(atomic_load(&l.pin_rc)));
            pumped = weft_pinned_run(UINT64_MAX);
            WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
            WT_ASSERT_EQ(atomic_load(&l.runs), 3);
        }
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* "Its ready fibers run meanwhile": with no workers, a task of the bound
 * thread blocks on an event; a plain thread signals it; the task, resumed
 * inside weft_pinned_wait_for, pins to the thread, which wakes the wait. */
struct fiber_in_wait {
    weft_sched *s;
    int thread;
    weft_event ev;
    atomic_int blocked, pin_rc, runs;
};

static void fw_pinned(void *arg)
{
    atomic_fetch_add(&((struct fiber_in_wait *)arg)->runs, 1);
}

static void fw_task(void *arg)
{
    struct fiber_in_wait *f = arg;
    atomic_store(&f->blocked, 1);
    weft_event_wait(&f->ev);
    atomic_store(&f->pin_rc, spawn_pinned(f->s, fw_pinned, f, f->thread));
}

static void *fw_signal(void *arg)
{
    nap_ns(2 * MS);
    weft_event_signal(&((struct fiber_in_wait *)arg)->ev);
    return NULL;
}

WT_TEST(pin, wait_pinned_runs_ready_fibers, .timeout = 60)
{
    weft_sched *s = make_sched(0);
    static struct fiber_in_wait f;
    memset(&f, 0, sizeof f);
    f.s = s;
    f.thread = bind_as(s, 0);
    weft_event_init(&f.ev, true, false);
    atomic_store(&f.pin_rc, 1);
    WT_ASSERT_EQ(weft_spawn(s, fw_task, &f), WEFT_OK);
    for (int i = 0; i < 100 && !atomic_load(&f.blocked); i++)
        weft_yield();   /* W = 0: runs the task until it blocks */
    WT_ASSERT(atomic_load(&f.blocked), "weft_yield on the bound thread (no workers) did not run the task");
    pthread_t th = start_thread(fw_signal, &f);
    /* Left at 10 s, not made a 60 s hang catcher like the others: today
     * this wait ends only at its timeout (the test takes 10.5 s; with 60 s
     * it hangs to the test's timeout): the resumed fiber pins to this
     * thread and the pin runs in the wait, which is not woken for it
     * until the timeout, and then returns 0. The lost wake-up noted in
     * wait_pinned above. */
    int rc = weft_pinned_wait_for(10000 * MS);
    join_thread(th);
    WT_ASSERT(rc == 0, "wait_pinned: %s (the blocked fiber did not resume in it, or its pin did not wake it)",
              weft_err_name(rc));
    WT_ASSERT(atomic_load(&f.pin_rc) == WEFT_OK, "pin: %s", weft_err_name(atomic_load(&f.pin_rc)));
    int pumped = weft_pinned_run(UINT64_MAX);   /* 0 if it ran during the wait */
    WT_ASSERT(pumped == 0 || pumped == 1, "run_pinned after the wake: %d", pumped);
    WT_ASSERT_EQ(atomic_load(&f.runs), 1);
    weft_event_destroy(&f.ev);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- unbind runs what is pinned; stale and bad ids ---------------------- */

struct unbind_case {
    weft_sched *s;
    struct orderlog log;
    struct otask tasks[21];
    atomic_int chained_rc, chained_runs, chained_on;
};

static void ub_chained(void *arg)
{
    struct unbind_case *u = arg;
    atomic_store(&u->chained_on, weft_thread_id());
    atomic_fetch_add(&u->chained_runs, 1);
}

/* Pinned; pins another task to its own thread, which may be unbinding. */
static void ub_chainer(void *arg)
{
    struct unbind_case *u = arg;
    atomic_store(&u->chained_rc, spawn_pinned(u->s, ub_chained, u, weft_thread_id()));
}

static atomic_int ran_anything;
static void count_run(void *arg)
{
    atomic_fetch_add(&ran_anything, 1);
}

WT_TEST(pin, unbind_runs_pinned_first, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++) {
        unsigned W = cfgs[k].workers;
        fprintf(stderr, "unbind_runs_pinned_first at %u workers, %s\n", W, flag_name(cfgs[k].flags));
        weft_sched *s = make_sched(W);
        static struct unbind_case u;
        memset(&u, 0, sizeof u);
        u.s = s;
        atomic_store(&u.chained_rc, 1);
        int id = bind_as(s, cfgs[k].flags);
        u.log.bound_id = id;
        for (int i = 0; i < 20; i++)
            u.tasks[i] = (struct otask){ &u.log, i, 0 };
        struct opin mine = { .s = s, .tasks = u.tasks, .lo = 0, .hi = 10, .thread = id };
        opin_thread(&mine);
        struct opin other = { .s = s, .tasks = u.tasks, .lo = 10, .hi = 20, .thread = id };
        join_thread(start_thread(opin_thread, &other));
        WT_ASSERT(atomic_load(&mine.refused) + atomic_load(&other.refused) == 0, "pins refused");
        WT_ASSERT_EQ(spawn_pinned(s, ub_chainer, &u, id), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_thread_id(), -1);
        WT_ASSERT(atomic_load(&u.log.n) == 20, "unbind left %d of 20 pinned tasks unrun",
                  20 - atomic_load(&u.log.n));
        for (int i = 0; i < 20; i++)
            WT_ASSERT_EQ(u.log.seq[i], i);
        WT_ASSERT_EQ(atomic_load(&u.log.wrong), 0);
        /* A pin made while it unbinds: run by it, or refused. */
        int crc = atomic_load(&u.chained_rc);
        if (crc == WEFT_OK) {
            WT_ASSERT_EQ(atomic_load(&u.chained_runs), 1);
            WT_ASSERT_EQ(atomic_load(&u.chained_on), id);
        } else {
            WT_ASSERT(crc == WEFT_EINVAL, "a pin racing unbind: %s", weft_err_name(crc));
            WT_ASSERT_EQ(atomic_load(&u.chained_runs), 0);
        }
        /* The id is no current thread now. */
        atomic_store(&ran_anything, 0);
        WT_ASSERT_EQ(spawn_pinned(s, count_run, NULL, id), WEFT_EINVAL);
        if (W > 0)
            WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);   /* W = 0: would run anything queued */
        WT_ASSERT_EQ(atomic_load(&ran_anything), 0);
    }
}

/* ---- bad input ------------------------------------------------------------ */

WT_TEST(pin, bad_input, .timeout = 60)
{
    weft_config c;
    weft_config_init(&c);
    WT_ASSERT_EQ(c.priority_interval, 16);
    weft_sched *s = NULL;
    c.priority_interval = 2000000;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    WT_ASSERT(s == NULL);
    const char *why = weft_config_check(&c);
    WT_ASSERT(why && strstr(why, "priority_interval"), "config_check: %s", why ? why : "(null)");
    c.priority_interval = 1000001;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_EINVAL);
    c.priority_interval = 1000000;
    c.workers = 2;
    WT_ASSERT(weft_config_check(&c) == NULL);
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);

    s = make_sched(2);
    atomic_store(&ran_anything, 0);
    weft_spawn_opts o = { .priority = (weft_priority)7 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .priority = (weft_priority)-1 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .hint = (weft_hint)9 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = -5 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = -1 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = 2 };   /* worker id >= W, nobody bound */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ .pinned = true, .thread = 1000 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    o = (weft_spawn_opts){ 0 };
    WT_ASSERT_EQ(weft_spawn_ex(NULL, count_run, NULL, &o), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_spawn_ex(s, NULL, NULL, &o), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_spawn_ex(s, NULL, NULL, NULL), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT(atomic_load(&ran_anything) == 0, "%d refused spawns ran", atomic_load(&ran_anything));

    /* NULL opts = weft_spawn; a thread field with pinned false is ignored;
     * hints on pinned or non-NORMAL tasks are ignored, not refused. */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, NULL), WEFT_OK);
    o = (weft_spawn_opts){ .thread = -5 };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .priority = WEFT_PRIORITY_HIGH, .hint = WEFT_HINT_NEXT };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .priority = WEFT_PRIORITY_LOW, .hint = WEFT_HINT_YIELD, .name = "low" };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    o = (weft_spawn_opts){ .pinned = true, .thread = 1, .hint = WEFT_HINT_NEXT };
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 5);

    /* bind_ex: unknown flags refused, nothing changed. */
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0x80), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0x80 | WEFT_BIND_NO_HELP), WEFT_EINVAL);
    WT_ASSERT(weft_sched_current() == NULL);
    WT_ASSERT_EQ(weft_thread_id(), -1);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, WEFT_BIND_NO_HELP), WEFT_OK);
    WT_ASSERT_EQ(weft_thread_id(), 2);
    WT_ASSERT_EQ(weft_sched_bind_ex(s, 0), WEFT_EBUSY);
    WT_ASSERT_EQ(weft_sched_bind(s), WEFT_EBUSY);
    o = (weft_spawn_opts){ .pinned = true, .thread = 3 };   /* the next id: nobody has it */
    WT_ASSERT_EQ(weft_spawn_ex(s, count_run, NULL, &o), WEFT_EINVAL);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 5);
}

WT_TEST(pin, graph_pin_bad_input, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_store(&ran_anything, 0);
    weft_task *a = add(g, count_run, NULL), *b = add(g, count_run, NULL);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(NULL, 0), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_task_set_pin(b, -2), WEFT_EINVAL);
    weft_task_set_priority(a, (weft_priority)7);   /* "an out-of-range p is ignored" */
    /* Pinned to an id that is no thread of s: the run is refused. */
    WT_ASSERT_EQ(weft_task_set_pin(b, 7), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_EINVAL);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&ran_anything), 0);
    WT_ASSERT_EQ(weft_task_state(a), WEFT_TASK_PENDING);
    /* Pinned to a worker: fine. Unpinned again: fine. */
    WT_ASSERT_EQ(weft_task_set_pin(b, 1), WEFT_OK);
    run_wait(s, g, "pinned to worker 1");
    WT_ASSERT_EQ(atomic_load(&ran_anything), 2);
    WT_ASSERT_EQ(weft_task_set_pin(b, -1), WEFT_OK);
    run_wait(s, g, "unpinned");
    WT_ASSERT_EQ(atomic_load(&ran_anything), 4);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* EBUSY during a run. */
static void wait_event(void *arg)
{
    weft_event_wait(arg);
}

WT_TEST(pin, graph_pin_busy_during_run, .timeout = 60)
{
    weft_sched *s = make_sched(1);
    weft_graph *g = new_graph();
    static weft_event ev;
    weft_event_init(&ev, true, false);
    weft_task *a = add(g, wait_event, &ev);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(a, 0), WEFT_EBUSY);
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(a, 0), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_event_destroy(&ev);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- main-thread graph tasks that are skipped ---------------------------- */

enum skip_mode { SK_NONE, SK_CANCEL_TASK, SK_FAIL_PRED, SK_CANCEL_GRAPH, SK_COND_OTHER, NSKIP };
static const char *const skip_name[] = {
    "nothing skipped", "the main-thread task cancelled", "its predecessor failed",
    "weft_graph_cancel from its predecessor", "a condition picked the other branch",
};

struct skipg {
    weft_graph *g;
    enum skip_mode mode;
    int main_id;
    atomic_int m_runs, m_on, d_runs, x_runs;
};

static void sk_a(void *arg)
{
    struct skipg *k = arg;
    if (k->mode == SK_FAIL_PRED)
        weft_task_fail(WEFT_EAGAIN);
    else if (k->mode == SK_CANCEL_GRAPH)
        weft_graph_cancel(k->g);
}

static void sk_m(void *arg)
{
    struct skipg *k = arg;
    atomic_store(&k->m_on, weft_thread_id());
    atomic_fetch_add(&k->m_runs, 1);
}

static void sk_d(void *arg) { atomic_fetch_add(&((struct skipg *)arg)->d_runs, 1); }
static void sk_x(void *arg) { atomic_fetch_add(&((struct skipg *)arg)->x_runs, 1); }
static int sk_cond(void *arg) { return ((struct skipg *)arg)->mode == SK_COND_OTHER ? 1 : 0; }

struct plain_waiter {
    weft_graph *g;
    atomic_int rc, done;
};

static void *pw_main(void *arg)
{
    struct plain_waiter *p = arg;
    atomic_store(&p->rc, weft_graph_wait(p->g));
    atomic_store(&p->done, 1);
    return NULL;
}

/* A -> M (pinned to the main thread) -> D, with a condition C at the
 * root choosing A's branch (0) or X (1). The main thread waits in
 * weft_graph_wait, or (plain_waits) pumps with wait_pinned/run_pinned
 * while a plain thread waits for the graph. */
static void skip_case(unsigned W, unsigned flags, enum skip_mode mode, bool plain_waits)
{
    fprintf(stderr, "skip: %s, %u workers, %s main thread, %s\n", skip_name[mode], W, flag_name(flags),
            plain_waits ? "a plain thread waits while main pumps" : "main waits in weft_graph_wait");
    weft_sched *s = make_sched(W);
    static struct skipg k;
    memset(&k, 0, sizeof k);
    k.mode = mode;
    k.main_id = bind_as(s, flags);
    k.g = new_graph();
    weft_task *c = weft_graph_add_cond(k.g, sk_cond, &k);
    WT_ASSERT(c != NULL);
    weft_task *a = add(k.g, sk_a, &k), *m = add(k.g, sk_m, &k), *d = add(k.g, sk_d, &k),
              *x = add(k.g, sk_x, &k);
    WT_ASSERT_EQ(weft_task_precede(c, a), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(c, x), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(a, m), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(m, d), WEFT_OK);
    WT_ASSERT_EQ(weft_task_set_pin(m, k.main_id), WEFT_OK);
    if (mode == SK_CANCEL_TASK)
        WT_ASSERT(weft_task_cancel(m));

    int rc = weft_graph_run(s, k.g);
    WT_ASSERT(rc == WEFT_OK, "run: %s", weft_err_name(rc));
    if (plain_waits) {
        static struct plain_waiter p;
        memset(&p, 0, sizeof p);
        p.g = k.g;
        pthread_t th = start_thread(pw_main, &p);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (!atomic_load(&p.done) && wt_now_ns() < end) {
            weft_pinned_wait_for(MS);
            weft_pinned_run(UINT64_MAX);
        }
        WT_ASSERT(atomic_load(&p.done), "a plain thread's weft_graph_wait never returned (%s)", skip_name[mode]);
        join_thread(th);
        rc = atomic_load(&p.rc);
    } else {
        rc = weft_graph_wait(k.g);
    }
    int want = mode == SK_NONE || mode == SK_COND_OTHER ? WEFT_OK
             : mode == SK_FAIL_PRED ? WEFT_EFAILED : WEFT_ECANCELED;   /* EFAILED: the task's own code */
    WT_ASSERT(rc == want, "%s: wait returned %s, want %s", skip_name[mode], weft_err_name(rc), weft_err_name(want));
    if (mode == SK_FAIL_PRED)
        WT_ASSERT_EQ(weft_graph_fail_code(k.g), WEFT_EAGAIN);
    if (mode == SK_NONE) {
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 1);
        WT_ASSERT_EQ(atomic_load(&k.m_on), k.main_id);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 1);
    } else {
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 0);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 0);
        weft_task_status st = weft_task_state(m);
        WT_ASSERT(mode == SK_COND_OTHER ? st == WEFT_TASK_PENDING : st == WEFT_TASK_SKIPPED,
                  "the main-thread task's state: %d", (int)st);
        WT_ASSERT_EQ(atomic_load(&k.x_runs), mode == SK_COND_OTHER);
    }
    /* No stale record of it stays queued on the main thread. */
    WT_ASSERT_EQ(weft_pinned_run(UINT64_MAX), 0);
    WT_ASSERT_EQ(weft_pinned_wait_for(0), WEFT_ETIMEDOUT);
    /* And after a reset the graph runs in full. */
    k.mode = SK_NONE;
    WT_ASSERT_EQ(weft_graph_reset(k.g), WEFT_OK);
    atomic_store(&k.m_runs, 0);
    run_wait(s, k.g, "after reset");
    WT_ASSERT_EQ(atomic_load(&k.m_runs), 1);
    WT_ASSERT_EQ(atomic_load(&k.m_on), k.main_id);
    WT_ASSERT_EQ(weft_graph_destroy(k.g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

WT_TEST(pin, skipped_main_thread_task_leaves_no_waiter, .timeout = 120)
{
    for (size_t k = 0; k < NCFGS; k++)
        for (int mode = 0; mode < NSKIP; mode++) {
            skip_case(cfgs[k].workers, cfgs[k].flags, (enum skip_mode)mode, false);
            if (cfgs[k].workers > 0)   /* with none, a plain thread may not wait (ENOTBOUND) */
                skip_case(cfgs[k].workers, cfgs[k].flags, (enum skip_mode)mode, true);
        }
}

/* A graph task pinned to a thread that unbinds during the run fails with
 * EINVAL when it becomes ready; its dependents are skipped. */
struct unbinder {
    weft_sched *s;
    atomic_int id, go, rc;
};

static void *unbinder_main(void *arg)
{
    struct unbinder *u = arg;
    /* NO_HELP: a helping thread could pick up the task that waits for
     * the event (signalled only once this thread has left), and unbind
     * waits for the tasks it started that are blocked. */
    atomic_store(&u->rc, weft_sched_bind_ex(u->s, WEFT_BIND_NO_HELP));
    atomic_store(&u->id, weft_thread_id());
    while (!atomic_load(&u->go))
        weft_pinned_wait_for(MS);
    weft_sched_unbind();
    return NULL;
}

WT_TEST(pin, graph_task_pinned_to_unbound_thread_fails, .timeout = 180)
{
    WT_FOR_WORKERS(W, 1, 2) {
        weft_sched *s = make_sched(W);
        static struct unbinder u;
        memset(&u, 0, sizeof u);
        u.s = s;
        atomic_store(&u.id, -2);
        pthread_t th = start_thread(unbinder_main, &u);
        uint64_t end = wt_now_ns() + SPIN_NS;
        while (atomic_load(&u.id) == -2 && wt_now_ns() < end)
            sched_yield();
        WT_ASSERT_EQ(atomic_load(&u.rc), WEFT_OK);
        WT_ASSERT(atomic_load(&u.id) >= (int)W);
        static weft_event ev;
        weft_event_init(&ev, true, false);
        static struct skipg k;
        memset(&k, 0, sizeof k);
        weft_graph *g = new_graph();
        weft_task *a = add(g, wait_event, &ev), *m = add(g, sk_m, &k), *d = add(g, sk_d, &k);
        WT_ASSERT_EQ(weft_task_precede(a, m), WEFT_OK);
        WT_ASSERT_EQ(weft_task_precede(m, d), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(m, atomic_load(&u.id)), WEFT_OK);
        WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
        atomic_store(&u.go, 1);
        join_thread(th);
        weft_event_signal(&ev);
        int rc = weft_graph_wait(g);
        WT_ASSERT(rc == WEFT_EINVAL, "wait: %s, want EINVAL", weft_err_name(rc));
        WT_ASSERT_EQ(weft_task_state(m), WEFT_TASK_FAILED);
        WT_ASSERT_EQ(weft_task_state(d), WEFT_TASK_SKIPPED);
        WT_ASSERT_EQ(atomic_load(&k.m_runs), 0);
        WT_ASSERT_EQ(atomic_load(&k.d_runs), 0);
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_event_destroy(&ev);
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* ---- priorities ------------------------------------------------------------ */

enum pkind { PK_HIGH, PK_PIN_NORMAL, PK_PIN_LOW, PK_NORMAL, PK_LOW };
static const int pk_rank[] = { 0, 1, 1, 2, 3 };   /* HIGH, pinned (LOW counts as NORMAL), NORMAL, LOW */
static const char *const pk_name[] = { "HIGH", "pinned NORMAL", "pinned LOW", "NORMAL", "LOW" };

#define PMAX 120
struct porder;
struct parg { struct porder *o; int id; };
struct porder {
    weft_sched *s;
    int n, target;            /* tasks; the thread pinned ones name */
    bool from_blocker;
    enum pkind kind[PMAX];
    struct parg arg[PMAX];
    atomic_int next, refused, started, go, timed_out;
    int seq[PMAX];
};

static void prio_task(void *p)
{
    struct parg *a = p;
    int k = atomic_fetch_add(&a->o->next, 1);
    if (k < PMAX)
        a->o->seq[k] = a->id;
}

static void queue_mix(struct porder *o)
{
    for (int i = 0; i < o->n; i++) {
        weft_spawn_opts opt = { 0 };
        switch (o->kind[i]) {
        case PK_HIGH:       opt.priority = WEFT_PRIORITY_HIGH; break;
        case PK_PIN_NORMAL: opt.pinned = true, opt.thread = o->target; break;
        case PK_PIN_LOW:    opt.pinned = true, opt.thread = o->target, opt.priority = WEFT_PRIORITY_LOW; break;
        case PK_NORMAL:     break;
        case PK_LOW:        opt.priority = WEFT_PRIORITY_LOW; break;
        }
        if (weft_spawn_ex(o->s, prio_task, &o->arg[i], &opt) != WEFT_OK)
            atomic_fetch_add(&o->refused, 1);
    }
}

/* Occupies the only worker (spinning, not a weft wait: a task blocked in
 * weft would free its worker) until the test says go. */
static void prio_blocker(void *p)
{
    struct porder *o = p;
    if (o->from_blocker)
        queue_mix(o);
    atomic_store(&o->started, 1);   /* after queueing them, if it does */
    if (!spin_until(&o->go, 1, SPIN_NS))
        atomic_store(&o->timed_out, 1);
}

static void make_mix(struct porder *o, int n, bool pins, uint64_t *rng)
{
    static const enum pkind unpinned[] = { PK_HIGH, PK_NORMAL, PK_LOW };
    o->n = n;
    for (int i = 0; i < n; i++) {
        int r = (int)(wt_rand(rng) % (pins ? 5u : 3u));
        o->kind[i] = pins ? (enum pkind)r : unpinned[r];
        o->arg[i].o = o;
        o->arg[i].id = i;
    }
}

/* Ranks never go down along the run order; pinned tasks keep pin order. */
static void check_prio_order(struct porder *o, const char *what)
{
    WT_ASSERT(atomic_load(&o->refused) == 0, "%s: %d spawn_ex refused", what, atomic_load(&o->refused));
    WT_ASSERT_EQ(atomic_load(&o->timed_out), 0);
    WT_ASSERT(atomic_load(&o->next) == o->n, "%s: %d of %d ran", what, atomic_load(&o->next), o->n);
    int last_pin = -1;
    for (int k = 1; k < o->n; k++) {
        enum pkind a = o->kind[o->seq[k - 1]], b = o->kind[o->seq[k]];
        WT_ASSERT(pk_rank[a] <= pk_rank[b], "%s: a %s task ran right before a %s one (position %d)", what,
                  pk_name[a], pk_name[b], k);
    }
    for (int k = 0; k < o->n; k++)
        if (pk_rank[o->kind[o->seq[k]]] == 1) {
            WT_ASSERT(o->seq[k] > last_pin, "%s: pinned tasks out of pin order", what);
            last_pin = o->seq[k];
        }
}

WT_TEST(pin, priority_order_with_one_thread, .timeout = 120)
{
    uint64_t rng = wt_seed();
    for (int W = 0; W <= 1; W++)
        for (int pins = 0; pins <= 1; pins++)
            for (int from_blocker = 0; from_blocker <= W; from_blocker++) {
                char what[128];
                snprintf(what, sizeof what, "%d workers, %s, queued from %s", W, pins ? "with pinned tasks" : "unpinned",
                         W == 0 ? "the bound thread" : from_blocker ? "the worker" : "outside");
                fprintf(stderr, "priority order: %s\n", what);
                /* The starvation rule must not interfere: the largest interval. */
                weft_sched *s = sched_with((unsigned)W, 1000000);
                static struct porder o;
                memset(&o, 0, sizeof o);
                o.s = s;
                o.from_blocker = from_blocker;
                make_mix(&o, PMAX, pins, &rng);
                if (W == 0) {
                    o.target = bind_as(s, 0);
                    queue_mix(&o);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                    weft_sched_unbind();
                } else {
                    o.target = 0;
                    WT_ASSERT_EQ(weft_spawn(s, prio_blocker, &o), WEFT_OK);
                    WT_ASSERT(spin_until(&o.started, 1, SPIN_NS), "the blocker never ran");
                    if (!from_blocker)
                        queue_mix(&o);
                    atomic_store(&o.go, 1);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                }
                check_prio_order(&o, what);
                WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            }
}

/* Graph tasks made ready at once (every successor of one root) run in
 * priority order: every HIGH before any NORMAL before any LOW. */
WT_TEST(pin, graph_priority_order, .timeout = 120)
{
    uint64_t rng = wt_seed() ^ 0x5bd1e995u;
    for (int W = 0; W <= 1; W++)
        for (int pins = 0; pins <= 1; pins++) {
            char what[96];
            snprintf(what, sizeof what, "graph, %d workers, %s", W, pins ? "with pinned tasks" : "unpinned");
            weft_sched *s = sched_with((unsigned)W, 1000000);
            static struct porder o;
            memset(&o, 0, sizeof o);
            o.s = s;
            make_mix(&o, PMAX, pins, &rng);
            o.target = W == 0 ? bind_as(s, 0) : 0;
            weft_graph *g = new_graph();
            weft_task *root = add(g, NULL, NULL);
            for (int i = 0; i < o.n; i++) {
                weft_task *t = add(g, prio_task, &o.arg[i]);
                WT_ASSERT_EQ(weft_task_precede(root, t), WEFT_OK);
                switch (o.kind[i]) {
                case PK_HIGH:       weft_task_set_priority(t, WEFT_PRIORITY_HIGH); break;
                case PK_PIN_LOW:    weft_task_set_priority(t, WEFT_PRIORITY_LOW); /* fall through */
                case PK_PIN_NORMAL: WT_ASSERT_EQ(weft_task_set_pin(t, o.target), WEFT_OK); break;
                case PK_NORMAL:     break;
                case PK_LOW:        weft_task_set_priority(t, WEFT_PRIORITY_LOW); break;
                }
            }
            run_wait(s, g, what);
            check_prio_order(&o, what);
            WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
            if (W == 0)
                weft_sched_unbind();
            WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        }
}

/* ---- starvation bound -------------------------------------------------------
 * One thread picks; a chain of HIGH tasks (each spawns the next before it
 * returns, so a HIGH task is always ready) competes with one LOW and one
 * NORMAL task queued at the same time. The header: "the oldest queued
 * NORMAL or LOW task waits at most 2 * priority_interval picks of any one
 * thread that picks". Each task of the test counts as one pick; the LOW
 * and NORMAL tasks record how many picks came before them. Allowed:
 * 2 * interval + 2. The slack of 2: the text does not say whether the pick
 * that serves the lower level is one of the 2 * interval, nor where the
 * thread's pick counter stands when the tasks are queued (the blocker's
 * pick and the first HIGH's may fall either side of a boundary). Without
 * the rule both would wait for the whole chain (10 * interval + 20). */
struct starve {
    weft_sched *s;
    atomic_int picks, chain, started, go, refused, timed_out;
    atomic_int low_at, normal_at;
    bool from_blocker;
};

static void st_high(void *p)
{
    struct starve *t = p;
    atomic_fetch_add(&t->picks, 1);
    if (atomic_fetch_sub(&t->chain, 1) > 1 && spawn_prio(t->s, st_high, t, WEFT_PRIORITY_HIGH) != WEFT_OK)
        atomic_fetch_add(&t->refused, 1);
}

static void st_low(void *p)
{
    struct starve *t = p;
    atomic_store(&t->low_at, atomic_fetch_add(&t->picks, 1));
}

static void st_normal(void *p)
{
    struct starve *t = p;
    atomic_store(&t->normal_at, atomic_fetch_add(&t->picks, 1));
}

static void st_queue(struct starve *t)
{
    if (spawn_prio(t->s, st_low, t, WEFT_PRIORITY_LOW) != WEFT_OK ||
        spawn_prio(t->s, st_normal, t, WEFT_PRIORITY_NORMAL) != WEFT_OK ||
        spawn_prio(t->s, st_high, t, WEFT_PRIORITY_HIGH) != WEFT_OK)
        atomic_fetch_add(&t->refused, 1);
}

static void st_blocker(void *p)
{
    struct starve *t = p;
    if (t->from_blocker)
        st_queue(t);
    atomic_store(&t->started, 1);   /* after queueing them, if it does */
    if (!spin_until(&t->go, 1, SPIN_NS))
        atomic_store(&t->timed_out, 1);
}

WT_TEST(pin, priority_interval_bounds_starvation, .timeout = 120)
{
    static const unsigned intervals[] = { 4, 16 };
    for (int W = 0; W <= 1; W++)
        for (size_t ii = 0; ii < 2; ii++)
            for (int from_blocker = 0; from_blocker <= W; from_blocker++) {
                unsigned iv = intervals[ii];
                int chain = (int)(10 * iv + 20);
                fprintf(stderr, "starvation: %d workers, interval %u, queued from %s\n", W, iv,
                        W == 0 ? "the bound thread" : from_blocker ? "the worker" : "outside");
                weft_sched *s = sched_with((unsigned)W, iv);
                static struct starve t;
                memset(&t, 0, sizeof t);
                t.s = s;
                t.from_blocker = from_blocker;
                atomic_store(&t.chain, chain);
                atomic_store(&t.low_at, -1);
                atomic_store(&t.normal_at, -1);
                if (W == 0) {
                    bind_as(s, 0);
                    st_queue(&t);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                    weft_sched_unbind();
                } else {
                    WT_ASSERT_EQ(weft_spawn(s, st_blocker, &t), WEFT_OK);
                    WT_ASSERT(spin_until(&t.started, 1, SPIN_NS), "the blocker never ran");
                    if (!from_blocker)
                        st_queue(&t);
                    atomic_store(&t.go, 1);
                    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
                }
                WT_ASSERT(atomic_load(&t.refused) == 0, "spawn_ex refused");
                WT_ASSERT_EQ(atomic_load(&t.timed_out), 0);
                WT_ASSERT_EQ(atomic_load(&t.picks), chain + 2);
                int bound = (int)(2 * iv + 2);
                WT_ASSERT(atomic_load(&t.low_at) <= bound,
                          "interval %u: the LOW task ran after %d picks, bound %d (%d workers)", iv,
                          atomic_load(&t.low_at), bound, W);
                WT_ASSERT(atomic_load(&t.normal_at) <= bound,
                          "interval %u: the NORMAL task ran after %d picks, bound %d (%d workers)", iv,
                          atomic_load(&t.normal_at), bound, W);
                WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
            }
}

/* ---- WEFT_BIND_NO_HELP, and the main thread helping ---------------------- */

struct helpcount {
    int bound_id;
    uint64_t spin_ns;
    atomic_int unpinned_runs, unpinned_on_bound, pinned_runs, pinned_wrong;
};

static void hc_unpinned(void *p)
{
    struct helpcount *h = p;
    busy_ns(h->spin_ns);
    if (weft_thread_id() == h->bound_id)
        atomic_fetch_add(&h->unpinned_on_bound, 1);
    atomic_fetch_add(&h->unpinned_runs, 1);
}

static void hc_pinned(void *p)
{
    struct helpcount *h = p;
    if (weft_thread_id() != h->bound_id)
        atomic_fetch_add(&h->pinned_wrong, 1);
    atomic_fetch_add(&h->pinned_runs, 1);
}

/* 1000 tasks fanned out from one root, 1000 roots, and `pins` tasks
 * pinned to the bound thread (successors of the root). */
static weft_graph *help_graph(struct helpcount *h, int pins)
{
    weft_graph *g = new_graph();
    weft_task *root = add(g, NULL, NULL);
    for (int i = 0; i < 1000; i++) {
        WT_ASSERT_EQ(weft_task_precede(root, add(g, hc_unpinned, h)), WEFT_OK);
        add(g, hc_unpinned, h);
    }
    for (int i = 0; i < pins; i++) {
        weft_task *t = add(g, hc_pinned, h);
        WT_ASSERT_EQ(weft_task_precede(root, t), WEFT_OK);
        WT_ASSERT_EQ(weft_task_set_pin(t, h->bound_id), WEFT_OK);
    }
    return g;
}

WT_TEST(pin, no_help_runs_only_pinned, .timeout = 120)
{
    WT_FOR_WORKERS(W, 1, 2, 8) {
        fprintf(stderr, "no_help at %u workers\n", W);
        weft_sched *s = make_sched(W);
        static struct helpcount h;
        memset(&h, 0, sizeof h);
        h.spin_ns = 5000;
        h.bound_id = bind_as(s, WEFT_BIND_NO_HELP);
        weft_graph *g = help_graph(&h, 20);
        run_wait(s, g, "NO_HELP graph");
        WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 2000);
        WT_ASSERT_EQ(atomic_load(&h.pinned_runs), 20);
        /* Spawns from it too, waited for in weft_sched_wait_idle. */
        for (int i = 0; i < 1000; i++)
            WT_ASSERT_EQ(weft_spawn(s, hc_unpinned, &h), WEFT_OK);
        for (int i = 0; i < 20; i++)
            WT_ASSERT_EQ(spawn_pinned(s, hc_pinned, &h, h.bound_id), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 3000);
        WT_ASSERT_EQ(atomic_load(&h.pinned_runs), 40);
        WT_ASSERT(atomic_load(&h.unpinned_on_bound) == 0, "a NO_HELP thread ran %d unpinned tasks (%u workers)",
                  atomic_load(&h.unpinned_on_bound), W);
        WT_ASSERT(atomic_load(&h.pinned_wrong) == 0, "%d pinned tasks ran elsewhere", atomic_load(&h.pinned_wrong));
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

/* The default: a main thread waiting beside one worker runs some of a
 * graph of 2000 tasks of 20 us (40 ms of work: one worker alone would
 * leave it idle the whole time), and some of 2000 such spawns in
 * weft_sched_wait_idle. */
WT_TEST(pin, helping_main_thread_runs_tasks, .timeout = 120)
{
    weft_sched *s = make_sched(1);
    static struct helpcount h;
    memset(&h, 0, sizeof h);
    h.spin_ns = 20000;
    h.bound_id = bind_as(s, 0);
    weft_graph *g = help_graph(&h, 0);
    run_wait(s, g, "helping graph");
    WT_ASSERT_EQ(atomic_load(&h.unpinned_runs), 2000);
    int in_graph = atomic_load(&h.unpinned_on_bound);
    fprintf(stderr, "the main thread ran %d of 2000 graph tasks\n", in_graph);
    WT_ASSERT(in_graph > 0, "the main thread (helping, beside 1 worker) ran none of 2000 graph tasks in weft_graph_wait");
    for (int i = 0; i < 2000; i++)
        WT_ASSERT_EQ(weft_spawn(s, hc_unpinned, &h), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
    int in_idle = atomic_load(&h.unpinned_on_bound) - in_graph;
    fprintf(stderr, "the main thread ran %d of 2000 spawns\n", in_idle);
    WT_ASSERT(in_idle > 0, "the main thread (helping, beside 1 worker) ran none of 2000 spawns in weft_sched_wait_idle");
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- blocking in a valid order across levels and pins ------------------- */

/* Block anywhere: a HIGH task waits for an event a LOW task sets; the LOW
 * task then waits for one that a task pinned to the bound thread sets,
 * and that one waits for a NORMAL task's event. Each level's task must
 * let the others run while it waits (at 0, 1 and 2 workers; with none,
 * the bound thread runs them all while it waits). */
struct levels {
    weft_event high_go, low_go, pin_go;
    atomic_int done;
};

static void lv_high(void *arg)
{
    struct levels *l = arg;
    if (weft_event_wait(&l->high_go) == WEFT_OK)
        atomic_fetch_add(&l->done, 1);
}

static void lv_low(void *arg)
{
    struct levels *l = arg;
    weft_event_signal(&l->high_go);
    if (weft_event_wait(&l->low_go) == WEFT_OK)
        atomic_fetch_add(&l->done, 1);
}

static void lv_pinned(void *arg)
{
    struct levels *l = arg;
    if (weft_event_wait(&l->pin_go) == WEFT_OK) {
        weft_event_signal(&l->low_go);
        atomic_fetch_add(&l->done, 1);
    }
}

static void lv_normal(void *arg)
{
    struct levels *l = arg;
    weft_event_signal(&l->pin_go);
    atomic_fetch_add(&l->done, 1);
}

WT_TEST(pin, levels_and_pins_block_on_each_other_in_a_valid_order, .timeout = 120)
{
    WT_FOR_WORKERS(W, 0, 1, 2) {
        weft_sched *s = make_sched(W);
        int me = bind_as(s, 0);
        static struct levels l;
        weft_event_init(&l.high_go, true, false);
        weft_event_init(&l.low_go, true, false);
        weft_event_init(&l.pin_go, true, false);
        atomic_store(&l.done, 0);
        /* Queued in the order that would hang if each ran to its end
         * before the next started. */
        WT_ASSERT_EQ(spawn_prio(s, lv_high, &l, WEFT_PRIORITY_HIGH), WEFT_OK);
        WT_ASSERT_EQ(spawn_pinned(s, lv_pinned, &l, me), WEFT_OK);
        WT_ASSERT_EQ(spawn_prio(s, lv_low, &l, WEFT_PRIORITY_LOW), WEFT_OK);
        WT_ASSERT_EQ(spawn_prio(s, lv_normal, &l, WEFT_PRIORITY_NORMAL), WEFT_OK);
        WT_ASSERT_EQ(weft_sched_wait_idle(s), WEFT_OK);
        WT_ASSERT(atomic_load(&l.done) == 4, "%u workers: %d of 4 tasks finished", W,
                  atomic_load(&l.done));
        weft_event_destroy(&l.high_go);
        weft_event_destroy(&l.low_go);
        weft_event_destroy(&l.pin_go);
        weft_sched_unbind();
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    }
}

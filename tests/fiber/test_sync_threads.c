/* The sync primitives without the scheduler: plain threads (the futex
 * path), and fibers under a trivial host written here, mixed with plain
 * threads on one object. Needs only src/fiber, so it also runs in the
 * fiber-only cross builds (AArch64 under qemu). Lower time bounds only. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "wait.h"
#include "wtest.h"

static void nap_us(long us)
{
    struct timespec ts = { 0, us * 1000 };
    nanosleep(&ts, NULL);
}

static const uint64_t timeouts[] = { 0, 1000, 1000000 };

static void run_threads(unsigned n, void *(*fn)(void *))
{
    pthread_t th[16];
    WT_ASSERT(n <= 16);
    for (unsigned i = 0; i < n; i++)
        WT_ASSERT_EQ(pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i), 0);
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* ---- plain threads ------------------------------------------------------------ */

static weft_mutex tm;
static uint64_t tcount;
static atomic_int tinside;
static unsigned titers;

static void *mutex_worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < titers; i++) {
        if (i % 4 == 1) {
            while (!weft_mutex_try_lock(&tm))
                sched_yield();
        } else {
            weft_mutex_lock(&tm);
        }
        WT_ASSERT_EQ(atomic_exchange(&tinside, 1), 0);
        tcount++;
        if (id == 0 && i % 1000 == 999)
            nap_us(2000);   /* > 1 ms: the others starve, hand-off mode */
        atomic_store(&tinside, 0);
        weft_mutex_unlock(&tm);
    }
    return NULL;
}

WT_TEST(sync_threads, mutex_counter, .timeout = 300)
{
    titers = (unsigned)wt_scaled(50000, 2000);
    weft_mutex_init(&tm);
    run_threads(8, mutex_worker);
    WT_ASSERT_EQ(tcount, (uint64_t)titers * 8);
    weft_mutex_destroy(&tm);
}

/* Unlock racing destroy: the POSIX reference-count pattern, where each
 * of three holders of a reference does lock; --refs; unlock, and whoever
 * dropped the last one destroys and frees the object at once. U unlocks
 * while W sleeps in the mutex's queue; the unlock seam holds U between
 * its release of the lock word and the wake-up it posts to W, while X
 * locks and unlocks. If W could get the lock in that window, it would
 * free the object under U's unlock (ASan and TSAN report the access; the
 * early count below catches it in any build). */
typedef struct rc_obj {
    weft_mutex m;
    int refs;               /* under m */
} rc_obj;

static rc_obj *rco;
static atomic_int rc_u_holds, rc_w_queued, rc_u_paused, rc_x_done, rc_freed;
static atomic_int rc_early;          /* rounds where W freed it while U was still in unlock */
static _Thread_local bool rc_is_u;

/* The seam, on U's thread only: let X run a whole lock/unlock, then give
 * a W woken too early time to free the object. */
static void rc_pause(void)
{
    if (!rc_is_u)
        return;
    atomic_store(&rc_u_paused, 1);
    while (!atomic_load(&rc_x_done))
        sched_yield();
    uint64_t t0 = wt_now_ns();
    while (!atomic_load(&rc_freed) && wt_now_ns() - t0 < 5000000)
        sched_yield();
    if (atomic_load(&rc_freed))
        atomic_fetch_add(&rc_early, 1);
}

/* W's host: a plain thread on the futex, which says when it is queued. */
static int rc_block(weft__waiter *w, void (*unlock)(void *), void *lock)
{
    unlock(lock);
    atomic_store(&rc_w_queued, 1);
    weft__block_thread(w);
    return WEFT_OK;
}

static void rc_wake(weft__waiter *w)
{
    weft__wake_word(&w->state);   /* the address only: w may be gone (see wait.c) */
}

static const weft__host rc_host = { rc_block, rc_wake, NULL, NULL, NULL };

static void rc_last(rc_obj *o)
{
    weft_mutex_destroy(&o->m);
    free(o);
    atomic_store(&rc_freed, 1);
}

static void rc_drop(void)
{
    rc_obj *o = rco;
    weft_mutex_lock(&o->m);
    bool last = --o->refs == 0;
    weft_mutex_unlock(&o->m);
    if (last)
        rc_last(o);
}

static void *rc_u(void *arg)
{
    rc_obj *o = rco;
    rc_is_u = true;
    weft_mutex_lock(&o->m);
    atomic_store(&rc_u_holds, 1);
    while (!atomic_load(&rc_w_queued))
        sched_yield();
    bool last = --o->refs == 0;
    weft_mutex_unlock(&o->m);          /* pauses in rc_pause */
    if (last)
        rc_last(o);
    return NULL;
}

static void *rc_w(void *arg)
{
    while (!atomic_load(&rc_u_holds))
        sched_yield();
    weft__host_set(&rc_host);
    rc_drop();
    weft__host_set(NULL);
    return NULL;
}

static void *rc_x(void *arg)
{
    while (!atomic_load(&rc_u_paused))
        sched_yield();
    rc_drop();
    atomic_store(&rc_x_done, 1);
    return NULL;
}

WT_TEST(sync_threads, mutex_unlock_racing_destroy, .timeout = 300)
{
    unsigned rounds = (unsigned)wt_scaled(200, 30);
    weft__mutex_unlock_pause = rc_pause;
    for (unsigned r = 0; r < rounds; r++) {
        rco = malloc(sizeof *rco);
        WT_ASSERT(rco != NULL);
        weft_mutex_init(&rco->m);
        rco->refs = 3;
        atomic_store(&rc_u_holds, 0);
        atomic_store(&rc_w_queued, 0);
        atomic_store(&rc_u_paused, 0);
        atomic_store(&rc_x_done, 0);
        atomic_store(&rc_freed, 0);
        pthread_t u, w, x;
        WT_ASSERT_EQ(pthread_create(&u, NULL, rc_u, NULL), 0);
        WT_ASSERT_EQ(pthread_create(&w, NULL, rc_w, NULL), 0);
        WT_ASSERT_EQ(pthread_create(&x, NULL, rc_x, NULL), 0);
        pthread_join(u, NULL);
        pthread_join(w, NULL);
        pthread_join(x, NULL);
        WT_ASSERT_EQ(atomic_load(&rc_freed), 1);
    }
    weft__mutex_unlock_pause = NULL;
    WT_ASSERT(atomic_load(&rc_early) == 0,
              "%d of %u rounds: the sleeper got the mutex and freed it while an unlock was still inside",
              atomic_load(&rc_early), rounds);
}

/* More callers inside an event or a wait group at once than its state
 * word counts: the releasers field (callers that saw waiters and are
 * inside to wake them) has 7 bits in an event and 8 in a wait group. A
 * full field makes the next caller wait for a slot, never abort. To fill
 * it for sure, the one waiter holds the primitive's lock, which every
 * releaser must take, from inside its host's block until all callers
 * have started and a moment has passed; then it lets go. */
#define FULL_CALLERS 300
static atomic_int hold_queued, hold_go, full_entered;
static atomic_int full_rc;

static int hold_block(weft__waiter *w, void (*unlock)(void *), void *lock)
{
    atomic_store(&hold_queued, 1);
    while (!atomic_load(&hold_go))
        sched_yield();
    unlock(lock);
    weft__block_thread(w);
    return WEFT_OK;
}

static const weft__host hold_host = { hold_block, rc_wake, NULL, NULL, NULL };

/* Small stacks: FULL_CALLERS threads at once. */
static void start_small(pthread_t *t, void *(*fn)(void *), void *arg)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    WT_ASSERT_EQ(pthread_create(t, &a, fn, arg), 0);
    pthread_attr_destroy(&a);
}

/* The callers have started; give the last of them time to count
 * themselves, then let the holder go. */
static void release_holder(void)
{
    uint64_t t0 = wt_now_ns();
    while (wt_now_ns() - t0 < 50000000)
        sched_yield();
    atomic_store(&hold_go, 1);
}

/* Starts the waiter (which blocks holding the primitive's lock), then
 * FULL_CALLERS callers, lets the holder go and joins them all. With
 * before_each, the callers start one at a time: before_each(i) first,
 * then caller i until it has counted itself entered; without, all at
 * once. */
static void fill_releasers(void *(*waiter)(void *), void *(*caller)(void *),
                           void (*before_each)(int i))
{
    static pthread_t th[FULL_CALLERS];
    pthread_t w;
    atomic_store(&hold_queued, 0);
    atomic_store(&hold_go, 0);
    atomic_store(&full_entered, 0);
    atomic_store(&full_rc, -1);
    WT_ASSERT_EQ(pthread_create(&w, NULL, waiter, NULL), 0);
    while (!atomic_load(&hold_queued))
        sched_yield();
    for (int i = 0; i < FULL_CALLERS; i++) {
        if (before_each)
            before_each(i);
        start_small(&th[i], caller, NULL);
        if (!before_each)
            continue;
        while (atomic_load(&full_entered) < i + 1)
            sched_yield();
        for (int y = 0; y < 4; y++)
            sched_yield();   /* let its call land before the next before_each */
    }
    while (atomic_load(&full_entered) < FULL_CALLERS)
        sched_yield();
    release_holder();
    for (int i = 0; i < FULL_CALLERS; i++)
        pthread_join(th[i], NULL);
    pthread_join(w, NULL);
}

static weft_event fev;

static void *fev_waiter(void *arg)
{
    weft__host_set(&hold_host);
    atomic_store(&full_rc, weft_event_wait(&fev));
    weft__host_set(NULL);
    return NULL;
}

static void *fev_signaller(void *arg)
{
    atomic_fetch_add(&full_entered, 1);
    weft_event_signal(&fev);
    return NULL;
}

WT_TEST(sync_threads, event_more_signallers_than_releaser_slots, .timeout = 300)
{
    weft_event_init(&fev, false, false);
    fill_releasers(fev_waiter, fev_signaller, NULL);
    WT_ASSERT_EQ(atomic_load(&full_rc), WEFT_OK);
    /* One signal woke the waiter; the others found none and left the
     * event set. */
    WT_ASSERT(weft_event_signalled(&fev), "the signals after the wake-up were lost");
    weft_event_destroy(&fev);   /* aborts if a waiter or signaller is still counted */
}

/* The wait group: each caller's done() takes the count from 1 to 0 while
 * the waiter is counted, so each is a releaser; the test adds 1 back
 * before starting the next caller. A caller whose done() lands after
 * that add does not reach 0 and is not one, so FULL_CALLERS leaves room
 * for a few of those beyond the 255 slots. */
static weft_waitgroup fwg;

static void *fwg_waiter(void *arg)
{
    weft__host_set(&hold_host);
    atomic_store(&full_rc, weft_waitgroup_wait(&fwg));
    weft__host_set(NULL);
    return NULL;
}

static void *fwg_doner(void *arg)
{
    atomic_fetch_add(&full_entered, 1);
    weft_waitgroup_done(&fwg);
    return NULL;
}

/* Before each caller but the first: the count back to 1. */
static void fwg_add_back(int i)
{
    if (i > 0)
        weft_waitgroup_add(&fwg, 1);
}

WT_TEST(sync_threads, waitgroup_more_releases_than_releaser_slots, .timeout = 300)
{
    weft_waitgroup_init(&fwg, 1);
    fill_releasers(fwg_waiter, fwg_doner, fwg_add_back);
    WT_ASSERT_EQ(atomic_load(&full_rc), WEFT_OK);
    WT_ASSERT_EQ(weft_waitgroup_wait_for(&fwg, 0), WEFT_OK);   /* FULL_CALLERS adds, as many done()s */
    weft_waitgroup_destroy(&fwg);   /* aborts if a waiter or releaser is still counted */
}

/* Event rounds: exactly one of "wait returned OK" and "signal left set". */
static weft_event tev;
static weft_event tgo, tdone;
static unsigned trounds;

static void *event_signaller(void *arg)
{
    for (unsigned r = 0; r < trounds; r++) {
        WT_ASSERT_EQ(weft_event_wait(&tgo), WEFT_OK);
        if (r % 3 == 0)
            sched_yield();
        weft_event_signal(&tev);
        weft_event_signal(&tdone);
    }
    return NULL;
}

WT_TEST(sync_threads, event_timeouts_exactly_once, .timeout = 300)
{
    trounds = (unsigned)wt_scaled(30000, 1000);
    weft_event_init(&tev, false, false);
    weft_event_init(&tgo, false, false);
    weft_event_init(&tdone, false, false);
    pthread_t t;
    pthread_create(&t, NULL, event_signaller, NULL);
    long ok = 0, out = 0;
    for (unsigned r = 0; r < trounds; r++) {
        uint64_t to = timeouts[r % 3];
        weft_event_signal(&tgo);
        uint64_t t0 = wt_now_ns();
        int rc = weft_event_wait_for(&tev, to);
        uint64_t waited = wt_now_ns() - t0;
        WT_ASSERT_EQ(weft_event_wait(&tdone), WEFT_OK);
        bool left = weft_event_signalled(&tev);
        if (rc == WEFT_OK) {
            WT_ASSERT(!left);
            ok++;
        } else {
            WT_ASSERT_EQ(rc, WEFT_ETIMEDOUT);
            WT_ASSERT(left, "round %u: timed out and the signal is lost", r);
            WT_ASSERT(waited >= to);
            weft_event_clear(&tev);
            out++;
        }
    }
    pthread_join(t, NULL);
    fprintf(stderr, "threads: %u event rounds: %ld notified, %ld timed out\n", trounds, ok, out);
}

/* Channel: 4 producers x 4 consumers, exactly once, FIFO per producer. */
static weft_chan *tch;
static unsigned tper;
static _Atomic unsigned char *tseen;
static weft_waitgroup tprod;
static atomic_int tclosed;

static void *chan_producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    for (uint32_t i = 0; i < tper; i++) {
        uint32_t m[2] = { id, i };
        int rc;
        if (i % 3 == 1)
            while ((rc = weft_chan_send_for(tch, m, 1000)) == WEFT_ETIMEDOUT)
                ;
        else
            rc = weft_chan_send(tch, m);
        WT_ASSERT_EQ(rc, WEFT_OK);
    }
    weft_waitgroup_done(&tprod);
    return NULL;
}

static void *chan_consumer(void *arg)
{
    uint32_t last[4] = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX };
    for (unsigned n = 0;; n++) {
        uint32_t m[2];
        int rc;
        if (n % 3 == 1)
            while ((rc = weft_chan_recv_for(tch, m, timeouts[1 + n % 2])) == WEFT_ETIMEDOUT)
                ;
        else
            rc = weft_chan_recv(tch, m);
        if (rc == WEFT_ECLOSED)
            break;
        WT_ASSERT_EQ(rc, WEFT_OK);
        WT_ASSERT(m[0] < 4 && m[1] < tper);
        WT_ASSERT(last[m[0]] == UINT32_MAX || m[1] > last[m[0]], "FIFO broken");
        last[m[0]] = m[1];
        WT_ASSERT_EQ(atomic_fetch_add(&tseen[m[0] * tper + m[1]], 1), 0);
    }
    atomic_fetch_add(&tclosed, 1);
    return NULL;
}

static void *chan_party(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    return id < 4 ? chan_producer(arg) : chan_consumer(arg);
}

static void *chan_closer(void *arg)
{
    WT_ASSERT_EQ(weft_waitgroup_wait(&tprod), WEFT_OK);
    weft_chan_close(tch);
    return NULL;
}

WT_TEST(sync_threads, chan_4x4_exactly_once, .timeout = 300)
{
    static const size_t caps[] = { 0, 1, 16 };
    for (int c = 0; c < 3; c++) {
        tper = (unsigned)wt_scaled(c == 2 ? 100000 : 20000, 500);
        tseen = calloc(4 * (size_t)tper, 1);
        WT_ASSERT_EQ(weft_chan_create(&tch, 2 * sizeof(uint32_t), caps[c]), WEFT_OK);
        weft_waitgroup_init(&tprod, 4);
        atomic_store(&tclosed, 0);
        pthread_t closer;
        pthread_create(&closer, NULL, chan_closer, NULL);
        run_threads(8, chan_party);
        pthread_join(closer, NULL);
        WT_ASSERT_EQ(atomic_load(&tclosed), 4);
        for (size_t i = 0; i < 4 * (size_t)tper; i++)
            WT_ASSERT(tseen[i] == 1, "message %zu seen %d times", i, tseen[i]);
        weft_chan_destroy(tch);
        weft_waitgroup_destroy(&tprod);
        free((void *)tseen);
    }
}

/* Condition variable: tokens balance, the mutex is held after timeouts. */
static weft_mutex cm;
static weft_cond cc;
static long ctokens, cconsumed;
static int cowner;
static unsigned cper;

static void *cond_party(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < cper; i++) {
        weft_mutex_lock(&cm);
        if (id % 2) {
            ctokens++;
            if (i % 5 == 0)
                weft_cond_broadcast(&cc);
            else
                weft_cond_signal(&cc);
        } else {
            while (ctokens == 0) {
                uint64_t to = timeouts[i % 3], t0 = wt_now_ns();
                int rc = i % 7 == 3 ? weft_cond_wait(&cc, &cm) : weft_cond_wait_for(&cc, &cm, to);
                WT_ASSERT_EQ(cowner, 0);
                cowner = (int)id + 1;
                if (rc == WEFT_ETIMEDOUT)
                    WT_ASSERT(wt_now_ns() - t0 >= to);
                else
                    WT_ASSERT_EQ(rc, WEFT_OK);
                cowner = 0;
            }
            ctokens--;
            cconsumed++;
        }
        weft_mutex_unlock(&cm);
    }
    return NULL;
}

WT_TEST(sync_threads, cond_tokens_and_timeouts, .timeout = 300)
{
    cper = (unsigned)wt_scaled(20000, 1000);
    weft_mutex_init(&cm);
    weft_cond_init(&cc);
    run_threads(6, cond_party);
    WT_ASSERT_EQ(cconsumed, (long)cper * 3);
    WT_ASSERT_EQ(ctokens, 0);
    weft_cond_destroy(&cc);
    weft_mutex_destroy(&cm);
}

/* ---- fibers under a trivial host ------------------------------------------------ */

/* One thread runs NF fibers round-robin: a ready ring (woken from any
 * thread, so under a pthread mutex), the blocked waiters with deadlines
 * (this thread only), and the scheduler's own fiber to switch back to. */
#define NF 16
static weft__fiber sched_fiber;
static weft__fiber *fibers[NF];
static _Thread_local weft__fiber *running;   /* NULL on the plain threads */
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__fiber *ready[NF + 1];
static unsigned ready_head, ready_tail;
static weft__waiter *timed[NF];
static unsigned live;

static void make_ready(weft__fiber *f)
{
    pthread_mutex_lock(&ready_lock);
    ready[ready_tail++ % (NF + 1)] = f;
    pthread_mutex_unlock(&ready_lock);
}

static weft__fiber *take_ready(void)
{
    weft__fiber *f = NULL;
    pthread_mutex_lock(&ready_lock);
    if (ready_head != ready_tail)
        f = ready[ready_head++ % (NF + 1)];
    pthread_mutex_unlock(&ready_lock);
    return f;
}

static unsigned index_of(weft__fiber *f)
{
    for (unsigned i = 0; i < NF; i++)
        if (fibers[i] == f)
            return i;
    WT_FAIL("unknown fiber");
    return 0;
}

static int mini_block(weft__waiter *w, void (*unlock)(void *), void *lock)
{
    weft__fiber *self = running;
    w->fiber = self;
    unsigned i = index_of(self);
    if (w->deadline)
        timed[i] = w;
    unlock(lock);
    weft__fiber_switch(self, &sched_fiber);
    timed[i] = NULL;
    return WEFT_OK;
}

static void mini_wake(weft__waiter *w)
{
    make_ready(w->fiber);
}

static const weft__host mini_host = { mini_block, mini_wake, NULL, NULL, NULL };

static void mini_yield(void)
{
    make_ready(running);
    weft__fiber_switch(running, &sched_fiber);
}

/* Runs until every fiber has exited: ready fibers first, then expired
 * deadlines (the timeout's CAS, as a real host's timer does). */
static void mini_run(void)
{
    while (live) {
        weft__fiber *f = take_ready();
        if (f) {
            running = f;
            weft__fiber_switch(&sched_fiber, f);
            running = NULL;
            continue;
        }
        uint64_t now = wt_now_ns();
        for (unsigned i = 0; i < NF; i++) {
            weft__waiter *w = timed[i];
            if (!w || now < w->deadline)
                continue;
            unsigned expect = WEFT__WAIT_PENDING;
            if (atomic_compare_exchange_strong(&w->state, &expect, WEFT__WAIT_TIMEDOUT)) {
                timed[i] = NULL;
                make_ready(w->fiber);
            }
        }
        sched_yield();
    }
}

static weft_mutex hm;
static uint64_t hcount;
static weft_chan *hch;
static weft_event hev;
static atomic_long hok, hout;
static unsigned hiters;

static void fiber_body(unsigned id)
{
    for (unsigned i = 0; i < hiters; i++) {
        weft_mutex_lock(&hm);
        hcount++;
        if (i % 8 == 0 && running)
            mini_yield();   /* switch while holding it */
        weft_mutex_unlock(&hm);
        unsigned v = i;
        if (id % 2) {
            WT_ASSERT_EQ(weft_chan_send(hch, &v), WEFT_OK);
            weft_event_signal(&hev);
        } else {
            WT_ASSERT_EQ(weft_chan_recv(hch, &v), WEFT_OK);
            uint64_t to = timeouts[i % 3], t0 = wt_now_ns();
            int rc = weft_event_wait_for(&hev, to);
            if (rc == WEFT_OK) {
                atomic_fetch_add(&hok, 1);
            } else {
                WT_ASSERT_EQ(rc, WEFT_ETIMEDOUT);
                WT_ASSERT(wt_now_ns() - t0 >= to);
                atomic_fetch_add(&hout, 1);
            }
        }
    }
}

static void fiber_entry(void *arg)
{
    fiber_body((unsigned)(uintptr_t)arg);
    live--;
    weft__fiber_exit(running, &sched_fiber);
}

static void *host_thread_party(void *arg)
{
    fiber_body((unsigned)(uintptr_t)arg);
    return NULL;
}

WT_TEST(sync_threads, fibers_on_a_trivial_host_with_threads, .timeout = 300)
{
    hiters = (unsigned)wt_scaled(20000, 500);
    weft_mutex_init(&hm);
    weft_event_init(&hev, false, false);
    WT_ASSERT_EQ(weft_chan_create(&hch, sizeof(unsigned), 1), WEFT_OK);
    WT_ASSERT_EQ(weft__fiber_thread_enter(&sched_fiber), WEFT_OK);
    weft__fiber_pool pool;
    WT_ASSERT_EQ(weft__fiber_pool_init(&pool, 64 * 1024, NF), WEFT_OK);
    for (unsigned i = 0; i < NF; i++) {
        WT_ASSERT_EQ(weft__fiber_create(&pool, &fibers[i], fiber_entry, (void *)(uintptr_t)i), WEFT_OK);
        make_ready(fibers[i]);
    }
    live = NF;
    /* Two plain threads join in: ids NF and NF + 1 (a receiver and a sender). */
    pthread_t th[2];
    for (unsigned i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, host_thread_party, (void *)(uintptr_t)(NF + i));
    weft__host_set(&mini_host);
    mini_run();
    weft__host_set(NULL);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    for (unsigned i = 0; i < NF; i++)
        weft__fiber_release(&pool, fibers[i]);
    weft__fiber_pool_fini(&pool);
    weft__fiber_thread_leave();
    WT_ASSERT_EQ(hcount, (uint64_t)hiters * (NF + 2));
    /* Every signal was consumed by one wait or is still pending: the
     * signals coalesce, so only bounds hold: ok <= signals. */
    WT_ASSERT(atomic_load(&hok) <= (long)hiters * (NF / 2 + 1));
    WT_ASSERT_EQ(atomic_load(&hok) + atomic_load(&hout), (long)hiters * (NF / 2 + 1));
    fprintf(stderr, "trivial host: %u fibers + 2 threads, %ld notified, %ld timed out\n",
            NF, atomic_load(&hok), atomic_load(&hout));
    weft_chan_destroy(hch);
    weft_event_destroy(&hev);
    weft_mutex_destroy(&hm);
}

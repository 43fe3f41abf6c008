/* Fiber-aware synchronization on the scheduler, and what surrounds a
 * wait: single-threaded mode (the bound thread runs the work it waits
 * for), signals at 10 kHz during switching and parking (test 24 of
 * docs/reliability.md), no allocation per wait, and misuse and use after
 * destroy aborting with a message that names the object. Every scheduler test runs at 1, 2 and 4 workers with plain
 * threads mixed in on the same objects (sync_common.h). Timing assertions
 * are lower bounds only. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sync_common.h"
#include "sync_util.h"

/* ---- single-threaded mode: the bound thread runs the work it waits for --------- */

static weft_mutex st_m;

static weft_cond st_c;

static weft_chan *st_ch;

static weft_waitgroup st_wg;

static int st_stage;

static void st_task(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    int v = (int)i;
    WT_ASSERT_EQ(weft_chan_send(st_ch, &v), WEFT_OK);   /* rendezvous with the bound thread */
    weft_mutex_lock(&st_m);
    while (st_stage == 0)
        WT_ASSERT_EQ(weft_cond_wait(&st_c, &st_m), WEFT_OK);
    weft_mutex_unlock(&st_m);
    weft_waitgroup_done(&st_wg);
}

WT_TEST(sync, single_threaded_mode_bound_thread_waits, .timeout = 120)
{
    cur = make_sched(0);
    WT_ASSERT_EQ(weft_sched_bind(cur), WEFT_OK);
    weft_mutex_init(&st_m);
    weft_cond_init(&st_c);
    weft_waitgroup_init(&st_wg, 10);
    st_stage = 0;
    WT_ASSERT_EQ(weft_chan_create(&st_ch, sizeof(int), 0), WEFT_OK);
    for (uintptr_t i = 0; i < 10; i++)
        WT_ASSERT_EQ(weft_spawn(cur, st_task, (void *)i), WEFT_OK);
    long sum = 0;
    for (int i = 0; i < 10; i++) {
        int v;
        WT_ASSERT_EQ(weft_chan_recv(st_ch, &v), WEFT_OK);   /* runs the tasks meanwhile */
        sum += v;
    }
    WT_ASSERT_EQ(sum, 45);
    uint64_t t0 = wt_now_ns();
    WT_ASSERT_EQ(weft_waitgroup_wait_for(&st_wg, 1000000), WEFT_ETIMEDOUT);   /* timer on the bound thread */
    WT_ASSERT(wt_now_ns() - t0 >= 1000000);
    weft_mutex_lock(&st_m);
    st_stage = 1;
    weft_cond_broadcast(&st_c);
    weft_mutex_unlock(&st_m);
    WT_ASSERT_EQ(weft_waitgroup_wait(&st_wg), WEFT_OK);
    weft_chan_destroy(st_ch);
    weft_waitgroup_destroy(&st_wg);
    weft_cond_destroy(&st_c);
    weft_mutex_destroy(&st_m);
    weft_sched_unbind();
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
}

/* ---- 24. signals at 10 kHz during switching and parking --------------------------- */

static atomic_long signals24;

static atomic_bool stop24;

static void on_sig(int sig)
{
    atomic_fetch_add_explicit(&signals24, 1, memory_order_relaxed);
}

/* Every 100 us, one signal to every thread of the process but itself. */
static void *signaller24(void *arg)
{
    pid_t self = (pid_t)syscall(SYS_gettid);
    pid_t pid = getpid();
    while (!atomic_load(&stop24)) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            pid_t tid = (pid_t)atoi(e->d_name);
            if (tid > 0 && tid != self)
                syscall(SYS_tgkill, pid, tid, SIGUSR1);
        }
        if (d)
            closedir(d);
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static bool t24_thread(unsigned id) { return id % 5 == 4; }

/* Mixed load: mutex increments, a channel ring and event rounds. */
static weft_chan *ring24;

static atomic_long before24;   /* signals24 when the load started */

static void t24_body(unsigned id)
{
    t19_body(id);
    if (id < 8) {
        for (unsigned i = 0; i < iters19; i++) {
            unsigned v = i;
            if (id % 2) {
                WT_ASSERT_EQ(weft_chan_send(ring24, &v), WEFT_OK);
            } else {
                int rc;
                while ((rc = weft_chan_recv_for(ring24, &v, timeouts[i % 3])) == WEFT_ETIMEDOUT)
                    weft_yield();   /* a 0 timeout only polls */
                WT_ASSERT_EQ(rc, WEFT_OK);
            }
        }
    }
    /* A short load (the sanitizer scale, or a signaller starved on a
     * loaded machine) could end before a signal landed during it: the
     * load lasts, blocked in sleeps, until one has. The signaller is live
     * and keeps sending, so this ends. */
    if (id == 0)
        while (atomic_load(&signals24) == atomic_load(&before24))
            WT_ASSERT_EQ(weft_sleep(100000), WEFT_OK);
}

WT_TEST(sync, t24_signals_during_blocking, .timeout = 600)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;     /* no SA_RESTART: futex waits see EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    iters19 = (unsigned)wt_scaled(3000, 200);
    WT_FOR_WORKERS(w, 1, 2, 4) {
        weft_mutex_init(&m19);
        counter19 = 0;
        WT_ASSERT_EQ(weft_chan_create(&ring24, sizeof(unsigned), 2), WEFT_OK);
        atomic_store(&stop24, false);
        long before = atomic_load(&signals24);
        pthread_t sig;
        pthread_create(&sig, NULL, signaller24, NULL);
        /* The signaller is live before the load starts: a short run (the
         * sanitizer scale, 1 worker) could otherwise end before its thread
         * first got a CPU. */
        while (atomic_load(&signals24) == before)
            sched_yield();
        before = atomic_load(&signals24);   /* count only those during the load */
        atomic_store(&before24, before);
        run_mixed(w, 20, t24_thread, t24_body);
        atomic_store(&stop24, true);
        pthread_join(sig, NULL);
        WT_ASSERT_EQ(counter19, (uint64_t)iters19 * 20);
        long got = atomic_load(&signals24) - before;
        fprintf(stderr, "t24: %u workers, %ld signals delivered, counts exact\n", w, got);
        WT_ASSERT(got > 0);
        weft_chan_destroy(ring24);
        weft_mutex_destroy(&m19);
    }
}

/* ---- no allocation per wait --------------------------------------------------------- */

static atomic_long allocs;

static _Atomic size_t last_size;

static void *count_alloc(size_t size, void *ctx)
{
    atomic_fetch_add(&allocs, 1);
    atomic_store(&last_size, size);
    void *p = NULL;
    return posix_memalign(&p, 64, size < 64 ? 64 : size) == 0 ? p : NULL;
}

static void count_free(void *p, size_t size, void *ctx) { free(p); }

static weft_chan *na_a, *na_b;

static weft_mutex na_m;

static weft_event na_e, na_go;

static unsigned na_rounds;

static void na_ping(void *arg)
{
    unsigned v = 0;
    WT_ASSERT_EQ(weft_event_wait(&na_go), WEFT_OK);
    for (unsigned i = 0; i < na_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_send(na_a, &v), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_recv(na_b, &v), WEFT_OK);
        weft_mutex_lock(&na_m);
        weft_yield();
        weft_mutex_unlock(&na_m);
        (void)weft_event_wait_for(&na_e, 1000);
    }
}

static void na_pong(void *arg)
{
    unsigned v;
    WT_ASSERT_EQ(weft_event_wait(&na_go), WEFT_OK);
    for (unsigned i = 0; i < na_rounds; i++) {
        WT_ASSERT_EQ(weft_chan_recv(na_a, &v), WEFT_OK);
        WT_ASSERT_EQ(weft_chan_send(na_b, &v), WEFT_OK);
        weft_mutex_lock(&na_m);
        weft_mutex_unlock(&na_m);
        weft_event_signal(&na_e);
    }
}

static void *na_pong_thread(void *arg) { na_pong(arg); return NULL; }

WT_TEST(sync, no_allocation_per_wait, .timeout = 300)
{
    weft_allocator a = { count_alloc, count_free, NULL };
    weft_set_allocator(&a);
    cur = make_sched(2);
    WT_ASSERT_EQ(weft_chan_create(&na_a, sizeof(unsigned), 0), WEFT_OK);
    WT_ASSERT_EQ(weft_chan_create(&na_b, sizeof(unsigned), 0), WEFT_OK);
    weft_mutex_init(&na_m);
    weft_event_init(&na_e, false, false);
    long before = 0;
    for (int round = 0; round < 2; round++) {   /* the first warms pools and timer heaps */
        na_rounds = round ? (unsigned)wt_scaled(100000, 2000) : 2000;
        weft_event_init(&na_go, true, false);
        pthread_t t;
        for (int i = 0; i < 2; i++)
            WT_ASSERT_EQ(weft_spawn(cur, na_ping, NULL), WEFT_OK);
        WT_ASSERT_EQ(weft_spawn(cur, na_pong, NULL), WEFT_OK);
        pthread_create(&t, NULL, na_pong_thread, NULL);
        /* Count from here: spawning itself may take a record slab. */
        if (round)
            before = atomic_load(&allocs);
        weft_event_signal(&na_go);
        pthread_join(t, NULL);
        WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
        weft_event_destroy(&na_go);
    }
    long during = atomic_load(&allocs) - before;
    fprintf(stderr, "%u rounds of blocking channel, mutex and event waits: %ld allocations\n",
            na_rounds * 2, during);
    if (during)
        fprintf(stderr, "the last one: %zu bytes\n", atomic_load(&last_size));
    WT_ASSERT_EQ(during, 0);
    weft_chan_destroy(na_a);
    weft_chan_destroy(na_b);
    weft_event_destroy(&na_e);
    weft_mutex_destroy(&na_m);
    WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    weft_set_allocator(NULL);
}

/* ---- misuse --------------------------------------------------------------------------- */

static void destroy_locked(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_lock(&m);
    weft_mutex_destroy(&m);
}

static void unlock_unlocked(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_unlock(&m);
}

WT_TEST(sync, misuse_aborts_with_a_message)
{
    char buf[1024];
    int st = wt_run_child(destroy_locked, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "mutex_destroy: mutex 0x") != NULL, "%s", buf);
    st = wt_run_child(unlock_unlocked, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "is not locked") != NULL, "%s", buf);
}

/* ---- use after destroy (checked builds) ------------------------------------------- */

#ifdef CHECKS_ON
static void mutex_after_destroy(void *arg)
{
    weft_mutex m;
    weft_mutex_init(&m);
    weft_mutex_destroy(&m);
    weft_mutex_lock(&m);
}

static void event_after_destroy(void *arg)
{
    weft_event e;
    weft_event_init(&e, false, false);
    weft_event_destroy(&e);
    weft_event_signal(&e);
}

static void waitgroup_after_destroy(void *arg)
{
    weft_waitgroup g;
    weft_waitgroup_init(&g, 0);
    weft_waitgroup_destroy(&g);
    weft_waitgroup_add(&g, 1);
}

static void cond_after_destroy(void *arg)
{
    weft_cond c;
    weft_mutex m;
    weft_cond_init(&c);
    weft_mutex_init(&m);
    weft_cond_destroy(&c);
    weft_cond_broadcast(&c);
}

static void mutex_never_initialized(void *arg)
{
    weft_mutex m;
    memset(&m, 0x5a, sizeof m);
    weft_mutex_unlock(&m);
}

WT_TEST(sync, use_after_destroy_aborts_naming_the_object)
{
    static const struct {
        void (*fn)(void *);
        const char *want;
    } cases[] = {
        { mutex_after_destroy, "mutex_lock: mutex 0x" },
        { event_after_destroy, "event_signal: event 0x" },
        { waitgroup_after_destroy, "waitgroup_add: wait group 0x" },
        { cond_after_destroy, "cond_broadcast: condition variable 0x" },
    };
    char buf[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int st = wt_run_child(cases[i].fn, NULL, buf, sizeof buf);
        WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "case %zu: status %#x: %s", i, st, buf);
        WT_ASSERT(strstr(buf, cases[i].want) && strstr(buf, "used after it was destroyed"),
                  "case %zu: %s", i, buf);
    }
    int st = wt_run_child(mutex_never_initialized, NULL, buf, sizeof buf);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x: %s", st, buf);
    WT_ASSERT(strstr(buf, "used before it was initialized") != NULL, "%s", buf);
}
#endif

/* Stress: fd waits racing readiness, their timeouts and destroy, and
 * blocking calls racing destroy (issue 19). A plain program (it runs
 * under TSAN too).
 *
 * A cycle creates a scheduler (0, 1 or 2 workers), spawns waiters on
 * pipes (some with short timeouts, some with none, two per pipe at
 * times), lets a writer thread make a random subset ready at random
 * moments, and destroys the scheduler while waits are still pending.
 * Checks: every wait returned exactly once, with POLLIN (and the pipe
 * had a byte), WEFT_ETIMEDOUT or WEFT_ESHUTDOWN, nothing else; destroy
 * returned; a blocking call made by a task during the cycle ran exactly
 * once. WEFT_STRESS_SCALE sizes it; WEFT_SEED replays it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"

#define NPIPES 24
#define MS 1000000ull

static int fds[NPIPES][2];
static atomic_uint returned, bad, calls_run, calls_made;
static uint64_t rng_seed;

struct waiter_arg {
    unsigned pipe;
    uint64_t timeout;
    weft_sched *s;
};
static struct waiter_arg args[2 * NPIPES];

static void count_call(void *arg)
{
    atomic_fetch_add(&calls_run, 1);
}

static void waiter(void *arg)
{
    struct waiter_arg *a = arg;
    if (a->pipe % 5 == 0) {
        atomic_fetch_add(&calls_made, 1);
        if (weft_call_blocking(a->s, count_call, NULL) != WEFT_OK)
            atomic_fetch_add(&bad, 1);
    }
    int rc = weft_fd_wait_for(fds[a->pipe][0], POLLIN, a->timeout);
    if (rc != POLLIN && rc != WEFT_ETIMEDOUT && rc != WEFT_ESHUTDOWN)
        atomic_fetch_add(&bad, 1);
    if (rc == POLLIN) {
        struct pollfd p = { .fd = fds[a->pipe][0], .events = POLLIN };
        if (poll(&p, 1, 0) != 1)
            atomic_fetch_add(&bad, 1);   /* ready, and nothing there */
    }
    atomic_fetch_add(&returned, 1);
}

static void *writer(void *arg)
{
    uint64_t r = *(uint64_t *)arg;
    for (unsigned i = 0; i < NPIPES; i++) {
        if (wt_rand(&r) % 2) {
            usleep((useconds_t)(wt_rand(&r) % 300));
            ssize_t put = write(fds[wt_rand(&r) % NPIPES][1], "x", 1);
            (void)put;
        }
    }
    return NULL;
}

WT_TEST(stress, io_waits_race_readiness_timeouts_destroy, .timeout = 600)
{
    static const unsigned counts[] = { 0, 1, 2 };
    unsigned cycles = (unsigned)wt_scaled(300, 12);
    uint64_t r = wt_seed();
    rng_seed = r;
    unsigned total = 0;
    for (unsigned c = 0; c < cycles; c++) {
        unsigned workers = counts[c % 3];
        weft_config cfg;
        weft_config_init(&cfg);
        cfg.workers = wt_workers(workers);
        cfg.blocking_threads = 1 + c % 3;
        weft_sched *s = NULL;
        WT_ASSERT_EQ(weft_sched_create(&s, &cfg), WEFT_OK);
        if (workers == 0)
            WT_ASSERT_EQ(weft_sched_bind(s), WEFT_OK);
        for (unsigned i = 0; i < NPIPES; i++)
            WT_ASSERT_EQ(pipe2(fds[i], O_NONBLOCK | O_CLOEXEC), 0);
        atomic_store(&returned, 0);
        atomic_store(&calls_run, 0);
        atomic_store(&calls_made, 0);
        unsigned n = 0;
        for (unsigned i = 0; i < NPIPES; i++) {
            unsigned k = 1 + (unsigned)(wt_rand(&r) % 2);   /* one or two waits on this pipe */
            for (unsigned j = 0; j < k; j++) {
                static const uint64_t to[] = { UINT64_MAX, 0, 1000, 100000, 2 * MS };
                args[n] = (struct waiter_arg){ i, to[wt_rand(&r) % 5], s };
                WT_ASSERT_EQ(weft_spawn(s, waiter, &args[n]), WEFT_OK);
                n++;
            }
        }
        pthread_t th;
        uint64_t wr = wt_rand(&r);
        WT_ASSERT_EQ(pthread_create(&th, NULL, writer, &wr), 0);
        if (workers == 0)
            weft_sleep((wt_rand(&r) % 3) * 100000);   /* the bound thread runs the tasks a little */
        else
            usleep((useconds_t)(wt_rand(&r) % 400));
        WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
        pthread_join(th, NULL);
        WT_ASSERT_EQ(atomic_load(&returned), n);
        WT_ASSERT_EQ(atomic_load(&calls_run), atomic_load(&calls_made));
        for (unsigned i = 0; i < NPIPES; i++) {
            close(fds[i][0]);
            close(fds[i][1]);
        }
        total += n;
    }
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    fprintf(stderr, "stress_io: %u cycles, %u waits: each returned once, 0 bad\n", cycles, total);
}

/* ---- issue 34: the persistent registration's calls racing forget and destroy ----
 *
 * A cycle: NPIPES pipes, a reader task per pipe calling weft_fd_read_for in
 * a loop (timeouts mixed), a writer thread writing each pipe's bytes in
 * sequence, a thread calling weft_fd_forget on random read ends (ending
 * parked waits with WEFT_ECLOSED; the next call registers again), then
 * destroy while reads wait. Checks: every byte read is the next of its
 * pipe's sequence (none lost to a race, none twice); every call returned
 * bytes, WEFT_ETIMEDOUT, WEFT_ECLOSED or WEFT_ESHUTDOWN; each reader ended
 * with WEFT_ESHUTDOWN. */

static unsigned char next_in[NPIPES];
static atomic_uint readers_done, forgets;
static atomic_bool forget_stop;
static weft_sched *cur_s;

static void reader(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    static const uint64_t to[] = { UINT64_MAX, 1000, 100000, 2 * MS };
    uint64_t r = rng_seed ^ (i * 0x9e3779b97f4a7c15ull);
    for (;;) {
        unsigned char buf[16];
        ptrdiff_t got = weft_fd_read_for(fds[i][0], buf, sizeof buf, to[wt_rand(&r) % 4]);
        if (got == WEFT_ESHUTDOWN)
            break;
        if (got == WEFT_ETIMEDOUT || got == WEFT_ECLOSED)
            continue;
        if (got <= 0) {
            atomic_fetch_add(&bad, 1);
            break;
        }
        for (ptrdiff_t k = 0; k < got; k++)
            if (buf[k] != next_in[i]++)
                atomic_fetch_add(&bad, 1);
    }
    atomic_fetch_add(&readers_done, 1);
}

static void *seq_writer(void *arg)
{
    uint64_t r = *(uint64_t *)arg;
    static unsigned char next_out[NPIPES];
    memset(next_out, 0, sizeof next_out);
    for (unsigned n = 0; n < 4 * NPIPES; n++) {
        unsigned i = (unsigned)(wt_rand(&r) % NPIPES);
        if (write(fds[i][1], &next_out[i], 1) == 1)
            next_out[i]++;
        if (wt_rand(&r) % 4 == 0)
            usleep((useconds_t)(wt_rand(&r) % 200));
    }
    return NULL;
}

static void *forgetter(void *arg)
{
    uint64_t r = *(uint64_t *)arg;
    while (!atomic_load(&forget_stop)) {
        weft_fd_forget(fds[wt_rand(&r) % NPIPES][0]);
        atomic_fetch_add(&forgets, 1);
        usleep((useconds_t)(wt_rand(&r) % 300));
    }
    return NULL;
}

WT_TEST(stress, io_calls_race_forget_destroy, .timeout = 600)
{
    static const unsigned counts[] = { 1, 2 };
    unsigned cycles = (unsigned)wt_scaled(200, 8);
    uint64_t r = wt_seed();
    rng_seed = r;
    for (unsigned c = 0; c < cycles; c++) {
        weft_config cfg;
        weft_config_init(&cfg);
        cfg.workers = wt_workers(counts[c % 2]);
        WT_ASSERT_EQ(weft_sched_create(&cur_s, &cfg), WEFT_OK);
        for (unsigned i = 0; i < NPIPES; i++) {
            WT_ASSERT_EQ(pipe2(fds[i], O_NONBLOCK | O_CLOEXEC), 0);
            next_in[i] = 0;
        }
        atomic_store(&readers_done, 0);
        atomic_store(&forget_stop, false);
        for (unsigned i = 0; i < NPIPES; i++)
            WT_ASSERT_EQ(weft_spawn(cur_s, reader, (void *)(uintptr_t)i), WEFT_OK);
        pthread_t wt, ft;
        uint64_t wr = wt_rand(&r), fr = wt_rand(&r);
        WT_ASSERT_EQ(pthread_create(&wt, NULL, seq_writer, &wr), 0);
        WT_ASSERT_EQ(pthread_create(&ft, NULL, forgetter, &fr), 0);
        pthread_join(wt, NULL);
        usleep((useconds_t)(wt_rand(&r) % 400));
        WT_ASSERT_EQ(weft_sched_destroy(cur_s), WEFT_OK);
        atomic_store(&forget_stop, true);
        pthread_join(ft, NULL);
        WT_ASSERT_EQ(atomic_load(&readers_done), NPIPES);
        for (unsigned i = 0; i < NPIPES; i++) {
            WT_ASSERT_EQ(weft_fd_close(fds[i][0]), WEFT_OK);
            WT_ASSERT_EQ(weft_fd_close(fds[i][1]), WEFT_OK);
        }
    }
    WT_ASSERT_EQ(atomic_load(&bad), 0);
    fprintf(stderr, "stress_io: %u cycles of reads racing %u forgets and destroy, 0 bad\n",
            cycles, atomic_load(&forgets));
}

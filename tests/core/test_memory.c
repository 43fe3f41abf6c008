/* Bounded memory (docs/reliability.md test 29): 10^7 tasks, spawned in
 * bounded waves from tasks and from outside, some of them blocking, leave
 * the resident set where warm-up left it. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "sched_util.h"

/* Resident set in KiB, from /proc/self/statm. */
static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    WT_ASSERT(f != NULL);
    long size = 0, resident = 0;
    WT_ASSERT(fscanf(f, "%ld %ld", &size, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

struct wave { atomic_long left; };

static void child(void *arg)
{
    atomic_fetch_sub_explicit(&((struct wave *)arg)->left, 1, memory_order_release);
}

static bool wave_done(void *arg)
{
    return atomic_load_explicit(&((struct wave *)arg)->left, memory_order_acquire) == 0;
}

static weft_sched *cur;

/* n tasks in waves of 1000, each wave awaited. */
static void spawner(void *arg)
{
    long n = (long)(intptr_t)arg;
    struct wave w;
    for (long done = 0; done < n; done += 1000) {
        atomic_store(&w.left, 1000);
        for (int i = 0; i < 1000; i++)
            WT_ASSERT_EQ(weft_spawn(cur, child, &w), WEFT_OK);
        WT_ASSERT_EQ(weft_wait_until(wave_done, &w), WEFT_OK);
    }
}

static void round_of(long n)
{
    for (int i = 0; i < 4; i++)
        WT_ASSERT_EQ(weft_spawn(cur, spawner, (void *)(intptr_t)(n / 8)), WEFT_OK);
    /* The other half from outside, in waves too. */
    struct wave w;
    for (long done = 0; done < n / 2; done += 1000) {
        atomic_store(&w.left, 1000);
        for (int i = 0; i < 1000; i++)
            WT_ASSERT_EQ(weft_spawn(cur, child, &w), WEFT_OK);
        while (!wave_done(&w))
            sched_yield();
    }
    WT_ASSERT_EQ(weft_sched_wait_idle(cur), WEFT_OK);
}

WT_TEST(memory, t29_rss_flat_over_ten_million_tasks, .timeout = 600)
{
    unsigned counts[] = { 1, 2, 4 };
    long n = (long)wt_scaled(10000000, 200000);
    for (int k = 0; k < 3; k++) {
        cur = make_sched(counts[k]);
        round_of(n / 10);   /* warm-up */
        round_of(n / 10);
        long warm = rss_kib();
        for (int r = 0; r < 5; r++)
            round_of(n / 5);
        long after = rss_kib();
        fprintf(stderr, "%u workers: %ld tasks, RSS %ld KiB after warm-up, %ld KiB after\n",
                counts[k], n, warm, after);
        /* Flat: a few pages of slack for the C library and the kernel; the
         * sanitizers' shadow memory and quarantine move more (their runs
         * are scaled down, so a record leaked per task, 64 bytes, would
         * still be tens of MiB). */
        long slack = wt_scale() < 1.0 ? 8192 : 1024;
        WT_ASSERT(after - warm <= slack, "RSS grew by %ld KiB over %ld tasks at %u workers",
                  after - warm, n, counts[k]);
        WT_ASSERT_EQ(weft_sched_destroy(cur), WEFT_OK);
    }
}

/* sp36 MODE W N [REPS]: N empty tasks spawned with weft_spawn from the
 * main thread, then weft_sched_wait_idle (issue 36, row 3). Public API
 * only, so it builds against any weft of the 0.2 API.
 *   plain   the main thread never bound, W workers
 *   bound   the main thread bound (weft_sched_bind), W workers
 *   none    WEFT_WORKERS_NONE, the main thread bound (W ignored)
 * One warm-up round, then REPS timed rounds (default 5); prints, per
 * round, ns per task of the spawn loop and of spawn + wait, and the
 * medians. Under callgrind (--collect-atstart=no) collection is on around
 * the spawn loops of the timed rounds only, on the main thread: the
 * spawner's instructions, not the workers'.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>
#include <weft.h>

static void nop(void *a) { (void)a; }

static uint64_t now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    const char *mode = argv[1];
    int w = atoi(argv[2]);
    long n = atol(argv[3]);
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    weft_config c;
    weft_config_init(&c);
    c.workers = strcmp(mode, "none") == 0 || w == 0 ? WEFT_WORKERS_NONE : (unsigned)w;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        return 1;
    if (strcmp(mode, "plain") != 0 && weft_sched_bind(s) != WEFT_OK)
        return 1;
    double sp[64], all[64];
    for (int r = 0; r <= reps && r < 64; r++) {
        uint64_t t0 = now();
        if (r)
            CALLGRIND_TOGGLE_COLLECT;
        for (long i = 0; i < n; i++)
            if (weft_spawn(s, nop, NULL) != WEFT_OK)
                abort();
        if (r)
            CALLGRIND_TOGGLE_COLLECT;
        uint64_t t1 = now();
        weft_sched_wait_idle(s);
        uint64_t t2 = now();
        if (r) {
            sp[r - 1] = (double)(t1 - t0) / (double)n;
            all[r - 1] = (double)(t2 - t0) / (double)n;
        }
    }
    if (strcmp(mode, "plain") != 0)
        weft_sched_unbind();
    weft_sched_destroy(s);
    qsort(sp, (size_t)reps, sizeof *sp, cmp);
    qsort(all, (size_t)reps, sizeof *all, cmp);
    printf("%s W=%d n=%ld spawn_ns %.1f total_ns %.1f\n", mode, w, n, sp[reps / 2], all[reps / 2]);
    return 0;
}

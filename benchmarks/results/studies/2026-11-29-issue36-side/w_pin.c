/* Row 2, weft: pinned-task round trip. T workers and the main thread,
 * bound (weft_sched_bind), which pumps weft_pinned_wait_for +
 * weft_pinned_run. A driver task pinned to worker 0 makes N trips a
 * round: it pins a task to the main thread (weft_spawn_ex) and waits on
 * an auto-reset event that task signals. ns per trip, timed by the
 * driver. */
#include <stdbool.h>
#include <stdint.h>
#include <weft.h>
#include "kit.h"

static weft_sched *s;
static int main_id;
static long N, ran;
static weft_event back;
static double trip_ns;
static volatile bool done;

static void far(void *p) { (void)p; ran++; weft_event_signal(&back); }
static void end(void *p) { (void)p; done = true; }

static void driver(void *p)
{
    (void)p;
    weft_spawn_opts o = {.pinned = true, .thread = main_id};
    double t0 = kit_now();
    for (long i = 0; i < N; i++)
        if (weft_spawn_ex(s, far, NULL, &o) != WEFT_OK || weft_event_wait(&back) != WEFT_OK)
            kit_wrong("trip");
    trip_ns = (kit_now() - t0) / N;
    if (weft_spawn_ex(s, end, NULL, &o) != WEFT_OK)
        kit_wrong("end");
}

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, n, R);
    N = n;
    weft_config c;
    weft_config_init(&c);
    c.workers = (unsigned)T;
    if (weft_sched_create(&s, &c) != WEFT_OK || weft_sched_bind(s) != WEFT_OK)
        kit_wrong("create");
    main_id = weft_thread_id();
    weft_event_init(&back, false, false);
    weft_spawn_opts on0 = {.pinned = true, .thread = 0};
    double ns[64];
    for (int r = 0; r <= R; r++) {
        done = false;
        if (weft_spawn_ex(s, driver, NULL, &on0) != WEFT_OK)
            kit_wrong("driver");
        while (!done) {
            if (weft_pinned_wait_for(UINT64_MAX) != WEFT_OK || weft_pinned_run(UINT64_MAX) < 0)
                kit_wrong("pump");
        }
        if (r)
            ns[r - 1] = trip_ns;
    }
    if (ran != N * (R + 1))
        kit_wrong("count");
    printf("weft_pin T=%d %.1f\n", T, kit_median(ns, R));
    weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}

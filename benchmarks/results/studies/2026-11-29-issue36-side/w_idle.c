/* Idle CPU, weft: getrusage of the whole process over S seconds of
 * idleness, as a share of one core.  w_idle T S
 *   workers  T workers idle after a burst of work; main sleeps in
 *            nanosleep (no weft call)
 *   waiter   main (never bound) waits on an event that a task signals
 *            after weft_sleep(S s); the T workers idle beside it */
#include <stdint.h>
#include <sys/resource.h>
#include <weft.h>
#include "kit.h"

static weft_event ev;
static uint64_t sleep_ns;

static double cpu_ns(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e9 + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e3;
}

static void nop(void *p) { (void)p; kit_tick(); }
static void sleeper(void *p) { (void)p; weft_sleep(sleep_ns); weft_event_signal(&ev); }

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 1;
    double S = argc > 2 ? atof(argv[2]) : 3;
    sleep_ns = (uint64_t)(S * 1e9);
    weft_config c;
    weft_config_init(&c);
    c.workers = (unsigned)T;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
        kit_wrong("create");
    for (int i = 0; i < 10000; i++)
        weft_spawn(s, nop, NULL);
    weft_sched_wait_idle(s);
    if (kit_ticks() != 10000)
        kit_wrong("count");
    struct timespec ts = {(time_t)S, (long)((S - (time_t)S) * 1e9)};
    double c0 = cpu_ns(), t0 = kit_now();
    nanosleep(&ts, NULL);
    double c1 = cpu_ns(), t1 = kit_now();
    printf("idle T=%d workers %.4f%%", T, 100 * (c1 - c0) / (t1 - t0));
    weft_event_init(&ev, false, false);
    if (weft_spawn(s, sleeper, NULL) != WEFT_OK)
        kit_wrong("spawn");
    c0 = cpu_ns(), t0 = kit_now();
    if (weft_event_wait(&ev) != WEFT_OK)
        kit_wrong("wait");
    c1 = cpu_ns(), t1 = kit_now();
    printf(" waiter+workers %.4f%% of a core (%.2f s)\n", 100 * (c1 - c0) / (t1 - t0), (t1 - t0) * 1e-9);
    weft_sched_destroy(s);
    return 0;
}

/* Idle CPU of a bound thread waiting for pins, weft: getrusage of the
 * whole process over S seconds, as a share of one core.  w_idle_pin T S
 * Main is bound (weft_sched_bind) beside T idle workers and waits in
 * weft_pinned_wait_for(S s) with nothing pinned: the wait must time out
 * (WEFT_ETIMEDOUT) having used next to no CPU. Then one pin, run by the
 * next wait + run, checks the pump still works. */
#include <stdint.h>
#include <sys/resource.h>
#include <weft.h>
#include "../2026-11-29-issue36-side/kit.h"

static int ran;

static double cpu_ns(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e9 + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e3;
}

static void far(void *p) { (void)p; ran++; }

int main(int argc, char **argv)
{
    int T = argc > 1 ? atoi(argv[1]) : 1;
    double S = argc > 2 ? atof(argv[2]) : 3;
    weft_config c;
    weft_config_init(&c);
    c.workers = (unsigned)T;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || weft_sched_bind(s) != WEFT_OK)
        kit_wrong("create");
    double c0 = cpu_ns(), t0 = kit_now();
    if (weft_pinned_wait_for((uint64_t)(S * 1e9)) != WEFT_ETIMEDOUT)
        kit_wrong("wait");
    double share = (cpu_ns() - c0) / (kit_now() - t0);
    weft_spawn_opts o = {.pinned = true, .thread = weft_thread_id()};
    if (weft_spawn_ex(s, far, NULL, &o) != WEFT_OK || weft_pinned_wait_for(UINT64_MAX) != WEFT_OK ||
        weft_pinned_run(UINT64_MAX) != 1 || ran != 1)
        kit_wrong("pin");
    printf("w_idle_pin T=%d %.4f%% of a core\n", T, share * 100);
    weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}

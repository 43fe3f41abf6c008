/* Row 3, weft: N empty tasks (each only kit_tick) spawned with
 * weft_spawn from the main thread, then weft_sched_wait_idle. ns per task
 * (spawn + wait).
 *   w_spawn T N R [bound|plain]
 *   bound  the main thread bound (weft_sched_bind) and T-1 workers
 *          (WEFT_WORKERS_NONE at T=1): T threads run tasks, main one of
 *          them, as enkiTS's thread 0
 *   plain  the main thread never bound, T workers */
#include <string.h>
#include <weft.h>
#include "kit.h"

static void task(void *a) { (void)a; kit_tick(); }

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    int bound = !(argc > 4 && strcmp(argv[4], "plain") == 0);
    weft_config c;
    weft_config_init(&c);
    unsigned w = bound ? (unsigned)T - 1 : (unsigned)T;
    c.workers = w ? w : WEFT_WORKERS_NONE;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || (bound && weft_sched_bind(s) != WEFT_OK))
        kit_wrong("create");
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            if (weft_spawn(s, task, NULL) != WEFT_OK)
                kit_wrong("spawn");
        if (weft_sched_wait_idle(s) != WEFT_OK)
            kit_wrong("wait");
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("weft_spawn_%s T=%d %.1f\n", bound ? "bound" : "plain", T, kit_median(ns, R));
    if (bound)
        weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}

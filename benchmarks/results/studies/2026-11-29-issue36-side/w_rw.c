/* Row 1, weft: a 32-task chain graph (each task adds one to a counter),
 * N weft_graph_run + weft_graph_wait cycles per round from the main
 * thread, never bound; T workers. ns per cycle.
 *   w_rw T N R [bound]: bound, the main thread bound (weft_sched_bind)
 *   and T-1 workers (WEFT_WORKERS_NONE at T=1): it runs tasks while it
 *   waits, as oneTBB's and enkiTS's main thread do. */
#include <string.h>
#include <weft.h>
#include "kit.h"

static void add(void *a) { (*(volatile long *)a)++; }

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    weft_config c;
    weft_config_init(&c);
    int bound = argc > 4 && strcmp(argv[4], "bound") == 0;
    unsigned w = bound ? (unsigned)T - 1 : (unsigned)T;
    c.workers = w ? w : WEFT_WORKERS_NONE;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || (bound && weft_sched_bind(s) != WEFT_OK))
        kit_wrong("create");
    long cnt = 0;
    weft_graph *g;
    weft_graph_create(&g);
    weft_task *prev = NULL;
    for (int i = 0; i < 32; i++) {
        weft_task *t = weft_graph_add(g, add, &cnt);
        if (prev)
            weft_task_precede(prev, t);
        prev = t;
    }
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            weft_graph_run(s, g);
            if (weft_graph_wait(g) != WEFT_OK)
                kit_wrong("wait");
        }
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("weft_rw T=%d %.1f\n", T, kit_median(ns, R));
    weft_graph_destroy(g);
    if (bound)
        weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}

/* Row 1, weft: a 32-task chain graph (each task adds one to a counter),
 * N weft_graph_run + weft_graph_wait cycles per round from the main
 * thread, never bound; T workers. ns per cycle. */
#include <weft.h>
#include "kit.h"

static void add(void *a) { (*(volatile long *)a)++; }

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    weft_config c;
    weft_config_init(&c);
    c.workers = (unsigned)T;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK)
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
    weft_sched_destroy(s);
    return 0;
}

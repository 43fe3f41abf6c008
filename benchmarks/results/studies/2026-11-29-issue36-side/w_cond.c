/* Row 4, weft: a condition-task loop as a graph, init -> body -> cond,
 * cond -0-> body, cond -1-> done; N iterations a run, one
 * weft_graph_run + weft_graph_wait per round from the main thread (never
 * bound); T workers. ns per iteration.
 *   w_cond T N R [bound]: the main thread bound and T-1 workers, as
 *   w_rw. */
#include <string.h>
#include <weft.h>
#include "kit.h"

static long n, left, body;
static void init(void *p) { (void)p; left = n; }
static void bodyf(void *p) { (void)p; body++; }
static int test(void *p) { (void)p; return --left > 0 ? 0 : 1; }
static void done(void *p) { (void)p; }

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    n = N;
    weft_config c;
    weft_config_init(&c);
    int bound = argc > 4 && strcmp(argv[4], "bound") == 0;
    unsigned w = bound ? (unsigned)T - 1 : (unsigned)T;
    c.workers = w ? w : WEFT_WORKERS_NONE;
    weft_sched *s;
    if (weft_sched_create(&s, &c) != WEFT_OK || (bound && weft_sched_bind(s) != WEFT_OK))
        kit_wrong("create");
    weft_graph *g;
    weft_graph_create(&g);
    weft_task *i = weft_graph_add(g, init, NULL), *d = weft_graph_add(g, done, NULL);
    weft_task *b = weft_graph_add(g, bodyf, NULL), *t = weft_graph_add_cond(g, test, NULL);
    weft_task_precede(i, b);
    weft_task_precede(b, t);
    weft_task_precede(t, b);
    weft_task_precede(t, d);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        weft_graph_run(s, g);
        if (weft_graph_wait(g) != WEFT_OK)
            kit_wrong("wait");
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (body != N * (R + 1))
        kit_wrong("count");
    printf("weft_cond T=%d %.2f\n", T, kit_median(ns, R));
    weft_graph_destroy(g);
    if (bound)
        weft_sched_unbind();
    weft_sched_destroy(s);
    return 0;
}

/* A chain of N plain tasks at 0 workers, this thread bound; the second
 * run counted (CALLGRIND_TOGGLE_COLLECT). Instructions per task: the
 * difference between N = 1000 and N = 2000, divided by 1000. */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "weft.h"
static long cnt;
static void f(void *p) { (void)p; cnt++; }
int main(void)
{
    int n = atoi(getenv("N"));
    weft_config c; weft_config_init(&c); c.workers = WEFT_WORKERS_NONE;
    weft_sched *s; weft_sched_create(&s, &c); weft_sched_bind(s);
    weft_graph *g; weft_graph_create(&g);
    weft_task *prev = NULL;
    for (int i = 0; i < n; i++) { weft_task *t = weft_graph_add(g, f, NULL); if (prev) weft_task_precede(prev, t); prev = t; }
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    printf("%ld\n", cnt);
    weft_graph_destroy(g); weft_sched_unbind(); weft_sched_destroy(s);
    return 0;
}

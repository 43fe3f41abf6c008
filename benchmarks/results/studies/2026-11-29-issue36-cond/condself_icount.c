/* The self-edge form of the condition loop for callgrind, as
 * ../2026-11-29-issue35-subflow/condloop_icount.c is for the two-task
 * form: init -> c, c -0-> c, c -1-> done, ITERS iterations, 0 workers
 * (this thread bound), the second run counted. Instructions per
 * iteration: the difference between ITERS=2000 and 1000, over 1000. */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "weft.h"
static int left, body;
static void init(void *p) { (void)p; left = atoi(getenv("ITERS")); }
static int test(void *p) { (void)p; body++; return --left > 0 ? 0 : 1; }
static void done(void *p) { (void)p; }
int main(void)
{
    weft_config c; weft_config_init(&c); c.workers = WEFT_WORKERS_NONE;
    weft_sched *s; weft_sched_create(&s, &c); weft_sched_bind(s);
    weft_graph *g; weft_graph_create(&g);
    weft_task *i = weft_graph_add(g, init, NULL), *t = weft_graph_add_cond(g, test, NULL),
              *d = weft_graph_add(g, done, NULL);
    weft_task_precede(i, t); weft_task_precede(t, t); weft_task_precede(t, d);
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    printf("body %d\n", body);
    weft_graph_destroy(g); weft_sched_unbind(); weft_sched_destroy(s);
    return 0;
}

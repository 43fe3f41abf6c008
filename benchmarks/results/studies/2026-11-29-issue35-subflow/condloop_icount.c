#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "weft.h"
static int left, body;
static void init(void *p) { (void)p; left = atoi(getenv("ITERS")); }
static void bodyf(void *p) { (void)p; body++; }
static int test(void *p) { (void)p; return --left > 0 ? 0 : 1; }
static void done(void *p) { (void)p; }
int main(void)
{
    weft_config c; weft_config_init(&c); c.workers = WEFT_WORKERS_NONE;
    weft_sched *s; weft_sched_create(&s, &c); weft_sched_bind(s);
    weft_graph *g; weft_graph_create(&g);
    weft_task *i = weft_graph_add(g, init, NULL), *b = weft_graph_add(g, bodyf, NULL),
              *t = weft_graph_add_cond(g, test, NULL), *d = weft_graph_add(g, done, NULL);
    weft_task_precede(i, b); weft_task_precede(b, t); weft_task_precede(t, b); weft_task_precede(t, d);
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    weft_graph_run(s, g); weft_graph_wait(g);
    CALLGRIND_TOGGLE_COLLECT;
    printf("body %d\n", body);
    weft_graph_destroy(g); weft_sched_unbind(); weft_sched_destroy(s);
    return 0;
}

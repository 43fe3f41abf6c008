/* chain_ic N ROUNDS: builds a chain of N tasks, runs it, waits, destroys,
 * ROUNDS times on 1 worker, callgrind collection on around the rounds
 * after a warm-up round. */
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include <weft.h>
static void nop(void *a) { (void)a; }
static void one(weft_sched *s, int n)
{
    weft_graph *g;
    if (weft_graph_create(&g)) exit(1);
    weft_task *prev = NULL;
    for (int i = 0; i < n; i++) {
        weft_task *t = weft_graph_add(g, nop, NULL);
        if (!t) exit(1);
        if (prev && weft_task_precede(prev, t)) exit(1);
        prev = t;
    }
    if (weft_graph_run(s, g) || weft_graph_wait(g)) exit(1);
    weft_graph_destroy(g);
}
int main(int argc, char **argv)
{
    int n = atoi(argv[1]), rounds = atoi(argv[2]);
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    weft_sched *s;
    if (weft_sched_create(&s, &c)) return 1;
    one(s, n);
    CALLGRIND_TOGGLE_COLLECT;
    for (int r = 0; r < rounds; r++)
        one(s, n);
    CALLGRIND_TOGGLE_COLLECT;
    weft_sched_destroy(s);
    printf("ok\n");
    return 0;
}

/* ab32 MODE N ROUNDS: one workload with no workers (the main thread bound:
 * it runs every task, so callgrind, whose collection switch is per
 * thread, counts all of it), collection on around ROUNDS repetitions
 * after a warm-up one. Public API only, so it
 * builds against any weft of the 0.2 API.
 *   chain      a chain of N graph tasks: build, run, wait, destroy
 *   tree       a binary tree of N graph tasks (i precedes 2i+1, 2i+2)
 *   wavefront  an N x N grid ((i,j) precedes (i+1,j) and (i,j+1))
 *   pingpong   two tasks pass a token over two channels N times each way
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
#include <weft.h>

#define CHECK(x) do { if (x) { fprintf(stderr, "failed: %s\n", #x); exit(1); } } while (0)
static void nop(void *a) { (void)a; }

static void graph_round(weft_sched *s, const char *mode, int n)
{
    weft_graph *g;
    CHECK(weft_graph_create(&g));
    int count = strcmp(mode, "wavefront") == 0 ? n * n : n;
    weft_task **t = malloc(sizeof *t * (size_t)count);
    for (int i = 0; i < count; i++) {
        t[i] = weft_graph_add(g, nop, NULL);
        CHECK(!t[i]);
    }
    if (strcmp(mode, "chain") == 0) {
        for (int i = 1; i < n; i++) CHECK(weft_task_precede(t[i - 1], t[i]));
    } else if (strcmp(mode, "tree") == 0) {
        for (int i = 0; i < n; i++) {
            if (2 * i + 1 < n) CHECK(weft_task_precede(t[i], t[2 * i + 1]));
            if (2 * i + 2 < n) CHECK(weft_task_precede(t[i], t[2 * i + 2]));
        }
    } else {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                if (i + 1 < n) CHECK(weft_task_precede(t[i * n + j], t[(i + 1) * n + j]));
                if (j + 1 < n) CHECK(weft_task_precede(t[i * n + j], t[i * n + j + 1]));
            }
    }
    CHECK(weft_graph_run(s, g));
    CHECK(weft_graph_wait(g));
    weft_graph_destroy(g);
    free(t);
}

struct pp { weft_chan *a, *b; int n; weft_waitgroup *wg; };
static void ping(void *arg)
{
    struct pp *p = arg;
    int v = 0;
    for (int i = 0; i < p->n; i++) { CHECK(weft_chan_send(p->a, &v)); CHECK(weft_chan_recv(p->b, &v)); v++; }
    weft_waitgroup_done(p->wg);
}
static void pong(void *arg)
{
    struct pp *p = arg;
    int v;
    for (int i = 0; i < p->n; i++) { CHECK(weft_chan_recv(p->a, &v)); CHECK(weft_chan_send(p->b, &v)); }
    weft_waitgroup_done(p->wg);
}
static void pingpong_round(weft_sched *s, int n)
{
    struct pp p = { .n = n };
    weft_waitgroup wg;
    weft_waitgroup_init(&wg, 2);
    p.wg = &wg;
    CHECK(weft_chan_create(&p.a, sizeof(int), 0));
    CHECK(weft_chan_create(&p.b, sizeof(int), 0));
    CHECK(weft_spawn(s, ping, &p));
    CHECK(weft_spawn(s, pong, &p));
    CHECK(weft_waitgroup_wait(&wg));
    CHECK(weft_sched_wait_idle(s));
    weft_chan_destroy(p.a);
    weft_chan_destroy(p.b);
    weft_waitgroup_destroy(&wg);
}

static void round1(weft_sched *s, const char *mode, int n)
{
    if (strcmp(mode, "pingpong") == 0) pingpong_round(s, n);
    else graph_round(s, mode, n);
}

int main(int argc, char **argv)
{
    if (argc != 4) return 2;
    const char *mode = argv[1];
    int n = atoi(argv[2]), rounds = atoi(argv[3]);
    weft_config c;
    weft_config_init(&c);
    c.workers = WEFT_WORKERS_NONE;
    weft_sched *s;
    CHECK(weft_sched_create(&s, &c));
    CHECK(weft_sched_bind(s));
    round1(s, mode, n);
    CALLGRIND_TOGGLE_COLLECT;
    for (int r = 0; r < rounds; r++) round1(s, mode, n);
    CALLGRIND_TOGGLE_COLLECT;
    weft_sched_unbind();
    CHECK(weft_sched_destroy(s));
    printf("ok\n");
    return 0;
}

/* A user's program that touches every topic header through <weft.h>: a
 * scheduler made from the defaults, a spawned task that sends on a
 * channel, a wait group, a two-task graph, a blocking call, a parallel
 * reduction and a trace. It is written in the common subset of C11 and
 * C++17 (no designated initializers, casts from void *), because
 * tests/consumer/headers.sh builds it as both, with -Wall -Wextra
 * -Wpedantic -Werror, links each against libweft.a and runs it: the C++
 * build is what proves the headers keep C linkage. Exit status 0 when
 * every result is the expected one. */
#include <stdio.h>
#include <string.h>

#include <weft.h>

static int failures = 0;

static void expect(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        fprintf(stderr, "use_all: %s: %s\n", what, weft_err_name(rc));
        failures++;
    }
}

struct producer {
    weft_chan *ch;
    weft_waitgroup *done;
};

static void produce(void *arg)
{
    struct producer *p = (struct producer *)arg;
    int v;

    weft_trace_begin("produce");
    for (v = 1; v <= 3; v++)
        expect(weft_chan_send(p->ch, &v), "weft_chan_send");
    weft_trace_end();
    weft_waitgroup_done(p->done);
}

static void add_one(void *arg)
{
    int *n = (int *)arg;
    (*n)++;
}

static void sum_range(size_t b, size_t e, void *partial, void *arg)
{
    size_t *acc = (size_t *)partial;
    (void)arg;
    for (; b < e; b++)
        *acc += b;
}

static void combine(void *into, const void *from, void *arg)
{
    (void)arg;
    *(size_t *)into += *(const size_t *)from;
}

static char letters[4];

static void *two_on(void *arg)
{
    return (char *)arg + 2;
}

static void one_token(weft_pipe *pf, void *arg)
{
    if (weft_pipe_token(pf) == 1)
        weft_pipe_stop(pf);
    else
        ++*(int *)arg;
}

int main(void)
{
    weft_config cfg;
    weft_sched *s = NULL;
    weft_chan *ch = NULL;
    weft_waitgroup done;
    weft_graph *g = NULL;
    weft_task *a, *b;
    struct producer p;
    int got = 0, v, steps = 0, blocking = 0;
    size_t sum = 0, zero = 0;
    void (*set_allocator)(const weft_allocator *) = weft_set_allocator;

    (void)set_allocator;        /* alloc.h: only named; the default stays */
    weft_config_init(&cfg);
    cfg.workers = 2;
    if (weft_config_check(&cfg) != NULL) {
        fprintf(stderr, "use_all: weft_config_check: %s\n", weft_config_check(&cfg));
        return 1;
    }
    expect(weft_sched_create(&s, &cfg), "weft_sched_create");
    if (s == NULL)
        return 1;
    expect(weft_trace_start(s, 1024), "weft_trace_start");

    /* task.h, chan.h, sync.h */
    expect(weft_chan_create(&ch, sizeof(int), 1), "weft_chan_create");
    weft_waitgroup_init(&done, 1);
    p.ch = ch;
    p.done = &done;
    expect(weft_spawn(s, produce, &p), "weft_spawn");
    while (weft_chan_recv(ch, &v) == WEFT_OK) {
        got += v;
        if (v == 3)
            break;
    }
    expect(weft_waitgroup_wait(&done), "weft_waitgroup_wait");
    weft_waitgroup_destroy(&done);
    weft_chan_close(ch);
    weft_chan_destroy(ch);

    /* graph.h */
    expect(weft_graph_create(&g), "weft_graph_create");
    a = weft_graph_add(g, add_one, &steps);
    b = weft_graph_add(g, add_one, &steps);
    expect(weft_task_precede(a, b), "weft_task_precede");
    expect(weft_graph_run(s, g), "weft_graph_run");
    expect(weft_graph_wait(g), "weft_graph_wait");
    expect(weft_graph_destroy(g), "weft_graph_destroy");

    /* io.h, parallel.h */
    expect(weft_call_blocking(s, add_one, &blocking), "weft_call_blocking");
    expect(weft_parallel_reduce(s, 0, 1000, 10, &sum, sizeof sum, &zero,
                                sum_range, combine, NULL), "weft_parallel_reduce");

    /* flow.h */
    weft_async *h = NULL;
    expect(weft_async_spawn(s, two_on, &letters[1], NULL, 0, &h), "weft_async_spawn");
    expect(weft_async_wait(h), "weft_async_wait");
    if (weft_async_result(h) != &letters[3])
        failures++;
    weft_async_release(h);
    weft_pipe_stage st = { WEFT_PIPE_SERIAL, one_token, &steps };
    weft_pipeline *pl = NULL;
    expect(weft_pipeline_create(2, &st, 1, &pl), "weft_pipeline_create");
    expect(weft_pipeline_run(s, pl), "weft_pipeline_run");
    expect(weft_pipeline_destroy(pl), "weft_pipeline_destroy");
    weft_group gr;
    expect(weft_group_init(&gr, s), "weft_group_init");
    expect(weft_group_spawn(&gr, add_one, &steps), "weft_group_spawn");
    expect(weft_group_join(&gr), "weft_group_join");
    weft_group_destroy(&gr);

    /* trace.h, sched.h */
    expect(weft_trace_stop(s), "weft_trace_stop");
    expect(weft_sched_destroy(s), "weft_sched_destroy");

    if (got != 6 || steps != 4 || blocking != 1 || sum != 499500) {
        fprintf(stderr, "use_all: got %d (want 6), steps %d (4), blocking %d (1), sum %zu (499500)\n",
                got, steps, blocking, sum);
        failures++;
    }
    if (failures == 0)
        printf("use_all: weft %d.%d.%d, every topic header used\n",
               WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
    return failures == 0 ? 0 : 1;
}

/* Task graphs: the DOT dump, task names, and the graph lock: the dump
 * writes without it and the stall report does not wait for it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "weft.h"
#include "wtest.h"
#include "graph.h"   /* the lock, to hold it in a test */
#include "../core/alloc_util.h"
#include "../core/sched_util.h"
#include "graph_util.h"
#include "graph_case_util.h"

/* ---- the DOT dump -------------------------------------------------------------- */

WT_TEST(graph, dot_dump_matches_expected, .timeout = 60)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    weft_task *join = add(g, NULL, NULL), *c = add(g, count, &n);
    weft_task_set_name(a, "load");
    weft_task_set_name(b, "say \"hi\"\\");
    weft_task_set_name(c, "c");
    weft_task_set_name(c, "sum");   /* renaming replaces */
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(a, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, join), WEFT_OK);
    WT_ASSERT_EQ(weft_task_precede(b, join), WEFT_OK);   /* duplicate: one edge */
    WT_ASSERT_EQ(weft_task_succeed(c, join), WEFT_OK);
    const char *built =
        "digraph weft {\n"
        "  t0 [label=\"load\"];\n"
        "  t1 [label=\"say \\\"hi\\\"\\\\\"];\n"
        "  t2 [label=\"task 2\", shape=diamond];\n"
        "  t3 [label=\"sum\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    char *got = dump(g);
    WT_ASSERT(strcmp(got, built) == 0, "before a run, got:\n%s", got);
    free(got);

    /* After a run with b cancelled: a ran; b, the join and c were skipped. */
    WT_ASSERT(weft_task_cancel(b));
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_ECANCELED);
    const char *skipped =
        "digraph weft {\n"
        "  t0 [label=\"load\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t1 [label=\"say \\\"hi\\\"\\\\\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"];\n"
        "  t2 [label=\"task 2\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\", shape=diamond];\n"
        "  t3 [label=\"sum\\nskipped\", style=\"filled,dashed\", fillcolor=\"#dddddd\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    got = dump(g);
    WT_ASSERT(strcmp(got, skipped) == 0, "after a cancelled run, got:\n%s", got);
    free(got);

    /* Reset, run in full: everything ran; names cleared show the index. */
    weft_task_reset(b);
    weft_task_set_name(b, NULL);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    const char *ran =
        "digraph weft {\n"
        "  t0 [label=\"load\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t1 [label=\"task 1\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t2 [label=\"task 2\\nran\", style=filled, fillcolor=\"#b7e4c7\", shape=diamond];\n"
        "  t3 [label=\"sum\\nran\", style=filled, fillcolor=\"#b7e4c7\"];\n"
        "  t0 -> t1;\n"
        "  t0 -> t2;\n"
        "  t1 -> t2;\n"
        "  t2 -> t3;\n"
        "}\n";
    got = dump(g);
    WT_ASSERT(strcmp(got, ran) == 0, "after a full run, got:\n%s", got);
    free(got);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

/* ---- names --------------------------------------------------------------------- */

/* An engine renames its tasks every frame, runs in flight included: the
 * graph must hold about one name per task, not every name it was ever
 * given (each rename took fresh arena memory until destroy: 2.4 MB per
 * 10^5 renames). A failed rename keeps the old name. */
WT_TEST(graph, renaming_keeps_memory_bounded, .timeout = 300)
{
    weft_sched *s = make_sched(2);   /* before the hook: its memory is not counted */
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g = new_graph();
    atomic_int n = 0;
    enum { NT = 8 };
    weft_task *t[NT];
    for (int i = 0; i < NT; i++)
        t[i] = add(g, count, &n);
    for (int i = 1; i < NT; i++)
        WT_ASSERT_EQ(weft_task_precede(t[i - 1], t[i]), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);   /* the check's memory, before the baseline */
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    long base = atomic_load(&a.bytes);

    /* Names of 12 to 80 bytes, growing and shrinking: a block per task of
     * at most 96 bytes, and the table of names (64 pointers). */
    const long bound = NT * 96 + 64 * (long)sizeof(char *);
    static const char pad[] = "................................................................";
    uint64_t renames = wt_scaled(1000000, 100000);
    long most = 0;
    for (uint64_t i = 0; i < renames; i++) {
        if (i % 4096 == 0)
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);   /* renames race the run */
        char name[96];
        snprintf(name, sizeof name, "frame %llu%.*s", (unsigned long long)i,
                 (int)((i * 7) % 64), pad);
        weft_task_set_name(t[i % NT], name);
        long held = atomic_load(&a.bytes) - base;
        if (held > most)
            most = held;
        if (i % 4096 == 4095)
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
        WT_ASSERT(held <= bound, "after %llu renames the graph holds %ld bytes more (bound %ld)",
                  (unsigned long long)i + 1, held, bound);
    }
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);

    /* A rename that cannot allocate keeps the old name. */
    weft_task_set_name(t[0], "old");
    char longer[200];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    walloc_fail_at(&a, 1);
    weft_task_set_name(t[0], longer);
    WT_ASSERT_EQ(atomic_load(&a.failed), 1);
    walloc_fail_at(&a, 0);
    char *got = dump(g);
    WT_ASSERT(strstr(got, "t0 [label=\"old\\nran\"") != NULL, "got:\n%s", got);
    free(got);

    /* Clearing frees. */
    for (int i = 0; i < NT; i++)
        weft_task_set_name(t[i], NULL);
    WT_ASSERT(atomic_load(&a.bytes) - base <= 64 * (long)sizeof(char *),
              "names cleared, still %ld bytes", atomic_load(&a.bytes) - base);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    fprintf(stderr, "renames: %llu, most held beyond the graph %ld bytes\n",
            (unsigned long long)renames, most);
}

#ifndef _WIN32   /* glibc's fopencookie: a stream of the test's own; Windows has none */
/* A stream that takes its time: each write waits until released (or
 * 60 s, then notes it timed out and stops waiting: only a graph that
 * waits for the stream takes that long, never a loaded machine). */
struct slow_stream {
    atomic_int in_write, release, timed_out;
    char text[4096];
    size_t len;
};

static ssize_t slow_write(void *cookie, const char *buf, size_t n)
{
    struct slow_stream *ss = cookie;
    atomic_store(&ss->in_write, 1);
    for (int ms = 0; !atomic_load(&ss->release) && !atomic_load(&ss->timed_out); ms++) {
        if (ms == 60000)
            atomic_store(&ss->timed_out, 1);
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    size_t k = n < sizeof ss->text - 1 - ss->len ? n : sizeof ss->text - 1 - ss->len;
    memcpy(ss->text + ss->len, buf, k);
    ss->len += k;
    return (ssize_t)n;
}

struct dumper {
    weft_graph *g;
    FILE *f;
    int rc;
};

static void *dump_thread(void *p)
{
    struct dumper *d = p;
    d->rc = weft_graph_dump_dot(d->g, d->f);
    return NULL;
}

/* The dump writes to the user's stream without the graph's lock: while
 * it sits in a slow write, the graph runs to its end (which takes the
 * lock), is waited for, renamed and sized. It used to fprintf under the
 * lock, so all of these waited for the stream. */
WT_TEST(graph, dot_dump_writes_without_the_lock, .timeout = 240)
{
    weft_sched *s = make_sched(2);
    weft_graph *g = new_graph();
    atomic_int n = 0;
    weft_task *a = add(g, count, &n), *b = add(g, count, &n);
    WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
    weft_task_set_name(a, "first");
    struct slow_stream ss = { 0 };
    FILE *f = fopencookie(&ss, "w", (cookie_io_functions_t){ .write = slow_write });
    WT_ASSERT(f != NULL);
    setvbuf(f, NULL, _IONBF, 0);   /* every write reaches slow_write at once */
    struct dumper d = { g, f, 1 };
    pthread_t th;
    WT_ASSERT_EQ(pthread_create(&th, NULL, dump_thread, &d), 0);
    for (int ms = 0; !atomic_load(&ss.in_write); ms++) {
        WT_ASSERT(ms < 60000, "the dump never wrote");
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    weft_task_set_name(b, "second");
    WT_ASSERT_EQ(weft_graph_size(g), 2);
    WT_ASSERT(!atomic_load(&ss.timed_out), "the graph waited for the stream: the dump held its lock");
    atomic_store(&ss.release, 1);
    pthread_join(th, NULL);
    fclose(f);
    WT_ASSERT_EQ(d.rc, WEFT_OK);
    WT_ASSERT_EQ(atomic_load(&n), 2);
    const char *want =
        "digraph weft {\n"
        "  t0 [label=\"first\"];\n"
        "  t1 [label=\"task 1\"];\n"
        "  t0 -> t1;\n"
        "}\n";
    WT_ASSERT(strcmp(ss.text, want) == 0, "got:\n%s", ss.text);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}
#endif /* !_WIN32 */

/* A dump of a larger graph, names to be escaped included, is whole. */
WT_TEST(graph, dot_dump_of_a_larger_graph, .timeout = 60)
{
    weft_graph *g = new_graph();
    enum { N = 1000 };
    weft_task *t[N];
    for (int i = 0; i < N; i++) {
        t[i] = add(g, i % 7 ? count : NULL, NULL);
        if (i % 3 == 0) {
            char nm[64];
            snprintf(nm, sizeof nm, "n\"%d\\\n\r", i);
            weft_task_set_name(t[i], nm);
        }
        for (int j = 1; j <= 3 && j <= i; j++)
            WT_ASSERT_EQ(weft_task_precede(t[i - j], t[i]), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_task_precede(t[0], t[1]), WEFT_OK);   /* a duplicate, printed once */
    char *got = dump(g);
    size_t lines = 0;
    for (char *p = got; *p; p++)
        lines += *p == '\n';
    /* head, tail, a line per task, and 3 edges per task from the 4th on (1, 2 before) */
    WT_ASSERT_EQ(lines, 2 + N + (size_t)(3 * (N - 3) + 0 + 1 + 2));
    WT_ASSERT(strstr(got, "  t999 [label=\"n\\\"999\\\\\\n\", shape=diamond];\n") != NULL ||
              strstr(got, "  t999 [label=\"n\\\"999\\\\\\n\"];\n") != NULL, "got:\n%.300s", got);
    WT_ASSERT(strstr(got, "  t998 -> t999;\n}\n") != NULL);
    free(got);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
}

/* Out of memory, the dump writes nothing (and says ENOMEM). */
WT_TEST(graph, dot_dump_out_of_memory_writes_nothing, .timeout = 60)
{
    static walloc a = WALLOC_INIT("graph");
    weft_set_allocator(walloc_hooks(&a));
    weft_graph *g = new_graph();
    weft_task *t0 = add(g, count, NULL), *t1 = add(g, count, NULL);
    WT_ASSERT_EQ(weft_task_precede(t0, t1), WEFT_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    WT_ASSERT(f != NULL);
    walloc_fail_at(&a, 1);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_ENOMEM);
    walloc_fail_at(&a, 0);
    fflush(f);
    WT_ASSERT_EQ(len, 0);
    WT_ASSERT_EQ(weft_graph_dump_dot(g, f), WEFT_OK);
    fclose(f);
    WT_ASSERT(strncmp(buf, "digraph weft {\n", 15) == 0, "got:\n%s", buf);
    free(buf);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    weft_set_allocator(NULL);   /* checked builds give destroyed headers back here */
    WT_ASSERT_EQ(atomic_load(&a.blocks), 0);
}

/* A stall report names a blocked graph task without waiting for the
 * graph's lock: held elsewhere, the report says the name was not read,
 * and comes anyway. It used to wait for the lock, unbounded, holding the
 * worker's fiber-list lock meanwhile. */
struct stall_capture {
    pthread_mutex_t lock;
    char text[8192];
    atomic_int reports;
};

static void on_stall(const char *report, void *ctx)
{
    struct stall_capture *c = ctx;
    pthread_mutex_lock(&c->lock);
    snprintf(c->text, sizeof c->text, "%s", report);
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add(&c->reports, 1);
}

static void wait_ev(void *arg)
{
    weft_event_wait(arg);
}

/* One try: false if the report came before the test held the lock (the
 * test thread was kept off the CPU for a whole watchdog period), which
 * proves nothing either way. */
static bool stall_report_try(struct stall_capture *c)
{
    atomic_store(&c->reports, 0);
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = 1;
    cfg.watchdog_ns = 100 * 1000 * 1000;
    cfg.on_stall = on_stall;
    cfg.hook_ctx = c;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &cfg), WEFT_OK);
    weft_event ev;
    weft_event_init(&ev, true, false);
    weft_graph *g = new_graph();
    weft_task *t = add(g, wait_ev, &ev);
    weft_task_set_name(t, "hangs");
    WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
    while (weft_task_state(t) != WEFT_TASK_RUNNING)
        sched_yield();
    weft__graph_lock(g);
    bool early = atomic_load(&c->reports) != 0;
    int waited = 0;
    while (!early && atomic_load(&c->reports) == 0 && waited < 30000) {   /* 30 s: a report due in 100 ms */
        struct timespec ts = { 0, 1000 * 1000 };
        nanosleep(&ts, NULL);
        waited++;
    }
    int reports = atomic_load(&c->reports);
    weft__graph_unlock(g);
    if (!early) {
        WT_ASSERT(reports > 0, "no stall report in 30 s while the graph's lock was held");
        pthread_mutex_lock(&c->lock);
        bool busy = strstr(c->text, "graph task #0, name not read: graph busy") != NULL;
        pthread_mutex_unlock(&c->lock);
        WT_ASSERT(busy, "report:\n%s", c->text);
    }
    weft_event_signal(&ev);
    WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
    weft_event_destroy(&ev);
    return !early;
}

WT_TEST(graph, stall_report_does_not_wait_for_the_graph_lock, .timeout = 240)
{
    static struct stall_capture c = { .lock = PTHREAD_MUTEX_INITIALIZER };
    int tries = 0;
    while (!stall_report_try(&c))
        WT_ASSERT(++tries < 5, "the stall report came before the lock was taken, %d times", tries);
}

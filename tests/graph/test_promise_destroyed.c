/* What weft.h promises of a graph used after weft_graph_destroy (issue
 * 30, finding 17): in a checked build (WEFT_CHECKS, the asan and tsan
 * presets; any build without NDEBUG) a call on the destroyed graph, or on
 * one of its tasks, aborts with a message naming the graph, as calls on
 * destroyed sync primitives do; it does not read freed memory. In a
 * release build such a use is undefined, and these cases are disabled.
 *
 *   after_destroy_<call>   one public call after destroy: the process
 *                          dies of SIGABRT (Criterion's .signal; the plain
 *                          runner checks it too)
 *   message_names_the_graph  a child makes the same mistake with its
 *                          stderr on a pipe: the message says
 *                          "graph 0x... used after it was destroyed",
 *                          with the graph's address
 *   destroy_then_new_graphs  many graphs destroyed and made after one
 *                          kept dead (the quarantine turns over) never
 *                          abort a live graph's calls
 *
 * Before the fix each after_destroy_ case was a heap-use-after-free under
 * ASan (the header freed at destroy), or, where the memory had been
 * reused, no report at all; message_names_the_graph got no message. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft.h"
#include "wtest.h"
#include "base.h"   /* WEFT_DEBUG: a checked build */

#ifdef WEFT_DEBUG
# define CHECKED_ONLY .signal = SIGABRT
#else
# define CHECKED_ONLY .disabled = true
#endif

static void nop(void *arg)
{
    (void)arg;
}

/* A graph of two tasks a -> b, destroyed; *a and *b are its tasks. */
static weft_graph *dead_graph(weft_task **a, weft_task **b)
{
    weft_graph *g = NULL;
    WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
    weft_task *x = weft_graph_add(g, nop, NULL);
    weft_task *y = weft_graph_add(g, nop, NULL);
    WT_ASSERT(x && y);
    WT_ASSERT_EQ(weft_task_precede(x, y), WEFT_OK);
    WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    if (a)
        *a = x;
    if (b)
        *b = y;
    return g;
}

WT_TEST(promise_destroyed, after_destroy_add, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    weft_graph_add(g, nop, NULL);
}

WT_TEST(promise_destroyed, after_destroy_add_task, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    weft_task *t = NULL;
    weft_graph_add_task(g, nop, NULL, &t);
}

WT_TEST(promise_destroyed, after_destroy_destroy, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    weft_graph_destroy(g);
}

WT_TEST(promise_destroyed, after_destroy_size, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    (void)weft_graph_size(g);
}

WT_TEST(promise_destroyed, after_destroy_wait, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    weft_graph_wait(g);
}

WT_TEST(promise_destroyed, after_destroy_run, CHECKED_ONLY, .timeout = 60)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 1;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    weft_graph *g = dead_graph(NULL, NULL);
    weft_graph_run(s, g);
}

WT_TEST(promise_destroyed, after_destroy_cancel, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    weft_graph_cancel(g);
}

WT_TEST(promise_destroyed, after_destroy_failed_task, CHECKED_ONLY, .timeout = 60)
{
    weft_graph *g = dead_graph(NULL, NULL);
    (void)weft_graph_failed_task(g);
}

WT_TEST(promise_destroyed, after_destroy_task_precede, CHECKED_ONLY, .timeout = 60)
{
    weft_task *a, *b;
    dead_graph(&a, &b);
    weft_task_precede(b, a);
}

WT_TEST(promise_destroyed, after_destroy_task_state, CHECKED_ONLY, .timeout = 60)
{
    weft_task *a;
    dead_graph(&a, NULL);
    (void)weft_task_state(a);
}

WT_TEST(promise_destroyed, after_destroy_task_cancel, CHECKED_ONLY, .timeout = 60)
{
    weft_task *a;
    dead_graph(&a, NULL);
    (void)weft_task_cancel(a);
}

WT_TEST(promise_destroyed, after_destroy_task_reset, CHECKED_ONLY, .timeout = 60)
{
    weft_task *a;
    dead_graph(&a, NULL);
    weft_task_reset(a);
}

WT_TEST(promise_destroyed, after_destroy_task_set_name, CHECKED_ONLY, .timeout = 60)
{
    weft_task *a;
    dead_graph(&a, NULL);
    weft_task_set_name(a, "late");
}

#ifdef WEFT_DEBUG
# define CHECKED_RUN .timeout = 60
#else
# define CHECKED_RUN .disabled = true
#endif

/* The message: a child calls weft_graph_add on a dead graph with its
 * stderr on a pipe; the parent reads what it said and how it ended. */
WT_TEST(promise_destroyed, message_names_the_graph, CHECKED_RUN)
{
    int fds[2];
    WT_ASSERT_EQ(pipe(fds), 0);
    weft_graph *g = dead_graph(NULL, NULL);
    fflush(stderr);
    pid_t pid = fork();
    WT_ASSERT(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        signal(SIGABRT, SIG_DFL);
        weft_graph_add(g, nop, NULL);
        _exit(0);   /* not reached in a checked build */
    }
    close(fds[1]);
    char buf[1024];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fds[0]);
    int st = 0;
    WT_ASSERT_EQ(waitpid(pid, &st, 0), pid);
    WT_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "child status 0x%x, said: %s", st, buf);
    char want[64];
    snprintf(want, sizeof want, "graph %p used after it was destroyed", (void *)g);
    WT_ASSERT(strstr(buf, want) != NULL, "the message \"%s\" does not say \"%s\"", buf, want);
}

/* The quarantine turns over: after more destroys than it holds, live
 * graphs (some at addresses of freed headers) work, and no live call
 * aborts. Every build. */
WT_TEST(promise_destroyed, destroy_then_new_graphs, .timeout = 120)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = 2;
    weft_sched *s = NULL;
    WT_ASSERT_EQ(weft_sched_create(&s, &c), WEFT_OK);
    for (unsigned i = 0; i < 10000; i++) {
        weft_graph *g = NULL;
        WT_ASSERT_EQ(weft_graph_create(&g), WEFT_OK);
        weft_task *a = weft_graph_add(g, nop, NULL);
        weft_task *b = weft_graph_add(g, nop, NULL);
        WT_ASSERT(a && b);
        WT_ASSERT_EQ(weft_task_precede(a, b), WEFT_OK);
        if (i % 64 == 0) {
            WT_ASSERT_EQ(weft_graph_run(s, g), WEFT_OK);
            WT_ASSERT_EQ(weft_graph_wait(g), WEFT_OK);
            WT_ASSERT_EQ(weft_task_state(b), WEFT_TASK_DONE);
        }
        WT_ASSERT_EQ(weft_graph_destroy(g), WEFT_OK);
    }
    WT_ASSERT_EQ(weft_sched_destroy(s), WEFT_OK);
}

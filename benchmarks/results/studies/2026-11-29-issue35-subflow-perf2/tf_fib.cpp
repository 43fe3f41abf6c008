// One-off: recursive subflow fib(22), weft vs Taskflow vs oneTBB, same process.
// Each call of a subflow adds two subflow children (n-1, n-2) and a sum task after them.
#include <taskflow/taskflow.hpp>
#include <tbb/task_group.h>
#include <tbb/task_arena.h>
#include <atomic>
#include <vector>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "weft.h"

struct Fib { int n; long r; Fib *kids; };
static std::vector<Fib> pool;
static std::atomic<size_t> used;
static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

// ---- weft
static void w_sum(void *a) { Fib *f = (Fib *)a; f->r = f->kids[0].r + f->kids[1].r; }
static void w_sf(weft_subflow *sf, void *a) {
    Fib *f = (Fib *)a;
    if (f->n < 2) { f->r = f->n; return; }
    size_t k = used.fetch_add(2, std::memory_order_relaxed);
    f->kids = &pool[k];
    f->kids[0] = Fib{f->n - 1, 0, nullptr}; f->kids[1] = Fib{f->n - 2, 0, nullptr};
    weft_task *x = weft_subflow_add_subflow(sf, w_sf, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, w_sf, &f->kids[1]);
    weft_task *s = weft_subflow_add(sf, w_sum, f);
    weft_task_precede(x, s); weft_task_precede(y, s);
}
// ---- Taskflow subflow
static void t_sf(tf::Subflow &sf, Fib *f) {
    if (f->n < 2) { f->r = f->n; return; }
    size_t k = used.fetch_add(2, std::memory_order_relaxed);
    f->kids = &pool[k];
    f->kids[0] = Fib{f->n - 1, 0, nullptr}; f->kids[1] = Fib{f->n - 2, 0, nullptr};
    Fib *a = &f->kids[0], *b = &f->kids[1];
    auto x = sf.emplace([a](tf::Subflow &s) { t_sf(s, a); });
    auto y = sf.emplace([b](tf::Subflow &s) { t_sf(s, b); });
    auto s = sf.emplace([f] { f->r = f->kids[0].r + f->kids[1].r; });
    s.succeed(x, y);
}
// ---- oneTBB task_group
static long b_fib(int n) {
    if (n < 2) return n;
    long a, b; tbb::task_group g;
    g.run([&] { a = b_fib(n - 1); }); b = b_fib(n - 2); g.wait();
    return a + b;
}
// ---- Taskflow TaskGroup (its own fib kernel's shape)
static long tg_fib(int n, tf::Executor &ex) {
    if (n < 2) return n;
    long a, b; tf::TaskGroup tg = ex.task_group();
    tg.silent_async([&] { a = tg_fib(n - 1, ex); }); b = tg_fib(n - 2, ex); tg.corun();
    return a + b;
}

template <class F> static double median_ms(F f) {
    std::vector<double> v;
    for (int r = 0; r < 5; r++) {
        double best = 1e30;
        for (int i = 0; i < 10; i++) {   // each repetition: the best of 10 runs
            auto a = std::chrono::steady_clock::now(); f(); auto b = std::chrono::steady_clock::now();
            best = std::min(best, std::chrono::duration<double, std::milli>(b - a).count());
        }
        v.push_back(best);
    }
    std::sort(v.begin(), v.end()); return v[2];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 22;
    long want = fib_seq(n);
    pool.resize(1 << 22);
    for (unsigned th : {1u, 2u}) {
        weft_config c; weft_config_init(&c); c.workers = th;
        weft_sched *s; weft_sched_create(&s, &c);
        weft_graph *g; weft_graph_create(&g);
        Fib top{n, 0, nullptr};
        weft_graph_add_subflow(g, w_sf, &top);
        bool bad = false;
        double w = median_ms([&] { used = 0; top = Fib{n, 0, nullptr}; weft_graph_run(s, g); weft_graph_wait(g); bad |= top.r != want; });
        weft_graph_destroy(g); weft_sched_destroy(s);

        if (getenv("WEFT_ONLY")) { printf("weft only th %u: %.2f ms\n", th, w); continue; }
        tf::Executor ex(th);
        tf::Taskflow flow; Fib ttop{n, 0, nullptr};
        flow.emplace([&](tf::Subflow &sf) { t_sf(sf, &ttop); });
        double t = median_ms([&] { used = 0; ttop = Fib{n, 0, nullptr}; ex.run(flow).wait(); bad |= ttop.r != want; });
        double tg = median_ms([&] { long r = ex.async([&] { return tg_fib(n, ex); }).get(); bad |= r != want; });

        tbb::task_arena arena((int)th);
        double b = median_ms([&] { long r = 0; arena.execute([&] { r = b_fib(n); }); bad |= r != want; });
        printf("fib(%d) threads %u: weft subflow %.2f ms, Taskflow subflow %.2f ms, Taskflow TaskGroup %.2f ms, oneTBB task_group %.2f ms; weft/Taskflow-subflow %.2fx, weft/oneTBB %.2fx%s\n",
               n, th, w, t, tg, b, w / t, w / b, bad ? "  WRONG" : "");
    }
}

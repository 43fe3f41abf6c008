// bench_subflow: graphs that build themselves as they run (issue 35) and
// the condition-task forms added with them, against oneTBB in the same
// process.
//
//   subflow_fib<N>_t<T>/weft           fib(N) as a graph of one subflow
//                                      task, each call a subflow task that
//                                      adds two subflow tasks (n-1, n-2)
//                                      and a sum task after them; no
//                                      fiber waits anywhere. One run per
//                                      iteration; the graph and every
//                                      nested sub-graph keep their memory
//                                      between runs (steady state).
//   subflow_fib<N>_t<T>/weft_join      the same with an explicit
//                                      weft_subflow_join in each call (the
//                                      fiber waits), Taskflow's sf.join().
//   subflow_fib<N>_t<T>/tbb            tbb::task_group: run(n-1), n-2
//                                      inline, wait; the baseline.
//   multicond_t<T>/weft                10^5 iterations of a loop whose
//                                      multi-condition task picks two
//                                      bodies, joined by a condition that
//                                      loops back: items are iterations.
//
// items_per_second counts calls of fib for the fib rows (every subflow
// task, leaves included: 2 F(N+1) - 1 of them). Each row checks its
// result and marks the case failed (SkipWithError, "WRONG") if not.
// T = 0 is no worker: this thread is bound and runs the tasks while it
// waits.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include "bench_main.hh"
#include "weft.h"

namespace {

weft_sched *make_sched(benchmark::State &st, unsigned threads) {
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = threads ? threads : WEFT_WORKERS_NONE;
    weft_sched *s = nullptr;
    if (weft_sched_create(&s, &cfg) != WEFT_OK) {
        st.SkipWithError("weft_sched_create failed");
        return nullptr;
    }
    if (!threads && weft_sched_bind(s) != WEFT_OK) {
        st.SkipWithError("weft_sched_bind failed");
        weft_sched_destroy(s);
        return nullptr;
    }
    return s;
}

void close_sched(weft_sched *s, unsigned threads) {
    if (!threads)
        weft_sched_unbind();
    weft_sched_destroy(s);
}

long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }
long fib_calls(int n) { return n < 2 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2); }

// ---- subflow fib -------------------------------------------------------------

struct Fib {
    int n;
    long r;
    Fib *kids;
};

struct FibPool {
    std::vector<Fib> nodes;
    std::atomic<size_t> used{0};
    bool join = false;
    std::atomic<bool> bad{false};
};

FibPool *g_pool;

void fib_sum(void *a) {
    Fib *f = static_cast<Fib *>(a);
    f->r = f->kids[0].r + f->kids[1].r;
}

void fib_sf(weft_subflow *sf, void *a) {
    Fib *f = static_cast<Fib *>(a);
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    size_t k = g_pool->used.fetch_add(2, std::memory_order_relaxed);
    if (k + 2 > g_pool->nodes.size()) {
        g_pool->bad = true;
        return;
    }
    f->kids = &g_pool->nodes[k];
    f->kids[0] = Fib{f->n - 1, 0, nullptr};
    f->kids[1] = Fib{f->n - 2, 0, nullptr};
    weft_task *x = weft_subflow_add_subflow(sf, fib_sf, &f->kids[0]);
    weft_task *y = weft_subflow_add_subflow(sf, fib_sf, &f->kids[1]);
    if (g_pool->join) {
        if (!x || !y || weft_subflow_join(sf) != WEFT_OK)
            g_pool->bad = true;
        f->r = f->kids[0].r + f->kids[1].r;
        return;
    }
    weft_task *sum = weft_subflow_add(sf, fib_sum, f);
    if (!x || !y || !sum || weft_task_precede(x, sum) != WEFT_OK || weft_task_precede(y, sum) != WEFT_OK)
        g_pool->bad = true;
}

void bench_weft_fib(benchmark::State &st, int n, unsigned threads, bool join) {
    weft_sched *s = make_sched(st, threads);
    if (!s)
        return;
    FibPool pool;
    pool.nodes.resize(size_t(fib_calls(n)) + 2);
    pool.join = join;
    g_pool = &pool;
    Fib top{n, 0, nullptr};
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    weft_graph_add_subflow(g, fib_sf, &top);
    long want = fib_seq(n);
    auto one = [&] {
        pool.used = 0;
        top = Fib{n, 0, nullptr};
        if (weft_graph_run(s, g) != WEFT_OK || weft_graph_wait(g) != WEFT_OK || top.r != want || pool.bad)
            return false;
        return true;
    };
    if (!one())   // the first run makes every sub-graph: not timed
        st.SkipWithError("WRONG: subflow fib");
    for (auto _ : st)
        if (!one()) {
            st.SkipWithError("WRONG: subflow fib");
            break;
        }
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_calls(n));
    weft_graph_destroy(g);
    close_sched(s, threads);
}

long tbb_fib(int n) {
    if (n < 2)
        return n;
    long x = 0;
    tbb::task_group tg;
    tg.run([&] { x = tbb_fib(n - 1); });
    long y = tbb_fib(n - 2);
    tg.wait();
    return x + y;
}

void bench_tbb_fib(benchmark::State &st, int n, unsigned threads) {
    // oneTBB counts the calling thread: T workers and the caller waiting
    // in it are T + 1 threads, as weft's T workers and a caller asleep in
    // weft_graph_wait (T = 0: the caller alone, as weft's bound thread).
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads + 1);
    tbb::task_arena arena(int(threads) + 1);
    long want = fib_seq(n);
    for (auto _ : st) {
        long r = 0;
        arena.execute([&] { r = tbb_fib(n); });
        if (r != want) {
            st.SkipWithError("WRONG: tbb fib");
            break;
        }
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_calls(n));
    st.SetLabel("baseline");
}

// ---- a multi-condition loop --------------------------------------------------------

constexpr long kMcIters = 100000;

struct Mc {
    long left = 0;
    std::atomic<long> a{0}, b{0};
};

void mc_init(void *p) { static_cast<Mc *>(p)->left = kMcIters; }
size_t mc_pick(void *p, int *picks, size_t) {
    Mc *m = static_cast<Mc *>(p);
    if (m->left-- > 0) {
        picks[0] = 0;
        picks[1] = 1;
        return 2;
    }
    picks[0] = 2;
    return 1;
}
void mc_a(void *p) { static_cast<Mc *>(p)->a.fetch_add(1, std::memory_order_relaxed); }
void mc_b(void *p) { static_cast<Mc *>(p)->b.fetch_add(1, std::memory_order_relaxed); }
int mc_back(void *) { return 0; }

void bench_weft_multicond(benchmark::State &st, unsigned threads) {
    weft_sched *s = make_sched(st, threads);
    if (!s)
        return;
    Mc m;
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    weft_task *init = weft_graph_add(g, mc_init, &m), *pick = weft_graph_add_multi_cond(g, mc_pick, &m),
              *a = weft_graph_add(g, mc_a, &m), *b = weft_graph_add(g, mc_b, &m),
              *done = weft_graph_add(g, nullptr, nullptr), *back = weft_graph_add_cond(g, mc_back, nullptr);
    weft_task_precede(init, pick);
    weft_task_precede(pick, a);
    weft_task_precede(pick, b);
    weft_task_precede(pick, done);
    weft_task_precede(a, back);
    weft_task_precede(b, back);
    weft_task_precede(back, pick);
    weft_graph_run(s, g);
    weft_graph_wait(g);
    for (auto _ : st) {
        long before = m.a;
        weft_graph_run(s, g);
        weft_graph_wait(g);
        if (m.a - before != kMcIters) {
            st.SkipWithError("WRONG: the loop did not run its count");
            break;
        }
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kMcIters);
    weft_graph_destroy(g);
    close_sched(s, threads);
}

}  // namespace

int main(int argc, char **argv) {
    constexpr int kFibN = 22;
    for (unsigned t : {0u, 1u, 2u}) {
        std::string at = "subflow_fib" + std::to_string(kFibN) + "_t" + std::to_string(t);
        benchmark::RegisterBenchmark((at + "/weft").c_str(),
            [t](benchmark::State &st) { bench_weft_fib(st, kFibN, t, false); })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((at + "/weft_join").c_str(),
            [t](benchmark::State &st) { bench_weft_fib(st, kFibN, t, true); })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((at + "/tbb").c_str(),
            [t](benchmark::State &st) { bench_tbb_fib(st, kFibN, t); })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("multicond_t" + std::to_string(t) + "/weft").c_str(),
            [t](benchmark::State &st) { bench_weft_multicond(st, t); })->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    return weft_bench_run(argc, argv);
}

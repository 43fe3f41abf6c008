// Waiting from a thread that is not one of the scheduler's (issue 36,
// row 1): "rw32_t<W>/<system>", a chain of 32 tasks (each adds one to a
// counter; the edges order them) built once and run kRwBatch times per
// iteration, each run followed by a wait for its end, on W workers:
//   weft   weft_graph_run + weft_graph_wait from the benchmark thread,
//          never bound (a plain thread's wait: spin, then sleep)
//   tbb    oneTBB flow graph: a chain of 32 continue_nodes, try_put to the
//          first and wait_for_all, from the same kind of thread
// items_per_second counts runs (cycles). After the timed loop each case
// checks the counter: 32 per run.
//
// What a cycle costs is mostly the hand-off at its two ends: the run's
// first task reaching a worker, and the run's end reaching the waiter. A
// waiter that sleeps in the kernel pays a futex wake and a wake-up
// latency per cycle; one that is still spinning pays a cache-line
// transfer. On a loaded machine, spinning takes the CPU a worker needs:
// weft's waiter learns that from its own waits (src/fiber/wait.c).

#include "bench_main.hh"
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include <tbb/flow_graph.h>
#include <tbb/global_control.h>

namespace {

constexpr int kRwTasks = 32;
constexpr long kRwBatch = 1000;

void bump(void *p) { ++*static_cast<long *>(p); }

void BM_weft_rw(benchmark::State &st, unsigned workers)
{
    weft_sched *s = weft_bench_sched("bench_wait", workers);
    long count = 0;
    weft_graph *g = nullptr;
    weft_bench_check("bench_wait", weft_graph_create(&g), "weft_graph_create");
    weft_task *prev = nullptr;
    for (int i = 0; i < kRwTasks; i++) {
        weft_task *t = weft_graph_add(g, bump, &count);
        if (prev) weft_bench_check("bench_wait", weft_task_precede(prev, t), "weft_task_precede");
        prev = t;
    }
    long runs = 0;
    for (auto _ : st) {
        for (long k = 0; k < kRwBatch; k++) {
            weft_graph_run(s, g);
            weft_graph_wait(g);
        }
        runs += kRwBatch;
    }
    st.SetItemsProcessed(int64_t(runs));
    if (count != long(kRwTasks) * runs) st.SkipWithError("WRONG: a task did not run once per run");
    weft_graph_destroy(g);
    weft_sched_destroy(s);
}

void BM_tbb_rw(benchmark::State &st, unsigned workers)
{
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    // As bench_graph's rows: oneTBB's parallelism is t, the waiting thread
    // included (it runs tasks while it waits; at t1 it runs them all).
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, workers);
    long count = 0;
    flow::graph g;
    std::vector<std::unique_ptr<node_t>> t;
    for (int i = 0; i < kRwTasks; i++) {
        t.push_back(std::make_unique<node_t>(g, [&count](const flow::continue_msg &) { ++count; }));
        if (i) flow::make_edge(*t[i - 1], *t[i]);
    }
    long runs = 0;
    for (auto _ : st) {
        for (long k = 0; k < kRwBatch; k++) {
            t[0]->try_put(flow::continue_msg());
            g.wait_for_all();
        }
        runs += kRwBatch;
    }
    st.SetItemsProcessed(int64_t(runs));
    if (count != long(kRwTasks) * runs) st.SkipWithError("WRONG: a task did not run once per run");
    st.SetLabel("baseline");
}

}  // namespace

int main(int argc, char **argv)
{
    for (unsigned w : {1u, 2u}) {
        std::string g = "rw32_t" + std::to_string(w);
        benchmark::RegisterBenchmark((g + "/weft").c_str(),
            [w](benchmark::State &st) { BM_weft_rw(st, w); })->UseRealTime();
        benchmark::RegisterBenchmark((g + "/tbb").c_str(),
            [w](benchmark::State &st) { BM_tbb_rw(st, w); })->UseRealTime();
    }
    return weft_bench_run(argc, argv);
}

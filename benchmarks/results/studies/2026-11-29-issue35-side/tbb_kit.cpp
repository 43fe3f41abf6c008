// oneTBB, every row it has: `tbb_kit KERNEL T R [LINES]`, KERNEL one of
// fib, chain, wave, pipe, transform, scan, sort; global_control and a
// task_arena of T threads, the main thread one of them (it runs tasks in
// its waits). The baselines of weft's suite:
//   fib     task_group: run(n-1), n-2 inline, wait (bench_subflow.cc).
//   chain, wave: oneTBB has no dependent async; as bench_flow.cc, a flow
//           graph of continue_nodes, an edge per dependency, built,
//           run, waited for and destroyed every round.
//   pipe    parallel_pipeline, max live tokens = LINES, filters
//           serial_in_order, parallel, serial_in_order, parallel.
//   transform parallel_for (auto partitioner) over a blocked_range,
//           bench_algo's chunk loop; scan parallel_scan with the shared
//           body (kit_scan_range); sort parallel_sort.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <functional>
#include <memory>
#include <vector>

#include "kit.h"

namespace tbb = oneapi::tbb;
namespace flow = oneapi::tbb::flow;
using node_t = flow::continue_node<flow::continue_msg>;

namespace {

long fib(int n)
{
    if (n < 2)
        return n;
    long x = 0;
    tbb::task_group tg;
    tg.run([&] { x = fib(n - 1); });
    long y = fib(n - 2);
    tg.wait();
    return x + y;
}

}  // namespace

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, K, T, R, L);
    std::string k = K;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, size_t(T));
    tbb::task_arena arena(T);
    std::function<void()> prep = [] {}, run, check;
    long top = 0;
    std::vector<uint64_t> val;
    std::vector<std::unique_ptr<node_t>> nodes;
    uint64_t sum = 0;
    std::vector<double> x, y;
    std::vector<uint64_t> keys, work;
    uint64_t fp[2] = {0, 0};

    if (k == "fib") {
        run = [&] { top = fib(KIT_FIB); };
        check = [&] {
            if (top != kit_fib_seq(KIT_FIB))
                kit_wrong("fib");
            top = 0;
        };
    } else if (k == "chain") {
        val.assign(KIT_CHAIN, 0);
        nodes.reserve(KIT_CHAIN);
        run = [&] {
            flow::graph g;
            uint64_t *v = val.data();
            for (uint32_t i = 0; i < KIT_CHAIN; i++) {
                nodes.push_back(std::make_unique<node_t>(g, [v, i](const flow::continue_msg &) { kit_chain_step(v, i); }));
                if (i)
                    flow::make_edge(*nodes[i - 1], *nodes[i]);
            }
            nodes[0]->try_put(flow::continue_msg());
            g.wait_for_all();
            nodes.clear();
        };
        check = [&] {
            if (val[KIT_CHAIN - 1] != kit_chain_ref())
                kit_wrong("chain");
            std::fill(val.begin(), val.end(), 0);
        };
    } else if (k == "wave") {
        const uint32_t n = KIT_SIDE * KIT_SIDE;
        val.assign(n, 0);
        nodes.reserve(n);
        run = [&] {
            flow::graph g;
            uint64_t *v = val.data();
            for (uint32_t i = 0; i < KIT_SIDE; i++)
                for (uint32_t j = 0; j < KIT_SIDE; j++) {
                    nodes.push_back(std::make_unique<node_t>(g, [v, i, j](const flow::continue_msg &) { kit_wave_step(v, i, j); }));
                    if (i)
                        flow::make_edge(*nodes[(i - 1) * KIT_SIDE + j], *nodes.back());
                    if (j)
                        flow::make_edge(*nodes[i * KIT_SIDE + j - 1], *nodes.back());
                }
            nodes[0]->try_put(flow::continue_msg());
            g.wait_for_all();
            nodes.clear();
        };
        check = [&] {
            if (val[n - 1] != kit_wave_ref())
                kit_wrong("wave");
            std::fill(val.begin(), val.end(), 0);
        };
    } else if (k == "pipe") {
        run = [&] {
            uint64_t next = 0;
            sum = 0;
            tbb::parallel_pipeline(
                L,
                tbb::make_filter<void, uint64_t>(tbb::filter_mode::serial_in_order,
                                                 [&](tbb::flow_control &fc) -> uint64_t {
                                                     if (next == KIT_TOKENS) {
                                                         fc.stop();
                                                         return 0;
                                                     }
                                                     return next++;
                                                 }) &
                    tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::parallel,
                                                         [](uint64_t v) { return kit_stage(v, 1); }) &
                    tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::serial_in_order,
                                                         [](uint64_t v) { return kit_stage(v, 2); }) &
                    tbb::make_filter<uint64_t, void>(tbb::filter_mode::parallel, [&](uint64_t v) {
                        __atomic_fetch_add(&sum, kit_stage(v, 3), __ATOMIC_RELAXED);
                    }));
        };
        check = [&] {
            static uint64_t want = kit_pipe_ref();
            if (sum != want)
                kit_wrong("pipe");
        };
    } else if (k == "transform" || k == "scan" || k == "sort") {
        x.resize(KIT_N), y.resize(KIT_N), keys.resize(KIT_N), work.resize(KIT_N);
        kit_fill(x.data(), keys.data());
        kit_keys_print(keys.data(), fp);
        if (k == "sort") {
            prep = [&] { std::copy(keys.begin(), keys.end(), work.begin()); };
            run = [&] { tbb::parallel_sort(work.begin(), work.end()); };
            check = [&] { kit_check_sort(work.data(), fp); };
        } else {
            prep = [&] { std::fill(y.begin(), y.end(), -1.0); };
            if (k == "transform") {
                run = [&] {
                    tbb::parallel_for(tbb::blocked_range<size_t>(0, KIT_N), [&](const tbb::blocked_range<size_t> &r) {
                        kit_axpb(x.data() + r.begin(), y.data() + r.begin(), r.size());
                    });
                };
                check = [&] { kit_check_transform(x.data(), y.data()); };
            } else {
                run = [&] {
                    tbb::parallel_scan(
                        tbb::blocked_range<size_t>(0, KIT_N), 0.0,
                        [&](const tbb::blocked_range<size_t> &r, double acc, bool final) {
                            return kit_scan_range(x.data(), y.data(), r.begin(), r.end(), acc, final);
                        },
                        [](double a, double b) { return a + b; });
                };
                check = [&] { kit_check_scan(x.data(), y.data()); };
            }
        }
    } else {
        kit_wrong("kernel: fib chain wave pipe transform scan sort");
    }
    double ms[64];
    for (int r = 0; r <= R; r++) {
        prep();
        double t0 = kit_now(), t1;
        arena.execute([&] { run(); });
        t1 = kit_now();
        check();
        if (r)
            ms[r - 1] = t1 - t0;
    }
    std::printf("tbb_kit %s T=%d L=%u %.3f\n", K, T, L, kit_median(ms, R));
    return 0;
}

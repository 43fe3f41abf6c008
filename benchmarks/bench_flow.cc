// Dependent async tasks and pipelines (weft/flow.h) beside oneTBB, in one
// binary, on the same work.
//
// Groups are "<shape>_t<threads>/<system>": weft and tbb (the baseline,
// labelled so); items_per_second counts tasks (async rows) or tokens
// (pipeline rows).
//
//   async_chain_10^5      10^5 dependent asyncs, each after the one before,
//                         spawned by the calling thread, which then waits
//                         for the last. oneTBB has no dependent async: its
//                         row builds the same chain as a flow graph
//                         (continue_node per task, an edge per dependency),
//                         runs it, waits and destroys it, every iteration.
//   async_wavefront_256   a 256x256 grid, (i,j) after (i-1,j) and (i,j-1),
//                         each cell valued from those two; oneTBB as above.
//   pipeline_L<lines>     10^6 tokens through 4 stages (serial, parallel,
//                         serial, parallel) on 1, 2, 4 or 8 lines, each
//                         stage a few dozen ns of arithmetic on the token's
//                         per-line slot; oneTBB: parallel_pipeline with
//                         max_number_of_live_tokens = lines and the same
//                         filter modes (serial_in_order, parallel).
//   group_fib_22          fib(22) with a task group per call: fib(n-1) a
//                         member, fib(n-2) inline, join (weft_group_*);
//                         oneTBB: task_group, run(n-1), n-2 inline, wait.
//                         weft's top call is a member of a group the
//                         calling thread joins; oneTBB's runs on the
//                         calling thread. items: calls (57 313).
// After the timed loop each case checks its results (the chain's last
// value, the grid's corner, the pipeline's checksum); a mismatch marks the
// case with an error. Public API only.
#include "bench_main.hh"
#include <benchmark/benchmark.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_group.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft.h"

namespace {

constexpr uint32_t kChain = 100000;
constexpr uint32_t kSide = 256;
constexpr uint64_t kTokens = 1000000;

__attribute__((noinline)) uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x7f4a7c15ull);
    x ^= x >> 29;
    return x;
}

// ---- async chain --------------------------------------------------------------

struct ChainArg {
    uint64_t *val;
    uint32_t i;
};

void *chain_task(void *p) {
    auto *a = static_cast<ChainArg *>(p);
    a->val[a->i] = mix(a->i ? a->val[a->i - 1] : 1, a->i);
    return nullptr;
}

uint64_t chain_ref() {
    uint64_t v = 1;
    for (uint32_t i = 0; i < kChain; i++) v = mix(i ? v : 1, i);
    return v;
}

void bench_weft_chain(benchmark::State &st, unsigned threads) {
    weft_sched *s = weft_bench_sched("bench_flow", threads);
    std::vector<uint64_t> val(kChain);
    std::vector<ChainArg> args(kChain);
    std::vector<weft_async *> h(kChain);
    for (uint32_t i = 0; i < kChain; i++) args[i] = ChainArg{val.data(), i};
    auto once = [&]() {
        for (uint32_t i = 0; i < kChain; i++)
            weft_async_spawn(s, chain_task, &args[i], i ? &h[i - 1] : nullptr, i ? 1 : 0, &h[i]);
        weft_async_wait(h[kChain - 1]);
        for (uint32_t i = 0; i < kChain; i++) weft_async_release(h[i]);
    };
    once();   // the pool's first slabs: not timed
    for (auto _ : st) once();
    st.SetItemsProcessed(int64_t(st.iterations()) * kChain);
    if (val[kChain - 1] != chain_ref()) st.SkipWithError("WRONG: the chain's last value");
    weft_sched_destroy(s);
}

void bench_tbb_chain(benchmark::State &st, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    std::vector<uint64_t> val(kChain);
    std::vector<ChainArg> args(kChain);
    for (uint32_t i = 0; i < kChain; i++) args[i] = ChainArg{val.data(), i};
    std::vector<std::unique_ptr<node_t>> nodes;
    nodes.reserve(kChain);
    auto once = [&]() {
        flow::graph g;
        for (uint32_t i = 0; i < kChain; i++) {
            ChainArg *a = &args[i];
            nodes.push_back(std::make_unique<node_t>(g, [a](const flow::continue_msg &) { chain_task(a); }));
            if (i) flow::make_edge(*nodes[i - 1], *nodes[i]);
        }
        nodes[0]->try_put(flow::continue_msg());
        g.wait_for_all();
        nodes.clear();
    };
    once();
    for (auto _ : st) once();
    st.SetItemsProcessed(int64_t(st.iterations()) * kChain);
    st.SetLabel("baseline");
    if (val[kChain - 1] != chain_ref()) st.SkipWithError("WRONG: the chain's last value");
}

// ---- async wavefront ----------------------------------------------------------

struct WaveArg {
    uint64_t *val;
    uint32_t i, j;
};

void *wave_task(void *p) {
    auto *a = static_cast<WaveArg *>(p);
    uint64_t *v = a->val;
    uint64_t up = a->i ? v[(a->i - 1) * kSide + a->j] : 3, left = a->j ? v[a->i * kSide + a->j - 1] : 5;
    v[a->i * kSide + a->j] = mix(up, left);
    return nullptr;
}

uint64_t wave_ref() {
    std::vector<uint64_t> v(kSide * kSide);
    for (uint32_t i = 0; i < kSide; i++)
        for (uint32_t j = 0; j < kSide; j++) {
            WaveArg a{v.data(), i, j};
            wave_task(&a);
        }
    return v.back();
}

void bench_weft_wave(benchmark::State &st, unsigned threads) {
    weft_sched *s = weft_bench_sched("bench_flow", threads);
    const uint32_t n = kSide * kSide;
    std::vector<uint64_t> val(n);
    std::vector<WaveArg> args(n);
    std::vector<weft_async *> h(n);
    for (uint32_t i = 0; i < kSide; i++)
        for (uint32_t j = 0; j < kSide; j++) args[i * kSide + j] = WaveArg{val.data(), i, j};
    auto once = [&]() {
        for (uint32_t i = 0; i < kSide; i++)
            for (uint32_t j = 0; j < kSide; j++) {
                weft_async *p[2];
                size_t k = 0;
                if (i) p[k++] = h[(i - 1) * kSide + j];
                if (j) p[k++] = h[i * kSide + j - 1];
                weft_async_spawn(s, wave_task, &args[i * kSide + j], p, k, &h[i * kSide + j]);
            }
        weft_async_wait(h[n - 1]);
        for (uint32_t v = 0; v < n; v++) weft_async_release(h[v]);
    };
    once();
    for (auto _ : st) once();
    st.SetItemsProcessed(int64_t(st.iterations()) * n);
    if (val[n - 1] != wave_ref()) st.SkipWithError("WRONG: the grid's corner");
    weft_sched_destroy(s);
}

void bench_tbb_wave(benchmark::State &st, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    const uint32_t n = kSide * kSide;
    std::vector<uint64_t> val(n);
    std::vector<WaveArg> args(n);
    for (uint32_t i = 0; i < kSide; i++)
        for (uint32_t j = 0; j < kSide; j++) args[i * kSide + j] = WaveArg{val.data(), i, j};
    std::vector<std::unique_ptr<node_t>> nodes;
    nodes.reserve(n);
    auto once = [&]() {
        flow::graph g;
        for (uint32_t i = 0; i < kSide; i++)
            for (uint32_t j = 0; j < kSide; j++) {
                WaveArg *a = &args[i * kSide + j];
                nodes.push_back(std::make_unique<node_t>(g, [a](const flow::continue_msg &) { wave_task(a); }));
                if (i) flow::make_edge(*nodes[(i - 1) * kSide + j], *nodes.back());
                if (j) flow::make_edge(*nodes[i * kSide + j - 1], *nodes.back());
            }
        nodes[0]->try_put(flow::continue_msg());
        g.wait_for_all();
        nodes.clear();
    };
    once();
    for (auto _ : st) once();
    st.SetItemsProcessed(int64_t(st.iterations()) * n);
    st.SetLabel("baseline");
    if (val[n - 1] != wave_ref()) st.SkipWithError("WRONG: the grid's corner");
}

// ---- pipeline -----------------------------------------------------------------

// Stage k's work on a token's value, the same for both systems.
__attribute__((noinline)) uint64_t stage_work(uint64_t x, unsigned k) {
    for (unsigned r = 0; r < 8; r++) x = mix(x, k + r);
    return x;
}

uint64_t pipe_ref() {
    uint64_t sum = 0;
    for (uint64_t t = 0; t < kTokens; t++) sum += stage_work(stage_work(stage_work(t, 1), 2), 3);
    return sum;
}

struct alignas(64) WeftPipe {
    uint64_t slot[8][8];   // per line, a cache line each
    uint64_t next = 0;
    uint64_t sum = 0;
};

void w_first(weft_pipe *pf, void *arg) {
    auto *p = static_cast<WeftPipe *>(arg);
    if (p->next == kTokens) {
        weft_pipe_stop(pf);
        return;
    }
    p->slot[weft_pipe_line(pf)][0] = p->next++;
}
// Stages 1 and 2 (parallel, serial): the token's slot, worked on.

void w_mid(weft_pipe *pf, void *arg) {
    auto *p = static_cast<WeftPipe *>(arg);
    size_t l = weft_pipe_line(pf);
    p->slot[l][0] = stage_work(p->slot[l][0], unsigned(weft_pipe_stage_index(pf)));
}

void w_last(weft_pipe *pf, void *arg) {
    auto *p = static_cast<WeftPipe *>(arg);
    __atomic_fetch_add(&p->sum, stage_work(p->slot[weft_pipe_line(pf)][0], 3), __ATOMIC_RELAXED);
}

void bench_weft_pipe(benchmark::State &st, unsigned threads, unsigned lines) {
    weft_sched *s = weft_bench_sched("bench_flow", threads);
    WeftPipe p;
    weft_pipe_stage stages[4] = {
        {WEFT_PIPE_SERIAL, w_first, &p}, {WEFT_PIPE_PARALLEL, w_mid, &p},
        {WEFT_PIPE_SERIAL, w_mid, &p}, {WEFT_PIPE_PARALLEL, w_last, &p}};
    weft_pipeline *pl = nullptr;
    weft_bench_check("bench_flow", weft_pipeline_create(lines, stages, 4, &pl), "weft_pipeline_create");
    bool ok = true;
    for (auto _ : st) {
        p.next = 0;
        p.sum = 0;
        weft_pipeline_run(s, pl);
        ok &= weft_pipeline_tokens(pl) == kTokens;
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kTokens));
    if (!ok || p.sum != pipe_ref()) st.SkipWithError("WRONG: the pipeline's checksum");
    weft_pipeline_destroy(pl);
    weft_sched_destroy(s);
}

void bench_tbb_pipe(benchmark::State &st, unsigned threads, unsigned lines) {
    namespace tbb = oneapi::tbb;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    uint64_t sum = 0;
    for (auto _ : st) {
        uint64_t next = 0;
        sum = 0;
        tbb::parallel_pipeline(
            lines,
            tbb::make_filter<void, uint64_t>(tbb::filter_mode::serial_in_order,
                                             [&](tbb::flow_control &fc) -> uint64_t {
                                                 if (next == kTokens) {
                                                     fc.stop();
                                                     return 0;
                                                 }
                                                 return next++;
                                             }) &
                tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::parallel,
                                                     [](uint64_t x) { return stage_work(x, 1); }) &
                tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::serial_in_order,
                                                     [](uint64_t x) { return stage_work(x, 2); }) &
                tbb::make_filter<uint64_t, void>(tbb::filter_mode::parallel, [&](uint64_t x) {
                    __atomic_fetch_add(&sum, stage_work(x, 3), __ATOMIC_RELAXED);
                }));
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kTokens));
    st.SetLabel("baseline");
    if (sum != pipe_ref()) st.SkipWithError("WRONG: the pipeline's checksum");
}

// ---- task group fib -----------------------------------------------------------

constexpr int kFib = 22;
constexpr long kFibValue = 17711, kFibCalls = 57313;

weft_sched *g_group_sched;

struct GFib {
    int n;
    long r;
    bool bad;
};

void gfib(void *a) {
    auto *f = static_cast<GFib *>(a);
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    GFib x{f->n - 1, 0, false}, y{f->n - 2, 0, false};
    weft_group g;
    bool ok = weft_group_init(&g, g_group_sched) == WEFT_OK && weft_group_spawn(&g, gfib, &x) == WEFT_OK;
    gfib(&y);
    ok &= weft_group_join(&g) == WEFT_OK;
    weft_group_destroy(&g);
    f->r = x.r + y.r;
    f->bad = !ok || x.bad || y.bad;
}

void bench_weft_group_fib(benchmark::State &st, unsigned threads) {
    g_group_sched = weft_bench_sched("bench_flow", threads);
    GFib top{kFib, 0, false};
    bool ok = true;
    auto once = [&]() {
        top = GFib{kFib, 0, false};
        weft_group g;
        ok &= weft_group_init(&g, g_group_sched) == WEFT_OK && weft_group_spawn(&g, gfib, &top) == WEFT_OK &&
              weft_group_join(&g) == WEFT_OK;
        weft_group_destroy(&g);
        ok &= top.r == kFibValue && !top.bad;
    };
    once();
    for (auto _ : st) once();
    st.SetItemsProcessed(int64_t(st.iterations()) * kFibCalls);
    if (!ok) st.SkipWithError("WRONG: fib's value or a group call's code");
    weft_sched_destroy(g_group_sched);
}

long tbb_fib(int n) {
    if (n < 2) return n;
    long x = 0;
    oneapi::tbb::task_group g;
    g.run([&] { x = tbb_fib(n - 1); });
    long y = tbb_fib(n - 2);
    g.wait();
    return x + y;
}

void bench_tbb_group_fib(benchmark::State &st, unsigned threads) {
    namespace tbb = oneapi::tbb;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    long r = tbb_fib(kFib);
    bool ok = true;
    for (auto _ : st) {
        r = tbb_fib(kFib);
        ok &= r == kFibValue;
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kFibCalls);
    st.SetLabel("baseline");
    if (!ok || r != kFibValue) st.SkipWithError("WRONG: fib's value");
}

}  // namespace

int main(int argc, char **argv) {
    // 1, 2 and every power of two up to the cores this machine has.
    std::vector<unsigned> threads{1, 2};
    for (unsigned t = 4, n = std::thread::hardware_concurrency(); t <= n; t *= 2) threads.push_back(t);
    for (unsigned t : threads) {
        std::string g = "async_chain_10^5_t" + std::to_string(t);
        benchmark::RegisterBenchmark((g + "/weft").c_str(), [t](benchmark::State &st) { bench_weft_chain(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((g + "/tbb").c_str(), [t](benchmark::State &st) { bench_tbb_chain(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    for (unsigned t : threads) {
        std::string g = "async_wavefront_256_t" + std::to_string(t);
        benchmark::RegisterBenchmark((g + "/weft").c_str(), [t](benchmark::State &st) { bench_weft_wave(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((g + "/tbb").c_str(), [t](benchmark::State &st) { bench_tbb_wave(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    for (unsigned lines : {1u, 2u, 4u, 8u})
        for (unsigned t : threads) {
            std::string g = "pipeline_L" + std::to_string(lines) + "_t" + std::to_string(t);
            benchmark::RegisterBenchmark((g + "/weft").c_str(),
                [t, lines](benchmark::State &st) { bench_weft_pipe(st, t, lines); })
                ->UseRealTime()->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark((g + "/tbb").c_str(),
                [t, lines](benchmark::State &st) { bench_tbb_pipe(st, t, lines); })
                ->UseRealTime()->Unit(benchmark::kMillisecond);
        }
    for (unsigned t : threads) {
        std::string g = "group_fib_22_t" + std::to_string(t);
        benchmark::RegisterBenchmark((g + "/weft").c_str(), [t](benchmark::State &st) { bench_weft_group_fib(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((g + "/tbb").c_str(), [t](benchmark::State &st) { bench_tbb_group_fib(st, t); })
            ->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    return weft_bench_run(argc, argv);
}

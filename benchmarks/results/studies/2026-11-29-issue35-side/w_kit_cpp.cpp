// weft's C++ face (weft.hpp), every row it has: `w_kit_cpp KERNEL T R
// [LINES]`, KERNEL one of fib, fibgroup, chain, wave, pipe, transform,
// scan, sort. The same kernels as w_kit.c, written with the header's
// calls: a subflow task per fib call (weft::subflow::emplace, a sum task
// after the two calls, no join), a weft::task_group per fib call
// (fibgroup: spawn a lambda for n - 1, n - 2 inline, join), weft::dependent_async, weft::pipeline of
// weft::pipe stages, weft::parallel_transform, parallel_inclusive_scan
// (std::plus) and parallel_sort (std::less, inlined).
// T as w_kit.c: T workers for the graph and flow rows, the main thread
// plus T - 1 workers for the algorithms.
#include <weft.hpp>

#include <atomic>
#include <functional>
#include <vector>

#include "kit.h"

namespace {

struct Fib {
    int n;
    long r;
    Fib *kids;
};
std::vector<Fib> pool;
std::atomic<size_t> used;
std::atomic<bool> bad;

void fib_sf(weft::subflow &sf, Fib *f)
{
    if (f->n < 2) {
        f->r = f->n;
        return;
    }
    size_t k = used.fetch_add(2, std::memory_order_relaxed);
    Fib *a = &pool[k], *b = &pool[k + 1];
    f->kids = a;
    *a = Fib{f->n - 1, 0, nullptr};
    *b = Fib{f->n - 2, 0, nullptr};
    weft::task x = sf.emplace([a](weft::subflow &s) { fib_sf(s, a); });
    weft::task y = sf.emplace([b](weft::subflow &s) { fib_sf(s, b); });
    weft::task sum = sf.emplace([f] { f->r = f->kids[0].r + f->kids[1].r; });
    x.precede(sum);
    y.precede(sum);
}

// fibgroup: oneTBB's task_group fib, word for word but the names
long fib_group(weft::scheduler_ref s, int n)
{
    if (n < 2)
        return n;
    long x = 0;
    weft::task_group tg(s);
    if (tg.spawn([&] { x = fib_group(s, n - 1); }))
        bad = true;
    long y = fib_group(s, n - 2);
    if (tg.join())
        bad = true;
    return x + y;
}

struct alignas(64) Pipe {
    uint64_t slot[8][8];   // per line, a cache line each
    uint64_t next = 0, sum = 0;
};

}  // namespace

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, K, T, R, L);
    std::string k = K;
    bool algo = k == "transform" || k == "scan" || k == "sort";
    weft_config c;
    weft_config_init(&c);
    unsigned w = algo ? unsigned(T) - 1 : unsigned(T);
    c.workers = w ? w : WEFT_WORKERS_NONE;
    weft::scheduler s(c);
    if (s.error())
        kit_wrong("create");
    std::function<void()> prep = [] {}, run, check, fin = [] {};

    weft::graph g;
    Fib top{KIT_FIB, 0, nullptr};
    std::vector<uint64_t> val;
    std::vector<weft::async_task<void>> h;
    Pipe pp;
    std::vector<double> x, y;
    std::vector<uint64_t> keys, work;
    uint64_t fp[2] = {0, 0};
    auto on = [](std::error_code e, const char *what) {
        if (e)
            kit_wrong(what);
    };

    if (k == "fib") {
        pool.resize(size_t(kit_fib_calls(KIT_FIB)) + 2);
        g.emplace([&](weft::subflow &sf) { fib_sf(sf, &top); });
        run = [&] {
            used = 0;
            top = Fib{KIT_FIB, 0, nullptr};
            on(s.run(g), "fib: run");
            on(g.wait(), "fib: wait");
        };
        check = [&] {
            if (top.r != kit_fib_seq(KIT_FIB) || bad)
                kit_wrong("fib");
        };
    } else if (k == "fibgroup") {
        run = [&] {   // the top call a member of a group main joins
            weft::scheduler_ref sr = s;
            weft::task_group tg(sr);
            if (tg.spawn([&] { top.r = fib_group(sr, KIT_FIB); }) || tg.join())
                kit_wrong("fibgroup: run");
        };
        check = [&] {
            if (top.r != kit_fib_seq(KIT_FIB) || bad)
                kit_wrong("fibgroup");
            top.r = 0;
        };
    } else if (k == "chain") {
        val.assign(KIT_CHAIN, 0);
        h.resize(KIT_CHAIN);
        run = [&] {
            uint64_t *v = val.data();
            h[0] = weft::dependent_async(s, [v] { kit_chain_step(v, 0); });
            for (uint32_t i = 1; i < KIT_CHAIN; i++)
                h[i] = weft::dependent_async(s, [v, i] { kit_chain_step(v, i); }, h[i - 1]);
            on(h[KIT_CHAIN - 1].wait(), "chain: wait");
            for (auto &t : h)
                t = weft::async_task<void>();
        };
        check = [&] {
            if (val[KIT_CHAIN - 1] != kit_chain_ref())
                kit_wrong("chain");
            std::fill(val.begin(), val.end(), 0);
        };
    } else if (k == "wave") {
        const uint32_t n = KIT_SIDE * KIT_SIDE;
        val.assign(n, 0);
        h.resize(n);
        run = [&] {
            uint64_t *v = val.data();
            for (uint32_t i = 0; i < KIT_SIDE; i++)
                for (uint32_t j = 0; j < KIT_SIDE; j++) {
                    auto f = [v, i, j] { kit_wave_step(v, i, j); };
                    weft::async_task<void> &t = h[i * KIT_SIDE + j];
                    if (i && j)
                        t = weft::dependent_async(s, f, h[(i - 1) * KIT_SIDE + j], h[i * KIT_SIDE + j - 1]);
                    else if (i)
                        t = weft::dependent_async(s, f, h[(i - 1) * KIT_SIDE + j]);
                    else if (j)
                        t = weft::dependent_async(s, f, h[j - 1]);
                    else
                        t = weft::dependent_async(s, f);
                }
            on(h[n - 1].wait(), "wave: wait");
            for (auto &t : h)
                t = weft::async_task<void>();
        };
        check = [&] {
            if (val[n - 1] != kit_wave_ref())
                kit_wrong("wave");
            std::fill(val.begin(), val.end(), 0);
        };
    } else if (k == "pipe") {
        if (L < 1 || L > 8)
            kit_wrong("pipe: lines");
        Pipe *p = &pp;
        auto mid = [p](weft::pipeflow &pf) { p->slot[pf.line()][0] = kit_stage(p->slot[pf.line()][0], unsigned(pf.pipe())); };
        auto *plp = new weft::pipeline(
            L,
            weft::pipe(weft::pipe_type::serial,
                       [p](weft::pipeflow &pf) {
                           if (p->next == KIT_TOKENS)
                               pf.stop();
                           else
                               p->slot[pf.line()][0] = p->next++;
                       }),
            weft::pipe(weft::pipe_type::parallel, mid), weft::pipe(weft::pipe_type::serial, mid),
            weft::pipe(weft::pipe_type::parallel, [p](weft::pipeflow &pf) {
                __atomic_fetch_add(&p->sum, kit_stage(p->slot[pf.line()][0], 3), __ATOMIC_RELAXED);
            }));
        fin = [plp] { delete plp; };   // before the scheduler goes
        on(plp->error(), "pipe: create");
        run = [&, plp] {
            pp.next = pp.sum = 0;
            on(plp->run(s), "pipe: run");
        };
        check = [&, plp] {
            static uint64_t want = kit_pipe_ref();
            if (plp->num_tokens() != KIT_TOKENS || pp.sum != want)
                kit_wrong("pipe");
        };
    } else if (algo) {
        x.resize(KIT_N), y.resize(KIT_N), keys.resize(KIT_N), work.resize(KIT_N);
        kit_fill(x.data(), keys.data());
        kit_keys_print(keys.data(), fp);
        if (k == "sort") {
            prep = [&] { work = keys; };
            run = [&] { on(weft::parallel_sort(s, work.begin(), work.end()), "sort: call"); };
            check = [&] { kit_check_sort(work.data(), fp); };
        } else {
            prep = [&] { std::fill(y.begin(), y.end(), -1.0); };
            if (k == "transform") {
                run = [&] { on(weft::parallel_transform(s, x.begin(), x.end(), y.begin(), [](double v) { return kit_axpb1(v); }), "transform: call"); };
                check = [&] { kit_check_transform(x.data(), y.data()); };
            } else {
                run = [&] { on(weft::parallel_inclusive_scan(s, x.begin(), x.end(), y.begin(), std::plus<>()), "scan: call"); };
                check = [&] { kit_check_scan(x.data(), y.data()); };
            }
        }
    } else {
        kit_wrong("kernel: fib fibgroup chain wave pipe transform scan sort");
    }
    double ms[64];
    for (int r = 0; r <= R; r++) {
        prep();
        double t0 = kit_now();
        run();
        double t1 = kit_now();
        check();
        if (r)
            ms[r - 1] = t1 - t0;
    }
    std::printf("w_kit_cpp %s T=%d L=%u %.3f\n", K, T, L, kit_median(ms, R));
    fin();
    return 0;
}

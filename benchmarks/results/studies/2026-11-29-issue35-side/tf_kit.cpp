// Taskflow, every row it has: `tf_kit KERNEL T R [LINES]`, KERNEL one of
// fib, fibsum, fibtg, chain, wave, pipe, transform, scan, sort; an
// executor of T workers, the main thread waiting (run(...).wait(),
// wait_for_all()), in Taskflow's own idiom:
//   fib     its documented recursive subflow: each call a Subflow task
//           that emplaces two subflow tasks (n-1, n-2) and joins them
//           (sf.join()); one Taskflow run per round.
//   fibsum  the same without the join: a sum task after the two, the
//           subflow joined when the callable returns (weft's w_kit fib).
//   fibtg   its benchmarks' fibonacci: a TaskGroup per call,
//           silent_async(n-1), n-2 inline, corun().
//   chain, wave: silent_dependent_async with the predecessors' AsyncTask
//           handles, then wait_for_all().
//   pipe    tf::Pipeline of 4 Pipes (serial, parallel, serial, parallel)
//           composed into a Taskflow, a buffer slot per line.
//   transform, scan, sort: a Taskflow of one transform, inclusive_scan
//           (std::plus) or sort (std::less) task, run once per round.
#include <taskflow/taskflow.hpp>
#include <taskflow/algorithm/pipeline.hpp>
#include <taskflow/algorithm/scan.hpp>
#include <taskflow/algorithm/sort.hpp>
#include <taskflow/algorithm/transform.hpp>

#include <atomic>
#include <functional>
#include <vector>

#include "kit.h"

namespace {

long fib_join(int n, tf::Subflow &sf)
{
    if (n < 2)
        return n;
    long r1 = 0, r2 = 0;
    sf.emplace([&r1, n](tf::Subflow &s) { r1 = fib_join(n - 1, s); });
    sf.emplace([&r2, n](tf::Subflow &s) { r2 = fib_join(n - 2, s); });
    sf.join();
    return r1 + r2;
}

struct Fib {
    int n;
    long r;
    Fib *kids;
};
std::vector<Fib> pool;
std::atomic<size_t> used;

void fib_sum(tf::Subflow &sf, Fib *f)
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
    tf::Task x = sf.emplace([a](tf::Subflow &s) { fib_sum(s, a); });
    tf::Task y = sf.emplace([b](tf::Subflow &s) { fib_sum(s, b); });
    tf::Task sum = sf.emplace([f] { f->r = f->kids[0].r + f->kids[1].r; });
    x.precede(sum);
    y.precede(sum);
}

long fib_tg(int n, tf::Executor &ex)
{
    if (n < 2)
        return n;
    long r1 = 0, r2;
    tf::TaskGroup tg = ex.task_group();
    tg.silent_async([n, &r1, &ex] { r1 = fib_tg(n - 1, ex); });
    r2 = fib_tg(n - 2, ex);
    tg.corun();
    return r1 + r2;
}

struct alignas(64) Pipe {
    uint64_t slot[8][8];
    uint64_t next = 0, sum = 0;
};

}  // namespace

int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, K, T, R, L);
    std::string k = K;
    tf::Executor ex{size_t(T)};
    tf::Taskflow f;
    std::function<void()> prep = [] {}, run, check;
    long top = 0;
    Fib ftop{KIT_FIB, 0, nullptr};
    std::vector<uint64_t> val;
    std::vector<tf::AsyncTask> h;
    Pipe pp;
    std::vector<double> x, y;
    std::vector<uint64_t> keys, work;
    uint64_t fp[2] = {0, 0};
    std::shared_ptr<void> keep;   // the pipeline, as long as f

    if (k == "fib") {
        f.emplace([&](tf::Subflow &sf) { top = fib_join(KIT_FIB, sf); });
        run = [&] { ex.run(f).wait(); };
        check = [&] {
            if (top != kit_fib_seq(KIT_FIB))
                kit_wrong("fib");
            top = 0;
        };
    } else if (k == "fibsum") {
        pool.resize(size_t(kit_fib_calls(KIT_FIB)) + 2);
        f.emplace([&](tf::Subflow &sf) { fib_sum(sf, &ftop); });
        run = [&] {
            used = 0;
            ftop = Fib{KIT_FIB, 0, nullptr};
            ex.run(f).wait();
        };
        check = [&] {
            if (ftop.r != kit_fib_seq(KIT_FIB))
                kit_wrong("fibsum");
        };
    } else if (k == "fibtg") {
        run = [&] { top = ex.async([&ex] { return fib_tg(KIT_FIB, ex); }).get(); };
        check = [&] {
            if (top != kit_fib_seq(KIT_FIB))
                kit_wrong("fibtg");
            top = 0;
        };
    } else if (k == "chain") {
        val.assign(KIT_CHAIN, 0);
        h.resize(KIT_CHAIN);
        run = [&] {
            uint64_t *v = val.data();
            h[0] = ex.silent_dependent_async([v] { kit_chain_step(v, 0); });
            for (uint32_t i = 1; i < KIT_CHAIN; i++)
                h[i] = ex.silent_dependent_async([v, i] { kit_chain_step(v, i); }, h[i - 1]);
            ex.wait_for_all();
            for (auto &t : h)
                t = tf::AsyncTask();
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
                    auto fn = [v, i, j] { kit_wave_step(v, i, j); };
                    tf::AsyncTask &t = h[i * KIT_SIDE + j];
                    if (i && j)
                        t = ex.silent_dependent_async(fn, h[(i - 1) * KIT_SIDE + j], h[i * KIT_SIDE + j - 1]);
                    else if (i)
                        t = ex.silent_dependent_async(fn, h[(i - 1) * KIT_SIDE + j]);
                    else if (j)
                        t = ex.silent_dependent_async(fn, h[j - 1]);
                    else
                        t = ex.silent_dependent_async(fn);
                }
            ex.wait_for_all();
            for (auto &t : h)
                t = tf::AsyncTask();
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
        auto mid = [p](tf::Pipeflow &pf) { p->slot[pf.line()][0] = kit_stage(p->slot[pf.line()][0], unsigned(pf.pipe())); };
        tf::Pipe p0{tf::PipeType::SERIAL, [p](tf::Pipeflow &pf) {
                        if (p->next == KIT_TOKENS)
                            pf.stop();
                        else
                            p->slot[pf.line()][0] = p->next++;
                    }};
        tf::Pipe p1{tf::PipeType::PARALLEL, decltype(mid)(mid)}, p2{tf::PipeType::SERIAL, decltype(mid)(mid)};
        tf::Pipe p3{tf::PipeType::PARALLEL, [p](tf::Pipeflow &pf) {
                        __atomic_fetch_add(&p->sum, kit_stage(p->slot[pf.line()][0], 3), __ATOMIC_RELAXED);
                    }};
        auto pl = std::make_shared<tf::Pipeline<decltype(p0), decltype(p1), decltype(p2), decltype(p3)>>(L, std::move(p0), std::move(p1), std::move(p2), std::move(p3));
        keep = pl;
        f.composed_of(*pl);
        run = [&] {
            pp.next = pp.sum = 0;
            ex.run(f).wait();
        };
        check = [&, pl] {
            static uint64_t want = kit_pipe_ref();
            static size_t before = 0;   // Taskflow's count goes on across runs
            size_t now = pl->num_tokens();
            if (now - before != KIT_TOKENS || pp.sum != want)
                kit_wrong("pipe");
            before = now;
        };
    } else if (k == "transform" || k == "scan" || k == "sort") {
        x.resize(KIT_N), y.resize(KIT_N), keys.resize(KIT_N), work.resize(KIT_N);
        kit_fill(x.data(), keys.data());
        kit_keys_print(keys.data(), fp);
        run = [&] { ex.run(f).wait(); };
        if (k == "sort") {
            f.sort(work.begin(), work.end());
            prep = [&] { std::copy(keys.begin(), keys.end(), work.begin()); };
            check = [&] { kit_check_sort(work.data(), fp); };
        } else {
            prep = [&] { std::fill(y.begin(), y.end(), -1.0); };
            if (k == "transform") {
                f.transform(x.begin(), x.end(), y.begin(), [](double v) { return kit_axpb1(v); });
                check = [&] { kit_check_transform(x.data(), y.data()); };
            } else {
                f.inclusive_scan(x.begin(), x.end(), y.begin(), std::plus<double>());
                check = [&] { kit_check_scan(x.data(), y.data()); };
            }
        }
    } else {
        kit_wrong("kernel: fib fibsum fibtg chain wave pipe transform scan sort");
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
    std::printf("tf_kit %s T=%d L=%u %.3f\n", K, T, L, kit_median(ms, R));
    return 0;
}

// Parallel algorithms (issue 35, item 5): weft_parallel_transform,
// weft_parallel_scan / _scan_fused / _scan_inclusive and weft_parallel_sort /
// _sort_stable beside oneTBB's parallel_for, parallel_scan and
// parallel_sort and the sequential C++ and C loops, in one binary, on
// the same 10^7 elements. (bench_parallel.cc holds the loops for and
// reduce; the two together would pass a file's 800 lines.)
//
// Groups are "<algorithm>_10^7_t<threads>/<case>"; every case of a group
// counts the same items (elements), and the cases labelled "baseline"
// are the ones report.py divides by: seq and tbb.
//
//   transform   y[i] = 1.5 * x[i] + 0.25 over doubles (160 MB in and out)
//   scan        inclusive prefix sum of doubles
//   sort        uint64 keys from a seeded generator, ascending
//
// The two libraries' scans share one body (scan_range): in order when it
// writes outputs, in four partial sums when it only folds, as a scan's
// contract allows (oneTBB's pre_scan, weft's final == false).
//
// Cases: seq (a plain loop; std::inclusive_scan's left fold; std::sort,
// its comparison inlined); qsort (sort only: C's qsort, a comparison
// called through a pointer as weft's is); std_stable (std::stable_sort);
// tbb (parallel_for with the auto partitioner; parallel_scan over a
// blocked_range; parallel_sort); weft (called from the benchmark thread,
// which takes a share beside <threads> - 1 workers, as in
// bench_parallel); weft_elem (the scan's element form: the operator
// called per element); weft_oneblock (the scan as one block, grain =
// count: its final pass alone, what the determinism's second fold costs
// shows beside weft); weft_fused (weft_parallel_scan_fused: the body
// folds each block from 0 and gets the prefix apart, so a block whose
// prefix is known is read once); weft_cpp (weft.hpp's parallel_inclusive_scan with
// std::plus, and parallel_sort with std::less: the operator inlined, as
// in std::sort and oneTBB);
// weft_stable (the stable merge sort, scratch
// passed by the caller); and "_task" forms, called from a task of a
// scheduler of <threads> workers. Every case is checked against seq
// before it is timed (transform and sort exactly; weft's scan is the same
// at every thread count, and within 1e-9 of the left fold); a mismatch
// fails the case. The sorts copy the unsorted input back before each
// iteration, with the clock paused.
#include "bench_main.hh"
#include <benchmark/benchmark.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "weft.hpp"

namespace {

constexpr size_t kN = 10000000;

unsigned max_threads()
{
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

weft_sched *sched_for(unsigned workers)
{
    static std::map<unsigned, weft_sched *> scheds;
    auto it = scheds.find(workers);
    if (it != scheds.end())
        return it->second;
    return scheds[workers] = weft_bench_sched("bench_algo", workers);
}

// Runs f in one task of s, the calling thread asleep until it ends.
struct TaskCall {
    const std::function<void()> *f;
    weft_event done;
};

void task_call(void *p)
{
    TaskCall *c = static_cast<TaskCall *>(p);
    (*c->f)();
    weft_event_signal(&c->done);
}

void run_in_task(weft_sched *s, const std::function<void()> &f)
{
    TaskCall c;
    c.f = &f;
    weft_event_init(&c.done, true, false);
    weft_bench_check("bench_algo", weft_spawn(s, task_call, &c), "weft_spawn");
    weft_event_wait(&c.done);
    weft_event_destroy(&c.done);
}

uint64_t splitmix(uint64_t &st)
{
    uint64_t z = (st += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

struct Data {
    std::vector<double> x, y, want_y, want_scan;
    std::vector<uint64_t> keys, work, scratch, want_sorted;
    Data() : x(kN), y(kN), want_y(kN), want_scan(kN), keys(kN), work(kN), scratch(kN), want_sorted(kN)
    {
        uint64_t st = 1;
        for (size_t i = 0; i < kN; i++) {
            x[i] = double(splitmix(st) >> 11) / 9007199254740992.0;
            want_y[i] = 1.5 * x[i] + 0.25;
            keys[i] = splitmix(st);
        }
        std::inclusive_scan(x.begin(), x.end(), want_scan.begin());
        want_sorted = keys;
        std::sort(want_sorted.begin(), want_sorted.end());
    }
};

Data &data()
{
    static Data *d = new Data;
    return *d;
}

// ---- transform ------------------------------------------------------------------

__attribute__((noinline)) void axpb(const double *__restrict x, double *__restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = 1.5 * x[i] + 0.25;
}

void weft_axpb(void *out, const void *in, size_t, size_t count, void *)
{
    axpb(static_cast<const double *>(in), static_cast<double *>(out), count);
}

using Run = std::function<void(Data &)>;

void bench_transform(benchmark::State &st, const Run &run)
{
    Data &d = data();
    std::fill(d.y.begin(), d.y.end(), -1.0);
    run(d);
    if (d.y != d.want_y) {
        st.SkipWithError("transform: differs from the sequential loop");
        return;
    }
    for (auto _ : st) {
        run(d);
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kN));
}

// ---- scan ---------------------------------------------------------------------------

// The fold of x[b, e) onto acc, as both libraries' scan bodies call it:
// with outputs (final), in order; without, in four interleaved partial
// sums (a fixed grouping: the result is still the same on every run),
// so that the pass that only sums is not one chain of dependent adds.
double scan_range(const double *x, double *y, size_t b, size_t e, double acc, bool final)
{
    if (final) {
        for (size_t i = b; i < e; i++)
            y[i] = acc += x[i];
        return acc;
    }
    double p[4] = {0, 0, 0, 0};
    size_t i = b;
    for (; i + 4 <= e; i += 4)
        for (int k = 0; k < 4; k++)
            p[k] += x[i + k];
    for (; i < e; i++)
        p[0] += x[i];
    return acc + ((p[0] + p[1]) + (p[2] + p[3]));
}

void scan_body(size_t b, size_t e, void *sum, bool final, void *arg)
{
    Data *d = static_cast<Data *>(arg);
    double *acc = static_cast<double *>(sum);
    *acc = scan_range(d->x.data(), d->y.data(), b, e, *acc, final);
}

// weft_parallel_scan_fused's body: the block's fold from 0, left to
// right, with or without outputs (the sum must be the same either way);
// each output is the prefix plus the fold so far.
void fused_body(size_t b, size_t e, void *sum, const void *prefix, void *arg)
{
    Data *d = static_cast<Data *>(arg);
    const double *x = d->x.data();
    double *y = d->y.data(), acc = 0;
    if (prefix) {
        const double p = *static_cast<const double *>(prefix);
        for (size_t i = b; i < e; i++) {
            acc += x[i];
            y[i] = p + acc;
        }
    } else {
        for (size_t i = b; i < e; i++)
            acc += x[i];
    }
    *static_cast<double *>(sum) = acc;
}

void add_double(void *into, const void *from, void *)
{
    *static_cast<double *>(into) += *static_cast<const double *>(from);
}

void bench_scan(benchmark::State &st, const Run &run)
{
    Data &d = data();
    std::fill(d.y.begin(), d.y.end(), -1.0);
    run(d);
    for (size_t i = 0; i < kN; i++)
        if (!(std::fabs(d.y[i] - d.want_scan[i]) <= 1e-9 * std::fabs(d.want_scan[i]) + 1e-12)) {
            st.SkipWithError("scan: differs from the left fold");
            return;
        }
    for (auto _ : st) {
        run(d);
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kN));
}

// ---- sort ---------------------------------------------------------------------------

int cmp_u64(const void *a, const void *b, void *)
{
    uint64_t x = *static_cast<const uint64_t *>(a), y = *static_cast<const uint64_t *>(b);
    return (x > y) - (x < y);
}

int cmp_u64_q(const void *a, const void *b)
{
    return cmp_u64(a, b, nullptr);
}

void bench_sort(benchmark::State &st, const Run &run)
{
    Data &d = data();
    d.work = d.keys;
    run(d);
    if (d.work != d.want_sorted) {
        st.SkipWithError("sort: differs from std::sort");
        return;
    }
    for (auto _ : st) {
        st.PauseTiming();
        std::copy(d.keys.begin(), d.keys.end(), d.work.begin());
        st.ResumeTiming();
        run(d);
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kN));
}

// ---- registration -------------------------------------------------------------------

void add(const std::string &name, bool baseline, void (*bench)(benchmark::State &, const Run &), Run run,
         unsigned in_task = 0)
{
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State &st) {
        if (in_task)
            run_in_task(sched_for(in_task), [&] { bench(st, run); });
        else
            bench(st, run);
        if (baseline)
            st.SetLabel("baseline");
    })->UseRealTime()->Unit(benchmark::kMillisecond);
}

void check(int rc)
{
    weft_bench_check("bench_algo", rc, "a weft algorithm");
}

void register_all()
{
    for (unsigned t = 1; t <= max_threads(); t *= 2) {
        auto arena = std::make_shared<tbb::task_arena>(int(t));
        const std::string ts = "_10^7_t" + std::to_string(t) + "/";

        std::string g = "transform" + ts;
        add(g + "seq", true, bench_transform, [](Data &d) { axpb(d.x.data(), d.y.data(), kN); });
        add(g + "tbb", true, bench_transform, [arena](Data &d) {
            arena->execute([&] {
                tbb::parallel_for(tbb::blocked_range<size_t>(0, kN), [&](const tbb::blocked_range<size_t> &r) {
                    axpb(d.x.data() + r.begin(), d.y.data() + r.begin(), r.size());
                });
            });
        });
        auto xf = [](unsigned w) {
            return [w](Data &d) {
                check(weft_parallel_transform(sched_for(w), d.y.data(), 8, d.x.data(), 8, kN, 0, weft_axpb, nullptr));
            };
        };
        add(g + "weft", false, bench_transform, xf(t - 1));
        add(g + "weft_task", false, bench_transform, xf(t), t);

        g = "scan" + ts;
        add(g + "seq", true, bench_scan, [](Data &d) { std::inclusive_scan(d.x.begin(), d.x.end(), d.y.begin()); });
        add(g + "tbb", true, bench_scan, [arena](Data &d) {
            arena->execute([&] {
                tbb::parallel_scan(
                    tbb::blocked_range<size_t>(0, kN), 0.0,
                    [&](const tbb::blocked_range<size_t> &r, double acc, bool final) {
                        return scan_range(d.x.data(), d.y.data(), r.begin(), r.end(), acc, final);
                    },
                    [](double a, double b) { return a + b; });
            });
        });
        auto range_scan = [](unsigned w) {
            return [w](Data &d) {
                double sum, zero = 0;
                check(weft_parallel_scan(sched_for(w), 0, kN, 0, &sum, sizeof sum, &zero, scan_body, add_double, &d));
            };
        };
        add(g + "weft", false, bench_scan, range_scan(t - 1));
        add(g + "weft_task", false, bench_scan, range_scan(t), t);
        auto fused_scan = [](unsigned w) {
            return [w](Data &d) {
                double sum, zero = 0;
                check(weft_parallel_scan_fused(sched_for(w), 0, kN, 0, &sum, sizeof sum, &zero, fused_body, add_double, &d));
            };
        };
        add(g + "weft_fused", false, bench_scan, fused_scan(t - 1));
        add(g + "weft_fused_task", false, bench_scan, fused_scan(t), t);
        auto cpp_scan = [](unsigned w) {
            return [w](Data &d) {
                check(weft::parallel_inclusive_scan(weft::scheduler_ref(sched_for(w)), d.x.begin(), d.x.end(), d.y.begin(),
                                                    std::plus<>()).value());
            };
        };
        add(g + "weft_cpp", false, bench_scan, cpp_scan(t - 1));
        add(g + "weft_cpp_task", false, bench_scan, cpp_scan(t), t);
        add(g + "weft_oneblock", false, bench_scan, [t](Data &d) {
            double sum, zero = 0;
            check(weft_parallel_scan(sched_for(t - 1), 0, kN, kN, &sum, sizeof sum, &zero, scan_body, add_double, &d));
        });
        add(g + "weft_elem", false, bench_scan, [t](Data &d) {
            double zero = 0;
            check(weft_parallel_scan_inclusive(sched_for(t - 1), d.y.data(), d.x.data(), kN, 8, 0, &zero,
                                               add_double, nullptr));
        });

        g = "sort" + ts;
        add(g + "seq", true, bench_sort, [](Data &d) { std::sort(d.work.begin(), d.work.end()); });
        add(g + "qsort", false, bench_sort, [](Data &d) { std::qsort(d.work.data(), kN, 8, cmp_u64_q); });
        add(g + "std_stable", false, bench_sort, [](Data &d) { std::stable_sort(d.work.begin(), d.work.end()); });
        add(g + "tbb", true, bench_sort, [arena](Data &d) {
            arena->execute([&] { tbb::parallel_sort(d.work.begin(), d.work.end()); });
        });
        auto qs = [](unsigned w) {
            return [w](Data &d) { check(weft_parallel_sort(sched_for(w), d.work.data(), kN, 8, cmp_u64, nullptr)); };
        };
        auto ms = [](unsigned w) {
            return [w](Data &d) {
                check(weft_parallel_sort_stable(sched_for(w), d.work.data(), kN, 8, d.scratch.data(), cmp_u64, nullptr));
            };
        };
        add(g + "weft", false, bench_sort, qs(t - 1));
        add(g + "weft_task", false, bench_sort, qs(t), t);
        auto cs = [](unsigned w) {
            return [w](Data &d) { check(weft::parallel_sort(weft::scheduler_ref(sched_for(w)), d.work.begin(), d.work.end()).value()); };
        };
        add(g + "weft_cpp", false, bench_sort, cs(t - 1));
        add(g + "weft_cpp_task", false, bench_sort, cs(t), t);
        add(g + "weft_stable", false, bench_sort, ms(t - 1));
        add(g + "weft_stable_task", false, bench_sort, ms(t), t);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    register_all();
    return weft_bench_run(argc, argv);
}

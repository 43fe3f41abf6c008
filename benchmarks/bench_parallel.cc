// Parallel loops: weft_parallel_for and weft_parallel_reduce beside
// OpenMP worksharing loops, oneTBB parallel_for / parallel_reduce and the
// plain sequential loop, in one binary, on the same data.
//
// Groups are "<loop>_t<threads>/<case>"; in a group every case counts the
// same items (elements, or pixels), and three cases are labelled
// "baseline" for report.py: seq, omp_static and tbb.
//
//   saxpy_2^17   y[i] = a*x[i] + y[i], 2^17 floats (1 MiB for x and y:
//                fits the L2 caches), uniform and memory-light
//   saxpy_2^24   the same over 2^24 floats (128 MiB: from DRAM)
//   mandel_1024  1024x1024 Mandelbrot, one iteration per row, at most 256
//                steps a pixel, over [-2, 0.5] x [-0.25, 1.25]: the rows of
//                the upper half cost about 6x those of the lower half, so
//                a static split in two gives one thread 86% of the work
//   sum_10^8     sum of 10^8 doubles (800 MB), a reduction
//
// Cases: seq (one thread, no runtime); omp_static (`parallel for
// schedule(static)`, the target of issue 6), omp_dynamic (mandel only,
// schedule(dynamic), for reference); tbb (auto_partitioner, the default),
// tbb_static (static_partitioner); weft_auto (grain 0) and weft_g<N>
// (a hand-picked grain), called from the benchmark thread, and
// weft_auto_task, the same loop called from inside a weft task (the
// benchmark's timing loop runs in that task). Every case is checked against seq before it is
// timed: saxpy and Mandelbrot exactly, the sums within a relative 1e-9
// (weft's sum is the same on every run; OpenMP's and oneTBB's depend on
// the split). A mismatch fails the case with SkipWithError.
//
// Threads: <threads> threads compute in every case. OpenMP and oneTBB
// run <threads> threads, the caller included. Called from the benchmark
// thread (weft_auto, weft_g<N>), weft runs <threads> - 1 workers and the
// caller takes a share of each loop itself, as weft does for a plain
// thread when a CPU is spare for it (at 1 thread: no workers, the loop
// runs on the caller). weft_auto_task runs <threads> workers, the loop
// called from a task on one of them, while the benchmark thread sleeps in
// the wait for that task. Each weft scheduler is created once per thread count and
// kept for the whole run, with weft's default configuration
// (WEFT_BENCH_SPIN_US=N sets spin_us, for experiments). libgomp's idle threads spin and slow whatever
// runs next, so the program re-executes itself with
// OMP_WAIT_POLICY=passive unless the variable is set (as bench_graph).
#include "bench_main.hh"
#include <benchmark/benchmark.h>
#include <omp.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "weft.h"

namespace {

unsigned max_threads()
{
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

// One scheduler per thread count, made on first use, kept until exit.
weft_sched *sched_for(unsigned workers)
{
    static std::map<unsigned, weft_sched *> scheds;
    auto it = scheds.find(workers);
    if (it != scheds.end())
        return it->second;
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    if (const char *spin = std::getenv("WEFT_BENCH_SPIN_US"))   // for experiments only
        c.spin_us = unsigned(std::strtoul(spin, nullptr, 10));
    if (c.spin_us == 0)   // 0: never spin, as before WEFT_SPIN_NONE
        c.spin_us = WEFT_SPIN_NONE;
    weft_sched *s = nullptr;
    if (weft_sched_create(&s, &c) != WEFT_OK) {
        std::fprintf(stderr, "bench_parallel: weft_sched_create failed\n");
        std::abort();
    }
    scheds[workers] = s;
    return s;
}

// ---- saxpy ------------------------------------------------------------------------

constexpr float kA = 1.5f;

struct Saxpy {
    size_t n;
    std::vector<float> x, y0, y, want;
    explicit Saxpy(size_t n_) : n(n_), x(n_), y0(n_), y(n_), want(n_)
    {
        for (size_t i = 0; i < n; i++) {
            x[i] = float(i % 1000) * 0.001f;
            y0[i] = float(i % 77) * 0.5f;
            want[i] = kA * x[i] + y0[i];
        }
    }
};

// The loop every case runs on its share; the compiler vectorizes it.
// One copy, not inlined, its start on a cache line: every case runs the
// same machine code at the same alignment. (Inlined, each case had its
// own copy, and one whose inner loop straddled a 64-byte line ran the
// 2^17 loop 1.5-2x slower on this machine, whatever the runtime.)
__attribute__((noinline, aligned(64))) void saxpy_range(float a, const float *__restrict x, float *__restrict y, size_t b, size_t e)
{
    for (size_t i = b; i < e; i++)
        y[i] = a * x[i] + y[i];
}

struct SaxpyImpl {
    virtual ~SaxpyImpl() = default;
    virtual int run(Saxpy &d) = 0;
};

// Runs one untimed pass from y0 and compares it with want; then times.
void bench_saxpy(benchmark::State &st, Saxpy &d, SaxpyImpl &impl)
{
    d.y = d.y0;
    if (impl.run(d) != 0 || std::memcmp(d.y.data(), d.want.data(), d.n * sizeof(float)) != 0) {
        st.SkipWithError("saxpy: result differs from the sequential loop");
        return;
    }
    for (auto _ : st) {
        impl.run(d);
        benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d.n));
}

struct SaxpySeq : SaxpyImpl {
    int run(Saxpy &d) override
    {
        saxpy_range(kA, d.x.data(), d.y.data(), 0, d.n);
        return 0;
    }
};

struct SaxpyOmp : SaxpyImpl {
    int threads;
    explicit SaxpyOmp(unsigned t) : threads(int(t)) {}
    int run(Saxpy &d) override
    {
        const float *__restrict x = d.x.data();
        float *__restrict y = d.y.data();
        const long n = long(d.n);
#pragma omp parallel for schedule(static) num_threads(threads)
        for (long i = 0; i < n; i++)
            y[i] = kA * x[i] + y[i];
        return 0;
    }
};

template <typename Partitioner>
struct SaxpyTbb : SaxpyImpl {
    tbb::task_arena arena;
    explicit SaxpyTbb(unsigned t) : arena(int(t)) {}
    int run(Saxpy &d) override
    {
        const float *x = d.x.data();
        float *y = d.y.data();
        arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<size_t>(0, d.n),
                              [=](const tbb::blocked_range<size_t> &r) { saxpy_range(kA, x, y, r.begin(), r.end()); },
                              Partitioner());
        });
        return 0;
    }
};

struct SaxpyWeft : SaxpyImpl {
    weft_sched *s;
    size_t grain;
    SaxpyWeft(unsigned t, size_t g) : s(sched_for(t)), grain(g) {}
    static void body(size_t b, size_t e, void *arg)
    {
        Saxpy *d = static_cast<Saxpy *>(arg);
        saxpy_range(kA, d->x.data(), d->y.data(), b, e);
    }
    int run(Saxpy &d) override { return weft_parallel_for(s, 0, d.n, grain, body, &d); }
};

// ---- Mandelbrot rows -------------------------------------------------------------

struct Mandel {
    static constexpr int kSide = 1024, kMaxIter = 256;
    static constexpr double kX0 = -2.0, kX1 = 0.5, kY0 = -0.25, kY1 = 1.25;
    std::vector<uint16_t> img;
    uint64_t want = 0;
    Mandel() : img(size_t(kSide) * kSide) {}

    // One row of iteration counts. Not inlined: every case runs exactly
    // this code, so the pixels are bit-for-bit the same.
    __attribute__((noinline)) void row(size_t r)
    {
        const double ci = kY0 + (kY1 - kY0) * (double(r) + 0.5) / kSide;
        uint16_t *out = &img[r * kSide];
        for (int k = 0; k < kSide; k++) {
            const double cr = kX0 + (kX1 - kX0) * (double(k) + 0.5) / kSide;
            double zr = 0, zi = 0;
            int i = 0;
            for (; i < kMaxIter; i++) {
                double zr2 = zr * zr, zi2 = zi * zi;
                if (zr2 + zi2 > 4.0)
                    break;
                zi = 2 * zr * zi + ci;
                zr = zr2 - zi2 + cr;
            }
            out[k] = uint16_t(i);
        }
    }
    void rows(size_t b, size_t e)
    {
        for (size_t r = b; r < e; r++)
            row(r);
    }
    // FNV-1a over the image: which pixel has which count, not only totals.
    uint64_t checksum() const
    {
        uint64_t h = 1469598103934665603ull;
        for (uint16_t v : img) {
            h ^= v;
            h *= 1099511628211ull;
        }
        return h;
    }
    static size_t pixels() { return size_t(kSide) * kSide; }
};

struct MandelImpl {
    virtual ~MandelImpl() = default;
    virtual int run(Mandel &m) = 0;
};

// Clears the image, runs once untimed and checks it; times; checks the
// last timed image too.
void bench_mandel(benchmark::State &st, Mandel &m, MandelImpl &impl)
{
    std::fill(m.img.begin(), m.img.end(), uint16_t(0xffff));
    if (impl.run(m) != 0 || m.checksum() != m.want) {
        st.SkipWithError("mandel: image differs from the sequential loop");
        return;
    }
    std::fill(m.img.begin(), m.img.end(), uint16_t(0xffff));
    for (auto _ : st) {
        impl.run(m);
        benchmark::ClobberMemory();
    }
    if (m.checksum() != m.want)
        st.SkipWithError("mandel: image differs from the sequential loop");
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(Mandel::pixels()));
}

struct MandelSeq : MandelImpl {
    int run(Mandel &m) override
    {
        m.rows(0, Mandel::kSide);
        return 0;
    }
};

struct MandelOmpStatic : MandelImpl {
    int threads;
    explicit MandelOmpStatic(unsigned t) : threads(int(t)) {}
    int run(Mandel &m) override
    {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (long r = 0; r < Mandel::kSide; r++)
            m.row(size_t(r));
        return 0;
    }
};

struct MandelOmpDynamic : MandelImpl {
    int threads;
    explicit MandelOmpDynamic(unsigned t) : threads(int(t)) {}
    int run(Mandel &m) override
    {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (long r = 0; r < Mandel::kSide; r++)
            m.row(size_t(r));
        return 0;
    }
};

struct MandelTbb : MandelImpl {
    tbb::task_arena arena;
    explicit MandelTbb(unsigned t) : arena(int(t)) {}
    int run(Mandel &m) override
    {
        arena.execute([&] {
            tbb::parallel_for(tbb::blocked_range<size_t>(0, Mandel::kSide),
                              [&](const tbb::blocked_range<size_t> &r) { m.rows(r.begin(), r.end()); });
        });
        return 0;
    }
};

struct MandelWeft : MandelImpl {
    weft_sched *s;
    size_t grain;
    MandelWeft(unsigned t, size_t g) : s(sched_for(t)), grain(g) {}
    static void body(size_t b, size_t e, void *arg) { static_cast<Mandel *>(arg)->rows(b, e); }
    int run(Mandel &m) override { return weft_parallel_for(s, 0, Mandel::kSide, grain, body, &m); }
};

// ---- sum of doubles ----------------------------------------------------------------

struct Sum {
    size_t n;
    std::vector<double> x;
    double want = 0;
    explicit Sum(size_t n_) : n(n_), x(n_)
    {
        for (size_t i = 0; i < n; i++)
            x[i] = 1.0 / double(1 + i % 4099);
        want = range(0, n);
    }
    // Left to right, as the sequential case; not vectorized (that would
    // reorder the additions), so every case runs the same scalar chain.
    // One copy at a fixed alignment, as saxpy_range.
    __attribute__((noinline, aligned(64))) double range(size_t b, size_t e) const
    {
        double s = 0;
        for (size_t i = b; i < e; i++)
            s += x[i];
        return s;
    }
    bool close(double v) const { return std::fabs(v - want) <= 1e-9 * std::fabs(want); }
};

struct SumImpl {
    virtual ~SumImpl() = default;
    virtual int run(const Sum &d, double *out) = 0;
};

void bench_sum(benchmark::State &st, const Sum &d, SumImpl &impl)
{
    double r = 0;
    if (impl.run(d, &r) != 0 || !d.close(r)) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "sum: %.17g, sequential %.17g", r, d.want);
        st.SkipWithError(msg);
        return;
    }
    for (auto _ : st) {
        impl.run(d, &r);
        benchmark::DoNotOptimize(r);
    }
    if (!d.close(r))
        st.SkipWithError("sum: last timed result out of tolerance");
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d.n));
}

struct SumSeq : SumImpl {
    int run(const Sum &d, double *out) override
    {
        *out = d.range(0, d.n);
        return 0;
    }
};

struct SumOmp : SumImpl {
    int threads;
    explicit SumOmp(unsigned t) : threads(int(t)) {}
    int run(const Sum &d, double *out) override
    {
        const double *x = d.x.data();
        const long n = long(d.n);
        double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s) num_threads(threads)
        for (long i = 0; i < n; i++)
            s += x[i];
        *out = s;
        return 0;
    }
};

struct SumTbb : SumImpl {
    tbb::task_arena arena;
    explicit SumTbb(unsigned t) : arena(int(t)) {}
    int run(const Sum &d, double *out) override
    {
        arena.execute([&] {
            *out = tbb::parallel_reduce(
                tbb::blocked_range<size_t>(0, d.n), 0.0,
                [&](const tbb::blocked_range<size_t> &r, double acc) { return acc + d.range(r.begin(), r.end()); },
                [](double a, double b) { return a + b; });
        });
        return 0;
    }
};

struct SumWeft : SumImpl {
    weft_sched *s;
    size_t grain;
    SumWeft(unsigned t, size_t g) : s(sched_for(t)), grain(g) {}
    static void body(size_t b, size_t e, void *partial, void *arg)
    {
        *static_cast<double *>(partial) += static_cast<const Sum *>(arg)->range(b, e);
    }
    static void combine(void *into, const void *from, void *)
    {
        *static_cast<double *>(into) += *static_cast<const double *>(from);
    }
    int run(const Sum &d, double *out) override
    {
        const double zero = 0;
        return weft_parallel_reduce(s, 0, d.n, grain, out, sizeof *out, &zero, body, combine,
                                    const_cast<Sum *>(&d));
    }
};

// ---- registration ------------------------------------------------------------------

// Data are made on first use and shared by every case of a loop, so a
// filtered run allocates only what it needs.
template <typename T>
struct Lazy {
    std::function<T *()> make;
    std::unique_ptr<T> p;
    T &get()
    {
        if (!p)
            p.reset(make());
        return *p;
    }
};

Lazy<Saxpy> g_saxpy_small{[] { return new Saxpy(size_t(1) << 17); }, nullptr};
Lazy<Saxpy> g_saxpy_big{[] { return new Saxpy(size_t(1) << 24); }, nullptr};
Lazy<Mandel> g_mandel{[] {
    auto *m = new Mandel;
    m->rows(0, Mandel::kSide);
    m->want = m->checksum();
    return m;
}, nullptr};
Lazy<Sum> g_sum{[] { return new Sum(size_t(100000000)); }, nullptr};

// Runs f inside one task of s, the calling thread asleep until it ends:
// the "_task" cases time the loop as a task calls it (the root piece runs
// on the task's own worker) rather than as an outside thread does (the
// root piece is queued, and the caller woken at the end).
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
    if (weft_spawn(s, task_call, &c) != WEFT_OK) {
        std::fprintf(stderr, "bench_parallel: weft_spawn failed\n");
        std::abort();
    }
    weft_event_wait(&c.done);
    weft_event_destroy(&c.done);
}

// Each case owns its implementation object (the oneTBB arena, the weft
// scheduler handle), made when the case first runs. in_task: the whole
// case, checks and timing loop, runs in a task of that many workers'
// scheduler (0: on the benchmark thread).
template <typename Data, typename Impl, typename Bench>
void add(const std::string &name, bool baseline, Lazy<Data> *data, std::function<Impl *()> make, Bench bench,
         unsigned in_task = 0)
{
    auto impl = std::make_shared<std::unique_ptr<Impl>>();
    benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State &st) {
        if (!*impl)
            impl->reset(make());
        Data &d = data->get();
        if (in_task)
            run_in_task(sched_for(in_task), [&] { bench(st, d, **impl); });
        else
            bench(st, d, **impl);
        if (baseline)
            st.SetLabel("baseline");
    })->UseRealTime()->Unit(benchmark::kMillisecond);
}

void register_all()
{
    std::vector<unsigned> counts;
    for (unsigned t = 1; t <= max_threads(); t *= 2)
        counts.push_back(t);

    struct SaxpySize {
        const char *name;
        Lazy<Saxpy> *data;
        size_t grain;   // hand-picked: 2^12 floats (16 KiB of x and of y) / 2^16
    } saxpies[] = {{"saxpy_2^17", &g_saxpy_small, size_t(1) << 12},
                   {"saxpy_2^24", &g_saxpy_big, size_t(1) << 16}};
    for (auto &sz : saxpies)
        for (unsigned t : counts) {
            std::string g = std::string(sz.name) + "_t" + std::to_string(t) + "/";
            size_t grain = sz.grain;
            add<Saxpy, SaxpyImpl>(g + "seq", true, sz.data, [] { return new SaxpySeq; }, bench_saxpy);
            add<Saxpy, SaxpyImpl>(g + "omp_static", true, sz.data, [t] { return new SaxpyOmp(t); }, bench_saxpy);
            add<Saxpy, SaxpyImpl>(g + "tbb", true, sz.data,
                                  [t] { return new SaxpyTbb<tbb::auto_partitioner>(t); }, bench_saxpy);
            add<Saxpy, SaxpyImpl>(g + "tbb_static", false, sz.data,
                                  [t] { return new SaxpyTbb<tbb::static_partitioner>(t); }, bench_saxpy);
            add<Saxpy, SaxpyImpl>(g + "weft_auto", false, sz.data, [t] { return new SaxpyWeft(t - 1, 0); }, bench_saxpy);
            add<Saxpy, SaxpyImpl>(g + "weft_auto_task", false, sz.data, [t] { return new SaxpyWeft(t, 0); },
                                  bench_saxpy, t);
            add<Saxpy, SaxpyImpl>(g + "weft_g" + std::to_string(grain), false, sz.data,
                                  [t, grain] { return new SaxpyWeft(t - 1, grain); }, bench_saxpy);
        }

    for (unsigned t : counts) {
        std::string g = "mandel_1024_t" + std::to_string(t) + "/";
        add<Mandel, MandelImpl>(g + "seq", true, &g_mandel, [] { return new MandelSeq; }, bench_mandel);
        add<Mandel, MandelImpl>(g + "omp_static", true, &g_mandel, [t] { return new MandelOmpStatic(t); }, bench_mandel);
        add<Mandel, MandelImpl>(g + "omp_dynamic", false, &g_mandel, [t] { return new MandelOmpDynamic(t); }, bench_mandel);
        add<Mandel, MandelImpl>(g + "tbb", true, &g_mandel, [t] { return new MandelTbb(t); }, bench_mandel);
        add<Mandel, MandelImpl>(g + "weft_auto", false, &g_mandel, [t] { return new MandelWeft(t - 1, 0); }, bench_mandel);
        add<Mandel, MandelImpl>(g + "weft_auto_task", false, &g_mandel, [t] { return new MandelWeft(t, 0); },
                                bench_mandel, t);
        add<Mandel, MandelImpl>(g + "weft_g1", false, &g_mandel, [t] { return new MandelWeft(t - 1, 1); }, bench_mandel);
    }

    const size_t sum_grain = size_t(1) << 20;   // ~95 chunks of 8 MiB
    for (unsigned t : counts) {
        std::string g = "sum_10^8_t" + std::to_string(t) + "/";
        add<Sum, SumImpl>(g + "seq", true, &g_sum, [] { return new SumSeq; }, bench_sum);
        add<Sum, SumImpl>(g + "omp_static", true, &g_sum, [t] { return new SumOmp(t); }, bench_sum);
        add<Sum, SumImpl>(g + "tbb", true, &g_sum, [t] { return new SumTbb(t); }, bench_sum);
        add<Sum, SumImpl>(g + "weft_auto", false, &g_sum, [t] { return new SumWeft(t - 1, 0); }, bench_sum);
        add<Sum, SumImpl>(g + "weft_auto_task", false, &g_sum, [t] { return new SumWeft(t, 0); }, bench_sum, t);
        add<Sum, SumImpl>(g + "weft_g" + std::to_string(sum_grain), false, &g_sum,
                          [t, sum_grain] { return new SumWeft(t - 1, sum_grain); }, bench_sum);
    }
}

}  // namespace

int main(int argc, char **argv)
{
    weft_bench_passive_omp(argv);
    register_all();
    return weft_bench_run(argc, argv);
}

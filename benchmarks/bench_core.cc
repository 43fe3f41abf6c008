// The scheduler core against the runtimes users compare it with, measured
// in the same process: spawn + run of empty tasks, recursive Fibonacci
// with one spawn per call (OpenMP tasks, oneTBB task_group, sequential C),
// idle CPU after work stops, and wake-from-idle latency next to a plain
// condition-variable wake.
//
// Names are "<group>/<case>"; within a group every case counts the same
// unit in items_per_second, and cases labelled "baseline" are what
// report.py divides by. Thread counts are in the group name (t1, t2, ...):
// weft runs that many workers while the benchmark thread sleeps; OpenMP
// and oneTBB run that many threads, the caller included.
//
// Fibonacci follows the peers' definition: per level, spawn fib(n-1),
// compute fib(n-2) inline, then wait; F(n+1)-1 spawns in all.

#include "bench_main.hh"
#include <benchmark/benchmark.h>

#include <omp.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/resource.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
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

long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

long fib_spawns(int n) { return n < 2 ? 0 : 1 + fib_spawns(n - 1) + fib_spawns(n - 2); }

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A one-shot completion the benchmark thread sleeps on.
struct Done {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    bool done = false;
    void signal()
    {
        pthread_mutex_lock(&m);
        done = true;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    void wait()
    {
        pthread_mutex_lock(&m);
        while (!done)
            pthread_cond_wait(&c, &m);
        done = false;
        pthread_mutex_unlock(&m);
    }
};

weft_sched *make_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    weft_sched *s = nullptr;
    if (weft_sched_create(&s, &c) != WEFT_OK) {
        std::fprintf(stderr, "bench_core: weft_sched_create failed\n");
        std::abort();
    }
    return s;
}

// ---- Fibonacci -------------------------------------------------------------

weft_sched *g_sched;

struct WFib {
    int n;
    long r;
    std::atomic<bool> done;
};

bool wfib_done(void *c) { return static_cast<WFib *>(c)->done.load(std::memory_order_acquire); }

void wfib(void *a)
{
    WFib *f = static_cast<WFib *>(a);
    if (f->n < 2) {
        f->r = f->n;
    } else {
        WFib x{f->n - 1, 0, {false}};
        weft_spawn(g_sched, wfib, &x);
        WFib y{f->n - 2, 0, {false}};
        wfib(&y);
        weft_wait_until(wfib_done, &x);
        f->r = x.r + y.r;
    }
    f->done.store(true, std::memory_order_release);
}

struct WRoot {
    WFib fib;
    Done *done;
};

void wroot(void *a)
{
    WRoot *r = static_cast<WRoot *>(a);
    wfib(&r->fib);
    r->done->signal();
}

// traced: recording on throughout (weft_trace_start, 2^16 events per
// thread, the ring wrapping), for the cost of recording per event: each
// fib call is a task begin and end, so events = 2 * spawns.
void BM_fib_weft(benchmark::State &st, int n, unsigned threads, bool traced = false)
{
    g_sched = make_sched(threads);
    if (traced && weft_trace_start(g_sched, 1u << 16) != WEFT_OK)
        st.SkipWithError("trace_start");
    Done done;
    long want = fib_seq(n);
    for (auto _ : st) {
        WRoot root{{n, 0, {false}}, &done};
        weft_spawn(g_sched, wroot, &root);
        done.wait();
        if (root.fib.r != want)
            st.SkipWithError("wrong result");
    }
    weft_sched_wait_idle(g_sched);
    uint64_t fibers = 0;
    for (unsigned w = 0; w < threads; w++) {
        weft_worker_stats s;
        weft_sched_stats(g_sched, w, &s);
        fibers += s.fibers_created;
    }
    st.counters["fibers_created"] = double(fibers);
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_spawns(n));
    weft_sched_destroy(g_sched);
}

long ofib(int n)
{
    if (n < 2)
        return n;
    long x, y;
#pragma omp task shared(x) firstprivate(n)
    x = ofib(n - 1);
    y = ofib(n - 2);
#pragma omp taskwait
    return x + y;
}

void BM_fib_omp(benchmark::State &st, int n, unsigned threads)
{
    long want = fib_seq(n);
    omp_set_num_threads(int(threads));
    for (auto _ : st) {
        long r = 0;
#pragma omp parallel
#pragma omp single
        r = ofib(n);
        if (r != want)
            st.SkipWithError("wrong result");
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_spawns(n));
    st.SetLabel("baseline");
}

long tfib(int n)
{
    if (n < 2)
        return n;
    long x, y;
    tbb::task_group g;
    g.run([&] { x = tfib(n - 1); });
    y = tfib(n - 2);
    g.wait();
    return x + y;
}

void BM_fib_tbb(benchmark::State &st, int n, unsigned threads)
{
    long want = fib_seq(n);
    tbb::task_arena arena{int(threads)};
    for (auto _ : st) {
        long r = 0;
        arena.execute([&] { r = tfib(n); });
        if (r != want)
            st.SkipWithError("wrong result");
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_spawns(n));
    st.SetLabel("baseline");
}

void BM_fib_seq(benchmark::State &st, int n)
{
    for (auto _ : st)
        benchmark::DoNotOptimize(fib_seq(n));
    st.SetItemsProcessed(int64_t(st.iterations()) * fib_spawns(n));
}

// ---- spawn + run of empty tasks ---------------------------------------------

constexpr long kTasks = 1000000;

void empty_task(void *) {}

struct Fan {
    long n;
    Done *done;
};

void fan_out(void *a)
{
    Fan *f = static_cast<Fan *>(a);
    for (long i = 0; i < f->n; i++)
        weft_spawn(g_sched, empty_task, nullptr);
}

void BM_spawn_weft_worker(benchmark::State &st, unsigned threads)
{
    g_sched = make_sched(threads);
    for (auto _ : st) {
        Fan f{kTasks, nullptr};
        weft_spawn(g_sched, fan_out, &f);
        weft_sched_wait_idle(g_sched);
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kTasks);
    weft_sched_destroy(g_sched);
}

void BM_spawn_weft_external(benchmark::State &st, unsigned threads)
{
    g_sched = make_sched(threads);
    for (auto _ : st) {
        for (long i = 0; i < kTasks; i++)
            weft_spawn(g_sched, empty_task, nullptr);
        weft_sched_wait_idle(g_sched);
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kTasks);
    weft_sched_destroy(g_sched);
}

void BM_spawn_tbb(benchmark::State &st, unsigned threads)
{
    tbb::task_arena arena{int(threads)};
    for (auto _ : st) {
        arena.execute([&] {
            tbb::task_group g;
            for (long i = 0; i < kTasks; i++)
                g.run([] {});
            g.wait();
        });
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kTasks);
    st.SetLabel("baseline");
}

// spawn_outside's baseline: the benchmark thread is not in the arena (it
// has no slot: reserved_for_masters = 0) and hands each task over with
// task_arena::enqueue, as weft's outside spawns hand them to the global
// ring; `threads` TBB workers run them. The wait joins the arena only
// to wait on the group. TBB's worker pool is one short of the cores
// unless told otherwise, hence the global_control.
void BM_spawn_tbb_external(benchmark::State &st, unsigned threads)
{
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads + 1);
    tbb::task_arena arena{int(threads), 0};
    arena.initialize();
    for (auto _ : st) {
        tbb::task_group g;
        for (long i = 0; i < kTasks; i++)
            arena.enqueue(g.defer([] {}));
        arena.execute([&] { g.wait(); });
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kTasks);
    st.SetLabel("baseline");
}

void BM_spawn_omp(benchmark::State &st, unsigned threads)
{
    omp_set_num_threads(int(threads));
    for (auto _ : st) {
#pragma omp parallel
#pragma omp single
        {
            for (long i = 0; i < kTasks; i++) {
#pragma omp task
                { benchmark::ClobberMemory(); }
            }
#pragma omp taskwait
        }
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kTasks);
    st.SetLabel("baseline");
}

// ---- spawn + run + join in small batches -------------------------------------
//
// The fork-join path on its own: kRoots roots per thread each spawn
// kBatch empty tasks, join them, and do that kRounds times, as a frame of
// a game spawns its jobs and waits for them. (Several roots per thread,
// so that a thread whose roots finish first takes whole roots from the
// others instead of single tasks of a round.) Nothing piles up, so this is
// the spawn -> run -> join cost of a task that runs where it was spawned
// (or is stolen by an idle thread), with the records in cache. spawn_t*
// above is the other extreme, a backlog of 10^6. One item is one task;
// per-task cost in ns*thread is the wall time per task times threads.

constexpr long kBatch = 64;
constexpr long kRoots = 64;
constexpr long kRounds = 1 << 8;    // 2^14 tasks per root, 2^20 per thread

struct alignas(128) Batch {   // one root's counter per line pair: no false sharing
    std::atomic<long> ran{0};
    std::atomic<unsigned> *roots_left;
    Done *done;
};

void batch_child(void *a)
{
    static_cast<Batch *>(a)->ran.fetch_add(1, std::memory_order_relaxed);
}

bool batch_joined(void *a)
{
    return static_cast<Batch *>(a)->ran.load(std::memory_order_relaxed) == kBatch;
}

void batch_root(void *a)
{
    Batch *b = static_cast<Batch *>(a);
    for (long r = 0; r < kRounds; r++) {
        b->ran.store(0, std::memory_order_relaxed);   // every child of the last round has counted
        for (long k = 0; k < kBatch; k++)
            weft_spawn(g_sched, batch_child, b);
        weft_wait_until(batch_joined, b);
    }
    if (b->roots_left->fetch_sub(1, std::memory_order_acq_rel) == 1)
        b->done->signal();
}

void BM_spawn_join_weft(benchmark::State &st, unsigned threads)
{
    g_sched = make_sched(threads);
    Done done;
    std::vector<Batch> roots(threads * kRoots);
    for (auto _ : st) {
        std::atomic<unsigned> left{unsigned(roots.size())};
        for (Batch &b : roots) {
            b.roots_left = &left;
            b.done = &done;
            weft_spawn(g_sched, batch_root, &b);
        }
        done.wait();
    }
    uint64_t steals = 0, fibers = 0;
    for (unsigned w = 0; w < threads; w++) {
        weft_worker_stats s;
        weft_sched_stats(g_sched, w, &s);
        steals += s.steals;
        fibers += s.fibers_created;
    }
    st.counters["steals_per_round"] = double(steals) / double(st.iterations() * threads * kRoots * kRounds);
    st.counters["fibers_created"] = double(fibers);
    st.SetItemsProcessed(int64_t(st.iterations()) * threads * kRoots * kRounds * kBatch);
    weft_sched_destroy(g_sched);
}

void BM_spawn_join_tbb(benchmark::State &st, unsigned threads)
{
    tbb::task_arena arena{int(threads)};
    for (auto _ : st) {
        arena.execute([&] {
            tbb::task_group roots;
            for (unsigned t = 0; t < threads * kRoots; t++)
                roots.run([] {
                    for (long r = 0; r < kRounds; r++) {
                        tbb::task_group g;
                        for (long k = 0; k < kBatch; k++)
                            g.run([] {});
                        g.wait();
                    }
                });
            roots.wait();
        });
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * threads * kRoots * kRounds * kBatch);
    st.SetLabel("baseline");
}

void BM_spawn_join_omp(benchmark::State &st, unsigned threads)
{
    omp_set_num_threads(int(threads));
    for (auto _ : st) {
#pragma omp parallel
        for (long r = 0; r < kRoots * kRounds; r++) {
            for (long k = 0; k < kBatch; k++) {
#pragma omp task
                { benchmark::ClobberMemory(); }
            }
#pragma omp taskwait
        }
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * threads * kRoots * kRounds * kBatch);
    st.SetLabel("baseline");
}

// ---- idle CPU -------------------------------------------------------------------

double cpu_seconds()
{
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6 +
           double(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
}

void BM_idle_cpu(benchmark::State &st, unsigned threads)
{
    g_sched = make_sched(threads);
    double pct = 0;
    for (auto _ : st) {
        for (long i = 0; i < 100000; i++)
            weft_spawn(g_sched, empty_task, nullptr);
        weft_sched_wait_idle(g_sched);
        timespec ms = {0, 1000000};
        nanosleep(&ms, nullptr);   // "after 1 ms without work"
        double c0 = cpu_seconds();
        timespec one = {1, 0};
        nanosleep(&one, nullptr);
        pct = (cpu_seconds() - c0) * 100.0;
    }
    st.counters["cpu_percent_of_a_core"] = pct;
    weft_sched_destroy(g_sched);
}

// ---- wake-from-idle latency -------------------------------------------------------
//
// Two ways for the caller to wait, because on a VM they differ by 50x at
// p99 for every runtime, the condvar baseline included:
//   spins   the caller spins until the task stamps the time: a caller that
//           keeps its CPU busy (a game loop). The guest kernel often places
//           the woken thread on the caller's busy CPU (it avoids a vCPU the
//           host has descheduled), where it waits for the caller's slice
//           to end: the milliseconds at p99.
//   sleeps  the caller sleeps on a semaphore that the task posts after
//           stamping: its CPU is free for the woken thread. The latency is
//           still the stamp minus the time before the spawn.
//
// The baseline, one thread asleep on a pthread condition variable, is
// measured in the same loop, its samples taking turns with weft's (which
// goes first alternates), and reported as the condvar_* counters. A VM's
// wake-up tail drifts from one second to the next: measured one after
// the other in one process (weft first), the condvar's p99 came out at
// about half of weft's on this machine class, while in separate
// processes, or in turns as here, the two matched.

std::atomic<uint64_t> g_woke;
sem_t g_stamped;   // posted after each stamp, for callers that sleep
bool g_post;       // whether to post it: set between samples only

void stamp(void *)
{
    g_woke.store(now_ns(), std::memory_order_release);
    if (g_post)
        sem_post(&g_stamped);
}

double percentile_us(std::vector<uint64_t> &lat, unsigned pct)
{
    std::sort(lat.begin(), lat.end());
    return lat[lat.size() * pct / 100] / 1e3;
}

// The floor any scheduler pays: a thread asleep on a condvar, which
// stamps when kicked.
struct CondvarSleeper {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    bool go = false, stop = false;
    std::thread t;

    CondvarSleeper()
    {
        t = std::thread([this] {
            pthread_mutex_lock(&m);
            for (;;) {
                while (!go && !stop)
                    pthread_cond_wait(&c, &m);
                if (stop)
                    break;
                go = false;
                stamp(nullptr);
            }
            pthread_mutex_unlock(&m);
        });
    }
    void kick()
    {
        pthread_mutex_lock(&m);
        go = true;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    ~CondvarSleeper()
    {
        pthread_mutex_lock(&m);
        stop = true;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
        t.join();
    }
};

// One sample: let the sleepers settle (300 us, longer than spin_us: the
// workers park), kick, and wait (spinning or asleep) until the stamp.
template <typename Kick>
uint64_t wake_sample(bool sleeps, Kick kick)
{
    timespec ts = {0, 300000};
    nanosleep(&ts, nullptr);
    g_woke.store(0);
    uint64_t t0 = now_ns();
    kick();
    if (sleeps)
        while (sem_wait(&g_stamped) != 0)
            ;
    while (g_woke.load(std::memory_order_acquire) == 0)
        ;
    return g_woke.load() - t0;
}

// One iteration: a weft sample and a condvar sample. Only weft's is
// timed (the condvar's runs with the timer paused).
void BM_wake_weft(benchmark::State &st, unsigned threads, bool sleeps)
{
    g_sched = make_sched(threads);
    CondvarSleeper cv;
    std::vector<uint64_t> lat, base;
    sem_init(&g_stamped, 0, 0);
    g_post = sleeps;
    bool weft_first = true;
    for (auto _ : st) {
        st.PauseTiming();
        if (!weft_first)
            base.push_back(wake_sample(sleeps, [&] { cv.kick(); }));
        st.ResumeTiming();
        lat.push_back(wake_sample(sleeps, [] { weft_spawn(g_sched, stamp, nullptr); }));
        st.PauseTiming();
        if (weft_first)
            base.push_back(wake_sample(sleeps, [&] { cv.kick(); }));
        weft_first = !weft_first;
        st.ResumeTiming();
    }
    g_post = false;
    sem_destroy(&g_stamped);
    st.counters["p50_us"] = percentile_us(lat, 50);
    st.counters["p99_us"] = percentile_us(lat, 99);
    st.counters["condvar_p50_us"] = percentile_us(base, 50);
    st.counters["condvar_p99_us"] = percentile_us(base, 99);
    weft_sched_destroy(g_sched);
}

void register_all()
{
    std::vector<unsigned> counts;
    for (unsigned t = 1; t <= max_threads(); t *= 2)
        counts.push_back(t);
    const char *big = std::getenv("WEFT_BENCH_BIG");   // fib 35 and OpenMP 32 take long
    for (int n : {25, 30, 32, 35}) {
        if (n == 35 && !big)
            continue;
        std::string seq = "fib" + std::to_string(n) + "_seq/sequential";
        benchmark::RegisterBenchmark(seq.c_str(), BM_fib_seq, n)->Unit(benchmark::kMillisecond);
        for (unsigned t : counts) {
            std::string g = "fib" + std::to_string(n) + "_t" + std::to_string(t) + "/";
            benchmark::RegisterBenchmark((g + "weft").c_str(), BM_fib_weft, n, t, false)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
            if (n == 30)
                benchmark::RegisterBenchmark((g + "weft_traced").c_str(), BM_fib_weft, n, t, true)
                    ->Unit(benchmark::kMillisecond)->UseRealTime();
            benchmark::RegisterBenchmark((g + "tbb").c_str(), BM_fib_tbb, n, t)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
            if (n <= 30 || big)
                benchmark::RegisterBenchmark((g + "omp").c_str(), BM_fib_omp, n, t)
                    ->Unit(benchmark::kMillisecond)->UseRealTime();
        }
    }
    // Cases timed by the wall clock in ms, taking the thread count.
    auto wall_ms = [](const std::string &name, void (*fn)(benchmark::State &, unsigned),
                      unsigned t) {
        benchmark::RegisterBenchmark(name.c_str(), fn, t)
            ->Unit(benchmark::kMillisecond)->UseRealTime();
    };
    for (unsigned t : counts) {
        std::string g = "spawn_t" + std::to_string(t) + "/";
        wall_ms(g + "weft_from_worker", BM_spawn_weft_worker, t);
        wall_ms(g + "tbb", BM_spawn_tbb, t);
        wall_ms(g + "omp", BM_spawn_omp, t);
        std::string j = "spawn_join_t" + std::to_string(t) + "/";
        wall_ms(j + "weft", BM_spawn_join_weft, t);
        wall_ms(j + "tbb", BM_spawn_join_tbb, t);
        wall_ms(j + "omp", BM_spawn_join_omp, t);
        // From a thread that is not one of the pool's: a group of its own,
        // so each case is compared with its like.
        std::string o = "spawn_outside_t" + std::to_string(t) + "/";
        wall_ms(o + "weft", BM_spawn_weft_external, t);
        wall_ms(o + "tbb_enqueue", BM_spawn_tbb_external, t);
    }
    for (unsigned t : counts) {
        std::string g = "wake_t" + std::to_string(t) + "/";
        for (bool sleeps : {false, true})
            benchmark::RegisterBenchmark((g + (sleeps ? "weft_caller_sleeps" : "weft")).c_str(),
                                         BM_wake_weft, t, sleeps)
                ->Unit(benchmark::kMicrosecond)->Iterations(2000)->UseRealTime();
        std::string i = "idle_t" + std::to_string(t) + "/weft";
        benchmark::RegisterBenchmark(i.c_str(), BM_idle_cpu, t)->Iterations(1)->UseRealTime();
    }
}

}  // namespace

int main(int argc, char **argv)
{
    register_all();
    return weft_bench_run(argc, argv);
}

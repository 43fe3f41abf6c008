// Spawn throughput by where the spawn comes from (issue 22, item 7): N
// empty tasks spawned onto 1 and 2 workers from
//   weft_worker    a task on one of the workers (its deque)
//   weft_bound     the benchmark thread, bound with weft_sched_bind
//   weft_plain     the benchmark thread, never bound (an outside spawner
//                  that spawns repeatedly)
//   tbb_enqueue    oneTBB: task_arena::enqueue from a thread outside the
//                  arena (the baseline for the two outside cases)
//   tbb_run        oneTBB: task_group::run from inside the arena (the
//                  baseline for weft_worker)
// all in one binary, so benchmarks/ab.py can compare two builds case by
// case and the ratios between cases hold within one run.
//
// Groups: spawn_src_t<W>_burst (10^6 tasks spawned in one go, then a wait
// for all: the records stream through memory, the queues grow long) and
// spawn_src_t<W>_frame (frames of 1024 tasks, each spawned and waited for
// before the next: a game frame's jobs, the records in cache). One item
// is one task; the time is wall time for spawn + run of all of them.
// The counter spawn_ns is the spawn loop's own time per task (for the
// outside cases the spawner's cost; the workers run the tasks meanwhile),
// spawn_cpu_ns the same loop's CPU time (its thread's clock), which time
// the spawner spends preempted on a loaded machine does not inflate.
//
// Group spawn_main_t<T> (issue 36, row 3): 10^6 empty tasks spawned from
// the benchmark thread ("main"), then a wait for all, with T threads in
// all, main included, as the issue counts them (enkiTS's main thread is
// its thread 0):
//   weft_bound   main bound (weft_sched_bind) beside T - 1 workers; at
//                T = 1, WEFT_WORKERS_NONE: main's spawns go on its own
//                deque and run when it waits
//   weft_plain   main never bound, T - 1 workers (T = 2 only)
//   tbb_group    oneTBB: task_group::run from main inside an arena of T
//                slots (main is one of them), then task_group::wait
//   omp_task     OpenMP: #pragma omp task from the single thread of a
//                parallel region of T threads, then taskwait
//
// WEFT_BENCH_PIN=1 pins the benchmark thread to CPU 0 and worker i (weft's
// and oneTBB's) to CPU (i + 1) mod CPUs. On a small shared VM the outside
// cases otherwise swing by 2-3x with where the scheduler happens to put
// the spawner and the worker: on one CPU they take turns and never share
// a cache line, on two every hand-off is a cross-core transfer.

#include "bench_main.hh"
#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>
#include <tbb/task_scheduler_observer.h>
#include <omp.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "weft.h"

namespace {

const char *const kProg = "bench_spawn";

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void empty_task(void *) {}

// ---- WEFT_BENCH_PIN ----------------------------------------------------------

bool pin_wanted()
{
    static const bool on = std::getenv("WEFT_BENCH_PIN") && std::atoi(std::getenv("WEFT_BENCH_PIN"));
    return on;
}

void pin_self(unsigned cpu)
{
    unsigned n = std::thread::hardware_concurrency();
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(n ? cpu % n : 0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void pin_worker(unsigned worker, void *) { pin_self(worker + 1); }

// The benchmark thread on CPU 0 for the case, back to every CPU after.
struct PinCaller {
    cpu_set_t saved;
    bool on = pin_wanted();
    PinCaller()
    {
        if (on) {
            pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
            pin_self(0);
        }
    }
    ~PinCaller()
    {
        if (on)
            pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    }
};

// oneTBB's workers as weft's: the k-th to enter the arena on CPU k + 1.
struct TbbPin : tbb::task_scheduler_observer {
    std::atomic<unsigned> next{0};
    explicit TbbPin(tbb::task_arena &a) : tbb::task_scheduler_observer(a)
    {
        if (pin_wanted())
            observe(true);
    }
    void on_scheduler_entry(bool worker) override
    {
        if (worker)
            pin_self(next.fetch_add(1) + 1);
    }
    ~TbbPin() { observe(false); }
};

weft_sched *bench_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    if (pin_wanted())
        c.on_worker_start = pin_worker;
    weft_sched *s = nullptr;
    weft_bench_check(kProg, weft_sched_create(&s, &c), "weft_sched_create");
    return s;
}

weft_sched *g_sched;

uint64_t cpu_ns()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Spawns n empty tasks on g_sched from the calling thread; the loop's
// wall time, and its thread's CPU time in *cpu (which a loaded machine's
// preemptions do not inflate).
uint64_t spawn_n(long n, uint64_t *cpu)
{
    uint64_t c0 = cpu_ns();
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (weft_spawn(g_sched, empty_task, nullptr) != WEFT_OK)
            std::abort();
    uint64_t t = now_ns() - t0;
    *cpu += cpu_ns() - c0;
    return t;
}

struct Fan {
    long n;
    uint64_t ns;
    uint64_t cpu;
    std::atomic<bool> done{false};
};

void fan_out(void *a)
{
    Fan *f = static_cast<Fan *>(a);
    f->ns = spawn_n(f->n, &f->cpu);
    f->done.store(true, std::memory_order_release);
}

enum class Src { worker, bound, plain };

// `frames` frames of `n` tasks each, waited for one at a time.
void BM_weft(benchmark::State &st, Src src, unsigned workers, long n, long frames)
{
    PinCaller pin;
    g_sched = bench_sched(workers);
    if (src == Src::bound)
        weft_bench_check(kProg, weft_sched_bind(g_sched), "weft_sched_bind");
    uint64_t spawn_ns = 0, spawn_cpu = 0;
    for (auto _ : st) {
        for (long f = 0; f < frames; f++) {
            if (src == Src::worker) {
                Fan fan{n, 0, 0};
                weft_bench_check(kProg, weft_spawn(g_sched, fan_out, &fan), "weft_spawn");
                // The fan's own task counts until it returns: wait_idle
                // covers it and everything it spawned.
                weft_sched_wait_idle(g_sched);
                spawn_ns += fan.ns;
                spawn_cpu += fan.cpu;
            } else {
                spawn_ns += spawn_n(n, &spawn_cpu);
                weft_sched_wait_idle(g_sched);
            }
        }
    }
    if (src == Src::bound)
        weft_sched_unbind();
    double tasks = double(st.iterations()) * double(n * frames);
    st.counters["spawn_ns"] = double(spawn_ns) / tasks;
    st.counters["spawn_cpu_ns"] = double(spawn_cpu) / tasks;
    st.SetItemsProcessed(int64_t(tasks));
    weft_sched_destroy(g_sched);
}

void BM_tbb_enqueue(benchmark::State &st, unsigned workers, long n, long frames)
{
    // The benchmark thread has no slot in the arena (reserved_for_masters
    // = 0): `workers` TBB workers run the tasks. The pool is one short of
    // the cores unless told otherwise, hence the global_control.
    PinCaller pin;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers + 1);
    tbb::task_arena arena{int(workers), 0};
    arena.initialize();
    TbbPin tpin(arena);
    uint64_t spawn_ns = 0;
    for (auto _ : st) {
        for (long f = 0; f < frames; f++) {
            tbb::task_group g;
            uint64_t t0 = now_ns();
            for (long i = 0; i < n; i++)
                arena.enqueue(g.defer([] {}));
            spawn_ns += now_ns() - t0;
            arena.execute([&] { g.wait(); });
        }
    }
    double tasks = double(st.iterations()) * double(n * frames);
    st.counters["spawn_ns"] = double(spawn_ns) / tasks;
    st.SetItemsProcessed(int64_t(tasks));
    st.SetLabel("baseline");
}

void BM_tbb_run(benchmark::State &st, unsigned workers, long n, long frames)
{
    PinCaller pin;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers + 1);
    tbb::task_arena arena{int(workers)};
    arena.initialize();
    TbbPin tpin(arena);
    uint64_t spawn_ns = 0;
    for (auto _ : st) {
        for (long f = 0; f < frames; f++) {
            arena.execute([&] {
                tbb::task_group g;
                uint64_t t0 = now_ns();
                for (long i = 0; i < n; i++)
                    g.run([] {});
                spawn_ns += now_ns() - t0;
                g.wait();
            });
        }
    }
    double tasks = double(st.iterations()) * double(n * frames);
    st.counters["spawn_ns"] = double(spawn_ns) / tasks;
    st.SetItemsProcessed(int64_t(tasks));
}

// ---- spawn_main_t<T> (issue 36, row 3) -------------------------------------------

const long kMainTasks = 1000000;

void BM_main_weft(benchmark::State &st, unsigned threads, bool bound)
{
    PinCaller pin;
    g_sched = bench_sched(threads - 1);
    if (bound)
        weft_bench_check(kProg, weft_sched_bind(g_sched), "weft_sched_bind");
    uint64_t spawn_ns = 0, spawn_cpu = 0;
    for (auto _ : st) {
        spawn_ns += spawn_n(kMainTasks, &spawn_cpu);
        weft_sched_wait_idle(g_sched);
    }
    if (bound)
        weft_sched_unbind();
    double tasks = double(st.iterations()) * double(kMainTasks);
    st.counters["spawn_ns"] = double(spawn_ns) / tasks;
    st.SetItemsProcessed(int64_t(tasks));
    weft_sched_destroy(g_sched);
}

void BM_main_tbb(benchmark::State &st, unsigned threads)
{
    PinCaller pin;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    tbb::task_arena arena{int(threads), 1};   // one slot for main
    arena.initialize();
    TbbPin tpin(arena);
    for (auto _ : st) {
        arena.execute([&] {
            tbb::task_group g;
            for (long i = 0; i < kMainTasks; i++)
                g.run([] {});
            g.wait();
        });
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kMainTasks);
    st.SetLabel("baseline");
}

void BM_main_omp(benchmark::State &st, unsigned threads)
{
    PinCaller pin;
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
#pragma omp single
        {
            for (long i = 0; i < kMainTasks; i++) {
#pragma omp task
                { benchmark::DoNotOptimize(i); }
            }
#pragma omp taskwait
        }
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kMainTasks);
}

void register_all()
{
    for (unsigned t : {1u, 2u}) {
        std::string g = "spawn_main_t" + std::to_string(t) + "/";
        auto reg = [&](const char *name, auto fn, auto... args) {
            benchmark::RegisterBenchmark((g + name).c_str(), fn, args...)
                ->Unit(benchmark::kMillisecond)->UseRealTime();
        };
        reg("weft_bound", BM_main_weft, t, true);
        if (t > 1)
            reg("weft_plain", BM_main_weft, t, false);
        reg("tbb_group", BM_main_tbb, t);
        reg("omp_task", BM_main_omp, t);
    }

    struct Shape {
        const char *name;
        long n, frames;
    };
    for (unsigned w : {1u, 2u}) {
        for (Shape sh : {Shape{"burst", 1000000, 1}, Shape{"frame", 1024, 256}}) {
            std::string g = "spawn_src_t" + std::to_string(w) + "_" + sh.name + "/";
            auto reg = [&](const char *name, auto fn, auto... args) {
                benchmark::RegisterBenchmark((g + name).c_str(), fn, args...)
                    ->Unit(benchmark::kMillisecond)->UseRealTime();
            };
            reg("weft_worker", BM_weft, Src::worker, w, sh.n, sh.frames);
            reg("weft_bound", BM_weft, Src::bound, w, sh.n, sh.frames);
            reg("weft_plain", BM_weft, Src::plain, w, sh.n, sh.frames);
            reg("tbb_enqueue", BM_tbb_enqueue, w, sh.n, sh.frames);
            reg("tbb_run", BM_tbb_run, w, sh.n, sh.frames);
        }
    }
}

}  // namespace

int main(int argc, char **argv)
{
    register_all();
    return weft_bench_run(argc, argv);
}

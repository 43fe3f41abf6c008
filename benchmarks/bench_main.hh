// This file is private to weft's benchmarks: what every benchmark
// binary's main() does around registering its cases.
#ifndef WEFT_BENCH_MAIN_HH
#define WEFT_BENCH_MAIN_HH

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include "weft.h"

// A set-up call that must succeed: else the program names it and aborts
// (a benchmark without its scheduler or primitive measures nothing).
inline void weft_bench_check(const char *prog, int rc, const char *what)
{
    if (rc != WEFT_OK) {
        std::fprintf(stderr, "%s: %s: %s\n", prog, what, weft_strerror(rc));
        std::abort();
    }
}

// A scheduler with `workers` workers and the other defaults, or abort.
inline weft_sched *weft_bench_sched(const char *prog, unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    weft_sched *s = nullptr;
    weft_bench_check(prog, weft_sched_create(&s, &c), "weft_sched_create");
    return s;
}

// libgomp's idle threads spin and slow whatever runs next: binaries with
// OpenMP baselines re-execute themselves with OMP_WAIT_POLICY=passive
// unless the variable is set. On failure they run as they are.
inline void weft_bench_passive_omp(char **argv)
{
    if (!std::getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
}

// Runs the registered cases with Google Benchmark's command line.
inline int weft_bench_run(int argc, char **argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

#endif  // WEFT_BENCH_MAIN_HH

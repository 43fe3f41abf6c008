// enrt N: enkiTS pinned round trip, 2 task threads + main (thread 0): a task pins a task to main, waits for it; mean ns per trip
#include "TaskScheduler.h"
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
using namespace enki;
static TaskScheduler ts;
static std::atomic<bool> done{false};
static long N; static long ran = 0;
struct Far : IPinnedTask { Far() : IPinnedTask(0) {} void Execute() override { ran++; } };
struct End : IPinnedTask { End() : IPinnedTask(0) {} void Execute() override { done = true; } };
static double mean_ns;
struct Driver : ITaskSet {
  Driver() : ITaskSet(1) {}
  void ExecuteRange(TaskSetPartition, uint32_t) override {
    Far far; End end;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < N; i++) { ts.AddPinnedTask(&far); ts.WaitforTask(&far); }
    auto t1 = std::chrono::steady_clock::now();
    mean_ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / N;
    ts.AddPinnedTask(&end);
    ts.WaitforTask(&end);
  }
};
int main(int argc, char **argv) {
  N = atol(argv[1]);
  ts.Initialize(3);
  Driver d;
  ts.AddTaskSetToPipe(&d);
  while (!done) { ts.WaitForNewPinnedTasks(); ts.RunPinnedTasks(); }
  ts.WaitforTask(&d);
  if (ran != N) { printf("WRONG\n"); return 1; }
  printf("%.0f\n", mean_ns);
}

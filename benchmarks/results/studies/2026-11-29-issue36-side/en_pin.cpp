// Row 2, enkiTS (C++): T task threads and main (thread 0), which pumps
// WaitForNewPinnedTasks + RunPinnedTasks. A task set makes N trips a
// round: AddPinnedTask(far) to thread 0, WaitforTask(far). ns per trip,
// timed by the task.
#include "TaskScheduler.h"
#include "kit.h"
#include <atomic>
using namespace enki;
static TaskScheduler ts;
static std::atomic<bool> done{false};
static long N, ran;
static double trip_ns;
struct Far : IPinnedTask { Far() : IPinnedTask(0) {} void Execute() override { ran++; } };
struct End : IPinnedTask { End() : IPinnedTask(0) {} void Execute() override { done = true; } };
static Far far;
static End end;
struct Driver : ITaskSet {
    void ExecuteRange(TaskSetPartition, uint32_t) override
    {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            ts.AddPinnedTask(&far);
            ts.WaitforTask(&far);
        }
        trip_ns = (kit_now() - t0) / N;
        ts.AddPinnedTask(&end);
    }
};
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, n, R);
    N = n;
    TaskSchedulerConfig c;
    c.numTaskThreadsToCreate = T;
    ts.Initialize(c);
    Driver d;
    double ns[64];
    for (int r = 0; r <= R; r++) {
        done = false;
        ts.AddTaskSetToPipe(&d);
        while (!done) {
            ts.WaitForNewPinnedTasks();
            ts.RunPinnedTasks();
        }
        ts.WaitforTask(&d);
        if (r)
            ns[r - 1] = trip_ns;
    }
    if (ran != N * (R + 1))
        kit_wrong("count");
    printf("en_pin T=%d %.1f\n", T, kit_median(ns, R));
}

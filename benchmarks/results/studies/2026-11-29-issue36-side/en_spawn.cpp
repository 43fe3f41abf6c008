// Row 3, enkiTS (C++): main is thread 0 of T (T-1 created); N task sets
// of one element (each only kit_tick) added with AddTaskSetToPipe, then
// WaitforAll. ns per task.
#include "TaskScheduler.h"
#include "kit.h"
#include <vector>
struct Empty : enki::ITaskSet {
    void ExecuteRange(enki::TaskSetPartition, uint32_t) override { kit_tick(); }
};
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    enki::TaskScheduler ts;
    enki::TaskSchedulerConfig c;
    c.numTaskThreadsToCreate = T - 1;
    ts.Initialize(c);
    std::vector<Empty> tasks(N);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            ts.AddTaskSetToPipe(&tasks[i]);
        ts.WaitforAll();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("en_spawn T=%d %.1f\n", T, kit_median(ns, R));
}

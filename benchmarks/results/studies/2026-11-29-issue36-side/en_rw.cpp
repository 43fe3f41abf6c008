// Row 1, enkiTS (C++): the chain as 32 ITaskSets of one element joined
// by Dependency members (SetDependency), AddTaskSetToPipe(first) and
// WaitforTask(last) per cycle from main, which is enkiTS's thread 0 and
// runs tasks while it waits; T threads in all (T-1 created).
#include "TaskScheduler.h"
#include "kit.h"
using namespace enki;
static long cnt;
struct Link : ITaskSet {
    Dependency dep;
    void ExecuteRange(TaskSetPartition, uint32_t) override { cnt++; }
};
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    TaskScheduler ts;
    TaskSchedulerConfig c;
    c.numTaskThreadsToCreate = T - 1;
    ts.Initialize(c);
    static Link l[32];
    for (int i = 1; i < 32; i++)
        l[i].SetDependency(l[i].dep, &l[i - 1]);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            ts.AddTaskSetToPipe(&l[0]);
            ts.WaitforTask(&l[31]);
        }
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("en_rw T=%d %.1f\n", T, kit_median(ns, R));
}

// enki_main T N [REPS]: N empty tasks added from main (thread 0) to an
// enkiTS scheduler of T threads, then WaitforAll; median ns per task.
#include "TaskScheduler.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
struct Empty : enki::ITaskSet {
    void ExecuteRange(enki::TaskSetPartition, uint32_t) override {}
};
int main(int argc, char **argv)
{
    int t = atoi(argv[1]);
    long n = atol(argv[2]);
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    enki::TaskScheduler ts;
    enki::TaskSchedulerConfig c;
    c.numTaskThreadsToCreate = t - 1;
    ts.Initialize(c);
    std::vector<Empty> tasks(n);
    std::vector<double> r;
    for (int k = 0; k <= reps; k++) {
        auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < n; i++)
            ts.AddTaskSetToPipe(&tasks[i]);
        ts.WaitforAll();
        auto t1 = std::chrono::steady_clock::now();
        if (k)
            r.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    }
    std::sort(r.begin(), r.end());
    printf("enki T=%d n=%ld total_ns %.1f\n", t, n, r[r.size() / 2]);
}

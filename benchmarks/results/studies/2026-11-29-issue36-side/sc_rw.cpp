// Row 1, dpuyda/scheduling: the chain as its ResubmitGraph test builds
// it (Task::Succeed), thread_pool.Submit(&first) + Wait() per cycle from
// main; T threads in the pool. ns per cycle.
#include "scheduling/scheduling.hpp"
#include "kit.h"
#include <vector>
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    scheduling::ThreadPool pool(T);
    long cnt = 0;
    std::vector<scheduling::Task> tasks(32);
    tasks[0] = scheduling::Task([&] { ++cnt; });
    for (size_t i = 1; i < tasks.size(); i++) {
        tasks[i] = scheduling::Task([&] { ++cnt; });
        tasks[i].Succeed(&tasks[i - 1]);
    }
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            pool.Submit(&tasks[0]);
            pool.Wait();
        }
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("sc_rw T=%d %.1f\n", T, kit_median(ns, R));
}

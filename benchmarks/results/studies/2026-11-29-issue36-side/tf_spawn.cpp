// Row 3, Taskflow: T workers; N executor.silent_async calls from main
// (each task only kit_tick), then wait_for_all. ns per task.
#include <taskflow/taskflow.hpp>
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    tf::Executor ex(T);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            ex.silent_async([] { kit_tick(); });
        ex.wait_for_all();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("tf_spawn T=%d %.1f\n", T, kit_median(ns, R));
}

// Row 3, oneTBB: global_control caps the threads at T (main takes part
// in the wait); N task_group::run calls from main (each task only
// kit_tick), then wait. ns per task.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_group.h>
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, T);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        oneapi::tbb::task_group tg;
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            tg.run([] { kit_tick(); });
        tg.wait();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("tbb_spawn T=%d %.1f\n", T, kit_median(ns, R));
}

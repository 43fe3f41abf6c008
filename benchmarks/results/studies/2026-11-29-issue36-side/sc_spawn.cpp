// Row 3, dpuyda/scheduling: a ThreadPool of T threads; N Submit(lambda)
// calls from main (each task only kit_tick), then Wait. ns per task.
#include "scheduling/scheduling.hpp"
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    scheduling::ThreadPool pool(T);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            pool.Submit([] { kit_tick(); });
        pool.Wait();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("sc_spawn T=%d %.1f\n", T, kit_median(ns, R));
}

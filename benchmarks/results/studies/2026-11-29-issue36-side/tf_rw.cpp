// Row 1, Taskflow: the same chain, executor.run(taskflow).wait() from
// main; T workers. ns per cycle.
#include <taskflow/taskflow.hpp>
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    tf::Executor ex(T);
    tf::Taskflow f;
    long cnt = 0;
    tf::Task prev;
    for (int i = 0; i < 32; i++) {
        auto t = f.emplace([&cnt] { cnt++; });
        if (i)
            prev.precede(t);
        prev = t;
    }
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            ex.run(f).wait();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("tf_rw T=%d %.1f\n", T, kit_median(ns, R));
}

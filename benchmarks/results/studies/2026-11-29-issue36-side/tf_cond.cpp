// Row 4, Taskflow: the same loop, a condition task returning the
// successor's index (cond.precede(body, done)); executor.run(tf).wait()
// per round from main; T workers. ns per iteration.
#include <taskflow/taskflow.hpp>
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    tf::Executor ex(T);
    tf::Taskflow f;
    long left = 0, body = 0;
    auto init = f.emplace([&] { left = N; });
    auto d = f.emplace([] {});
    auto b = f.emplace([&] { body++; });
    auto c = f.emplace([&]() -> int { return --left > 0 ? 0 : 1; });
    init.precede(b);
    b.precede(c);
    c.precede(b, d);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        ex.run(f).wait();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (body != N * (R + 1))
        kit_wrong("count");
    printf("tf_cond T=%d %.2f\n", T, kit_median(ns, R));
}

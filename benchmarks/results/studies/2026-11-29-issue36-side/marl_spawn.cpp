// Row 3, marl: a Scheduler of T worker threads bound to main; N
// marl::schedule calls (each task only kit_tick, then WaitGroup::done),
// then WaitGroup::wait from main. ns per task.
#include "marl/defer.h"
#include "marl/scheduler.h"
#include "marl/waitgroup.h"
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    marl::Scheduler::Config cfg;
    cfg.setWorkerThreadCount(T);
    marl::Scheduler sched(cfg);
    sched.bind();
    defer(sched.unbind());
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        marl::WaitGroup wg(N);
        for (long i = 0; i < N; i++)
            marl::schedule([wg] { kit_tick(); wg.done(); });
        wg.wait();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("marl_spawn T=%d %.1f\n", T, kit_median(ns, R));
}

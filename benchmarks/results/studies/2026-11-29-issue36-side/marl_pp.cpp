// Row 5, marl: event ping-pong between two tasks on a Scheduler of 2
// worker threads (marl places tasks itself: no pinning), N round trips
// through two marl::Event (Auto); main waits on a WaitGroup. Prints the
// seconds, last on its line.  marl_pp e N
#include "marl/defer.h"
#include "marl/event.h"
#include "marl/scheduler.h"
#include "marl/waitgroup.h"
#include "kit.h"
int main(int argc, char **argv)
{
    long N = argc > 2 ? atol(argv[2]) : 5000;
    marl::Scheduler::Config cfg;
    cfg.setWorkerThreadCount(2);
    marl::Scheduler sched(cfg);
    sched.bind();
    defer(sched.unbind());
    marl::Event a(marl::Event::Mode::Auto), b(marl::Event::Mode::Auto);
    marl::WaitGroup wg(2);
    long got = 0;
    double t0 = kit_now();
    marl::schedule([=, &got] {
        for (long i = 0; i < N; i++) {
            a.signal();
            b.wait();
            got++;
        }
        wg.done();
    });
    marl::schedule([=] {
        for (long i = 0; i < N; i++) {
            a.wait();
            b.signal();
        }
        wg.done();
    });
    wg.wait();
    double sec = (kit_now() - t0) * 1e-9;
    if (got != N)
        kit_wrong("count");
    printf("marl_pp_e %.4f\n", sec);
}

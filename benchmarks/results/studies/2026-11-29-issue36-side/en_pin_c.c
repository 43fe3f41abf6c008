/* Row 2, enkiTS (C API): as en_pin.cpp through TaskScheduler_c.h. */
#include <stdatomic.h>
#include "TaskScheduler_c.h"
#include "kit.h"
static enkiTaskScheduler *ts;
static enkiPinnedTask *far, *end;
static atomic_int done;
static long N, ran;
static double trip_ns;
static void far_fn(void *a) { (void)a; ran++; }
static void end_fn(void *a) { (void)a; atomic_store(&done, 1); }
static void driver(uint32_t b, uint32_t e, uint32_t th, void *a)
{
    (void)b; (void)e; (void)th; (void)a;
    double t0 = kit_now();
    for (long i = 0; i < N; i++) {
        enkiAddPinnedTask(ts, far);
        enkiWaitForPinnedTask(ts, far);
    }
    trip_ns = (kit_now() - t0) / N;
    enkiAddPinnedTask(ts, end);
}
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, n, R);
    N = n;
    ts = enkiNewTaskScheduler();
    struct enkiTaskSchedulerConfig c = enkiGetTaskSchedulerConfig(ts);
    c.numTaskThreadsToCreate = (uint32_t)T;
    enkiInitTaskSchedulerWithConfig(ts, c);
    enkiTaskSet *d = enkiCreateTaskSet(ts, driver);
    far = enkiCreatePinnedTask(ts, far_fn, 0);
    end = enkiCreatePinnedTask(ts, end_fn, 0);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        atomic_store(&done, 0);
        enkiAddTaskSet(ts, d);
        while (!atomic_load(&done)) {
            enkiWaitForNewPinnedTasks(ts);
            enkiRunPinnedTasks(ts);
        }
        enkiWaitForTaskSet(ts, d);
        if (r)
            ns[r - 1] = trip_ns;
    }
    if (ran != N * (R + 1))
        kit_wrong("count");
    printf("en_pin_c T=%d %.1f\n", T, kit_median(ns, R));
    enkiDeleteTaskSet(ts, d);
    enkiDeletePinnedTask(ts, far);
    enkiDeletePinnedTask(ts, end);
    enkiDeleteTaskScheduler(ts);
    return 0;
}

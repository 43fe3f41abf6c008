/* Row 3, enkiTS (C API): as en_spawn.cpp through TaskScheduler_c.h. */
#include "TaskScheduler_c.h"
#include "kit.h"
static void empty(uint32_t b, uint32_t e, uint32_t th, void *a)
{
    (void)b; (void)e; (void)th; (void)a;
    kit_tick();
}
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    enkiTaskScheduler *ts = enkiNewTaskScheduler();
    struct enkiTaskSchedulerConfig c = enkiGetTaskSchedulerConfig(ts);
    c.numTaskThreadsToCreate = (uint32_t)T - 1;
    enkiInitTaskSchedulerWithConfig(ts, c);
    enkiTaskSet **t = malloc(sizeof *t * (size_t)N);
    for (long i = 0; i < N; i++)
        t[i] = enkiCreateTaskSet(ts, empty);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++)
            enkiAddTaskSet(ts, t[i]);
        enkiWaitForAll(ts);
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("en_spawn_c T=%d %.1f\n", T, kit_median(ns, R));
    for (long i = 0; i < N; i++)
        enkiDeleteTaskSet(ts, t[i]);
    free(t);
    enkiDeleteTaskScheduler(ts);
    return 0;
}

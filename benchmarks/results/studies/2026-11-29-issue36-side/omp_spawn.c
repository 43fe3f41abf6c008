/* Row 3, OpenMP: a team of T; one thread creates N tasks (each only
 * kit_tick), then taskwait. ns per task. */
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    double ns[64];
#pragma omp parallel num_threads(T)
#pragma omp single
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
#pragma omp task
            kit_tick();
        }
#pragma omp taskwait
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (kit_ticks() != N * (R + 1))
        kit_wrong("count");
    printf("omp_spawn T=%d %.1f\n", T, kit_median(ns, R));
    return 0;
}

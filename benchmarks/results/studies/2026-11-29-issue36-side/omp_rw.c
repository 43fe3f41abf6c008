/* Row 1, OpenMP: the chain as 32 tasks with depend(inout) on one
 * variable, created by one thread of a team of T, then taskwait; the team
 * stays up between cycles (OpenMP has no graph to run again). */
#include "kit.h"
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    long cnt = 0;
    double ns[64];
    int dep = 0;
#pragma omp parallel num_threads(T)
#pragma omp single
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            for (int k = 0; k < 32; k++) {
#pragma omp task depend(inout : dep) shared(cnt)
                cnt++;
            }
#pragma omp taskwait
        }
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    (void)dep;
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("omp_rw T=%d %.1f\n", T, kit_median(ns, R));
    return 0;
}

// Row 1, oneTBB: a flow graph of 32 continue_nodes in a chain,
// try_put(continue_msg) to the first and wait_for_all per cycle;
// global_control caps the threads at T (main takes part in the wait).
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include "kit.h"
#include <memory>
#include <vector>
using namespace oneapi::tbb;
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    global_control gc(global_control::max_allowed_parallelism, T);
    flow::graph g;
    long cnt = 0;
    std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> n;
    for (int i = 0; i < 32; i++) {
        n.emplace_back(new flow::continue_node<flow::continue_msg>(g, [&](const flow::continue_msg &) {
            cnt++;
            return flow::continue_msg();
        }));
        if (i)
            flow::make_edge(*n[i - 1], *n[i]);
    }
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        for (long i = 0; i < N; i++) {
            n[0]->try_put(flow::continue_msg());
            g.wait_for_all();
        }
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (cnt != 32 * N * (R + 1))
        kit_wrong("count");
    printf("tbb_rw T=%d %.1f\n", T, kit_median(ns, R));
}

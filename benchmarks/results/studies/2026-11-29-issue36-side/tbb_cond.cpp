// Row 4, oneTBB: the loop as a flow graph (bench_graph's condloop/tbb):
// body -> cond, a multifunction_node whose port 0 feeds body again and
// port 1 done; one message goes round; try_put + wait_for_all per round;
// global_control caps the threads at T. ns per iteration.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include "kit.h"
#include <tuple>
namespace flow = oneapi::tbb::flow;
int main(int argc, char **argv)
{
    KIT_ARGS(argc, argv, T, N, R);
    using cond_t = flow::multifunction_node<int, std::tuple<int, int>>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, T);
    long left = 0, body = 0;
    flow::graph g;
    flow::function_node<int, int> b(g, flow::unlimited, [&](int v) { body++; return v; });
    cond_t c(g, flow::unlimited, [&](int v, cond_t::output_ports_type &p) {
        if (--left > 0)
            std::get<0>(p).try_put(v);
        else
            std::get<1>(p).try_put(v);
    });
    flow::function_node<int, int> d(g, flow::unlimited, [](int v) { return v; });
    flow::make_edge(b, c);
    flow::make_edge(flow::output_port<0>(c), b);
    flow::make_edge(flow::output_port<1>(c), d);
    double ns[64];
    for (int r = 0; r <= R; r++) {
        double t0 = kit_now();
        left = N;
        b.try_put(0);
        g.wait_for_all();
        if (r)
            ns[r - 1] = (kit_now() - t0) / N;
    }
    if (body != N * (R + 1))
        kit_wrong("count");
    printf("tbb_cond T=%d %.2f\n", T, kit_median(ns, R));
}

// Instructions per dependent async task and per pipeline token, weft
// against oneTBB, on one thread so that callgrind counts every
// instruction whatever the machine's load (the wall-clock rows of
// bench_flow ran on a shared, loaded VM). weft: a scheduler with no
// workers, this thread bound; oneTBB: max_allowed_parallelism 1.
//
//   flow_ic <case> <n>
//     weft_chain | tbb_chain        n dependent tasks, each after the one
//                                   before (tbb: flow graph build + run)
//     weft_pipe<L> | tbb_pipe<L>    n tokens through 4 stages (serial,
//                                   parallel, serial, parallel), L lines
// ic.py runs each at two sizes and divides the difference by the items
// the larger adds, so set-up costs cancel.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "weft.h"

static uint64_t acc;
static uint64_t ntok;

__attribute__((noinline)) static void *chain_task(void *p) {
    acc += uintptr_t(p);
    return nullptr;
}

struct WP {
    uint64_t slot[8];
    uint64_t next;
};

static void w_first(weft_pipe *pf, void *arg) {
    auto *p = static_cast<WP *>(arg);
    if (p->next == ntok) {
        weft_pipe_stop(pf);
        return;
    }
    p->slot[weft_pipe_line(pf)] = p->next++;
}

static void w_mid(weft_pipe *pf, void *arg) {
    auto *p = static_cast<WP *>(arg);
    p->slot[weft_pipe_line(pf)] += 1;
}

static void w_last(weft_pipe *pf, void *arg) {
    acc += static_cast<WP *>(arg)->slot[weft_pipe_line(pf)];
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    std::string c = argv[1];
    uint64_t n = strtoull(argv[2], nullptr, 10);
    ntok = n;
    if (c.rfind("weft_", 0) == 0) {
        weft_config cfg;
        weft_config_init(&cfg);
        cfg.workers = WEFT_WORKERS_NONE;
        weft_sched *s;
        if (weft_sched_create(&s, &cfg) || weft_sched_bind(s)) return 1;
        if (c == "weft_chain") {
            std::vector<weft_async *> h(n);
            for (uint64_t i = 0; i < n; i++)
                weft_async_spawn(s, chain_task, (void *)uintptr_t(i), i ? &h[i - 1] : nullptr, i ? 1 : 0, &h[i]);
            weft_async_wait(h[n - 1]);
            for (uint64_t i = 0; i < n; i++) weft_async_release(h[i]);
        } else {
            unsigned L = unsigned(atoi(c.c_str() + 9));
            static WP wp;
            weft_pipe_stage st[4] = {{WEFT_PIPE_SERIAL, w_first, &wp}, {WEFT_PIPE_PARALLEL, w_mid, &wp},
                                     {WEFT_PIPE_SERIAL, w_mid, &wp}, {WEFT_PIPE_PARALLEL, w_last, &wp}};
            weft_pipeline *pl;
            if (weft_pipeline_create(L, st, 4, &pl)) return 1;
            weft_pipeline_run(s, pl);
            weft_pipeline_destroy(pl);
        }
        weft_sched_unbind();
        weft_sched_destroy(s);
    } else {
        namespace tbb = oneapi::tbb;
        tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
        if (c == "tbb_chain") {
            namespace flow = tbb::flow;
            using node_t = flow::continue_node<flow::continue_msg>;
            flow::graph g;
            std::vector<std::unique_ptr<node_t>> nodes;
            nodes.reserve(n);
            for (uint64_t i = 0; i < n; i++) {
                nodes.push_back(std::make_unique<node_t>(g, [i](const flow::continue_msg &) { chain_task((void *)uintptr_t(i)); }));
                if (i) flow::make_edge(*nodes[i - 1], *nodes[i]);
            }
            nodes[0]->try_put(flow::continue_msg());
            g.wait_for_all();
        } else {
            unsigned L = unsigned(atoi(c.c_str() + 8));
            uint64_t next = 0;
            tbb::parallel_pipeline(
                L,
                tbb::make_filter<void, uint64_t>(tbb::filter_mode::serial_in_order,
                                                 [&](tbb::flow_control &fc) -> uint64_t {
                                                     if (next == n) {
                                                         fc.stop();
                                                         return 0;
                                                     }
                                                     return next++;
                                                 }) &
                    tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::parallel, [](uint64_t x) { return x + 1; }) &
                    tbb::make_filter<uint64_t, uint64_t>(tbb::filter_mode::serial_in_order, [](uint64_t x) { return x + 1; }) &
                    tbb::make_filter<uint64_t, void>(tbb::filter_mode::parallel, [](uint64_t x) { acc += x; }));
        }
    }
    std::printf("%llu\n", (unsigned long long)acc);
    return 0;
}

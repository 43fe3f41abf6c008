// Task-graph benchmarks: weft graphs beside oneTBB flow graph and OpenMP
// tasks with depend clauses, in one binary, on the same DAGs.
//
// Groups are "<shape>_<size>_t<threads>/<system>": weft, tbb and omp; the
// baselines carry the label "baseline". items_per_second counts tasks.
// "<shape>_<size>_seq/sequential" runs the same nodes' work in build order
// on one thread, with no scheduler (sequential C).
//
//   chain_2^20, chain_2^23      a linear chain (continuation, no queue)
//   tree_2^20                   a binary tree, each node precedes two
//   wavefront_256, _1024        a grid of blocks; (i,j) after (i-1,j), (i,j-1)
//   wavefront_4096_8x8          Taskflow's wavefront: a 4096x4096 matrix in
//                               8x8 blocks, a 512x512 grid of tasks (262,144);
//                               each task computes its block's value from
//                               the blocks above and to its left (a few ns,
//                               the same code for every runtime)
//   matmul_128, _512, _1024     C = A x B in 32x32 blocks: init tasks for
//                               A and B, then C(i,j) += A(i,k) B(k,j) as a
//                               chain over k per (i,j)
//   parallel_10^6               10^6 independent tasks
//   condloop                    a condition-task loop of 10^6 iterations
//                               beside a chain of 2 x 10^6 and oneTBB's
//                               flow-graph loop (see below)
//   rerun16                     a 16-task graph run 1000 times per
//                               iteration (see "repeated runs" below)
//
// weft and oneTBB build their graph once and run it every iteration (what
// both are for); OpenMP has no reusable graph, so its tasks and depend
// clauses are made every iteration, in topological order, by one thread.
//
// "<shape>_<size>_brd_t<threads>/<system>" (brd: build + run + destroy) is
// the field's shape of the same rows, what Taskflow's and oneTBB's own
// graph benchmarks time: every iteration creates the graph, adds every
// task and edge, runs it, waits for it and destroys it (weft: create, add,
// precede, run, wait, destroy, the first run's cycle check included;
// oneTBB: a flow::graph and its continue_nodes and edges, try_put to the
// roots, wait_for_all, destroy). The scheduler (oneTBB's global_control)
// is made before the loop and one untimed iteration runs first. Their
// sequential baseline is <shape>_<size>_seq's, the same loop. After the
// timed loop each brd case checks that every timed run ran every task
// once, then runs once more from zeroed results and compares them with the
// sequential loop's; a mismatch marks the case with an error.
// Public API only. libgomp's idle threads spin and slow whatever runs
// next, so the program re-executes itself with OMP_WAIT_POLICY=passive
// unless the variable is set.
#include "bench_main.hh"
#include <benchmark/benchmark.h>
#include <omp.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "weft.h"

namespace {

// ---- the DAGs -------------------------------------------------------------

enum class Kind { Trivial, MatInitA, MatInitB, MatMul, Wave };

struct Node {
    Kind kind = Kind::Trivial;
    uint32_t i = 0, j = 0, k = 0;      // block coordinates for matmul, wave
};

// What a wavefront_4096_8x8 task computes for its block from the values
// of the blocks above and to its left: a hash, so that a block that runs
// before either of them, or not at all, changes the final grid.
inline uint32_t wave_mix(uint32_t up, uint32_t left) {
    uint32_t x = up * 0x9e3779b1u ^ (left + 0x7f4a7c15u);
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    return x;
}

// Nodes are numbered in a topological order; preds[v] lists v's
// predecessors (all numbered below v).
struct Dag {
    std::vector<Node> nodes;
    std::vector<std::vector<uint32_t>> preds;
    std::vector<int64_t> slot;         // what trivial tasks write
    // matmul
    uint32_t n = 0, bs = 0, nb = 0;
    std::vector<double> a, b, c;
    // wave: one value per block, row-major (node v is block (v / side, v % side))
    uint32_t wside = 0;
    std::vector<uint32_t> wave;
    // preds flattened (CSR), for the brd cases' build loops: flat()
    std::vector<uint32_t> poff, pflat;
    // the sequential loop's results from zeroed ones: reference()
    bool have_ref = false;
    uint64_t ref = 0;

    uint32_t add(Node nd = Node{}) {
        nodes.push_back(nd);
        preds.emplace_back();
        return uint32_t(nodes.size() - 1);
    }
    void edge(uint32_t u, uint32_t v) { preds[v].push_back(u); }
    size_t size() const { return nodes.size(); }
    size_t edges() const {
        size_t e = 0;
        for (auto &p : preds) e += p.size();
        return e;
    }

    double *block(std::vector<double> &m, uint32_t bi, uint32_t bj) {
        return &m[(size_t(bi) * nb + bj) * bs * bs];
    }

    // What every runtime's task calls: one copy, not inlined, on a cache
    // line of its own, so each runtime runs the same machine code at the
    // same alignment (inlined copies differ in placement, and a hot loop
    // straddling a line boundary ran 1.5-2x slower in bench_parallel).
    __attribute__((noinline, aligned(64))) void run(uint32_t v) {
        const Node &nd = nodes[v];
        switch (nd.kind) {
        case Kind::Trivial:
            slot[v] += 1;
            break;
        case Kind::MatInitA: {
            double *x = block(a, nd.i, nd.j);
            for (uint32_t r = 0; r < bs * bs; r++) x[r] = double((nd.i + r) % 7) * 0.5;
            double *z = block(c, nd.i, nd.j);   // C(i,j) zeroed with A(i,j)
            std::memset(z, 0, sizeof(double) * bs * bs);
            break;
        }
        case Kind::MatInitB: {
            double *x = block(b, nd.i, nd.j);
            for (uint32_t r = 0; r < bs * bs; r++) x[r] = double((nd.j + r) % 5) * 0.25;
            break;
        }
        case Kind::MatMul: {
            const double *x = block(a, nd.i, nd.k), *y = block(b, nd.k, nd.j);
            double *z = block(c, nd.i, nd.j);
            for (uint32_t r = 0; r < bs; r++)
                for (uint32_t q = 0; q < bs; q++) {
                    double xr = x[r * bs + q];
                    for (uint32_t col = 0; col < bs; col++) z[r * bs + col] += xr * y[q * bs + col];
                }
            break;
        }
        case Kind::Wave:
            wave[v] = wave_mix(nd.i ? wave[v - wside] : 0x243f6a88u, nd.j ? wave[v - 1] : 0x85a308d3u);
            break;
        }
    }

    // The predecessor lists in two flat arrays (made once).
    void flat() {
        if (!poff.empty()) return;
        poff.reserve(size() + 1);
        pflat.reserve(edges());
        for (auto &p : preds) {
            poff.push_back(uint32_t(pflat.size()));
            pflat.insert(pflat.end(), p.begin(), p.end());
        }
        poff.push_back(uint32_t(pflat.size()));
    }

    // ---- checking a run's results

    // Zeroes what the tasks write (a and b are rewritten by their init tasks).
    void clear_results() {
        std::fill(slot.begin(), slot.end(), 0);
        std::fill(c.begin(), c.end(), 0.0);
        std::fill(wave.begin(), wave.end(), 0u);
    }
    // A hash of what the tasks wrote.
    uint64_t digest() const {
        uint64_t h = 0xcbf29ce484222325ull;
        auto eat = [&h](const void *p, size_t n) {
            const unsigned char *q = static_cast<const unsigned char *>(p);
            for (size_t k = 0; k < n; k++) h = (h ^ q[k]) * 0x100000001b3ull;
        };
        eat(slot.data(), slot.size() * sizeof slot[0]);
        eat(c.data(), c.size() * sizeof c[0]);
        eat(wave.data(), wave.size() * sizeof wave[0]);
        return h;
    }
    // digest() after one sequential run from zeroed results (made once).
    uint64_t reference() {
        if (!have_ref) {
            clear_results();
            for (uint32_t v = 0; v < size(); v++) run(v);
            ref = digest();
            have_ref = true;
        }
        return ref;
    }
    // The trivial tasks' runs so far: every run adds one per trivial task.
    uint64_t trivial_runs() const {
        uint64_t s = 0;
        for (int64_t x : slot) s += uint64_t(x);
        return s;
    }
    uint64_t trivial_tasks() const {
        uint64_t n = 0;
        for (const Node &nd : nodes) n += nd.kind == Kind::Trivial;
        return n;
    }
};

std::unique_ptr<Dag> make_chain(uint32_t n) {
    auto d = std::make_unique<Dag>();
    for (uint32_t v = 0; v < n; v++) {
        d->add();
        if (v) d->edge(v - 1, v);
    }
    d->slot.assign(n, 0);
    return d;
}

std::unique_ptr<Dag> make_tree(uint32_t depth) {
    auto d = std::make_unique<Dag>();
    uint32_t n = (1u << depth) - 1;
    for (uint32_t v = 0; v < n; v++) {
        d->add();
        if (v) d->edge((v - 1) / 2, v);
    }
    d->slot.assign(n, 0);
    return d;
}

std::unique_ptr<Dag> make_wavefront(uint32_t side) {
    auto d = std::make_unique<Dag>();
    for (uint32_t i = 0; i < side; i++)
        for (uint32_t j = 0; j < side; j++) {
            uint32_t v = d->add();
            if (i) d->edge(v - side, v);
            if (j) d->edge(v - 1, v);
        }
    d->slot.assign(d->size(), 0);
    return d;
}

// Taskflow's wavefront: an m x m matrix in bs x bs blocks, one task per
// block, (i,j) after (i-1,j) and (i,j-1).
std::unique_ptr<Dag> make_wave_blocks(uint32_t m, uint32_t bs) {
    auto d = std::make_unique<Dag>();
    uint32_t side = m / bs;
    d->wside = side;
    for (uint32_t i = 0; i < side; i++)
        for (uint32_t j = 0; j < side; j++) {
            uint32_t v = d->add(Node{Kind::Wave, i, j, 0});
            if (i) d->edge(v - side, v);
            if (j) d->edge(v - 1, v);
        }
    d->slot.assign(d->size(), 0);
    d->wave.assign(d->size(), 0);
    return d;
}

std::unique_ptr<Dag> make_parallel(uint32_t n) {
    auto d = std::make_unique<Dag>();
    for (uint32_t v = 0; v < n; v++) d->add();
    d->slot.assign(n, 0);
    return d;
}

std::unique_ptr<Dag> make_matmul(uint32_t n, uint32_t bs) {
    auto d = std::make_unique<Dag>();
    d->n = n;
    d->bs = bs;
    d->nb = n / bs;
    uint32_t nb = d->nb;
    d->a.assign(size_t(n) * n, 0);
    d->b.assign(size_t(n) * n, 0);
    d->c.assign(size_t(n) * n, 0);
    std::vector<uint32_t> ia(nb * nb), ib(nb * nb);
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t j = 0; j < nb; j++) {
            ia[i * nb + j] = d->add(Node{Kind::MatInitA, i, j, 0});
            ib[i * nb + j] = d->add(Node{Kind::MatInitB, i, j, 0});
        }
    for (uint32_t i = 0; i < nb; i++)
        for (uint32_t j = 0; j < nb; j++) {
            uint32_t prev = ia[i * nb + j];    // C(i,j) is zeroed by A(i,j)'s init
            for (uint32_t k = 0; k < nb; k++) {
                uint32_t v = d->add(Node{Kind::MatMul, i, j, k});
                d->edge(ia[i * nb + k], v);
                d->edge(ib[k * nb + j], v);
                if (prev != ia[i * nb + k]) d->edge(prev, v);
                prev = v;
            }
        }
    d->slot.assign(d->size(), 0);
    return d;
}

// ---- weft ---------------------------------------------------------------------

struct WeftArg {
    Dag *d;
    uint32_t v;
};

void weft_node(void *p) {
    auto *a = static_cast<WeftArg *>(p);
    a->d->run(a->v);
}

// A scheduler of `threads` workers for a case, or nullptr with the case
// marked as failed.
weft_sched *make_sched(benchmark::State &st, unsigned threads) {
    weft_config cfg;
    weft_config_init(&cfg);
    cfg.workers = threads ? threads : WEFT_WORKERS_NONE;
    weft_sched *s = nullptr;
    if (weft_sched_create(&s, &cfg) != WEFT_OK) {
        st.SkipWithError("weft_sched_create failed");
        return nullptr;
    }
    return s;
}

void bench_weft(benchmark::State &st, Dag *d, unsigned threads) {
    weft_sched *s = make_sched(st, threads);
    if (!s)
        return;
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    std::vector<WeftArg> args(d->size());
    std::vector<weft_task *> t(d->size());
    for (uint32_t v = 0; v < d->size(); v++) {
        args[v] = WeftArg{d, v};
        t[v] = weft_graph_add(g, weft_node, &args[v]);
        for (uint32_t u : d->preds[v]) weft_task_precede(t[u], t[v]);
    }
    // The first run checks the graph (once per change): not timed.
    if (weft_graph_run(s, g) != WEFT_OK || weft_graph_wait(g) != WEFT_OK) st.SkipWithError("weft run failed");
    for (auto _ : st) {
        weft_graph_run(s, g);
        weft_graph_wait(g);
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d->size()));
    weft_graph_destroy(g);
    weft_sched_destroy(s);
}

// The brd cases' checks around their timed loop: once() builds, runs,
// waits for and destroys the graph, false on an error.
template <class F>
void brd_loop(benchmark::State &st, Dag *d, F once) {
    d->flat();
    uint64_t ref = d->reference(), ntriv = d->trivial_tasks();
    if (!once()) {            // untimed: the workers' first run
        st.SkipWithError("build + run + destroy failed");
        return;
    }
    uint64_t before = d->trivial_runs();
    bool ok = true;
    for (auto _ : st)
        ok &= once();
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d->size()));
    if (!ok) {
        st.SkipWithError("build + run + destroy failed");
        return;
    }
    if (d->trivial_runs() - before != uint64_t(st.iterations()) * ntriv) {
        st.SkipWithError("WRONG: a timed run did not run every task once");
        return;
    }
    d->clear_results();
    if (!once() || d->digest() != ref)
        st.SkipWithError("WRONG: a run's results differ from the sequential loop's");
}

// Build + run + wait + destroy every iteration.
void bench_weft_brd(benchmark::State &st, Dag *d, unsigned threads) {
    weft_sched *s = make_sched(st, threads);
    if (!s)
        return;
    uint32_t n = uint32_t(d->size());
    std::vector<WeftArg> args(n);
    for (uint32_t v = 0; v < n; v++) args[v] = WeftArg{d, v};
    std::vector<weft_task *> t(n);
    brd_loop(st, d, [&]() {
        const uint32_t *off = d->poff.data(), *pf = d->pflat.data();
        weft_graph *g = nullptr;
        if (weft_graph_create(&g) != WEFT_OK) return false;
        int err = 0;
        for (uint32_t v = 0; v < n; v++) {
            weft_task *tv = t[v] = weft_graph_add(g, weft_node, &args[v]);
            if (!tv) {
                err = 1;
                break;
            }
            for (uint32_t k = off[v]; k < off[v + 1]; k++) err |= weft_task_precede(t[pf[k]], tv);
        }
        if (!err) err = weft_graph_run(s, g);
        if (!err) err = weft_graph_wait(g);
        err |= weft_graph_destroy(g);
        return err == 0;
    });
    weft_sched_destroy(s);
}

// ---- oneTBB flow graph -------------------------------------------------------------

void bench_tbb(benchmark::State &st, Dag *d, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    flow::graph g;
    flow::broadcast_node<flow::continue_msg> start(g);
    std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
    nodes.reserve(d->size());
    for (uint32_t v = 0; v < d->size(); v++) {
        nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
            g, [d, v](const flow::continue_msg &) { d->run(v); }));
        if (d->preds[v].empty())
            flow::make_edge(start, *nodes[v]);
        for (uint32_t u : d->preds[v]) flow::make_edge(*nodes[u], *nodes[v]);
    }
    start.try_put(flow::continue_msg());
    g.wait_for_all();
    for (auto _ : st) {
        start.try_put(flow::continue_msg());
        g.wait_for_all();
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d->size()));
    st.SetLabel("baseline");
}

// Build + run + wait + destroy every iteration: a flow::graph, a
// continue_node per task, an edge per dependency, try_put to the roots.
void bench_tbb_brd(benchmark::State &st, Dag *d, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    uint32_t n = uint32_t(d->size());
    std::vector<std::unique_ptr<node_t>> nodes;
    std::vector<node_t *> roots;
    nodes.reserve(n);
    brd_loop(st, d, [&]() {
        const uint32_t *off = d->poff.data(), *pf = d->pflat.data();
        {
            flow::graph g;
            for (uint32_t v = 0; v < n; v++) {
                nodes.push_back(std::make_unique<node_t>(g, [d, v](const flow::continue_msg &) { d->run(v); }));
                node_t &nv = *nodes.back();
                if (off[v] == off[v + 1]) roots.push_back(&nv);
                for (uint32_t k = off[v]; k < off[v + 1]; k++) flow::make_edge(*nodes[pf[k]], nv);
            }
            for (node_t *r : roots) r->try_put(flow::continue_msg());
            g.wait_for_all();
            nodes.clear();    // the nodes go before their graph
            roots.clear();
        }
        return true;
    });
    st.SetLabel("baseline");
}

// ---- OpenMP tasks with depend clauses ------------------------------------------------

void omp_spawn_all(Dag *d, char *tok) {
    (void)tok;   // g++ 12 does not see a use inside depend(iterator(...)) and warns
    for (uint32_t v = 0; v < d->size(); v++) {
        const uint32_t *p = d->preds[v].data();
        int np = int(d->preds[v].size());
#pragma omp task firstprivate(v, p, np) depend(iterator(it = 0:np), in: tok[p[it]]) depend(out: tok[v])
        d->run(v);
    }
}

void bench_omp(benchmark::State &st, Dag *d, unsigned threads) {
    std::vector<char> tok(d->size());
    for (auto _ : st) {
#pragma omp parallel num_threads(threads)
#pragma omp single
        omp_spawn_all(d, tok.data());
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(d->size()));
    st.SetLabel("baseline");
}

// ---- repeated runs of a small graph ---------------------------------------
//
// "rerun16_t<threads>/<system>": a 16-task graph (a root, 14 tasks after
// it, a sink after those; each task adds one to a counter of its own) run
// kRerunBatch times per iteration, as a simulation step or a frame would.
// weft_run_n: one weft_graph_run_n series and one wait; weft_run_wait: a
// weft_graph_run + weft_graph_wait per run; tbb: a try_put to the root
// and wait_for_all per run. items_per_second counts runs. After the timed
// loop each case checks every task ran once per run.

constexpr uint64_t kRerunBatch = 1000;
constexpr unsigned kRerunTasks = 16;

struct Rerun {
    std::vector<uint64_t> count = std::vector<uint64_t>(kRerunTasks * 8);   // a line per task
    bool check(uint64_t runs) const {
        for (unsigned i = 0; i < kRerunTasks; i++)
            if (count[i * 8] != runs) return false;
        return true;
    }
};

void rerun_task(void *p) { ++*static_cast<uint64_t *>(p); }

weft_graph *rerun_graph(Rerun &r) {
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    weft_task *t[kRerunTasks];
    for (unsigned i = 0; i < kRerunTasks; i++) t[i] = weft_graph_add(g, rerun_task, &r.count[i * 8]);
    for (unsigned i = 1; i + 1 < kRerunTasks; i++) {
        weft_task_precede(t[0], t[i]);
        weft_task_precede(t[i], t[kRerunTasks - 1]);
    }
    return g;
}

void bench_weft_rerun(benchmark::State &st, unsigned threads, bool series) {
    weft_sched *s = make_sched(st, threads);
    if (!s) return;
    Rerun r;
    weft_graph *g = rerun_graph(r);
    weft_graph_run(s, g);   // the check, the workers' first run: untimed
    weft_graph_wait(g);
    uint64_t runs = 1;
    for (auto _ : st) {
        if (series) {
            weft_graph_run_n(s, g, kRerunBatch);
            weft_graph_wait(g);
        } else {
            for (uint64_t k = 0; k < kRerunBatch; k++) {
                weft_graph_run(s, g);
                weft_graph_wait(g);
            }
        }
        runs += kRerunBatch;
    }
    st.SetItemsProcessed(int64_t(st.iterations() * kRerunBatch));
    if (!r.check(runs)) st.SkipWithError("WRONG: a task did not run once per run");
    weft_graph_destroy(g);
    weft_sched_destroy(s);
}

void bench_tbb_rerun(benchmark::State &st, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    Rerun r;
    flow::graph g;
    std::vector<std::unique_ptr<node_t>> t;
    for (unsigned i = 0; i < kRerunTasks; i++) {
        uint64_t *c = &r.count[i * 8];
        t.push_back(std::make_unique<node_t>(g, [c](const flow::continue_msg &) { ++*c; }));
    }
    for (unsigned i = 1; i + 1 < kRerunTasks; i++) {
        flow::make_edge(*t[0], *t[i]);
        flow::make_edge(*t[i], *t[kRerunTasks - 1]);
    }
    t[0]->try_put(flow::continue_msg());
    g.wait_for_all();
    uint64_t runs = 1;
    for (auto _ : st) {
        for (uint64_t k = 0; k < kRerunBatch; k++) {
            t[0]->try_put(flow::continue_msg());
            g.wait_for_all();
        }
        runs += kRerunBatch;
    }
    st.SetItemsProcessed(int64_t(st.iterations() * kRerunBatch));
    if (!r.check(runs)) st.SkipWithError("WRONG: a task did not run once per run");
    st.SetLabel("baseline");
}

// ---- a condition loop ----------------------------------------------------
//
// "condloop_t<threads>/weft": a do-while loop as a graph: init -> body ->
// cond, cond -0-> body (weak: the loop), cond -1-> done; kCondIters
// iterations per run, one run per benchmark iteration. items_per_second
// counts iterations (a body task and a condition task each). Beside it,
// "condloop_t<threads>/weft_chain2": a chain of 2 * kCondIters tasks
// built once and run the same way, the cost of two chain links per
// iteration, for the ratio; the target is at most 1.5x that.

constexpr long kCondIters = 1000000;

struct CondLoop {
    long left = 0, body = 0;
};

void cond_init(void *p) { static_cast<CondLoop *>(p)->left = kCondIters; }
void cond_body(void *p) { static_cast<CondLoop *>(p)->body++; }
int cond_test(void *p) { return --static_cast<CondLoop *>(p)->left > 0 ? 0 : 1; }
void cond_done(void *) {}

void bench_weft_condloop(benchmark::State &st, unsigned threads) {
    weft_sched *s = make_sched(st, threads);
    if (!s) return;
    CondLoop c;
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    weft_task *init = weft_graph_add(g, cond_init, &c), *body = weft_graph_add(g, cond_body, &c),
              *test = weft_graph_add_cond(g, cond_test, &c), *done = weft_graph_add(g, cond_done, &c);
    weft_task_precede(init, body);
    weft_task_precede(body, test);
    weft_task_precede(test, body);
    weft_task_precede(test, done);
    weft_graph_run(s, g);   // the check, the workers' first run: untimed
    weft_graph_wait(g);
    long before = c.body;
    for (auto _ : st) {
        weft_graph_run(s, g);
        weft_graph_wait(g);
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kCondIters);
    if (c.body - before != int64_t(st.iterations()) * kCondIters)
        st.SkipWithError("WRONG: the loop did not run its count");
    weft_graph_destroy(g);
    weft_sched_destroy(s);
}

// "condloop_t<threads>/tbb": oneTBB's closest, the same loop as a flow
// graph: body -> cond, a multifunction_node whose port 0 feeds body
// again and port 1 done; one message goes round, a try_put per run.
void bench_tbb_condloop(benchmark::State &st, unsigned threads) {
    namespace flow = oneapi::tbb::flow;
    using cond_t = flow::multifunction_node<int, std::tuple<int, int>>;
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, threads);
    CondLoop c;
    flow::graph g;
    flow::function_node<int, int> body(g, flow::unlimited, [&c](int v) { cond_body(&c); return v; });
    cond_t test(g, flow::unlimited, [&c](int v, cond_t::output_ports_type &p) {
        if (cond_test(&c) == 0) std::get<0>(p).try_put(v);
        else std::get<1>(p).try_put(v);
    });
    flow::function_node<int, int> done(g, flow::unlimited, [](int v) { cond_done(nullptr); return v; });
    flow::make_edge(body, test);
    flow::make_edge(flow::output_port<0>(test), body);
    flow::make_edge(flow::output_port<1>(test), done);
    auto run = [&] { cond_init(&c); body.try_put(0); g.wait_for_all(); };
    run();
    long before = c.body;
    for (auto _ : st) run();
    st.SetItemsProcessed(int64_t(st.iterations()) * kCondIters);
    if (c.body - before != int64_t(st.iterations()) * kCondIters)
        st.SkipWithError("WRONG: the loop did not run its count");
    st.SetLabel("baseline");
}

void chain2_task(void *p) { ++*static_cast<long *>(p); }

void bench_weft_chain2(benchmark::State &st, unsigned threads) {
    weft_sched *s = make_sched(st, threads);
    if (!s) return;
    long n = 0;
    weft_graph *g = nullptr;
    weft_graph_create(&g);
    weft_task *prev = nullptr;
    for (long i = 0; i < 2 * kCondIters; i++) {
        weft_task *t = weft_graph_add(g, chain2_task, &n);
        if (prev) weft_task_precede(prev, t);
        prev = t;
    }
    weft_graph_run(s, g);
    weft_graph_wait(g);
    for (auto _ : st) {
        weft_graph_run(s, g);
        weft_graph_wait(g);
    }
    st.SetItemsProcessed(int64_t(st.iterations()) * kCondIters);   // pairs of links: one loop iteration's worth
    st.SetLabel("baseline");
    weft_graph_destroy(g);
    weft_sched_destroy(s);
}

// ---- sequential C ----------------------------------------------------------------

// Every node's work called in build order (a topological order) by this
// thread: no scheduler, no synchronization. What a graph's work costs
// when nothing runs it in parallel, for the ratios' "vs sequential".
void bench_seq(benchmark::State &st, Dag *d)
{
    uint32_t n = uint32_t(d->size());
    for (auto _ : st)
        for (uint32_t v = 0; v < n; v++)
            d->run(v);
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(n));
    st.SetLabel("baseline");
}

// ---- registration ---------------------------------------------------------------------

struct Case {
    std::string name;
    std::unique_ptr<Dag> (*make)(uint32_t, uint32_t);
    uint32_t a, b;
};

std::unique_ptr<Dag> mk_chain(uint32_t a, uint32_t) { return make_chain(a); }
std::unique_ptr<Dag> mk_tree(uint32_t a, uint32_t) { return make_tree(a); }
std::unique_ptr<Dag> mk_wave(uint32_t a, uint32_t) { return make_wavefront(a); }
std::unique_ptr<Dag> mk_wave_blocks(uint32_t a, uint32_t b) { return make_wave_blocks(a, b); }
std::unique_ptr<Dag> mk_par(uint32_t a, uint32_t) { return make_parallel(a); }
std::unique_ptr<Dag> mk_mm(uint32_t a, uint32_t b) { return make_matmul(a, b); }

// Built on first use and kept, so the three systems run the same DAG
// and a filtered run builds only what it needs.
struct Lazy {
    Case c;
    std::unique_ptr<Dag> d;
    Dag *get() {
        if (!d) d = c.make(c.a, c.b);
        return d.get();
    }
};

}  // namespace

int main(int argc, char **argv) {
    weft_bench_passive_omp(argv);
    static std::vector<std::unique_ptr<Lazy>> cases;
    auto add = [](std::string name, std::unique_ptr<Dag> (*mk)(uint32_t, uint32_t), uint32_t a, uint32_t b) {
        cases.push_back(std::make_unique<Lazy>(Lazy{Case{std::move(name), mk, a, b}, nullptr}));
    };
    add("chain_2^20", mk_chain, 1u << 20, 0);
    add("chain_2^23", mk_chain, 1u << 23, 0);
    add("tree_2^20", mk_tree, 20, 0);
    add("wavefront_256", mk_wave, 256, 0);
    add("wavefront_1024", mk_wave, 1024, 0);
    add("wavefront_4096_8x8", mk_wave_blocks, 4096, 8);
    add("matmul_128", mk_mm, 128, 32);
    add("matmul_512", mk_mm, 512, 32);
    add("matmul_1024", mk_mm, 1024, 32);
    add("parallel_10^6", mk_par, 1000000, 0);

    // 1, 2 and every power of two up to the cores this machine has.
    std::vector<unsigned> threads{1, 2};
    for (unsigned t = 4, n = std::thread::hardware_concurrency(); t <= n; t *= 2)
        threads.push_back(t);
    for (auto &lc : cases) {
        Lazy *l0 = lc.get();
        benchmark::RegisterBenchmark((l0->c.name + "_seq/sequential").c_str(),
            [l0](benchmark::State &st) { bench_seq(st, l0->get()); })->Unit(benchmark::kMillisecond);
        for (unsigned t : threads) {
            Lazy *l = lc.get();
            std::string group = l->c.name + "_t" + std::to_string(t);
            benchmark::RegisterBenchmark((group + "/weft").c_str(),
                [l, t](benchmark::State &st) { bench_weft(st, l->get(), t); })->UseRealTime()->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark((group + "/tbb").c_str(),
                [l, t](benchmark::State &st) { bench_tbb(st, l->get(), t); })->UseRealTime()->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark((group + "/omp").c_str(),
                [l, t](benchmark::State &st) { bench_omp(st, l->get(), t); })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
        // Build + run + destroy beside them (OpenMP's rows above already
        // make their tasks every iteration).
        for (unsigned t : threads) {
            Lazy *l = lc.get();
            std::string group = l->c.name + "_brd_t" + std::to_string(t);
            benchmark::RegisterBenchmark((group + "/weft").c_str(),
                [l, t](benchmark::State &st) { bench_weft_brd(st, l->get(), t); })->UseRealTime()->Unit(benchmark::kMillisecond);
            benchmark::RegisterBenchmark((group + "/tbb").c_str(),
                [l, t](benchmark::State &st) { bench_tbb_brd(st, l->get(), t); })->UseRealTime()->Unit(benchmark::kMillisecond);
        }
    }
    for (unsigned t : threads) {
        std::string group = "condloop_t" + std::to_string(t);
        benchmark::RegisterBenchmark((group + "/weft").c_str(),
            [t](benchmark::State &st) { bench_weft_condloop(st, t); })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((group + "/weft_chain2").c_str(),
            [t](benchmark::State &st) { bench_weft_chain2(st, t); })->UseRealTime()->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((group + "/tbb").c_str(),
            [t](benchmark::State &st) { bench_tbb_condloop(st, t); })->UseRealTime()->Unit(benchmark::kMillisecond);
    }
    for (unsigned t : threads) {
        std::string group = "rerun16_t" + std::to_string(t);
        benchmark::RegisterBenchmark((group + "/weft_run_n").c_str(),
            [t](benchmark::State &st) { bench_weft_rerun(st, t, true); })->UseRealTime();
        benchmark::RegisterBenchmark((group + "/weft_run_wait").c_str(),
            [t](benchmark::State &st) { bench_weft_rerun(st, t, false); })->UseRealTime();
        benchmark::RegisterBenchmark((group + "/tbb").c_str(),
            [t](benchmark::State &st) { bench_tbb_rerun(st, t); })->UseRealTime();
    }
    return weft_bench_run(argc, argv);
}

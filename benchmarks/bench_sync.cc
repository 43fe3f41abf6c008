// Fiber-aware synchronization: weft's primitives next to the same work
// done with pthread mutexes and condition variables, in the same run.
// Public API only.
//
// Names are "<group>/<case>". Within a group every case counts the same
// unit in items_per_second; cases labelled "baseline" are the pthread ones
// that report.py divides by:
//
//   pingpong/   items = round trips through two channels of capacity 0
//               (weft) or two one-slot mailboxes on a mutex and two
//               condition variables (pthread threads)
//   mutex/      items = lock + increment + unlock by 64 contenders
//   waitgroup/  items = tasks fanned in (done by each, one waiter)
//   skynet/     items = tasks in a 10-ary spawn tree of 10^6 leaves, each
//               parent receiving its children's sums over a channel
//
// The scheduler uses 2 workers (the CI machine's cores) unless the case
// name says otherwise; mutex/weft_64_fibers_64_workers gives weft as many
// OS threads as the baseline has (on 2 cores its idle workers spin for
// spin_us before they sleep, so it shows that cost, not the mutex's).
// skynet/ has no pthread baseline: 10^6 blocked threads are not a
// workload pthreads can run. Nothing is pinned: run.py reports medians.
//
// Until benchmarks/CMakeLists.txt has weft_benchmark(), build by hand:
//   g++ -O2 -std=c++17 -Iinclude benchmarks/bench_sync.cc
//       build/release/libweft.a -lbenchmark -lpthread -o bench_sync

#include <benchmark/benchmark.h>

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "weft.h"

namespace {

void check(int rc, const char *what)
{
    if (rc != WEFT_OK) {
        std::fprintf(stderr, "bench_sync: %s: %s\n", what, weft_strerror(rc));
        std::abort();
    }
}

weft_sched *make_sched(unsigned workers)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers;
    weft_sched *s = nullptr;
    check(weft_sched_create(&s, &c), "weft_sched_create");
    return s;
}

// ---- pingpong ------------------------------------------------------------

constexpr int kRoundTrips = 100000;

struct PingPong {
    weft_chan *ping = nullptr, *pong = nullptr;
    std::atomic<int> started{0};
    bool apart = false;            // wait until both run at once (two workers)
    int first_worker = -1;
};

void rendezvous(PingPong *pp)
{
    pp->started.fetch_add(1);
    if (pp->apart)
        while (pp->started.load() < 2)
            ;   // both tasks running at once: on two different workers
}

void pinger(void *arg)
{
    auto *pp = static_cast<PingPong *>(arg);
    rendezvous(pp);
    int v = 0;
    for (int i = 0; i < kRoundTrips; i++) {
        weft_chan_send(pp->ping, &v);
        weft_chan_recv(pp->pong, &v);
    }
}

void ponger(void *arg)
{
    auto *pp = static_cast<PingPong *>(arg);
    rendezvous(pp);
    int v;
    for (int i = 0; i < kRoundTrips; i++) {
        weft_chan_recv(pp->ping, &v);
        weft_chan_send(pp->pong, &v);
    }
}

void weft_pingpong(benchmark::State &state, unsigned workers, bool apart)
{
    weft_sched *s = make_sched(workers);
    PingPong pp;
    pp.apart = apart;
    check(weft_chan_create(&pp.ping, sizeof(int), 0), "weft_chan_create");
    check(weft_chan_create(&pp.pong, sizeof(int), 0), "weft_chan_create");
    for (auto _ : state) {
        pp.started = 0;
        check(weft_spawn(s, ponger, &pp), "weft_spawn");
        check(weft_spawn(s, pinger, &pp), "weft_spawn");
        check(weft_wait_idle(s), "weft_wait_idle");
    }
    state.SetItemsProcessed(state.iterations() * kRoundTrips);
    state.counters["ns_per_round_trip"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * kRoundTrips,
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    weft_chan_destroy(pp.ping);
    weft_chan_destroy(pp.pong);
    weft_sched_destroy(s);
}

// A one-slot mailbox on a pthread mutex and condition variable.
struct Mailbox {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    bool full = false;
    int v = 0;
    void put(int x)
    {
        pthread_mutex_lock(&m);
        while (full)
            pthread_cond_wait(&c, &m);
        v = x;
        full = true;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
    }
    int get()
    {
        pthread_mutex_lock(&m);
        while (!full)
            pthread_cond_wait(&c, &m);
        full = false;
        int x = v;
        pthread_cond_signal(&c);
        pthread_mutex_unlock(&m);
        return x;
    }
};

struct PthreadPingPong {
    Mailbox ping, pong;
    int rounds = 0;
};

void *pthread_ponger(void *arg)
{
    auto *pp = static_cast<PthreadPingPong *>(arg);
    for (int i = 0; i < pp->rounds; i++)
        pp->pong.put(pp->ping.get());
    return nullptr;
}

void pthread_pingpong(benchmark::State &state)
{
    PthreadPingPong pp;
    pp.rounds = kRoundTrips;
    for (auto _ : state) {
        pthread_t t;
        pthread_create(&t, nullptr, pthread_ponger, &pp);
        for (int i = 0; i < kRoundTrips; i++) {
            pp.ping.put(i);
            benchmark::DoNotOptimize(pp.pong.get());
        }
        pthread_join(t, nullptr);
    }
    state.SetItemsProcessed(state.iterations() * kRoundTrips);
    state.counters["ns_per_round_trip"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * kRoundTrips,
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetLabel("baseline");
}

// ---- mutex: 64 contenders ------------------------------------------------

constexpr int kContenders = 64;
constexpr int kIncrements = 20000;

struct Counter {
    weft_mutex wm;
    pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
    uint64_t n = 0;
};

void fiber_incrementer(void *arg)
{
    auto *c = static_cast<Counter *>(arg);
    for (int i = 0; i < kIncrements; i++) {
        weft_mutex_lock(&c->wm);
        c->n++;
        weft_mutex_unlock(&c->wm);
    }
}

void *thread_incrementer(void *arg)
{
    auto *c = static_cast<Counter *>(arg);
    for (int i = 0; i < kIncrements; i++) {
        pthread_mutex_lock(&c->pm);
        c->n++;
        pthread_mutex_unlock(&c->pm);
    }
    return nullptr;
}

void weft_mutex_contention(benchmark::State &state, unsigned workers)
{
    weft_sched *s = make_sched(workers);
    Counter c;
    weft_mutex_init(&c.wm);
    for (auto _ : state) {
        for (int i = 0; i < kContenders; i++)
            check(weft_spawn(s, fiber_incrementer, &c), "weft_spawn");
        check(weft_wait_idle(s), "weft_wait_idle");
    }
    if (c.n != static_cast<uint64_t>(state.iterations()) * kContenders * kIncrements) {
        std::fprintf(stderr, "bench_sync: mutex lost increments\n");
        std::abort();
    }
    state.SetItemsProcessed(state.iterations() * kContenders * kIncrements);
    weft_mutex_destroy(&c.wm);
    weft_sched_destroy(s);
}

void pthread_mutex_contention(benchmark::State &state)
{
    Counter c;
    for (auto _ : state) {
        pthread_t t[kContenders];
        for (int i = 0; i < kContenders; i++)
            pthread_create(&t[i], nullptr, thread_incrementer, &c);
        for (int i = 0; i < kContenders; i++)
            pthread_join(t[i], nullptr);
    }
    if (c.n != static_cast<uint64_t>(state.iterations()) * kContenders * kIncrements) {
        std::fprintf(stderr, "bench_sync: pthread mutex lost increments\n");
        std::abort();
    }
    state.SetItemsProcessed(state.iterations() * kContenders * kIncrements);
    state.SetLabel("baseline");
}

// ---- waitgroup: fan-in of 10^4 tasks -----------------------------------------

constexpr int kFanIn = 10000;

struct FanIn {
    weft_sched *s = nullptr;
    weft_waitgroup wg;
    // The same counter on pthread primitives: what a task would use
    // without fiber-aware sync (its waiter blocks a worker thread).
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    int left = 0;
};

void wg_child(void *arg)
{
    weft_waitgroup_done(&static_cast<FanIn *>(arg)->wg);
}

void wg_root(void *arg)
{
    auto *f = static_cast<FanIn *>(arg);
    weft_waitgroup_add(&f->wg, kFanIn);
    for (int i = 0; i < kFanIn; i++)
        check(weft_spawn(f->s, wg_child, f), "weft_spawn");
    check(weft_waitgroup_wait(&f->wg), "weft_waitgroup_wait");
}

void cv_child(void *arg)
{
    auto *f = static_cast<FanIn *>(arg);
    pthread_mutex_lock(&f->m);
    if (--f->left == 0)
        pthread_cond_signal(&f->c);
    pthread_mutex_unlock(&f->m);
}

void cv_root(void *arg)
{
    auto *f = static_cast<FanIn *>(arg);
    pthread_mutex_lock(&f->m);
    f->left = kFanIn;
    pthread_mutex_unlock(&f->m);
    for (int i = 0; i < kFanIn; i++)
        check(weft_spawn(f->s, cv_child, f), "weft_spawn");
    pthread_mutex_lock(&f->m);
    while (f->left)
        pthread_cond_wait(&f->c, &f->m);   // blocks this worker's thread
    pthread_mutex_unlock(&f->m);
}

void fan_in(benchmark::State &state, bool pthread_version)
{
    FanIn f;
    f.s = make_sched(2);
    weft_waitgroup_init(&f.wg, 0);
    for (auto _ : state) {
        check(weft_spawn(f.s, pthread_version ? cv_root : wg_root, &f), "weft_spawn");
        check(weft_wait_idle(f.s), "weft_wait_idle");
    }
    state.SetItemsProcessed(state.iterations() * kFanIn);
    if (pthread_version)
        state.SetLabel("baseline");
    weft_waitgroup_destroy(&f.wg);
    weft_sched_destroy(f.s);
}

// ---- skynet: 10^6 leaves, a channel per parent ---------------------------------

struct Sky {
    weft_sched *s;
    weft_chan *out;     // where this node's sum goes
    int64_t num, size;
};

void sky(void *arg)
{
    Sky *me = static_cast<Sky *>(arg);
    int64_t sum = me->num;
    if (me->size > 1) {
        weft_chan *in;
        check(weft_chan_create(&in, sizeof(int64_t), 0), "weft_chan_create");
        Sky kids[10];
        int64_t step = me->size / 10;
        for (int i = 0; i < 10; i++) {
            kids[i] = Sky{ me->s, in, me->num + i * step, step };
            check(weft_spawn(me->s, sky, &kids[i]), "weft_spawn");
        }
        sum = 0;
        for (int i = 0; i < 10; i++) {
            int64_t v;
            check(weft_chan_recv(in, &v), "weft_chan_recv");   // blocks: kids' frames stay alive
            sum += v;
        }
        weft_chan_destroy(in);
    }
    check(weft_chan_send(me->out, &sum), "weft_chan_send");
}

void skynet(benchmark::State &state)
{
    constexpr int64_t kLeaves = 1000000;
    weft_sched *s = make_sched(2);
    weft_chan *top;
    check(weft_chan_create(&top, sizeof(int64_t), 1), "weft_chan_create");
    for (auto _ : state) {
        Sky root{ s, top, 0, kLeaves };
        check(weft_spawn(s, sky, &root), "weft_spawn");
        int64_t sum = 0;
        check(weft_chan_recv(top, &sum), "weft_chan_recv");   // a plain thread: futex
        if (sum != kLeaves * (kLeaves - 1) / 2) {
            std::fprintf(stderr, "bench_sync: skynet sum %lld\n", static_cast<long long>(sum));
            std::abort();
        }
        check(weft_wait_idle(s), "weft_wait_idle");
    }
    state.SetItemsProcessed(state.iterations() * 1111111);   // tasks in the tree
    weft_chan_destroy(top);
    weft_sched_destroy(s);
}

void register_all()
{
    benchmark::RegisterBenchmark("pingpong/weft_one_worker", weft_pingpong, 1u, false)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pingpong/weft_two_workers", weft_pingpong, 2u, true)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pingpong/pthread_condvar", pthread_pingpong)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("mutex/weft_64_fibers_2_workers", weft_mutex_contention, 2u)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("mutex/weft_64_fibers_64_workers", weft_mutex_contention, 64u)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("mutex/pthread_64_threads", pthread_mutex_contention)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("waitgroup/weft_fan_in_10k", fan_in, false)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("waitgroup/pthread_condvar_fan_in_10k", fan_in, true)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("skynet/weft_1M_leaves", skynet)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char **argv)
{
    register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

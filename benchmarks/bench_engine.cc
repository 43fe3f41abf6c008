// Engine-loop benchmarks (issue 22): what a game or simulation main loop
// pays to talk to weft, beside a plain-thread or oneTBB baseline in the
// same process.
//
//   pinned_roundtrip/weft, /weft_no_help, /weft_spin0, /weft_no_help_spin0,
//   /pthread_condvar
//       A task on worker 0 pins a task to the main thread and waits on a
//       weft_event that the pinned task signals. The main thread is bound
//       (weft_sched_bind, or weft_sched_bind_ex with WEFT_BIND_NO_HELP)
//       and pumps: weft_pinned_wait_for(forever), then weft_pinned_run. Each
//       round trip is timed by the task that starts it, from before
//       weft_spawn_ex to after the wait returns. The baseline is the same
//       round trip between a pthread and the main thread under a mutex and
//       two condition variables (as bench_fiber's roundtrip/pthread_condvar,
//       timed per round trip by the pthread). An iteration is kRtBatch
//       round trips. 2 workers (the driver pinned to worker 0, worker 1
//       idle). The _spin0 rows set weft_config.spin_us = WEFT_SPIN_NONE (no spinning
//       before a thread sleeps), the others keep the default 50 us: on an
//       oversubscribed machine a spinning thread holds the CPU its partner
//       needs, and each leg of the round trip then costs about one spin.
//       Counters per round trip: p50_ns, p99_ns, mean_ns, max_ns, over_1ms
//       (how many took 1 ms or more); to_main_p50_ns/_p99_ns, the first
//       leg (start to the pinned task's first line, or to the main thread
//       seeing the request), and back_p50_ns/_p99_ns, the rest.
//
//   priority_mix/weft, /weft_normal_over_low, /weft_no_priority
//       enkiTS's priority example on weft: kMixLow background tasks (each
//       about kLowWorkNs of arithmetic) are spawned from the main thread,
//       then a producer thread spawns one foreground task every
//       kMixPeriodNs (an absolute-deadline sleep with 1 ns timer slack)
//       until every background task has run. Each foreground task's
//       latency, from just before its spawn to the first line of its
//       function, is a sample. weft: background LOW, foreground HIGH;
//       weft_normal_over_low: background LOW, foreground NORMAL (the
//       literal "HIGH tasks spawned at NORMAL priority"); weft_no_priority:
//       every task NORMAL through plain weft_spawn, no priority anywhere,
//       the baseline that shows what priorities buy. 2 workers; the main
//       thread is not bound and sleeps in weft_sched_wait_idle. Counters: p50_ns,
//       p99_ns, mean_ns, max_ns, over_1ms of the foreground latency
//       (over every iteration's tasks), fg_tasks (foreground
//       tasks per iteration), period_ns (the producer's achieved mean
//       interval), low_work_ns (a background task's calibrated work).
//
//   frame_cycle/weft_main_thread, /weft_main_thread_no_help,
//   /weft_outside_thread, /weft_main_thread_no_help_spin0,
//   /weft_outside_thread_spin0, /tbb_flow_graph, /tbb_flow_graph_p2
//       A 32-task chain graph (each task adds one to its own counter) run
//       and waited for kFrameCycles times from the main thread, as
//       dpuyda/scheduling's ResubmitGraph test does (10^6 cycles there).
//       weft: 2 workers; the main thread bound with the default flags
//       (helps: runs ready tasks while it waits, so 3 threads), bound
//       with WEFT_BIND_NO_HELP, or not bound (it sleeps in
//       weft_graph_wait). oneTBB: flow::graph of 32 continue_nodes in a
//       chain, try_put to the first + wait_for_all per cycle, under
//       global_control max_allowed_parallelism 3 (tbb_flow_graph: 2 TBB
//       worker threads plus the main thread, which works in wait_for_all,
//       3 threads as weft's bound main thread) or 2 (tbb_flow_graph_p2: 1
//       worker plus the main thread). _spin0: weft_config.spin_us = WEFT_SPIN_NONE, as
//       above. One iteration is kFrameCycles cycles, after 1000 untimed
//       ones. Counters: ns_per_cycle (mean), s_per_1e6 (the same mean as
//       seconds per 10^6 cycles, ResubmitGraph's figure), p50_ns and
//       p99_ns of single cycles (each timed with one clock read).
//
// Every row checks its result after the timed loop (every task ran, the
// counts exact) and aborts with a message naming the row if not.
// Public API only.
#include "bench_main.hh"

#include <benchmark/benchmark.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "weft.h"

namespace {

const char *const kProg = "bench_engine";

inline uint64_t now_ns()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// A broken result: name the row and what broke, and stop.
void fail(const char *row, const char *what)
{
    std::fprintf(stderr, "%s: %s: WRONG: %s\n", kProg, row, what);
    std::abort();
}

void expect(bool ok, const char *row, const char *what)
{
    if (!ok)
        fail(row, what);
}

// p in [0, 1] of v (v is reordered).
uint64_t percentile(std::vector<uint64_t> &v, double p)
{
    if (v.empty())
        return 0;
    size_t k = std::min(v.size() - 1, size_t(double(v.size()) * p));
    std::nth_element(v.begin(), v.begin() + ptrdiff_t(k), v.end());
    return v[k];
}

// The latency counters of the pinned_roundtrip and priority_mix rows, over
// every sample of the run: mean, p50, p99, max, and how many took 1 ms
// or more.
void latency_counters(benchmark::State &st, std::vector<uint64_t> &v)
{
    double sum = 0;
    for (uint64_t x : v)
        sum += double(x);
    st.counters["mean_ns"] = v.empty() ? 0 : sum / double(v.size());
    st.counters["p50_ns"] = double(percentile(v, 0.50));
    st.counters["p99_ns"] = double(percentile(v, 0.99));
    st.counters["max_ns"] = v.empty() ? 0 : double(*std::max_element(v.begin(), v.end()));
    size_t slow = 0;
    for (uint64_t x : v)
        slow += x >= 1000000;
    st.counters["over_1ms"] = double(slow);   // samples of 1 ms or more
}

// A scheduler of `workers` workers, the defaults otherwise; spin_us < 0
// keeps the default spin (50 us), else sets it.
weft_sched *make_sched(unsigned workers, int spin_us = -1)
{
    weft_config c;
    weft_config_init(&c);
    c.workers = workers ? workers : WEFT_WORKERS_NONE;
    if (spin_us >= 0)
        c.spin_us = spin_us == 0 ? WEFT_SPIN_NONE : unsigned(spin_us);
    weft_sched *s = nullptr;
    weft_bench_check(kProg, weft_sched_create(&s, &c), "weft_sched_create");
    return s;
}

// ---- pinned round trip ----------------------------------------------------------

constexpr int kRtBatch = 1000;

struct PinRt {
    weft_sched *s = nullptr;
    int main_id = -1;
    weft_event back;                  // auto reset: the pinned task signals it
    std::vector<uint64_t> samples;    // written by the driver task only
    int err = 0;                      // the driver's first failed call
    bool on_worker0 = true;           // the driver ran on worker 0 every time
    uint64_t t0 = 0;                  // the round trip's start: the driver's, read by pin_signal
    std::vector<uint64_t> legs;       // main thread only: t0 to pin_signal's start
    uint64_t pinned_ran = 0;          // main thread only (pinned tasks run there)
    bool done = false;                // main thread only: set by pin_done
};

// Pinned to the main thread: one round trip's far end.
void pin_signal(void *p)
{
    auto *r = static_cast<PinRt *>(p);
    r->legs.push_back(now_ns() - r->t0);   // t0 was written before the spawn that queued this task
    r->pinned_ran++;
    weft_event_signal(&r->back);
}

// Pinned to the main thread after a batch: ends the main thread's pump.
void pin_done(void *p)
{
    static_cast<PinRt *>(p)->done = true;
}

// Pinned to worker 0: kRtBatch round trips, each timed.
void pin_driver(void *p)
{
    auto *r = static_cast<PinRt *>(p);
    weft_spawn_opts o{};
    o.pinned = true;
    o.thread = r->main_id;
    if (weft_thread_id() != 0)
        r->on_worker0 = false;
    for (int i = 0; i < kRtBatch && !r->err; i++) {
        uint64_t t0 = r->t0 = now_ns();
        int rc = weft_spawn_ex(r->s, pin_signal, r, &o);
        if (rc == WEFT_OK)
            rc = weft_event_wait(&r->back);
        uint64_t t1 = now_ns();
        if (rc != WEFT_OK)
            r->err = rc;
        r->samples.push_back(t1 - t0);
    }
    // The last touch of r->samples comes before this spawn, which the
    // main thread's pump runs: it reads the samples only after that.
    int rc = weft_spawn_ex(r->s, pin_done, r, &o);
    if (rc != WEFT_OK) {
        std::fprintf(stderr, "%s: pinning the batch's end: %s\n", kProg, weft_strerror(rc));
        std::abort();   // the main thread would pump for ever
    }
}

void bm_pinned_weft(benchmark::State &st, unsigned bind_flags, int spin_us, const char *row)
{
    weft_sched *s = make_sched(2, spin_us);
    weft_bench_check(kProg, weft_sched_bind_ex(s, bind_flags), "weft_sched_bind_ex");
    PinRt r;
    r.s = s;
    r.main_id = weft_thread_id();
    expect(r.main_id >= 2, row, "a bound thread's id is below the worker count");
    weft_event_init(&r.back, false, false);
    weft_spawn_opts on0{};
    on0.pinned = true;
    on0.thread = 0;   // the driver on worker 0, whoever helps
    auto batch = [&]() {
        r.done = false;
        weft_bench_check(kProg, weft_spawn_ex(s, pin_driver, &r, &on0), "weft_spawn_ex (driver)");
        while (!r.done) {
            int rc = weft_pinned_wait_for(UINT64_MAX);
            if (rc != WEFT_OK)
                weft_bench_check(kProg, rc, "weft_pinned_wait_for");
            rc = weft_pinned_run(UINT64_MAX);
            if (rc < 0)
                weft_bench_check(kProg, rc, "weft_pinned_run");
        }
    };
    batch();   // untimed: the workers' first run, the fibers mapped
    r.samples.clear();
    r.samples.reserve(1 << 20);
    r.legs.clear();
    r.legs.reserve(1 << 20);
    uint64_t ran_before = r.pinned_ran;
    for (auto _ : st)
        batch();
    weft_bench_check(kProg, r.err, "the driver's spawn or wait");
    expect(r.on_worker0, row, "the driver pinned to worker 0 ran elsewhere");
    uint64_t n = uint64_t(st.iterations()) * kRtBatch;
    expect(r.pinned_ran - ran_before == n, row, "a pinned task did not run once per round trip");
    expect(r.samples.size() == n, row, "a round trip was not timed");
    expect(r.legs.size() == n, row, "a pinned task was not timed");
    // The round trip's two legs: the pin reaching the main thread (spawn
    // to the pinned task's start), and the wake back to the driver.
    std::vector<uint64_t> back(n);
    for (size_t i = 0; i < n; i++)
        back[i] = r.samples[i] - std::min(r.samples[i], r.legs[i]);
    latency_counters(st, r.samples);
    st.counters["to_main_p50_ns"] = double(percentile(r.legs, 0.50));
    st.counters["to_main_p99_ns"] = double(percentile(r.legs, 0.99));
    st.counters["back_p50_ns"] = double(percentile(back, 0.50));
    st.counters["back_p99_ns"] = double(percentile(back, 0.99));
    st.SetItemsProcessed(int64_t(n));
    weft_sched_unbind();
    weft_bench_check(kProg, weft_sched_destroy(s), "weft_sched_destroy");
    weft_event_destroy(&r.back);
}

// The same round trip between a pthread (the worker's part) and the main
// thread (the pump's), under one mutex and two condition variables.
struct CondRt {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t to_main = PTHREAD_COND_INITIALIZER;
    pthread_cond_t to_peer = PTHREAD_COND_INITIALIZER;
    int state = 0;            // 1: a request for main; 2: main's reply
    bool go = false;          // main -> peer: run a batch
    bool batch_done = false;  // peer -> main
    bool stop = false;
    std::vector<uint64_t> samples;   // the peer's, read by main after batch_done
    uint64_t t0 = 0;                 // under mu: the request's start
    std::vector<uint64_t> legs;      // main's: t0 to main seeing the request
};

void *cond_rt_peer(void *arg)
{
    auto *c = static_cast<CondRt *>(arg);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->go && !c->stop)
            pthread_cond_wait(&c->to_peer, &c->mu);
        if (c->stop)
            break;
        c->go = false;
        pthread_mutex_unlock(&c->mu);
        for (int i = 0; i < kRtBatch; i++) {
            uint64_t t0 = now_ns();
            pthread_mutex_lock(&c->mu);
            c->t0 = t0;
            c->state = 1;
            pthread_cond_signal(&c->to_main);
            while (c->state != 2)
                pthread_cond_wait(&c->to_peer, &c->mu);
            c->state = 0;
            pthread_mutex_unlock(&c->mu);
            c->samples.push_back(now_ns() - t0);
        }
        pthread_mutex_lock(&c->mu);
        c->batch_done = true;
        pthread_cond_signal(&c->to_main);
    }
    pthread_mutex_unlock(&c->mu);
    return nullptr;
}

void bm_pinned_condvar(benchmark::State &st)
{
    const char *row = "pinned_roundtrip/pthread_condvar";
    CondRt c;
    c.samples.reserve(1 << 20);
    pthread_t peer;
    if (pthread_create(&peer, nullptr, cond_rt_peer, &c) != 0)
        fail(row, "pthread_create failed");
    uint64_t served = 0;
    auto batch = [&]() {
        pthread_mutex_lock(&c.mu);
        c.go = true;
        c.batch_done = false;
        pthread_cond_signal(&c.to_peer);
        for (;;) {
            while (c.state != 1 && !c.batch_done)
                pthread_cond_wait(&c.to_main, &c.mu);
            if (c.state == 1) {
                c.legs.push_back(now_ns() - c.t0);
                c.state = 2;
                served++;
                pthread_cond_signal(&c.to_peer);
                continue;
            }
            break;   // batch_done
        }
        pthread_mutex_unlock(&c.mu);
    };
    batch();   // untimed, as weft's
    c.samples.clear();
    c.legs.clear();
    c.legs.reserve(1 << 20);
    served = 0;
    for (auto _ : st)
        batch();
    pthread_mutex_lock(&c.mu);
    c.stop = true;
    pthread_cond_signal(&c.to_peer);
    pthread_mutex_unlock(&c.mu);
    pthread_join(peer, nullptr);
    uint64_t n = uint64_t(st.iterations()) * kRtBatch;
    expect(served == n, row, "the main thread did not answer every request once");
    expect(c.samples.size() == n && c.legs.size() == n, row, "a round trip was not timed");
    std::vector<uint64_t> back(n);
    for (size_t i = 0; i < n; i++)
        back[i] = c.samples[i] - std::min(c.samples[i], c.legs[i]);
    latency_counters(st, c.samples);
    st.counters["to_main_p50_ns"] = double(percentile(c.legs, 0.50));
    st.counters["to_main_p99_ns"] = double(percentile(c.legs, 0.99));
    st.counters["back_p50_ns"] = double(percentile(back, 0.50));
    st.counters["back_p99_ns"] = double(percentile(back, 0.99));
    st.SetItemsProcessed(int64_t(n));
    st.SetLabel("baseline");
}

// ---- priority mix ---------------------------------------------------------------

constexpr uint64_t kMixLow = 100000;
constexpr uint64_t kMixPeriodNs = 20000;
constexpr uint64_t kLowWorkNs = 1500;
constexpr size_t kMixMaxFg = 1 << 16;   // foreground tasks per iteration, at most

// Iterations of low_work's loop that take about kLowWorkNs here
// (calibrated once, on the first priority_mix row).
uint64_t low_iters = 0;

__attribute__((noinline)) uint64_t low_work(uint64_t n, uint64_t x)
{
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

void calibrate_low_work()
{
    if (low_iters)
        return;
    // The fastest of several tries, so that a preemption during one does
    // not shrink the work.
    const uint64_t n = 200000;
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 7; k++) {
        uint64_t t0 = now_ns();
        benchmark::DoNotOptimize(low_work(n, 88172645463325252ull + uint64_t(k)));
        best = std::min(best, now_ns() - t0);
    }
    low_iters = std::max<uint64_t>(1, n * kLowWorkNs / std::max<uint64_t>(best, 1));
}

struct Mix;

struct FgRec {
    Mix *m;
    uint64_t t_spawn;   // written by the producer before the spawn
    uint64_t t_start;   // written by the task
};

struct Mix {
    weft_sched *s = nullptr;
    weft_priority bg = WEFT_PRIORITY_LOW, fg = WEFT_PRIORITY_HIGH;
    bool plain = false;   // every spawn a plain weft_spawn (no options)
    std::atomic<uint64_t> low_done{0};
    std::atomic<uint64_t> fg_ran{0};
    std::atomic<uint64_t> sink{0};
    std::vector<FgRec> fg_recs = std::vector<FgRec>(kMixMaxFg);
    size_t fg_spawned = 0;      // the producer's, read after join
    uint64_t fg_span_ns = 0;    // from the first foreground spawn to the last
    int err = 0;
};

void low_task(void *p)
{
    auto *m = static_cast<Mix *>(p);
    uint64_t x = low_work(low_iters, uint64_t(uintptr_t(p)) | 1);
    m->sink.fetch_add(x & 1, std::memory_order_relaxed);
    m->low_done.fetch_add(1, std::memory_order_release);   // release: the producer's stop test
}

void fg_task(void *p)
{
    auto *f = static_cast<FgRec *>(p);
    f->t_start = now_ns();
    f->m->fg_ran.fetch_add(1, std::memory_order_relaxed);
}

void mix_producer(Mix *m)
{
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);   // else a 20 us sleep is 70+ us
    weft_spawn_opts o{};
    o.priority = m->fg;
    size_t n = 0;
    uint64_t first = 0, last = 0;
    uint64_t next = now_ns();
    while (m->low_done.load(std::memory_order_acquire) < kMixLow && n < kMixMaxFg) {
        FgRec *f = &m->fg_recs[n];
        f->m = m;
        f->t_start = 0;
        f->t_spawn = now_ns();
        int rc = m->plain ? weft_spawn(m->s, fg_task, f) : weft_spawn_ex(m->s, fg_task, f, &o);
        if (rc != WEFT_OK) {
            m->err = rc;
            break;
        }
        if (n == 0)
            first = f->t_spawn;
        last = f->t_spawn;
        n++;
        next += kMixPeriodNs;
        uint64_t now = now_ns();
        if (next < now)
            next = now;   // fell behind (a late wake): no burst to catch up
        struct timespec ts = {time_t(next / 1000000000u), long(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
        }
    }
    m->fg_spawned = n;
    m->fg_span_ns = last - first;
}

void bm_priority_mix(benchmark::State &st, weft_priority bg, weft_priority fg, bool plain, const char *row)
{
    calibrate_low_work();
    weft_sched *s = make_sched(2);
    Mix m;
    m.s = s;
    m.bg = bg;
    m.fg = fg;
    m.plain = plain;
    weft_spawn_opts lo{};
    lo.priority = bg;
    std::vector<uint64_t> lat;
    uint64_t fg_total = 0, span_total = 0, gaps_total = 0;
    for (auto _ : st) {
        m.low_done.store(0);
        m.fg_ran.store(0);
        for (uint64_t i = 0; i < kMixLow; i++) {
            int rc = plain ? weft_spawn(s, low_task, &m) : weft_spawn_ex(s, low_task, &m, &lo);
            weft_bench_check(kProg, rc, "spawning a background task");
        }
        std::thread producer(mix_producer, &m);
        producer.join();
        weft_bench_check(kProg, weft_sched_wait_idle(s), "weft_sched_wait_idle");
        weft_bench_check(kProg, m.err, "spawning a foreground task");
        expect(m.low_done.load() == kMixLow, row, "a background task did not run once");
        expect(m.fg_ran.load() == m.fg_spawned, row, "a foreground task did not run once");
        expect(m.fg_spawned < kMixMaxFg, row, "the foreground record array filled up");
        for (size_t i = 0; i < m.fg_spawned; i++) {
            const FgRec &f = m.fg_recs[i];
            expect(f.t_start >= f.t_spawn, row, "a foreground task has no start time");
            lat.push_back(f.t_start - f.t_spawn);
        }
        fg_total += m.fg_spawned;
        span_total += m.fg_span_ns;
        gaps_total += m.fg_spawned ? m.fg_spawned - 1 : 0;
    }
    expect(fg_total >= 100 * uint64_t(st.iterations()), row,
           "fewer than 100 foreground tasks per iteration: the background ran out too soon");
    latency_counters(st, lat);
    st.counters["fg_tasks"] = double(fg_total) / double(st.iterations());
    st.counters["period_ns"] = gaps_total ? double(span_total) / double(gaps_total) : 0;
    st.counters["low_work_ns"] = double(kLowWorkNs);
    st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(kMixLow));
    if (plain)
        st.SetLabel("baseline");
    weft_bench_check(kProg, weft_sched_destroy(s), "weft_sched_destroy");
}

// ---- frame cycle ------------------------------------------------------------------

constexpr unsigned kChain = 32;
constexpr uint64_t kFrameCycles = 100000;

struct Counts {
    std::vector<uint64_t> c = std::vector<uint64_t>(kChain * 8);   // a cache line per task
    void check(uint64_t runs, const char *row) const {
        for (unsigned i = 0; i < kChain; i++)
            expect(c[i * 8] == runs, row, "a chain task did not run once per cycle");
    }
};

void chain_task(void *p)
{
    ++*static_cast<uint64_t *>(p);
}

// The loop every frame_cycle row times: kFrameCycles cycles, each timed.
template <class F>
void frame_loop(benchmark::State &st, F cycle)
{
    std::vector<uint64_t> per;
    per.reserve(kFrameCycles);
    uint64_t total = 0;
    for (auto _ : st) {
        per.clear();
        uint64_t t0 = now_ns(), prev = t0;
        for (uint64_t k = 0; k < kFrameCycles; k++) {
            cycle();
            uint64_t t = now_ns();
            per.push_back(t - prev);
            prev = t;
        }
        total += prev - t0;
    }
    uint64_t n = uint64_t(st.iterations()) * kFrameCycles;
    double mean = double(total) / double(n);
    st.counters["ns_per_cycle"] = mean;
    st.counters["s_per_1e6"] = mean * 1e6 / 1e9;
    st.counters["p50_ns"] = double(percentile(per, 0.50));   // the last iteration's cycles
    st.counters["p99_ns"] = double(percentile(per, 0.99));
    st.SetItemsProcessed(int64_t(n));
}

enum class Caller { Bound, BoundNoHelp, Outside };

void bm_frame_weft(benchmark::State &st, Caller caller, int spin_us, const char *row)
{
    weft_sched *s = make_sched(2, spin_us);
    if (caller != Caller::Outside)
        weft_bench_check(kProg, weft_sched_bind_ex(s, caller == Caller::BoundNoHelp ? WEFT_BIND_NO_HELP : 0),
                         "weft_sched_bind_ex");
    Counts cnt;
    weft_graph *g = nullptr;
    weft_bench_check(kProg, weft_graph_create(&g), "weft_graph_create");
    weft_task *prev = nullptr;
    for (unsigned i = 0; i < kChain; i++) {
        weft_task *t = nullptr;
        weft_bench_check(kProg, weft_graph_add_task(g, chain_task, &cnt.c[i * 8], &t), "weft_graph_add_task");
        if (prev)
            weft_bench_check(kProg, weft_task_precede(prev, t), "weft_task_precede");
        prev = t;
    }
    int err = 0;
    auto cycle = [&]() {
        err |= weft_graph_run(s, g);
        err |= weft_graph_wait(g);
    };
    for (int k = 0; k < 1000; k++)   // untimed: the check, the workers' first runs
        cycle();
    weft_bench_check(kProg, err, "weft_graph_run / weft_graph_wait (warm-up)");
    frame_loop(st, cycle);
    weft_bench_check(kProg, err, "weft_graph_run / weft_graph_wait");
    cnt.check(1000 + uint64_t(st.iterations()) * kFrameCycles, row);
    weft_bench_check(kProg, weft_graph_destroy(g), "weft_graph_destroy");
    if (caller != Caller::Outside)
        weft_sched_unbind();
    weft_bench_check(kProg, weft_sched_destroy(s), "weft_sched_destroy");
}

void bm_frame_tbb(benchmark::State &st, int parallelism, const char *row)
{
    namespace flow = oneapi::tbb::flow;
    using node_t = flow::continue_node<flow::continue_msg>;
    // max_allowed_parallelism counts the main thread: 3 = 2 TBB workers
    // plus the main thread, which runs tasks in wait_for_all.
    oneapi::tbb::global_control gc(oneapi::tbb::global_control::max_allowed_parallelism, size_t(parallelism));
    Counts cnt;
    {
        flow::graph g;
        std::vector<std::unique_ptr<node_t>> t;
        for (unsigned i = 0; i < kChain; i++) {
            uint64_t *c = &cnt.c[i * 8];
            t.push_back(std::make_unique<node_t>(g, [c](const flow::continue_msg &) { ++*c; }));
            if (i)
                flow::make_edge(*t[i - 1], *t[i]);
        }
        auto cycle = [&]() {
            t[0]->try_put(flow::continue_msg());
            g.wait_for_all();
        };
        for (int k = 0; k < 1000; k++)
            cycle();
        frame_loop(st, cycle);
        t.clear();   // the nodes go before their graph
    }
    cnt.check(1000 + uint64_t(st.iterations()) * kFrameCycles, row);
    st.SetLabel("baseline");
}

}  // namespace

int main(int argc, char **argv)
{
    using benchmark::RegisterBenchmark;
    struct PinRow {
        const char *name;
        unsigned flags;
        int spin_us;
    };
    static const PinRow pin_rows[] = {
        {"pinned_roundtrip/weft", 0, -1},
        {"pinned_roundtrip/weft_no_help", WEFT_BIND_NO_HELP, -1},
        {"pinned_roundtrip/weft_spin0", 0, 0},
        {"pinned_roundtrip/weft_no_help_spin0", WEFT_BIND_NO_HELP, 0},
    };
    for (const PinRow &p : pin_rows)
        RegisterBenchmark(p.name, [&p](benchmark::State &st) {
            bm_pinned_weft(st, p.flags, p.spin_us, p.name);
        })->UseRealTime();
    RegisterBenchmark("pinned_roundtrip/pthread_condvar", bm_pinned_condvar)->UseRealTime();

    struct MixRow {
        const char *name;
        weft_priority bg, fg;
        bool plain;
    };
    static const MixRow mix_rows[] = {
        {"priority_mix/weft", WEFT_PRIORITY_LOW, WEFT_PRIORITY_HIGH, false},
        {"priority_mix/weft_normal_over_low", WEFT_PRIORITY_LOW, WEFT_PRIORITY_NORMAL, false},
        {"priority_mix/weft_no_priority", WEFT_PRIORITY_NORMAL, WEFT_PRIORITY_NORMAL, true},
    };
    for (const MixRow &m : mix_rows)
        RegisterBenchmark(m.name, [&m](benchmark::State &st) {
            bm_priority_mix(st, m.bg, m.fg, m.plain, m.name);
        })->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(3);

    struct FrameRow {
        const char *name;
        Caller caller;
        int spin_us;
    };
    static const FrameRow frame_rows[] = {
        {"frame_cycle/weft_main_thread", Caller::Bound, -1},
        {"frame_cycle/weft_main_thread_no_help", Caller::BoundNoHelp, -1},
        {"frame_cycle/weft_outside_thread", Caller::Outside, -1},
        {"frame_cycle/weft_main_thread_no_help_spin0", Caller::BoundNoHelp, 0},
        {"frame_cycle/weft_outside_thread_spin0", Caller::Outside, 0},
    };
    for (const FrameRow &f : frame_rows)
        RegisterBenchmark(f.name, [&f](benchmark::State &st) {
            bm_frame_weft(st, f.caller, f.spin_us, f.name);
        })->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
    RegisterBenchmark("frame_cycle/tbb_flow_graph", [](benchmark::State &st) {
        bm_frame_tbb(st, 3, "frame_cycle/tbb_flow_graph");
    })->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
    RegisterBenchmark("frame_cycle/tbb_flow_graph_p2", [](benchmark::State &st) {
        bm_frame_tbb(st, 2, "frame_cycle/tbb_flow_graph_p2");
    })->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
    return weft_bench_run(argc, argv);
}

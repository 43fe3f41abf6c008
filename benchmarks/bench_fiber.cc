// Fiber-layer microbenchmarks: what a context switch costs in weft, next to
// the baselines a reader would compare it with, measured in the same run.
//
// Names are "<group>/<what>". Within a group every case counts the same
// unit in items_per_second, and cases labelled "baseline" are what
// report.py divides by:
//
//   oneway/     items = one-way switches (a ping-pong round trip is 2)
//   roundtrip/  items = round trips (resume a fiber, it suspends back)
//   create/     items = fibers made and given back
//
// The scheduler does not exist yet, so these drive the private arch and
// fiber layers directly, on the benchmark's own thread. Nothing is pinned:
// run.py reports medians of repetitions.

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "weft_internal.hh"

namespace {

constexpr std::size_t kStackSize = 64 * 1024;

// A plain stack for the contexts that bypass the fiber layer (raw switch,
// ucontext). Unmapped on scope exit; whatever context was parked on it is
// abandoned, which is fine for contexts that own nothing.
class Stack {
public:
    Stack()
    {
        void *m = mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED) {
            std::perror("bench_fiber: mmap");
            std::abort();
        }
        lo_ = m;
    }
    ~Stack() { munmap(lo_, kStackSize); }
    Stack(const Stack &) = delete;
    Stack &operator=(const Stack &) = delete;
    void *lo() const { return lo_; }

private:
    void *lo_;
};

// The benchmark thread as a fiber host, with a pool that is warm once one
// fiber has been made and released.
class FiberHost {
public:
    FiberHost()
    {
        if (weft__fiber_thread_enter(&self) != WEFT_OK ||
            weft__fiber_pool_init(&pool, 0, 8) != WEFT_OK) {
            std::fprintf(stderr, "bench_fiber: cannot set up the fiber host\n");
            std::abort();
        }
    }
    ~FiberHost()
    {
        weft__fiber_pool_fini(&pool);
        weft__fiber_thread_leave();
    }
    FiberHost(const FiberHost &) = delete;
    FiberHost &operator=(const FiberHost &) = delete;

    weft__fiber *make(weft__fiber_fn fn, void *arg)
    {
        weft__fiber *f = nullptr;
        if (weft__fiber_create(&pool, &f, fn, arg) != WEFT_OK) {
            std::fprintf(stderr, "bench_fiber: weft__fiber_create failed\n");
            std::abort();
        }
        f->host = &self;
        return f;
    }

    weft__fiber self;
    weft__fiber_pool pool;
};

// ---- (a) raw context switch ------------------------------------------------

struct RawPair {
    weft__ctx main;
    weft__ctx peer;
};

void raw_peer(void *arg)
{
    RawPair *p = static_cast<RawPair *>(arg);
    for (;;)
        weft__ctx_switch(&p->peer, &p->main);
}

// Main and peer ping-pong through weft__ctx_switch alone: no TLS, no
// sanitizer hooks. One iteration is a round trip, two one-way switches.
void BM_ctx_switch(benchmark::State &st)
{
    Stack stack;
    RawPair p;
    weft__ctx_make(&p.peer, stack.lo(), kStackSize, raw_peer, &p);
    weft__ctx_switch(&p.main, &p.peer);   // start the peer; it comes straight back
    for (auto _ : st)
        weft__ctx_switch(&p.main, &p.peer);
    st.SetItemsProcessed(2 * st.iterations());
}
BENCHMARK(BM_ctx_switch)->Name("oneway/weft_ctx_switch");

// What every one-way switch must execute besides moving registers: the
// ABI makes the floating-point control state callee-saved (MXCSR and the
// x87 control word on x86-64, FPCR on AArch64), so a switch saves the
// leaving side's and loads the other side's, from two different frames as
// the switch does. No stack change, no branch: the floor under
// weft_ctx_switch. On AMD Zen 3, stmxcsr alone issues about once every
// 12 cycles, which is most of a switch.
void BM_fp_control_floor(benchmark::State &st)
{
#if defined(__x86_64__)
    struct { uint32_t mxcsr; uint16_t cw; } out, in;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(in.mxcsr), "=m"(in.cw));
    for (auto _ : st)
        __asm__ volatile("stmxcsr %0\n\tfnstcw %1\n\tldmxcsr %2\n\tfldcw %3"
                         : "=m"(out.mxcsr), "=m"(out.cw) : "m"(in.mxcsr), "m"(in.cw));
    benchmark::DoNotOptimize(out);
#elif defined(__aarch64__)
    uint64_t out, in;
    __asm__ volatile("mrs %0, fpcr" : "=r"(in));
    for (auto _ : st)
        __asm__ volatile("mrs %0, fpcr\n\tmsr fpcr, %1" : "=&r"(out) : "r"(in));
    benchmark::DoNotOptimize(out);
#else
    st.SkipWithError("no floating-point control floor for this processor");
#endif
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_fp_control_floor)->Name("oneway/fp_control_floor");

// ---- (b) fiber-layer switch ---------------------------------------------------

struct Ponger {
    FiberHost *host;
    weft__fiber *fiber;
    bool stop;
};

// Switches back to the host until told to stop, then exits for good.
void ponger_main(void *arg)
{
    Ponger *p = static_cast<Ponger *>(arg);
    weft__fiber *self = weft__fiber_current();
    while (!p->stop)
        weft__fiber_switch(self, &p->host->self);
    weft__fiber_exit(self, &p->host->self);
}

void stop_ponger(FiberHost &h, Ponger &p)
{
    p.stop = true;
    weft__fiber_switch(&h.self, p.fiber);   // it exits back to us
    weft__fiber_release(&h.pool, p.fiber);
}

// The same ping-pong through weft__fiber_switch, which also updates the
// thread's current fiber (a TLS store) and would carry the sanitizer hooks
// in a sanitizer build.
void BM_fiber_switch(benchmark::State &st)
{
    FiberHost h;
    Ponger p{&h, nullptr, false};
    p.fiber = h.make(ponger_main, &p);
    weft__fiber_switch(&h.self, p.fiber);   // first run: stack and TLS warm
    for (auto _ : st)
        weft__fiber_switch(&h.self, p.fiber);
    st.SetItemsProcessed(2 * st.iterations());
    stop_ponger(h, p);
}
BENCHMARK(BM_fiber_switch)->Name("oneway/weft_fiber_switch");

// ---- (c) suspend / resume round trip --------------------------------------------

// The shape the scheduler will have: a worker resumes a fiber; the fiber,
// wherever it is in its code, suspends back to the worker that runs it,
// found through the current fiber rather than passed in.
void suspend_current()
{
    weft__fiber *self = weft__fiber_current();
    weft__fiber_switch(self, static_cast<weft__fiber *>(self->host));
}

void suspender_main(void *arg)
{
    Ponger *p = static_cast<Ponger *>(arg);
    while (!p->stop)
        suspend_current();
    weft__fiber *self = weft__fiber_current();
    weft__fiber_exit(self, static_cast<weft__fiber *>(self->host));
}

void BM_resume_suspend(benchmark::State &st)
{
    FiberHost h;
    Ponger p{&h, nullptr, false};
    p.fiber = h.make(suspender_main, &p);
    weft__fiber_switch(&h.self, p.fiber);
    for (auto _ : st) {
        p.fiber->host = &h.self;   // a resume names the resuming worker
        weft__fiber_switch(&h.self, p.fiber);
    }
    st.SetItemsProcessed(st.iterations());
    stop_ponger(h, p);
}
BENCHMARK(BM_resume_suspend)->Name("roundtrip/weft_fiber_resume_suspend");

// ---- (d) create and release ----------------------------------------------------------

void never_run(void *) { std::abort(); }

// A fiber taken from a warm pool and given back, never run: the cost of
// making a context on a cached stack. Fails if the pool had to mmap.
void BM_create_release(benchmark::State &st)
{
    FiberHost h;
    weft__fiber_release(&h.pool, h.make(never_run, nullptr));   // warm the pool
    const std::uint64_t mapped = h.pool.created;
    for (auto _ : st) {
        weft__fiber *f = h.make(never_run, nullptr);
        benchmark::DoNotOptimize(f);
        weft__fiber_release(&h.pool, f);
    }
    st.SetItemsProcessed(st.iterations());
    if (h.pool.created != mapped)
        st.SkipWithError("the pool mapped a fiber inside the timed loop");
}
BENCHMARK(BM_create_release)->Name("create/weft_fiber_create_release");

void exit_at_once(void *)
{
    weft__fiber *self = weft__fiber_current();
    weft__fiber_exit(self, static_cast<weft__fiber *>(self->host));
}

// A whole fiber life from a warm pool: create, first switch in, exit back,
// release. The floor under running a task on a fiber of its own.
void BM_create_run_release(benchmark::State &st)
{
    FiberHost h;
    weft__fiber_release(&h.pool, h.make(never_run, nullptr));
    const std::uint64_t mapped = h.pool.created;
    for (auto _ : st) {
        weft__fiber *f = h.make(exit_at_once, nullptr);
        weft__fiber_switch(&h.self, f);
        weft__fiber_release(&h.pool, f);
    }
    st.SetItemsProcessed(st.iterations());
    if (h.pool.created != mapped)
        st.SkipWithError("the pool mapped a fiber inside the timed loop");
}
BENCHMARK(BM_create_run_release)->Name("create/weft_fiber_create_run_release");

// ---- (e) baselines -------------------------------------------------------------------

struct UcPair {
    ucontext_t main;
    ucontext_t peer;
};
UcPair *uc_pair;   // makecontext passes int arguments only

void uc_peer()
{
    for (;;)
        swapcontext(&uc_pair->peer, &uc_pair->main);
}

// glibc's swapcontext ping-pong: it also saves and restores the signal
// mask, a system call each way.
void BM_swapcontext(benchmark::State &st)
{
    Stack stack;
    UcPair p;
    uc_pair = &p;
    if (getcontext(&p.peer) != 0) {
        st.SkipWithError("getcontext failed");
        return;
    }
    p.peer.uc_stack.ss_sp = stack.lo();
    p.peer.uc_stack.ss_size = kStackSize;
    p.peer.uc_link = nullptr;
    makecontext(&p.peer, uc_peer, 0);
    swapcontext(&p.main, &p.peer);
    for (auto _ : st)
        swapcontext(&p.main, &p.peer);
    st.SetItemsProcessed(2 * st.iterations());
    st.SetLabel("baseline");
    uc_pair = nullptr;
}
BENCHMARK(BM_swapcontext)->Name("oneway/ucontext_swapcontext");

// Two threads hand a turn back and forth under a mutex and two condition
// variables: the round trip a thread-per-task design pays to block and be
// woken.
struct CondPingPong {
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t to_peer = PTHREAD_COND_INITIALIZER;
    pthread_cond_t to_main = PTHREAD_COND_INITIALIZER;
    int turn = 0;   // 1: the peer's move; 0: main's
    bool stop = false;
};

void *cond_peer(void *arg)
{
    CondPingPong *c = static_cast<CondPingPong *>(arg);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->turn != 1 && !c->stop)
            pthread_cond_wait(&c->to_peer, &c->mu);
        if (c->stop)
            break;
        c->turn = 0;
        pthread_cond_signal(&c->to_main);
    }
    pthread_mutex_unlock(&c->mu);
    return nullptr;
}

void BM_condvar_pingpong(benchmark::State &st)
{
    CondPingPong c;
    pthread_t peer;
    if (pthread_create(&peer, nullptr, cond_peer, &c) != 0) {
        st.SkipWithError("pthread_create failed");
        return;
    }
    for (auto _ : st) {
        pthread_mutex_lock(&c.mu);
        c.turn = 1;
        pthread_cond_signal(&c.to_peer);
        while (c.turn != 0)
            pthread_cond_wait(&c.to_main, &c.mu);
        pthread_mutex_unlock(&c.mu);
    }
    pthread_mutex_lock(&c.mu);
    c.stop = true;
    pthread_cond_signal(&c.to_peer);
    pthread_mutex_unlock(&c.mu);
    pthread_join(peer, nullptr);
    st.SetItemsProcessed(st.iterations());
    st.SetLabel("baseline");
}
BENCHMARK(BM_condvar_pingpong)->Name("roundtrip/pthread_condvar")->UseRealTime();

void *do_nothing(void *) { return nullptr; }

// A thread made and joined: what a fiber replaces.
void BM_pthread_create_join(benchmark::State &st)
{
    for (auto _ : st) {
        pthread_t t;
        if (pthread_create(&t, nullptr, do_nothing, nullptr) != 0) {
            st.SkipWithError("pthread_create failed");
            return;
        }
        pthread_join(t, nullptr);
    }
    st.SetItemsProcessed(st.iterations());
    st.SetLabel("baseline");
}
BENCHMARK(BM_pthread_create_join)->Name("create/pthread_create_join")->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

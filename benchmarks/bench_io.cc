// Blocking without blocking a worker (issue 19): weft_fd_wait_for,
// weft_call_blocking and an idle poller, next to the same work done by
// threads in blocking calls, in the same run. Public API only.
//
// Names are "<group>/<case>"; cases labelled "baseline" are the ones
// report.py divides by.
//
//   pipe_pingpong/  items = round trips of one byte through two pipes.
//       weft_1_worker: two tasks on one worker, each reading with
//       O_NONBLOCK and weft_fd_wait_for on EAGAIN (so each round trip is two
//       suspends, two epoll registrations and two wakes through the
//       poller). weft_2_workers: the same tasks on 2 workers.
//       weft_calls_1_worker, weft_calls_2_workers: the same exchange
//       through weft_fd_read_for and weft_fd_write_all_for (issue 34): each
//       pipe end registered once, edge-triggered, a wait parking on its
//       record with no epoll_ctl.
//       threads_blocking_read (baseline): two threads in blocking
//       read/write.
//   call_blocking/  items = calls of an empty function on the blocking
//       pool, from 64 tasks at once (weft_64_tasks) or from one plain
//       thread (weft_plain_thread, a round trip through the pool's
//       queue); thread_create_join (baseline): a thread made and joined
//       per call, what a user would do without a pool.
//   idle/           counters only: the process's CPU time (getrusage)
//       over 1 s of idling with 10^4 descriptors (eventfds nobody writes
//       to) each waited on by a task, 2 workers:
//       cpu_percent_of_one_core must stay under 1. fd_waits_10k_2_workers
//       against no_waits_2_workers, the same scheduler with nothing
//       registered.
//
// The echo server at 1,000 connections (weft tasks against a thread per
// connection) and minimake against make -j 64 are programs of their own:
// benchmarks/bench_echo.sh and benchmarks/bench_minimake.sh.

#include "bench_main.hh"
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "weft.h"

namespace {

void check(int rc, const char *what) { weft_bench_check("bench_io", rc, what); }

weft_sched *make_sched(unsigned workers) { return weft_bench_sched("bench_io", workers); }

// ---- pipe_pingpong ----------------------------------------------------------

struct pp {
    int ab[2], ba[2];   // a writes ab, b reads it; b writes ba, a reads it
    long n;
};

// Reads one byte, waiting with weft_fd_wait_for when none is there.
void read_byte(int fd)
{
    char c;
    for (;;) {
        if (read(fd, &c, 1) == 1)
            return;
        weft_fd_wait_for(fd, POLLIN, UINT64_MAX);
    }
}

void write_byte(int fd)
{
    char c = 1;
    while (write(fd, &c, 1) != 1)
        weft_fd_wait_for(fd, POLLOUT, UINT64_MAX);
}

void ping(void *arg)
{
    pp *p = static_cast<pp *>(arg);
    for (long i = 0; i < p->n; i++) {
        write_byte(p->ab[1]);
        read_byte(p->ba[0]);
    }
}

void pong(void *arg)
{
    pp *p = static_cast<pp *>(arg);
    for (long i = 0; i < p->n; i++) {
        read_byte(p->ab[0]);
        write_byte(p->ba[1]);
    }
}

// The same exchange through the descriptor calls: each pipe end is
// registered once (edge-triggered) and a wait parks on its record.
void ping_calls(void *arg)
{
    pp *p = static_cast<pp *>(arg);
    char c = 1;
    for (long i = 0; i < p->n; i++) {
        check(weft_fd_write_all_for(p->ab[1], &c, 1, nullptr, UINT64_MAX), "write_all_for");
        if (weft_fd_read_for(p->ba[0], &c, 1, UINT64_MAX) != 1)
            std::abort();
    }
}

void pong_calls(void *arg)
{
    pp *p = static_cast<pp *>(arg);
    char c;
    for (long i = 0; i < p->n; i++) {
        if (weft_fd_read_for(p->ab[0], &c, 1, UINT64_MAX) != 1)
            std::abort();
        check(weft_fd_write_all_for(p->ba[1], &c, 1, nullptr, UINT64_MAX), "write_all_for");
    }
}

void make_pipes(pp &p, int flags)
{
    if (pipe2(p.ab, flags | O_CLOEXEC) != 0 || pipe2(p.ba, flags | O_CLOEXEC) != 0)
        std::abort();
}

void close_pipes(pp &p)
{
    for (int fd : { p.ab[0], p.ab[1], p.ba[0], p.ba[1] })
        close(fd);
}

void weft_pipe_pingpong(benchmark::State &state, unsigned workers, bool calls)
{
    weft_sched *s = make_sched(workers);
    pp p;
    make_pipes(p, O_NONBLOCK);
    const long n = 20000;
    for (auto _ : state) {
        p.n = n;
        check(weft_spawn(s, calls ? ping_calls : ping, &p), "spawn");
        check(weft_spawn(s, calls ? pong_calls : pong, &p), "spawn");
        check(weft_sched_wait_idle(s), "wait_idle");
    }
    state.SetItemsProcessed(state.iterations() * n);
    for (int fd : { p.ab[0], p.ab[1], p.ba[0], p.ba[1] })
        weft_fd_close(fd);   // registered by the calls: weft_fd_close, not close(2)
    check(weft_sched_destroy(s), "destroy");
}

void *pong_thread(void *arg)
{
    pp *p = static_cast<pp *>(arg);
    char c;
    for (long i = 0; i < p->n; i++) {
        if (read(p->ab[0], &c, 1) != 1 || write(p->ba[1], &c, 1) != 1)
            std::abort();
    }
    return nullptr;
}

void threads_pipe_pingpong(benchmark::State &state)
{
    pp p;
    make_pipes(p, 0);
    const long n = 20000;
    for (auto _ : state) {
        p.n = n;
        pthread_t th;
        pthread_create(&th, nullptr, pong_thread, &p);
        char c = 1;
        for (long i = 0; i < n; i++) {
            if (write(p.ab[1], &c, 1) != 1 || read(p.ba[0], &c, 1) != 1)
                std::abort();
        }
        pthread_join(th, nullptr);
    }
    state.SetItemsProcessed(state.iterations() * n);
    state.SetLabel("baseline");
    close_pipes(p);
}

// ---- call_blocking -------------------------------------------------------------

std::atomic<long> calls{0};

void empty_call(void *)
{
    calls.fetch_add(1, std::memory_order_relaxed);
}

struct cb_ctx {
    weft_sched *s;
    long n;
};

void cb_task(void *arg)
{
    cb_ctx *c = static_cast<cb_ctx *>(arg);
    for (long i = 0; i < c->n; i++)
        check(weft_call_blocking(c->s, empty_call, nullptr), "call_blocking");
}

void weft_call_blocking_tasks(benchmark::State &state)
{
    weft_sched *s = make_sched(2);
    cb_ctx c = { s, 200 };
    for (auto _ : state) {
        for (int t = 0; t < 64; t++)
            check(weft_spawn(s, cb_task, &c), "spawn");
        check(weft_sched_wait_idle(s), "wait_idle");
    }
    state.SetItemsProcessed(state.iterations() * 64 * c.n);
    check(weft_sched_destroy(s), "destroy");
}

void weft_call_blocking_thread(benchmark::State &state)
{
    weft_sched *s = make_sched(2);
    for (auto _ : state)
        check(weft_call_blocking(s, empty_call, nullptr), "call_blocking");
    state.SetItemsProcessed(state.iterations());
    check(weft_sched_destroy(s), "destroy");
}

void *empty_thread(void *)
{
    empty_call(nullptr);
    return nullptr;
}

void thread_create_join(benchmark::State &state)
{
    for (auto _ : state) {
        pthread_t th;
        pthread_create(&th, nullptr, empty_thread, nullptr);
        pthread_join(th, nullptr);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetLabel("baseline");
}

// ---- idle ------------------------------------------------------------------------

std::atomic<unsigned> idle_registered{0};

void idle_waiter(void *arg)
{
    int fd = static_cast<int>(reinterpret_cast<intptr_t>(arg));
    idle_registered.fetch_add(1, std::memory_order_relaxed);
    weft_fd_wait_for(fd, POLLIN, UINT64_MAX);   // until destroy: WEFT_ESHUTDOWN
}

double cpu_seconds()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

void idle_cpu(benchmark::State &state, unsigned nfds)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < nfds + 64) {
        state.SkipWithError("RLIMIT_NOFILE too low for the descriptors");
        return;
    }
    double pct = 0;
    for (auto _ : state) {
        state.PauseTiming();
        weft_sched *s = make_sched(2);
        std::vector<int> fds;
        idle_registered = 0;
        for (unsigned i = 0; i < nfds; i++) {
            int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);   // never written: never readable
            if (fd < 0)
                std::abort();
            fds.push_back(fd);
            check(weft_spawn(s, idle_waiter, reinterpret_cast<void *>(static_cast<intptr_t>(fd))), "spawn");
        }
        while (idle_registered.load() < nfds)
            usleep(1000);
        usleep(100000);   // every wait is in the epoll set; the workers park
        state.ResumeTiming();
        double c0 = cpu_seconds();
        struct timespec one = { 1, 0 };
        nanosleep(&one, nullptr);
        pct = (cpu_seconds() - c0) * 100.0;
        state.PauseTiming();
        check(weft_sched_destroy(s), "destroy");   // the waits end with WEFT_ESHUTDOWN
        for (int fd : fds)
            close(fd);
        state.ResumeTiming();
    }
    if (nfds == 0)
        state.SetLabel("baseline");
    state.counters["cpu_percent_of_one_core"] = pct;
    state.counters["descriptors"] = nfds;
}

void register_all()
{
    benchmark::RegisterBenchmark("pipe_pingpong/weft_1_worker", weft_pipe_pingpong, 1u, false)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pipe_pingpong/weft_2_workers", weft_pipe_pingpong, 2u, false)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pipe_pingpong/weft_calls_1_worker", weft_pipe_pingpong, 1u, true)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pipe_pingpong/weft_calls_2_workers", weft_pipe_pingpong, 2u, true)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("pipe_pingpong/threads_blocking_read", threads_pipe_pingpong)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("call_blocking/weft_64_tasks", weft_call_blocking_tasks)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("call_blocking/weft_plain_thread", weft_call_blocking_thread)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("call_blocking/thread_create_join", thread_create_join)
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("idle/fd_waits_10k_2_workers", idle_cpu, 10000u)
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
    benchmark::RegisterBenchmark("idle/no_waits_2_workers", idle_cpu, 0u)
        ->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);
}

}  // namespace

int main(int argc, char **argv)
{
    register_all();
    return weft_bench_run(argc, argv);
}

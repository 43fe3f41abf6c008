/* weft.hpp's primitives, loops and waits, from the header as a user
 * reads it: weft::mutex under std::lock_guard and std::unique_lock, the
 * condition variable, wait group, semaphore and event, channel<T> of a
 * struct, parallel_for and parallel_reduce over iterators and indices
 * (the reduce the same at every worker count), exceptions from loop
 * bodies, blocking calls and predicates thrown again on the caller,
 * sleep, descriptor and child waits, at 0, 1, 2 and 8 workers. Tasks
 * block on each other in valid orders throughout. */
#include "cpptest.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <vector>

#if !defined(_WIN32)
#include <sys/wait.h>
#endif

using cpptest::env;
using cpptest::WORKERS;

CPP_TEST(mutex_with_std_locks)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::mutex m;
        weft::wait_group wg(16);
        long total = 0;
        for (int t = 0; t < 16; t++)
            CHECK(!e.s.spawn([&] {
                for (int i = 0; i < 200; i++) {
                    if (i % 2) {
                        std::lock_guard<weft::mutex> lk(m);
                        total++;
                    } else {
                        std::unique_lock<weft::mutex> lk(m);
                        long v = total;
                        if (i % 50 == 0)
                            weft::yield();   /* holding the lock: others queue */
                        total = v + 1;
                    }
                }
                wg.done();
            }));
        CHECK(!wg.wait());
        CHECK_EQ(total, 16 * 200);
        std::scoped_lock lk(m);
        CHECK(!m.try_lock());
    }
}

CPP_TEST(condition_variable_queue)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::mutex m;
        weft::condition_variable cv;
        std::vector<int> q;
        bool closed = false;
        long got = 0;
        weft::wait_group wg(2);
        CHECK(!e.s.spawn([&] {   /* the consumer first: it waits */
            std::unique_lock<weft::mutex> lk(m);
            for (;;) {
                CHECK(!cv.wait(lk, [&] { return !q.empty() || closed; }));
                if (q.empty())
                    break;
                got += q.back();
                q.pop_back();
            }
            wg.done();
        }));
        CHECK(!e.s.spawn([&] {
            for (int i = 1; i <= 100; i++) {
                std::lock_guard<weft::mutex> lk(m);
                q.push_back(i);
                cv.notify_one();
            }
            std::lock_guard<weft::mutex> lk(m);
            closed = true;
            cv.notify_all();
            wg.done();
        }));
        CHECK(!wg.wait());
        CHECK_EQ(got, 5050);
        std::unique_lock<weft::mutex> lk(m);
        CHECK(cv.wait_for(lk, std::chrono::microseconds(100)) == weft::errc::etimedout);
        CHECK(lk.owns_lock());
    }
}

CPP_TEST(semaphore_event_wait_group)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::semaphore sem(2);
        std::atomic<int> inside{0}, most{0};
        weft::wait_group wg;
        for (int i = 0; i < 12; i++) {
            wg.add();
            CHECK(!e.s.spawn([&] {
                CHECK(!sem.acquire());
                int n = ++inside;
                int m = most.load();
                while (n > m && !most.compare_exchange_weak(m, n)) {
                }
                weft::yield();
                --inside;
                sem.release();
                wg.done();
            }));
        }
        CHECK(!wg.wait());
        CHECK(most.load() >= 1 && most.load() <= 2);
        CHECK(sem.try_acquire());
        CHECK(sem.try_acquire());
        CHECK(!sem.try_acquire());
        CHECK(sem.acquire_for(std::chrono::microseconds(50)) == weft::errc::etimedout);
        sem.release();
        sem.release();

        weft::event ev(true);
        CHECK(!ev.signalled());
        CHECK(ev.wait_for(std::chrono::nanoseconds(0)) == weft::errc::etimedout);
        std::atomic<int> woke{0};
        weft::wait_group all(3);
        for (int i = 0; i < 3; i++)
            CHECK(!e.s.spawn([&] { CHECK(!ev.wait()); woke++; all.done(); }));
        CHECK(!e.s.spawn([&] { ev.signal(); }));
        CHECK(!all.wait());
        CHECK_EQ(woke.load(), 3);
        CHECK(ev.signalled());
        ev.clear();
        CHECK(!ev.signalled());
        CHECK(wg.wait_for(std::chrono::seconds(1)) == std::error_code());
    }
}

namespace {
struct msg {
    int id;
    double value;
};
} // namespace

CPP_TEST(channel_of_struct)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::channel<msg> ch(4), back(0);
        CHECK(!ch.error());
        weft::wait_group wg(2);
        double seen = 0;
        CHECK(!e.s.spawn([&] {   /* receives, answers each on a rendezvous channel */
            msg m;
            while (!ch.recv(m)) {
                seen += m.value;
                CHECK(!back.send(msg{m.id, -m.value}));
            }
            back.close();
            wg.done();
        }));
        CHECK(!e.s.spawn([&] {
            for (int i = 0; i < 64; i++) {
                CHECK(!ch.send(msg{i, i * 0.5}));
                msg r;
                CHECK(!back.recv(r));
                CHECK(r.id == i && r.value == -i * 0.5);
            }
            ch.close();
            wg.done();
        }));
        CHECK(!wg.wait());
        CHECK(seen == 0.5 * (63 * 64 / 2));
        msg m{};
        CHECK(ch.send(m) == weft::errc::eclosed);
        CHECK(ch.try_recv(m) == weft::errc::eclosed);
        weft::channel<int> moved(weft::channel<int>(1));
        CHECK(!moved.try_send(3));
        CHECK(moved.try_send(4) == weft::errc::eagain);
        int v = 0;
        CHECK(!moved.recv_for(v, std::chrono::seconds(1)));
        CHECK_EQ(v, 3);
        CHECK(moved.recv_for(v, std::chrono::microseconds(10)) == weft::errc::etimedout);
    }
}

CPP_TEST(parallel_loops)
{
    std::vector<double> x(100003);
    for (std::size_t i = 0; i < x.size(); i++)
        x[i] = 1.0 / double(i + 1);   /* a sum whose rounding depends on the grouping */
    double first = 0;
    bool have = false;
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<int> v(10000, 0);
        CHECK(!weft::parallel_for(e.s, v.begin(), v.end(), [](int &k) { k += 2; }));
        CHECK_EQ(std::accumulate(v.begin(), v.end(), 0L), 20000);
        std::vector<std::atomic<int>> hit(1000);
        CHECK(!weft::parallel_for(e.s, 0, 1000, [&](int i) { hit[std::size_t(i)]++; }, 7));
        bool once = true;
        for (auto &h : hit)
            once = once && h.load() == 1;
        CHECK(once);
        CHECK(weft::parallel_for(e.s, 5, 1, [](int) {}) == weft::errc::einval);
        std::atomic<long> chunks{0};
        CHECK(!weft::parallel_for_chunks(e.s, 0, 1000, [&](std::size_t b, std::size_t en) {
            CHECK(en - b <= 100);
            chunks += long(en - b);
        }, 100));
        CHECK_EQ(chunks.load(), 1000);

        double sum = -1;
        CHECK(!weft::parallel_reduce(e.s, x.begin(), x.end(), sum, 0.0, [](double a, double b) { return a + b; }));
        if (!have)
            first = sum, have = true;
        CHECK(sum == first);   /* bit for bit, at every worker count */
        long sq = 0;
        CHECK(!weft::parallel_transform_reduce(e.s, 1, 101, sq, 0L, [](long a, long b) { return a + b; },
                                               [](int i) { return long(i) * i; }));
        CHECK_EQ(sq, 338350);
        /* A body that blocks: each waits for the event a later one signals. */
        weft::event go(true);
        CHECK(!weft::parallel_for(e.s, 0, 64, [&](int i) {
            if (i == 63)
                go.signal();
            else
                CHECK(!go.wait());
        }, 1));
    }
}

CPP_TEST(exceptions_thrown_again_on_the_caller)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<int> bodies{0};
        bool caught = false;
        try {
            (void)weft::parallel_for(e.s, 0, 1000, [&](int i) {
                bodies++;
                if (i == 10)
                    throw std::out_of_range("ten");
            }, 1);
        } catch (const std::out_of_range &) {
            caught = true;
        }
        CHECK(caught);
        CHECK(bodies.load() >= 1 && bodies.load() <= 1000);
        long r = 7;
        caught = false;
        try {
            (void)weft::parallel_reduce(e.s, 0, 100, r, 0L, [](long a, long b) -> long {
                if (b == 50)
                    throw std::runtime_error("fifty");
                return a + b;
            });
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
        CHECK_EQ(r, 7);   /* untouched */
        caught = false;
        try {
            (void)e.s.call_blocking([] { throw std::runtime_error("blocking"); });
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
        caught = false;
        int asked = 0;
        try {
            (void)weft::wait_until([&]() -> bool {   /* asked at once: throws */
                if (++asked == 1)
                    throw 1;
                return false;
            });
        } catch (int) {
            caught = true;
        }
        CHECK(caught == (w == 0));   /* a plain thread: ENOTBOUND, pred never asked */
        CHECK_EQ(asked, w == 0 ? 1 : 0);
    }
}

CPP_CHILD(exit_seven)
{
    std::fflush(nullptr);
    std::_Exit(7);
}

/* A descriptor wait (a pipe; on Windows a loopback TCP pair, weft_fd
 * being a SOCKET there), a sleep, a blocking call and wait_until, each
 * from a task, in a valid order at every worker count; then a child's
 * end waited on from a task (waitpid's status on Linux, the exit code on
 * Windows). */
CPP_TEST(waits_blocking_calls_and_sleep)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft_fd fds[2];
        if (!cpptest::fd_pair(fds)) {
            CHECK(!"fd_pair");
            continue;
        }
        weft::wait_group wg(2);
        short rev = 0;
        std::atomic<int> flag{0};
        int ticks = 0;
        CHECK(!e.s.spawn([&] {
            CHECK(!weft::fd_wait(fds[0], cpptest::poll_in, &rev));
            char c;
            CHECK(cpptest::fd_read1(fds[0], &c));
            flag = 2;
            wg.done();
        }));
        CHECK(!e.s.spawn([&] {
            CHECK(!weft::sleep_for(std::chrono::milliseconds(1)));
            CHECK(!e.s.call_blocking([&] { CHECK(cpptest::fd_write1(fds[1], 'x')); }));
            CHECK(!weft::wait_until([&] { return ++ticks, flag.load() == 2; }));   /* the reader's work */
            wg.done();
        }));
        CHECK(!wg.wait());
        CHECK(rev & cpptest::poll_in);
        CHECK_EQ(flag.load(), 2);
        CHECK(ticks >= 1);
        CHECK(weft::fd_wait_for(fds[0], cpptest::poll_in, std::chrono::milliseconds(1)) == weft::errc::etimedout);
        CHECK(weft::fd_wait_for(-1, cpptest::poll_in, std::chrono::milliseconds(1)) == weft::errc::einval);
        cpptest::fd_close(fds[0]);
        cpptest::fd_close(fds[1]);
    }
    cpptest::child c = cpptest::start_child("exit_seven");
    CHECK(c.pid > 0);
    env e(2);
    int status = -1;
    weft::wait_group wg(1);
    CHECK(!e.s.spawn([&] { CHECK(!weft::pid_wait(c.pid, &status)); wg.done(); }));
    CHECK(!wg.wait());
    cpptest::close_child(c);
#if defined(_WIN32)
    CHECK_EQ(status, 7);
#else
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
#endif
}

CPP_TEST_MAIN

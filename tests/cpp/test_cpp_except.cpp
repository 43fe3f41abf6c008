/* C++ exceptions on weft's fibers, the case Windows makes hard: the
 * unwinder must see the fiber's own stack (the context switch moves the
 * thread information block's stack bounds and, for Wine, its handler
 * list; src/arch/frame.h). Thrown and caught inside a task, through
 * frames big enough for stack probes; thrown after the task blocked and
 * resumed (on the worker it blocked on: fibers are pinned), with other
 * tasks' fibers throwing in between; out of a graph task, failing it and
 * thrown again on the waiter; and on the calling thread after its fibers
 * ran. At 0, 1, 2 and 8 workers; tasks block on each other in valid
 * orders only. */
#include "cpptest.hpp"

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

using cpptest::env;
using cpptest::WORKERS;

namespace {

struct deep_error : std::runtime_error {
    int depth;
    deep_error(int d) : std::runtime_error("deep"), depth(d) {}
};

/* Throws from `depth` frames down, each with more than a page of locals
 * (so the compiler probes the stack: __chkstk on Windows). */
[[gnu::noinline]] int throw_deep(int depth)
{
    volatile char pad[6000];
    pad[0] = static_cast<char>(depth);
    pad[sizeof pad - 1] = pad[0];
    if (depth == 0)
        throw deep_error(pad[sizeof pad - 1]);
    return throw_deep(depth - 1) + pad[0];
}

/* Throws and catches here; how many catches saw the right exception. */
int throw_and_catch(int seed)
{
    int ok = 0;
    try {
        throw std::runtime_error("task " + std::to_string(seed));
    } catch (const std::runtime_error &e) {
        ok += e.what() == "task " + std::to_string(seed);
    }
    try {
        (void)throw_deep(4);
    } catch (const deep_error &e) {
        ok += e.depth == 0;
    }
    try {
        throw seed;
    } catch (int v) {
        ok += v == seed;
    }
    return ok;   /* 3 when all were caught */
}

} // namespace

CPP_TEST(exceptions_caught_inside_tasks)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<int> ok{0};
        for (int i = 0; i < 64; i++)
            CHECK(!e.s.spawn([&ok, i] { ok += throw_and_catch(i); }));
        CHECK(!e.s.wait_idle());
        CHECK_EQ(ok.load(), 64 * 3);
        /* The calling thread ran tasks on fibers (W = 0): its own stack's
         * bounds and handlers are back. */
        CHECK_EQ(throw_and_catch(1000), 3);
    }
}

/* Sixteen tasks block on one event (on one worker, sixteen fibers at
 * once), a seventeenth throws and catches before it signals; each of the
 * sixteen then throws and catches on the fiber it resumed on, which is
 * the thread it blocked on. */
CPP_TEST(exceptions_after_blocking)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::event go(true);   /* manual reset: one signal ends every wait */
        weft::wait_group started(16), done(17);
        std::atomic<int> ok{0}, same_thread{0};
        for (int i = 0; i < 16; i++)
            CHECK(!e.s.spawn([&, i] {
                int before = weft::thread_id();
                ok += throw_and_catch(i);
                started.done();
                CHECK(!go.wait());
                same_thread += weft::thread_id() == before;
                ok += throw_and_catch(100 + i);
                done.done();
            }));
        CHECK(!e.s.spawn([&] {
            CHECK(!started.wait());   /* all sixteen are at, or past, their wait */
            ok += throw_and_catch(-1);
            go.signal();
            done.done();
        }));
        CHECK(!done.wait());
        CHECK_EQ(ok.load(), (16 * 2 + 1) * 3);
        CHECK_EQ(same_thread.load(), 16);
        CHECK_EQ(throw_and_catch(2000), 3);
    }
}

/* Out of a graph task: the task fails, its successor is skipped, and the
 * waiter gets the exception; here the throwing task blocked first on a
 * task of the same run (a ping-pong over two events), and a sibling
 * threw and caught meanwhile. */
CPP_TEST(exceptions_cross_the_task_boundary)
{
    for (unsigned w : WORKERS) {
        env e(w);
        for (int run = 0; run < 3; run++) {
            weft::graph g;
            weft::event ping, pong;
            std::atomic<int> ok{0};
            int after = 0;
            weft::task thrower = g.emplace([&] {
                for (int i = 0; i < 5; i++) {
                    ping.signal();
                    CHECK(!pong.wait());
                }
                ok += throw_and_catch(run);
                (void)throw_deep(3);   /* out of the task */
            });
            g.emplace([&] {
                for (int i = 0; i < 5; i++) {
                    CHECK(!ping.wait());
                    ok += throw_and_catch(i);
                    pong.signal();
                }
            });
            thrower.precede(g.emplace([&] { after++; }));
            CHECK(!e.s.run(g));
            CHECK(g.wait() == weft::errc::efailed);
            CHECK(g.failed_task() == thrower);
            CHECK_EQ(g.fail_code(), weft::exception_code);
            int depth = -1;
            try {
                g.rethrow_exception();
            } catch (const deep_error &x) {
                depth = x.depth;
            }
            CHECK_EQ(depth, 0);
            CHECK_EQ(ok.load(), 6 * 3);
            CHECK_EQ(after, 0);
        }
    }
}

/* A blocking call and a loop body throw on other threads and other
 * fibers; both come back on the caller, a task that blocked meanwhile. */
CPP_TEST(exceptions_from_blocking_calls_and_loops_in_a_task)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::wait_group wg(1);
        int caught = 0;
        CHECK(!e.s.spawn([&] {
            try {
                (void)e.s.call_blocking([] { (void)throw_deep(2); });
            } catch (const deep_error &) {
                caught++;
            }
            std::vector<int> v(256, 1);
            try {
                (void)weft::parallel_for(e.s, v.begin(), v.end(), [](int &x) {
                    if (x == 1)
                        throw std::logic_error("body");
                });
            } catch (const std::logic_error &) {
                caught++;
            }
            caught += throw_and_catch(7) == 3;
            wg.done();
        }));
        CHECK(!wg.wait());
        CHECK_EQ(caught, 3);
    }
}

CPP_TEST_MAIN

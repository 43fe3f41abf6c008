/* weft.hpp's graphs, from the header as a user reads it: tasks from
 * callables (copies destroyed once, move-only ones), precede/succeed with
 * several tasks, conditions and the loop idiom, modules, run, run_n and
 * run_until, build errors kept until cleared, exceptions in tasks,
 * conditions and modules' tasks, pins, and tasks of one run blocking on
 * each other (event, channel) in valid orders, at 0, 1, 2 and 8 workers. */
#include "cpptest.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using cpptest::env;
using cpptest::WORKERS;

namespace {
struct lives {
    std::atomic<long> *made, *gone;
    lives(std::atomic<long> *m, std::atomic<long> *g) : made(m), gone(g) { ++*made; }
    lives(const lives &o) : made(o.made), gone(o.gone) { ++*made; }
    ~lives() { ++*gone; }
};
} // namespace

CPP_TEST(graph_precede_succeed_order)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        CHECK(static_cast<bool>(g));
        std::atomic<int> clock{0};
        int at[6] = {};
        auto stamp = [&](int i) { return [&, i] { at[i] = ++clock; }; };
        auto [a, b, c, d] = g.emplace(stamp(0), stamp(1), stamp(2), stamp(3));
        weft::task join = g.placeholder();
        weft::task last = g.emplace(stamp(5));
        a.precede(b, c, d);   /* a before b, c, d */
        join.succeed(b, c, d).precede(last);
        a.name("a");
        CHECK(std::string(a.name()) == "a");
        CHECK_EQ(a.num_successors(), 3);
        CHECK_EQ(join.num_predecessors(), 3);
        CHECK_EQ(g.size(), 6);
        for (int run = 0; run < 3; run++) {
            clock = 0;
            CHECK(!e.s.run(g));
            CHECK(!g.wait());
            CHECK(g.done());
            CHECK_EQ(at[0], 1);
            for (int i = 1; i <= 3; i++)
                CHECK(at[i] > at[0] && at[i] < at[5]);
            CHECK_EQ(at[5], 5);
            CHECK(last.state() == WEFT_TASK_DONE);
        }
    }
}

CPP_TEST(graph_callables_destroyed_once)
{
    std::atomic<long> made{0}, gone{0}, runs{0};
    for (unsigned w : WORKERS) {
        env e(w);
        {
            weft::graph g;
            lives l(&made, &gone);
            for (int i = 0; i < 50; i++)
                g.emplace([l, &runs] { runs++; });
            auto p = std::make_unique<int>(7);
            g.emplace([p = std::move(p), &runs] { runs += *p; });   /* move-only */
            weft::graph moved = std::move(g);   /* tasks keep working */
            CHECK(!e.s.run_n(moved, 2));
            CHECK(!moved.wait());
        }
        CHECK_EQ(made.load(), gone.load());
    }
    CHECK_EQ(runs.load(), 4 * 2 * (50 + 7));
}

/* The do-while idiom: init -> body -> cond, cond -0-> body, cond -1-> done. */
CPP_TEST(graph_condition_loop)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        int i = 0, body_runs = 0, done_runs = 0;
        weft::task init = g.emplace([&] { i = 0; });
        weft::task body = g.emplace([&] { body_runs++; });
        weft::task cond = g.emplace([&] { return ++i < 10 ? 0 : 1; });
        weft::task done = g.emplace([&] { done_runs++; });
        weft::task side = g.condition([] { return 7; });   /* out of range: runs none */
        weft::task never = g.emplace([&] { done_runs += 100; });
        init.precede(body);
        body.precede(cond);
        cond.precede(body, done);
        side.precede(never);
        CHECK(!g.build_error());
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(body_runs, 10);
        CHECK_EQ(done_runs, 1);
    }
}

CPP_TEST(graph_modules_and_series)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph sub, top;
        std::atomic<int> inner{0}, after{0};
        auto [x, y] = sub.emplace([&] { inner++; }, [&] { inner++; });
        x.precede(y);
        weft::task m = top.composed_of(sub);
        weft::task t = top.emplace([&] { after += inner.load(); });
        m.precede(t);
        CHECK(!e.s.run_n(top, 3));
        CHECK(!top.wait());
        CHECK_EQ(inner.load(), 6);
        CHECK_EQ(after.load(), 2 + 4 + 6);
        int runs = 0;
        CHECK(!e.s.run_until(top, [&] { return ++runs == 4; }));
        CHECK(!top.wait());
        CHECK_EQ(runs, 4);
        CHECK_EQ(inner.load(), 6 + 8);
        CHECK(!top.composed_of(top));   /* itself: refused, kept */
        CHECK(top.build_error() == weft::errc::einval);
    }
}

CPP_TEST(graph_build_errors_are_kept)
{
    for (unsigned w : {0u, 2u}) {
        env e(w);
        weft::graph g;
        int ran = 0;
        weft::task a = g.emplace([&] { ran++; });
        weft::task none;
        a.precede(a);   /* a self-edge */
        CHECK(g.build_error() == weft::errc::einval);
        a.precede(none);   /* the first error stays */
        CHECK(e.s.run(g) == weft::errc::einval);   /* refused: nothing ran */
        CHECK(!g.wait());   /* no run: OK at once */
        CHECK_EQ(ran, 0);
        g.clear_build_error();
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(ran, 1);
        weft::graph other;
        weft::task b = other.emplace([] {});
        a.precede(b);   /* two graphs */
        CHECK(g.build_error() == weft::errc::einval);
        CHECK(!other.build_error());
        CHECK(e.s.run_until(g, [] { return true; }) == weft::errc::einval);
        CHECK(a.pin(-5).get() == a.get());
    }
}

CPP_TEST(graph_task_exceptions)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        int after = 0, other = 0;
        weft::task bad = g.emplace([] { throw std::runtime_error("task broke"); });
        weft::task dep = g.emplace([&] { after++; });
        g.emplace([&] { other++; });
        bad.precede(dep);
        for (int run = 0; run < 2; run++) {
            CHECK(!e.s.run(g));
            std::error_code ec = g.wait();
            CHECK(ec == weft::errc::efailed);
            CHECK_EQ(g.fail_code(), weft::exception_code);
            CHECK(g.failed_task() == bad);
            CHECK(bad.state() == WEFT_TASK_FAILED);
            CHECK(dep.state() == WEFT_TASK_SKIPPED);
            std::string what;
            try {
                g.rethrow_exception();
            } catch (const std::runtime_error &x) {
                what = x.what();
            }
            CHECK(what == "task broke");
        }
        CHECK_EQ(after, 0);
        CHECK_EQ(other, 2);
    }
}

CPP_TEST(graph_condition_and_module_exceptions)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph sub, top;
        weft::task picked = top.emplace([] {});
        weft::task cond = top.emplace([]() -> int { throw std::logic_error("no branch"); });
        cond.precede(picked);
        CHECK(!e.s.run(top));
        CHECK(top.wait() == weft::errc::efailed);
        CHECK(picked.state() != WEFT_TASK_DONE);
        bool caught = false;
        try {
            top.rethrow_exception();
        } catch (const std::logic_error &) {
            caught = true;
        }
        CHECK(caught);

        /* Through a module: the exception of the task inside. */
        weft::graph outer;
        sub.emplace([] { throw 42; });
        outer.composed_of(sub);
        CHECK(!e.s.run(outer));
        CHECK(outer.wait() == weft::errc::efailed);
        CHECK_EQ(outer.fail_code(), weft::exception_code);
        int got = 0;
        try {
            outer.rethrow_exception();
        } catch (int v) {
            got = v;
        }
        CHECK_EQ(got, 42);

        /* A task's own fail code is not an exception. */
        weft::graph plain;
        plain.emplace([] { (void)weft::task_fail(5); });
        CHECK(!e.s.run(plain));
        CHECK(plain.wait() == weft::errc::efailed);
        CHECK_EQ(plain.fail_code(), 5);
        CHECK(!plain.exception());
    }
}

CPP_TEST(graph_pinned_task_runs_on_main)
{
    for (unsigned w : WORKERS) {
        env e(w, true);
        int me = weft::thread_id();
        weft::graph g;
        std::atomic<int> where{-2};
        weft::task a = g.emplace([] {});
        weft::task p = g.emplace([&] { where = weft::thread_id(); });
        a.precede(p);
        p.pin(me).prio(weft::priority::high);
        a.prio(weft::priority::low);
        CHECK(!g.build_error());
        CHECK(!e.s.run(g));
        CHECK(!g.wait());   /* the main thread runs p while it waits here */
        CHECK_EQ(where.load(), me);
    }
}

/* Two tasks with no edge between them, each waiting for the other's
 * signal in turn (ping-pong over events), and a producer and consumer
 * over a rendezvous channel: valid at every worker count, since a task
 * that blocks frees its thread for the other. */
CPP_TEST(graph_tasks_block_on_each_other)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        weft::event ping, pong;
        weft::channel<int> ch(0);
        CHECK(static_cast<bool>(ch));
        int rounds = 0;
        long sum = 0;
        g.emplace([&] {
            for (int i = 0; i < 50; i++) {
                ping.signal();
                CHECK(!pong.wait());
            }
        });
        g.emplace([&] {
            for (int i = 0; i < 50; i++) {
                CHECK(!ping.wait());
                rounds++;
                pong.signal();
            }
        });
        g.emplace([&] {
            for (int i = 1; i <= 100; i++)
                CHECK(!ch.send(i));
            ch.close();
        });
        g.emplace([&] {
            int v;
            while (!ch.recv(v))
                sum += v;
        });
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(rounds, 50);
        CHECK_EQ(sum, 5050);
    }
}

CPP_TEST(graph_cancel_and_wait_for)
{
    for (unsigned w : {0u, 1u, 2u}) {
        env e(w);
        weft::graph g;
        weft::event go(true);   /* manual reset: stays set for the later runs */
        int ran = 0;
        weft::task hold = g.emplace([&] { CHECK(!go.wait()); });
        weft::task later = g.emplace([&] { ran++; });
        hold.precede(later);
        CHECK(!e.s.run(g));
        if (w > 0)
            CHECK(g.wait_for(std::chrono::milliseconds(0)) == weft::errc::etimedout);
        CHECK(e.s.run(g) == weft::errc::ebusy);
        g.cancel();
        go.signal();
        CHECK(g.wait() == weft::errc::ecanceled);
        CHECK_EQ(ran, 0);
        CHECK(later.cancel());
        CHECK(!e.s.run(g));
        CHECK(g.wait() == weft::errc::ecanceled);
        CHECK(!g.reset());
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(ran, 1);
    }
}

/* Building from several threads at once, as the C calls allow. */
CPP_TEST(graph_built_from_threads)
{
    for (unsigned w : {0u, 2u}) {
        env e(w);
        weft::graph g;
        std::atomic<int> runs{0};
        weft::task root = g.placeholder();
        std::vector<cpptest::thread> th;
        for (int k = 0; k < 4; k++)
            th.emplace_back([&] {
                for (int i = 0; i < 100; i++)
                    g.emplace([&runs] { runs++; }).succeed(root);
            });
        for (auto &t : th)
            t.join();
        CHECK(!g.build_error());
        CHECK_EQ(g.size(), 401);
        CHECK_EQ(root.num_successors(), 400);
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(runs.load(), 400);
    }
}

/* A graph that goes out of scope during a run waits for it first. */
CPP_TEST(graph_destructor_waits_for_the_run)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::event go;
        std::atomic<int> ran{0};
        {
            weft::graph g;
            g.emplace([&] {
                CHECK(!go.wait());
                ran = 1;
            });
            CHECK(!e.s.run(g));
            CHECK(!e.s.spawn([&] {
                CHECK(!weft::sleep_for(std::chrono::milliseconds(1)));
                go.signal();
            }));
        }
        CHECK_EQ(ran.load(), 1);
        CHECK(!e.s.wait_idle());
    }
}

CPP_TEST_MAIN

/* weft.hpp's dynamic graph tasks, from the header as a user reads it:
 * subflows (tasks, edges, joins, nesting, exceptions and build errors
 * inside, callables destroyed once each), multi-condition tasks from
 * weft::branches, run_queued and run_while; subtasks blocking on each
 * other (an event another subtask sets) in a valid order; at 0, 1, 2
 * and 8 workers. */
#include "cpptest.hpp"

#include <atomic>
#include <stdexcept>
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

CPP_TEST(subflow_builds_and_joins_before_successors)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> made{0}, gone{0};
        {
            weft::graph g;
            std::atomic<int> clock{0};
            int at[4] = {};
            lives l(&made, &gone);
            weft::task sub = g.emplace([&, l](weft::subflow &sf) {
                auto [a, b] = sf.emplace([&, l] { at[0] = ++clock; }, [&] { at[1] = ++clock; });
                a.precede(b);
                weft::task c = sf.emplace([&] { at[2] = ++clock; });
                c.succeed(b);
            });
            weft::task after = g.emplace([&] { at[3] = ++clock; });
            sub.precede(after);
            for (int run = 0; run < 3; run++) {
                clock = 0;
                CHECK(!e.s.run(g));
                CHECK(!g.wait());
                CHECK_EQ(at[0], 1);
                CHECK_EQ(at[1], 2);
                CHECK_EQ(at[2], 3);
                CHECK_EQ(at[3], 4);
            }
        }
        CHECK(made.load() > 0);
        CHECK_EQ(made.load(), gone.load());
    }
}

CPP_TEST(subflow_subtasks_block_on_each_other)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<int> seen{0};
        weft::event ev(true);
        g.emplace([&](weft::subflow &sf) {
            /* The waiter is added first: with one thread it may run first
             * and must block until its sibling sets the event. */
            sf.emplace([&] {
                CHECK(!ev.wait());
                seen.fetch_add(10);
            });
            sf.emplace([&] {
                seen.fetch_add(1);
                ev.signal();
            });
        });
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(seen.load(), 11);
    }
}

CPP_TEST(subflow_join_and_nesting)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<long> sum{0};
        std::atomic<int> after_join{-1};
        g.emplace([&](weft::subflow &sf) {
            for (int i = 0; i < 10; i++)
                sf.emplace([&, i] { sum.fetch_add(i); });
            CHECK(!sf.join());
            after_join = static_cast<int>(sum.load());   /* 45: the join ran them */
            sf.emplace([&](weft::subflow &inner) {
                for (int i = 0; i < 5; i++)
                    inner.emplace([&](weft::subflow &deep) { deep.emplace([&] { sum.fetch_add(100); }); });
            });
        });
        for (int run = 0; run < 2; run++) {
            sum = 0;
            CHECK(!e.s.run(g));
            CHECK(!g.wait());
            CHECK_EQ(after_join.load(), 45);
            CHECK_EQ(sum.load(), 545);
        }
    }
}

CPP_TEST(subflow_exceptions_and_build_errors)
{
    for (unsigned w : WORKERS) {
        env e(w);
        {
            weft::graph g;
            std::atomic<bool> after{false};
            weft::task s = g.emplace([&](weft::subflow &sf) {
                sf.emplace([](weft::subflow &inner) { inner.emplace([] { throw std::runtime_error("deep"); }); });
            });
            s.precede(g.emplace([&] { after = true; }));
            CHECK(!e.s.run(g));
            CHECK(g.wait() == weft::errc::efailed);
            CHECK_EQ(g.fail_code(), weft::exception_code);
            CHECK(g.failed_task() == s);
            CHECK(!after.load());
            bool caught = false;
            try {
                g.rethrow_exception();
            } catch (const std::runtime_error &x) {
                caught = std::string(x.what()) == "deep";
            }
            CHECK(caught);
        }
        {
            weft::graph g;
            std::atomic<int> ran{0};
            g.emplace([&](weft::subflow &sf) {
                weft::task a = sf.emplace([&] { ran++; });
                a.precede(a);   /* a self-edge of a plain task: EINVAL */
                CHECK(sf.build_error() == weft::errc::einval);
                CHECK(sf.join() == weft::errc::einval);
            });
            CHECK(!e.s.run(g));
            CHECK(g.wait() == weft::errc::efailed);
            CHECK_EQ(g.fail_code(), WEFT_EINVAL);
            CHECK_EQ(ran.load(), 0);
            /* The next visit starts clean: the error was that visit's. */
            CHECK(!e.s.run(g));
            CHECK(g.wait() == weft::errc::efailed);
        }
    }
}

CPP_TEST(multi_condition_picks_several)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<int> mask{0};
        weft::task m = g.emplace([] { return weft::branches{0, 2, 7}; });   /* 7: out of range, ignored */
        weft::task a = g.emplace([&] { mask |= 1; });
        weft::task b = g.emplace([&] { mask |= 2; });
        weft::task c = g.emplace([&] { mask |= 4; });
        m.precede(a, b, c);
        CHECK(!g.build_error());
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(mask.load(), 5);

        /* The loop idiom: a condition's edge to itself. */
        weft::graph loop;
        int n = 0;
        weft::task cond = loop.emplace([&]() -> int { return ++n < 5 ? 0 : 1; });
        weft::task done = loop.placeholder();
        loop.placeholder().precede(cond);   /* the entry: weak edges make no root */
        cond.precede(cond, done);           /* edge 0 runs cond again, edge 1 ends */
        CHECK(!loop.build_error());
        CHECK(!e.s.run(loop));
        CHECK(!loop.wait());
        CHECK_EQ(n, 5);
        CHECK(done.state() == WEFT_TASK_DONE);

        /* A multi-condition in a subflow, and one that throws. */
        weft::graph h;
        std::atomic<int> hits{0};
        h.emplace([&](weft::subflow &sf) {
            weft::task mc = sf.emplace([] {
                weft::branches br;
                br.push_back(1);
                br.push_back(0);
                return br;
            });
            mc.precede(sf.emplace([&] { hits++; }), sf.emplace([&] { hits++; }));
        });
        CHECK(!e.s.run(h));
        CHECK(!h.wait());
        CHECK_EQ(hits.load(), 2);

        weft::graph t;
        t.emplace([]() -> weft::branches { throw std::logic_error("x"); }).precede(t.placeholder());
        /* (with no successor the function is not called: nothing to pick) */
        CHECK(!e.s.run(t));
        CHECK(t.wait() == weft::errc::efailed);
        CHECK(t.exception() != nullptr);
    }
}

CPP_TEST(run_queued_and_run_while)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<int> runs{0};
        weft::event gate(true);
        g.emplace([&] {
            if (runs++ == 0)
                CHECK(!gate.wait());   /* the first run waits for the gate */
        });
        CHECK(!e.s.run(g));
        if (w > 0) {
            CHECK(e.s.run(g) == weft::errc::ebusy);   /* run refuses */
            CHECK(!e.s.run_queued(g));                /* run_queued queues */
            CHECK(!e.s.run_queued(g));
            gate.signal();
            CHECK(!g.wait());
            CHECK_EQ(runs.load(), 3);
        } else {
            gate.signal();
            CHECK(!g.wait());
            CHECK(!e.s.run_queued(g));
            CHECK(!g.wait());
            CHECK_EQ(runs.load(), 2);
        }

        weft::graph h;
        int k = 0, asked = 0;
        h.emplace([&] { k++; });
        CHECK(!e.s.run_while(h, [&] { asked++; return false; }));
        CHECK(!h.wait());
        CHECK_EQ(k, 0);
        CHECK_EQ(asked, 1);
        CHECK(!e.s.run_while(h, [&] { return k < 4; }));
        CHECK(!h.wait());
        CHECK_EQ(k, 4);
        CHECK(!e.s.run_until(h, [&] { return true; }));   /* until runs once first */
        CHECK(!h.wait());
        CHECK_EQ(k, 5);
    }
}

/* A subflow's callables live in its visit's arena, whose chunks go back
 * to a shared list at the next visit: visits stop allocating once that
 * list has grown to the work (bounded rounds). */
CPP_TEST(subflow_pool_steady_state)
{
    for (unsigned w : {0u, 1u, 2u}) {
        env e(w);
        weft::graph g;
        std::atomic<long> n{0};
        g.emplace([&](weft::subflow &sf) {
            for (int i = 0; i < 200; i++)
                sf.emplace([&n, i] { n += i; });
        });
        int quiet_round = -1;
        for (int round = 0; round < 30 && quiet_round < 0; round++) {
            std::uint64_t before = weft::detail::pool_global().made.load();
            std::uint64_t chunks = weft::detail::arena_global().made.load();
            CHECK(!e.s.run(g));
            CHECK(!g.wait());
            if (round > 0 && weft::detail::pool_global().made.load() == before &&
                weft::detail::arena_global().made.load() == chunks)
                quiet_round = round;
        }
        CHECK(quiet_round > 0);
        CHECK(n.load() > 0);
    }
}

CPP_TEST_MAIN

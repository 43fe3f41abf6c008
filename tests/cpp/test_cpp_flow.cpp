/* weft.hpp's flow part, from the header as a user reads it: dependent
 * async tasks (order after their predecessors, results of small and
 * stored types, exceptions, handles and callables destroyed once, empty
 * predecessors refused), pipelines (serial order, parallel stages, lines,
 * stop, re-runs, a stage waiting on an async task, a pipeline as a graph
 * task, exceptions), task groups (join, cancel, exceptions, members
 * waiting on each other); at 0, 1, 2 and 8 workers. */
#include "cpptest.hpp"

#include <atomic>
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

CPP_TEST(async_chain_and_results)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> made{0}, gone{0};
        {
            std::atomic<int> clock{0};
            lives l(&made, &gone);
            auto a = weft::dependent_async(e.s, [&, l] { return ++clock; });
            auto b = weft::dependent_async(e.s, [&] { return std::string(100, 'x') + std::to_string(++clock); }, a);
            auto c = weft::dependent_async(e.s, [&] { ++clock; }, a, b);
            CHECK(static_cast<bool>(a) && static_cast<bool>(b) && static_cast<bool>(c));
            CHECK(!c.wait());
            CHECK(a.done() && b.done());
            CHECK_EQ(a.get(), 1);
            CHECK(b.get() == std::string(100, 'x') + "2");
            CHECK(b.result() != nullptr);
            c.get();
            CHECK_EQ(clock.load(), 3);
            auto a2 = a;   /* copies share the task and its value */
            CHECK_EQ(*a2.result(), 1);
            weft::wait_group wg(1);
            CHECK(!weft::silent_async(e.s, [&] { ++clock; wg.done(); }, a2, c));
            CHECK(!wg.wait());
            CHECK_EQ(clock.load(), 4);
        }
        CHECK(made.load() > 0);
        CHECK_EQ(made.load(), gone.load());
    }
}

CPP_TEST(async_blocks_on_async_and_throws)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::event ev(true);
        /* The waiter first, unordered with its setter: it blocks until
         * the setter (no predecessor of it) has run. */
        auto waiter = weft::dependent_async(e.s, [&] { return ev.wait() ? -1 : 7; });
        auto setter = weft::dependent_async(e.s, [&] { ev.signal(); });
        auto after = weft::dependent_async(e.s, [&] { return *waiter.result() + 1; }, waiter, setter);
        CHECK_EQ(after.get(), 8);

        auto bad = weft::dependent_async(e.s, []() -> int { throw std::runtime_error("async"); });
        auto next = weft::dependent_async(e.s, [] { return 1; }, bad);   /* still runs after it */
        CHECK_EQ(next.get(), 1);
        CHECK(bad.exception() != nullptr);
        CHECK(bad.result() == nullptr);
        bool caught = false;
        try {
            (void)bad.get();
        } catch (const std::runtime_error &x) {
            caught = std::string(x.what()) == "async";
        }
        CHECK(caught);

        weft::async_task<int> empty;
        auto refused = weft::dependent_async(e.s, [] { return 0; }, empty);
        CHECK(!refused);
        CHECK(refused.error() == weft::errc::einval);
        CHECK(weft::silent_async(e.s, [] {}, empty) == weft::errc::einval);
    }
}

CPP_TEST(pipeline_serial_parallel_lines)
{
    for (unsigned w : WORKERS) {
        env e(w);
        constexpr int lines = 4, tokens = 100;
        int buf[lines] = {};
        std::vector<int> order;
        std::atomic<long> sum{0};
        weft::pipeline pl(lines,
            weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &pf) {
                if (pf.token() == tokens) {
                    pf.stop();
                    return;
                }
                CHECK_EQ(pf.pipe(), 0);
                buf[pf.line()] = static_cast<int>(pf.token());
            }),
            weft::pipe(weft::pipe_type::parallel, [&](weft::pipeflow &pf) { buf[pf.line()] *= 2; }),
            weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &pf) {
                order.push_back(buf[pf.line()]);
                sum += buf[pf.line()];
            }));
        CHECK(!pl.error());
        CHECK_EQ(pl.num_pipes(), 3);
        for (int run = 0; run < 2; run++) {
            order.clear();
            sum = 0;
            CHECK(!pl.run(e.s));
            CHECK_EQ(pl.num_tokens(), tokens);
            CHECK_EQ(sum.load(), tokens * (tokens - 1));
            bool in_order = order.size() == tokens;
            for (int i = 0; in_order && i < tokens; i++)
                in_order = order[i] == 2 * i;
            CHECK(in_order);
        }
        std::atomic<long> made{0}, gone{0};
        {
            lives l(&made, &gone);   /* a stage's callable lives in the pipeline, once */
            weft::pipeline one(1, weft::pipe(weft::pipe_type::serial, [l](weft::pipeflow &pf) { pf.stop(); }));
            CHECK(!one.run(e.s));
            CHECK_EQ(one.num_tokens(), 0);
        }
        CHECK(made.load() >= 2);
        CHECK_EQ(made.load(), gone.load());
        weft::pipeline bad(2, weft::pipe(weft::pipe_type::parallel, [](weft::pipeflow &) {}));
        CHECK(bad.error() == weft::errc::einval);
        CHECK(bad.run(e.s) == weft::errc::einval);
    }
}

CPP_TEST(pipeline_stage_waits_on_async_and_in_graph)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::event go(true);
        /* The async waits for the event the pipeline's token 3 sets; the
         * stage of token 5 waits for the async: a valid order. */
        auto a = weft::dependent_async(e.s, [&] { return go.wait() ? -1 : 42; });
        std::atomic<int> seen{0};
        weft::pipeline pl(2,
            weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &pf) {
                if (pf.token() == 8)
                    pf.stop();
                else if (pf.token() == 3)
                    go.signal();
            }),
            weft::pipe(weft::pipe_type::parallel, [&](weft::pipeflow &pf) {
                if (pf.token() == 5) {
                    CHECK(!a.wait());
                    seen = *a.result();
                }
            }));
        CHECK(!pl.run(e.s));
        CHECK_EQ(seen.load(), 42);

        weft::graph g;
        std::atomic<int> after{0};
        weft::task t = g.composed_of(pl);
        t.precede(g.emplace([&] { after = static_cast<int>(pl.num_tokens()); }));
        CHECK(!g.build_error());
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(after.load(), 8);

        weft::pipeline thrower(2,
            weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &pf) {
                if (pf.token() == 3)
                    throw std::runtime_error("stage");
            }),
            weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &) {}));
        bool caught = false;
        try {
            (void)thrower.run(e.s);
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
    }
}

CPP_TEST(task_group_join_cancel_throw)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> made{0}, gone{0};
        {
            weft::task_group tg(e.s);
            CHECK(!tg.error());
            std::atomic<int> sum{0};
            lives l(&made, &gone);
            for (int i = 1; i <= 10; i++)
                CHECK(!tg.spawn([&, i, l] { sum += i; }));
            CHECK(!tg.join());
            CHECK_EQ(sum.load(), 55);

            /* Members waiting on each other: the first waits for the last. */
            weft::event ev(true);
            std::atomic<int> got{0};
            CHECK(!tg.spawn([&] {
                CHECK(!ev.wait());
                got += 1;
            }));
            CHECK(!tg.spawn([&] {
                got += 10;
                ev.signal();
            }));
            CHECK(!tg.join());
            CHECK_EQ(got.load(), 11);

            tg.cancel();
            CHECK(tg.cancelled());
            CHECK(tg.spawn([] {}) == weft::errc::ecanceled);
            CHECK(tg.join() == weft::errc::ecanceled);
            CHECK(!tg.cancelled());

            CHECK(!tg.spawn([] { throw std::logic_error("member"); }));
            bool caught = false;
            try {
                (void)tg.join();
            } catch (const std::logic_error &) {
                caught = true;
            }
            CHECK(caught);
            CHECK(!tg.join());
        }
        CHECK(made.load() > 0);
        CHECK_EQ(made.load(), gone.load());
    }
}

/* Small async tasks: callable and value in a pooled box, so rounds stop
 * allocating once the pool has grown to the work (bounded rounds). */
CPP_TEST(async_pool_steady_state)
{
    for (unsigned w : {0u, 1u, 2u}) {
        env e(w);
        int quiet_round = -1;
        std::atomic<long> sum{0};
        for (int round = 0; round < 30 && quiet_round < 0; round++) {
            std::uint64_t before = weft::detail::pool_global().made.load();
            auto prev = weft::dependent_async(e.s, [] { return 0L; });
            for (long i = 1; i < 500; i++)   /* a chain: each after the one before */
                prev = weft::dependent_async(e.s, [&sum, i] { sum += i; return i; }, prev);
            CHECK(!prev.wait());
            CHECK_EQ(*prev.result(), 499);
            if (round > 0 && weft::detail::pool_global().made.load() == before)
                quiet_round = round;
        }
        CHECK(quiet_round > 0);
        CHECK(sum.load() > 0);
    }
}

CPP_TEST_MAIN

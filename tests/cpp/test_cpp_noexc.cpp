/* weft.hpp built with -fno-exceptions, as many game engines build: the
 * same calls and the same error codes, no exception machinery. */
#include "cpptest.hpp"

#include <atomic>
#include <memory>
#include <vector>

static_assert(WEFT_CPP_EXCEPTIONS == 0, "this test is built with -fno-exceptions");

using cpptest::env;
using cpptest::WORKERS;

CPP_TEST(noexc_spawn_graph_loops)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> n{0};
        auto big = std::make_unique<int>(3);
        CHECK(!e.s.spawn([&n, b = std::move(big)] { n += *b; }));
        CHECK(!e.s.spawn([&n, pad = std::vector<int>(10, 1)] { n += long(pad.size()); }));
        CHECK(!e.s.wait_idle());
        CHECK_EQ(n.load(), 13);

        weft::graph g;
        int a_at = 0, b_at = 0, clock = 0;
        weft::task a = g.emplace([&] { a_at = ++clock; });
        weft::task b = g.emplace([&] { b_at = ++clock; });
        weft::task f = g.emplace([] { (void)weft::task_fail(9); });
        b.succeed(a);
        CHECK(!e.s.run(g));
        CHECK(g.wait() == weft::errc::efailed);
        CHECK_EQ(g.fail_code(), 9);
        CHECK(g.failed_task() == f);
        CHECK(!g.exception());   /* none without exceptions */
        CHECK(a_at == 1 && b_at == 2);
        a.precede(a);
        CHECK(e.s.run(g) == weft::errc::einval);

        std::vector<int> v(1000, 2);
        long sum = 0;
        CHECK(!weft::parallel_reduce(e.s, v.begin(), v.end(), sum, 0L, [](long x, long y) { return x + y; }));
        CHECK_EQ(sum, 2000);
        weft::channel<int> ch(2);
        CHECK(!ch.try_send(1));
        int got = 0;
        CHECK(!ch.try_recv(got));
        CHECK_EQ(got, 1);
    }
}

CPP_TEST(noexc_dynamic_flow_algorithms)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<int> n{0};
        g.emplace([&](weft::subflow &sf) {
            weft::task m = sf.emplace([] { return weft::branches{0, 1}; });
            m.precede(sf.emplace([&] { n += 1; }), sf.emplace([&] { n += 2; }));
        });
        CHECK(!e.s.run(g));
        CHECK(!g.wait());
        CHECK_EQ(n.load(), 3);

        auto a = weft::dependent_async(e.s, [] { return 20; });
        auto b = weft::dependent_async(e.s, [&] { return *a.result() + 1; }, a);
        CHECK(!b.wait());
        CHECK_EQ(*b.result(), 21);

        long total = 0;
        weft::pipeline pl(2, weft::pipe(weft::pipe_type::serial, [](weft::pipeflow &pf) {
                              if (pf.token() == 10)
                                  pf.stop();
                          }),
                          weft::pipe(weft::pipe_type::serial, [&](weft::pipeflow &pf) { total += long(pf.token()); }));
        CHECK(!pl.run(e.s));
        CHECK_EQ(total, 45);

        weft::task_group tg(e.s);
        CHECK(!tg.spawn([&] { n += 10; }));
        CHECK(!tg.join());
        CHECK_EQ(n.load(), 13);

        std::vector<int> v(3000), o(3000);
        for (std::size_t i = 0; i < v.size(); i++)
            v[i] = int(v.size() - i);
        CHECK(!weft::parallel_transform(e.s, v.begin(), v.end(), o.begin(), [](int x) { return x * 2; }));
        CHECK(!weft::parallel_exclusive_scan(e.s, v.begin(), v.end(), o.begin(), 0, [](int x, int y) { return x + y; }));
        CHECK_EQ(o[1], 3000);
        CHECK(!weft::parallel_stable_sort(e.s, v.begin(), v.end()));
        CHECK_EQ(v[0], 1);
        auto it = v.end();
        CHECK(!weft::parallel_find_if(e.s, v.begin(), v.end(), [](int x) { return x == 7; }, it));
        CHECK_EQ(it - v.begin(), 6);
    }
}

CPP_TEST_MAIN

/* weft.hpp's subflow nodes, from the header as a user reads it
 * (docs/reference/cpp.md, "Multi-conditions and subflows"): every kind of
 * callable a subflow keeps (a bare one, one with a destructor, one too big
 * for a chunk, one that throws) in the same sub-graph, nested three deep,
 * each run once and destroyed once by the next visit; the callables of
 * several visits added on one thread in turn (their joins wait on each
 * other) and by a plain thread beside the subflow's own, each found
 * intact when its task runs. Subtasks block on each other in a valid
 * order; 0, 1, 2 and 8 workers. */
#include "cpptest.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

using cpptest::env;
using cpptest::WORKERS;

namespace {

/* Counts its copies made and destroyed. */
struct lives {
    std::atomic<long> *made, *gone;
    lives(std::atomic<long> *m, std::atomic<long> *g) : made(m), gone(g) { ++*made; }
    lives(const lives &o) : made(o.made), gone(o.gone) { ++*made; }
    ~lives() { ++*gone; }
};

/* A callable's own bytes, checked when its task runs: a node another
 * node overwrote, or one placed where the arena gave the bytes twice,
 * fails the check. */
struct stamp {
    std::uint64_t w[3];
    explicit stamp(std::uint64_t v) : w{v, ~v, v * 0x9e3779b97f4a7c15u} {}
    bool ok(std::uint64_t v) const { return w[0] == v && w[1] == ~v && w[2] == v * 0x9e3779b97f4a7c15u; }
};

struct level_counts {
    std::atomic<long> bare{0}, lived{0}, big{0}, blocked{0};
};

/* One level of the nest: a bare callable, one with a destructor, one too
 * big for a chunk (with a destructor too), a waiter and the task that
 * sets its event (added in that order, so that one thread runs the
 * waiter first), and below the third level a callable that throws on odd
 * runs; then the next level. */
void level(weft::subflow &sf, int depth, int run, level_counts *c, std::atomic<long> *made,
           std::atomic<long> *gone)
{
    level_counts &k = c[depth];
    auto ev = std::make_shared<weft::event>(true);   /* kept by the two tasks: a shared_ptr, a destructor */
    sf.emplace([&k] { k.bare++; });
    sf.emplace([&k, l = lives(made, gone)] { k.lived++; });
    struct big_t {
        unsigned char pad[2000];
    };
    sf.emplace([&k, l = lives(made, gone), b = big_t{}] { k.big += 1 + b.pad[1999]; });
    sf.emplace([&k, ev] {
        CHECK(!ev->wait());
        k.blocked++;
    });
    sf.emplace([ev] { ev->signal(); });
    if (depth == 2) {
        if (run % 2)
            sf.emplace([] { throw std::runtime_error("three deep"); });
        return;
    }
    sf.emplace([=](weft::subflow &inner) { level(inner, depth + 1, run, c, made, gone); });
}

} // namespace

CPP_TEST(subflow_node_kinds_three_deep)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> made{0}, gone{0};
        {
            weft::graph g;
            level_counts c[3];
            int run = 0;
            std::atomic<long> open_at_visit{-1};
            g.emplace([&](weft::subflow &sf) {
                open_at_visit = made.load() - gone.load();   /* the last visit's callables: dropped */
                level(sf, 0, run, c, &made, &gone);
            });
            for (run = 0; run < 4; run++) {
                for (level_counts &k : c)
                    k.bare = k.lived = k.big = k.blocked = 0;
                CHECK(!e.s.run(g));
                std::error_code rc = g.wait();
                CHECK_EQ(open_at_visit.load(), 0);
                for (level_counts &k : c) {
                    CHECK_EQ(k.bare.load(), 1);
                    CHECK_EQ(k.lived.load(), 1);
                    CHECK_EQ(k.big.load(), 1);
                    CHECK_EQ(k.blocked.load(), 1);
                }
                if (run % 2) {
                    CHECK(rc == weft::errc::efailed);
                    std::string what;
                    try {
                        g.rethrow_exception();
                    } catch (const std::runtime_error &x) {
                        what = x.what();
                    }
                    CHECK(what == "three deep");
                } else {
                    CHECK(!rc);
                    CHECK(g.exception() == nullptr);
                }
                CHECK(made.load() > gone.load());   /* this visit's, kept until the next */
            }
        }
        CHECK(made.load() > 0);
        CHECK_EQ(made.load(), gone.load());
    }
}

/* Six top subflow tasks, each adding nodes, then joining a sub-graph
 * whose waiter waits for the next top task's setter: on one thread the
 * joins wait in turn and the visits' adds interleave, more of them than
 * a thread keeps cursors for. Every node's bytes are checked. */
CPP_TEST(subflow_nodes_of_interleaved_visits)
{
    constexpr int tops = 6, per = 40;
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        weft::event ev[tops] = {weft::event(true), weft::event(true), weft::event(true),
                                weft::event(true), weft::event(true), weft::event(true)};
        std::atomic<long> sum[tops], bad{0};
        for (int i = 0; i < tops; i++) {
            g.emplace([&, i](weft::subflow &sf) {
                for (int part = 0; part < 3; part++) {
                    for (int j = 0; j < per; j++) {
                        std::uint64_t v = std::uint64_t(i) << 32 | std::uint64_t(part * per + j);
                        sf.emplace([&, i, v, s = stamp(v)] {
                            if (!s.ok(v))
                                bad++;
                            sum[i] += 1;
                        });
                    }
                    if (part == 0) {
                        sf.emplace([&, i] { CHECK(!ev[i].wait()); });
                        sf.emplace([&, i] { ev[(i + 1) % tops].signal(); });
                    }
                    CHECK(!sf.join());
                }
            });
        }
        for (int run = 0; run < 3; run++) {
            for (int i = 0; i < tops; i++) {
                sum[i] = 0;
                ev[i].clear();
            }
            CHECK(!e.s.run(g));
            CHECK(!g.wait());
            for (int i = 0; i < tops; i++)
                CHECK_EQ(sum[i].load(), 3 * per);
            CHECK_EQ(bad.load(), 0);
        }
    }
}

/* A subflow's callable hands its subflow to a plain thread, and both add
 * nodes (and edges between their own) while the callable runs. */
CPP_TEST(subflow_nodes_from_a_plain_thread)
{
    constexpr int per = 300;
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<long> ran{0}, bad{0};
        g.emplace([&](weft::subflow &sf) {
            auto add = [&](std::uint64_t base) {
                weft::task prev;
                for (int j = 0; j < per; j++) {
                    std::uint64_t v = base + std::uint64_t(j);
                    weft::task t = sf.emplace([&, v, s = stamp(v)] {
                        if (!s.ok(v))
                            bad++;
                        ran++;
                    });
                    if (j % 3)
                        prev.precede(t);
                    prev = t;
                }
            };
            cpptest::thread other([&] { add(std::uint64_t(1) << 40); });
            add(0);
            other.join();
            CHECK(!sf.build_error());
        });
        for (int run = 0; run < 3; run++) {
            ran = 0;
            CHECK(!e.s.run(g));
            CHECK(!g.wait());
            CHECK_EQ(ran.load(), 2 * per);
            CHECK_EQ(bad.load(), 0);
        }
    }
}

/* Two top subflow tasks side by side, each nesting two deep with many
 * bare callables; the one under B throws: the exception is B's (a bare
 * callable finds its top task's root from its own address), whichever
 * thread started the chunk it lives in. */
CPP_TEST(subflow_bare_throw_reaches_its_own_top)
{
    for (unsigned w : WORKERS) {
        env e(w);
        weft::graph g;
        std::atomic<long> ran{0};
        auto top = [&](bool throws) {
            return [&ran, throws](weft::subflow &sf) {
                for (int i = 0; i < 50; i++)
                    sf.emplace([&ran] { ran++; });
                sf.emplace([&ran, throws](weft::subflow &inner) {
                    for (int i = 0; i < 50; i++)
                        inner.emplace([&ran] { ran++; });
                    inner.emplace([&ran, throws](weft::subflow &deep) {
                        for (int i = 0; i < 50; i++)
                            deep.emplace([&ran] { ran++; });
                        if (throws)
                            deep.emplace([] { throw std::runtime_error("B"); });
                    });
                });
            };
        };
        weft::task a = g.emplace(top(false));
        weft::task b = g.emplace(top(true));
        (void)a;
        for (int run = 0; run < 3; run++) {
            ran = 0;
            CHECK(!e.s.run(g));
            CHECK(g.wait() == weft::errc::efailed);
            CHECK(g.failed_task() == b);
            std::string what;
            try {
                g.rethrow_exception();
            } catch (const std::runtime_error &x) {
                what = x.what();
            }
            CHECK(what == "B");
            CHECK_EQ(ran.load(), 300);
        }
    }
}

CPP_TEST_MAIN

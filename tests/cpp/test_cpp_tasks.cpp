/* weft.hpp's spawn and schedulers, from the header as a user reads it:
 * callables of every storage kind (in the argument word, a pooled block,
 * the heap) run exactly once and are destroyed exactly once, move-only
 * callables, a spawn that fails, spawns from plain threads, the pool in
 * steady state, pins and priorities, error codes, and a spawned task's
 * exception (std::terminate), at 0, 1, 2 and 8 workers. */
#include "cpptest.hpp"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <stdexcept>

using cpptest::env;
using cpptest::WORKERS;

/* ---- a callable that counts its lives ---- */

struct counts {
    std::atomic<long> made{0}, gone{0}, runs{0};
    long live() const { return made.load() - gone.load(); }
};

template <std::size_t N>
struct tracker {
    counts *c;
    unsigned char pad[N - sizeof(counts *)];
    explicit tracker(counts *k) : c(k), pad{} { c->made++; }
    tracker(const tracker &o) : c(o.c), pad{} { c->made++; }
    tracker(tracker &&o) noexcept : c(o.c), pad{} { c->made++; }
    ~tracker() { c->gone++; }
    void operator()() const { c->runs++; }
};

template <std::size_t N>
static void spawn_sized(weft::scheduler &s, int n, counts &c)
{
    for (int i = 0; i < n; i++) {
        tracker<N> t(&c);
        CHECK(!s.spawn([t] { t(); }));
    }
}

CPP_TEST(spawn_every_storage_kind)
{
    /* The three paths, as the header defines them. */
    counts *cp = nullptr;
    auto word = [cp] { (void)cp; };
    static_assert(weft::detail::store_of<decltype(word)> == weft::detail::store_kind::in_arg);
    static_assert(weft::detail::store_of<tracker<16>> == weft::detail::store_kind::pooled);
    static_assert(weft::detail::store_of<tracker<64>> == weft::detail::store_kind::pooled);
    static_assert(weft::detail::store_of<tracker<72>> == weft::detail::store_kind::heap);
    for (unsigned w : WORKERS) {
        env e(w);
        const int n = 500;
        counts c16, c64, c200;
        std::atomic<int> words{0};
        std::atomic<int> *wp = &words;
        spawn_sized<16>(e.s, n, c16);
        spawn_sized<64>(e.s, n, c64);
        spawn_sized<200>(e.s, n, c200);
        for (int i = 0; i < n; i++)
            CHECK(!e.s.spawn([wp] { wp->fetch_add(1); }));
        CHECK(!e.s.wait_idle());
        for (counts *c : {&c16, &c64, &c200}) {
            CHECK_EQ(c->runs.load(), n);
            CHECK_EQ(c->live(), 0);   /* every copy destroyed, each once */
        }
        CHECK_EQ(words.load(), n);
    }
}

CPP_TEST(spawn_move_only_and_mutable)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::atomic<long> sum{0};
        for (int i = 0; i < 200; i++) {
            auto p = std::make_unique<int>(i);
            CHECK(!e.s.spawn([p = std::move(p), &sum] { sum += *p; }));
        }
        int calls = 0;
        auto counter = [calls, &sum]() mutable { sum += ++calls * 1000; };
        CHECK(!e.s.spawn(counter));   /* a copy: each runs its own state */
        CHECK(!e.s.spawn(std::move(counter)));
        CHECK(!e.s.wait_idle());
        CHECK_EQ(sum.load(), 199 * 200 / 2 + 2000);
    }
}

/* fib(n) by spawning both halves and waiting for them: every parent
 * blocks on its children (a valid order), callables of 32 bytes from the
 * pool of whichever worker runs the parent. */
static long fib_spawn(weft::scheduler_ref s, int n)
{
    if (n < 2)
        return n;
    long a = 0, b = 0;
    weft::wait_group wg(2);
    CHECK(!s.spawn([s, n, &a, &wg] { a = fib_spawn(s, n - 1); wg.done(); }));
    CHECK(!s.spawn([s, n, &b, &wg] { b = fib_spawn(s, n - 2); wg.done(); }));
    CHECK(!wg.wait());
    return a + b;
}

CPP_TEST(spawn_from_tasks_that_wait_for_them)
{
    for (unsigned w : WORKERS) {
        env e(w);
        long r = -1;
        weft::wait_group done(1);
        CHECK(!e.s.spawn([&] { r = fib_spawn(weft::this_scheduler(), 15); done.done(); }));
        CHECK(!done.wait());
        CHECK_EQ(r, 610);
        CHECK(!e.s.wait_idle());
    }
}

CPP_TEST(spawn_failure_calls_nothing_and_destroys_once)
{
    for (unsigned w : WORKERS) {
        env e(w);
        counts c;
        tracker<48> t(&c);
        std::error_code ec = e.s.spawn(weft::spawn_options().pin(100000), [t] { t(); });
        CHECK(ec == weft::errc::einval);
        CHECK(ec == std::errc::invalid_argument);
        weft::scheduler_ref none;
        CHECK(none.spawn([t] { t(); }) == weft::errc::einval);
        CHECK(!e.s.wait_idle());
        CHECK_EQ(c.runs.load(), 0);
        CHECK_EQ(c.live(), 1);   /* only t itself */
    }
}

CPP_TEST(spawn_from_plain_threads)
{
    for (unsigned w : WORKERS) {
        env e(w);
        counts c;
        std::vector<cpptest::thread> th;
        for (int k = 0; k < 4; k++)
            th.emplace_back([&] {
                for (int i = 0; i < 300; i++) {
                    tracker<40> t(&c);
                    CHECK(!e.s.spawn([t] { t(); }));
                }
            });
        for (auto &t : th)
            t.join();   /* their pool caches go to the shared list */
        CHECK(!e.s.wait_idle());
        CHECK_EQ(c.runs.load(), 1200);
        CHECK_EQ(c.live(), 0);
    }
}

/* Pooled callables allocate nothing once the pool has grown to the work:
 * the rounds go on until one allocates no block (bounded). */
CPP_TEST(spawn_pool_steady_state)
{
    for (unsigned w : {0u, 1u, 2u}) {
        env e(w);
        counts c;
        int quiet_round = -1;
        for (int round = 0; round < 30 && quiet_round < 0; round++) {
            std::uint64_t before = weft::detail::pool_global().made.load();
            for (int i = 0; i < 1000; i++) {
                tracker<32> t(&c);
                CHECK(!e.s.spawn([t] { t(); }));
            }
            CHECK(!e.s.wait_idle());
            if (round > 0 && weft::detail::pool_global().made.load() == before)
                quiet_round = round;
        }
        CHECK(quiet_round > 0);
        CHECK_EQ(c.live(), 0);
    }
}

CPP_TEST(spawn_pins_and_priorities)
{
    for (unsigned w : WORKERS) {
        env e(w, true);   /* the main thread bound, beside the workers */
        int me = weft::thread_id();
        CHECK(me >= 0);
        CHECK(weft::this_scheduler().get() == e.s.get());
        std::atomic<int> where{-2}, high{0}, low{0};
        CHECK(!e.s.spawn(weft::spawn_options().pin(me).name("pinned"), [&] { where = weft::thread_id(); }));
        CHECK(!e.s.spawn(weft::spawn_options().prio(weft::priority::high), [&] { high++; }));
        CHECK(!e.s.spawn(weft::spawn_options().prio(weft::priority::low).place(weft::hint::yield), [&] { low++; }));
        CHECK(!e.s.wait_idle());
        CHECK_EQ(where.load(), me);
        CHECK_EQ(high.load(), 1);
        CHECK_EQ(low.load(), 1);
    }
}

CPP_TEST(scheduler_raii_and_moves)
{
    weft::scheduler a(2);
    CHECK(static_cast<bool>(a));
    CHECK(!a.error());
    CHECK_EQ(a.workers(), 2u);
    weft::scheduler b(std::move(a));
    CHECK(!a);
    CHECK_EQ(b.workers(), 2u);
    std::atomic<int> ran{0};
    CHECK(!b.spawn([&] { ran++; }));
    CHECK(!b.wait_idle());
    CHECK_EQ(ran.load(), 1);
    weft::config cfg;
    cfg.workers = 5000;   /* refused: at most 4096 */
    weft::scheduler bad(cfg);
    CHECK(!bad);
    CHECK(bad.error() == weft::errc::einval);
    CHECK(!b.destroy());
    CHECK(!b);
    CHECK(!b.destroy());   /* empty: nothing to do */
}

CPP_TEST(bind_guard_binds_and_unbinds)
{
    weft::scheduler s(1);
    CHECK_EQ(weft::thread_id(), -1);
    {
        weft::bind_guard g(s);
        CHECK(static_cast<bool>(g));
        CHECK(weft::thread_id() >= 1);
        weft::bind_guard again(s);
        CHECK(!again);
        CHECK(again.error() == weft::errc::ebusy);
    }
    CHECK_EQ(weft::thread_id(), -1);
    weft::bind_guard none{weft::scheduler_ref()};
    CHECK(none.error() == weft::errc::einval);
}

CPP_TEST(error_codes)
{
    std::error_code ec = weft::errc::etimedout;
    CHECK(ec.category() == weft::category());
    CHECK(ec == std::errc::timed_out);
    CHECK(ec.message() == weft_strerror(WEFT_ETIMEDOUT));
    CHECK(std::strcmp(weft::category().name(), "weft") == 0);
    CHECK(!weft::to_error(0));
    CHECK(weft::to_error(WEFT_ECYCLE) == weft::errc::ecycle);
    CHECK(weft::to_error(WEFT_ECYCLE) != std::errc::invalid_argument);
    bool thrown = false;
    try {
        weft::throw_if(weft::errc::enomem);
    } catch (const std::system_error &e) {
        thrown = e.code() == weft::errc::enomem;
    }
    CHECK(thrown);
    weft::throw_if({});   /* no error: nothing */
    CHECK_EQ(weft::detail::to_ns(std::chrono::milliseconds(-5)), 0);
    CHECK(weft::detail::to_ns(weft::forever) == UINT64_MAX);
    CHECK(weft::detail::to_ns(std::chrono::hours::max()) == UINT64_MAX);
    CHECK_EQ(weft::detail::to_ns(std::chrono::microseconds(3)), 3000);
}

static void spawn_and_throw(unsigned w)
{
    env e(w);
    (void)e.s.spawn([] { throw std::runtime_error("from a spawned task"); });
    (void)e.s.wait_idle();
    std::fprintf(stderr, "spawn_and_throw: not ended\n");   /* not reached: status 0 */
}

/* A spawned task's exception ends the process, as a std::thread's does:
 * in a child, so that this program goes on. */
CPP_CHILD(throw_in_spawned_task_w0) { spawn_and_throw(0); }
CPP_CHILD(throw_in_spawned_task_w2) { spawn_and_throw(2); }

CPP_TEST(spawn_exception_terminates)
{
    for (const char *name : {"throw_in_spawned_task_w0", "throw_in_spawned_task_w2"}) {
        cpptest::child c = cpptest::start_child(name);
        CHECK(c.pid > 0);
        CHECK_EQ(cpptest::wait_child(c), cpptest::terminated_status);
    }
}

CPP_TEST_MAIN

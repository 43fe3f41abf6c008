// Adversarial tests of weft.hpp, written from the header alone: a plain
// C++17 program printing "N passed, N failed", so that it runs the same in
// release, asan and tsan, at 0 (this thread bound), 1, 2 and 8 workers.
//
//   pipe_refused_run   a stage runs its own pipeline while it runs: the
//                      refused run() (EBUSY) must change nothing, so the
//                      exception a stage threw before it still comes out
//                      of the outer run()
//   async_refusals     dependent_async with an empty handle among its
//                      predecessors: empty, EINVAL, nothing run; get()
//                      rethrows what the callable threw; wait_for polls
//   group_cancel       a task_group cancelled with members still queued
//                      (no workers): join says ECANCELED, none ran, their
//                      callables were destroyed, spawn is refused until then
#include <weft.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <cstdio>
#include <stdexcept>
#include <string>

static int failed_checks;

#define CHECK(c)                                                                      \
    do {                                                                              \
        if (!(c)) {                                                                   \
            std::fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            failed_checks++;                                                          \
        }                                                                             \
    } while (0)

static const unsigned workers_list[] = {0, 1, 2, 8};

// A scheduler of w workers; with none, this thread bound to it.
struct env {
    explicit env(unsigned w) : s(w == 0 ? weft::no_workers : w), none(w == 0)
    {
        CHECK(!s.error());
        if (none)
            CHECK(weft_sched_bind(s.get()) == WEFT_OK);
    }
    ~env()
    {
        if (none) {
            weft_sched_wait_idle(s.get());
            weft_sched_unbind();
        }
    }
    weft::scheduler s;
    bool none;
};

static void pipe_refused_run()
{
    for (unsigned w : workers_list) {
        env e(w);
        std::atomic<bool> started1{false}, unwound{false};
        std::error_code inner;
        struct mark {
            std::atomic<bool> *f;
            ~mark() { f->store(true); }
        };
        weft::pipeline<std::function<void(weft::pipeflow &)>,
                       std::function<void(weft::pipeflow &)>> *plp = nullptr;
        weft::scheduler_ref s = e.s;
        weft::pipeline pl(2,
            weft::pipe(weft::pipe_type::serial, std::function<void(weft::pipeflow &)>(
                [&](weft::pipeflow &pf) {
                    if (pf.token() == 1) {
                        started1.store(true);
                        (void)weft::wait_until([&] { return unwound.load(); });
                        inner = plp->run(s);   // refused: it runs
                    }
                    if (pf.token() == 6)
                        pf.stop();
                })),
            weft::pipe(weft::pipe_type::parallel, std::function<void(weft::pipeflow &)>(
                [&](weft::pipeflow &pf) {
                    if (pf.token() == 0) {
                        (void)weft::wait_until([&] { return started1.load(); });
                        mark m{&unwound};
                        throw std::runtime_error("stage 1, token 0");
                    }
                })));
        plp = &pl;
        CHECK(!pl.error());
        bool threw = false;
        try {
            std::error_code ec = pl.run(e.s);
            std::fprintf(stderr, "  w %u: run returned %s\n", w, ec.message().c_str());
        } catch (const std::runtime_error &x) {
            threw = std::string(x.what()) == "stage 1, token 0";
        }
        CHECK(inner == weft::errc::ebusy);
        if (!threw)
            std::fprintf(stderr, "  w %u: the stage's exception was lost\n", w);
        CHECK(threw);
    }
}

static void async_refusals()
{
    for (unsigned w : workers_list) {
        env e(w);
        std::atomic<int> ran{0};
        weft::async_handle empty;
        auto a = weft::dependent_async(e.s, [&] { ran++; return 1; }, empty);
        CHECK(!a);
        CHECK(a.error() == weft::errc::einval);
        CHECK(a.wait() == weft::errc::einval);
        auto t = weft::dependent_async(e.s, [&]() -> int { ran++; throw std::logic_error("x"); });
        CHECK(t);
        auto after = weft::dependent_async(e.s, [&] { ran++; }, t);
        CHECK(!after.wait());
        CHECK(!after.wait_for(std::chrono::nanoseconds(0)));
        bool threw = false;
        try {
            (void)t.get();
        } catch (const std::logic_error &) {
            threw = true;
        }
        CHECK(threw);
        CHECK(t.exception() != nullptr);
        CHECK(t.result() == nullptr);
        CHECK(ran.load() == 2);
    }
}

static void group_cancel()
{
    env e(0);
    std::atomic<int> ran{0};
    {
        weft::task_group g(e.s);
        CHECK(!g.error());
        auto held = std::make_shared<int>(1);   // each member's capture holds it
        for (int i = 0; i < 20; i++)
            CHECK(!g.spawn([&ran, held] { ran += *held; }));
        g.cancel();
        CHECK(g.cancelled());
        CHECK(g.spawn([&] { ran++; }) == weft::errc::ecanceled);
        CHECK(g.join() == weft::errc::ecanceled);
        CHECK(ran.load() == 0);
        CHECK(held.use_count() == 1);   // the skipped members' callables are gone
        CHECK(!g.cancelled());
        CHECK(!g.spawn([&] { ran++; }));
    }   // the destructor joins
    CHECK(ran.load() == 1);
}

int main()
{
    struct {
        const char *name;
        void (*fn)();
    } tests[] = {{"pipe_refused_run", pipe_refused_run},
                 {"async_refusals", async_refusals},
                 {"group_cancel", group_cancel}};
    int passed = 0, failed = 0;
    for (auto &t : tests) {
        failed_checks = 0;
        t.fn();
        std::printf("%s %s\n", failed_checks ? "FAIL" : "ok  ", t.name);
        (failed_checks ? failed : passed)++;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

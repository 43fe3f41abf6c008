/* This file is private to weft's tests.
 *
 * The runner of the C++ tests (tests/cpp): plain, so that one program
 * serves release, asan and tsan alike. CPP_TEST(name) { ... } registers a
 * test; CHECK(cond) and CHECK_EQ(a, b) record a failure and go on. main
 * runs every test (or those named on the command line) in order, prints
 * one line each, then "N passed, N failed", and exits 1 if any failed.
 * A hang is caught by the ctest TIMEOUT.
 *
 * env(W) is the scheduler of one step of a test's worker loop: W
 * workers, or none with the calling thread bound (W = 0); `for (unsigned
 * w : WORKERS)` runs a body at 0, 1, 2 and 8 workers.
 */
#ifndef WEFT_CPPTEST_HPP
#define WEFT_CPPTEST_HPP

#include <weft.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace cpptest {

struct test_case {
    const char *name;
    void (*fn)();
};

inline std::vector<test_case> &cases()
{
    static std::vector<test_case> v;
    return v;
}

inline int failures;   /* in the test running now */

inline void fail(const char *file, int line, const char *what)
{
    std::fprintf(stderr, "  %s:%d: CHECK failed: %s\n", file, line, what);
    failures++;
}

inline bool registered(const char *name, void (*fn)())
{
    cases().push_back({name, fn});
    return true;
}

inline int run_all(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (const test_case &t : cases()) {
        bool wanted = argc < 2;
        for (int i = 1; i < argc; i++)
            wanted = wanted || std::strcmp(argv[i], t.name) == 0;
        if (!wanted)
            continue;
        failures = 0;
        std::fprintf(stderr, "%s ...\n", t.name);
        t.fn();
        std::fprintf(stderr, "%s: %s\n", t.name, failures ? "FAILED" : "ok");
        (failures ? failed : passed)++;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* The worker counts every test loops over. */
inline constexpr unsigned WORKERS[] = {0, 1, 2, 8};

/* A scheduler of w workers; with none, the calling thread bound to it. */
struct env {
    weft::scheduler s;
    std::optional<weft::bind_guard> bind;
    explicit env(unsigned w, bool bind_always = false) : s(w ? w : weft::no_workers)
    {
        if (w == 0 || bind_always)
            bind.emplace(s);
    }
};

} // namespace cpptest

#define CPP_TEST(name)                                                               \
    static void name();                                                              \
    static const bool name##_registered = cpptest::registered(#name, name);          \
    static void name()

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond))                                                                 \
            cpptest::fail(__FILE__, __LINE__, #cond);                                \
    } while (0)

#define CHECK_EQ(a, b)                                                               \
    do {                                                                             \
        long long cpp_a_ = (long long)(a), cpp_b_ = (long long)(b);                  \
        if (cpp_a_ != cpp_b_) {                                                      \
            char cpp_m_[256];                                                        \
            std::snprintf(cpp_m_, sizeof cpp_m_, "%s == %s: %lld != %lld", #a, #b,   \
                          cpp_a_, cpp_b_);                                           \
            cpptest::fail(__FILE__, __LINE__, cpp_m_);                               \
        }                                                                            \
    } while (0)

#define CPP_TEST_MAIN                                                                \
    int main(int argc, char **argv) { return cpptest::run_all(argc, argv); }

#endif /* WEFT_CPPTEST_HPP */

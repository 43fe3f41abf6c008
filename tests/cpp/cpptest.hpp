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
 *
 * What a test needs from the system, the same on Linux and Windows
 * (cpptest_os.cpp; mingw-w64's g++ has no std::thread): cpptest::thread,
 * a plain thread (std::thread; winpthreads on Windows, cpptest_os.cpp
 * says why not CreateThread); child processes running a CPP_CHILD(name)
 * body (fork on Linux; on Windows this program again, `--cpp-child
 * name`); and a connected pair of descriptors weft::fd_wait can wait on
 * (a pipe on Linux, a loopback TCP pair on Windows, whose weft_fd is a
 * SOCKET).
 */
#ifndef WEFT_CPPTEST_HPP
#define WEFT_CPPTEST_HPP

#include <weft.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
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

/* CPP_CHILD bodies: what a child process started by start_child runs. */
inline std::vector<test_case> &children()
{
    static std::vector<test_case> v;
    return v;
}

inline bool child_registered(const char *name, void (*fn)())
{
    children().push_back({name, fn});
    return true;
}

/* Runs the CPP_CHILD body named, then ends the process with status 0
 * (static destructors not run: the child shares nothing with them). */
[[noreturn]] void run_child(const char *name);

inline int run_all(int argc, char **argv)
{
    if (argc == 3 && std::strcmp(argv[1], "--cpp-child") == 0)
        run_child(argv[2]);
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

/* ---- the system, the same on Linux and Windows (cpptest_os.cpp) ---------------- */

/* A plain thread running a copy of f; joined by join() or the destructor. */
class thread {
public:
    template <class F>
    explicit thread(F f) : h_(start(&call<F>, new F(std::move(f))))
    {
    }
    thread(thread &&o) noexcept : h_(o.h_) { o.h_ = nullptr; }
    thread(const thread &) = delete;
    thread &operator=(const thread &) = delete;
    thread &operator=(thread &&) = delete;
    ~thread() { join(); }
    void join()
    {
        if (h_)
            finish(h_);
        h_ = nullptr;
    }

private:
    template <class F>
    static void call(void *p)
    {
        F *f = static_cast<F *>(p);
        (*f)();
        delete f;
    }
    static void *start(void (*fn)(void *), void *arg);   /* aborts if no thread can start */
    static void finish(void *h);
    void *h_;
};

/* A child process. pid is what weft::pid_wait takes; on Windows handle
 * is the process HANDLE, kept open until wait_child or close_child so
 * that the ID is not reused while weft waits on it. */
struct child {
    int pid = -1;
    void *handle = nullptr;
};

/* Starts a child running the CPP_CHILD body `name`; pid -1 if none started. */
child start_child(const char *name);
/* Waits for c to end and reaps it. Returns its exit status (0-255 on
 * Linux, the exit code on Windows), or 128 + the signal that ended it
 * (Linux), or -1 if the wait failed. */
int wait_child(child &c);
/* After weft::pid_wait reaped c (Linux) or saw it end (Windows): closes
 * what remains of it. */
void close_child(child &c);

/* The exit status of a process that std::terminate ended: 128 + SIGABRT
 * on Linux; on Windows abort()'s exit code, 3. */
extern const int terminated_status;

/* weft::fd_wait's readable bit (POLLIN), which Windows defines in
 * <winsock2.h> rather than <poll.h>. */
extern const short poll_in;
/* A connected pair: what is written to fds[1] is read from fds[0]. */
bool fd_pair(weft_fd fds[2]);
bool fd_write1(weft_fd fd, char c);
bool fd_read1(weft_fd fd, char *c);
void fd_close(weft_fd fd);

} // namespace cpptest

#define CPP_TEST(name)                                                               \
    static void name();                                                              \
    static const bool name##_registered = cpptest::registered(#name, name);          \
    static void name()

/* A body a child process runs (start_child), whose exit status the test
 * checks; it ends with status 0 if it returns. */
#define CPP_CHILD(name)                                                              \
    static void name();                                                              \
    static const bool name##_child = cpptest::child_registered(#name, name);         \
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

/*
 * weft/cpp/sched.hpp: schedulers (owning and not), binding a thread,
 * spawning callables, and what a task or thread calls about itself:
 * yield, sleep, pins, waits for a predicate, a descriptor or a child,
 * blocking calls. Part of weft.hpp, the header C++ users include.
 * See docs/reference/cpp.md.
 */
#ifndef WEFT_CPP_SCHED_HPP
#define WEFT_CPP_SCHED_HPP

#include "base.hpp"

namespace weft {

class graph;

namespace detail {

/* A spawned task's entry: runs the stored callable once, then frees it.
 * An exception that leaves it ends the process (std::terminate), as one
 * leaving a std::thread's function does: nothing waits on a spawned task
 * to be told, and it must not unwind into weft's C frames. */
template <class F>
void spawn_entry(void *arg) noexcept
{
#if WEFT_CPP_EXCEPTIONS
    try {
        invoke_stored<F>(arg);
    } catch (...) {
        std::fputs("weft: a task spawned from C++ threw an exception: terminating\n", stderr);
        std::terminate();
    }
#else
    invoke_stored<F>(arg);
#endif
    release<F>(arg);
}

/* A callable weft calls back while the caller waits (a blocking call, a
 * predicate, a loop's chunks): it lives on the caller's stack, and an
 * exception it throws is kept and thrown again on the caller once the C
 * call has returned, never through weft's frames.
 * Synchronization: thrown is exchanged by each thread whose call threw;
 * the one that finds it false writes ex. The caller reads ex only after
 * the C call returned, which comes after every callback ended (the C
 * call's own join orders them). stopped() reads thrown relaxed: a chunk
 * that misses it runs, which only costs time. */
template <class F>
struct sync_call {
    F *f;
    std::exception_ptr ex;              /* the first exception (none without them) */
    std::atomic<bool> thrown{false};
    explicit sync_call(F &fn) noexcept : f(&fn) {}

    /* Keeps the first exception of any thread; true for the first. */
    bool keep_current() noexcept
    {
#if WEFT_CPP_EXCEPTIONS
        if (!thrown.exchange(true, std::memory_order_acq_rel)) {   /* the first wins; the C call's return orders ex for the caller */
            ex = std::current_exception();
            return true;
        }
#endif
        return false;
    }
    bool stopped() const noexcept
    {
        return thrown.load(std::memory_order_relaxed);   /* a hint: skipping is an optimisation */
    }
    void rethrow() const
    {
#if WEFT_CPP_EXCEPTIONS
        if (ex)
            std::rethrow_exception(ex);
#endif
    }
    static void run(void *arg) noexcept
    {
        auto *c = static_cast<sync_call *>(arg);
#if WEFT_CPP_EXCEPTIONS
        try {
            (*c->f)();
        } catch (...) {
            c->keep_current();
        }
#else
        (*c->f)();
#endif
    }
    static bool pred(void *arg) noexcept
    {
        auto *c = static_cast<sync_call *>(arg);
#if WEFT_CPP_EXCEPTIONS
        try {
            return static_cast<bool>((*c->f)());
        } catch (...) {
            c->keep_current();
            return true;   /* the wait ends; the caller throws */
        }
#else
        return static_cast<bool>((*c->f)());
#endif
    }
};

} // namespace detail

/* ---- schedulers ------------------------------------------------------------ */

/** A scheduler that something else owns (weft::this_scheduler(), or a
 * weft_sched * from C): every operation, no ownership. Copyable. */
class scheduler_ref {
public:
    scheduler_ref() noexcept = default;
    explicit scheduler_ref(weft_sched *s) noexcept : s_(s) {}

    weft_sched *get() const noexcept { return s_; }
    explicit operator bool() const noexcept { return s_ != nullptr; }

    /** Worker threads (weft_sched_workers). */
    unsigned workers() const noexcept { return weft_sched_workers(s_); }

    /** Queues f() as a task (weft_spawn_ex); f is any callable taking no
     * argument, copied or moved in (see inline_capture_size and
     * pooled_capture_size for where it is kept). On failure f is not
     * called, and the copy made of it is destroyed. An exception leaving
     * f() calls std::terminate. Errors: weft_spawn's.
     * Callable from: any thread. */
    template <class F>
    [[nodiscard]] std::error_code spawn(F &&f) const
    {
        return spawn_impl(std::forward<F>(f), nullptr);
    }
    /** spawn with a priority, placement, pin or name (spawn_options). */
    template <class F>
    [[nodiscard]] std::error_code spawn(const spawn_options &o, F &&f) const
    {
        return spawn_impl(std::forward<F>(f), o.c_opts());
    }

    /** weft_sched_wait_idle. Callable from: any thread but a task of it. */
    [[nodiscard]] std::error_code wait_idle() const noexcept { return to_error(weft_sched_wait_idle(s_)); }

    /** Runs f() on a thread of the blocking pool and returns once it has
     * (weft_call_blocking). f stays on the caller's side: nothing is
     * copied or allocated. An exception f throws is thrown again here.
     * Callable from: any thread (a task suspends its fiber). */
    template <class F>
    [[nodiscard]] std::error_code call_blocking(F &&f) const
    {
        detail::sync_call<std::remove_reference_t<F>> c(f);
        int rc = weft_call_blocking(s_, &decltype(c)::run, &c);
        c.rethrow();
        return to_error(rc);
    }

    /** A worker's counters (weft_sched_stats). */
    [[nodiscard]] std::error_code stats(unsigned worker, weft_worker_stats &out) const noexcept
    {
        return to_error(weft_sched_stats(s_, worker, &out));
    }

    /* Graph runs: defined in weft/cpp/graph.hpp. */
    [[nodiscard]] std::error_code run(graph &g) const noexcept;
    [[nodiscard]] std::error_code run_n(graph &g, std::uint64_t n) const noexcept;
    [[nodiscard]] std::error_code run_queued(graph &g) const noexcept;
    template <class P>
    [[nodiscard]] std::error_code run_until(graph &g, P &&pred) const;
    template <class P>
    [[nodiscard]] std::error_code run_while(graph &g, P &&pred) const;

protected:
    weft_sched *s_ = nullptr;

private:
    template <class F>
    std::error_code spawn_impl(F &&f, const weft_spawn_opts *o) const
    {
        using D = std::decay_t<F>;
        static_assert(std::is_invocable_v<D &>, "weft: spawn takes a callable with no arguments");
        bool ok;
        void *arg = detail::store<D>(std::forward<F>(f), ok);
        if (!ok)
            return make_error_code(errc::enomem);
        int rc = weft_spawn_ex(s_, &detail::spawn_entry<D>, arg, o);
        if (rc != WEFT_OK)
            detail::release<D>(arg);
        return to_error(rc);
    }
};

/** A scheduler this object owns: made at construction, destroyed
 * (weft_sched_destroy) by the destructor or destroy(). Move-only. A
 * construction that fails leaves an empty object: operator bool is
 * false and error() says why. */
class scheduler : public scheduler_ref {
public:
    /** The defaults: one worker per CPU. */
    scheduler() noexcept : scheduler(config()) {}
    /** workers worker threads (weft::auto_workers, weft::no_workers). */
    explicit scheduler(unsigned workers) noexcept : scheduler(with_workers(workers)) {}
    explicit scheduler(const weft_config &cfg) noexcept { err_ = weft_sched_create(&s_, &cfg); }
    scheduler(const scheduler &) = delete;
    scheduler &operator=(const scheduler &) = delete;
    scheduler(scheduler &&o) noexcept : scheduler_ref(o.release()), err_(o.err_) {}
    scheduler &operator=(scheduler &&o) noexcept
    {
        if (this != &o) {
            (void)destroy();
            s_ = o.release();
            err_ = o.err_;
        }
        return *this;
    }
    /** Destroys it (weft_sched_destroy). If that is refused (WEFT_EBUSY:
     * called from one of its tasks, or threads other than the caller are
     * still bound; weft prints why) the scheduler is left alive: call
     * destroy() to see the code. */
    ~scheduler() { (void)destroy(); }

    /** The construction's result. */
    std::error_code error() const noexcept { return to_error(err_); }
    /** weft_sched_destroy now; empty after success. Callable from: any
     * thread not running one of its tasks. */
    [[nodiscard]] std::error_code destroy() noexcept
    {
        if (!s_)
            return {};
        int rc = weft_sched_destroy(s_);
        if (rc == WEFT_OK)
            s_ = nullptr;
        return to_error(rc);
    }
    /** Gives up ownership: the caller destroys what it returns. */
    weft_sched *release() noexcept { weft_sched *s = s_; s_ = nullptr; return s; }

private:
    static config with_workers(unsigned n) noexcept { config c; c.workers = n; return c; }
    int err_ = WEFT_OK;
};

/** weft_sched_bind_ex's flag: wait without helping with other work. */
inline constexpr unsigned bind_no_help = WEFT_BIND_NO_HELP;

/** Binds the calling thread to a scheduler for the guard's life
 * (weft_sched_bind_ex), unbinding in its destructor
 * (weft_sched_unbind). Declare it after the scheduler, so that it
 * unbinds before the scheduler is destroyed. If binding failed,
 * operator bool is false and error() says why. Not copyable or
 * movable: a binding belongs to one thread. */
class bind_guard {
public:
    explicit bind_guard(scheduler_ref s, unsigned flags = 0) noexcept
        : err_(weft_sched_bind_ex(s.get(), flags)) {}
    bind_guard(const bind_guard &) = delete;
    bind_guard &operator=(const bind_guard &) = delete;
    ~bind_guard()
    {
        if (err_ == WEFT_OK)
            weft_sched_unbind();
    }
    explicit operator bool() const noexcept { return err_ == WEFT_OK; }
    std::error_code error() const noexcept { return to_error(err_); }

private:
    int err_;
};

/* ---- the calling task or thread ------------------------------------------------ */

/** The scheduler the calling thread works for or is bound to; empty on
 * any other thread. */
inline scheduler_ref this_scheduler() noexcept { return scheduler_ref(weft_sched_current()); }
/** weft_thread_id: the id pins name; -1 outside a scheduler. */
inline int thread_id() noexcept { return weft_thread_id(); }
/** weft_thread_worker_index: 0..workers-1 on a worker, else -1. */
inline int worker_index() noexcept { return weft_thread_worker_index(); }
/** weft_yield. */
inline void yield() noexcept { weft_yield(); }

/** weft_sleep: a task's fiber sleeps, its thread goes on. */
template <class Rep, class Period>
inline std::error_code sleep_for(std::chrono::duration<Rep, Period> d) noexcept
{
    return to_error(weft_sleep(detail::to_ns(d)));
}

/** weft_pinned_run: runs the tasks pinned to the calling bound thread
 * for up to budget; returns how many ran, or WEFT_ENOTBOUND (negative). */
template <class Rep, class Period>
inline int pinned_run(std::chrono::duration<Rep, Period> budget) noexcept
{
    return weft_pinned_run(detail::to_ns(budget));
}

/** weft_pinned_wait_for: waits until a task is pinned to the calling
 * bound thread (weft::forever: no timeout). */
template <class Rep, class Period>
[[nodiscard]] inline std::error_code pinned_wait_for(std::chrono::duration<Rep, Period> d) noexcept
{
    return to_error(weft_pinned_wait_for(detail::to_ns(d)));
}

/** weft_wait_until with any callable returning bool (kept on the
 * caller's stack). An exception it throws ends the wait and is thrown
 * again here. Callable from: a task, or a bound thread. */
template <class P>
[[nodiscard]] inline std::error_code wait_until(P &&pred)
{
    detail::sync_call<std::remove_reference_t<P>> c(pred);
    int rc = weft_wait_until(&decltype(c)::pred, &c);
    c.rethrow();
    return to_error(rc);
}

/** weft_task_fail: the calling graph task ends FAILED with err. */
[[nodiscard]] inline std::error_code task_fail(int err) noexcept { return to_error(weft_task_fail(err)); }

/* ---- descriptors and child processes ------------------------------------------- */

/** weft_fd_wait_for: waits until fd is ready for events (poll(2)'s
 * bits; WSAPoll's on Windows); *revents (if not null) gets the ready
 * ones. fd is a weft_fd: an int on Linux, a SOCKET whole on Windows. */
template <class Rep, class Period>
[[nodiscard]] inline std::error_code fd_wait_for(weft_fd fd, short events, std::chrono::duration<Rep, Period> d,
                                                 short *revents = nullptr) noexcept
{
    int rc = weft_fd_wait_for(fd, events, detail::to_ns(d));
    if (rc > 0) {
        if (revents)
            *revents = static_cast<short>(rc);
        return {};
    }
    return to_error(rc);
}

/** fd_wait_for with no timeout. */
[[nodiscard]] inline std::error_code fd_wait(weft_fd fd, short events, short *revents = nullptr) noexcept
{
    return fd_wait_for(fd, events, forever, revents);
}

/** weft_pid_wait_for: waits for child pid to end and reaps it; *status
 * (if not null) gets waitpid's status. */
template <class Rep, class Period>
[[nodiscard]] inline std::error_code pid_wait_for(int pid, int *status, std::chrono::duration<Rep, Period> d) noexcept
{
    return to_error(weft_pid_wait_for(pid, status, detail::to_ns(d)));
}

/** pid_wait_for with no timeout. */
[[nodiscard]] inline std::error_code pid_wait(int pid, int *status = nullptr) noexcept
{
    return pid_wait_for(pid, status, forever);
}

} // namespace weft

#endif /* WEFT_CPP_SCHED_HPP */

/*
 * weft/cpp/graph.hpp: task graphs with tasks from callables: emplace
 * (a callable returning void is a task, one returning int a condition),
 * placeholders, modules (composed_of), precede/succeed with any number of
 * tasks, attributes, runs on a scheduler, waiting, cancelling, failures
 * and the exceptions tasks threw. Part of weft.hpp.
 * See docs/reference/cpp.md and docs/reference/graph.md.
 *
 * Building a graph allocates (a small holder per task for its callable);
 * running it does not. A build call that fails (out of memory, a run in
 * flight, a bad edge) changes nothing in the graph and is kept as the
 * graph's build error: run() refuses to run a graph whose building
 * failed (it returns that error) until clear_build_error(), so a missing
 * task or edge can never run unnoticed.
 *
 * Synchronization (graph_state, shared by the builders, the runs' tasks
 * and the waiters):
 *  - holders (the list of callables): pushed under mu by any building
 *    thread, read under mu by exception(), freed by the destructor once
 *    no run is in flight.
 *  - build_err: the first failed build call wins a CAS from 0; relaxed,
 *    as it only ever goes from 0 to a code and guards no other data.
 *  - a holder's ex: written by its task's run only (a task runs once at
 *    a time), read by exception() after graph::wait(), which orders the
 *    run before it.
 *  - until: assigned under mu only while no run is in flight (checked
 *    with weft_graph_done under mu), read by the thread ending each run
 *    of the series that weft_graph_run_until then starts.
 */
#ifndef WEFT_CPP_GRAPH_HPP
#define WEFT_CPP_GRAPH_HPP

#include "base.hpp"
#include "sched.hpp"
#include "sync.hpp"

#include <functional>
#include <memory>
#include <tuple>

namespace weft {

namespace detail {

struct graph_state;

/* What the graph keeps per task: its callable, and for the failure
 * report the exception it last threw, or the graph it runs (a module). */
struct holder_base {
    virtual ~holder_base() = default;
    holder_base *next = nullptr;      /* graph_state::holders */
    weft_task *task = nullptr;
    graph_state *sub = nullptr;       /* a module's graph */
    std::exception_ptr ex;            /* written by the task's own run only */
};

template <class F>
struct holder final : holder_base {
    template <class G>
    explicit holder(G &&g) : f(std::forward<G>(g)) {}
    F f;
};

struct graph_state {
    weft_graph *g = nullptr;
    std::mutex mu;                    /* holders, until */
    holder_base *holders = nullptr;
    std::atomic<int> build_err{0};    /* the first failed build call's code */
    std::function<bool()> until;      /* run_until's predicate */

    /* A run in flight is waited for first: its tasks use the holders.
     * From one of its own tasks that cannot be (the wait is EBUSY), so
     * the graph and its holders are left, with a message. */
    ~graph_state()
    {
        if (g && weft_graph_destroy(g) == WEFT_EBUSY) {
            (void)weft_graph_wait(g);
            if (weft_graph_destroy(g) != WEFT_OK) {
                std::fputs("weft: a weft::graph destroyed during its own run is left alive\n", stderr);
                return;
            }
        }
        while (holders) {
            holder_base *h = holders;
            holders = h->next;
            delete h;
        }
    }
    void note(int rc) noexcept
    {
        int zero = 0;
        if (rc != WEFT_OK)
            build_err.compare_exchange_strong(zero, rc, std::memory_order_relaxed);
    }
    void keep(holder_base *h) noexcept
    {
        std::lock_guard<std::mutex> lk(mu);
        h->next = holders;
        holders = h;
    }
    /* Why an add that returns no task failed (the C call does not say). */
    int add_failure() const noexcept { return weft_graph_done(g) ? WEFT_ENOMEM : WEFT_EBUSY; }
};

/* A graph task's entry. An exception is caught here, at the boundary:
 * the task fails with exception_code and the exception is kept. */
template <class F>
void task_entry(void *arg) noexcept
{
    auto *h = static_cast<holder<F> *>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        h->f();
    } catch (...) {
        h->ex = std::current_exception();
        (void)weft_task_fail(exception_code);
    }
#else
    h->f();
#endif
}

/* A condition task's entry; one that throws fails and picks nothing. */
template <class F>
int cond_entry(void *arg) noexcept
{
    auto *h = static_cast<holder<F> *>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        return h->f();
    } catch (...) {
        h->ex = std::current_exception();
        (void)weft_task_fail(exception_code);
        return -1;
    }
#else
    return h->f();
#endif
}

template <class>
inline constexpr bool always_false = false;

} // namespace detail

class graph;

/** A task of a graph: a handle, copied freely, valid while its graph
 * lives. Empty (operator bool false) when the call that made it failed;
 * building with an empty task fails (EINVAL) and is kept as the graph's
 * build error. */
class task {
public:
    task() noexcept = default;
    weft_task *get() const noexcept { return t_; }
    explicit operator bool() const noexcept { return t_ != nullptr; }
    bool operator==(const task &o) const noexcept { return t_ == o.t_; }
    bool operator!=(const task &o) const noexcept { return t_ != o.t_; }

    /** This task runs before each of succ (weft_task_precede). A failure
     * is kept as the graph's build error. Callable from: any thread. */
    template <class... T>
    task &precede(const T &...succ) noexcept
    {
        (edge(*this, succ), ...);
        return *this;
    }
    /** This task runs after each of pred. */
    template <class... T>
    task &succeed(const T &...pred) noexcept
    {
        (edge(pred, *this), ...);
        return *this;
    }
    /** weft_task_set_name (copied). */
    task &name(const char *n) noexcept { weft_task_set_name(t_, n); return *this; }
    const char *name() const noexcept { return weft_task_name(t_); }
    /** weft_task_set_priority, for every later run. */
    task &prio(weft::priority p) noexcept
    {
        weft_task_set_priority(t_, static_cast<weft_priority>(p));
        return *this;
    }
    /** weft_task_set_pin: runs only on the thread with this id (-1: any). */
    task &pin(int thread) noexcept { note(weft_task_set_pin(t_, thread)); return *this; }
    /** weft_task_set_semaphore (nullptr clears): sem outlives the runs. */
    task &semaphore(weft::semaphore *sem) noexcept
    {
        note(weft_task_set_semaphore(t_, sem ? sem->native_handle() : nullptr));
        return *this;
    }
    /** weft_task_cancel, weft_task_reset, weft_task_state. */
    bool cancel() noexcept { return weft_task_cancel(t_); }
    void reset() noexcept { weft_task_reset(t_); }
    weft_task_status state() const noexcept { return weft_task_state(t_); }
    std::size_t num_successors() const noexcept { return weft_task_successors(t_, nullptr, 0); }
    std::size_t num_predecessors() const noexcept { return weft_task_predecessors(t_, nullptr, 0); }

private:
    friend class graph;
    task(weft_task *t, detail::graph_state *g) noexcept : t_(t), g_(g) {}
    void note(int rc) const noexcept
    {
        if (g_)
            g_->note(rc);
    }
    static void edge(const task &a, const task &b) noexcept
    {
        int rc = weft_task_precede(a.t_, b.t_);
        if (rc != WEFT_OK)
            (a.g_ ? a : b).note(rc);
    }

    weft_task *t_ = nullptr;
    detail::graph_state *g_ = nullptr;
};

/** A task graph (weft_graph) that owns its tasks' callables. Move-only;
 * tasks keep working after a move. A construction that fails leaves an
 * empty graph (operator bool false, build_error() ENOMEM). */
class graph {
public:
    graph() noexcept : st_(new (std::nothrow) detail::graph_state)
    {
        if (st_ && weft_graph_create(&st_->g) != WEFT_OK)
            st_.reset();
    }
    graph(graph &&) noexcept = default;
    graph &operator=(graph &&) noexcept = default;
    /** weft_graph_destroy, then the callables; a run in flight is waited
     * for first (weft_graph_wait). Not from one of its own tasks (the
     * graph is then left alive, with a message). */
    ~graph() = default;

    explicit operator bool() const noexcept { return st_ != nullptr; }
    weft_graph *get() const noexcept { return st_ ? st_->g : nullptr; }

    /* ---- build ---- */

    /** Adds a task running f() (f returns void), or a condition task (f
     * returns int: the index of the successor to run, in edge order).
     * Returns the task; empty on failure (kept as the build error).
     * Callable from: any thread, several at once. */
    template <class F>
    task emplace(F &&f)
    {
        using D = std::decay_t<F>;
        if constexpr (std::is_invocable_v<D &>) {
            using R = std::invoke_result_t<D &>;
            if constexpr (std::is_void_v<R>)
                return add<D, false>(std::forward<F>(f));
            else if constexpr (std::is_same_v<R, int>)
                return add<D, true>(std::forward<F>(f));
            else
                static_assert(detail::always_false<D>, "weft: a graph task returns void (a task) or int (a condition)");
        } else {
            /* One branch per kind of task added later (a subflow's
             * callable takes a weft::subflow &, ...). */
            static_assert(detail::always_false<D>, "weft: a graph task's callable takes no arguments");
        }
    }
    /** Several tasks at once: auto [a, b, c] = g.emplace(fa, fb, fc). */
    template <class F, class G, class... H>
    auto emplace(F &&f, G &&g, H &&...h)
    {
        /* Braces: added left to right. */
        return std::tuple{emplace(std::forward<F>(f)), emplace(std::forward<G>(g)),
                          emplace(std::forward<H>(h))...};
    }
    /** A condition task, said explicitly: f returns the index (int). */
    template <class F>
    task condition(F &&f)
    {
        static_assert(std::is_same_v<std::invoke_result_t<std::decay_t<F> &>, int>,
                      "weft: a condition returns int");
        return emplace(std::forward<F>(f));
    }
    /** An empty task, a join point (weft_graph_add with no function). */
    task placeholder() noexcept
    {
        if (!st_)
            return {};
        weft_task *t = nullptr;
        st_->note(weft_graph_add_task(st_->g, nullptr, nullptr, &t));
        return task(t, st_.get());
    }
    /** A module task: it runs all of sub (weft_graph_add_module); sub
     * must outlive every run of this graph. */
    task composed_of(graph &sub) noexcept
    {
        if (!st_)
            return {};
        auto *h = new (std::nothrow) detail::holder_base;
        weft_task *t = h ? weft_graph_add_module(st_->g, sub.get()) : nullptr;
        if (!t) {
            delete h;
            st_->note(!h ? WEFT_ENOMEM : !sub.get() || &sub == this ? WEFT_EINVAL : st_->add_failure());
            return {};
        }
        h->task = t;
        h->sub = sub.st_.get();
        st_->keep(h);
        return task(t, st_.get());
    }

    /** The first failed build call's code (0: none), and clearing it. */
    std::error_code build_error() const noexcept
    {
        return st_ ? to_error(st_->build_err.load(std::memory_order_relaxed)) : make_error_code(errc::enomem);
    }
    void clear_build_error() noexcept
    {
        if (st_)
            st_->build_err.store(0, std::memory_order_relaxed);
    }
    /** weft_graph_set_fail_fast. */
    [[nodiscard]] std::error_code fail_fast(bool on) noexcept { return to_error(weft_graph_set_fail_fast(get(), on)); }

    /* ---- wait, cancel, inspect ---- */

    /** weft_graph_wait: the run's result. EFAILED: a task failed; a task
     * whose callable threw failed with fail_code() == weft::exception_code
     * and exception() gives what it threw. */
    [[nodiscard]] std::error_code wait() noexcept { return to_error(weft_graph_wait(get())); }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code wait_for(std::chrono::duration<Rep, Period> d) noexcept
    {
        return to_error(weft_graph_wait_for(get(), detail::to_ns(d)));
    }
    bool done() const noexcept { return weft_graph_done(get()); }
    bool cancel() noexcept { return weft_graph_cancel(get()); }
    /** weft_graph_reset: clears every task's cancel mark. */
    [[nodiscard]] std::error_code reset() noexcept { return to_error(weft_graph_reset(get())); }
    int fail_code() const noexcept { return weft_graph_fail_code(get()); }
    task failed_task() const noexcept { return task(weft_graph_failed_task(get()), st_.get()); }
    std::size_t size() const noexcept { return weft_graph_size(get()); }
    /** weft_graph_dump_dot. */
    [[nodiscard]] std::error_code dump_dot(std::FILE *out) const noexcept { return to_error(weft_graph_dump_dot(get(), out)); }

    /** What the task that failed the latest run threw, through modules
     * to the task inside; null if that run did not end by an exception
     * (always, without exceptions). Callable from: any thread, once the
     * run has ended. */
    std::exception_ptr exception() const { return find_exception(st_.get(), 0); }
#if WEFT_CPP_EXCEPTIONS
    /** Throws exception() if there is one. */
    void rethrow_exception() const
    {
        if (std::exception_ptr e = exception())
            std::rethrow_exception(e);
    }
#endif

private:
    friend class scheduler_ref;

    template <class D, bool Cond, class F>
    task add(F &&f)
    {
        if (!st_)
            return {};
        auto *h = new (std::nothrow) detail::holder<D>(std::forward<F>(f));
        if (!h) {
            st_->note(WEFT_ENOMEM);
            return {};
        }
        weft_task *t = nullptr;
        int rc;
        if constexpr (Cond) {
            t = weft_graph_add_cond(st_->g, &detail::cond_entry<D>, h);
            rc = t ? WEFT_OK : st_->add_failure();
        } else {
            rc = weft_graph_add_task(st_->g, &detail::task_entry<D>, h, &t);
        }
        if (rc != WEFT_OK) {
            delete h;
            st_->note(rc);
            return {};
        }
        h->task = t;
        st_->keep(h);
        return task(t, st_.get());
    }

    static std::exception_ptr find_exception(detail::graph_state *st, int depth)
    {
        if (!st || depth > 64 || weft_graph_fail_code(st->g) != exception_code)
            return nullptr;
        weft_task *t = weft_graph_failed_task(st->g);
        detail::graph_state *sub = nullptr;
        {
            std::lock_guard<std::mutex> lk(st->mu);
            for (detail::holder_base *h = st->holders; h; h = h->next) {
                if (h->task == t) {
                    if (!h->sub)
                        return h->ex;
                    sub = h->sub;
                    break;
                }
            }
        }
        return find_exception(sub, depth + 1);
    }

    static bool until_entry(void *arg) noexcept   /* an exception here terminates */
    {
        return static_cast<detail::graph_state *>(arg)->until();
    }

    std::unique_ptr<detail::graph_state> st_;
};

/* ---- runs (scheduler_ref's members) ----------------------------------------------- */

/** weft_graph_run: starts a run of g and returns at once; wait with
 * g.wait(). Refused with g's build error if building it failed. */
inline std::error_code scheduler_ref::run(graph &g) const noexcept
{
    std::error_code ec = g.build_error();
    return ec ? ec : to_error(weft_graph_run(s_, g.get()));
}

/** weft_graph_run_n: n runs in a row as one series. */
inline std::error_code scheduler_ref::run_n(graph &g, std::uint64_t n) const noexcept
{
    std::error_code ec = g.build_error();
    return ec ? ec : to_error(weft_graph_run_n(s_, g.get(), n));
}

/** weft_graph_run_until: runs g, then again until pred() is true (asked
 * after each run, on the thread that ended it; it must not throw: that
 * calls std::terminate). pred is kept in g until the next run_until;
 * EBUSY (pred not taken) while g runs. */
template <class P>
inline std::error_code scheduler_ref::run_until(graph &g, P &&pred) const
{
    std::error_code ec = g.build_error();
    if (ec)
        return ec;
    detail::graph_state *st = g.st_.get();
    std::lock_guard<std::mutex> lk(st->mu);
    if (!weft_graph_done(st->g))
        return make_error_code(errc::ebusy);
    st->until = std::forward<P>(pred);
    return to_error(weft_graph_run_until(s_, st->g, &graph::until_entry, st));
}

} // namespace weft

#endif /* WEFT_CPP_GRAPH_HPP */

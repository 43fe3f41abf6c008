/*
 * weft/cpp/task.hpp: what graphs and subflows share: the holders of a
 * graph's callables and their entries (the exception boundary), the kind
 * of task a callable makes (void: a task, int: a condition,
 * weft::branches: a multi-condition, taking a weft::subflow &: a
 * subflow), weft::branches, and weft::task, the handle edges and
 * attributes are set through. Part of weft.hpp (included by graph.hpp).
 * See docs/reference/cpp.md and docs/reference/graph.md.
 *
 * Synchronization (graph_state, shared by the builders, the runs' tasks
 * and the waiters):
 *  - holders (the list of callables): pushed under mu by any building
 *    thread, read under mu by exception(), freed by the destructor once
 *    no run is in flight.
 *  - build_err (error_sink, a graph's or a subflow visit's): the first
 *    failed build call wins a CAS from 0; relaxed, as it only ever goes
 *    from 0 to a code and guards no other data.
 *  - a holder's ex: written by its task's run only (a task runs once at
 *    a time), read by exception() after graph::wait(), which orders the
 *    run before it.
 *  - until: assigned under mu only while no run is in flight (checked
 *    with weft_graph_done under mu), read by the thread ending each run
 *    of the series that weft_graph_run_until (or _while) then starts.
 */
#ifndef WEFT_CPP_TASK_HPP
#define WEFT_CPP_TASK_HPP

#include "base.hpp"
#include "sched.hpp"
#include "sync.hpp"

#include <functional>
#include <initializer_list>
#include <memory>
#include <tuple>

namespace weft {

namespace detail {

struct graph_state;

/* Where a build call that fails leaves its code: a graph's, or one
 * visit's of a subflow. The first failure wins a CAS from 0; relaxed, as
 * it only goes from 0 to a code and guards no other data. */
struct error_sink {
    std::atomic<int> build_err{0};
    void note(int rc) noexcept
    {
        int zero = 0;
        if (rc != WEFT_OK)
            build_err.compare_exchange_strong(zero, rc, std::memory_order_relaxed);
    }
};

/* What the graph keeps per task: its callable, and for the failure
 * report the exception it last threw, or the graph it runs (a module). */
struct holder_base {
    virtual ~holder_base() = default;
    holder_base *next = nullptr;      /* graph_state::holders */
    weft_task *task = nullptr;
    graph_state *sub = nullptr;       /* a module's graph */
    std::exception_ptr ex;            /* written by the task's own run only */
    /* What the task threw (a subflow task: it or a task under it). */
    virtual std::exception_ptr thrown() const { return ex; }
};

template <class F>
struct holder final : holder_base {
    template <class G>
    explicit holder(G &&g) : f(std::forward<G>(g)) {}
    F f;
};

struct graph_state : error_sink {
    weft_graph *g = nullptr;
    plain_lock mu;                    /* holders, until */
    holder_base *holders = nullptr;
    std::function<bool()> until;      /* run_until's (run_while's) predicate */

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
    void keep(holder_base *h) noexcept
    {
        std::lock_guard<plain_lock> lk(mu);
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

/** What a multi-condition task's callable returns: the indexes of the
 * successors to run next, in edge order, at most WEFT_MULTI_COND_MAX
 * (more are dropped), as weft::branches{0, 2} or by push_back. A fixed
 * array on the stack: nothing is allocated. */
class branches {
public:
    branches() noexcept = default;
    branches(std::initializer_list<int> l) noexcept
    {
        for (int i : l)
            push_back(i);
    }
    void push_back(int i) noexcept
    {
        if (n_ < WEFT_MULTI_COND_MAX)
            v_[n_++] = i;
    }
    std::size_t size() const noexcept { return n_; }
    bool empty() const noexcept { return n_ == 0; }
    const int *begin() const noexcept { return v_; }
    const int *end() const noexcept { return v_ + n_; }

private:
    int v_[WEFT_MULTI_COND_MAX];
    std::size_t n_ = 0;
};

namespace detail {

/* A multi-condition task's entry: the callable's branches, copied to
 * picks (cap of them at most); one that throws fails and picks none. */
template <class F>
std::size_t multi_entry_of(F &f, int *picks, std::size_t cap, std::exception_ptr &ex) noexcept
{
#if WEFT_CPP_EXCEPTIONS
    try {
#endif
        branches b = f();
        std::size_t n = b.size() < cap ? b.size() : cap;
        for (std::size_t i = 0; i < n; i++)
            picks[i] = b.begin()[i];
        return n;
#if WEFT_CPP_EXCEPTIONS
    } catch (...) {
        ex = std::current_exception();
        (void)weft_task_fail(exception_code);
        return 0;
    }
#else
    (void)ex;
#endif
}

template <class F>
std::size_t multi_entry(void *arg, int *picks, std::size_t cap) noexcept
{
    auto *h = static_cast<holder<F> *>(arg);
    return multi_entry_of(h->f, picks, cap, h->ex);
}

/* The kind of task a callable makes, from what it takes and returns. */
enum class task_kind { plain, cond, multi, sub };

} // namespace detail

class subflow;

namespace detail {
template <class D>
constexpr task_kind kind_of()
{
    if constexpr (std::is_invocable_v<D &>) {
        using R = std::invoke_result_t<D &>;
        if constexpr (std::is_void_v<R>)
            return task_kind::plain;
        else if constexpr (std::is_same_v<R, int>)
            return task_kind::cond;
        else if constexpr (std::is_same_v<R, branches>)
            return task_kind::multi;
        else
            static_assert(always_false<D>, "weft: a graph task returns void (a task), int (a condition) or weft::branches (a multi-condition)");
    } else if constexpr (std::is_invocable_v<D &, subflow &>) {
        return task_kind::sub;
    } else {
        static_assert(always_false<D>, "weft: a graph task's callable takes nothing or a weft::subflow &");
    }
    return task_kind::plain;
}
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
    friend class subflow;
    task(weft_task *t, detail::error_sink *g) noexcept : t_(t), g_(g) {}
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
    detail::error_sink *g_ = nullptr;
};

} // namespace weft

#endif /* WEFT_CPP_TASK_HPP */

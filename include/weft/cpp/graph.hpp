/*
 * weft/cpp/graph.hpp: task graphs with tasks from callables: emplace
 * (a callable returning void is a task, one returning int a condition,
 * one returning weft::branches a multi-condition, one taking a
 * weft::subflow & a subflow task), placeholders, modules (composed_of), precede/succeed with any number of
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
 *    of the series that weft_graph_run_until (or _while) then starts.
 *
 * Subflows (subflow_state, one per subflow task, nested ones included):
 *  - nodes (the callables of the tasks a visit added): pushed with a CAS
 *    by any thread adding to the subflow while its function runs; freed
 *    at the task's next visit (the previous sub-graph has ended: the
 *    task is visited again only after it ended) or with the graph.
 *  - build_err: as the graph's, per visit; read by the subflow task's
 *    own entry once its function has returned.
 *  - root->thrown/root->ex: the first exception of the subflow task's
 *    function or of any task under it, nested ones included, wins the
 *    thrown exchange and writes ex; reset by the top subflow task's entry
 *    before its function runs (no task under it runs then); read by
 *    graph::exception() after the run, which orders the write before it.
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
    std::mutex mu;                    /* holders, until */
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

namespace detail {

/* What the top subflow task keeps for the exceptions under it. */
struct sub_root {
    std::atomic<bool> thrown{false};
    std::exception_ptr ex;
    void keep_current() noexcept
    {
#if WEFT_CPP_EXCEPTIONS
        if (!thrown.exchange(true, std::memory_order_acq_rel))   /* the first wins */
            ex = std::current_exception();
#endif
    }
};

/* A task of a subflow: its callable, freed with the visit's others. */
struct sub_node {
    sub_node *next = nullptr;
    void (*drop)(sub_node *) noexcept = nullptr;
};

struct subflow_state : error_sink {
    std::atomic<sub_node *> nodes{nullptr};
    sub_root *root = nullptr;

    subflow_state() noexcept = default;
    subflow_state(const subflow_state &) = delete;
    subflow_state &operator=(const subflow_state &) = delete;
    ~subflow_state() { clear(); }

    void push(sub_node *n) noexcept
    {
        n->next = nodes.load(std::memory_order_relaxed);
        while (!nodes.compare_exchange_weak(n->next, n, std::memory_order_release, std::memory_order_relaxed)) {
        }
    }
    /* The previous visit's sub-graph has ended: its callables go. */
    void clear() noexcept
    {
        sub_node *n = nodes.exchange(nullptr, std::memory_order_acquire);
        while (n) {
            sub_node *next = n->next;
            n->drop(n);
            n = next;
        }
        build_err.store(0, std::memory_order_relaxed);
    }
};

/* A subflow's node memory: the block pool when it fits, else new. */
template <class N>
inline constexpr bool node_pooled = sizeof(N) <= pooled_capture_size && alignof(N) <= 16;

template <class N, class G>
N *node_new(G &&f)
{
    if constexpr (node_pooled<N>) {
        void *p = pool_alloc();
        if (!p)
            return nullptr;
#if WEFT_CPP_EXCEPTIONS
        try {
            return ::new (p) N(std::forward<G>(f));
        } catch (...) {
            pool_free(p);
            throw;
        }
#else
        return ::new (p) N(std::forward<G>(f));
#endif
    } else {
        return new (std::nothrow) N(std::forward<G>(f));
    }
}

template <class N>
void node_drop(sub_node *n) noexcept
{
    if constexpr (node_pooled<N>) {
        static_cast<N *>(n)->~N();
        pool_free(n);
    } else {
        delete static_cast<N *>(n);
    }
}

template <class F>
struct fn_node final : sub_node {
    template <class G>
    explicit fn_node(G &&g) : f(std::forward<G>(g)) {}
    F f;
    sub_root *root = nullptr;
};

/* A subflow's function runs on a weft::subflow over sf and st; what it
 * throws fails the task (its sub-graph then does not run), and so does a
 * build call of it that failed. */
template <class F>
void run_subflow(F &f, weft_subflow *sf, subflow_state &st) noexcept;

template <class F>
struct nested_node final : sub_node {
    template <class G>
    explicit nested_node(G &&g) : f(std::forward<G>(g)) {}
    F f;
    subflow_state st;
};

template <class F>
void sub_task_entry(void *arg) noexcept
{
    auto *n = static_cast<fn_node<F> *>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        n->f();
    } catch (...) {
        n->root->keep_current();
        (void)weft_task_fail(exception_code);
    }
#else
    n->f();
#endif
}

template <class F>
int sub_cond_entry(void *arg) noexcept
{
    auto *n = static_cast<fn_node<F> *>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
        return n->f();
    } catch (...) {
        n->root->keep_current();
        (void)weft_task_fail(exception_code);
        return -1;
    }
#else
    return n->f();
#endif
}

template <class F>
std::size_t sub_multi_entry(void *arg, int *picks, std::size_t cap) noexcept
{
    auto *n = static_cast<fn_node<F> *>(arg);
    std::exception_ptr ex;
    std::size_t k = multi_entry_of(n->f, picks, cap, ex);
#if WEFT_CPP_EXCEPTIONS
    if (ex) {
        try {
            std::rethrow_exception(ex);
        } catch (...) {
            n->root->keep_current();
        }
    }
#endif
    return k;
}

template <class F>
void sub_nested_entry(weft_subflow *sf, void *arg) noexcept
{
    auto *n = static_cast<nested_node<F> *>(arg);
    n->st.clear();
    run_subflow(n->f, sf, n->st);
}

} // namespace detail

/** The sub-graph a subflow task builds while its callable runs (the
 * callable takes a weft::subflow &): tasks added with emplace (the same
 * kinds as graph::emplace, nested subflows included) and edges between
 * them with task::precede/succeed. It runs once the callable returns,
 * and the task ends when it has; join() runs what was added so far and
 * waits for it. The callables are kept until the task's next visit (or
 * the graph's end). A build call that fails gives an empty task and
 * fails the subflow task (its sub-graph does not run) with that code.
 * Callable from: the subflow task's callable, and while it runs, any
 * thread it hands the subflow to. */
class subflow {
public:
    subflow(const subflow &) = delete;
    subflow &operator=(const subflow &) = delete;

    weft_subflow *get() const noexcept { return sf_; }

    template <class F>
    task emplace(F &&f)
    {
        using D = std::decay_t<F>;
        constexpr detail::task_kind k = detail::kind_of<D>();
        if constexpr (k == detail::task_kind::sub) {
            auto *n = detail::node_new<detail::nested_node<D>>(std::forward<F>(f));
            if (!n)
                return fail(WEFT_ENOMEM);
            n->st.root = st_->root;
            return keep(n, weft_subflow_add_subflow(sf_, &detail::sub_nested_entry<D>, n));
        } else {
            auto *n = detail::node_new<detail::fn_node<D>>(std::forward<F>(f));
            if (!n)
                return fail(WEFT_ENOMEM);
            n->root = st_->root;
            weft_task *t;
            if constexpr (k == detail::task_kind::plain)
                t = weft_subflow_add(sf_, &detail::sub_task_entry<D>, n);
            else if constexpr (k == detail::task_kind::cond)
                t = weft_subflow_add_cond(sf_, &detail::sub_cond_entry<D>, n);
            else
                t = weft_subflow_add_multi_cond(sf_, &detail::sub_multi_entry<D>, n);
            return keep(n, t);
        }
    }
    /** Several at once: auto [a, b] = sf.emplace(fa, fb). */
    template <class F, class G, class... H>
    auto emplace(F &&f, G &&g, H &&...h)
    {
        return std::tuple{emplace(std::forward<F>(f)), emplace(std::forward<G>(g)),
                          emplace(std::forward<H>(h))...};
    }
    /** An empty task, a join point. */
    task placeholder() noexcept
    {
        weft_task *t = weft_subflow_add(sf_, nullptr, nullptr);
        if (!t)
            st_->note(WEFT_EBUSY);
        return task(t, st_);
    }
    /** weft_subflow_join: runs what was added since the last join and
     * waits for it (the fiber waits, its worker goes on); its result as
     * graph::wait, and a failure fails the subflow task too. Refused
     * with the build error if a build call failed. Callable from: the
     * subflow task's callable only (else EINVAL). */
    [[nodiscard]] std::error_code join() noexcept
    {
        int rc = st_->build_err.load(std::memory_order_relaxed);
        return to_error(rc ? rc : weft_subflow_join(sf_));
    }
    /** The first failed build call's code in this visit (0: none). */
    std::error_code build_error() const noexcept { return to_error(st_->build_err.load(std::memory_order_relaxed)); }

private:
    template <class F>
    friend void detail::run_subflow(F &, weft_subflow *, detail::subflow_state &) noexcept;
    subflow(weft_subflow *sf, detail::subflow_state *st) noexcept : sf_(sf), st_(st) {}

    task fail(int rc) noexcept
    {
        st_->note(rc);
        return {};
    }
    /* A NULL task: sf's sub-graph runs already (or memory ran out; the
     * C call does not say which: EBUSY is kept). */
    template <class N>
    task keep(N *n, weft_task *t) noexcept
    {
        if (!t) {
            detail::node_drop<N>(n);
            return fail(WEFT_EBUSY);
        }
        n->drop = &detail::node_drop<N>;
        st_->push(n);
        return task(t, st_);
    }

    weft_subflow *sf_;
    detail::subflow_state *st_;
};

namespace detail {

template <class F>
void run_subflow(F &f, weft_subflow *sf, subflow_state &st) noexcept
{
    subflow s(sf, &st);
#if WEFT_CPP_EXCEPTIONS
    try {
        f(s);
    } catch (...) {
        st.root->keep_current();
        (void)weft_task_fail(exception_code);
        return;
    }
#else
    f(s);
#endif
    if (int rc = st.build_err.load(std::memory_order_relaxed))
        (void)weft_task_fail(rc);
}

/* A graph's subflow task: the callable, its visit's state, and the
 * exceptions under it (the root that nested subflows share). */
template <class F>
struct sf_holder final : holder_base {
    template <class G>
    explicit sf_holder(G &&g) : f(std::forward<G>(g)) { st.root = &root; }
    F f;
    sub_root root;
    subflow_state st;
    std::exception_ptr thrown() const override { return root.ex; }
};

template <class F>
void graph_subflow_entry(weft_subflow *sf, void *arg) noexcept
{
    auto *h = static_cast<sf_holder<F> *>(arg);
    h->st.clear();
    h->root.thrown.store(false, std::memory_order_relaxed);
    h->root.ex = nullptr;
    run_subflow(h->f, sf, h->st);
}

} // namespace detail

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

    /** Adds a task running f() (f returns void), a condition task (f
     * returns int: the index of the successor to run, in edge order), a
     * multi-condition task (f returns weft::branches: the indexes of all
     * the successors to run), or a subflow task (f takes a weft::subflow
     * &: it builds a sub-graph, joined before the task's successors).
     * Returns the task; empty on failure (kept as the build error).
     * Callable from: any thread, several at once. */
    template <class F>
    task emplace(F &&f)
    {
        using D = std::decay_t<F>;
        return add<D, detail::kind_of<D>()>(std::forward<F>(f));
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

    template <class D, detail::task_kind K, class F>
    task add(F &&f)
    {
        if (!st_)
            return {};
        using H = std::conditional_t<K == detail::task_kind::sub, detail::sf_holder<D>, detail::holder<D>>;
        auto *h = new (std::nothrow) H(std::forward<F>(f));
        if (!h) {
            st_->note(WEFT_ENOMEM);
            return {};
        }
        weft_task *t = nullptr;
        int rc;
        if constexpr (K == detail::task_kind::plain) {
            rc = weft_graph_add_task(st_->g, &detail::task_entry<D>, h, &t);
        } else {
            if constexpr (K == detail::task_kind::cond)
                t = weft_graph_add_cond(st_->g, &detail::cond_entry<D>, h);
            else if constexpr (K == detail::task_kind::multi)
                t = weft_graph_add_multi_cond(st_->g, &detail::multi_entry<D>, h);
            else
                t = weft_graph_add_subflow(st_->g, &detail::graph_subflow_entry<D>, h);
            rc = t ? WEFT_OK : st_->add_failure();
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
                        return h->thrown();
                    sub = h->sub;
                    break;
                }
            }
        }
        return find_exception(sub, depth + 1);
    }

    template <class P>
    std::error_code run_pred(weft_sched *s, P &&pred, int (*run)(weft_sched *, weft_graph *, bool (*)(void *), void *))
    {
        std::error_code ec = build_error();
        if (ec)
            return ec;
        detail::graph_state *st = st_.get();
        std::lock_guard<std::mutex> lk(st->mu);
        if (!weft_graph_done(st->g))
            return make_error_code(errc::ebusy);
        st->until = std::forward<P>(pred);
        return to_error(run(s, st->g, &graph::until_entry, st));
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

/** weft_graph_run_queued: as run, but a run asked for while g runs is
 * queued behind it (g.wait() waits for every queued run). */
inline std::error_code scheduler_ref::run_queued(graph &g) const noexcept
{
    std::error_code ec = g.build_error();
    return ec ? ec : to_error(weft_graph_run_queued(s_, g.get()));
}

/** weft_graph_run_until: runs g, then again until pred() is true (asked
 * after each run, on the thread that ended it; it must not throw: that
 * calls std::terminate). pred is kept in g until the next run_until or
 * run_while; EBUSY (pred not taken) while g runs. */
template <class P>
inline std::error_code scheduler_ref::run_until(graph &g, P &&pred) const
{
    return g.run_pred(s_, std::forward<P>(pred), &weft_graph_run_until);
}

/** weft_graph_run_while: runs g as long as pred() is true, asked before
 * every run, the first included (on the calling thread; later on the
 * thread that ended the run): false at once runs g 0 times (OK). pred
 * as in run_until. */
template <class P>
inline std::error_code scheduler_ref::run_while(graph &g, P &&pred) const
{
    return g.run_pred(s_, std::forward<P>(pred), &weft_graph_run_while);
}

} // namespace weft

#endif /* WEFT_CPP_GRAPH_HPP */

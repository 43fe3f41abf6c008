/*
 * weft/cpp/subflow.hpp: subflow tasks: weft::subflow, the sub-graph a
 * graph task builds while its callable runs (tasks of every kind, nested
 * subflows, edges, joins), and where the callables of its tasks live.
 * Part of weft.hpp (included by graph.hpp).
 * See docs/reference/cpp.md and docs/reference/graph.md ("Subflows").
 *
 * A subflow task's sub-graph runs after its callable returns, with no
 * fiber waiting, so the callables of its tasks cannot live on that
 * callable's stack: each goes in a node (a pooled block when it fits:
 * nothing is allocated in steady state), kept until the task's next
 * visit.
 *
 * Synchronization (subflow_state, one per subflow task, nested ones
 * included):
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
#ifndef WEFT_CPP_SUBFLOW_HPP
#define WEFT_CPP_SUBFLOW_HPP

#include "task.hpp"

namespace weft {

namespace detail {

/* What the top subflow task keeps for the exceptions under it. */
struct sub_root {
    std::atomic<bool> thrown{false};
    std::exception_ptr ex;
    void keep_current() noexcept
    {
#if WEFT_CPP_EXCEPTIONS
        if (!thrown.exchange(true, std::memory_order_acq_rel))   /* the first wins; the run's end orders ex for exception() */
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
        n->next = nodes.load(std::memory_order_relaxed);   /* a guess; the CAS checks it */
        /* release: publish the node; pairs with acquire in clear() */
        while (!nodes.compare_exchange_weak(n->next, n, std::memory_order_release, std::memory_order_relaxed)) {
        }
    }
    /* The previous visit's sub-graph has ended: its callables go. */
    void clear() noexcept
    {
        sub_node *n = nodes.exchange(nullptr, std::memory_order_acquire);   /* pairs with release in push() */
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
    h->root.thrown.store(false, std::memory_order_relaxed);   /* no task under it runs now */
    h->root.ex = nullptr;
    run_subflow(h->f, sf, h->st);
}

} // namespace detail
} // namespace weft

#endif /* WEFT_CPP_SUBFLOW_HPP */

/*
 * weft/cpp/graph.hpp: task graphs with tasks from callables: emplace
 * (a callable returning void is a task, one returning int a condition,
 * one returning weft::branches a multi-condition, one taking a
 * weft::subflow & a subflow task), placeholders, modules (composed_of),
 * precede/succeed with any number of tasks, attributes, runs on a
 * scheduler (run, run_n, run_until, run_while, run_queued), waiting,
 * cancelling, failures and the exceptions tasks threw. Part of weft.hpp.
 * See docs/reference/cpp.md and docs/reference/graph.md.
 *
 * Building a graph allocates (a small holder per task for its callable);
 * running it does not. A build call that fails (out of memory, a run in
 * flight, a bad edge) changes nothing in the graph and is kept as the
 * graph's build error: run() refuses to run a graph whose building
 * failed (it returns that error) until clear_build_error(), so a missing
 * task or edge can never run unnoticed.
 *
 * Synchronization: the graph's state and who touches it are described
 * in task.hpp (graph_state), a subflow's in subflow.hpp.
 */
#ifndef WEFT_CPP_GRAPH_HPP
#define WEFT_CPP_GRAPH_HPP

#include "task.hpp"
#include "subflow.hpp"

namespace weft {


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

    /** A pipeline task: it runs pl (a weft::pipeline) on the scheduler
     * running this graph (weft_graph_add_pipeline), and fails with its
     * code (EBUSY: pl was running). pl must outlive every run of this
     * graph; an exception of a stage stops pl and is kept in it
     * (pl.exception()), the task does not fail by it. */
    template <class PL, class = decltype(std::declval<PL &>().num_tokens())>
    task composed_of(PL &pl) noexcept
    {
        if (!st_)
            return {};
        weft_task *t = weft_graph_add_pipeline(st_->g, pl.native_handle());
        if (!t) {
            st_->note(!pl.native_handle() ? WEFT_EINVAL : st_->add_failure());
            return {};
        }
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
            std::lock_guard<detail::plain_lock> lk(st->mu);
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
        std::lock_guard<detail::plain_lock> lk(st->mu);
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


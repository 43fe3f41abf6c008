/*
 * weft/cpp/flow.hpp: work without a graph object, over weft/flow.h:
 * dependent async tasks with a future-like handle (async_task<T>),
 * pipelines whose stages are callables (pipeline, pipe, pipeflow), and
 * task groups (task_group). Part of weft.hpp.
 * See docs/reference/cpp.md and docs/reference/flow.md.
 *
 * An async task's callable and its result share one box: a pooled block
 * when they fit (with the box's header, 64 bytes), else the heap; the C
 * handle is weft's own, pooled. So a stream of small async tasks
 * allocates nothing in steady state. A pipeline keeps its stages'
 * callables in itself (it is neither copied nor moved); a task group's
 * members are stored as spawn's tasks are.
 *
 * Synchronization:
 *  - async_box::refs: one reference for the task until its callable has
 *    run, one per async_task that names the box; the last to drop it
 *    (acq_rel) destroys the box.
 *  - async_box's value, has and ex: written by the task before its
 *    function returns; read by a handle after wait() or a true done(),
 *    which weft orders after that return.
 *  - pipeline and task_group thrown/ex: the first exception of any stage
 *    or member wins the exchange and writes ex; read by run() or join()
 *    once the C call has returned, which orders every stage (member)
 *    before it.
 */
#ifndef WEFT_CPP_FLOW_HPP
#define WEFT_CPP_FLOW_HPP

#include "base.hpp"
#include "sched.hpp"
#include "sync.hpp"

#include <tuple>

namespace weft {

/* ---- dependent async ------------------------------------------------------ */

namespace detail {

struct async_box_base {
    std::atomic<int> refs{2};
    bool has = false;                 /* the callable returned */
    std::exception_ptr ex;            /* or what it threw */
    void (*destroy)(async_box_base *) noexcept = nullptr;
    void drop() noexcept
    {
        /* acq_rel: each owner's uses happen before the last one's destroy */
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
            destroy(this);
    }
};

struct no_value {};

template <class F, class T>
struct async_box final : async_box_base {
    using V = std::conditional_t<std::is_void_v<T>, no_value, T>;
    template <class G>
    explicit async_box(G &&g) { ::new (static_cast<void *>(fbuf)) F(std::forward<G>(g)); }
    ~async_box()
    {
        if constexpr (!std::is_void_v<T>) {
            if (has)
                value()->~V();
        }
    }
    F *fn() noexcept { return std::launder(reinterpret_cast<F *>(fbuf)); }
    V *value() noexcept { return std::launder(reinterpret_cast<V *>(vbuf)); }
    alignas(F) unsigned char fbuf[sizeof(F)];
    alignas(V) unsigned char vbuf[sizeof(V)];
};

template <class B>
inline constexpr bool box_pooled = sizeof(B) <= pooled_capture_size && alignof(B) <= 16;

template <class B>
void box_destroy(async_box_base *b) noexcept
{
    if constexpr (box_pooled<B>) {
        static_cast<B *>(b)->~B();
        pool_free(b);
    } else {
        delete static_cast<B *>(b);
    }
}

template <class B, class G>
B *box_new(G &&f)
{
    if constexpr (box_pooled<B>) {
        void *p = pool_alloc();
        if (!p)
            return nullptr;
#if WEFT_CPP_EXCEPTIONS
        try {
            return ::new (p) B(std::forward<G>(f));
        } catch (...) {
            pool_free(p);
            throw;
        }
#else
        return ::new (p) B(std::forward<G>(f));
#endif
    } else {
        return new (std::nothrow) B(std::forward<G>(f));
    }
}

/* The task: runs the callable, keeps its value or exception, ends the
 * callable, and drops the task's reference to the box. */
template <class F, class T>
void *async_entry(void *arg) noexcept
{
    auto *b = static_cast<async_box<F, T> *>(arg);
#if WEFT_CPP_EXCEPTIONS
    try {
#endif
        if constexpr (std::is_void_v<T>)
            (*b->fn())();
        else
            ::new (static_cast<void *>(b->vbuf)) T((*b->fn())());
        b->has = true;
#if WEFT_CPP_EXCEPTIONS
    } catch (...) {
        b->ex = std::current_exception();
    }
#endif
    b->fn()->~F();
    b->drop();
    return nullptr;
}

} // namespace detail

/** A dependent async task's handle, of any result type: what the tasks
 * that follow it name. Copies share the task (weft_async_retain). */
class async_handle {
public:
    async_handle() noexcept = default;
    async_handle(const async_handle &o) noexcept : h_(o.h_), box_(o.box_), err_(o.err_) { retain(); }
    async_handle(async_handle &&o) noexcept : h_(o.h_), box_(o.box_), err_(o.err_)
    {
        o.h_ = nullptr;
        o.box_ = nullptr;
    }
    async_handle &operator=(async_handle o) noexcept
    {
        std::swap(h_, o.h_);
        std::swap(box_, o.box_);
        std::swap(err_, o.err_);
        return *this;
    }
    ~async_handle()
    {
        weft_async_release(h_);
        if (box_)
            box_->drop();
    }

    /** False when the spawn that made it failed (error() says why). */
    explicit operator bool() const noexcept { return h_ != nullptr; }
    std::error_code error() const noexcept { return to_error(err_); }
    weft_async *native_handle() const noexcept { return h_; }

    /** Has the callable returned (or thrown)? Callable from: any thread. */
    bool done() const noexcept { return h_ && weft_async_done(h_); }
    /** Waits until it has (weft_async_wait; a task's fiber waits). An
     * empty handle gives its spawn's error. Callable from: any thread. */
    [[nodiscard]] std::error_code wait() const noexcept
    {
        return h_ ? to_error(weft_async_wait(h_)) : error();
    }
    template <class Rep, class Period>
    [[nodiscard]] std::error_code wait_for(std::chrono::duration<Rep, Period> d) const noexcept
    {
        return h_ ? to_error(weft_async_wait_for(h_, detail::to_ns(d))) : error();
    }
    /** What the callable threw, once done (null: nothing). */
    std::exception_ptr exception() const noexcept { return done() ? box_->ex : nullptr; }

protected:
    void retain() noexcept
    {
        if (h_) {
            weft_async_retain(h_);
            box_->refs.fetch_add(1, std::memory_order_relaxed);   /* a holder already has one */
        }
    }
    weft_async *h_ = nullptr;
    detail::async_box_base *box_ = nullptr;
    int err_ = WEFT_OK;

    template <class T>
    friend class async_task;
    template <class F, class... P>
    friend auto dependent_async(scheduler_ref s, F &&f, const P &...preds);
};

/** A dependent async task's handle with its result: a future. T is what
 * the callable returns (void: none); the value is kept in the task's box
 * until the last handle goes. */
template <class T>
class async_task : public async_handle {
public:
    async_task() noexcept = default;

    /** The result, once done (null before, or if the callable threw). */
    const std::conditional_t<std::is_void_v<T>, detail::no_value, T> *result() const noexcept
    {
        if (!done() || !box_->has)
            return nullptr;
        return value_ptr();
    }
#if WEFT_CPP_EXCEPTIONS
    /** Waits, then gives the result: throws what the callable threw, or
     * a std::system_error if the wait (or the spawn) failed. */
    decltype(auto) get() const
    {
        throw_if(wait());
        if (box_->ex)
            std::rethrow_exception(box_->ex);
        if constexpr (!std::is_void_v<T>)
            return static_cast<const T &>(*value_ptr());
    }
#endif

private:
    template <class F, class... P>
    friend auto dependent_async(scheduler_ref s, F &&f, const P &...preds);
    using V = std::conditional_t<std::is_void_v<T>, detail::no_value, T>;
    const V *(*value_of_)(detail::async_box_base *) noexcept = nullptr;
    const V *value_ptr() const noexcept { return value_of_(box_); }
};

namespace detail {
template <class F, class T>
const std::conditional_t<std::is_void_v<T>, no_value, T> *box_value(async_box_base *b) noexcept
{
    return static_cast<async_box<F, T> *>(b)->value();
}
} // namespace detail

/** Spawns f() on s to run once each of preds (async_handle or
 * async_task<U>, finished or not) has finished, and returns its handle
 * (weft_async_spawn); empty, with error() EINVAL, ENOMEM or ESHUTDOWN,
 * when nothing was spawned. An exception f throws is kept for get() and
 * exception(); the task still counts as finished for those after it.
 * f may block, on other async tasks too, in any valid order.
 * Callable from: any thread. */
template <class F, class... P>
auto dependent_async(scheduler_ref s, F &&f, const P &...preds)
{
    using D = std::decay_t<F>;
    static_assert(std::is_invocable_v<D &>, "weft: an async task's callable takes no arguments");
    static_assert((std::is_base_of_v<async_handle, P> && ...), "weft: predecessors are async handles");
    using T = std::invoke_result_t<D &>;
    using B = detail::async_box<D, T>;
    async_task<T> out;
    B *b = detail::box_new<B>(std::forward<F>(f));
    if (!b) {
        out.err_ = WEFT_ENOMEM;
        return out;
    }
    b->destroy = &detail::box_destroy<B>;
    weft_async *pv[sizeof...(P) + 1] = {preds.native_handle()..., nullptr};
    for (std::size_t i = 0; i < sizeof...(P); i++) {
        if (!pv[i]) {   /* an empty handle: its spawn failed */
            b->fn()->~D();
            detail::box_destroy<B>(b);
            out.err_ = WEFT_EINVAL;
            return out;
        }
    }
    int rc = weft_async_spawn(s.get(), &detail::async_entry<D, T>, b, pv, sizeof...(P), &out.h_);
    if (rc != WEFT_OK) {
        b->fn()->~D();
        detail::box_destroy<B>(b);
        out.h_ = nullptr;
        out.err_ = rc;
        return out;
    }
    out.box_ = b;
    out.value_of_ = &detail::box_value<D, T>;
    return out;
}

/** dependent_async with no handle: f runs unobserved (an exception it
 * throws calls std::terminate). Returns the spawn's error.
 * Callable from: any thread. */
template <class F, class... P>
[[nodiscard]] std::error_code silent_async(scheduler_ref s, F &&f, const P &...preds)
{
    using D = std::decay_t<F>;
    static_assert(std::is_invocable_v<D &>, "weft: an async task's callable takes no arguments");
    struct entry {
        static void *run(void *arg) noexcept
        {
            detail::invoke_stored<D>(arg);
            detail::release<D>(arg);
            return nullptr;
        }
    };
    weft_async *pv[sizeof...(P) + 1] = {preds.native_handle()..., nullptr};
    for (std::size_t i = 0; i < sizeof...(P); i++)
        if (!pv[i])
            return make_error_code(errc::einval);
    bool ok;
    void *arg = detail::store<D>(std::forward<F>(f), ok);
    if (!ok)
        return make_error_code(errc::enomem);
    int rc = weft_async_spawn(s.get(), &entry::run, arg, pv, sizeof...(P), nullptr);
    if (rc != WEFT_OK)
        detail::release<D>(arg);
    return to_error(rc);
}

/* ---- pipelines -------------------------------------------------------------- */

/** How a stage takes its tokens (weft_pipe_kind). */
enum class pipe_type : int {
    serial = WEFT_PIPE_SERIAL,     /**< one at a time, in token order */
    parallel = WEFT_PIPE_PARALLEL  /**< any at once, in any order */
};

/** What a stage's callable is given: its line (the index of per-line
 * data), stage, token, and, in the first stage, stop(). */
class pipeflow {
public:
    std::size_t line() const noexcept { return weft_pipe_line(pf_); }
    std::size_t pipe() const noexcept { return weft_pipe_stage_index(pf_); }
    std::uint64_t token() const noexcept { return weft_pipe_token(pf_); }
    /** Ends the pipeline: this token goes no further, no other is made
     * (weft_pipe_stop). Ignored outside the first stage. */
    void stop() noexcept { weft_pipe_stop(pf_); }
    weft_pipe *native_handle() const noexcept { return pf_; }

private:
    template <class... F>
    friend class pipeline;
    explicit pipeflow(weft_pipe *pf) noexcept : pf_(pf) {}
    weft_pipe *pf_;
};

/** A stage: its type and a callable taking a weft::pipeflow &. */
template <class F>
struct pipe {
    pipe(pipe_type t, F fn) : type(t), f(std::move(fn)) {}
    pipe_type type;
    F f;
};
template <class F>
pipe(pipe_type, F) -> pipe<F>;

/** A pipeline (weft_pipeline) of `lines` lines through the stages given,
 * their callables kept inside it: weft::pipeline pl(4, weft::pipe(...),
 * ...). Neither copied nor moved (weft calls into it). The first stage
 * must be serial (else error() is EINVAL and run() refuses). A stage
 * may block, on async tasks or on other stages' tokens, in any valid
 * order. An exception a stage throws is kept: later stage calls of
 * the run are skipped, the first stage stops, and run() throws it. */
template <class... F>
class pipeline {
public:
    static_assert(sizeof...(F) > 0, "weft: a pipeline has at least one stage");

    explicit pipeline(std::size_t lines, pipe<F>... stages) : stages_(std::move(stages)...)
    {
        weft_pipe_stage st[sizeof...(F)];
        fill(st, std::index_sequence_for<F...>{});
        err_ = weft_pipeline_create(lines, st, sizeof...(F), &pl_);
    }
    pipeline(const pipeline &) = delete;
    pipeline &operator=(const pipeline &) = delete;
    /** weft_pipeline_destroy; not while it runs (that is a bug: the
     * pipeline is then left, with a message). */
    ~pipeline()
    {
        if (weft_pipeline_destroy(pl_) != WEFT_OK)
            std::fputs("weft: a weft::pipeline destroyed while it runs is left alive\n", stderr);
    }

    /** The creation's error (0: made). */
    std::error_code error() const noexcept { return to_error(err_); }
    weft_pipeline *native_handle() const noexcept { return pl_; }
    std::size_t num_pipes() const noexcept { return sizeof...(F); }

    /** Runs it on s until the first stage stops and every token before
     * has passed every stage (weft_pipeline_run). Tokens count from 0 at
     * every run. EBUSY, changing nothing, while a run() is in flight.
     * Callable from: any thread (a task's fiber waits). */
    [[nodiscard]] std::error_code run(scheduler_ref s)
    {
        if (err_)
            return error();
        /* A run() refused because another is in flight (from a stage of
         * it, or another thread) changes nothing: the exception state
         * below is that run's. */
        if (running_.exchange(true, std::memory_order_acquire))
            return make_error_code(errc::ebusy);
        thrown_.store(false, std::memory_order_relaxed);   /* no stage runs now; the run's start publishes it */
        ex_ = nullptr;
        int rc = weft_pipeline_run(s.get(), pl_);
        std::exception_ptr ex = ex_;   /* before the next run() may reset it */
        running_.store(false, std::memory_order_release);
#if WEFT_CPP_EXCEPTIONS
        if (ex && rc == WEFT_OK)
            std::rethrow_exception(ex);
#else
        (void)ex;
#endif
        return to_error(rc);
    }
    /** Tokens the last finished run took through every stage. */
    std::uint64_t num_tokens() const noexcept { return weft_pipeline_tokens(pl_); }
    /** What a stage of the last run threw (null: nothing). */
    std::exception_ptr exception() const noexcept { return ex_; }

private:
    template <std::size_t... I>
    void fill(weft_pipe_stage *st, std::index_sequence<I...>) noexcept
    {
        ((st[I] = weft_pipe_stage{static_cast<weft_pipe_kind>(std::get<I>(stages_).type), &stage_fn<I>, this}), ...);
    }
    template <std::size_t I>
    static void stage_fn(weft_pipe *pf, void *arg) noexcept
    {
        auto *self = static_cast<pipeline *>(arg);
        pipeflow p(pf);
        if (self->thrown_.load(std::memory_order_relaxed)) {   /* a hint: later calls are skipped */
            p.stop();
            return;
        }
#if WEFT_CPP_EXCEPTIONS
        try {
            std::get<I>(self->stages_).f(p);
        } catch (...) {
            if (!self->thrown_.exchange(true, std::memory_order_acq_rel))   /* the first wins; run()'s return orders ex_ */
                self->ex_ = std::current_exception();
            p.stop();
        }
#else
        std::get<I>(self->stages_).f(p);
#endif
    }

    std::tuple<pipe<F>...> stages_;
    weft_pipeline *pl_ = nullptr;
    int err_ = WEFT_OK;
    std::atomic<bool> thrown_{false};
    std::atomic<bool> running_{false};   /* a run() of this object is in flight */
    std::exception_ptr ex_;
};

/* ---- task groups ------------------------------------------------------------ */

/** A task group (weft_group): spawn several tasks, join them, cancel
 * those not started; no graph object. The destructor joins, so no member
 * outlives it. A member's exception is kept (the first), and join()
 * throws it. Members may block on each other in any valid order.
 * Callable from: any thread (join: a task's fiber waits). */
class task_group : detail::pinned_object {
public:
    explicit task_group(scheduler_ref s) noexcept : err_(weft_group_init(&gr_, s.get())) {}
    ~task_group()
    {
        if (err_ == WEFT_OK)
            weft_group_destroy(&gr_);
    }
    /** The init's error: EINVAL for an empty scheduler. */
    std::error_code error() const noexcept { return to_error(err_); }

    /** Spawns f() as a member (weft_group_spawn); f is stored as spawn's
     * callables are. ECANCELED once cancelled (until the next join). */
    template <class F>
    [[nodiscard]] std::error_code spawn(F &&f)
    {
        using D = std::decay_t<F>;
        static_assert(std::is_invocable_v<D &>, "weft: a group member takes no arguments");
        if (err_)
            return error();
        if (cancelled_.load(std::memory_order_acquire))
            return make_error_code(errc::ecanceled);
        struct member {
            task_group *g;
            D f;
        };
        struct entry {
            static void run(void *arg) noexcept
            {
                member *m;
                alignas(member) unsigned char buf[detail::store_of<member> == detail::store_kind::in_arg ? sizeof(member) : 1];
                if constexpr (detail::store_of<member> == detail::store_kind::in_arg) {
                    std::memcpy(buf, &arg, sizeof(member));
                    m = std::launder(reinterpret_cast<member *>(buf));
                } else {
                    m = static_cast<member *>(arg);
                }
                /* Skipped after a cancel here, not by weft_group_cancel,
                 * which would never call us: the callable is released
                 * (destroyed) either way. */
                if (!m->g->cancelled_.load(std::memory_order_acquire)) {
#if WEFT_CPP_EXCEPTIONS
                    try {
                        m->f();
                    } catch (...) {
                        if (!m->g->thrown_.exchange(true, std::memory_order_acq_rel))   /* the first wins; join()'s return orders ex_ */
                            m->g->ex_ = std::current_exception();
                    }
#else
                    m->f();
#endif
                }
                detail::release<member>(arg);
            }
        };
        bool ok;
        void *arg = detail::store<member>(member{this, std::forward<F>(f)}, ok);
        if (!ok)
            return make_error_code(errc::enomem);
        int rc = weft_group_spawn(&gr_, &entry::run, arg);
        if (rc != WEFT_OK)
            detail::release<member>(arg);
        return to_error(rc);
    }
    /** Waits for every member spawned so far (weft_group_join): OK, or
     * ECANCELED if cancelled since the last join (cleared), ENOMEM,
     * ENOTBOUND (nobody here would run them: weft_group_join). A
     * member's exception is thrown here (and cleared). */
    [[nodiscard]] std::error_code join()
    {
        if (err_)
            return error();
        int rc = weft_group_join(&gr_);
        if (rc == WEFT_OK && cancelled_.load(std::memory_order_relaxed) &&   /* no locked instruction unless cancelled */
            cancelled_.exchange(false, std::memory_order_acq_rel))
            rc = WEFT_ECANCELED;   /* the join clears the mark, as weft_group_join's */
#if WEFT_CPP_EXCEPTIONS
        if (thrown_.load(std::memory_order_acquire) && rc != WEFT_ENOMEM &&
            rc != WEFT_ENOTBOUND) {   /* the join already ordered every member before */
            std::exception_ptr e = ex_;
            ex_ = nullptr;
            thrown_.store(false, std::memory_order_relaxed);   /* no member runs now */
            std::rethrow_exception(e);
        }
#endif
        return to_error(rc);
    }
    /** As weft_group_cancel and weft_group_cancelled: members not yet
     * started are skipped (their callables destroyed, never called),
     * spawns refused until the next join. */
    void cancel() noexcept
    {
        if (!err_)
            cancelled_.store(true, std::memory_order_release);
    }
    bool cancelled() const noexcept
    {
        return !err_ && (cancelled_.load(std::memory_order_acquire) || weft_group_cancelled(&gr_));
    }
    weft_group *native_handle() noexcept { return &gr_; }

private:
    weft_group gr_;
    int err_;
    std::atomic<bool> cancelled_{false};   /* cancel() since the last join */
    std::atomic<bool> thrown_{false};
    std::exception_ptr ex_;
};

} // namespace weft

#endif /* WEFT_CPP_FLOW_HPP */

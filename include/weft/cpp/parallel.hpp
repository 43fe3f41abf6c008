/*
 * weft/cpp/parallel.hpp: parallel loops over index ranges and random
 * access iterators: parallel_for (a body per element or index, or per
 * chunk) and parallel_reduce (deterministic, as weft_parallel_reduce).
 * The bodies live on the caller's stack: nothing is copied or allocated.
 * An exception a body throws stops the chunks not yet started and is
 * thrown again on the caller once every started chunk has ended.
 * Part of weft.hpp. See docs/reference/cpp.md and docs/reference/parallel.md.
 */
#ifndef WEFT_CPP_PARALLEL_HPP
#define WEFT_CPP_PARALLEL_HPP

#include "base.hpp"
#include "sched.hpp"

#include <iterator>

namespace weft {

namespace detail {

template <class It, class = void>
struct random_access : std::false_type {};
template <class It>
struct random_access<It, std::void_t<typename std::iterator_traits<It>::iterator_category>>
    : std::is_base_of<std::random_access_iterator_tag, typename std::iterator_traits<It>::iterator_category> {};
template <class It>
inline constexpr bool random_access_v = random_access<It>::value;

/* A chunk body f(b, e) behind the C callback, with the exception rule. */
template <class F>
struct range_call : sync_call<F> {
    using sync_call<F>::sync_call;
    static void chunk(std::size_t b, std::size_t e, void *arg) noexcept
    {
        auto *c = static_cast<range_call *>(arg);
        if (c->stopped())
            return;
#if WEFT_CPP_EXCEPTIONS
        try {
            (*c->f)(b, e);
        } catch (...) {
            c->keep_current();
        }
#else
        (*c->f)(b, e);
#endif
    }
};

template <class F>
inline std::error_code for_chunks(scheduler_ref s, std::size_t b, std::size_t e, std::size_t grain, F &f)
{
    range_call<F> c(f);
    int rc = weft_parallel_for(s.get(), b, e, grain, &range_call<F>::chunk, &c);
    c.rethrow();
    return to_error(rc);
}

} // namespace detail

/** Calls body(b, e) for chunks [b, e) of [first, last), e - b <= grain
 * (0: weft's choice), and returns once all have run (weft_parallel_for).
 * Callable from: any thread (a task's fiber waits). */
template <class F>
[[nodiscard]] inline std::error_code parallel_for_chunks(scheduler_ref s, std::size_t first, std::size_t last,
                                                         F &&body, std::size_t grain = 0)
{
    return detail::for_chunks(s, first, last, grain, body);
}

/** Calls body(i) for each i of [first, last) when they are integers, or
 * body(*it) for each it when they are random access iterators. */
template <class It, class F>
[[nodiscard]] inline std::error_code parallel_for(scheduler_ref s, It first, It last, F &&body,
                                                  std::size_t grain = 0)
{
    if constexpr (std::is_integral_v<It>) {
        if (last < first)
            return make_error_code(errc::einval);
        auto chunk = [&](std::size_t b, std::size_t e) {
            for (std::size_t i = b; i < e; i++)
                body(static_cast<It>(first + static_cast<It>(i)));
        };
        return detail::for_chunks(s, 0, static_cast<std::size_t>(last - first), grain, chunk);
    } else {
        static_assert(detail::random_access_v<It>, "weft::parallel_for takes integers or random access iterators");
        auto n = std::distance(first, last);
        if (n < 0)
            return make_error_code(errc::einval);
        auto chunk = [&](std::size_t b, std::size_t e) {
            It it = first + static_cast<typename std::iterator_traits<It>::difference_type>(b);
            for (std::size_t i = b; i < e; i++, ++it)
                body(*it);
        };
        return detail::for_chunks(s, 0, static_cast<std::size_t>(n), grain, chunk);
    }
}

/** result = identity op x0 op x1 ... over [first, last), xi = conv(*it),
 * grouped the same way at every worker count and on every run, so a
 * floating-point sum is the same each time (weft_parallel_reduce). op
 * must be associative; identity is its neutral element (it starts each
 * partial). T must be trivially copyable (partials are copied as bytes)
 * and aligned to at most 64. result is untouched on failure.
 * Callable from: any thread (a task's fiber waits). */
template <class It, class T, class Op, class Conv>
[[nodiscard]] inline std::error_code parallel_transform_reduce(scheduler_ref s, It first, It last, T &result,
                                                               const T &identity, Op &&op, Conv &&conv,
                                                               std::size_t grain = 0)
{
    static_assert(std::is_trivially_copyable_v<T>, "weft::parallel_reduce: T is copied as bytes");
    static_assert(alignof(T) <= 64, "weft::parallel_reduce: T aligned to at most 64");
    static_assert(std::is_integral_v<It> || detail::random_access_v<It>,
                  "weft::parallel_reduce takes integers or random access iterators");
    std::size_t n;
    if constexpr (std::is_integral_v<It>) {
        if (last < first)
            return make_error_code(errc::einval);
        n = static_cast<std::size_t>(last - first);
    } else {
        auto d = std::distance(first, last);
        if (d < 0)
            return make_error_code(errc::einval);
        n = static_cast<std::size_t>(d);
    }
    struct ctx {
        ctx(It f, std::remove_reference_t<Op> *o, std::remove_reference_t<Conv> *cv) noexcept
            : first(f), op(o), conv(cv) {}
        It first;
        std::remove_reference_t<Op> *op;
        std::remove_reference_t<Conv> *conv;
        std::exception_ptr ex;
        std::atomic<bool> thrown{false};
        static void body(std::size_t b, std::size_t e, void *partial, void *arg) noexcept
        {
            auto *c = static_cast<ctx *>(arg);
#if WEFT_CPP_EXCEPTIONS
            if (c->thrown.load(std::memory_order_relaxed))
                return;
            try {
#endif
                T acc(*static_cast<const T *>(partial));   /* a copy of identity's bytes, then folds */
                for (std::size_t i = b; i < e; i++) {
                    if constexpr (std::is_integral_v<It>)
                        acc = (*c->op)(acc, (*c->conv)(static_cast<It>(c->first + static_cast<It>(i))));
                    else
                        acc = (*c->op)(acc, (*c->conv)(c->first[static_cast<typename std::iterator_traits<It>::difference_type>(i)]));
                }
                std::memcpy(partial, &acc, sizeof(T));
#if WEFT_CPP_EXCEPTIONS
            } catch (...) {
                if (!c->thrown.exchange(true, std::memory_order_acq_rel))   /* the first wins; the C call's return orders ex */
                    c->ex = std::current_exception();
            }
#endif
        }
        static void combine(void *into, const void *from, void *arg) noexcept
        {
            auto *c = static_cast<ctx *>(arg);
#if WEFT_CPP_EXCEPTIONS
            if (c->thrown.load(std::memory_order_relaxed))
                return;
            try {
#endif
                T a = (*c->op)(*static_cast<const T *>(into), *static_cast<const T *>(from));
                std::memcpy(into, &a, sizeof(T));
#if WEFT_CPP_EXCEPTIONS
            } catch (...) {
                if (!c->thrown.exchange(true, std::memory_order_acq_rel))
                    c->ex = std::current_exception();
            }
#endif
        }
    };
    ctx c(first, &op, &conv);
    T out(identity);
    int rc = weft_parallel_reduce(s.get(), 0, n, grain, &out, sizeof(T), &identity, &ctx::body, &ctx::combine, &c);
#if WEFT_CPP_EXCEPTIONS
    if (c.ex)
        std::rethrow_exception(c.ex);
#endif
    if (rc == WEFT_OK)
        std::memcpy(&result, &out, sizeof(T));
    return to_error(rc);
}

/** parallel_transform_reduce with the elements (or indices) as they are. */
template <class It, class T, class Op>
[[nodiscard]] inline std::error_code parallel_reduce(scheduler_ref s, It first, It last, T &result,
                                                     const T &identity, Op &&op, std::size_t grain = 0)
{
    auto same = [](const auto &x) -> const auto & { return x; };
    return parallel_transform_reduce(s, first, last, result, identity, op, same, grain);
}

} // namespace weft

#endif /* WEFT_CPP_PARALLEL_HPP */

/*
 * weft/cpp/parallel.hpp: parallel loops over index ranges and random
 * access iterators: parallel_for (a body per element or index, or per
 * chunk), parallel_reduce (deterministic, as weft_parallel_reduce),
 * parallel_transform, parallel_inclusive_scan and parallel_exclusive_scan
 * (deterministic), parallel_find_if (the first match); the sorts are
 * sort.hpp's, over these.
 * The bodies live on the caller's stack: nothing is copied or allocated.
 * A body, op or comparator that is a lambda or a function object is
 * inlined into the loop over a chunk (and vectorized where it can be); a
 * function passed by name reaches the loop as a pointer, called once per
 * element: wrap it, [](double v) { return f(v); } (a transform of 10^7
 * doubles, 1 thread: 1.35x the time through the pointer).
 * An exception a body throws stops the chunks not yet started and is
 * thrown again on the caller once every started chunk has ended.
 * Part of weft.hpp. See docs/reference/cpp.md and docs/reference/parallel.md.
 */
#ifndef WEFT_CPP_PARALLEL_HPP
#define WEFT_CPP_PARALLEL_HPP

#include "base.hpp"
#include "sched.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

namespace weft {

/** A grain given apart from other integers: parallel_inclusive_scan's
 * grain without init (an integer after op there is init). */
struct grain_size {
    std::size_t value;
    constexpr explicit grain_size(std::size_t n) noexcept : value(n) {}
};

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

namespace detail {

/* [first, last) as a count, EINVAL (false) for a reversed range. */
template <class It>
inline bool count_of(It first, It last, std::size_t &n) noexcept
{
    auto d = std::distance(first, last);
    if (d < 0)
        return false;
    n = static_cast<std::size_t>(d);
    return true;
}

template <class It>
using diff_t = typename std::iterator_traits<It>::difference_type;

/* Iterators known to walk one array (C++17 cannot ask an iterator). */
template <class It, class = void>
struct contiguous : std::is_pointer<It> {};
template <class It>
struct contiguous<It, std::enable_if_t<!std::is_pointer_v<It>, std::void_t<typename std::iterator_traits<It>::value_type>>>
    : std::bool_constant<std::is_same_v<It, typename std::vector<typename std::iterator_traits<It>::value_type>::iterator> ||
                         std::is_same_v<It, typename std::array<typename std::iterator_traits<It>::value_type, 1>::iterator>> {};
template <class It>
inline constexpr bool contiguous_v = contiguous<It>::value;

/* A scan's running value: "nothing yet" is the identity, so no neutral
 * element is asked of the caller. */
template <class T>
struct scan_sum {
    T v;
    bool has;
};

/* The exception rule of the algorithms below: the first wins, later
 * calls of the body return at once, the caller rethrows. */
struct first_exception {
    std::exception_ptr ex;
    std::atomic<bool> thrown{false};
    bool stopped() const noexcept { return thrown.load(std::memory_order_relaxed); }
    void keep() noexcept
    {
#if WEFT_CPP_EXCEPTIONS
        if (!thrown.exchange(true, std::memory_order_acq_rel))   /* the C call's return orders ex */
            ex = std::current_exception();
#endif
    }
    void rethrow() const
    {
#if WEFT_CPP_EXCEPTIONS
        if (ex)
            std::rethrow_exception(ex);
#endif
    }
};

template <class It, class Out, class Op, class T>
struct scan_ctx : first_exception {
    scan_ctx(It f, Out o, Op *p, const T *i, bool incl) noexcept : first(f), out(o), op(p), init(i), inclusive(incl) {}
    It first;
    Out out;
    Op *op;
    const T *init;      /* null: none (inclusive only) */
    bool inclusive;

    /* weft_parallel_scan_fused's body: the block's fold from "nothing"
     * (its first element), left to right, with or without outputs, so
     * the sum is the same either way; output i is the prefix (init op
     * the blocks' prefix, when there is an init) op the fold so far. The
     * loops after the first element know that there is a fold, and
     * whether there is a prefix, so the operator is all they call. */
    static void body(std::size_t b, std::size_t e, void *sum, const void *prefix, void *arg) noexcept
    {
        auto *c = static_cast<scan_ctx *>(arg);
        if (c->stopped() || b == e)
            return;
        WEFT_CPP_TRY_
        auto &op = *c->op;
        It in = c->first + static_cast<diff_t<It>>(b);
        const It end = c->first + static_cast<diff_t<It>>(e);
        T acc(*in);
        if (!prefix) {
            for (++in; in != end; ++in)
                acc = T(op(acc, T(*in)));
        } else {
            scan_sum<T> p;
            std::memcpy(&p, prefix, sizeof p);
            if (c->init) {
                p.v = p.has ? T(op(*c->init, p.v)) : *c->init;
                p.has = true;
            }
            Out o = c->out + static_cast<diff_t<Out>>(b);
            if (!c->inclusive) {   /* exclusive: init is given, so p.has */
                *o = p.v;
                for (++in, ++o; in != end; ++in, ++o) {
                    T x(*in);   /* read before an in-place write */
                    *o = T(op(p.v, acc));
                    acc = T(op(acc, x));
                }
            } else if (!p.has) {   /* block 0 without init: the fold itself */
                *o = acc;
                for (++in, ++o; in != end; ++in, ++o)
                    *o = acc = T(op(acc, T(*in)));
            } else {
                const T pv = p.v;
                *o = T(op(pv, acc));
                for (++in, ++o; in != end; ++in, ++o) {
                    acc = T(op(acc, T(*in)));
                    *o = T(op(pv, acc));
                }
            }
        }
        scan_sum<T> r{acc, true};
        std::memcpy(sum, &r, sizeof r);
        WEFT_CPP_CATCH_(*c)
    }
    static void combine(void *into, const void *from, void *arg) noexcept
    {
        auto *c = static_cast<scan_ctx *>(arg);
        if (c->stopped())
            return;
        WEFT_CPP_TRY_
        scan_sum<T> a, b;
        std::memcpy(&a, into, sizeof a);
        std::memcpy(&b, from, sizeof b);
        if (b.has)
            a = a.has ? scan_sum<T>{T((*c->op)(a.v, b.v)), true} : b;
        std::memcpy(into, &a, sizeof a);
        WEFT_CPP_CATCH_(*c)
    }
};

template <class It, class Out, class Op, class T>
inline std::error_code scan(scheduler_ref s, It first, It last, Out d_first, Op &op, const T *init,
                            bool inclusive, std::size_t grain)
{
    static_assert(random_access_v<It> && random_access_v<Out>,
                  "weft: a scan takes random access iterators");
    static_assert(std::is_trivially_copyable_v<T>, "weft: a scan's values are copied as bytes");
    std::size_t n;
    if (!count_of(first, last, n))
        return make_error_code(errc::einval);
    scan_ctx<It, Out, Op, T> c(first, d_first, &op, init, inclusive);
    scan_sum<T> none, total;
    std::memset(&none, 0, sizeof none);   /* has false: the identity */
    int rc = weft_parallel_scan_fused(s.get(), 0, n, grain, &total, sizeof total, &none,
                                      &decltype(c)::body, &decltype(c)::combine, &c);
    c.rethrow();
    return to_error(rc);
}

/* parallel_inclusive_scan refuses an integer init of another type than
 * the input's values: written after op it reads as a grain (the call's
 * meaning would hang on a literal's type). */
template <class T, class V>
inline constexpr bool init_reads_as_grain_v = std::is_integral_v<T> && !std::is_same_v<T, V>;

} // namespace detail

/** d_first[i] = op(first[i]) for each element of [first, last), in
 * parallel (weft_parallel_transform, index form). The output may be the
 * input itself (in place), and must not overlap it otherwise; op's
 * exception stops the runs not started and is thrown again here.
 * Returns OK, EINVAL (a reversed range), ENOMEM, ESHUTDOWN.
 * Callable from: any thread (a task's fiber waits). */
template <class It, class Out, class Op>
[[nodiscard]] inline std::error_code parallel_transform(scheduler_ref s, It first, It last, Out d_first, Op &&op,
                                                        std::size_t grain = 0)
{
    static_assert(detail::random_access_v<It> && detail::random_access_v<Out>,
                  "weft::parallel_transform takes random access iterators");
    std::size_t n;
    if (!detail::count_of(first, last, n))
        return make_error_code(errc::einval);
    if (n == 0)
        return {};
    struct ctx : detail::first_exception {
        ctx(It f, Out o, std::remove_reference_t<Op> *p) noexcept : in(f), out(o), op(p) {}
        It in;
        Out out;
        std::remove_reference_t<Op> *op;
        /* The index form: weft offsets the out pointer it is given, which
         * is not used; elements are reached through the iterators. */
        static void map(void *, const void *, std::size_t b, std::size_t count, void *arg) noexcept
        {
            auto *c = static_cast<ctx *>(arg);
            if (c->stopped())
                return;
            WEFT_CPP_TRY_
            It i = c->in + static_cast<detail::diff_t<It>>(b);
            Out o = c->out + static_cast<detail::diff_t<Out>>(b);
            for (std::size_t k = 0; k < count; k++, ++i, ++o)
                *o = (*c->op)(*i);
            WEFT_CPP_CATCH_(*c)
        }
    };
    ctx c(first, d_first, &op);
    int rc = weft_parallel_transform(s.get(), std::addressof(*d_first), 1, nullptr, 0, n, grain, &ctx::map, &c);
    c.rethrow();
    return to_error(rc);
}

/** d_first[i] = x0 op x1 op ... op xi over [first, last) (with init:
 * init op x0 op ... op xi), in blocks fixed by the range and grain, so
 * the same at every worker count, floating point included
 * (weft_parallel_scan_fused: output i of block k is (init op) prefix_k
 * op block k's fold up to i; one pass over each block whose prefix is
 * known, at one thread every block). op must be associative; values
 * (the input's value_type, or init's type) trivially copyable. The
 * output may be the input. After op come init, then a grain; a grain
 * without init is a weft::grain_size, and an integer init of another
 * type than the input's values is refused at compile time (it reads as
 * a grain). Returns OK, EINVAL (a reversed range), ENOMEM, ESHUTDOWN.
 * Callable from: any thread (a task's fiber waits). */
template <class It, class Out, class Op>
[[nodiscard]] inline std::error_code parallel_inclusive_scan(scheduler_ref s, It first, It last, Out d_first,
                                                             Op &&op, grain_size grain = grain_size(0))
{
    using T = typename std::iterator_traits<It>::value_type;
    return detail::scan<It, Out, std::remove_reference_t<Op>, T>(s, first, last, d_first, op, nullptr, true,
                                                                 grain.value);
}
template <class It, class Out, class Op, class T,
          std::enable_if_t<!std::is_same_v<T, grain_size> &&
                           !detail::init_reads_as_grain_v<T, typename std::iterator_traits<It>::value_type>, int> = 0>
[[nodiscard]] inline std::error_code parallel_inclusive_scan(scheduler_ref s, It first, It last, Out d_first,
                                                             Op &&op, const T &init, std::size_t grain = 0)
{
    return detail::scan<It, Out, std::remove_reference_t<Op>, T>(s, first, last, d_first, op, &init, true, grain);
}
/** Refused: an integer after op of another type than the input's values
 * (init, or a grain?). For a grain write weft::grain_size(n); for init,
 * convert it to the input's value type. */
template <class It, class Out, class Op, class T,
          std::enable_if_t<detail::init_reads_as_grain_v<T, typename std::iterator_traits<It>::value_type>, int> = 0>
std::error_code parallel_inclusive_scan(scheduler_ref s, It first, It last, Out d_first, Op &&op, const T &init,
                                        std::size_t grain = 0) = delete;

/** d_first[i] = init op x0 op ... op x(i-1) (d_first[0] = init), as
 * parallel_inclusive_scan otherwise. */
template <class It, class Out, class T, class Op>
[[nodiscard]] inline std::error_code parallel_exclusive_scan(scheduler_ref s, It first, It last, Out d_first,
                                                             const T &init, Op &&op, std::size_t grain = 0)
{
    return detail::scan<It, Out, std::remove_reference_t<Op>, T>(s, first, last, d_first, op, &init, false, grain);
}

/** Sets result to the first iterator of [first, last) for which pred is
 * true (last if none): blocks after a match are not started
 * (weft_parallel_find). pred's exception is thrown again here. Returns
 * OK, EINVAL (a reversed range), ENOMEM, ESHUTDOWN (result untouched).
 * Callable from: any thread (a task's fiber waits). */
template <class It, class Pred>
[[nodiscard]] inline std::error_code parallel_find_if(scheduler_ref s, It first, It last, Pred &&pred, It &result,
                                                      std::size_t grain = 0)
{
    static_assert(detail::random_access_v<It>, "weft::parallel_find_if takes random access iterators");
    std::size_t n;
    if (!detail::count_of(first, last, n))
        return make_error_code(errc::einval);
    struct ctx : detail::first_exception {
        ctx(It f, std::remove_reference_t<Pred> *p) noexcept : first(f), pred(p) {}
        It first;
        std::remove_reference_t<Pred> *pred;
        static std::size_t find(std::size_t b, std::size_t e, void *arg) noexcept
        {
            auto *c = static_cast<ctx *>(arg);
            if (c->stopped())
                return e;
            WEFT_CPP_TRY_
            It i = c->first + static_cast<detail::diff_t<It>>(b);
            for (std::size_t k = b; k < e; k++, ++i)
                if ((*c->pred)(*i))
                    return k;
            WEFT_CPP_CATCH_(*c)
            return e;
        }
    };
    ctx c(first, &pred);
    std::size_t at = n;
    int rc = weft_parallel_find(s.get(), 0, n, grain, &ctx::find, &c, &at);
    c.rethrow();
    if (rc == WEFT_OK)
        result = first + static_cast<detail::diff_t<It>>(at);
    return to_error(rc);
}

} // namespace weft

#endif /* WEFT_CPP_PARALLEL_HPP */

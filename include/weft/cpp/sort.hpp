/*
 * weft/cpp/sort.hpp: parallel_sort (weft_parallel_sort's plan with the
 * comparator inlined: a quicksort, in place, equal elements in no set
 * order) and parallel_stable_sort (weft_parallel_sort_stable, the merge
 * sort through scratch weft keeps), over random access iterators and a
 * comparator callable comp(a, b) (a before b; default <). Built on
 * parallel.hpp's loops and its exception rule: comp's exception stops the
 * pieces not yet started and is thrown again on the caller.
 * Part of weft.hpp. See docs/reference/cpp.md and docs/reference/parallel.md.
 */
#ifndef WEFT_CPP_SORT_HPP
#define WEFT_CPP_SORT_HPP

#include "parallel.hpp"

#include <algorithm>

namespace weft {
namespace detail {

/* A comparator comp(a, b) (a before b) as weft's three-way cmp. */
template <class T, class Comp>
struct sort_ctx : first_exception {
    explicit sort_ctx(Comp *c) noexcept : comp(c) {}
    Comp *comp;
    static int cmp(const void *a, const void *b, void *arg) noexcept
    {
        auto *c = static_cast<sort_ctx *>(arg);
        if (c->stopped())
            return 0;
        WEFT_CPP_TRY_
        const T &x = *static_cast<const T *>(a);
        const T &y = *static_cast<const T *>(b);
        return (*c->comp)(x, y) ? -1 : (*c->comp)(y, x) ? 1 : 0;
        WEFT_CPP_CATCH_(*c)
        return 0;
    }
};

/* The unstable sort, here rather than in C so that comp inlines: the C
 * call's comparison is a pointer, a call per comparison. The same plan
 * as weft_parallel_sort (src/parallel/sort.c says why each part): a
 * quicksort whose splits never branch on a comparison (each side notes
 * the offsets of its misplaced elements a block at a time, then pairs
 * are swapped), the two sides of a long range run as a loop of two
 * chunks, and a caller outside s starts flat, cutting the input into
 * as many pieces as threads (around sampled pivots) before one loop runs
 * them. Ranges
 * below qsort_par_min, and any past 2 log2 n splits, end in std::sort
 * (itself n log n at worst). */
constexpr std::size_t qsort_par_min = 16384, qsort_small = 32, qsort_flat_max = 64;
constexpr unsigned qsort_block = 64, qsort_par_depth = 24;
/* A sampled pivot's sample: n / qsort_sample_per elements, clamped (sort.c's SORT_SAMPLE_*). */
constexpr std::size_t qsort_sample_per = 256, qsort_sample_min = 63, qsort_sample_max = 4095;

template <class It, class Comp>
inline It median3(It a, It b, It c, Comp &comp)
{
    if (comp(*a, *b)) {
        if (comp(*b, *c))
            return b;
        return comp(*a, *c) ? c : a;
    }
    if (comp(*a, *c))
        return a;
    return comp(*b, *c) ? c : b;
}

/* Splits [f, f + n) (n >= 2) around a pivot: returns p with [0, p) not
 * after it, f[p] the pivot, (p, n) not before; equal elements are
 * misplaced on both sides, so equal keys split in the middle. */
template <class It, class Comp>
inline std::size_t qsort_split_at(It f, std::size_t n, It piv, Comp &comp)
{
    using D = diff_t<It>;
    auto at = [f](std::size_t i) { return f + static_cast<D>(i); };
    std::iter_swap(f, piv);   /* the pivot waits at 0, unmoved until the end */
    const auto &pv = *f;
    std::size_t l = 1, r = n, nl = 0, nr = 0, sl = 0, sr = 0;
    unsigned char offl[qsort_block], offr[qsort_block];
    while (r - l >= 2 * qsort_block) {
        if (nl == 0) {
            sl = 0;
            It x = at(l);
            for (unsigned k = 0; k < qsort_block; k++, ++x) {
                offl[nl] = static_cast<unsigned char>(k);
                nl += !comp(*x, pv);
            }
        }
        if (nr == 0) {
            sr = 0;
            It x = at(r - 1);
            for (unsigned k = 0; k < qsort_block; k++, --x) {
                offr[nr] = static_cast<unsigned char>(k);
                nr += !comp(pv, *x);
            }
        }
        std::size_t k = nl < nr ? nl : nr;
        for (std::size_t i = 0; i < k; i++)
            std::iter_swap(at(l + offl[sl + i]), at(r - 1 - offr[sr + i]));
        nl -= k;
        nr -= k;
        sl += k;
        sr += k;
        if (nl == 0)
            l += qsort_block;
        if (nr == 0)
            r -= qsort_block;
    }
    std::size_t i = l - 1, j = r;   /* the rest: [1, l) and [r, n) are placed, the sentinels */
    for (;;) {
        do
            i++;
        while (i < n && comp(*at(i), pv));
        do
            j--;
        while (comp(pv, *at(j)));
        if (i >= j)
            break;
        std::iter_swap(at(i), at(j));
    }
    std::iter_swap(f, at(j));
    return j;
}

/* qsort_split_at around the median of three, or of three medians of
 * three when long. */
template <class It, class Comp>
inline std::size_t qsort_split(It f, std::size_t n, Comp &comp)
{
    auto at = [f](std::size_t i) { return f + static_cast<diff_t<It>>(i); };
    std::size_t m = n / 2, last = n - 1;
    It piv;
    if (n >= 128) {
        std::size_t d = n / 8;
        piv = median3(median3(f, at(d), at(2 * d), comp), median3(at(m - d), at(m), at(m + d), comp),
                      median3(at(last - 2 * d), at(last - d), at(last), comp), comp);
    } else {
        piv = median3(f, at(m), at(last), comp);
    }
    return qsort_split_at(f, n, piv, comp);
}

/* qsort_split_at around the median of a sample of m elements spread over
 * the range, gathered at its front and sorted there: the flat start's
 * splits, whose pieces do not balance afterwards (sort.c's sampled_pivot
 * says why and how close to the middle). n >= qsort_par_min. */
template <class It, class Comp>
inline std::size_t qsort_split_sampled(It f, std::size_t n, Comp &comp)
{
    auto at = [f](std::size_t i) { return f + static_cast<diff_t<It>>(i); };
    std::size_t m = n / qsort_sample_per;
    m = m < qsort_sample_min ? qsort_sample_min : m > qsort_sample_max ? qsort_sample_max : m;
    std::size_t step = n / m;
    for (std::size_t k = 0; k < m; k++)
        std::iter_swap(at(k), at(k * step + step / 2));
    std::sort(f, at(m), comp);
    return qsort_split_at(f, n, at(m / 2), comp);
}

template <class It, class Comp>
inline void qsort_seq(It f, std::size_t n, unsigned depth, Comp &comp)
{
    while (n > qsort_small && depth > 0) {
        depth--;
        std::size_t p = qsort_split(f, n, comp);
        It hi = f + static_cast<diff_t<It>>(p + 1);
        if (p < n - p - 1) {   /* recurse into the shorter side: log2 n frames */
            qsort_seq(f, p, depth, comp);
            f = hi;
            n = n - p - 1;
        } else {
            qsort_seq(hi, n - p - 1, depth, comp);
            n = p;
        }
    }
    std::sort(f, f + static_cast<diff_t<It>>(n), comp);
}

template <class It, class Comp>
struct qsort_ctx : first_exception {
    qsort_ctx(weft_sched *sc, Comp *c) noexcept : s(sc), comp(c) {}
    weft_sched *s;
    Comp *comp;
    /* Pieces of a range, run as one loop: a split's two sides (on the
     * stack of each nested split: kept small), or the flat start's. */
    template <std::size_t N>
    struct pieces {
        qsort_ctx *c;
        std::size_t count;
        It base[N];
        std::size_t n[N];
        unsigned depth[N], par;
    };

    template <std::size_t N>
    static void chunk(std::size_t b, std::size_t e, void *arg) noexcept
    {
        auto *pc = static_cast<pieces<N> *>(arg);
        qsort_ctx *c = pc->c;
        if (c->stopped())
            return;
        WEFT_CPP_TRY_
        for (std::size_t k = b; k < e; k++) {
            if (weft_sched_current() != c->s)   /* an outside thread runs no nested loop's other chunks */
                qsort_seq(pc->base[k], pc->n[k], pc->depth[k], *c->comp);
            else
                c->par(pc->base[k], pc->n[k], pc->depth[k], pc->par);
        }
        WEFT_CPP_CATCH_(*c)
    }
    template <std::size_t N>
    void run(pieces<N> &pc)
    {
        if (pc.count == 1 || weft_parallel_for(s, 0, pc.count, 1, &chunk<N>, &pc) != WEFT_OK)
            chunk<N>(0, pc.count, &pc);   /* one piece, or no loop to be had: here */
    }
    void par(It f, std::size_t n, unsigned depth, unsigned par_left)
    {
        if (n < qsort_par_min || depth == 0 || par_left == 0) {
            qsort_seq(f, n, depth, *comp);
            return;
        }
        std::size_t p = qsort_split(f, n, *comp);
        pieces<2> pc;
        pc.c = this;
        pc.count = 2;
        pc.base[0] = f;
        pc.base[1] = f + static_cast<diff_t<It>>(p + 1);
        pc.n[0] = p;
        pc.n[1] = n - p - 1;
        pc.depth[0] = pc.depth[1] = depth - 1;
        pc.par = par_left - 1;
        run(pc);
    }
    /* An outside caller beside workers: splits the largest piece until
     * there are as many as threads, then one loop runs them. */
    void flat(It f, std::size_t n, unsigned depth)
    {
        pieces<qsort_flat_max> pc;
        pc.c = this;
        pc.count = 1;
        pc.base[0] = f;
        pc.n[0] = n;
        pc.depth[0] = depth;
        pc.par = qsort_par_depth;
        std::size_t want = std::size_t(weft_sched_workers(s)) + 1;
        if (want > qsort_flat_max)
            want = qsort_flat_max;
        while (pc.count < want) {
            std::size_t big = 0;
            for (std::size_t k = 1; k < pc.count; k++)
                if (pc.n[k] > pc.n[big])
                    big = k;
            if (pc.n[big] < qsort_par_min || pc.depth[big] == 0)
                break;
            std::size_t p = qsort_split_sampled(pc.base[big], pc.n[big], *comp);
            pc.base[pc.count] = pc.base[big] + static_cast<diff_t<It>>(p + 1);
            pc.n[pc.count] = pc.n[big] - p - 1;
            pc.n[big] = p;
            pc.depth[pc.count] = --pc.depth[big];
            pc.count++;
        }
        run(pc);
    }
};

template <class It, class Comp>
inline std::error_code quick_sort(scheduler_ref s, It first, It last, Comp &comp)
{
    static_assert(random_access_v<It>, "weft::parallel_sort takes random access iterators");
    std::size_t n;
    if (!s || !count_of(first, last, n))
        return make_error_code(errc::einval);
    if (n < 2)
        return {};
    unsigned depth = 0;
    for (std::size_t k = n; k >>= 1;)
        depth += 2;
    qsort_ctx<It, Comp> c(s.get(), &comp);
    if (n >= qsort_par_min && weft_sched_workers(s.get()) > 0 && weft_sched_current() != s.get())
        c.flat(first, n, depth);
    else
        c.par(first, n, depth, qsort_par_depth);
    c.rethrow();
    return {};
}

template <class It, class Comp>
inline std::error_code sort(scheduler_ref s, It first, It last, Comp &comp, bool stable)
{
    using T = typename std::iterator_traits<It>::value_type;
    static_assert(contiguous_v<It>, "weft: a sort takes one array: pointers, or std::vector or std::array "
                                    "iterators (pass &*first, &*first + n for another contiguous range)");
    static_assert(std::is_trivially_copyable_v<T>, "weft: a sort moves elements as bytes: T must be trivially copyable");
    std::size_t n;
    if (!count_of(first, last, n))
        return make_error_code(errc::einval);
    if (n < 2)
        return {};
    T *base = std::addressof(*first);
    sort_ctx<T, Comp> c(&comp);
    int rc = stable ? weft_parallel_sort_stable(s.get(), base, n, sizeof(T), nullptr, &decltype(c)::cmp, &c)
                    : weft_parallel_sort(s.get(), base, n, sizeof(T), &decltype(c)::cmp, &c);
    c.rethrow();
    return to_error(rc);
}

} // namespace detail

/** Sorts [first, last) by comp(a, b) (a before b; default <), in place
 * (weft_parallel_sort's plan, comp inlined: equal elements in no set
 * order), over any random access iterators whose elements swap
 * (std::iter_swap). Returns OK, or EINVAL (a reversed range, s empty).
 * comp's exception is thrown again here (the range then holds elements
 * of the input in no set order, some perhaps twice, as std::sort leaves
 * it after a throw).
 * Callable from: any thread (a task's fiber waits). */
template <class It, class Comp = std::less<>>
[[nodiscard]] inline std::error_code parallel_sort(scheduler_ref s, It first, It last, Comp &&comp = Comp())
{
    return detail::quick_sort(s, first, last, comp);
}

/** parallel_sort, stably (equal elements keep their order): weft's merge
 * sort through scratch it keeps (weft_parallel_sort_stable); ENOMEM when
 * none could be had (the range untouched). */
template <class It, class Comp = std::less<>>
[[nodiscard]] inline std::error_code parallel_stable_sort(scheduler_ref s, It first, It last, Comp &&comp = Comp())
{
    return detail::sort(s, first, last, comp, true);
}

} // namespace weft

#endif /* WEFT_CPP_SORT_HPP */

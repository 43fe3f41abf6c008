/* weft.hpp's parallel algorithms on iterators, from the header as a user
 * reads it: transform (out of place, in place, a deque), inclusive and
 * exclusive scans (with and without init, in place, floating point the
 * same at every worker count), sorts (unstable and stable by a comparator,
 * on vectors and plain arrays; the unstable one on a deque, on strings,
 * on every input shape, long enough to split in parallel, with a comparator
 * that throws deep in a split), find_if (the first match, none), exceptions
 * thrown again on the caller, and an algorithm called from tasks that
 * block on each other; at 0, 1, 2 and 8 workers. */
#include "cpptest.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using cpptest::env;
using cpptest::WORKERS;

CPP_TEST(transform_forms)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<int> in(10007);
        std::iota(in.begin(), in.end(), 0);
        std::vector<long> out(in.size());
        CHECK(!weft::parallel_transform(e.s, in.begin(), in.end(), out.begin(), [](int x) { return 3L * x; }));
        bool ok = true;
        for (std::size_t i = 0; i < in.size(); i++)
            ok = ok && out[i] == 3L * static_cast<long>(i);
        CHECK(ok);
        CHECK(!weft::parallel_transform(e.s, in.begin(), in.end(), in.begin(), [](int x) { return x + 1; }, 100));
        CHECK_EQ(in[0], 1);
        CHECK_EQ(in[10006], 10007);
        std::deque<int> dq(5000, 2);
        CHECK(!weft::parallel_transform(e.s, dq.begin(), dq.end(), dq.begin(), [](int x) { return x * x; }));
        CHECK(std::all_of(dq.begin(), dq.end(), [](int x) { return x == 4; }));
        CHECK(weft::parallel_transform(e.s, in.end(), in.begin(), out.begin(), [](int x) { return x; }) ==
              weft::errc::einval);
        CHECK(!weft::parallel_transform(e.s, in.begin(), in.begin(), out.begin(), [](int x) { return x; }));
    }
}

namespace {
struct mat2 {
    unsigned long long a[4];
    static mat2 mul(const mat2 &x, const mat2 &y)
    {
        return mat2{{x.a[0] * y.a[0] + x.a[1] * y.a[2], x.a[0] * y.a[1] + x.a[1] * y.a[3],
                     x.a[2] * y.a[0] + x.a[3] * y.a[2], x.a[2] * y.a[1] + x.a[3] * y.a[3]}};
    }
};
} // namespace

CPP_TEST(scans_match_sequential_and_are_deterministic)
{
    std::vector<double> first_fp, first_fp_g;
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<long> in(20011);
        for (std::size_t i = 0; i < in.size(); i++)
            in[i] = static_cast<long>(i % 13) - 6;
        std::vector<long> out(in.size()), want(in.size());
        auto plus = [](long a, long b) { return a + b; };
        CHECK(!weft::parallel_inclusive_scan(e.s, in.begin(), in.end(), out.begin(), plus));
        std::partial_sum(in.begin(), in.end(), want.begin());
        CHECK(out == want);
        CHECK(!weft::parallel_inclusive_scan(e.s, in.begin(), in.end(), out.begin(), plus, 100L, 64));
        for (auto &x : want)
            x += 100;
        CHECK(out == want);
        CHECK(!weft::parallel_exclusive_scan(e.s, in.begin(), in.end(), out.begin(), 5L, plus));
        long acc = 5;
        bool ok = true;
        for (std::size_t i = 0; i < in.size(); i++) {
            ok = ok && out[i] == acc;
            acc += in[i];
        }
        CHECK(ok);
        std::vector<long> inplace = in;   /* in place, exclusive: each read before its write */
        CHECK(!weft::parallel_exclusive_scan(e.s, inplace.begin(), inplace.end(), inplace.begin(), 5L, plus));
        CHECK(inplace == out);

        std::vector<double> fp(30000), fo(fp.size());
        for (std::size_t i = 0; i < fp.size(); i++)
            fp[i] = 1.0 / static_cast<double>(i + 1);
        CHECK(!weft::parallel_inclusive_scan(e.s, fp.begin(), fp.end(), fo.begin(), [](double a, double b) { return a + b; }));
        if (first_fp.empty())
            first_fp = fo;
        CHECK(std::memcmp(first_fp.data(), fo.data(), fo.size() * sizeof(double)) == 0);
        /* With init and a grain: other blocks, still the same at every worker count. */
        CHECK(!weft::parallel_inclusive_scan(e.s, fp.begin(), fp.end(), fo.begin(), [](double a, double b) { return a + b; }, 0.0, 1000));
        if (first_fp_g.empty())
            first_fp_g = fo;
        CHECK(std::memcmp(first_fp_g.data(), fo.data(), fo.size() * sizeof(double)) == 0);
        CHECK(std::fabs(fo.back() - std::accumulate(fp.begin(), fp.end(), 0.0)) < 1e-9);
        /* An associative op that does not commute (2x2 integer matrices,
         * wrapping): prefixes and folds must be taken in order. */
        std::vector<mat2> m(12345), mo(m.size()), mw(m.size());
        for (std::size_t i = 0; i < m.size(); i++)
            m[i] = (i * 2654435761u >> 7) & 1 ? mat2{{1, 1 + i % 7, 0, 1}} : mat2{{1, 0, 1 + i % 5, 1}};   /* det 1: products never vanish */
        std::partial_sum(m.begin(), m.end(), mw.begin(), mat2::mul);
        CHECK(!weft::parallel_inclusive_scan(e.s, m.begin(), m.end(), mo.begin(), mat2::mul, mat2{{1, 0, 0, 1}}, 700));
        CHECK(std::equal(mo.begin(), mo.end(), mw.begin(), [](const mat2 &a, const mat2 &b) { return std::memcmp(&a, &b, sizeof a) == 0; }));
    }
}

namespace {
struct rec {
    int key, seq;
};
} // namespace

CPP_TEST(sorts_and_find_if)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<unsigned> v(50000);
        unsigned x = 12345;
        for (auto &y : v)
            y = (x = x * 1103515245u + 12345u) >> 8;
        std::vector<unsigned> want = v;
        std::sort(want.begin(), want.end(), std::greater<>());
        CHECK(!weft::parallel_sort(e.s, v.begin(), v.end(), std::greater<>()));
        CHECK(v == want);
        CHECK(!weft::parallel_sort(e.s, v.begin(), v.end()));
        CHECK(std::is_sorted(v.begin(), v.end()));

        std::vector<rec> r(30000);
        for (int i = 0; i < 30000; i++)
            r[static_cast<std::size_t>(i)] = rec{(i * 7919) % 97, i};
        CHECK(!weft::parallel_stable_sort(e.s, r.begin(), r.end(), [](const rec &a, const rec &b) { return a.key < b.key; }));
        bool stable = true;
        for (std::size_t i = 1; i < r.size(); i++)
            stable = stable && (r[i - 1].key < r[i].key || (r[i - 1].key == r[i].key && r[i - 1].seq < r[i].seq));
        CHECK(stable);

        int arr[] = {5, 3, 9, 1};   /* pointers */
        CHECK(!weft::parallel_sort(e.s, arr, arr + 4));
        CHECK(arr[0] == 1 && arr[3] == 9);
        CHECK(weft::parallel_sort(e.s, arr + 4, arr) == weft::errc::einval);

        std::vector<int> f(100000, 0);
        f[77777] = 1;
        f[90000] = 1;
        auto it = f.end();
        CHECK(!weft::parallel_find_if(e.s, f.begin(), f.end(), [](int y) { return y == 1; }, it, 1000));
        CHECK_EQ(it - f.begin(), 77777);
        CHECK(!weft::parallel_find_if(e.s, f.begin(), f.end(), [](int y) { return y == 2; }, it));
        CHECK(it == f.end());
    }
}

/* Input shapes a quicksort's pivots and splits can trip on. */
static std::vector<long> shaped(int shape, std::size_t n)
{
    std::vector<long> v(n);
    unsigned long long x = 88172645463325252ull;
    for (std::size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        long r = static_cast<long>(x >> 1);
        switch (shape) {
        case 0: v[i] = r; break;                                              /* random */
        case 1: v[i] = static_cast<long>(i); break;                          /* sorted */
        case 2: v[i] = static_cast<long>(n - i); break;                      /* reversed */
        case 3: v[i] = 7; break;                                              /* all equal */
        case 4: v[i] = r % 3; break;                                          /* three keys */
        case 5: v[i] = static_cast<long>(i < n / 2 ? i : n - i); break;      /* organ pipe */
        default: v[i] = i % 100 == 0 ? r : static_cast<long>(i); break;     /* nearly sorted */
        }
    }
    return v;
}

CPP_TEST(sort_shapes_sizes_and_iterators)
{
    const std::size_t sizes[] = {0, 1, 2, 3, 31, 33, 127, 129, 1000, 16383, 16384, 70001, 300000};
    for (unsigned w : WORKERS) {
        env e(w);
        bool ok = true;
        for (int shape = 0; shape < 7; shape++)
            for (std::size_t n : sizes) {
                std::vector<long> v = shaped(shape, n), want = v;
                std::sort(want.begin(), want.end());
                ok = ok && !weft::parallel_sort(e.s, v.begin(), v.end());
                ok = ok && v == want;
                std::sort(want.begin(), want.end(), std::greater<>());
                ok = ok && !weft::parallel_sort(e.s, v.data(), v.data() + v.size(), std::greater<>());
                ok = ok && v == want;
            }
        CHECK(ok);
        /* Any random access iterator, any swappable element. */
        std::vector<long> src = shaped(0, 40000);
        std::deque<long> dq(src.begin(), src.end());
        CHECK(!weft::parallel_sort(e.s, dq.begin(), dq.end()));
        CHECK(std::is_sorted(dq.begin(), dq.end()));
        std::vector<std::string> str(20000);
        for (std::size_t i = 0; i < str.size(); i++)
            str[i] = "key-" + std::to_string(src[i] % 5000) + std::string(i % 40, 'x');   /* past the small-string buffer */
        std::vector<std::string> swant = str;
        std::sort(swant.begin(), swant.end());
        CHECK(!weft::parallel_sort(e.s, str.begin(), str.end()));
        CHECK(str == swant);
    }
}

CPP_TEST(sort_exception_deep_in_a_split)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<long> v = shaped(0, 200000);
        std::atomic<long> calls{0};
        bool caught = false;
        try {
            /* Past the first splits, so the throw comes from a chunk. */
            (void)weft::parallel_sort(e.s, v.begin(), v.end(), [&](long a, long b) {
                if (calls.fetch_add(1, std::memory_order_relaxed) == 1500000)
                    throw std::runtime_error("deep");
                return a < b;
            });
        } catch (const std::runtime_error &) {
            caught = true;
        }
        CHECK(caught);
        /* The contents are then as std::sort leaves them after a throw:
         * each element one of the input's (a leaf may have lost one it
         * held aside to a copy of another). */
        std::vector<long> want = shaped(0, 200000);
        std::sort(want.begin(), want.end());
        CHECK(v.size() == want.size());
        CHECK(std::all_of(v.begin(), v.end(), [&](long y) { return std::binary_search(want.begin(), want.end(), y); }));
    }
}

CPP_TEST(algorithm_exceptions)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<int> v(5000, 1), o(5000);
        int caught = 0;
        try {
            (void)weft::parallel_transform(e.s, v.begin(), v.end(), o.begin(), [](int) -> int { throw std::runtime_error("t"); });
        } catch (const std::runtime_error &) {
            caught++;
        }
        try {
            (void)weft::parallel_inclusive_scan(e.s, v.begin(), v.end(), o.begin(), [](int, int) -> int { throw std::runtime_error("s"); });
        } catch (const std::runtime_error &) {
            caught++;
        }
        try {
            (void)weft::parallel_sort(e.s, o.begin(), o.end(), [](int, int) -> bool { throw std::runtime_error("c"); });
        } catch (const std::runtime_error &) {
            caught++;
        }
        auto it = v.end();
        try {
            (void)weft::parallel_find_if(e.s, v.begin(), v.end(), [](int) -> bool { throw std::runtime_error("f"); }, it);
        } catch (const std::runtime_error &) {
            caught++;
        }
        CHECK_EQ(caught, 4);
        CHECK(it == v.end());
    }
}

CPP_TEST(algorithms_in_tasks_that_block)
{
    for (unsigned w : WORKERS) {
        env e(w);
        /* A sorts, then signals; B waits for the signal, then scans what
         * A sorted: B may start first and must block. */
        std::vector<int> data(20000);
        for (std::size_t i = 0; i < data.size(); i++)
            data[i] = static_cast<int>((data.size() - i) % 1000);
        std::vector<long> pre(data.size());
        weft::event sorted(true);
        weft::task_group tg(e.s);
        CHECK(!tg.spawn([&] {
            CHECK(!sorted.wait());
            CHECK(!weft::parallel_inclusive_scan(e.s, data.begin(), data.end(), pre.begin(),
                                                 [](long a, long b) { return a + b; }));
        }));
        CHECK(!tg.spawn([&] {
            CHECK(!weft::parallel_sort(e.s, data.begin(), data.end()));
            sorted.signal();
        }));
        CHECK(!tg.join());
        CHECK(std::is_sorted(data.begin(), data.end()));
        CHECK_EQ(pre.back(), std::accumulate(data.begin(), data.end(), 0L));
        CHECK_EQ(pre[0], data[0]);
    }
}

CPP_TEST_MAIN

/* weft.hpp's scans against the header's block definition, bitwise, for
 * doubles (with and without init, inclusive and exclusive, in place, the
 * default grain and given ones) at 0, 1, 2 and 8 workers; and the calls
 * the header makes unambiguous: a grain without init is a
 * weft::grain_size, an integer after op is init when it has the input's
 * value type, and refused at compile time when it has another (it would
 * read as a grain). */
#include "cpptest.hpp"

#include <cstring>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

using cpptest::env;
using cpptest::WORKERS;

namespace {

/* Can parallel_inclusive_scan(s, V*, V*, V*, std::plus<>, X) be called? */
template <class V, class X, class = void>
struct scan_with : std::false_type {};
template <class V, class X>
struct scan_with<V, X,
                 std::void_t<decltype(weft::parallel_inclusive_scan(
                     std::declval<weft::scheduler_ref>(), std::declval<V *>(), std::declval<V *>(),
                     std::declval<V *>(), std::plus<>(), std::declval<X>()))>> : std::true_type {};

static_assert(scan_with<double, double>::value, "an init of the value type");
static_assert(scan_with<double, weft::grain_size>::value, "a grain without init");
static_assert(scan_with<long, long>::value, "an integer init of the value type");
static_assert(!scan_with<double, int>::value, "an int after op on doubles: init or grain? refused");
static_assert(!scan_with<double, std::size_t>::value, "a size_t after op on doubles: refused");
static_assert(!scan_with<long, int>::value, "an int init for longs: refused (write 5L)");
static_assert(!scan_with<double, std::size_t>::value, "the old grain position: refused");

/* The header's blocks: grain-sized (0: n / 1024 rounded up), made whole
 * multiples of the grain when there would be more than 1024. */
std::size_t block_step(std::size_t n, std::size_t grain)
{
    std::size_t step = grain ? grain : (n + 1023) / 1024;
    std::size_t nb = (n + step - 1) / step;
    if (nb > 1024)
        step *= (nb + 1023) / 1024;
    return step;
}

/* The definition: output i of block k is (init op) prefix_k op block k's
 * fold up to i (exclusive: up to i - 1; its first output is (init op)
 * prefix_k); prefix_k + 1 = prefix_k op sum_k; block 0's prefix is none. */
std::vector<double> reference(const std::vector<double> &x, std::size_t grain, std::optional<double> init,
                              bool inclusive)
{
    std::vector<double> out(x.size());
    std::size_t step = block_step(x.size(), grain);
    std::optional<double> prefix;
    for (std::size_t lo = 0; lo < x.size(); lo += step) {
        std::size_t hi = std::min(x.size(), lo + step);
        std::optional<double> pe = prefix;
        if (init)
            pe = prefix ? *init + *prefix : *init;
        double acc = x[lo];
        out[lo] = inclusive ? (pe ? *pe + acc : acc) : *pe;
        for (std::size_t i = lo + 1; i < hi; i++) {
            if (!inclusive)
                out[i] = *pe + acc;
            acc += x[i];
            if (inclusive)
                out[i] = pe ? *pe + acc : acc;
        }
        prefix = prefix ? *prefix + acc : acc;
    }
    return out;
}

bool same_bits(const std::vector<double> &a, const std::vector<double> &b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

} // namespace

CPP_TEST(double_scans_are_bitwise_the_block_definition)
{
    std::vector<double> x(30011);
    std::uint64_t r = 17;
    for (std::size_t i = 0; i < x.size(); i++) {   /* mixed signs and magnitudes: a grouping shows */
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (static_cast<double>(r >> 11) / 9007199254740992.0 - 0.3) * static_cast<double>(1u << (i % 11)) / 32;
    }
    const std::size_t grains[] = {0, 1, 64, 700, 30011};
    for (unsigned w : WORKERS) {
        env e(w);
        for (std::size_t g : grains) {
            std::vector<double> out(x.size());
            CHECK(!weft::parallel_inclusive_scan(e.s, x.begin(), x.end(), out.begin(), std::plus<>(), weft::grain_size(g)));
            CHECK(same_bits(out, reference(x, g, std::nullopt, true)));
            CHECK(!weft::parallel_inclusive_scan(e.s, x.begin(), x.end(), out.begin(), std::plus<>(), 2.5, g));
            CHECK(same_bits(out, reference(x, g, 2.5, true)));
            CHECK(!weft::parallel_exclusive_scan(e.s, x.begin(), x.end(), out.begin(), 2.5, std::plus<>(), g));
            CHECK(same_bits(out, reference(x, g, 2.5, false)));
            std::vector<double> inplace = x;   /* each element read before its write */
            CHECK(!weft::parallel_exclusive_scan(e.s, inplace.begin(), inplace.end(), inplace.begin(), 2.5,
                                                 [](double a, double b) { return a + b; }, g));
            CHECK(same_bits(inplace, out));
            inplace = x;
            CHECK(!weft::parallel_inclusive_scan(e.s, inplace.begin(), inplace.end(), inplace.begin(),
                                                 [](double a, double b) { return a + b; }, weft::grain_size(g)));
            CHECK(same_bits(inplace, reference(x, g, std::nullopt, true)));
        }
    }
}

CPP_TEST(an_integer_after_op_is_init_of_the_value_type)
{
    for (unsigned w : WORKERS) {
        env e(w);
        std::vector<long> v(5000, 1), out(v.size());
        CHECK(!weft::parallel_inclusive_scan(e.s, v.begin(), v.end(), out.begin(), std::plus<>(), 700L));
        bool ok = true;
        for (std::size_t i = 0; i < v.size(); i++)
            ok = ok && out[i] == 700 + static_cast<long>(i) + 1;
        CHECK(ok);
        CHECK(!weft::parallel_inclusive_scan(e.s, v.begin(), v.end(), out.begin(), std::plus<>(), weft::grain_size(700)));
        ok = true;
        for (std::size_t i = 0; i < v.size(); i++)
            ok = ok && out[i] == static_cast<long>(i) + 1;
        CHECK(ok);
        /* A reversed range is refused whatever the grain. */
        CHECK(weft::parallel_inclusive_scan(e.s, v.end(), v.begin(), out.begin(), std::plus<>(), weft::grain_size(7)) ==
              weft::errc::einval);
    }
}

CPP_TEST_MAIN

// A C++ program outside weft that uses its installed C++ face, weft.hpp:
// the consumer checks (run.sh) build it through find_package(weft) and
// weft::weft, and run it.
#include <atomic>
#include <cstdio>
#include <vector>

#include <weft.hpp>

int main()
{
    weft::scheduler s(2);
    if (!s) {
        std::fprintf(stderr, "use_weft_cpp: scheduler: %s\n", s.error().message().c_str());
        return 1;
    }
    std::atomic<int> spawned{0};
    for (int i = 0; i < 10; i++)
        weft::throw_if(s.spawn([&spawned] { spawned++; }));
    weft::graph g;
    int order = 0, a_at = 0, b_at = 0;
    auto [a, b] = g.emplace([&] { a_at = ++order; }, [&] { b_at = ++order; });
    a.precede(b);
    weft::throw_if(s.run(g));
    weft::throw_if(g.wait());
    std::vector<int> v(1000, 3);
    long sum = 0;
    weft::throw_if(weft::parallel_reduce(s, v.begin(), v.end(), sum, 0L, [](long x, long y) { return x + y; }));
    weft::throw_if(s.wait_idle());
    if (spawned != 10 || a_at != 1 || b_at != 2 || sum != 3000) {
        std::fprintf(stderr, "use_weft_cpp: wrong: %d %d %d %ld\n", spawned.load(), a_at, b_at, sum);
        return 1;
    }
    std::printf("use_weft_cpp: weft.hpp over weft %d.%d.%d: ok\n", WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR,
                WEFT_VERSION_PATCH);
    return 0;
}

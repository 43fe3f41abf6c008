#!/usr/bin/env bash
# weft's build driver.
#
#   tools/build.sh deps           install the Debian packages weft needs (as root)
#   tools/build.sh demo           the demo's deps only, then build (quietly, in build/demo)
#                                 and run the demo, and say whether the machine was quiet
#   tools/build.sh test           deps, then each preset's CMake workflow (configure,
#                                 build, ctest: CMakePresets.json "workflowPresets"),
#                                 with a JUnit file in build/PRESET/weft-junit.xml
#   tools/build.sh install-check  install weft in a temporary prefix and use it
#                                 through find_package, pkg-config, add_subdirectory
#   tools/build.sh docs           the demo's deps and Doxygen, then the HTML API
#                                 reference in build/docs/docs/html (opt-in: no other
#                                 command needs Doxygen)
#
# Environment:
#   CI=true       warnings are errors (-DWEFT_WERROR=ON), and a preset whose
#                 toolchain is missing fails instead of being skipped
#   WEFT_PRESETS  presets for `test`, in order (default: release asan tsan aarch64 windows; also debug)
#
# `test` ends with one line per preset and then "N passed, N failed": the
# tests of all presets summed, where a preset that cannot be configured or
# built, or whose toolchain is missing in CI, counts as one failure. The
# exit status is non-zero if anything failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What the demo needs, as Debian 12 names it: a C toolchain, CMake and
# Ninja, Concurrency Kit (the core's header-only atomics), and pkg-config
# for the README's install section.
demo_packages=(
    build-essential cmake ninja-build pkg-config
    libck-dev                         # the core (Concurrency Kit)
)
# Everything weft's build, tests, benchmarks and checks use.
debian_packages=(
    "${demo_packages[@]}" git python3
    clang libclang-rt-14-dev          # the asan and tsan presets
    libcriterion-dev                  # tests
    libbenchmark-dev libtbb-dev libomp-dev libuv1-dev   # benchmarks (libuv: echo_uv)
    python3-matplotlib                # benchmarks/report.py's plots
    valgrind                          # client-request headers (optional in the build); run.py's instruction counts
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user   # the aarch64 preset
    gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 wine    # the windows preset (tests under Wine)
    spin                              # models/
)
# The HTML API reference only (`docs`); not in the list above, so `deps`
# and `test` never install it.
docs_packages=(doxygen python3)
all_presets=(release asan tsan aarch64 windows)
# Presets WEFT_PRESETS may name besides those: not run by default.
extra_presets=(debug)

case ${CI:-} in
    "" | 0 | false | no) ci=0 ;;
    *) ci=1 ;;
esac

note() { printf '%s\n' "build.sh: $*" >&2; }

# ---- deps --------------------------------------------------------------------

# deps [strict|soft|demo|docs]: installs the missing packages when root: all
# of them, or with "demo" only those the demo needs, with "docs" those and
# Doxygen, with apt's output in a
# log shown only on failure. Without root it prints the command to run
# and fails, or with "soft", "demo" or "docs" warns and goes on so that configure
# can say what is missing.
deps() {
    local mode=${1:-strict} missing=() p status
    local wanted=("${debian_packages[@]}")
    if [[ $mode == demo ]]; then wanted=("${demo_packages[@]}"); fi
    if [[ $mode == docs ]]; then wanted=("${demo_packages[@]}" "${docs_packages[@]}"); fi
    if ! command -v dpkg-query >/dev/null 2>&1; then
        note "dpkg-query not found: this script installs Debian packages only; install these yourself:"
        note "  ${wanted[*]}"
        [[ $mode == strict ]] || return 0
        return 1
    fi
    for p in "${wanted[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || missing+=("$p")
    done
    if ((${#missing[@]} == 0)); then
        note "all ${#wanted[@]} Debian packages present"
        return 0
    fi
    local install=(apt-get install -y --no-install-recommends "${missing[@]}")
    if [[ $(id -u) -ne 0 ]]; then
        note "missing Debian packages: ${missing[*]}"
        note "as root, run:"
        note "  apt-get update && ${install[*]}"
        [[ $mode == strict ]] || return 0
        return 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if [[ $mode != demo && $mode != docs ]]; then
        note "installing: ${missing[*]}"
        apt-get update
        "${install[@]}"
        return
    fi
    local log
    log=$(mktemp "${TMPDIR:-/tmp}/weft-apt.XXXXXX")
    note "installing: ${missing[*]} (apt's output: $log)"
    if ! { apt-get update && "${install[@]}"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        note "apt-get failed; its whole output is in $log"
        return 1
    fi
    rm -f "$log"
}

# ---- demo --------------------------------------------------------------------

# The demo builds in build/demo, the release preset with the tests and
# benchmarks off: those need packages the demo does not install, and
# build/release stays as `test` and a build by hand leave it.
demo_dir=build/demo

# cpu_ticks: prints "busy total" from /proc/stat's first line, in clock
# ticks, all CPUs together. Time stolen by the hypervisor counts as busy:
# it is a CPU the demo did not get.
cpu_ticks() {
    local _cpu user nice system idle iowait irq softirq steal _rest
    read -r _cpu user nice system idle iowait irq softirq steal _rest </proc/stat
    echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}

# own_ticks: the CPU time of this shell's finished children (the demo's
# programs, once cmake has waited for them), in clock ticks.
own_ticks() {
    local st
    st=$(cat "/proc/$$/stat")
    st=${st##*) }          # the fields after "(comm)": state is field 3
    read -r -a st <<<"$st"
    echo "$((st[13] + st[14]))"   # cutime, cstime: fields 16 and 17
}

demo() {
    deps demo
    local log=$demo_dir/weft-demo-build.log
    mkdir -p "$demo_dir"
    note "building the demo in $demo_dir (output in $log)"
    if ! { cmake --preset release -B "$demo_dir" \
               -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF &&
           cmake --build "$demo_dir" --target demo_programs; } >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        note "the build failed; its whole output is in $log"
        return 1
    fi

    local cpus load
    cpus=$(getconf _NPROCESSORS_ONLN)
    read -r load _ </proc/loadavg
    echo "demo: $cpus CPUs, load average $load (the 1-minute average, which counts any build just before)"
    local before own_before after own_after out status=0
    before=$(cpu_ticks)
    own_before=$(own_ticks)
    out=$demo_dir/weft-demo.log
    # ninja's own progress lines ("[0/1] ...") go to the log only.
    cmake --build "$demo_dir" --target demo 2>&1 | tee "$out" |
        sed -u '/^\[[0-9]*\/[0-9]*\] /d' || status=$?
    after=$(cpu_ticks)
    own_after=$(own_ticks)
    if ((status != 0)); then
        note "the demo failed (exit $status)"
        return "$status"
    fi

    # What others used: all busy time in the interval less the demo's own,
    # over the interval's length (ticks of all CPUs / CPUs), in CPUs.
    local busy0 total0 busy1 total1 others worst
    read -r busy0 total0 <<<"$before"
    read -r busy1 total1 <<<"$after"
    others=$(awk -v b="$((busy1 - busy0))" -v o="$((own_after - own_before))" -v t="$((total1 - total0))" -v c="$cpus" \
        'BEGIN { x = t > 0 ? (b - o) / t * c : 0; if (x < 0) x = 0; printf "%.2f", x }')
    worst=$(grep -Eo 'spread [0-9]+%' "$out" | tr -dc '0-9\n' | sort -n | tail -n 1 || true)
    worst=${worst:-0}
    read -r load _ </proc/loadavg
    # Too busy: other programs held more than a quarter of the CPUs on
    # average while the demo ran. The load average is printed, not judged:
    # it trails by a minute and counts the demo's own build and threads.
    # Too spread: some program's middle half of runs lay more than 50%
    # apart around its median; with 11 runs that leaves the median unsure
    # by about 14%, and a speedup, a ratio of two, by about 20%.
    local facts="other programs used $others of $cpus CPUs, load average $load, runs spread up to $worst%"
    if awk -v x="$others" -v c="$cpus" 'BEGIN { exit !(x > c / 4) }'; then
        echo "demo: TOO BUSY to compare ($facts): the speedups above are the machine's, not weft's; run it again on an idle machine"
    elif ((worst > 50)); then
        echo "demo: TOO SPREAD to compare ($facts): a speedup above may be off by a fifth or more; run it again on an idle machine"
    else
        echo "demo: quiet enough to compare ($facts)"
    fi
}

# ---- test --------------------------------------------------------------------

# preflight PRESET: sets $why to what is missing for PRESET, or empty.
preflight() {
    why=""
    local probe
    for cmd in cmake:cmake ninja:ninja-build; do
        if ! command -v "${cmd%%:*}" >/dev/null 2>&1; then
            why="${cmd%%:*} not found (Debian package ${cmd#*:})"
            return
        fi
    done
    case $1 in
        release | debug)
            command -v gcc >/dev/null 2>&1 || why="gcc not found (Debian package build-essential)"
            ;;
        asan | tsan)
            if ! command -v clang >/dev/null 2>&1; then
                why="clang not found (Debian package clang)"
                return
            fi
            local flag=-fsanitize=address,undefined
            if [[ $1 == tsan ]]; then flag=-fsanitize=thread; fi
            probe=$(mktemp -d)
            echo 'int main(void) { return 0; }' >"$probe/p.c"
            if ! clang "$flag" "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
                why="clang cannot link $flag (Debian package libclang-rt-14-dev)"
            fi
            rm -rf "$probe"
            ;;
        aarch64)
            if [[ ! -f cmake/aarch64-linux-gnu.cmake ]]; then
                why="its toolchain file cmake/aarch64-linux-gnu.cmake is not in this checkout"
            elif ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
                why="aarch64-linux-gnu-gcc not found (Debian packages gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"
            elif ! command -v qemu-aarch64 >/dev/null 2>&1; then
                why="qemu-aarch64 not found (Debian package qemu-user)"
            fi
            ;;
        windows)
            if [[ ! -f cmake/x86_64-w64-mingw32.cmake ]]; then
                why="its toolchain file cmake/x86_64-w64-mingw32.cmake is not in this checkout"
            elif ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
                why="x86_64-w64-mingw32-gcc not found (Debian package gcc-mingw-w64-x86-64)"
            elif ! command -v wine64 >/dev/null 2>&1 && ! command -v wine >/dev/null 2>&1; then
                why="wine64 not found (Debian packages wine64 wine)"
            fi
            ;;
    esac
    return 0
}

# One workflow per preset (cmake --workflow --preset P: configure, build,
# then ctest with the test preset's jobs and JUnit file), its output kept
# in build/P/weft-workflow.log. In CI the preset is configured first with
# -DWEFT_WERROR=ON, which the workflow's own configure keeps (a cache
# variable the preset does not set).
run_tests() {
    deps soft
    local presets
    read -r -a presets <<<"${WEFT_PRESETS:-${all_presets[*]}}"
    local p known
    for p in "${presets[@]}"; do
        known=0
        for k in "${all_presets[@]}" "${extra_presets[@]}"; do
            if [[ $p == "$k" ]]; then known=1; fi
        done
        if ((!known)); then
            note "unknown preset '$p' in WEFT_PRESETS (known: ${all_presets[*]} ${extra_presets[*]})"
            return 2
        fi
    done

    local total_passed=0 total_failed=0 start_all=$SECONDS
    local summary=() start line n m log status step
    for p in "${presets[@]}"; do
        start=$SECONDS
        echo
        echo "======== $p"
        preflight "$p"
        if [[ -n $why ]]; then
            if ((ci)); then
                note "$p: FAILED: $why"
                summary+=("$(printf '%-8s FAILED   %s (%d s)' "$p" "toolchain: $why" $((SECONDS - start)))")
                total_failed=$((total_failed + 1))
            else
                note "$p: SKIPPED: $why"
                summary+=("$(printf '%-8s SKIPPED  %s' "$p" "$why")")
            fi
            continue
        fi
        if ((ci)) && ! cmake --preset "$p" -DWEFT_WERROR=ON; then
            summary+=("$(printf '%-8s FAILED   configure (%d s)' "$p" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
            continue
        fi
        mkdir -p "build/$p"
        log="build/$p/weft-workflow.log"
        status=0
        cmake --workflow --preset "$p" 2>&1 | tee "$log" || status=$?
        # The step the workflow reached: configure, build or test.
        step=$(grep -Eo '^Executing workflow step [0-9]+ of [0-9]+: [a-z]+' "$log" | tail -n 1 || true)
        step=${step##* }
        if [[ $step != test ]]; then
            summary+=("$(printf '%-8s FAILED   %s (%d s)' "$p" "${step:-configure}" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
            continue
        fi
        line=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)
        if [[ -n $line ]]; then
            read -r n _ _ _ _ m <<<"$line"
        elif grep -q 'No tests were found' "$log"; then
            n=0 m=0
        else
            n="" m=""
        fi
        if [[ -z $m ]]; then
            summary+=("$(printf '%-8s FAILED   ctest ended without a summary (exit %d) (%d s)' "$p" "$status" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
        elif ((m == 0)); then
            summary+=("$(printf '%-8s FAILED   no tests found (%d s)' "$p" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
        else
            total_passed=$((total_passed + m - n))
            total_failed=$((total_failed + n))
            if ((n == 0 && status != 0)); then
                # ctest failed though every test passed (e.g. an error after
                # the tests): count it once.
                total_failed=$((total_failed + 1))
                n="$n (+1: ctest exit $status)"
            fi
            if [[ $n == 0 ]]; then
                summary+=("$(printf '%-8s ok       %d passed, 0 failed (%d s)' "$p" "$m" $((SECONDS - start)))")
            else
                summary+=("$(printf '%-8s FAILED   %d passed, %s failed (%d s)' "$p" $((m - ${n%% *})) "$n" $((SECONDS - start)))")
            fi
        fi
    done

    echo
    echo "======== summary"
    printf '%s\n' "${summary[@]}"
    echo "total time $((SECONDS - start_all)) s"
    echo "$total_passed passed, $total_failed failed"
    ((total_failed == 0))
}

# ---- install-check -------------------------------------------------------------

install_check() {
    bash tests/consumer/run.sh
}

# ---- docs ------------------------------------------------------------------------

# The API reference, generated from the public headers and docs/ by the
# `docs` target (WEFT_DOCS=ON); any Doxygen warning fails it.
docs() {
    deps docs
    local dir=build/docs
    cmake --preset release -B "$dir" -DWEFT_DOCS=ON \
        -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_EXAMPLES=OFF
    cmake --build "$dir" --target docs
    note "the API reference: $dir/docs/html/index.html"
}

# ---- main ------------------------------------------------------------------------

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
}

case ${1:-} in
    deps) deps strict ;;
    demo) demo ;;
    test) run_tests ;;
    install-check) install_check ;;
    docs) docs ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
esac

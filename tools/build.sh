#!/usr/bin/env bash
# weft's build driver.
#
#   tools/build.sh deps           install the Debian packages weft needs (as root)
#   tools/build.sh demo           deps, then build and run the demo (release preset)
#   tools/build.sh test           deps, then build and test every preset
#   tools/build.sh install-check  install weft in a temporary prefix and use it
#                                 through find_package, pkg-config, add_subdirectory
#
# Environment:
#   CI=true       warnings are errors (-DWEFT_WERROR=ON), and a preset whose
#                 toolchain is missing fails instead of being skipped
#   WEFT_PRESETS  presets for `test`, in order (default: release asan tsan aarch64)
#
# `test` ends with one line per preset and then "N passed, N failed": the
# tests of all presets summed, where a preset that cannot be configured or
# built, or whose toolchain is missing in CI, counts as one failure. The
# exit status is non-zero if anything failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Everything weft's build, tests, benchmarks and checks use, as Debian 12
# names it.
debian_packages=(
    build-essential cmake ninja-build pkg-config git python3
    clang libclang-rt-14-dev          # the asan and tsan presets
    libck-dev                         # the core (Concurrency Kit)
    libcriterion-dev                  # tests
    libbenchmark-dev libtbb-dev libomp-dev   # benchmarks
    python3-matplotlib                # benchmarks/report.py's plots
    valgrind                          # client-request headers (optional in the build); run.py's instruction counts
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user   # the aarch64 preset
    spin                              # models/
)
all_presets=(release asan tsan aarch64)

case ${CI:-} in
    "" | 0 | false | no) ci=0 ;;
    *) ci=1 ;;
esac

note() { printf '%s\n' "build.sh: $*" >&2; }

# ---- deps --------------------------------------------------------------------

# deps [soft]: installs missing packages when root. Without root it prints the
# command to run and fails, or with "soft" (demo, test) warns and goes on so
# that configure can say what is missing.
deps() {
    local mode=${1:-strict} missing=() p status
    if ! command -v dpkg-query >/dev/null 2>&1; then
        note "dpkg-query not found: this script installs Debian packages only; install these yourself:"
        note "  ${debian_packages[*]}"
        [[ $mode == soft ]] && return 0
        return 1
    fi
    for p in "${debian_packages[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        [[ $status == "install ok installed" ]] || missing+=("$p")
    done
    if ((${#missing[@]} == 0)); then
        note "all ${#debian_packages[@]} Debian packages present"
        return 0
    fi
    local install=(apt-get install -y --no-install-recommends "${missing[@]}")
    if [[ $(id -u) -ne 0 ]]; then
        note "missing Debian packages: ${missing[*]}"
        note "as root, run:"
        note "  apt-get update && ${install[*]}"
        [[ $mode == soft ]] && return 0
        return 1
    fi
    note "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    "${install[@]}"
}

# ---- demo --------------------------------------------------------------------

has_target() {  # has_target PRESET TARGET (after configure)
    cmake --build --preset "$1" --target help 2>/dev/null |
        grep -Eq "^$2: |^\.\.\. $2\$"
}

demo() {
    deps soft
    cmake --preset release
    if has_target release demo; then
        cmake --build --preset release --target demo
    else
        cmake --build --preset release
        note "the release build has no 'demo' target yet: built everything, nothing to run"
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
    esac
    return 0
}

run_tests() {
    deps soft
    local presets
    read -r -a presets <<<"${WEFT_PRESETS:-${all_presets[*]}}"
    local p known
    for p in "${presets[@]}"; do
        known=0
        for k in "${all_presets[@]}" debug; do
            if [[ $p == "$k" ]]; then known=1; fi
        done
        if ((!known)); then
            note "unknown preset '$p' in WEFT_PRESETS (known: ${all_presets[*]} debug)"
            return 2
        fi
    done

    local configure_args=()
    if ((ci)); then configure_args+=(-DWEFT_WERROR=ON); fi

    local total_passed=0 total_failed=0 start_all=$SECONDS
    local summary=() start line n m log status
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
        if ! cmake --preset "$p" "${configure_args[@]}"; then
            summary+=("$(printf '%-8s FAILED   configure (%d s)' "$p" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
            continue
        fi
        if ! cmake --build --preset "$p"; then
            summary+=("$(printf '%-8s FAILED   build (%d s)' "$p" $((SECONDS - start)))")
            total_failed=$((total_failed + 1))
            continue
        fi
        log="build/$p/weft-ctest.log"
        status=0
        ctest --preset "$p" --output-on-failure -j2 2>&1 | tee "$log" || status=$?
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

# ---- main ------------------------------------------------------------------------

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
}

case ${1:-} in
    deps) deps strict ;;
    demo) demo ;;
    test) run_tests ;;
    install-check) install_check ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
esac

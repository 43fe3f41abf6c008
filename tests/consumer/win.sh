#!/usr/bin/env bash
# Consumer checks of the Windows build (the windows preset's `consumer_win`
# test): does weft work for a mingw-w64 project that uses it?
#
# Builds weft from this checkout with the mingw-w64 toolchain file in a
# temporary directory (tests and examples off), installs it into a
# temporary prefix, and checks:
#   - weft.dll depends on Windows' own DLLs only (objdump -p: no libgcc,
#     winpthread or other mingw DLL a user would have to ship);
#   - weft.dll exports the weft_ calls and nothing else, as many as the
#     headers declare with WEFT_API (nm on the import library, and the
#     DLL's export table);
#   - find_package(weft) from a mingw consumer (tests/consumer/find_package)
#     configures and builds, and its programs run under Wine: the static
#     one (weft::weft), the shared one (weft::weft_shared) with weft.dll
#     beside it, and the C++ one (weft.hpp through weft::weft).
# Each check prints PASS or FAIL; the last line is "N passed, N failed"
# and the exit status is non-zero if any failed.
#
# Environment: WINEPREFIX (the build tree's prefix, set by ctest),
# WEFT_CONSUMER_KEEP=1 keeps the temporary directory.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
toolchain=$root/cmake/x86_64-w64-mingw32.cmake
triple=x86_64-w64-mingw32
export WINEDEBUG=${WINEDEBUG:--all}
wine=$root/tools/wine-run.sh   # not plain wine: see there

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-consumer-win.XXXXXX")
cleanup() {
    if [[ ${WEFT_CONSUMER_KEEP:-0} == 1 ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT
mkdir -p "$tmp/log"

generator=()
if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
fi

passed=0
failed=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); }
quiet() {
    local log="$tmp/log/$1.log"
    shift
    if "$@" >"$log" 2>&1; then
        return 0
    fi
    tail -n 30 "$log" >&2
    return 1
}

prefix=$tmp/prefix
if ! quiet build cmake -S "$root" -B "$tmp/build" "${generator[@]}" \
        -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
        -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_EXAMPLES=OFF -DWEFT_BUILD_BENCHMARKS=OFF \
        -DWEFT_INSTALL=ON -DCMAKE_INSTALL_PREFIX="$prefix" ||
   ! quiet build2 cmake --build "$tmp/build" ||
   ! quiet install cmake --install "$tmp/build"; then
    fail build "weft did not configure, build or install with mingw-w64"
    echo "$passed passed, $failed failed"
    exit 1
fi
pass "weft built and installed with mingw-w64"

dll=$prefix/bin/weft.dll
implib=$prefix/lib/libweft.dll.a
if [[ -f $dll && -f $implib && -f $prefix/lib/libweft.a ]]; then
    pass "weft.dll, libweft.dll.a and libweft.a installed"
else
    fail install-layout "missing: $(ls "$prefix/bin" "$prefix/lib" 2>&1 | tr '\n' ' ')"
fi

# ---- what weft.dll needs ---------------------------------------------------
deps=$($triple-objdump -p "$dll" | sed -n 's/^[[:space:]]*DLL Name: //p' | tr -d '\r')
other=$(grep -viE '^(kernel32|msvcrt|ws2_32|advapi32|user32|ntdll|bcrypt|api-ms-win-[a-z0-9-]+)\.dll$' <<<"$deps" || true)
if [[ -z $other ]]; then
    pass "weft.dll needs Windows' own DLLs only: $(tr '\n' ' ' <<<"$deps")"
else
    fail dll-deps "weft.dll needs $(tr '\n' ' ' <<<"$other")"
fi

# ---- what it exports ---------------------------------------------------------
declared=$(cat "$root"/include/weft.h "$root"/include/weft/*.h |
           grep -oE 'WEFT_API[^;(]*[^a-zA-Z0-9_](weft_[a-zA-Z0-9_]+)[[:space:]]*\(' |
           grep -oE 'weft_[a-zA-Z0-9_]+[[:space:]]*\($' | tr -d '( ' | sort -u)
exported=$($triple-objdump -p "$dll" |
           sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' |
           sed -n 's/^[[:space:]]*\[[[:space:]]*[0-9]*\][[:space:]]*//p' | sort -u)
not_weft=$(grep -v '^weft_' <<<"$exported" || true)
if [[ -z $not_weft && -n $exported ]]; then
    pass "weft.dll exports weft_ names only ($(wc -l <<<"$exported"))"
else
    fail dll-exports "also exported: $(head -n 10 <<<"$not_weft" | tr '\n' ' ')"
fi
if [[ $declared == "$exported" ]]; then
    pass "weft.dll exports exactly the $(wc -l <<<"$declared") WEFT_API calls of the headers"
else
    fail dll-export-set "declared but not exported: $(comm -23 <(echo "$declared") <(echo "$exported") | tr '\n' ' ');" \
         "exported but not declared: $(comm -13 <(echo "$declared") <(echo "$exported") | tr '\n' ' ')"
fi
nm_other=$($triple-nm -g --defined-only "$implib" 2>/dev/null |
           awk '$2 == "T" { print $3 }' | grep -v '^weft_' || true)
if [[ -z $nm_other ]]; then
    pass "nm: the import library defines weft_ functions only"
else
    fail implib "also defined: $(head -n 10 <<<"$nm_other" | tr '\n' ' ')"
fi

# ---- find_package(weft) from a mingw consumer ----------------------------------
b=$tmp/find_package
if quiet fp-configure cmake -S "$here/find_package" -B "$b" "${generator[@]}" \
        -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
        -Dweft_DIR="$prefix/lib/cmake/weft" &&
   quiet fp-build cmake --build "$b"; then
    pass "find_package(weft): a mingw consumer configures and builds"
    if quiet fp-static "$wine" "$b/use_static.exe"; then
        pass "find_package: use_static (weft::weft) runs under Wine"
    else
        fail find_package-static "use_static failed to run"
    fi
    imports=$($triple-objdump -p "$b/use_shared.exe")
    if grep -qi 'DLL Name: weft.dll' <<<"$imports"; then
        pass "find_package: use_shared links weft.dll"
    else
        fail find_package-shared "use_shared does not import weft.dll"
    fi
    cp "$dll" "$b/"
    if quiet fp-shared "$wine" "$b/use_shared.exe"; then
        pass "find_package: use_shared (weft::weft_shared) runs under Wine with weft.dll beside it"
    else
        fail find_package-shared "use_shared failed to run"
    fi
    if quiet fp-graph "$wine" "$b/use_graph.exe"; then
        pass "find_package: use_graph (<weft/graph.h>) runs under Wine"
    else
        fail find_package-graph "use_graph failed to run"
    fi
    if [[ -f $b/use_cpp.exe ]] && quiet fp-cpp "$wine" "$b/use_cpp.exe"; then
        pass "find_package: use_cpp (<weft.hpp>, mingw's g++) runs under Wine"
    else
        fail find_package-cpp "use_cpp was not built or failed to run"
    fi
else
    fail find_package "the mingw consumer did not configure or build"
fi

echo "$passed passed, $failed failed"
((failed == 0))

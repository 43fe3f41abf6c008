#!/usr/bin/env bash
# The public headers as a user's strict build sees them, in the source
# tree (run.sh checks the installed copy the same way):
#  - include/weft.h and each include/weft/*.h alone, as C11 with -Wall
#    -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror and as C++17
#    with -Wall -Wextra -Wpedantic -Werror (compile only);
#  - include/weft.hpp and each include/weft/cpp/*.hpp alone, as C++17
#    with and without -fno-exceptions (compile only);
#  - use_all.c, a program using every topic through <weft.h>, built both
#    ways under the same flags, linked against libweft.a and run.
# Prints PASS or FAIL per check, then "N passed, N failed"; exits 1 if any
# failed. The `headers` test runs it.
#
# Usage: headers.sh INCLUDE_DIR LIBWEFT_A
# Environment: CC (default cc), CXX (default c++).
set -euo pipefail

if (($# != 2)); then
    echo "usage: $0 INCLUDE_DIR LIBWEFT_A" >&2
    exit 2
fi
inc=$1
lib=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CC=${CC:-cc}
CXX=${CXX:-c++}
cflags=(-std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror)
cxxflags=(-std=c++17 -Wall -Wextra -Wpedantic -Werror)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); }

# shown CMD...: runs CMD; on failure prints its output, indented.
shown() {
    local out
    if out=$("$@" 2>&1); then
        return 0
    fi
    printf '    %s\n' "${out//$'\n'/$'\n'    }"
    return 1
}

if ! command -v "$CXX" >/dev/null 2>&1; then
    fail c++ "no C++ compiler '$CXX' (set CXX): the C++17 half cannot be checked"
fi

# Each header alone: a translation unit holding only its #include, with
# one declaration after it so that -Wpedantic has no empty unit to flag.
headers=("$inc/weft.h")
for h in "$inc"/weft/*.h; do
    headers+=("$h")
done
bad_c="" bad_cxx=""
for h in "${headers[@]}"; do
    name=${h#"$inc"/}
    printf '#include <%s>\nint weft_probe;\n' "$name" >"$tmp/probe.c"
    if ! shown "$CC" "${cflags[@]}" -I"$inc" -fsyntax-only "$tmp/probe.c"; then
        bad_c+=" $name"
    fi
    if command -v "$CXX" >/dev/null 2>&1 &&
       ! shown "$CXX" "${cxxflags[@]}" -I"$inc" -fsyntax-only -x c++ "$tmp/probe.c"; then
        bad_cxx+=" $name"
    fi
done
if [[ -n $bad_c ]]; then
    fail headers-c11 "not clean alone as C11:$bad_c"
else
    pass "headers-c11 (${#headers[@]} headers, each alone: ${cflags[*]})"
fi
if command -v "$CXX" >/dev/null 2>&1; then
    if [[ -n $bad_cxx ]]; then
        fail headers-c++17 "not clean alone as C++17:$bad_cxx"
    else
        pass "headers-c++17 (${#headers[@]} headers, each alone: ${cxxflags[*]})"
    fi
fi

# The C++ face: weft.hpp and each of its parts alone, as C++17 with and
# without exceptions (compile only).
if command -v "$CXX" >/dev/null 2>&1 && [[ -e $inc/weft.hpp ]]; then
    hpp=("$inc/weft.hpp")
    for h in "$inc"/weft/cpp/*.hpp; do
        hpp+=("$h")
    done
    bad=""
    for h in "${hpp[@]}"; do
        name=${h#"$inc"/}
        printf '#include <%s>\nint weft_probe;\n' "$name" >"$tmp/probe.cpp"
        if ! shown "$CXX" "${cxxflags[@]}" -Wshadow -I"$inc" -fsyntax-only "$tmp/probe.cpp" ||
           ! shown "$CXX" "${cxxflags[@]}" -Wshadow -fno-exceptions -I"$inc" -fsyntax-only "$tmp/probe.cpp"; then
            bad+=" $name"
        fi
    done
    if [[ -n $bad ]]; then
        fail weft.hpp "not clean alone as C++17 (with and without exceptions):$bad"
    else
        pass "weft.hpp (${#hpp[@]} C++ headers, each alone: ${cxxflags[*]} -Wshadow, with and without -fno-exceptions)"
    fi
fi

# The program, both ways, linked and run.
if ! shown "$CC" "${cflags[@]}" -I"$inc" "$here/use_all.c" "$lib" -lpthread -o "$tmp/use_all_c"; then
    fail use_all-c11 "use_all.c does not build as C11 against $lib"
elif ! shown "$tmp/use_all_c"; then
    fail use_all-c11 "use_all (C11) failed"
else
    pass "use_all-c11 (every topic through <weft.h>, built, linked with libweft.a, run)"
fi
if command -v "$CXX" >/dev/null 2>&1; then
    if ! shown "$CXX" "${cxxflags[@]}" -I"$inc" -x c++ "$here/use_all.c" -x none "$lib" \
            -lpthread -o "$tmp/use_all_cxx"; then
        fail use_all-c++17 "use_all.c does not build as C++17 against $lib"
    elif ! shown "$tmp/use_all_cxx"; then
        fail use_all-c++17 "use_all (C++17) failed"
    else
        pass "use_all-c++17 (the same program as C++17, linked with libweft.a, run)"
    fi
fi

echo "$passed passed, $failed failed"
((failed == 0))

#!/usr/bin/env bash
# Consumer checks: does weft work for a project that uses it?
#
# Builds weft from this checkout in a temporary directory the way the demo
# does (tests and benchmarks off, only the demo's programs built), installs
# it into a temporary prefix, then uses it the ways a user can:
# find_package(weft) (static, shared, and a consumer installed in turn),
# pkg-config (shared, run with no LD_LIBRARY_PATH thanks to the rpath that
# weft.pc adds outside the loader's directories, and static), and
# add_subdirectory, and builds examples/ as a project of its own against it.
# It also runs the README's "Install and use" commands as written, each
# into a fresh prefix, and checks that a DESTDIR-staged /usr install gets a
# weft.pc with no rpath.
# Each of find_package, pkg-config and add_subdirectory also builds and
# runs use_graph.c, which includes a topic header, <weft/graph.h>, directly;
# find_package also builds and runs use_weft.cpp, a C++17 program on
# weft.hpp (where a C++ compiler is).
# It also checks what the shared library exports (and that it wants no
# executable stack), what the static one defines, and the installed
# headers under strict flags (weft.h, and each topic header alone through
# headers.sh, which also builds use_all.c against the installed libweft.a). Each check prints PASS or FAIL; the
# last line is "N passed, N failed" and the exit status is non-zero if any
# failed.
#
# Environment: CC (default cc), CXX (default c++; for the header check),
# WEFT_CONSUMER_KEEP=1 keeps the temporary directory for inspection.
# Needs: cmake, a C compiler, pkg-config, binutils (nm, readelf), python3.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
export CC=${CC:-cc}
CXX=${CXX:-c++}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-consumer.XXXXXX")
cleanup() {
    if [[ ${WEFT_CONSUMER_KEEP:-0} == 1 ]]; then
        echo "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT
trap 'echo "run.sh: unexpected failure at line $LINENO" >&2' ERR
mkdir -p "$tmp/log"

generator=()
if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
fi

passed=0
failed=0
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); }

# quiet NAME CMD...: runs CMD with its output in $tmp/log/NAME.log and shows
# the end of that log only if CMD fails.
quiet() {
    local log="$tmp/log/$1.log"
    shift
    if "$@" >"$log" 2>&1; then
        return 0
    fi
    echo "---- failed: $*"
    tail -n 40 "$log" | sed 's/^/    /'
    echo "----"
    return 1
}

# oneline LINES: the lines joined by spaces, for messages.
oneline() { paste -sd" " - <<<"$1"; }

# needed FILE: the shared objects FILE asks the dynamic loader for.
needed() { readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# ---- the installed copy ----------------------------------------------------

# The build is the demo's (tools/build.sh demo): only demo_programs, so a
# library that the demo did not build would make the install fail here.
prefix="$tmp/prefix"
wbuild="$tmp/weft-build"
if quiet weft-configure cmake -S "$root" -B "$wbuild" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DWEFT_BUILD_TESTS=OFF \
        -DWEFT_BUILD_BENCHMARKS=OFF -DWEFT_BUILD_EXAMPLES=ON &&
   quiet weft-build cmake --build "$wbuild" --target demo_programs &&
   quiet weft-install cmake --install "$wbuild" --prefix "$prefix"; then
    pass "install (after building only the demo's programs, as tools/build.sh demo does)"
else
    fail install "weft did not configure, build (target demo_programs) or install; nothing else can be checked"
    echo "$passed passed, $failed failed"
    exit 1
fi

pc=$(find "$prefix" -name weft.pc -print -quit)
pcdir=$(dirname "${pc:-$prefix/lib/pkgconfig/weft.pc}")
libdir=$(dirname "$pcdir")
# The version macros live in one of the public headers (weft/defs.h since
# the split into topic headers): take them from whichever defines them.
vheader=$(grep -l '^#define WEFT_VERSION_MAJOR ' "$root/include/weft.h" "$root"/include/weft/*.h | head -n 1)
major=$(sed -n 's/^#define WEFT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$vheader")
minor=$(sed -n 's/^#define WEFT_VERSION_MINOR \([0-9]*\)$/\1/p' "$vheader")
patch=$(sed -n 's/^#define WEFT_VERSION_PATCH \([0-9]*\)$/\1/p' "$vheader")
version="$major.$minor.$patch"

# ---- layout: headers, both libraries, soname links, package files ---------

check_layout() {
    local f missing=""
    for f in "$prefix/include/weft.h" "$libdir/libweft.a" "$libdir/libweft.so" \
             "$libdir/cmake/weft/weftConfig.cmake" \
             "$libdir/cmake/weft/weftConfigVersion.cmake" \
             "$libdir/cmake/weft/weftTargets.cmake" "$pcdir/weft.pc"; do
        [[ -e $f ]] || missing+=" ${f#"$prefix"/}"
    done
    # Every topic header of the checkout, under include/weft/, and the C++
    # face: weft.hpp and its parts under include/weft/cpp/.
    for f in "$root"/include/weft/*.h; do
        [[ -e $prefix/include/weft/${f##*/} ]] || missing+=" include/weft/${f##*/}"
    done
    [[ -e $prefix/include/weft.hpp ]] || missing+=" include/weft.hpp"
    for f in "$root"/include/weft/cpp/*.hpp; do
        [[ -e $prefix/include/weft/cpp/${f##*/} ]] || missing+=" include/weft/cpp/${f##*/}"
    done
    if [[ -n $missing ]]; then
        fail layout "not installed:$missing"
        return
    fi
    # libweft.so -> libweft.so.<soversion> (the soname) -> libweft.so.<version>
    local soname link real
    soname=$(readelf -dW "$libdir/libweft.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    link=$(readlink "$libdir/libweft.so")
    real=$(readlink "$libdir/$soname" 2>/dev/null || true)
    if [[ $link != "$soname" || $real != "libweft.so.$version" || ! -f $libdir/$real ]]; then
        fail layout "soname chain: libweft.so -> '$link', soname '$soname' -> '$real', want -> libweft.so.$version"
        return
    fi
    pass "layout (headers, libweft.a, libweft.so -> $soname -> $real, CMake and pkg-config files)"
}

# ---- exported symbols ------------------------------------------------------
# The API is what the installed headers tag WEFT_API. The shared library
# must export nothing else: no weft__ internals, no CK, no test seams.

check_symbols() {
    local api exported extra absent headers
    headers=("$prefix/include/weft.h")
    if [[ -d $prefix/include/weft ]]; then
        headers+=("$prefix"/include/weft/*.h)
    fi
    api=$(cat "${headers[@]}" |
          sed -n 's/.*WEFT_API[^(]*[^A-Za-z0-9_(]\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*(.*/\1/p' |
          sort -u)
    exported=$(nm -D --defined-only "$libdir/libweft.so" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u)
    extra=$(comm -13 <(echo "$api") <(echo "$exported"))
    absent=$(comm -23 <(printf 'weft_err_name\nweft_strerror\n') <(echo "$exported"))
    if [[ -n $extra ]]; then
        fail symbols "libweft.so exports names that are not WEFT_API: $(oneline "$extra")"
    elif [[ -n $absent ]]; then
        fail symbols "libweft.so does not export: $(oneline "$absent")"
    else
        pass "symbols (libweft.so exports $(echo "$exported" | wc -l) names, all WEFT_API)"
    fi
}

# A static archive cannot hide names, so they must at least be weft's: API
# names, or weft__ internals with hidden visibility (so a shared library
# that links libweft.a does not re-export them).
check_static_names() {
    local foreign exposed
    foreign=$(nm -g --defined-only "$libdir/libweft.a" | awk 'NF >= 3 && $3 !~ /^weft_/ { print $3 }' | sort -u)
    exposed=$(readelf -sW "$libdir/libweft.a" |
              awk '$5 == "GLOBAL" && $7 != "UND" && $8 ~ /^weft__/ && $6 != "HIDDEN" { print $8 }' | sort -u)
    if [[ -n $foreign ]]; then
        fail static-names "libweft.a defines globals outside weft's namespace: $(oneline "$foreign")"
    elif [[ -n $exposed ]]; then
        fail static-names "libweft.a has internals with default visibility: $(oneline "$exposed")"
    else
        pass "static-names (libweft.a: only weft_ globals, weft__ ones hidden)"
    fi
}

# Every .S must say its stack is not executable, or the linker makes the
# whole library ask for an executable stack.
check_exec_stack() {
    local flags
    flags=$(readelf -lW "$libdir/libweft.so" | awk '$1 == "GNU_STACK" { print $(NF - 1) }')
    if [[ $flags == RW ]]; then
        pass "exec-stack (libweft.so's GNU_STACK is RW)"
    else
        fail exec-stack "libweft.so's GNU_STACK is '${flags:-absent}', want RW"
    fi
}

# ---- the installed header under a strict user's flags --------------------

check_header() {
    local probe="$tmp/header_probe"
    printf '#include <weft.h>\nint weft_probe(void);\nint weft_probe(void) { return WEFT_OK; }\n' >"$probe.c"
    cp "$probe.c" "$probe.cpp"
    if ! quiet header-c "$CC" -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
            -Werror -fsyntax-only -I"$prefix/include" "$probe.c"; then
        fail header "weft.h does not compile cleanly as C11 with -Wall -Wextra -Wpedantic -Werror"
        return
    fi
    if ! command -v "$CXX" >/dev/null 2>&1; then
        pass "header (C11 strict; no C++ compiler '$CXX' for the C++ half)"
        return
    fi
    if ! quiet header-cxx "$CXX" -std=c++11 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
            -I"$prefix/include" "$probe.cpp"; then
        fail header "weft.h does not compile cleanly as C++11"
        return
    fi
    pass "header (weft.h clean as C11 and C++11 under -Wall -Wextra -Wpedantic -Werror)"
}

# The installed topic headers, each alone, as C11 and C++17, and use_all.c
# (every topic through <weft.h>) linked with the installed libweft.a: the
# source tree's `headers` test, pointed at the prefix.
check_topic_headers() {
    if ! CXX=$CXX quiet header-topics bash "$here/headers.sh" "$prefix/include" "$libdir/libweft.a"; then
        fail topic-headers "tests/consumer/headers.sh failed on the installed headers"
    else
        pass "topic-headers (installed weft.h and $(find "$prefix/include/weft" -name '*.h' | wc -l) topic headers each alone as C11 and C++17 strict; use_all.c built both ways against the installed libweft.a and run)"
    fi
}

# ---- versions agree: weft.h, weft.pc, the CMake package -------------------

check_version() {
    local pcv
    pcv=$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion weft 2>/dev/null || echo "none")
    if [[ $pcv != "$version" ]]; then
        fail version "${vheader#"$root"/} says $version, weft.pc says $pcv"
    elif ! grep -q "PACKAGE_VERSION \"$version\"" "$libdir/cmake/weft/weftConfigVersion.cmake"; then
        fail version "weftConfigVersion.cmake does not say $version"
    else
        pass "version ($version in ${vheader#"$root"/}, weft.pc and weftConfigVersion.cmake)"
    fi
}

# ---- find_package(weft) ----------------------------------------------------

check_find_package() {
    local b="$tmp/find_package"
    if ! quiet fp-configure cmake -S "$here/find_package" -B "$b" "${generator[@]}" \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
            -DWEFT_WANT_VERSION="$major.$minor" ||
       ! quiet fp-build cmake --build "$b"; then
        fail find_package-static "consumer did not configure or build"
        fail find_package-shared "consumer did not configure or build"
        return
    fi
    if ! quiet fp-run-static "$b/use_static"; then
        fail find_package-static "use_static (weft::weft) failed to run"
    elif needed "$b/use_static" | grep -q '^libweft'; then
        fail find_package-static "use_static links libweft.so: weft::weft is not the static library"
    else
        pass "find_package-static (find_package(weft $major.$minor), weft::weft, runs, no libweft.so needed)"
    fi
    # The build tree's RPATH finds the library: no LD_LIBRARY_PATH here.
    if ! quiet fp-run-shared "$b/use_shared"; then
        fail find_package-shared "use_shared (weft::weft_shared) failed to run"
    elif ! needed "$b/use_shared" | grep -q '^libweft\.so\.'; then
        fail find_package-shared "use_shared does not need libweft.so"
    else
        pass "find_package-shared (weft::weft_shared, runs, needs $(needed "$b/use_shared" | grep '^libweft'))"
    fi
    # Installed, use_shared keeps the path to libweft.so only through
    # INSTALL_RPATH_USE_LINK_PATH, as the README tells.
    if ! quiet fp-install cmake --install "$b" --prefix "$tmp/fp-app"; then
        fail find_package-installed "the consumer did not install"
    elif ! quiet fp-run-installed env -u LD_LIBRARY_PATH "$tmp/fp-app/bin/use_shared"; then
        fail find_package-installed "the installed use_shared (INSTALL_RPATH_USE_LINK_PATH) failed to run"
    else
        pass "find_package-installed (use_shared installed with INSTALL_RPATH_USE_LINK_PATH runs, no LD_LIBRARY_PATH)"
    fi
    if ! quiet fp-run-graph "$b/use_graph"; then
        fail find_package-topic "use_graph (<weft/graph.h> alone, weft::weft) failed to run"
    else
        pass "find_package-topic (use_graph.c includes <weft/graph.h> directly; builds with weft::weft and runs)"
    fi
    # The C++ face, weft.hpp, through the same package.
    if [[ ! -x $b/use_cpp ]]; then
        if command -v "$CXX" >/dev/null 2>&1; then
            fail find_package-c++ "use_cpp (weft.hpp) was not built though a C++ compiler ('$CXX') exists"
        else
            pass "find_package-c++ (skipped: no C++ compiler '$CXX')"
        fi
    elif ! quiet fp-run-cpp "$b/use_cpp"; then
        fail find_package-c++ "use_cpp (<weft.hpp>, weft::weft) failed to run"
    else
        pass "find_package-c++ (use_weft.cpp includes <weft.hpp>; C++17 strict, weft::weft, runs)"
    fi
}

# ---- pkg-config ------------------------------------------------------------

check_pkg_config() {
    local inc cflags libs slibs
    export PKG_CONFIG_PATH="$pcdir"
    inc=$(pkg-config --variable=includedir weft 2>/dev/null || true)
    if [[ -z $inc || $(cd "$inc" 2>/dev/null && pwd -P) != $(cd "$prefix/include" && pwd -P) ]]; then
        fail pkg-config-shared "weft.pc's includedir '$inc' is not the install prefix's"
        fail pkg-config-static "weft.pc's includedir '$inc' is not the install prefix's"
        unset PKG_CONFIG_PATH
        return
    fi
    cflags=$(pkg-config --cflags weft)
    libs=$(pkg-config --libs weft)
    slibs=$(pkg-config --static --libs weft)
    # shellcheck disable=SC2086 # the flags are meant to split
    if ! quiet pc-shared-build "$CC" "$here/use_weft.c" $cflags $libs -o "$tmp/pc_shared"; then
        fail pkg-config-shared "cc use_weft.c \$(pkg-config --cflags --libs weft) failed"
    elif ! needed "$tmp/pc_shared" | grep -q '^libweft\.so\.'; then
        fail pkg-config-shared "the program does not need libweft.so"
    elif ! quiet pc-shared-run env -u LD_LIBRARY_PATH "$tmp/pc_shared"; then
        # The prefix is outside the loader's directories: weft.pc's rpath
        # is all that finds libweft.so.
        fail pkg-config-shared "the program does not run without LD_LIBRARY_PATH (weft.pc's Libs: '$libs')"
    else
        pass "pkg-config-shared (cc \$(pkg-config --cflags --libs weft): '$libs', runs with no LD_LIBRARY_PATH)"
    fi
    # Both libraries sit in one directory and the linker prefers the shared
    # one, so a static link asks for it with -Bstatic; --static adds what
    # libweft.a itself needs (Libs.private).
    # shellcheck disable=SC2086
    if ! quiet pc-static-build "$CC" "$here/use_weft.c" $cflags \
            -Wl,-Bstatic $slibs -Wl,-Bdynamic -o "$tmp/pc_static"; then
        fail pkg-config-static "cc use_weft.c -Wl,-Bstatic \$(pkg-config --static --libs weft) -Wl,-Bdynamic failed"
    elif ! quiet pc-static-run "$tmp/pc_static"; then
        fail pkg-config-static "the program failed to run"
    elif needed "$tmp/pc_static" | grep -q '^libweft'; then
        fail pkg-config-static "the program needs libweft.so"
    else
        pass "pkg-config-static (-Wl,-Bstatic \$(pkg-config --static --libs weft): '$slibs', runs, no libweft.so needed)"
    fi
    # shellcheck disable=SC2086
    if ! quiet pc-graph-build "$CC" "$here/use_graph.c" $cflags $libs -o "$tmp/pc_graph"; then
        fail pkg-config-topic "cc use_graph.c (<weft/graph.h> alone) \$(pkg-config --cflags --libs weft) failed"
    elif ! quiet pc-graph-run env -u LD_LIBRARY_PATH "$tmp/pc_graph"; then
        fail pkg-config-topic "use_graph failed to run"
    else
        pass "pkg-config-topic (use_graph.c includes <weft/graph.h> directly; builds with \$(pkg-config --cflags --libs weft) and runs)"
    fi
    unset PKG_CONFIG_PATH
}

# weft.pc's rpath is for prefixes outside the loader's directories only: a
# package staged with DESTDIR for /usr gets none.
check_pc_system() {
    local stage="$tmp/stage" pcs
    if ! DESTDIR="$stage" quiet pc-stage cmake --install "$wbuild" --prefix /usr; then
        fail pkg-config-system "DESTDIR=... cmake --install --prefix /usr failed"
        return
    fi
    pcs=$(find "$stage" -name weft.pc -print -quit)
    if [[ -z $pcs ]]; then
        fail pkg-config-system "no weft.pc under the staged /usr"
    elif grep -q rpath "$pcs"; then
        fail pkg-config-system "the staged /usr weft.pc has an rpath: $(grep '^Libs:' "$pcs")"
    elif ! grep -q rpath "$pcdir/weft.pc"; then
        fail pkg-config-system "the prefix's weft.pc has no rpath, so this check proves nothing"
    else
        pass "pkg-config-system (staged for /usr: '$(grep '^Libs:' "$pcs")'; in the prefix: '$(grep '^Libs:' "$pcdir/weft.pc")')"
    fi
}

# ---- the README's install section, as written --------------------------------
# Each line of its install block runs in a stand-in for the checkout
# (build/demo and build/release are this build) with a fresh HOME, so into
# a fresh "$HOME/weft"; then the program under "Using it" is built there
# with the section's CMake project and with its pkg-config lines, and each
# build must print fib(30).

check_readme() {
    local r="$tmp/readme" n=0 line out
    mkdir -p "$r/checkout/build"
    ln -s "$wbuild" "$r/checkout/build/demo"
    ln -s "$wbuild" "$r/checkout/build/release"
    if ! python3 - "$root/README.md" "$r" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
out = sys.argv[2]
def blocks(section):
    m = re.search(r"^## " + re.escape(section) + r"\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        sys.exit("README.md has no section '## " + section + "'")
    return re.findall(r"^```(\w+)\n(.*?)^```", m.group(1), re.S | re.M)
c = [b for lang, b in blocks("Using it") if lang == "c"]
inst = blocks("Install and use")
cm = [b for lang, b in inst if lang == "cmake"]
sh = [b for lang, b in inst if lang == "sh"]
if len(c) < 1 or len(cm) != 1 or len(sh) != 3:
    sys.exit("README.md: want a C block under Using it, and one cmake and three sh blocks under Install and use")
open(out + "/app.c", "w").write(c[0])
open(out + "/CMakeLists.txt", "w").write(cm[0])
for i, b in enumerate(sh):
    open(out + "/sh%d" % i, "w").write(b)
EOF
    then
        fail readme "the README's blocks could not be read"
        return
    fi
    while IFS= read -r line; do
        [[ -z ${line// /} || $line == \#* ]] && continue
        n=$((n + 1))
        local home="$r/home$n" app="$r/home$n/app"
        mkdir -p "$app"
        cp "$r/app.c" "$r/CMakeLists.txt" "$app/"
        if ! (cd "$r/checkout" && HOME=$home quiet "readme-install$n" bash -euc "$line"); then
            fail readme "install line $n failed: $line"
            return
        fi
        if ! out=$(cd "$app" && HOME=$home bash -euc "$(cat "$r/sh1")" 2>&1) ||
           [[ $out != *"fib(30) = 832040"* ]]; then
            fail readme "the CMake way after install line $n: $(tail -n 5 <<<"$out" | paste -sd' ' -)"
            return
        fi
        if ! out=$(cd "$app" && HOME=$home env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH \
                   bash -euc "$(cat "$r/sh2")" 2>&1) ||
           [[ $(grep -c 'fib(30) = 832040' <<<"$out") != 2 ]]; then
            fail readme "the pkg-config way after install line $n: $(tail -n 5 <<<"$out" | paste -sd' ' -)"
            return
        fi
    done <"$r/sh0"
    if ((n == 0)); then
        fail readme "the install block has no command"
    else
        pass "readme (Install and use as written: $n install lines, each into a fresh \$HOME/weft, then the sample built with its CMake project and both pkg-config lines, each printing fib(30))"
    fi
}

# ---- add_subdirectory ------------------------------------------------------

check_subdir() {
    local b="$tmp/subdir"
    if ! quiet sub-configure cmake -S "$here/subdir" -B "$b" "${generator[@]}" \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
            -DWEFT_SOURCE_DIR="$root"; then
        fail add_subdirectory-build "the vendoring project did not configure"
        fail add_subdirectory-flags "not checked: no configure"
        fail add_subdirectory-scope "not checked: no configure"
        return
    fi
    if ! quiet sub-build cmake --build "$b"; then
        fail add_subdirectory-build "the vendoring project did not build (a leaked weft flag breaks subdir_user.c)"
    elif ! quiet sub-run "$b/subdir_user"; then
        fail add_subdirectory-build "subdir_user failed to run"
    else
        pass "add_subdirectory-build (subdir_user.c, which trips -Wshadow/-Wstrict-prototypes, builds under its own -Wall -Werror and runs)"
    fi
    if [[ ! -x $b/subdir_graph ]]; then
        fail add_subdirectory-topic "subdir_graph (<weft/graph.h> alone) was not built"
    elif ! quiet sub-run-graph "$b/subdir_graph"; then
        fail add_subdirectory-topic "subdir_graph failed to run"
    else
        pass "add_subdirectory-topic (use_graph.c includes <weft/graph.h> directly; builds with the vendored weft::weft and runs)"
    fi

    # The consumer's compile command carries none of weft's private flags,
    # while weft's own sources in the same build do (so the check has teeth).
    local verdict
    if verdict=$(python3 - "$b/compile_commands.json" <<'EOF'
import json, shlex, sys

def die(why):
    print(why)
    sys.exit(1)

entries = json.load(open(sys.argv[1]))
def args_of(suffix):
    for e in entries:
        if e["file"].endswith(suffix):
            return e["arguments"] if "arguments" in e else shlex.split(e["command"])
    die("no compile command for " + suffix)

private = ("-Wshadow", "-Wstrict-prototypes", "-Wno-unused-parameter",
           "-fsanitize", "-fvisibility")
user = args_of("/subdir_user.c")
leaked = sorted({a for a in user for p in private if a.startswith(p)})
if leaked:
    die("weft's flags reached subdir_user.c: " + " ".join(leaked))
own = args_of("/src/base/alloc.c")
for want in ("-Wshadow", "-fvisibility=hidden"):
    if want not in own:
        die("weft's own alloc.c lacks " + want + ": the check proves nothing")
print("subdir_user.c has none of " + " ".join(private) + "; weft's alloc.c has -Wshadow -fvisibility=hidden")
EOF
    ); then
        pass "add_subdirectory-flags ($verdict)"
    else
        fail add_subdirectory-flags "${verdict:-python3 failed}"
    fi

    # Tests, benchmarks, examples and install rules stay off for a subproject.
    local cache="$b/CMakeCache.txt" on="" opt d
    for opt in WEFT_BUILD_TESTS WEFT_BUILD_BENCHMARKS WEFT_BUILD_EXAMPLES WEFT_INSTALL; do
        grep -q "^$opt:BOOL=OFF$" "$cache" || on+=" $opt"
    done
    for d in tests benchmarks examples; do
        if [[ -e $b/weft/$d ]]; then
            on+=" weft/$d(built)"
        fi
    done
    if [[ -n $on ]]; then
        fail add_subdirectory-scope "on in subdirectory mode:$on"
    else
        pass "add_subdirectory-scope (tests, benchmarks, examples and install rules off; nothing built under weft/tests)"
    fi
}

# ---- the examples, against the installed copy -------------------------------
# examples/ configures on its own with find_package(weft) and builds every
# example that needs weft.h only; each then runs briefly and checks its own
# result (a wrong one exits non-zero).

check_examples() {
    local b="$tmp/examples" run
    if ! quiet ex-configure cmake -S "$root/examples" -B "$b" "${generator[@]}" \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" ||
       ! quiet ex-build cmake --build "$b"; then
        fail examples "examples/ did not configure or build against the installed weft"
        return
    fi
    local runs=("fib 20 2" "parallel_sum 100000 2" "frame_jobs 5 2")
    if [[ -x $b/frame_loop ]]; then
        runs+=("frame_loop 5 2")   # the C++ one, where a C++ compiler is
    fi
    for run in "${runs[@]}"; do
        # shellcheck disable=SC2086 # the program and its arguments
        if ! quiet "ex-${run%% *}" "$b"/$run; then
            fail examples "'$run' failed (built against the installed weft)"
            return
        fi
    done
    pass "examples (examples/ alone: find_package(weft), ${#runs[@]} of them build, run and check out: ${runs[*]%% *})"
}

check_layout
check_symbols
check_static_names
check_exec_stack
check_header
check_topic_headers
check_version
check_find_package
check_pkg_config
check_pc_system
check_readme
check_subdir
check_examples

echo "$passed passed, $failed failed"
if ((failed)); then
    exit 1
fi

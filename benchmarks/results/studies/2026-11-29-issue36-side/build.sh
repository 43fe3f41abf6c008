#!/bin/bash
# build.sh SRC OUT: builds every program of this study into OUT.
#   SRC: a folder holding the peers' sources as fetched, unchanged:
#        taskflow+taskflow, dpuyda+scheduling, dougbinks+enkiTS,
#        google+marl (marl built there into SRC/marl-build with its own
#        CMake: Release, no tests or examples)
#   weft: the installed one, found by pkg-config (PKG_CONFIG_PATH set
#        to PREFIX/lib/pkgconfig after `cmake --install build/release
#        --prefix PREFIX`). oneTBB and OpenMP: Debian's (libtbb-dev,
#        libgomp). Compilers: gcc/g++, -O2 (C11, C++20).
set -e
SRC=$1; OUT=$2; HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
WEFT="$(pkg-config --cflags --libs weft)"
EN=$SRC/dougbinks+enkiTS/src
CC="gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -I$HERE"
CXX="g++ -O2 -std=c++20 -Wall -I$HERE"
for p in rw pin spawn cond pp; do $CC "$HERE/w_$p.c" -o "$OUT/w_$p" $WEFT -pthread; done
$CC "$HERE/w_idle.c" -o "$OUT/w_idle" $WEFT -pthread
$CXX -isystem "$SRC/taskflow+taskflow" "$HERE/tf_rw.cpp" -o "$OUT/tf_rw" -pthread
$CXX -isystem "$SRC/taskflow+taskflow" "$HERE/tf_spawn.cpp" -o "$OUT/tf_spawn" -pthread
$CXX -isystem "$SRC/taskflow+taskflow" "$HERE/tf_cond.cpp" -o "$OUT/tf_cond" -pthread
$CXX -isystem "$SRC/dpuyda+scheduling/include" "$HERE/sc_rw.cpp" -o "$OUT/sc_rw" -pthread
$CXX -isystem "$SRC/dpuyda+scheduling/include" "$HERE/sc_spawn.cpp" -o "$OUT/sc_spawn" -pthread
mkdir -p "$OUT/enki"
[ -f "$OUT/enki/ts.o" ] || g++ -O2 -std=c++17 -c "$EN/TaskScheduler.cpp" -o "$OUT/enki/ts.o"
[ -f "$OUT/enki/ts_c.o" ] || g++ -O2 -std=c++17 -c "$EN/TaskScheduler_c.cpp" -o "$OUT/enki/ts_c.o"
for p in rw pin spawn; do $CXX -isystem "$EN" "$HERE/en_$p.cpp" "$OUT/enki/ts.o" -o "$OUT/en_$p" -pthread; done
for p in pin spawn; do
    $CC -isystem "$EN" -c "$HERE/en_${p}_c.c" -o "$OUT/enki/en_${p}_c.o"
    g++ "$OUT/enki/en_${p}_c.o" "$OUT/enki/ts_c.o" "$OUT/enki/ts.o" -o "$OUT/en_${p}_c" -pthread
done
MARL="-isystem $SRC/google+marl/include $SRC/marl-build/libmarl.a"
$CXX "$HERE/marl_spawn.cpp" $MARL -o "$OUT/marl_spawn" -pthread
$CXX "$HERE/marl_pp.cpp" $MARL -o "$OUT/marl_pp" -pthread
for p in rw spawn cond; do $CXX "$HERE/tbb_$p.cpp" -o "$OUT/tbb_$p" -ltbb -pthread; done
for p in rw spawn; do $CC -fopenmp "$HERE/omp_$p.c" -o "$OUT/omp_$p"; done
echo built

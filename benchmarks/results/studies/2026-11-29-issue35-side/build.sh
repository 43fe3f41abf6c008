#!/bin/bash
# build.sh weft OUT | build.sh peers TASKFLOW_SRC OUT
#   weft:  w_kit (C) and w_kit_cpp (weft.hpp) into OUT, against the weft
#          pkg-config finds (PKG_CONFIG_PATH at PREFIX/lib/pkgconfig after
#          `cmake --install build/release --prefix PREFIX`), the shared
#          library through weft.pc's rpath.
#   peers: tf_kit (Taskflow, header only, from TASKFLOW_SRC: its source
#          as fetched, unchanged) and tbb_kit (Debian's libtbb-dev) into
#          OUT; built once and reused against any weft.
# gcc/g++ -O2 (C11, C++20), as the issue-36 side-by-side.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
CC="gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I$HERE"
CXX="g++ -O2 -std=c++20 -Wall -Wextra -I$HERE"
case $1 in
weft)
    OUT=$2; mkdir -p "$OUT"
    WEFT="$(pkg-config --cflags --libs weft)"
    $CC "$HERE/w_kit.c" -o "$OUT/w_kit" $WEFT -pthread -lm
    $CXX "$HERE/w_kit_cpp.cpp" -o "$OUT/w_kit_cpp" $WEFT -pthread
    ;;
peers)
    TF=$2; OUT=$3; mkdir -p "$OUT"
    $CXX -isystem "$TF" "$HERE/tf_kit.cpp" -o "$OUT/tf_kit" -pthread
    $CXX "$HERE/tbb_kit.cpp" -o "$OUT/tbb_kit" -ltbb -pthread
    ;;
*)
    echo "usage: build.sh weft OUT | build.sh peers TASKFLOW_SRC OUT" >&2; exit 2 ;;
esac

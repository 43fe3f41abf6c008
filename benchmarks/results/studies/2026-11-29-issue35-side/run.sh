#!/bin/bash
# run.sh WEFT_COMMIT_OR_PREFIX REPS OUT [ROW...]: the whole side-by-side
# against one weft, in one command.
#   WEFT_COMMIT_OR_PREFIX: a commit of the weft repository (this script's
#     own, or WEFT_REPO), unpacked with `git archive` into a scratch
#     folder, built (release preset, library only) and installed there;
#     or the prefix of a weft already installed.
#   REPS: repetitions (each runs every cell once, in turn).
#   OUT: <OUT>.tsv (one line per process) and <OUT>.md (the tables).
#   ROW: fib fibgroup chain wave pipe algo (default: all).
# Environment: KIT_WORK, the scratch folder (weft builds under
# KIT_WORK/weft-<commit>, the peers' programs in KIT_WORK/peers, built
# once and reused); TASKFLOW_SRC, Taskflow's fetched source (needed only
# the first time, to build the peers).
set -e
[ $# -ge 3 ] || { echo "usage: run.sh WEFT_COMMIT_OR_PREFIX REPS OUT [ROW...]" >&2; exit 2; }
REF=$1; REPS=$2; OUT=$3; shift 3
ROWS=("$@"); [ ${#ROWS[@]} -gt 0 ] || ROWS=(fib fibgroup chain wave pipe algo)
HERE=$(cd "$(dirname "$0")" && pwd)
W=${KIT_WORK:?set KIT_WORK to a scratch folder}
mkdir -p "$W"
T0=$(date +%s)
if [ -f "$REF/lib/pkgconfig/weft.pc" ]; then
    PREFIX=$(cd "$REF" && pwd); TAG=prefix-$(echo "$PREFIX" | md5sum | cut -c1-8)
else
    REPO=${WEFT_REPO:-$(git -C "$HERE" rev-parse --show-toplevel)}
    C=$(git -C "$REPO" rev-parse --verify "$REF^{commit}")
    TAG=weft-${C:0:10}; PREFIX=$W/$TAG/prefix
    if [ ! -f "$PREFIX/lib/pkgconfig/weft.pc" ]; then
        rm -rf "$W/$TAG"; mkdir -p "$W/$TAG/src"
        git -C "$REPO" archive "$C" | tar -x -C "$W/$TAG/src"
        (cd "$W/$TAG/src" && cmake --preset release -DWEFT_BUILD_TESTS=OFF -DWEFT_BUILD_BENCHMARKS=OFF \
             -DWEFT_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_LIBDIR=lib >/dev/null &&
         cmake --build build/release >/dev/null &&
         cmake --install build/release --prefix "$PREFIX" >/dev/null)
    fi
fi
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
"$HERE/build.sh" weft "$W/$TAG/bin"
if [ ! -x "$W/peers/tf_kit" ] || [ ! -x "$W/peers/tbb_kit" ]; then
    "$HERE/build.sh" peers "${TASKFLOW_SRC:?set TASKFLOW_SRC to the Taskflow source}" "$W/peers"
fi
echo "weft $TAG, built in $(( $(date +%s) - T0 )) s" >&2
rm -f "${OUT}.tsv"
python3 "$HERE/run.py" "$W/$TAG/bin" "$W/peers" "${OUT}.tsv" "$REPS" "${ROWS[@]}"
python3 "$HERE/summarize.py" "${OUT}.tsv" > "${OUT}.md"
echo "wall $(( $(date +%s) - T0 )) s" >&2

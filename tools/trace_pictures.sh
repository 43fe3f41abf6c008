#!/usr/bin/env bash
# Redraws the README's pictures of a run (docs/*.png) from fresh traces.
#
#   tools/trace_pictures.sh [BUILD_DIR]       default: build/release
#
# Needs a built tree (cmake --preset release && cmake --build build/release
# makes one), a python3 with matplotlib (Debian: python3-matplotlib; the
# script prefers /usr/bin/python3, which has it there) and, for the graph
# picture, Graphviz's dot (Debian: graphviz; skipped with a note without
# it). Writes:
#
#   docs/minimake_graph.png    minimake's sample project as weft's DOT dump (-d) draws it
#   docs/trace_minimake.png    the same build's trace, -j 3
#   docs/trace_frames.png      frame_jobs, frames 10 to 12, 2 workers and the main thread
#
# Each program runs a few times and the pictures show the run whose graph
# runs took least time: the one other programs on the machine disturbed
# least (timings differ from run to run and machine to machine: commit
# the pictures of a quiet machine). The traces and DOT files stay in
# BUILD_DIR/trace-pictures/ for ui.perfetto.dev.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
build=$(cd "$build" 2>/dev/null && pwd || echo "$build")   # absolute: the sample builds in a folder of its own
cd "$root"
ex=$build/examples
for prog in minimake frame_jobs; do
    if [[ ! -x $ex/$prog ]]; then
        echo "trace_pictures.sh: no $ex/$prog; build first: cmake --preset release && cmake --build $build" >&2
        exit 1
    fi
done
python=python3
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    python=/usr/bin/python3
fi

work=$build/trace-pictures
rm -rf "$work"
mkdir -p "$work" docs

# span TRACE: how long its graph runs took, in µs (a run whose begin is
# not in the file, begun on a thread that is not recorded, from the
# file's first event).
span_py='
import json, sys
ev = json.loads(open(sys.argv[1], "rb").read().decode("utf-8", "replace"))["traceEvents"]
first = min(e["ts"] for e in ev if e.get("ph") != "M" and "ts" in e)
begin = {e["id"]: e["ts"] for e in ev if e.get("cat") == "graph" and e.get("ph") == "b"}
print(sum(e["ts"] - begin.get(e["id"], first) for e in ev if e.get("cat") == "graph" and e.get("ph") == "e"))
'
span() { "$python" -c "$span_py" "$1"; }

# best NAME: the folder of NAME's run (run-1, run-2, ...) whose trace spans least.
best() {
    for d in "$work/$1"/run-*; do
        echo "$(span "$d/trace.json") $d"
    done | sort -g | head -n 1 | cut -d' ' -f2-
}

# minimake's sample project, each run in a fresh folder as the demo builds it.
for i in 1 2 3; do
    d=$work/minimake/run-$i
    mkdir -p "$d"
    cp examples/minimake/words.txt "$d/"
    (cd "$d" && "$ex/minimake" -j 3 -d graph.dot -t trace.json "$root/examples/minimake/Makefile.mm" >/dev/null)
done
d=$(best minimake)
"$python" tools/trace_plot.py "$d/trace.json" -o docs/trace_minimake.png \
    --title "minimake -j 3 on examples/minimake/Makefile.mm"
if command -v dot >/dev/null; then
    dot -Tpng -Gdpi=80 -Grankdir=LR "$d/graph.dot" -o docs/minimake_graph.png   # left to right, as time in the trace
    echo "trace_pictures.sh: wrote docs/minimake_graph.png"
else
    echo "trace_pictures.sh: no Graphviz dot (Debian: graphviz): docs/minimake_graph.png not redrawn" >&2
fi

# frame_jobs: 13 frames, the last three traced, on 2 workers.
for i in 1 2 3 4 5; do
    mkdir -p "$work/frames/run-$i"
    "$ex/frame_jobs" -t "$work/frames/run-$i/trace.json" 13 2 >/dev/null
done
"$python" tools/trace_plot.py "$(best frames)/trace.json" -o docs/trace_frames.png \
    --title "frame_jobs: frames 10 to 12, 2 workers and the main thread"

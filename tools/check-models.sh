#!/usr/bin/env bash
# check-models.sh -- model-check the park/unpark protocol (models/park.pml)
# with Spin: the protocol as implemented must verify, and every injected bug
# must be caught.  docs/reliability.md test 8; ctest runs it as `t08_spin_park_model`.
#
#   tools/check-models.sh            the standard set (about a minute or two)
#   tools/check-models.sh --full     also the larger configurations (~8 min,
#                                    up to 4 GB)
#   KEEP=1 tools/check-models.sh     keep the work directory (pan, logs, trails)
#
# One line per run: name, W, states stored, errors, seconds, verdict.  The
# last line is "N passed, N failed"; the exit status is non-zero on any
# failure.  Works from any directory; the pan files go to a temp directory.

set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
model="$here/../models/park.pml"
if [ ! -f "$model" ]; then
    echo "check-models: cannot find $model" >&2
    exit 2
fi
model=$(cd "$(dirname "$model")" && pwd)/park.pml

full=0
for arg in "$@"; do
    case $arg in
        --full) full=1 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "check-models: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

if ! command -v spin >/dev/null 2>&1; then
    echo "check-models: 'spin' not found. Install the Debian package 'spin' (apt-get install spin)." >&2
    exit 2
fi
cc=${CC:-}
if [ -z "$cc" ]; then
    for c in gcc cc clang; do
        if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
    done
fi
if [ -z "$cc" ]; then
    echo "check-models: no C compiler found for pan.c (install gcc)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-spin.XXXXXX") || exit 2
if [ "${KEEP:-0}" = 1 ]; then
    echo "check-models: work directory $work"
else
    trap 'rm -rf "$work"' EXIT
fi

# pan: safety properties only (assertions, invalid end states), state
# vectors compressed, a memory cap so a runaway model fails instead of
# swapping.  The depth bound is far above the deepest path (about 400); a
# search that hits it is reported as incomplete, never as a pass.
PAN_CFLAGS="-O1 -DSAFETY -DCOLLAPSE -DMEMLIM=6144"
PAN_DEPTH=20000

passed=0
failed=0
t_all=$(date +%s.%N)

# run NAME W EXPECT DEFINES...
#   EXPECT: pass (must verify with errors: 0) or fail (must find an error)
run() {
    local name=$1 w=$2 expect=$3; shift 3
    local dir="$work/$name.W$w"
    mkdir -p "$dir"
    cp "$model" "$dir/park.pml"
    local t0 t1 secs states errors verdict why=""
    t0=$(date +%s.%N)
    if ! (cd "$dir" && spin -a -DW="$w" "$@" park.pml) >"$dir/spin.log" 2>&1; then
        why="spin -a failed: $(head -c 300 "$dir/spin.log")"
    elif ! (cd "$dir" && $cc $PAN_CFLAGS -o pan pan.c) >"$dir/cc.log" 2>&1; then
        why="compiling pan.c failed: $(head -c 300 "$dir/cc.log")"
    else
        (cd "$dir" && ./pan -m"$PAN_DEPTH") >"$dir/pan.log" 2>&1
    fi
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    states=$(grep -aoE '^ *[0-9]+ states, stored' "$dir/pan.log" 2>/dev/null | awk '{print $1}')
    errors=$(grep -aoE 'errors: [0-9]+' "$dir/pan.log" 2>/dev/null | awk '{print $2}')
    : "${states:=?}" "${errors:=?}"

    if [ -z "$why" ]; then
        if [ "$errors" = "?" ]; then
            why="pan gave no verdict: $(grep -av '^Depth=' "$dir/pan.log" | tail -n 3 | tr '\n' ' ')"
        elif [ "$expect" = pass ]; then
            if [ "$errors" != 0 ]; then
                why="expected errors: 0 -- $(grep -aE 'pan:1:' "$dir/pan.log" | head -n 1)"
            elif grep -aqE 'max search depth too small|reached -DMEMLIM|out of memory|Search not completed' "$dir/pan.log"; then
                why="search incomplete: $(grep -aE 'too small|MEMLIM|out of memory|not completed' "$dir/pan.log" | head -n 1)"
            fi
        elif [ "$errors" = 0 ]; then
            why="injected bug NOT caught (errors: 0)"
        fi
    fi

    if [ -z "$why" ]; then
        verdict=ok
        passed=$((passed + 1))
    else
        verdict="FAILED: $why"
        failed=$((failed + 1))
    fi
    local found=""
    if [ "$expect" = fail ] && [ "$errors" != 0 ] && [ "$errors" != "?" ]; then
        found=" ($(grep -a 'pan:1:' "$dir/pan.log" | head -n 1 | sed -E 's/^pan:1: //; s/ \(at depth ([0-9]+)\)$/ at depth \1/'))"
    fi
    printf '%-40s W=%s  states %10s  errors %-3s %6ss  %s%s\n' \
        "$name" "$w" "$states" "$errors" "$secs" "$verdict" "$found"
    if [ -n "$why" ] && [ "$expect" = pass ] && [ -f "$dir/pan.log" ] && [ -f "$dir/park.pml.trail" ]; then
        echo "  counterexample (spin -t -p, last 40 lines):"
        (cd "$dir" && spin -t -p -DW="$w" "$@" park.pml 2>&1 | tail -n 40 | sed 's/^/    /')
    fi
}

# The protocol as implemented: must verify.
run correct                              2 pass
run correct.parallel                     2 pass -DPARALLEL
run correct.parallel.spawn               2 pass -DPARALLEL -DPAR_SPAWN
run correct.parked.nsub2                 3 pass -DSTART_PARKED -DNSUB=2 -DNSPAWN=0
run correct.parked.parallel              3 pass -DSTART_PARKED -DPARALLEL
run correct.parked.parallel.spawn        3 pass -DSTART_PARKED -DPARALLEL -DPAR_SPAWN
if [ "$full" = 1 ]; then
    run correct.parked.parallel.mixed    3 pass -DSTART_PARKED -DPARALLEL -DNSUB=2
    run correct.parallel.spawn           3 pass -DPARALLEL -DPAR_SPAWN
    run correct.nsub2                    3 pass -DNSUB=2 -DNSPAWN=0
fi

# Batched take from the global ring (docs/design.md#how-work-flows, step 3):
# the item moved to the taker's deque is invisible in transit, so the taker
# must notify after publishing it.  Without that notify work is stranded:
# kept as a control.
run batch.notify.parallel                2 pass -DBATCH -DBATCH_NOTIFY -DPARALLEL
run batch.notify                         2 pass -DBATCH -DBATCH_NOTIFY
run batch.without_notify.parallel        2 fail -DBATCH -DPARALLEL
if [ "$full" = 1 ]; then
    run batch.notify.parked.parallel     3 pass -DBATCH -DBATCH_NOTIFY -DSTART_PARKED -DPARALLEL
fi

# Injected bugs: each must be caught.
run bug.no_recheck                       2 fail -DBUG_NO_RECHECK
run bug.no_recheck.parked                3 fail -DBUG_NO_RECHECK -DSTART_PARKED -DNSUB=2 -DNSPAWN=0
run bug.check_then_idle                  2 fail -DBUG_CHECK_THEN_IDLE
run bug.check_then_idle.parked           3 fail -DBUG_CHECK_THEN_IDLE -DSTART_PARKED -DNSUB=2 -DNSPAWN=0
run bug.notify_no_fence                  2 fail -DBUG_NOTIFY_NO_FENCE
run bug.notify_no_fence.parked           3 fail -DBUG_NOTIFY_NO_FENCE -DSTART_PARKED -DNSUB=2 -DNSPAWN=0
run bug.no_handoff.parallel              2 fail -DBUG_NO_HANDOFF -DPARALLEL
run bug.no_handoff.parked.parallel       3 fail -DBUG_NO_HANDOFF -DSTART_PARKED -DPARALLEL
run bug.no_handoff.parked.parallel.spawn 3 fail -DBUG_NO_HANDOFF -DSTART_PARKED -DPARALLEL -DPAR_SPAWN
run bug.handoff_unchecked.parallel       2 fail -DBUG_HANDOFF_UNCHECKED -DPARALLEL
run bug.handoff_unchecked.parked.parallel 3 fail -DBUG_HANDOFF_UNCHECKED -DSTART_PARKED -DPARALLEL
run bug.step4_unowned                    2 fail -DBUG_STEP4_UNOWNED

t_end=$(date +%s.%N)
echo "total $(awk -v a="$t_all" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }')s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/bash
# ic36.sh EXE MODE W: instructions per task under callgrind, sp36 at
# N = 20000 and 40000 with 3 timed rounds (plus sp36's warm-up round),
# the difference divided by the tasks it adds, so constant costs cancel:
#   spawn  the spawning thread's, collection on around its spawn loops
#          only (--collect-atstart=no and sp36's toggles)
#   all    every thread's, the whole program (spawn, run, wait: with
#          MODE none, all of it runs on the one thread)
exe=$1; m=$2; w=$3
cg() { valgrind --tool=callgrind --callgrind-out-file=/dev/stdout "$@" 2>/dev/null | awk '/^(summary|totals):/{print $2; exit}'; }
s1=$(cg --collect-atstart=no "$exe" "$m" "$w" 20000 3); s2=$(cg --collect-atstart=no "$exe" "$m" "$w" 40000 3)
a1=$(cg "$exe" "$m" "$w" 20000 3); a2=$(cg "$exe" "$m" "$w" 40000 3)
echo "$m W=$w spawn $(echo "scale=1; ($s2 - $s1) / 60000" | bc) all $(echo "scale=1; ($a2 - $a1) / 80000" | bc)"

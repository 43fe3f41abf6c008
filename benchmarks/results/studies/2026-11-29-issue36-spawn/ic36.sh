#!/bin/bash
# ic36.sh EXE MODE W: the spawner's instructions per weft_spawn under
# callgrind: N = 20000 and 40000, 3 rounds each, difference / 60000.
exe=$1; m=$2; w=$3
t() { valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file=/dev/stdout "$exe" "$m" "$w" "$1" 3 2>/dev/null | awk '/^(summary|totals):/{print $2; exit}'; }
a=$(t 20000); b=$(t 40000)
echo "$m W=$w $(echo "scale=1; ($b - $a) / 60000" | bc)"

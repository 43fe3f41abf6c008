#!/bin/bash
# icount36.sh BIN: instructions per task of row 3 at one thread (weft's
# main bound with no workers, enkiTS's main alone), callgrind's total for
# N = 10^5 and 2*10^5 tasks a round (one untimed, one timed round), the
# difference over the 2*10^5 tasks it adds.
BIN=$1
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ {print $NF}'; }
for c in "w_spawn 1 N 1 bound" "en_spawn 1 N 1" "en_spawn_c 1 N 1" "omp_spawn 1 N 1"; do
    a=$(ir $BIN/${c/N/100000}); b=$(ir $BIN/${c/N/200000})
    echo "$c: $(( (b - a) / 200000 )) instructions per task"
done

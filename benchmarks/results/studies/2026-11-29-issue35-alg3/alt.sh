#!/bin/bash
# alt.sh OUT REPS "KERNEL T [LINES]" prog...: alternate processes, record median + load
OUT=$1; REPS=$2; ARGS=$3; shift 3
for r in $(seq $REPS); do for p in "$@"; do
  read -r K T L <<<"$ARGS"
  ms=$($p $K $T 5 $L | awk '{print $NF}'); ld=$(cut -d' ' -f1 /proc/loadavg)
  echo -e "$(basename $p)\t$K\t$T\t${L:-1}\t$r\t$ms\t$ld" >> $OUT
done; done

#!/bin/bash
# abe.sh R filter exe... : alternate processes; mean ns per round trip (real time / 1000) per exe
R=$1; f=$2; shift 2; out=abe.out; : > $out
for r in $(seq $R); do for e in "$@"; do
  timeout 100 ./$e --benchmark_filter="$f" --benchmark_min_time=0.2 2>/dev/null | awk -v e=$e '/real_time/{print e, $1, $2/1000}' >> $out
done; done
for e in "$@"; do for row in $(awk '{print $2}' $out | sort -u); do
  printf "%s %s median %s ns  all:%s\n" $e $row "$(grep "^$e $row " $out | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')" "$(grep "^$e $row " $out | awk '{printf " %.0f",$3}')"
done; done

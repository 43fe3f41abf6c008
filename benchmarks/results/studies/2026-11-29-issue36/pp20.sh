#!/bin/bash
# pp20.sh N: 20 alternating processes per (build, mode) with a busy loop on one core; seconds per process
N=$1; out=pp20.out; : > $out
sh -c 'while :; do :; done' & busy=$!
for r in $(seq 20); do for e in ppA ppB; do for m in e c; do
  v=$(timeout 60 ./$e $m $N); echo "$e $m ${v:-60}" >> $out
done; done; done
kill $busy
for e in ppA ppB; do for m in e c; do
  grep "^$e $m " $out | awk '{print $3}' | sort -g | awk -v e=$e -v m=$m '{a[NR]=$1} END{med=(a[10]+a[11])/2; printf "%s %s median %.4f s worst %.4f s worst/median %.1f all:", e, m, med, a[NR], a[NR]/med; for(i=1;i<=NR;i++) printf " %.3f", a[i]; print ""}'
done; done

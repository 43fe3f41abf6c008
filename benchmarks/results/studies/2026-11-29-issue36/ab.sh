#!/bin/bash
# ab.sh R W N exe... : alternate processes, print median ns/cycle per exe
R=$1; W=$2; N=$3; shift 3
for r in $(seq $R); do for e in "$@"; do echo "$e $(./$e $W $N | awk '{print $2}')"; done; done > ab.out
for e in "$@"; do printf "%s W=%s median %s\n" $e $W "$(grep "^$e " ab.out | awk '{print $2}' | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')"; done

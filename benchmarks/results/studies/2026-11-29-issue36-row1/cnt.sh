#!/bin/bash
# cnt.sh BIN T REPS: per cycle (60000 a process): context switches, futex and membarrier calls, CPU ns; the program's ns/cycle
B=$1; T=$2; R=${3:-5}
for i in $(seq $R); do
  out=$(perf stat -e context-switches,task-clock,syscalls:sys_enter_futex,syscalls:sys_enter_membarrier -x, $B $T 10000 5 2>&1)
  ns=$(echo "$out" | grep _rw | awk '{print $3}')
  f() { echo "$out" | grep "$1" | cut -d, -f1; }
  echo "$B T=$T ns=$ns cs=$(echo "scale=2; $(f context-switches)/60000" | bc) futex=$(echo "scale=2; $(f sys_enter_futex)/60000" | bc) memb=$(echo "scale=2; $(f sys_enter_membarrier)/60000" | bc) cpu_ns=$(echo "scale=0; $(f task-clock)*1000000/60000" | bc) load=$(cut -d' ' -f1 /proc/loadavg)"
done

#!/bin/bash
# abw.sh R : alternate processes bwA weft, bwB weft, tbb (from bwB) per row; ns per cycle per process
R=$1; out=${2:-abw.out}; : > $out
for r in $(seq $R); do
 for row in rw32_t1 rw32_t2; do
  for e in bwA:weft bwB:weft bwB:tbb; do
   exe=${e%%:*}; sys=${e##*:}
   v=$(./$exe --benchmark_filter="^$row/$sys/" --benchmark_min_time=0.2 2>/dev/null | awk '/items_per_second/{for(i=1;i<=NF;i++) if($i ~ /items_per_second/){split($i,a,"=");x=a[2]; m=1; if(x~/k\/s/)m=1e3; if(x~/M\/s/)m=1e6; sub(/[kM]?\/s/,"",x); print 1e9/(x*m)}}')
   echo "$row $exe:$sys $v" >> $out
  done
 done
done
for row in rw32_t1 rw32_t2; do for e in bwA:weft bwB:weft bwB:tbb; do
 printf "%s %s median %s ns/cycle  all:%s\n" $row $e "$(grep "^$row $e " $out | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')" "$(grep "^$row $e " $out | awk '{printf " %.0f",$3}')"
done; done

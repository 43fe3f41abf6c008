# Paired A/B of fib_wall.c (study 2026-11-29-issue35-subflow-perf2) builds:
#   python3 fib_wall_ab.py N ROUNDS NAME...   (runs ./fibw_NAME, W from the
#   environment, default 0)
# Each round runs every build once, in turn, so that a change of load hits
# both sides of a pair alike; prints each build's median and best ns a
# call and the median of its per-round ratio to the first build's.
import os, statistics, subprocess, sys

n, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
w = os.environ.get('W', '0')
res = {b: [] for b in names}
for _ in range(rounds):
    for b in names:
        out = subprocess.run(['./fibw_' + b], env=dict(os.environ, N=n, W=w),
                             capture_output=True, text=True, check=True).stdout
        res[b].append(float(out.split()[2]))   # "fib(N) W=w: X ns a call ..."
for b in names:
    ratios = [x / y for x, y in zip(res[b], res[names[0]])]
    print('%-6s median %.1f min %.1f  ratio to %s: median %.3f  (%s)' % (
        b, statistics.median(res[b]), min(res[b]), names[0], statistics.median(ratios),
        ' '.join('%.0f' % x for x in res[b])))

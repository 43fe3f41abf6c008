# Medians of 5 from bench_subflow-{main,branch}-N.json: weft / oneTBB wall
# time of the same run, and at 0 threads the caller's CPU time (the
# whole run is on it).
import glob, json
for f in sorted(glob.glob('bench_subflow-*.json')):
    d = json.load(open(f))
    rows = {b['name']: b for b in d['benchmarks'] if b.get('aggregate_name') == 'median'}
    cells = []
    for t in ('t0', 't1', 't2'):
        w = rows['subflow_fib22_%s/weft/real_time_median' % t]
        j = rows['subflow_fib22_%s/weft_join/real_time_median' % t]
        b = rows['subflow_fib22_%s/tbb/real_time_median' % t]
        c = ' cpu %.1f/%.2f = %.1fx' % (w['cpu_time'], b['cpu_time'], w['cpu_time'] / b['cpu_time']) if t == 't0' else ''
        cells.append('%s weft %.1f join %.1f tbb %.2f ms: %.1fx, join %.1fx%s' % (
            t, w['real_time'], j['real_time'], b['real_time'], w['real_time'] / b['real_time'],
            j['real_time'] / b['real_time'], c))
    print(f, d['context']['date'][11:19])
    for c in cells:
        print('   ', c)

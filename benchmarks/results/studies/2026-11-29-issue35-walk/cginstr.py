import sys, re, collections
# cginstr.py FILE FNSUBSTR: self Ir per instruction address for functions matching
def parse(f, want):
    d = collections.Counter()
    names = {}
    cur = None; addr = 0; line = 0; skip = False
    for l in open(f):
        l = l.rstrip('\n')
        if l.startswith('fn='):
            m = re.match(r'fn=\((\d+)\)(?: (.*))?', l)
            if m:
                if m.group(2): names[m.group(1)] = m.group(2)
                cur = names.get(m.group(1), '')
            else:
                cur = l[3:]
            continue
        if l.startswith('calls='):
            skip = True; continue
        if not l or not (l[0] in '0123456789+-*'):
            continue
        parts = l.split()
        def sub(p, prev):
            if p == '*': return prev
            if p[0] in '+-': return prev + int(p)
            return int(p, 0)
        a = sub(parts[0], addr); ln = sub(parts[1], line) if len(parts) > 2 else line
        addr, line = a, ln
        if skip: skip = False; continue
        if cur and want in cur and len(parts) > 2:
            d[(cur, a)] += int(parts[2])
    return d
a = parse(sys.argv[1], sys.argv[3]); b = parse(sys.argv[2], sys.argv[3]); calls = float(sys.argv[4])
keys = sorted(set(a) | set(b), key=lambda k: k[1])
for k in keys:
    v = (b[k] - a[k]) / calls
    if abs(v) >= 0.05: print("%x %6.2f %s" % (k[1], v, k[0]))

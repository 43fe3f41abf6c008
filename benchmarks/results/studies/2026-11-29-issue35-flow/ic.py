#!/usr/bin/env python3
"""Instructions per item of flow_ic's cases under callgrind.

    ic.py FLOW_IC        (the flow_ic binary, built against libweft.a and
                          oneTBB: see README.md)

Each case runs at two sizes; (Ir(big) - Ir(small)) / (big - small) is
printed per case, with weft's against oneTBB's as a ratio."""
import re
import subprocess
import sys

SMALL, BIG = 2000, 4000


def ir(exe, case, n):
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          exe, case, str(n)], capture_output=True, text=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def per_item(exe, case):
    return (ir(exe, case, BIG) - ir(exe, case, SMALL)) / (BIG - SMALL)


def main():
    exe = sys.argv[1]
    rows = [("chain", "weft_chain", "tbb_chain")]
    rows += [("pipeline_L%d" % n, "weft_pipe%d" % n, "tbb_pipe%d" % n) for n in (1, 2, 4, 8)]
    print("| case | weft Ir/item | oneTBB Ir/item | oneTBB / weft |")
    print("|---|---:|---:|---:|")
    for name, w, t in rows:
        a, b = per_item(exe, w), per_item(exe, t)
        print("| %s | %.0f | %.0f | %.2fx |" % (name, a, b, b / a))


if __name__ == "__main__":
    main()

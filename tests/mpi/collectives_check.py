"""collectives_check.py OUTPUT: checks the lines tests/mpi/collectives.yaml
prints under mpirun (NR = the rank count, from the environment) against
each collective's definition. Every show_* line of every rank must be
there, with the expected first (up to 8) values. Exit 1 naming the first
wrong line."""
import os
import re
import sys

R = int(os.environ["NR"])
text = open(sys.argv[1]).read()
a = lambda r: [100 * r + i for i in range(4)]
big = lambda r: [1000 * r + j for j in range(64)]
want = {}
for r in range(R):
    w = {}
    w["ar_sum"] = [sum(a(k)[i] for k in range(R)) for i in range(4)]
    w["ar_max"] = [max(a(k)[i] for k in range(R)) for i in range(4)]
    w["ar_avg"] = [sum(a(k)[i] for k in range(R)) / R for i in range(4)]
    w["ip"] = [min(a(k)[i] for k in range(R)) for i in range(4)]
    w["bc"] = a(R - 1)
    w["rd"] = w["ar_sum"] if r == 0 else [0, 0, 0, 0]
    w["ag"] = sum((a(k) for k in range(R)), [])
    w["rs"] = [sum(big(k)[4 * r + i] for k in range(R)) for i in range(4)]
    w["at"] = sum((big(k)[4 * r:4 * r + 4] for k in range(R)), [])
    w["rv"] = a((r - 1) % R)
    want[r] = w

bad = 0
for r in range(R):
    for name, vals in want[r].items():
        m = re.search(r"^show_%s: r %d h_%s\[([^\]]*)\]" % (name, r, name), text, re.M)
        if not m:
            print("missing: show_%s on rank %d" % (name, r))
            bad += 1
            continue
        got = [float(x) for x in m.group(1).replace(", ...", "").split(", ")]
        exp = [float(x) for x in vals[:8]]
        if got != exp:
            print("show_%s rank %d: got %s, want %s" % (name, r, got, exp))
            bad += 1
sys.exit(1 if bad else 0)

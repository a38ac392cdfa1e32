#!/usr/bin/python3
"""stalls.py summarises Nsight Compute CSV pages for probe.sh.

  ncu -i REPORT --page details --csv | stalls.py details
  ncu -i REPORT --page source --csv --print-source sass | stalls.py source

details prints the launch's registers, occupancy and issue-slot figures;
source the warp stall samples of the kernel in total and for the eight SASS
opcodes with the most.
"""
import collections
import csv
import sys

WANT = ("Registers Per Thread", "Achieved Occupancy", "Issue Slots Busy", "No Eligible",
        "Warp Cycles Per Issued Instruction", "Executed Instructions")


def details(rows):
    for r in rows:
        if len(r) > 14 and r[12] in WANT:
            print("   %s = %s" % (r[12], r[14]))


def source(rows):
    hdr, recs = None, []
    for r in rows:
        if r and r[0] == "Address":
            hdr = r
        elif hdr and len(r) == len(hdr):
            recs.append(dict(zip(hdr, r)))
    if hdr is None:
        sys.exit("stalls.py: no source table on standard input")
    kinds = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total, by_op = collections.Counter(), collections.defaultdict(collections.Counter)
    for d in recs:
        words = d["Source"].split()
        if not words:
            continue
        op = (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]
        for k in kinds:
            v = int(d[k] or 0)
            total[k] += v
            by_op[op][k] += v
        by_op[op]["executed"] += int(d.get("Instructions Executed") or 0)
    print("   stall samples: " + ", ".join("%s %d" % (k[6:], v) for k, v in total.most_common(9)))
    ranked = sorted(by_op.items(), key=lambda kv: -sum(v for k, v in kv[1].items() if k != "executed"))
    for op, c in ranked[:8]:
        top = ", ".join("%s %d" % (k[6:], v) for k, v in c.most_common(7) if k != "executed")
        print("   %-8s executed %12d  %s" % (op, c["executed"], top))


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("details", "source"):
        sys.exit(__doc__)
    rows = list(csv.reader(sys.stdin))
    (details if sys.argv[1] == "details" else source)(rows)

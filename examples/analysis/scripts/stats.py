"""stats.py SAMPLE ROWS OUT: the count and mean of the second column of ROWS, as JSON."""
import json
import sys

sample, rows, out = sys.argv[1:4]
values = [float(line.split(",")[1]) for line in open(rows) if line.strip()]
with open(out, "w") as f:
    json.dump({"sample": sample, "n": len(values), "mean": sum(values) / len(values)}, f)

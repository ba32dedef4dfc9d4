"""report.py STATS...: one line per sample, in the order given."""
import json
import sys

for path in sys.argv[1:]:
    s = json.load(open(path))
    print(f"{s['sample']}: n={s['n']} mean={s['mean']:.2f}")

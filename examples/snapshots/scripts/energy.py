"""The rod's total heat and peak temperature in each snapshot of a directory."""
import csv
import os
import sys

frames = sys.argv[1]
print("snapshot,total,peak")
for name in sorted(os.listdir(frames)):
    if not name.endswith(".csv"):
        continue
    with open(os.path.join(frames, name)) as f:
        temps = [float(row["temperature"]) for row in csv.DictReader(f)]
    print(f"{name[:-4]},{sum(temps):.4f},{max(temps):.4f}")

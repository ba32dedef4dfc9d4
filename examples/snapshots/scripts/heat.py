"""Heat diffusing along a rod, hot in the middle: one CSV per snapshot.

Writes OUT/t<step>.csv (cell,temperature) every --every timesteps, and
OUT/meta/run.txt with the parameters, into the directory berth gives it.
"""
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, required=True)
parser.add_argument("--every", type=int, required=True)
parser.add_argument("--cells", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

rod = [0.0] * args.cells
rod[args.cells // 2] = 100.0
os.makedirs(os.path.join(args.out, "meta"), exist_ok=True)
with open(os.path.join(args.out, "meta", "run.txt"), "w") as f:
    f.write(f"steps={args.steps} every={args.every} cells={args.cells}\n")
for step in range(args.steps + 1):
    if step % args.every == 0:
        with open(os.path.join(args.out, f"t{step:04d}.csv"), "w") as f:
            f.write("cell,temperature\n")
            for i, t in enumerate(rod):
                f.write(f"{i},{t:.6f}\n")
    # Explicit diffusion, ends held at zero.
    rod = [0.0] + [rod[i] + 0.25 * (rod[i - 1] - 2 * rod[i] + rod[i + 1])
                   for i in range(1, args.cells - 1)] + [0.0]

#!/usr/bin/env python3
"""Makes one step of a bench/dag shape need to run again, the same way for every tool.

    edit.py SHAPE K DIR

read:  in/K.txt gets new bytes (every tool sees the input change).
touch: step K's definition changes: berth's env I, ninja's variable i, make's recipe
       (the command line, which ninja and make rerun on; make also needs the target
       gone, since it knows only times).
Standard library only.
"""
import os
import re
import sys


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: edit.py read|touch K DIR\n")
        return 2
    shape, k, d = argv[1], int(argv[2]), argv[3]
    if shape in ("read", "wide"):
        with open(os.path.join(d, "in", f"{k}.txt"), "a") as f:
            f.write("edited\n")
        return 0
    if shape != "touch":
        sys.stderr.write(f"edit.py: no edit for {shape}\n")
        return 2
    p = os.path.join(d, "pipeline.toml")
    text = open(p).read()
    # gen.py's layout: name, cmd, outputs, env, one line each.
    text, n = re.subn(rf'(name = "t-{k}"\n(?:[^\n]*\n){{0,3}}?env = {{ I = ")([^"]*)(" }})',
                      lambda m: m.group(1) + m.group(2) + "+" + m.group(3), text)
    assert n == 1, "pipeline.toml: step not found"
    open(p, "w").write(text)
    p = os.path.join(d, "build.ninja")
    text = open(p).read()
    text, n = re.subn(rf"(build out/{k}\.txt: touch\n  i = )(\S+)", lambda m: m.group(1) + m.group(2) + "+", text)
    assert n == 1, "build.ninja: edge not found"
    open(p, "w").write(text)
    p = os.path.join(d, "Makefile")
    text = open(p).read()
    text, n = re.subn(rf"(out/{k}\.txt:\n\tI=)(\S+)", lambda m: m.group(1) + m.group(2) + "+", text)
    assert n == 1, "Makefile: rule not found"
    open(p, "w").write(text)
    try:
        os.remove(os.path.join(d, "out", f"{k}.txt"))
    except FileNotFoundError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Writes the same small DAG for berth, ninja, GNU make and snakemake (bench/dag).

    gen.py SHAPE N DIR

SHAPE is "read" (N independent steps, step i copies in/i.txt to out/i.txt: each reads
an input of its own), "touch" (N independent steps, step i touches out/i.txt: no input;
each berth step has its own environment variable I so that no two keys are equal), or
"chain" (N steps, step k copies step k-1's output; step 0 copies in/0.txt). "wide" is
"read". DIR receives the inputs and one build file per tool:

    pipeline.toml  berth run     (cmd = ["cp", ...], no shell)
    build.ninja    ninja         (rule cp: command = cp $in $out, through sh -c)
    Makefile       make -j N     (one explicit rule per step)
    Snakefile      snakemake     (one wildcard rule, expanded to N targets)

Every tool copies the same files to the same names under out/ (berth: results/), so
"all the work was done" can be checked by counting outputs. Standard library only.
"""
import os
import sys


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def gen_wide(n, d):
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    for i in range(n):
        write(os.path.join(d, "in", f"{i}.txt"), f"{i}\n")
    # berth: one foreach step; each input's content differs, so every key does.
    values = ", ".join(str(i) for i in range(n))
    write(os.path.join(d, "pipeline.toml"),
          '[pipeline]\nname = "dag-wide"\n\n[[step]]\nname = "w-{i}"\n'
          f"foreach = {{ i = [{values}] }}\n"
          'inputs = { src = "in/{i}.txt" }\n'
          'cmd = ["cp", "{in.src}", "{out.o}"]\n'
          'outputs = ["o"]\n')
    ninja = ["rule cp", "  command = cp $in $out", ""]
    ninja += [f"build out/{i}.txt: cp in/{i}.txt" for i in range(n)]
    write(os.path.join(d, "build.ninja"), "\n".join(ninja) + "\n")
    mk = ["all: " + " ".join(f"out/{i}.txt" for i in range(n)), ""]
    for i in range(n):
        mk += [f"out/{i}.txt: in/{i}.txt", "\tcp $< $@"]
    write(os.path.join(d, "Makefile"), "\n".join(mk) + "\n")
    write(os.path.join(d, "Snakefile"),
          f'rule all:\n    input: expand("out/{{i}}.txt", i=range({n}))\n\n'
          'rule cp:\n    input: "in/{i}.txt"\n    output: "out/{i}.txt"\n'
          '    shell: "cp {input} {output}"\n')


def gen_touch(n, d):
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    # One [[step]] per output, so that one step's definition can be edited (edit.py).
    toml = ['[pipeline]\nname = "dag-touch"\n']
    for i in range(n):
        toml.append(f'[[step]]\nname = "t-{i}"\ncmd = ["touch", "{{out.o}}"]\n'
                    f'outputs = ["o"]\nenv = {{ I = "{i}" }}\n')
    write(os.path.join(d, "pipeline.toml"), "\n".join(toml))
    ninja = ["rule touch", "  command = I=$i touch $out", ""]
    for i in range(n):
        ninja += [f"build out/{i}.txt: touch", f"  i = {i}"]
    write(os.path.join(d, "build.ninja"), "\n".join(ninja) + "\n")
    mk = ["all: " + " ".join(f"out/{i}.txt" for i in range(n)), ""]
    for i in range(n):
        mk += [f"out/{i}.txt:", f"\tI={i} touch $@"]
    write(os.path.join(d, "Makefile"), "\n".join(mk) + "\n")
    write(os.path.join(d, "Snakefile"),
          f'rule all:\n    input: expand("out/{{i}}.txt", i=range({n}))\n\n'
          'rule touch:\n    output: "out/{i}.txt"\n'
          '    shell: "I={wildcards.i} touch {output}"\n')


def gen_chain(n, d):
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    write(os.path.join(d, "in", "0.txt"), "0\n")
    # berth: the same cp with the same bytes all the way down would give every step the
    # same key (spec 04 §5), so each step gets its own param, which enters the key.
    toml = ['[pipeline]\nname = "dag-chain"\n']
    for k in range(n):
        src = '"in/0.txt"' if k == 0 else f'"@c-{k - 1}/o"'
        toml.append(f'[[step]]\nname = "c-{k}"\ninputs = {{ src = {src} }}\n'
                    f'cmd = ["cp", "{{in.src}}", "{{out.o}}"]\noutputs = ["o"]\n'
                    f'params = {{ n = {k} }}\n')
    write(os.path.join(d, "pipeline.toml"), "\n".join(toml))

    def src(k):
        return "in/0.txt" if k == 0 else f"out/{k - 1}.txt"

    ninja = ["rule cp", "  command = cp $in $out", ""]
    ninja += [f"build out/{k}.txt: cp {src(k)}" for k in range(n)]
    write(os.path.join(d, "build.ninja"), "\n".join(ninja) + "\n")
    mk = [f"all: out/{n - 1}.txt", ""]
    for k in range(n):
        mk += [f"out/{k}.txt: {src(k)}", "\tcp $< $@"]
    write(os.path.join(d, "Makefile"), "\n".join(mk) + "\n")
    # snakemake resolves the DAG recursively, one level per step: raise the limit.
    write(os.path.join(d, "Snakefile"),
          "import sys\nsys.setrecursionlimit(100000)\n\n"
          f'rule all:\n    input: "out/{n - 1}.txt"\n\n'
          'rule cp:\n'
          '    input: lambda w: "in/0.txt" if w.k == "0" else f"out/{int(w.k) - 1}.txt"\n'
          '    output: "out/{k}.txt"\n'
          '    wildcard_constraints: k="[0-9]+"\n'
          '    shell: "cp {input} {output}"\n')


def main(argv):
    gens = {"read": gen_wide, "wide": gen_wide, "touch": gen_touch, "chain": gen_chain}
    if len(argv) != 4 or argv[1] not in gens:
        sys.stderr.write("usage: gen.py read|touch|chain N DIR\n")
        return 2
    n, d = int(argv[2]), argv[3]
    os.makedirs(d, exist_ok=True)
    gens[argv[1]](n, d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

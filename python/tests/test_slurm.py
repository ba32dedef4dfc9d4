"""On the real local Slurm (scripts/services.sh: 4 emulated nodes of 2 CPUs; ctest label
`slurm`): the docs/python.md driver, run inside a salloc allocation, runs eight placed
launches at once from a pool, each on CPUs of its own as read from inside it, and then
a pipeline through berth.run."""

import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

DRIVER = os.path.join(SOURCE_DIR, "examples/python/placed_launches.py")

# A sanitizer build's interpreter needs its runtime preloaded (conftest.py); the driver
# drops it from its environment before it starts anything, as conftest.py does here.
SHIM = ("import os, runpy, sys\n"
        "for v in ('LD_PRELOAD', os.environ.get('BERTH_PYTHON_SANITIZER_OPTIONS', '=')"
        ".partition('=')[0]):\n"
        "    os.environ.pop(v, None)\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n")

PIPELINE = """
[[step]]
name = "probe-{i}"
foreach = { i = ["1", "2", "3", "4"] }
run = "echo \\"{i} $SLURMD_NODENAME $(grep Cpus_allowed_list /proc/self/status | cut -f2)\\" > {out.o}"
outputs = ["o"]
"""


def need_slurm():
    os.environ.setdefault("SLURM_CONF", "/tmp/berth-services/slurm/slurm.conf")
    try:
        ok = subprocess.run(["scontrol", "ping"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        pytest.fail(f"no Slurm answers (SLURM_CONF={os.environ['SLURM_CONF']}); start it with "
                    "scripts/services.sh start")


def test_the_docs_driver_is_the_example_in_docs():
    with open(DRIVER) as f:
        driver = f.read()
    with open(os.path.join(SOURCE_DIR, "docs/python.md")) as f:
        docs = f.read()
    body = driver.split('"""', 2)[2].strip()  # the code after its docstring
    assert body in docs, "docs/python.md must show examples/python/placed_launches.py as it is"


def test_eight_placed_launches_run_at_once_on_cpus_of_their_own(tmp_path):
    need_slurm()
    os.chmod(tmp_path, 0o755)
    pipeline = tmp_path / "p.toml"
    pipeline.write_text(PIPELINE)
    env = dict(os.environ)
    # The driver's interpreter gets the sanitizer runtime (when there is one) from
    # `env`, inside the allocation: salloc itself starts without it.
    wrapper = []
    if os.environ.get("BERTH_PYTHON_PRELOAD"):
        wrapper = ["env", f"LD_PRELOAD={os.environ['BERTH_PYTHON_PRELOAD']}"]
        if os.environ.get("BERTH_PYTHON_SANITIZER_OPTIONS"):
            wrapper.append(os.environ["BERTH_PYTHON_SANITIZER_OPTIONS"])
    done = subprocess.run(["timeout", "240", "salloc", "-N4", "-n8", *wrapper, sys.executable,
                           "-c", SHIM, DRIVER, str(pipeline)],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, f"salloc failed:\n{done.stdout}\n{done.stderr}"
    launches = [line for line in done.stdout.splitlines() if line.startswith("launch ")]
    assert len(launches) == 8, done.stdout
    rows = []
    for line in launches:
        head, _, seen = line.partition(": ")
        assert "(scheduler-enforced)" in head, line
        node, cpus, start, end = seen.split()
        rows.append((node, cpus, float(start), float(end)))
    # Each launch saw one CPU, and no two launches on one node saw the same one.
    assert all(cpus.isdigit() for _, cpus, _, _ in rows), rows
    assert len({(node, cpus) for node, cpus, _, _ in rows}) == 8, rows
    assert len({node for node, _, _, _ in rows}) == 4, rows
    # At once: the latest start is before the earliest end.
    assert max(r[2] for r in rows) < min(r[3] for r in rows), rows
    # The pipeline: four steps, each placed on a CPU of a node.
    assert "4 executed, 0 cached" in done.stdout, done.stdout
    for i in range(1, 5):
        step, node, cpus = (tmp_path / f"results-p/probe-{i}/o").read_text().split()
        assert step == str(i) and node.startswith("n") and cpus.isdigit()

"""Shared fixtures for the Python module's tests (python/CMakeLists.txt runs them under
ctest, label `python`, with PYTHONPATH at the module just built and BERTH naming the
berth binary, whose JSON the module's answers are compared with)."""

import json
import os
import subprocess

import pytest

# A sanitizer build's runtime was preloaded into this interpreter so that it can load
# the module (cmake/python.cmake): the programs the tests start — the berth binary,
# which links its own, steps, srun — must not inherit it.
if os.environ.get("BERTH_PYTHON_PRELOAD"):
    if os.environ.get("LD_PRELOAD") == os.environ["BERTH_PYTHON_PRELOAD"]:
        del os.environ["LD_PRELOAD"]
    options = os.environ.get("BERTH_PYTHON_SANITIZER_OPTIONS", "")
    if "=" in options:
        name, _, value = options.partition("=")
        if os.environ.get(name) == value:
            del os.environ[name]

import berth  # noqa: E402  (after the environment is cleaned)

SOURCE_DIR = os.environ.get("BERTH_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__)))))

# The allocation tests/e2e/place_test.sh renders against: four nodes of 128 slots.
SLURM_ENV = {
    "PATH": "/usr/bin:/bin",
    "SLURM_JOB_ID": "9",
    "SLURM_JOB_NODELIST": "nid[001-004]",
    "SLURM_TASKS_PER_NODE": "128(x4)",
}
EMPTY_ENV = {"PATH": "/usr/bin:/bin"}


class Cli:
    """The berth binary, as the e2e tests drive it."""

    def __init__(self, path, tmp):
        self.path = path
        self.tmp = tmp

    def env_file(self, env):
        f = self.tmp / f"env-{abs(hash(tuple(sorted(env.items()))))}.env"
        f.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        return str(f)

    def run(self, *args, cwd=None):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True,
                              cwd=cwd)

    def json(self, *args, cwd=None):
        done = self.run(*args, cwd=cwd)
        assert done.returncode == 0, f"berth {' '.join(map(str, args))}: {done.stderr}"
        return json.loads(done.stdout)


@pytest.fixture
def cli(tmp_path):
    path = os.environ.get("BERTH")
    if not path:
        pytest.fail("BERTH must name the berth binary (run under ctest)")
    return Cli(path, tmp_path)


@pytest.fixture
def fake_node(tmp_path):
    """A node of 16 CPUs, one per core, read under a root of its own (--sysfs-root)."""
    root = tmp_path / "node"
    cpu = root / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-15\n")
    return root

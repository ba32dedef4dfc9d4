"""parallel_command: the placement shapes the CLI's golden tests cover
(tests/e2e/place_test.sh, golden/place_renderings.txt), rendered through Python and
compared with `berth place --format json` for the same input — a mache-style table."""

import os

import pytest

import berth
from conftest import EMPTY_ENV, SLURM_ENV, SOURCE_DIR

P = berth.Placement
COMMAND = ["./a.out", "arg"]

# name in golden/place_renderings.txt (or None), python arguments, berth place flags.
# Every case runs on the four-node Slurm allocation of place_test.sh.
TABLE = [
    ("pm-cpu 25.11 one node",
     dict(ntasks=4, placement=P(["nid001"], ["0-3"]), machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "4", "--nodes", "nid001",
      "--cores", "0-3"]),
    ("pm-cpu 25.11 two nodes cap",
     dict(ntasks=4, cpus_per_task=2, placement=P(["nid001", "nid002"], ["0-3"]),
          memory_cap=2048, machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "4", "-c", "2",
      "--nodes", "nid001,nid002", "--cores", "0-3", "--memory-cap", "2048"]),
    ("pm-gpu 25.11 gpus",
     dict(ntasks=1, placement=P(["nid003"], ["0-15"], gpus=1), machine="pm-gpu",
          slurm_version="25.11"),
     ["--machine", "pm-gpu", "--slurm-version", "25.11", "-n", "1", "--nodes", "nid003",
      "--cores", "0-15", "--gpus", "1"]),
    ("pm-cpu 25.11 unplaced",
     dict(ntasks=8, machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "8"]),
    ("chrysalis 20.02 masks",
     dict(ntasks=2, cpus_per_task=2, placement=P(["nid001"], ["1,2,5,6"]),
          machine="chrysalis", slurm_version="20.02"),
     ["--machine", "chrysalis", "--slurm-version", "20.02", "-n", "2", "-c", "2",
      "--nodes", "nid001", "--cores", "1,2,5,6"]),
    ("chrysalis 20.02 cap dropped",
     dict(ntasks=1, placement=P(["nid001"], ["0"]), memory_cap=100, machine="chrysalis",
          slurm_version="20.02"),
     ["--machine", "chrysalis", "--slurm-version", "20.02", "-n", "1", "--nodes", "nid001",
      "--cores", "0", "--memory-cap", "100"]),
    (None,
     dict(ntasks=2, placement=P(["nid001"], ["4-5"]), memory_cap=512, machine="pm-cpu",
          slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "2", "--nodes", "nid001",
      "--cores", "4-5", "--memory-cap", "512"]),
    (None,
     dict(ntasks=2, placement=P(["nid001", "nid002"], [[0], [1]]), machine="pm-cpu",
          slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "2",
      "--cores", "nid001:0;nid002:1"]),
    (None,
     dict(ntasks=1, placement=P(["nid002"]), machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "1", "--nodes", "nid002"]),
    (None,
     dict(ntasks=2, placement=P(["nid001"], ["0-1"]), machine="pm-cpu", slurm_version="20.02"),
     ["--machine", "pm-cpu", "--slurm-version", "20.02", "-n", "2", "--nodes", "nid001",
      "--cores", "0-1"]),
]


def golden():
    lines = {}
    with open(os.path.join(SOURCE_DIR, "tests/e2e/golden/place_renderings.txt")) as f:
        for line in f:
            name, _, rest = line.rstrip("\n").partition(": ")
            lines[name] = rest
    return lines


@pytest.mark.parametrize("name,kwargs,flags", TABLE,
                         ids=[c[0] or " ".join(c[2]) for c in TABLE])
def test_rendering_equals_the_clis(cli, name, kwargs, flags):
    got = berth.parallel_command(**kwargs, command=COMMAND, env=SLURM_ENV)
    want = cli.json("place", "--format", "json", "--env-file", cli.env_file(SLURM_ENV), *flags,
                    "--", *COMMAND)
    assert got.to_dict() == want
    assert isinstance(got, berth.ParallelCommand)
    assert got.argv[-2:] == COMMAND
    if name:
        assert got.shell == golden()[name]
    shell = cli.run("place", "--env-file", cli.env_file(SLURM_ENV), *flags, "--", *COMMAND)
    assert got.shell == shell.stdout.strip()


def test_no_placement_is_exactly_the_unplaced_command(cli):
    got = berth.parallel_command(8, machine="pm-cpu", slurm_version="25.11", env=SLURM_ENV,
                                 command=COMMAND)
    assert got.placement is None
    assert got.mechanism == "none"
    assert got.memory_cap == "absent"
    assert got.argv == ["srun", "--label", "--cpu-bind=cores", "--distribution=plane",
                        "--ntasks=8", "--cpus-per-task=1", *COMMAND]


def test_fields_a_mache_caller_reads():
    got = berth.parallel_command(4, cpus_per_task=2, placement=P(["nid001"], ["0-7"]),
                                 memory_cap=1024, machine="pm-cpu", slurm_version="25.11",
                                 env=SLURM_ENV, command=COMMAND)
    assert got.mechanism == "scheduler-enforced"
    assert got.memory_cap == "enforced" and got.memory_cap_mb == 1024
    assert "--mem=1024M" in got.argv
    assert got.env == {}
    # Several tasks on a Slurm whose MPI plugins were not asked: said, not guessed.
    assert all("--mpi" in n for n in got.notes)
    assert got.tasks == 4 and got.cpus_per_task == 2
    assert got.placement.cores == ["0-7"]
    assert got.launcher.kind == "srun"
    old = berth.parallel_command(1, placement=P(["nid001"], ["0"]), memory_cap=100,
                                 machine="chrysalis", slurm_version="20.02", env=SLURM_ENV,
                                 command=COMMAND)
    assert old.mechanism == "cpu-binding"
    assert old.memory_cap == "not-enforced"
    assert any("memory cap" in n for n in old.notes)


def test_without_a_command_argv_is_the_launchers_part():
    full = berth.parallel_command(4, placement=P(["nid001"], ["0-3"]), machine="pm-cpu",
                                  slurm_version="25.11", env=SLURM_ENV, command=COMMAND)
    prefix = berth.parallel_command(4, placement=P(["nid001"], ["0-3"]), machine="pm-cpu",
                                    slurm_version="25.11", env=SLURM_ENV)
    assert prefix.argv == full.argv[:-2]
    assert prefix.argv[0] == "srun"
    assert full.shell == prefix.shell + " ./a.out arg"


# The refusals place_test.sh checks, through Python: the same message, the type a
# caller branches on.
REFUSALS = [
    (berth.PlacementRefused, "node 'nid009' is not in the slurm allocation",
     dict(ntasks=1, placement=P(["nid009"]), machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "1", "--nodes", "nid009"]),
    (berth.PlacementRefused, "core 999 is not usable",
     dict(ntasks=1, placement=P(["nid001"], ["999"]), machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "1", "--nodes", "nid001",
      "--cores", "999"]),
    (berth.PlacementRefused, "cannot confine GPUs",
     dict(ntasks=1, placement=P(["nid001"], ["0"], gpus=1), machine="chrysalis",
          slurm_version="20.02"),
     ["--machine", "chrysalis", "--slurm-version", "20.02", "-n", "1", "--nodes", "nid001",
      "--cores", "0", "--gpus", "1"]),
    (berth.PlacementRefused, "do not fit",
     dict(ntasks=3, placement=P(["nid001"], ["0-1"]), machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "3", "--nodes", "nid001",
      "--cores", "0-1"]),
    (berth.BadInput, "must be at least 1",
     dict(ntasks=0, machine="pm-cpu", slurm_version="25.11"),
     ["--machine", "pm-cpu", "--slurm-version", "25.11", "-n", "0"]),
]


@pytest.mark.parametrize("exc,needle,kwargs,flags", REFUSALS, ids=[r[1] for r in REFUSALS])
def test_refusals_equal_the_clis(cli, exc, needle, kwargs, flags):
    with pytest.raises(exc) as e:
        berth.parallel_command(**kwargs, command=COMMAND, env=SLURM_ENV)
    assert needle in str(e.value)
    done = cli.run("place", "--env-file", cli.env_file(SLURM_ENV), *flags, "--", *COMMAND)
    assert done.returncode == 2
    assert needle in done.stderr
    # The CLI names the flag the input came from; the message after it is the same.
    assert done.stderr.strip().endswith(str(e.value))


def test_pals_without_pals_refuses_placement(cli, tmp_path):
    nodes = tmp_path / "pbs_nodes"
    nodes.write_text("x1\nx2\n")
    env = {"PATH": "/usr/bin:/bin", "PBS_JOBID": "3.pbs", "PBS_NODEFILE": str(nodes)}
    with pytest.raises(berth.PlacementRefused, match="placement refused") as e:
        berth.parallel_command(2, placement=P(["x1", "x2"], ["0"], gpu_ids=["0"]),
                               machine="polaris", env=env, command=["./a.out"])
    done = cli.run("place", "--machine", "polaris", "--env-file", cli.env_file(env), "-n", "2",
                   "--nodes", "x1,x2", "--cores", "0", "--gpu-ids", "0", "--", "./a.out")
    assert done.stderr.strip() == f"berth: {e.value}"
    # Unplaced, the same launcher renders the plain command.
    plain = berth.parallel_command(2, machine="polaris", env=env, command=["./a.out"])
    assert plain.argv[0] == "mpiexec" and plain.mechanism == "none"


def test_local_launch_is_bound_to_its_cores(cli):
    last = berth.machine(env=EMPTY_ENV).usable_core_ids[-1]
    before = os.sched_getaffinity(0)
    probe = ["grep", "Cpus_allowed_list", "/proc/self/status"]
    got = berth.parallel_command(1, placement=P(cores=[[last]]), env=EMPTY_ENV, command=probe)
    want = cli.json("place", "--format", "json", "--env-file", cli.env_file(EMPTY_ENV), "-n", "1",
                    "--cores", last, "--", *probe)
    assert got.to_dict() == want
    assert got.mechanism == "cpu-binding"
    assert got.cpus == [last]
    assert got.argv == probe
    assert f"taskset --cpu-list {last} grep" in got.shell
    done = got.run(capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == str(last)
    # Only the launch was bound: the thread that started it is as it was.
    assert os.sched_getaffinity(0) == before
    # Its environment is os.environ with the rendered variables (the GPU visibility
    # variable, set to none) over it.
    assert len(got.env.to_dict()) == 1 and list(got.env.to_dict().values()) == [""]
    assert got.environ({"A": "1"}) == {"A": "1", **got.env.to_dict()}
    assert got.environ()["PATH"] == os.environ["PATH"]
    with got.popen(stdout=-1, text=True) as p:
        assert p.stdout.read().split()[-1] == str(last)
    # The launcher's part alone, with the command given to run().
    bare = berth.parallel_command(1, placement=P(cores=[[last]]), env=EMPTY_ENV)
    assert bare.argv == []
    assert bare.run(probe, capture_output=True, text=True).stdout.split()[-1] == str(last)
    with pytest.raises(berth.BadInput, match="no command"):
        bare.run()


def test_local_launcher_refuses_other_nodes():
    core = berth.machine(env=EMPTY_ENV).usable_core_ids[0]
    with pytest.raises(berth.PlacementRefused, match="this node only"):
        berth.parallel_command(1, placement=P(["a", "b"], [[core]]), hosts=["a", "b"],
                               env=EMPTY_ENV, launcher="local", command=["true"])
    # A node nothing reaches from here is refused, not run here under its name.
    with pytest.raises(berth.PlacementRefused, match="elsewhere"):
        berth.parallel_command(1, placement=P(["elsewhere"], [[core]]), hosts=["elsewhere"],
                               env=EMPTY_ENV, launcher="local", command=["true"])

"""The module's surface: the functions, the result objects and the error types, each
against what the berth binary says for the same input."""

import os

import pytest

import berth
from conftest import EMPTY_ENV, SLURM_ENV


def test_module_names_its_version():
    assert berth.__version__
    assert berth.engine_version.startswith(f"berth {berth.__version__} (commit ")


def test_the_error_types_are_a_hierarchy_callers_can_branch_on():
    assert issubclass(berth.BadInput, berth.Error)
    assert issubclass(berth.BadInput, ValueError)
    assert issubclass(berth.PlacementRefused, berth.Error)
    assert issubclass(berth.RunFailed, berth.Error)
    assert issubclass(berth.Error, Exception)
    for name in ("Error", "BadInput", "PlacementRefused", "RunFailed", "Pool", "Placement",
                 "allocation", "machine", "parallel_command", "run", "report", "NOT_NOW",
                 "NeverFits"):
        assert name in berth.__all__ and hasattr(berth, name)


def test_allocation_is_what_berth_alloc_reports(cli):
    got = berth.allocation(env=SLURM_ENV)
    want = cli.json("alloc", "--format", "json", "--env-file", cli.env_file(SLURM_ENV))
    assert got.to_dict() == want
    assert got == want
    assert isinstance(got, berth.Allocation)
    assert got.owner == "slurm" and got.job_id == "9" and got.total_slots == 512
    assert [n.name for n in got.nodes] == ["nid001", "nid002", "nid003", "nid004"]
    assert got.nodes[0].slots == 128 and got.nodes[0]["slots_given"] is True
    assert "owner" in dir(got)
    with pytest.raises(AttributeError):
        got.no_such_field
    with pytest.raises(AttributeError):
        got.owner = "pbs"


def test_allocation_from_hosts_and_simulate(cli):
    got = berth.allocation(env=EMPTY_ENV, hosts=["a:2,b:3"])
    want = cli.json("alloc", "--format", "json", "--env-file", cli.env_file(EMPTY_ENV),
                    "-H", "a:2,b:3")
    assert got.to_dict() == want
    assert got.total_slots == 5
    sim = berth.allocation(env=EMPTY_ENV, simulate="2x8")
    assert sim.owner == "simulator" and sim.total_slots == 16


def test_allocation_defaults_to_the_process_environment(cli):
    got = berth.allocation()
    want = cli.json("alloc", "--format", "json")
    assert got.to_dict() == want


def test_machine_is_what_berth_machine_reports(cli, fake_node):
    seams = dict(env=SLURM_ENV, machine="pm-cpu", slurm_version="25.11",
                 sysfs_root=str(fake_node), affinity="0-7")
    got = berth.machine(**seams)
    want = cli.json("machine", "--format", "json", "--env-file", cli.env_file(SLURM_ENV),
                    "--machine", "pm-cpu", "--slurm-version", "25.11",
                    "--sysfs-root", fake_node, "--affinity", "0-7")
    assert got.to_dict() == want
    assert isinstance(got, berth.Machine)
    assert got.machine == "pm-cpu"
    assert got.launcher.kind == "srun"
    assert got.launcher.version == "25.11"
    assert got.usable_core_ids == want["usable_core_ids"]
    assert got.placement_support == "scheduler-enforced"
    assert got.nodes == ["nid001", "nid002", "nid003", "nid004"]
    # affinity= as a list is the same list.
    assert berth.machine(**{**seams, "affinity": range(8)}) == got


def test_machine_names_each_gpu(fake_node):
    # Two NVIDIA GPUs as the driver lays them out; the first on NUMA node 1.
    for i, bus in enumerate(["0000:41:00.0", "0000:c1:00.0"]):
        d = fake_node / "proc/driver/nvidia/gpus" / bus
        d.mkdir(parents=True)
        (d / "information").write_text(
            f"Model: \t\t NVIDIA A100-SXM4-40GB\nGPU UUID: \t GPU-{i}aaa\nBus Location: \t {bus}\n")
        pci = fake_node / "sys/bus/pci/devices" / bus
        pci.mkdir(parents=True)
        (pci / "numa_node").write_text(f"{1 - i}\n")
        (pci / "local_cpulist").write_text("8-15\n" if i == 0 else "0-7\n")
    got = berth.machine(env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "1"},
                        sysfs_root=str(fake_node), affinity="0-15").to_dict()
    devices = got["gpus"]["devices"]
    assert [(d["id"], d["uuid"], d["bus"], d["numa_node"], d["local_cores"], d["usable"])
            for d in devices] == [("0", "GPU-0aaa", "0000:41:00.0", 1, "8-15", False),
                                  ("1", "GPU-1aaa", "0000:c1:00.0", 0, "0-7", True)]
    assert devices[0]["model"] == "NVIDIA A100-SXM4-40GB"


def test_machine_with_each_launcher(cli):
    for launcher in ("local", "srun"):
        extra = ["--slurm-version", "22.05"] if launcher == "srun" else []
        got = berth.machine(env=EMPTY_ENV, launcher=launcher,
                            slurm_version="22.05" if launcher == "srun" else None)
        want = cli.json("machine", "--format", "json", "--env-file", cli.env_file(EMPTY_ENV),
                        "--launcher", launcher, *extra)
        assert got.to_dict() == want, launcher


def test_bad_input_is_BadInput_with_berths_message(cli):
    env = {**SLURM_ENV, "SLURM_TASKS_PER_NODE": "12(x"}
    with pytest.raises(berth.BadInput) as e:
        berth.allocation(env=env)
    done = cli.run("alloc", "--env-file", cli.env_file(env))
    assert done.returncode == 2
    assert done.stderr.strip() == f"berth: {e.value}"
    assert e.value.code == "invalid-input"
    assert e.value.message == str(e.value)
    assert "SLURM_TASKS_PER_NODE" in str(e.value)

    with pytest.raises(berth.BadInput, match="--affinity"):
        berth.machine(env=EMPTY_ENV, affinity="3-1")
    with pytest.raises(berth.BadInput, match="the launcher is not srun"):
        berth.machine(env=EMPTY_ENV, launcher="local", slurm_version="22.05")
    with pytest.raises(berth.BadInput, match="none of auto, srun, pals, local, mpirun and hydra"):
        berth.machine(env=EMPTY_ENV, launcher="aprun")
    with pytest.raises(berth.BadInput, match="no-such-machine"):
        berth.machine(env=EMPTY_ENV, machine="no-such-machine")
    with pytest.raises(ValueError):  # BadInput is a ValueError
        berth.allocation(env=EMPTY_ENV, simulate="0x")


def test_a_refused_filter_is_PlacementRefused(cli):
    with pytest.raises(berth.PlacementRefused, match="nid009") as e:
        berth.allocation(env=SLURM_ENV, hosts="nid009")
    assert e.value.code == "refused"
    done = cli.run("alloc", "--env-file", cli.env_file(SLURM_ENV), "-H", "nid009")
    assert done.stderr.strip() == f"berth: {e.value}"


def test_placement_by_hand():
    p = berth.Placement(nodes=["a", "b"], cores=["0-3", [4, 5]], gpus=0)
    assert p.nodes == ["a", "b"]
    assert p.cores == [[0, 1, 2, 3], [4, 5]]
    assert p.gpus == 0 and p.gpu_ids == []
    assert p.to_dict() == {"nodes": ["a", "b"], "cores": ["0-3", "4-5"], "gpus": 0,
                           "gpu_ids": []}
    assert not p.granted and p.id == 0
    p.release()  # made by hand: nothing to give back
    with p as same:
        assert same is p
    # GPU ids alone make the GPU total, as --gpu-ids alone does.
    assert berth.Placement(nodes=["a"], cores=["0"], gpu_ids=["0", "1"]).gpus == 2
    assert berth.Placement(nodes="a").nodes == ["a"]
    assert berth.Placement().cores is None
    assert "Placement(nodes=['a', 'b']" in repr(p)
    assert berth.Placement(nodes=["a"], cores=["0-1"]) == berth.Placement(nodes=["a"],
                                                                           cores=[[0, 1]])
    with pytest.raises(berth.BadInput, match="cores"):
        berth.Placement(nodes=["a"], cores=["3-1"])


def test_report_of_a_pipeline_never_run_is_BadInput(tmp_path):
    (tmp_path / "p.toml").write_text("")
    with pytest.raises(berth.BadInput, match="last-run.json") as e:
        berth.report(tmp_path / "p.toml")
    assert e.value.code == "not-found"


def test_records_compare_and_copy():
    a = berth.allocation(env=EMPTY_ENV, hosts="x:2")
    d = a.to_dict()
    d["owner"] = "changed"
    assert a.owner != "changed"  # to_dict is a copy
    assert a == berth.allocation(env=EMPTY_ENV, hosts="x:2")
    assert a != berth.allocation(env=EMPTY_ENV, hosts="x:3")
    assert list(a.keys())[0] == "version"
    assert "berth.Allocation(" in repr(a)


def test_os_environ_is_read_at_each_call(monkeypatch):
    monkeypatch.setenv("BERTH_DEFAULT_HOSTFILE", "")
    for k in list(os.environ):
        if k.startswith(("SLURM_", "PBS_", "LSB_", "PE_", "FLUX_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "q[1-2]")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "3(x2)")
    got = berth.allocation()
    assert got.owner == "slurm" and got.job_id == "77" and got.total_slots == 6

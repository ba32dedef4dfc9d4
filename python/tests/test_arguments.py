"""Arguments said the ways a caller would say them: Placement's cores as one set or one
per node, a launch the local launcher cannot start refused as the CLI refuses it, and a
report's repr on one line."""

import pytest

import berth

from conftest import EMPTY_ENV


def test_placement_cores_as_one_set():
    assert berth.Placement(cores="0-3").cores == [[0, 1, 2, 3]]
    assert berth.Placement(cores=[0, 1]).cores == [[0, 1]]
    assert berth.Placement(nodes=["a", "b"], cores="2,4").to_dict()["cores"] == ["2,4"]
    assert berth.Placement(cores=[0, 1]) == berth.Placement(cores="0-1")
    # One set per node, as before.
    assert berth.Placement(nodes=["a", "b"], cores=["0-1", [2, 3]]).cores == [[0, 1], [2, 3]]
    assert berth.Placement(cores=[[5]]).cores == [[5]]


@pytest.mark.parametrize("cores", [3, [0, "1-2"], [0, [1]], [True], [[0, "x"]], 1.5])
def test_placement_cores_otherwise_says_what_it_wants(cores):
    with pytest.raises(berth.BadInput) as e:
        berth.Placement(cores=cores)
    assert 'one core set for every node ("0-3" or [0, 1]), or one per node' in str(e.value)
    assert repr(cores) in str(e.value)


def test_several_tasks_on_the_local_launcher_are_refused_as_place_auto_refuses_them(
        cli, fake_node, tmp_path):
    marker = tmp_path / "ran"
    cmd = berth.parallel_command(2, launcher="local", env=EMPTY_ENV, sysfs_root=fake_node,
                                 command=["touch", str(marker)])
    for start in (cmd.run, cmd.popen):
        with pytest.raises(berth.PlacementRefused) as e:
            start()
        assert e.value.code == "refused"
        assert not marker.exists()
    done = cli.run("place", "--auto", "-n", "2", "--run", "--launcher", "local",
                   "--sysfs-root", fake_node, "--env-file", cli.env_file(EMPTY_ENV), "--",
                   "touch", marker)
    assert done.returncode == 2
    assert done.stderr.strip() == f"berth: {e.value}"
    assert not marker.exists()
    # One task is what the local launcher starts: it runs.
    one = berth.parallel_command(1, launcher="local", env=EMPTY_ENV, sysfs_root=fake_node,
                                 command=["touch", str(marker)])
    assert one.run().returncode == 0 and marker.exists()


def test_a_reports_repr_is_one_line(tmp_path):
    path = tmp_path / "pipeline.toml"
    path.write_text('[[step]]\nname = "s-{i}"\nforeach = { i = [%s] }\n'
                    'run = "echo {i} > {out.o}"\noutputs = ["o"]\n'
                    % ", ".join(str(i) for i in range(40)))
    rep = berth.run(path, on_output=lambda step, text: None)
    text = repr(rep)
    assert "\n" not in text and len(text) < 300, text
    assert text.startswith("berth.RunReport(") and "executed=40" in text
    assert "steps=40" in text and "exit_code=0" in text
    assert repr(berth.report(path)) == text

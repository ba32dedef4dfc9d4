"""berth.run and berth.report: a pipeline run in-process, its report as the CLI writes
it, failures as RunFailed, part of a pipeline, and the GIL released while steps run."""

import _thread
import threading
import time

import pytest

import berth

PIPELINE = """
[pipeline]
name = "py"

[[step]]
name = "hello-{who}"
foreach = { who = ["a", "b"] }
run = "echo hello {who} > {out.greeting}"
outputs = ["greeting"]

[[step]]
name = "shout"
inputs = { parts = ["@hello-a/greeting", "@hello-b/greeting"] }
run = "cat {in.parts} | tr a-z A-Z > {out.loud}"
outputs = ["loud"]
"""

FAILING = """
[[step]]
name = "bad"
run = "echo broken >&2; exit 3"
outputs = ["o"]
[[step]]
name = "after-bad"
inputs = { x = "@bad/o" }
run = "cat {in.x} > {out.o}"
outputs = ["o"]
[[step]]
name = "good"
run = "echo fine > {out.o}"
outputs = ["o"]
"""


def write(tmp_path, text, name="pipeline.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def states(report):
    return {s.name: s.state for s in report.steps}


def test_a_run_and_its_report(cli, tmp_path):
    path = write(tmp_path, PIPELINE)
    seen = []
    rep = berth.run(path, on_output=lambda step, text: seen.append((step, text)))
    assert isinstance(rep, berth.RunReport)
    assert rep.ok and rep.exit_code == 0
    assert rep.executed == 3 and rep.cached == 0 and rep.failed == 0
    assert states(rep) == {"hello-a": "executed", "hello-b": "executed", "shout": "executed"}
    assert (tmp_path / "results/shout/loud").read_text() == "HELLO A\nHELLO B\n"
    assert rep.pipeline == "py"
    # berth.report is `berth report --format json`: the same document the run wrote.
    last = berth.report(path)
    assert last.to_dict() == cli.json("report", "--format", "json", path)
    assert last.to_dict() == rep.to_dict()
    # Again: everything cached (answered from the settled record), as the CLI says.
    again = berth.run(path)
    assert again.executed == 0 and again.cached == 3
    assert cli.json("run", "--format", "json", path)["cached"] == 3


def test_the_same_run_through_the_cli_and_python_shares_the_store(cli, tmp_path):
    path = write(tmp_path, PIPELINE)
    first = cli.json("run", "--format", "json", path)
    assert first["executed"] == 3
    rep = berth.run(path)
    assert rep.cached == 3 and rep.executed == 0


def test_a_failed_run_raises_RunFailed_with_its_report(tmp_path):
    path = write(tmp_path, FAILING)
    with pytest.raises(berth.RunFailed) as e:
        berth.run(path, on_output=lambda *a: None)
    err = e.value
    assert isinstance(err, berth.Error) and err.code == "failed"
    assert err.exit_code == 1
    assert "bad" in str(err)
    assert states(err.report) == {"bad": "failed", "after-bad": "skipped", "good": "executed"}
    assert "exited with status 3" in err.report.steps[0].reason
    # check=False: the report, whatever happened.
    rep = berth.run(path, check=False, on_output=lambda *a: None)
    assert rep.exit_code == 1 and not rep.ok and rep.failed == 1
    assert berth.report(path).exit_code == 1


def test_keep_failed_keeps_the_failed_steps_directory(tmp_path):
    path = write(tmp_path, FAILING)
    kept = tmp_path / ".berth" / "pipelines" / "pipeline.toml" / "failed" / "bad"
    rep = berth.run(path, check=False, on_output=lambda *a: None)
    assert not kept.exists() and "kept in" not in rep.steps[0].reason
    rep = berth.run(path, check=False, keep_failed=True, on_output=lambda *a: None)
    assert f"kept in {kept} " in rep.steps[0].reason
    assert (kept / "exit-status").read_text() == "3\n"
    assert (kept / "command.sh").exists()


def test_targets_run_part_of_a_pipeline(tmp_path):
    path = write(tmp_path, PIPELINE)
    rep = berth.run(path, targets=["hello-b"])
    assert states(rep) == {"hello-b": "executed"}
    rep = berth.run(path, targets="shout")
    assert states(rep) == {"hello-a": "executed", "hello-b": "cached", "shout": "executed"}
    with pytest.raises(berth.BadInput, match="no step is named 'nope'"):
        berth.run(path, targets=["nope"])


def test_jobs_caps_the_steps_at_once_and_is_checked(tmp_path):
    path = write(tmp_path, PIPELINE)
    rep = berth.run(path, jobs=1)
    assert rep.executed == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(berth.BadInput, match="jobs: a whole number of steps"):
            berth.run(path, jobs=bad)


def test_config_overrides_reach_the_steps(tmp_path):
    path = write(tmp_path, """
[config]
n = 1
loud = false

[[step]]
name = "say"
run = "echo {config.n} {config.loud} > {out.o}"
outputs = ["o"]
""")
    berth.run(path, config={"n": 7, "loud": True})
    assert (tmp_path / "results" / "say" / "o").read_text() == "7 true\n"
    (tmp_path / "more.toml").write_text("n = 9\n")
    berth.run(path, configfile=tmp_path / "more.toml")
    assert (tmp_path / "results" / "say" / "o").read_text() == "9 false\n"
    with pytest.raises(berth.BadInput, match="did you mean 'n'"):
        berth.run(path, config={"m": 1})


def test_dry_run_runs_nothing(tmp_path):
    path = write(tmp_path, PIPELINE)
    rep = berth.run(path, dry_run=True)
    assert rep.executed == 0
    # Counted as would-run, not as skipped; each reason said once, not "would run: …".
    assert all(s.state == "would-run" for s in rep.steps)
    assert rep.would_run == len(rep.steps) and rep.skipped == 0
    assert not any(s.reason.startswith("would run") for s in rep.steps)
    assert not (tmp_path / "results").exists()


def test_a_store_and_a_worker(tmp_path):
    path = write(tmp_path, PIPELINE)
    store = f"file://{tmp_path / 'shared'}"
    rep = berth.run(path, store=store, worker="w1")
    assert rep.executed == 3 and rep.worker == "w1"
    other = write(tmp_path, PIPELINE, "copy.toml")
    assert berth.run(other, store=store, worker=True).cached == 3
    with pytest.raises(berth.BadInput, match="--worker needs a shared store"):
        berth.run(path, worker="w2")


def test_bad_pipelines_are_BadInput(tmp_path):
    with pytest.raises(berth.BadInput) as e:
        berth.run(tmp_path / "missing.toml")
    assert e.value.code == "not-found"
    path = write(tmp_path, "[[step]]\nname = \"x\"\nrun = \"echo {in.nothing}\"\n")
    with pytest.raises(berth.BadInput, match="nothing"):
        berth.run(path)


def test_the_gil_is_released_while_a_step_runs(tmp_path):
    path = write(tmp_path, """
[[step]]
name = "sleepy"
run = "sleep 1.5; echo done > {out.o}"
outputs = ["o"]
""")
    ticks = [0]
    stop = threading.Event()

    def other():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=other)
    t.start()
    time.sleep(0.05)
    before = ticks[0]
    started = time.monotonic()
    rep = berth.run(path)
    during = ticks[0] - before
    elapsed = time.monotonic() - started
    stop.set()
    t.join()
    assert rep.executed == 1 and elapsed >= 1.5
    # The other thread ran Python all along: hundreds of ticks in 1.5 s. With the GIL
    # held by the run it would have had none.
    assert during > 100, f"{during} ticks in {elapsed:.2f} s"


def test_ctrl_c_ends_a_run_cleanly(tmp_path):
    path = write(tmp_path, """
[[step]]
name = "long"
run = "sleep 60; echo done > {out.o}"
outputs = ["o"]
""")
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        berth.run(path)
    timer.join()
    assert time.monotonic() - started < 30
    assert berth.report(path).steps[0].state == "cancelled"

"""berth.status: what a run of a pipeline is doing now, the same document as
`berth status --format json` (spec 04 §7.6)."""

import subprocess
import time

import berth


def without_times(doc):
    """The document less what changes between two looks (how long, so far)."""
    doc = dict(doc)
    doc["run"] = {k: v for k, v in doc["run"].items() if k != "for_s"}
    doc["running"] = [{k: v for k, v in s.items() if k != "for_s"} for s in doc["running"]]
    return doc


def test_status_is_berth_status_json_during_and_after_a_run(cli, tmp_path):
    flag = tmp_path / "go"
    path = tmp_path / "pipeline.toml"
    path.write_text(f"""
[[step]]
name = "wait"
run = "while [ ! -e {flag} ]; do sleep 0.05; done; echo done > {{out.o}}"
outputs = ["o"]
""")
    assert berth.status(path).state == "none"
    run = subprocess.Popen([cli.path, "run", str(path)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not berth.status(path).running:
            time.sleep(0.1)
        now = berth.status(path)
        assert now.state == "running"
        assert now.run.pid == run.pid
        assert [s.step for s in now.running] == ["wait"]
        assert len(now.running[0].cores) == 1
        assert without_times(now.to_dict()) == without_times(
            cli.json("status", "--format", "json", path))
    finally:
        flag.write_text("")
        run.wait(timeout=60)
    after = berth.status(path)
    assert after.state == "ended" and after.running == [] and after.ended
    assert after.to_dict() == cli.json("status", "--format", "json", path)

"""berth.log, berth.methods and berth.store_verify: what a run left, read back in-process,
answering exactly what `berth log`, `berth methods` and `berth store verify` print, with
their errors as the module's exceptions."""

import os

import pytest

import berth

PIPELINE = """
[[step]]
name = "hello-{who}"
foreach = { who = ["a", "b"] }
run = "echo 'said by {who}'; echo hello {who} > {out.greeting}"
outputs = ["greeting"]

[[step]]
name = "quiet"
inputs = { g = "@hello-a/greeting" }
run = "cat {in.g} > {out.o}"
outputs = ["o"]
"""


@pytest.fixture
def ran(tmp_path):
    path = tmp_path / "pipeline.toml"
    path.write_text(PIPELINE)
    berth.run(path, on_output=lambda step, text: None)
    return path


def test_log_is_what_berth_log_prints(cli, ran):
    got = berth.log(ran, "hello-b")
    done = cli.run("log", ran, "hello-b")
    assert done.returncode == 0, done.stderr
    assert got == done.stdout
    assert got == "said by b\n"
    assert berth.log(ran, "quiet") == ""  # a step that printed nothing: an empty log


def test_log_errors_are_the_clis(cli, ran, tmp_path):
    with pytest.raises(berth.BadInput) as e:
        berth.log(ran, "no-such-step")
    assert e.value.code == "not-found"
    done = cli.run("log", ran, "no-such-step")
    assert done.returncode == 2
    assert done.stderr.strip() == f"berth: berth log: {e.value}"
    assert "has no step 'no-such-step'" in str(e.value)
    # Before any run: a sentence saying so, not a file error.
    never = tmp_path / "never.toml"
    never.write_text(PIPELINE)
    with pytest.raises(berth.BadInput, match="has not run here yet"):
        berth.log(never, "hello-a")
    # A store that is not there is named, and not created.
    with pytest.raises(berth.BadInput, match="no berth store there"):
        berth.log(ran, "hello-a", store=f"file://{tmp_path}/typo")
    assert not (tmp_path / "typo").exists()


def test_methods_is_what_berth_methods_prints(cli, ran, tmp_path):
    got = berth.methods(ran)
    done = cli.run("methods", ran)
    assert done.returncode == 0, done.stderr
    assert got == done.stdout
    assert "berth" in got and len(got.splitlines()) >= 1
    never = tmp_path / "other.toml"
    never.write_text(PIPELINE)
    with pytest.raises(berth.BadInput, match="has not run here yet"):
        berth.methods(never)


def test_store_verify_counts_as_berth_store_verify_does(cli, ran, tmp_path):
    check = berth.store_verify(pipeline=ran)
    url = f"file://{tmp_path}/.berth/store"
    assert check.store == url
    done = cli.run("store", "verify", "--store", url)
    assert done.returncode == 0
    last = done.stdout.splitlines()[-1]
    assert last == f"{check.verified} object(s) verified, 0 bad"
    assert check.verified == 3 and check.ok and check.bad == [] and bool(check)
    assert [n for n, _ in check.objects] == [l.split()[-1] for l in done.stdout.splitlines()[:-1]]
    assert berth.store_verify(url).verified == 3
    assert "\n" not in repr(check) and "verified=3" in repr(check)
    # Without a store or a pipeline: pipeline.toml's here.
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert berth.store_verify().store == url
    finally:
        os.chdir(cwd)


def test_store_verify_names_the_bad_objects(ran, tmp_path):
    check = berth.store_verify(pipeline=ran)
    name = check.objects[0][0]
    copy = next(p for p in (tmp_path / ".berth/store/objects").rglob("*")
                if p.is_file() and p.name == name.split(":")[1][2:])
    copy.chmod(0o644)
    copy.write_text("garbage\n")
    again = berth.store_verify(pipeline=ran)
    assert again.bad == [name] and not again.ok
    assert again.verified == check.verified
    # Only the named ones, when named.
    other = check.objects[1][0]
    assert berth.store_verify(pipeline=ran, names=other).objects == [(other, True)]


def test_store_verify_of_a_missing_store_is_an_error_creating_nothing(tmp_path):
    with pytest.raises(berth.BadInput, match="no berth store there") as e:
        berth.store_verify(f"file://{tmp_path}/typo/store")
    assert e.value.code == "not-found"
    assert not (tmp_path / "typo").exists()
    (tmp_path / "p.toml").write_text(PIPELINE)
    with pytest.raises(berth.BadInput, match="no berth store there"):
        berth.store_verify(pipeline=tmp_path / "p.toml")
    assert not (tmp_path / ".berth").exists()
    with pytest.raises(berth.BadInput, match="not both"):
        berth.store_verify(f"file://{tmp_path}/s", pipeline=tmp_path / "p.toml")


def test_runs_lists_the_history_as_the_cli_does(cli, ran, tmp_path):
    # A second, targeted run, and a worker's run against the same store.
    berth.run(ran, targets=["hello-a"], on_output=lambda step, text: None)
    store = f"file://{tmp_path}/.berth/store"
    berth.run(ran, worker="w3", store=store, on_output=lambda step, text: None)
    got = berth.runs(ran)
    done = cli.run("runs", ran, "--format", "json")
    assert done.returncode == 0, done.stderr
    import json
    assert [r.to_dict() for r in got] == json.loads(done.stdout)
    assert len(got) == 3
    assert got[0].worker == "w3"  # newest first
    assert got[1].targets == ["hello-a"]
    assert got[2].executed == 3
    # methods of the targeted run still describes the whole pipeline.
    assert "The 3 output(s)" in berth.methods(ran, run=got[1].id)
    with pytest.raises(berth.BadInput, match="no such run"):
        berth.methods(ran, run="1999")


def test_runs_before_any_run_says_so(tmp_path):
    never = tmp_path / "never.toml"
    never.write_text(PIPELINE)
    with pytest.raises(berth.BadInput, match="has not run here yet"):
        berth.runs(never)
    assert not (tmp_path / ".berth").exists()

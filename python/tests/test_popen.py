"""ParallelCommand.popen() and run(): the command is started by berth's spawner (its own
process group, bound to the launch's CPUs in the child, guarded), and the object is
subprocess.Popen's, with the surface callers use."""

import os
import signal
import subprocess
import time

import pytest

import berth
from conftest import EMPTY_ENV

P = berth.Placement


def last_core():
    return berth.machine(env=EMPTY_ENV).usable_core_ids[-1]


def bound(command=None):
    """A launch bound to the last usable core, rendered by the local launcher."""
    core = last_core()
    return core, berth.parallel_command(1, placement=P(cores=[[core]]), env=EMPTY_ENV,
                                        command=command)


def test_the_child_leads_a_process_group_of_its_own():
    _, launch = bound()
    with launch.popen(["sleep", "30"]) as p:
        try:
            assert os.getpgid(p.pid) == p.pid
            assert os.getpgid(p.pid) != os.getpgrp()
        finally:
            p.kill()
    assert p.returncode == -signal.SIGKILL


def test_the_child_is_bound_to_the_launchs_cpus_and_the_caller_is_not():
    core, launch = bound()
    before = os.sched_getaffinity(0)
    with launch.popen(["sleep", "30"]) as p:
        try:
            assert os.sched_getaffinity(p.pid) == {core}
            assert os.sched_getaffinity(0) == before
        finally:
            p.terminate()
    assert p.returncode == -signal.SIGTERM


def test_what_the_command_left_running_ends_with_it(tmp_path):
    _, launch = bound()
    pidfile = tmp_path / "pid"
    done = launch.run(["/bin/sh", "-c", f"sleep 30 & echo $! > {pidfile}"], check=True)
    assert done.returncode == 0
    sleeper = int(pidfile.read_text())
    for _ in range(500):
        try:
            os.kill(sleeper, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the command's background process outlived it")


def test_communicate_feeds_stdin_and_reads_both_streams():
    _, launch = bound()
    script = "cat; echo oops >&2; exit 3"
    with launch.popen(["/bin/sh", "-c", script], stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        out, err = p.communicate("hello\n", timeout=10)
    assert (out, err, p.returncode) == ("hello\n", "oops\n", 3)
    merged = launch.run(["/bin/sh", "-c", "echo a; echo b >&2"], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
    assert sorted(merged.stdout.split()) == ["a", "b"]


def test_run_returns_a_completed_process_and_checks():
    _, launch = bound()
    done = launch.run(["/bin/sh", "-c", "exit 4"])
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 4
    with pytest.raises(subprocess.CalledProcessError):
        launch.run(["/bin/sh", "-c", "exit 4"], check=True)
    got = launch.run(["cat"], input=b"x", capture_output=True)
    assert got.stdout == b"x" and got.args[-1] == "cat"


def test_timeouts_raise_and_leave_the_child_to_the_caller():
    _, launch = bound()
    p = launch.popen(["sleep", "30"])
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=0.1)
    assert p.poll() is None
    p.send_signal(signal.SIGINT)
    assert p.wait(timeout=10) == -signal.SIGINT
    with pytest.raises(subprocess.TimeoutExpired):
        launch.run(["sleep", "30"], timeout=0.1)


def test_the_environment_and_directory_are_the_ones_given(tmp_path):
    _, launch = bound()
    done = launch.run(["/bin/sh", "-c", 'echo "$A" "$(pwd)"'], env={"A": "1", **EMPTY_ENV},
                      cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout.split() == ["1", str(tmp_path)]


def test_a_missing_program_is_file_not_found():
    _, launch = bound()
    with pytest.raises(FileNotFoundError, match="berth-no-such-program"):
        launch.popen(["berth-no-such-program"])


def test_what_berth_starts_its_own_way_is_refused():
    _, launch = bound()
    with pytest.raises(berth.BadInput, match="preexec_fn"):
        launch.popen(["true"], preexec_fn=lambda: None)
    with pytest.raises(berth.BadInput, match="start_new_session"):
        launch.popen(["true"], start_new_session=True)

"""berth from Python: the allocation, placements, pools and pipelines, in-process.

    import berth
    pool = berth.Pool()                       # the discovered allocation, this node's cores
    with pool.grant(ntasks=4, cpus_per_task=2, wait=True) as p:
        cmd = berth.parallel_command(4, cpus_per_task=2, placement=p, command=["./sim"])
        cmd.run(check=True)                   # or subprocess with cmd.argv and cmd.environ()
    report = berth.run("pipeline.toml")

Every function reads what the CLI reads and answers what it prints: allocation() is
`berth alloc --format json`, machine() is `berth machine --format json`,
parallel_command() is `berth place --format json`, run() is `berth run --format json`,
report() is `berth report --format json` — as objects whose fields are the JSON's
(to_dict() gives the JSON itself); log() and methods() are the text `berth log` and
`berth methods` print, store_verify() what `berth store verify` finds. The CLI's seams are keyword arguments: env= (a
mapping read instead of os.environ, as --env-file is), machine=, sysfs_root=,
affinity=, slurm_version=, launcher=, and hosts=, hostfile=, simulate=.

Errors are exceptions carrying berth's message: BadInput (a ValueError), PlacementRefused,
RunFailed, all berth.Error. docs/python.md has the worked example.

This file is compiled into the extension (python/embed.cmake) and run in its namespace;
the names starting with an underscore that it calls are the native layer
(python/berth_module.cc).
"""

import copy as _copy
import numbers as _numbers
import os as _os
import subprocess as _subprocess
import time as _time

__all__ = [
    "Error", "BadInput", "PlacementRefused", "RunFailed",
    "Record", "Allocation", "Machine", "ParallelCommand", "RunReport",
    "Placement", "Pool", "NotNow", "NOT_NOW", "NeverFits",
    "allocation", "machine", "parallel_command", "run", "report",
    "log", "methods", "runs", "store_verify", "StoreCheck", "status",
]


# --- Errors -------------------------------------------------------------------------


class Error(Exception):
    """A berth error. `message` is berth's own; `code` its kind: "invalid-input",
    "not-found", "io", "refused", "unsupported", "internal", or "failed" (a run)."""

    def __init__(self, message, code="internal"):
        super().__init__(message)
        self.message = message
        self.code = code


class BadInput(Error, ValueError):
    """The input does not parse, is out of range or names nothing: a variable, an
    argument, a file. Nothing ran."""


class PlacementRefused(Error):
    """Valid input berth will not honour: a node outside the allocation, a core not
    usable there, a placement this launcher cannot confine, a request no pool could
    ever grant."""


class RunFailed(Error):
    """berth.run() finished, and a step failed, was refused or was cancelled.
    `report` is the run's report (a RunReport); `exit_code` what `berth run` exits with."""

    def __init__(self, message, report=None, exit_code=1):
        super().__init__(message, "failed")
        self.report = report
        self.exit_code = exit_code


# --- Results: the CLI's JSON as objects ---------------------------------------------


def _wrap(value):
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Record:
    """A JSON document berth printed, read as an object: every key is an attribute
    (nested objects are Records too), r["key"] works as well, and to_dict() returns
    the document itself."""

    def __init__(self, data):
        object.__setattr__(self, "_data", dict(data))

    def __getattr__(self, name):
        data = self.__dict__.get("_data", {})
        if name in data:
            return _wrap(data[name])
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def keys(self):
        return self._data.keys()

    def get(self, key, default=None):
        return _wrap(self._data.get(key, default))

    def to_dict(self):
        """The document as plain Python values (a deep copy)."""
        return _copy.deepcopy(self._data)

    def __eq__(self, other):
        if isinstance(other, Record):
            return self._data == other._data
        if isinstance(other, dict):
            return self._data == other
        return NotImplemented

    __hash__ = None

    def __dir__(self):
        return sorted(set(super().__dir__()) | {k for k in self._data if k.isidentifier()})

    def __repr__(self):
        return f"berth.{type(self).__name__}({self._data!r})"


class Allocation(Record):
    """What `berth alloc --format json` prints: owner, scheduler_owned, job_id,
    total_slots and nodes (each with name, rawname, aliases, slots, slots_max,
    slots_given, state, local, index)."""


class Machine(Record):
    """What `berth machine --format json` prints: the machine and why, the launcher
    (kind, version, ...), this node's cores, GPUs and memory, the allocation's nodes,
    placement_support and memory_cap_support."""


class ParallelCommand(Record):
    """One launch rendered for the launcher (`berth place --format json`): argv, env
    (variables to set for it), mechanism ("scheduler-enforced", "cpu-binding", "none"),
    memory_cap ("enforced", "not-enforced", "absent") and memory_cap_mb, placement,
    bind_cpus (the local launcher's CPUs, which popen() and run() bind to), tasks,
    cpus_per_task, launcher and notes (what was dropped or decided).

    Without command= to parallel_command, argv is the launcher's part alone: append
    the command (popen(args) and run(args) do)."""

    def __init__(self, data, shell=""):
        super().__init__(data)
        object.__setattr__(self, "_shell", shell)

    @property
    def shell(self):
        """The launch as one line a shell would run (the local launcher's binding as
        taskset)."""
        return self._shell

    @property
    def cpus(self):
        """The CPU ids the local launcher binds the launch to; [] when the launcher (or
        nothing) confines it."""
        bind = self._data.get("bind_cpus")
        return _parse_ids(bind, "bind_cpus") if bind else []

    def environ(self, base=None):
        """The launch's environment: `base` (os.environ when None) with env over it."""
        out = dict(_os.environ if base is None else base)
        out.update(self._data.get("env", {}))
        return out

    def popen(self, args=(), **kwargs):
        """argv + args started as subprocess.Popen would (same arguments, same object:
        pid, returncode, poll, wait, communicate, send_signal, terminate, kill, the
        pipes, a context manager), in environ(kwargs' env), but by berth's own spawner:
        bound to cpus in the child when the local launcher renders the placement (the
        binding is inherited by everything the launch starts), in a process group of
        its own that is sent SIGKILL when the command ends (so nothing it left running
        outlives it), and known to berth's guard, so that it ends when this process
        ends however that ends. The arguments berth does not honour (preexec_fn,
        pass_fds, executable, user, group, extra_groups, umask, start_new_session,
        process_group) are refused as BadInput; a launch of more than one task on the
        local launcher, which starts one process, is refused as PlacementRefused."""
        argv = list(self._data.get("argv", [])) + [str(a) for a in args]
        # The local launcher starts one process: a launch of several tasks would run
        # once, not as asked. Refused as `berth place --auto` refuses it (place/render.cc).
        tasks = self._data.get("tasks", 1)
        if self._data.get("launcher", {}).get("kind") == "local" and tasks != 1:
            raise PlacementRefused(f"the local launcher starts one process, not {tasks} tasks",
                                   "refused")
        if not argv:
            raise BadInput("no command to launch: give args, or command= to parallel_command",
                           "invalid-input")
        kwargs["env"] = self.environ(kwargs.get("env"))
        return _Launched(argv, self.cpus, **kwargs)

    def run(self, args=(), *, input=None, capture_output=False, timeout=None, check=False,
            **kwargs):
        """Like subprocess.run, through popen(): a CompletedProcess."""
        if input is not None:
            kwargs["stdin"] = _subprocess.PIPE
        if capture_output:
            kwargs["stdout"] = kwargs["stderr"] = _subprocess.PIPE
        with self.popen(args, **kwargs) as p:
            try:
                out, err = p.communicate(input, timeout=timeout)
            except BaseException:
                p.kill()
                p.wait()
                raise
        done = _subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check:
            done.check_returncode()
        return done


class _Launched(_subprocess.Popen):
    """ParallelCommand.popen()'s process: subprocess.Popen's object, started and reaped
    by berth (python/launched.cc) instead of by fork and waitpid."""

    # Popen arguments that change how the child is made, which berth's spawner makes
    # its own way: with the value each has when not given.
    _REFUSED = {"preexec_fn": None, "pass_fds": (), "executable": None, "user": None,
                "group": None, "extra_groups": None, "umask": -1,
                "start_new_session": False, "process_group": None}

    def __init__(self, argv, cpus, **kwargs):
        for name, default in self._REFUSED.items():
            value = kwargs.get(name, default)
            if value != default and not (default == () and not value):
                raise BadInput(f"popen: {name}= is not supported: berth starts the command "
                               "itself", "invalid-input")
        self._cpus = list(cpus)
        self._child = None
        super().__init__(argv, **kwargs)

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
                       startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
                       errread, errwrite, *_rest):
        if isinstance(args, (str, bytes, _os.PathLike)):
            args = [args]
        args = [_os.fsdecode(a) for a in args]
        if shell:
            args = ["/bin/sh", "-c"] + args
        env = _os.environ if env is None else env
        envp = [f"{_os.fsdecode(k)}={_os.fsdecode(v)}" for k, v in env.items()]
        # Popen's -1 is "berth's own descriptor"; the spawner's is /dev/null.
        fds = [fd if fd != -1 else std for fd, std in ((p2cread, 0), (c2pwrite, 1), (errwrite, 2))]
        self._child = _spawn(args, envp, "" if cwd is None else _os.fsdecode(cwd), self._cpus,
                             *fds)
        self.pid = self._child.pid
        self._child_created = True
        # The child holds its own copies now; the parent's would keep its pipes open.
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    # One thread at a time looks at the child (Popen's own lock): a poll() while another
    # thread waits answers None, as Popen's does.
    def _internal_poll(self, *_args, **_kwargs):
        if self.returncode is None and self._child is not None:
            if not self._waitpid_lock.acquire(False):
                return None
            try:
                if self.returncode is None:
                    self.returncode = self._child.poll()
            finally:
                self._waitpid_lock.release()
        return self.returncode

    def _wait(self, timeout):
        if self.returncode is not None:
            return self.returncode
        endtime = None if timeout is None else _time.monotonic() + timeout
        if not self._waitpid_lock.acquire(timeout=-1 if timeout is None else max(0, timeout)):
            raise _subprocess.TimeoutExpired(self.args, timeout)
        try:
            if self.returncode is None:
                left = None if endtime is None else max(0.0, endtime - _time.monotonic())
                code = self._child.wait(left)
                if code is None:
                    raise _subprocess.TimeoutExpired(self.args, timeout)
                self.returncode = code
        finally:
            self._waitpid_lock.release()
        return self.returncode


class RunReport(Record):
    """A run's report (`berth run --format json`, `berth report --format json`):
    pipeline, store, started, elapsed_s, the counts (executed, cached, failed, skipped,
    refused, cancelled; a dry run's also would_run), steps (name, state, key, reason, node, cores, outputs, ...),
    divergences, problems, notices, leases."""

    def __init__(self, data, exit_code=None, worker=""):
        super().__init__(data)
        if exit_code is None:
            counts = self._data
            exit_code = (130 if counts.get("cancelled") else
                         1 if counts.get("failed") or counts.get("refused") else 0)
        object.__setattr__(self, "_exit_code", exit_code)
        object.__setattr__(self, "_worker", worker)

    @property
    def exit_code(self):
        """What `berth run` exits with: 0, 1 when a step failed or was refused, 130 when
        the run was cancelled."""
        return self._exit_code

    @property
    def ok(self):
        return self._exit_code == 0

    def __repr__(self):
        # One line, whatever the number of steps: the counts, not the document.
        counts = ", ".join(f"{k}={self._data[k]}" for k in
                           ("executed", "cached", "failed", "skipped", "refused", "cancelled")
                           if k in self._data)
        return (f"berth.RunReport(pipeline={self._data.get('pipeline', '')!r}, {counts}, "
                f"steps={len(self._data.get('steps') or [])}, exit_code={self._exit_code})")


# --- The seams ----------------------------------------------------------------------


def _seams(env=None, machine=None, sysfs_root=None, affinity=None, slurm_version=None,
           launcher="auto", hosts=None, hostfile=None, simulate=None):
    if isinstance(hosts, str):
        hosts = [hosts]
    if affinity is not None and not isinstance(affinity, str):
        affinity = _encode_ids(sorted(int(c) for c in affinity))
    if launcher not in ("auto", "srun", "pals", "local", "mpirun", "hydra"):
        raise BadInput(f"launcher: {launcher!r} is none of auto, srun, pals, local, mpirun "
                       "and hydra",
                       "invalid-input")
    return {
        "env": dict(_os.environ if env is None else env),
        "machine": machine, "sysfs_root": None if sysfs_root is None else str(sysfs_root),
        "affinity": affinity, "slurm_version": slurm_version, "launcher": launcher,
        "hosts": None if hosts is None else [str(h) for h in hosts],
        "hostfile": None if hostfile is None else str(hostfile), "simulate": simulate,
    }


def _given(**kwargs):
    return {k: v for k, v in kwargs.items() if v is not None}


def allocation(*, env=None, hosts=None, hostfile=None, simulate=None):
    """What `berth alloc --format json` reports: the allocation berth was given."""
    return Allocation(_allocation(_seams(env=env, hosts=hosts, hostfile=hostfile,
                                         simulate=simulate)))


def machine(*, env=None, machine=None, sysfs_root=None, affinity=None, slurm_version=None,
            launcher="auto", hosts=None, hostfile=None, simulate=None):
    """What `berth machine --format json` reports: the machine, the launcher, this
    node, and what a placement gets here."""
    return Machine(_Context(_seams(env, machine, sysfs_root, affinity, slurm_version,
                                   launcher, hosts, hostfile, simulate)).machine())


# --- Placements and the pool --------------------------------------------------------


def _core_set(cores):
    if isinstance(cores, str):
        return _parse_ids(cores, "cores")
    return [int(c) for c in cores]


_CORES_WANTED = ('one core set for every node ("0-3" or [0, 1]), or one per node '
                 '(["0-3", [4, 5]])')


def _is_id(value):
    """A core id: a whole number (numpy's too), not a bool."""
    return isinstance(value, _numbers.Integral) and not isinstance(value, bool)


def _core_sets(cores):
    """Placement's cores= as one set per node: a string or a list of ids is one set
    (the same ids on every node); a list of strings or lists of ids is one per node."""
    wrong = BadInput(f"cores: {_CORES_WANTED}, not {cores!r}", "invalid-input")
    if isinstance(cores, str):
        return [_core_set(cores)]
    if _is_id(cores) or not hasattr(cores, "__iter__"):
        raise wrong
    items = list(cores)
    if items and all(_is_id(c) for c in items):
        return [_core_set(items)]
    sets = []
    for c in items:
        if isinstance(c, str):
            sets.append(_core_set(c))
        elif hasattr(c, "__iter__") and all(_is_id(i) for i in c):
            sets.append(_core_set(c))
        else:
            raise wrong
    return sets


class Placement:
    """Where one launch goes: nodes, one core set per node (cores[i] on nodes[i]), a
    GPU total for the launch (0: none, asked for explicitly), and the GPU device ids
    where nothing assigns GPUs (PALS, this node).

    Made by hand — Placement(nodes=["nid001"], cores="0-3") — nodes default to this
    node and cores to every usable core of each node. cores= is one set ("0-3" or
    [0, 1]), the same ids on every node, or one per node (["0-3", [4, 5]]). Granted by a Pool, it holds its resources until
    released: release(), pool.release(p), or leaving `with pool.grant(...) as p:`."""

    def __init__(self, nodes=None, cores=None, gpus=0, gpu_ids=None):
        if isinstance(nodes, str):
            nodes = [nodes]
        self.nodes = [str(n) for n in nodes] if nodes else []
        self.cores = None if cores is None else _core_sets(cores)
        self.gpu_ids = [str(g) for g in gpu_ids] if gpu_ids else []
        self.gpus = int(gpus) if gpus else len(self.gpu_ids)
        self.memory_mb = None  # per node, when a pool granted it with memory
        self.id = 0            # the pool's grant id; 0 for a placement made by hand
        self._pool = None
        self._released = False

    @property
    def granted(self):
        """True while a pool's grant is held."""
        return self._pool is not None and not self._released

    def release(self):
        """Gives a granted placement back to its pool (again: harmless)."""
        if self._pool is not None:
            self._pool.release(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def to_dict(self):
        """As `berth place --format json` writes a placement."""
        return {"nodes": list(self.nodes),
                "cores": [_encode_ids(c) for c in self.cores] if self.cores is not None else None,
                "gpus": self.gpus, "gpu_ids": list(self.gpu_ids)}

    def _native(self):
        return {"nodes": self.nodes, "cores": self.cores, "gpus": self.gpus,
                "gpu_ids": self.gpu_ids}

    def __eq__(self, other):
        if not isinstance(other, Placement):
            return NotImplemented
        return self._native() == other._native()

    __hash__ = None

    def __repr__(self):
        cores = None if self.cores is None else [_encode_ids(c) for c in self.cores]
        held = f", id={self.id}{'' if self.granted else ' (released)'}" if self.id else ""
        return (f"berth.Placement(nodes={self.nodes!r}, cores={cores!r}, gpus={self.gpus}"
                f"{', gpu_ids=' + repr(self.gpu_ids) if self.gpu_ids else ''}{held})")


class NotNow:
    """A pool's answer to a request that does not fit now but would once something is
    released. False in a condition; entering it in a `with` raises PlacementRefused."""

    def __bool__(self):
        return False

    def __repr__(self):
        return "berth.NOT_NOW"

    def __str__(self):
        return "not now: the request does not fit until something is released"

    def __enter__(self):
        raise PlacementRefused("not now: the request does not fit until something is "
                               "released (grant(..., wait=True) waits for it)", "refused")

    def __exit__(self, *exc):
        return False


NOT_NOW = NotNow()


class NeverFits:
    """A pool's answer to a request it could never grant, even empty: `reason` says
    which resource is short. False in a condition; entering it in a `with` raises
    PlacementRefused with the reason."""

    def __init__(self, reason):
        self.reason = reason

    def __bool__(self):
        return False

    def __str__(self):
        return self.reason

    def __repr__(self):
        return f"berth.NeverFits({self.reason!r})"

    def __eq__(self, other):
        return isinstance(other, NeverFits) and other.reason == self.reason

    __hash__ = None

    def __enter__(self):
        raise PlacementRefused(self.reason, "refused")

    def __exit__(self, *exc):
        return False


def _pool_node(n):
    if isinstance(n, dict):
        d = dict(n)
    else:  # (name, cores) or (name, cores, gpu_ids)
        d = {"name": n[0], "cores": n[1]}
        if len(n) > 2:
            d["gpu_ids"] = n[2]
    return {"name": str(d["name"]), "cores": sorted(_core_set(d["cores"])),
            "gpu_ids": [str(g) for g in d.get("gpu_ids") or []],
            "memory_mb": d.get("memory_mb")}


class Pool:
    """Grants concurrent launches disjoint placements inside one allocation: no core
    and no GPU is in two placements held at once, and no node's memory is given twice.

    Pool() is the pool over the discovered allocation: every node with this node's
    usable cores, GPUs and memory (the seams as keyword arguments, as for machine()).
    Pool(nodes=[{"name": "a", "cores": [0, 1], "gpu_ids": ["0"], "memory_mb": 1024},
    ("b", "0-3"), ...]) is a pool over nodes named by hand.

    Thread-safe: any number of threads may grant and release at once."""

    def __init__(self, nodes=None, **seams):
        self._context = None
        if nodes is None:
            self._context = _Context(_seams(**seams))
            nodes = self._context.pool_nodes(True)
        elif seams:
            raise TypeError("Pool(nodes=...) takes no seams: the nodes are given")
        self._nodes = [_pool_node(n) for n in nodes]
        self._pool = _Pool(self._nodes)

    def grant(self, ntasks=1, cpus_per_task=1, gpus=0, nodes=None, *, memory_mb=None,
              wait=False, timeout=None):
        """A placement for `ntasks` tasks of `cpus_per_task` cores (and `gpus` GPUs in
        all, on exactly `nodes` nodes when given, `memory_mb` per node) disjoint from
        every one held; NOT_NOW when it does not fit now; NeverFits(reason) when it
        never could. With wait=True a request that does not fit now waits (the GIL
        released) until a release lets it fit, or until `timeout` seconds have passed
        (then NOT_NOW)."""
        r = self._pool.grant(int(ntasks), int(cpus_per_task), int(gpus),
                             None if nodes is None else int(nodes),
                             None if memory_mb is None else int(memory_mb), bool(wait),
                             None if timeout is None else float(timeout))
        if r[0] == "granted":
            _, grant_id, placed, memory = r
            p = Placement(placed["nodes"], placed["cores"], placed["gpus"], placed["gpu_ids"])
            p.gpus = placed["gpus"]
            p.id = grant_id
            p.memory_mb = memory
            p._pool = self
            return p
        if r[0] == "not-now":
            return NOT_NOW
        return NeverFits(r[1])

    def release(self, placement):
        """Gives a granted placement back. Releasing one twice is harmless; one from
        another pool (or made by hand) is refused."""
        if placement._pool is not self:
            raise BadInput("release: this placement was not granted by this pool",
                           "invalid-input")
        if not placement._released:
            placement._released = True
            self._pool.release(placement.id)

    @property
    def held(self):
        """How many grants are held now."""
        return self._pool.held()

    @property
    def nodes(self):
        """The pool's nodes: name, cores, gpu_ids, memory_mb."""
        return [dict(n) for n in self._nodes]

    def free_cores(self, node):
        """The cores a grant could take now on `node` (a name or an index)."""
        if isinstance(node, str):
            names = [n["name"] for n in self._nodes]
            if node not in names:
                raise BadInput(f"free_cores: no node {node!r} in the pool", "invalid-input")
            node = names.index(node)
        return self._pool.free_cores(int(node))

    def __repr__(self):
        return f"berth.Pool({len(self._nodes)} node(s), {self.held} held)"


def parallel_command(ntasks, cpus_per_task=1, placement=None, memory_cap=None, launcher="auto",
                     *, command=None, env=None, machine=None, sysfs_root=None, affinity=None,
                     slurm_version=None, hosts=None, hostfile=None, simulate=None):
    """`ntasks` tasks of `cpus_per_task` cores, confined to `placement` (None: exactly
    the command the launcher gets without one), rendered for this machine's launcher:
    a ParallelCommand, as `berth place --format json` prints it. memory_cap is MB per
    node, rendered only where it is enforced (and reported either way). command= is
    the program and its arguments; without it argv is the launcher's part alone.

    A placement granted by a Pool renders in that pool's context unless seams are
    given here."""
    if placement is not None and not isinstance(placement, Placement):
        if isinstance(placement, (NotNow, NeverFits)):  # a pool's answer, not a placement
            raise PlacementRefused(f"no placement to render: {placement!s}", "refused")
        raise TypeError("placement must be a berth.Placement")
    seams = _given(env=env, machine=machine, sysfs_root=sysfs_root, affinity=affinity,
                   slurm_version=slurm_version, hosts=hosts, hostfile=hostfile,
                   simulate=simulate)
    pool = getattr(placement, "_pool", None)
    if pool is not None and pool._context is not None and not seams and launcher == "auto":
        context = pool._context
    else:
        context = _Context(_seams(launcher=launcher, **seams))
    data, shell = context.render(int(ntasks), int(cpus_per_task),
                                 None if placement is None else placement._native(),
                                 None if memory_cap is None else int(memory_cap),
                                 None if command is None else [str(w) for w in command])
    return ParallelCommand(data, shell)


# --- Pipelines ----------------------------------------------------------------------


def _failure(report):
    bad = [s["name"] for s in report.get("steps", [])
           if s.get("state") in ("failed", "refused", "cancelled")]
    named = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return (f"{report.get('pipeline', 'the pipeline')}: {len(bad)} step(s) did not succeed"
            f"{': ' + named if named else ''}")


def _config_text(value):
    """A --config value's text: TOML's spelling of a boolean, str() of anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _jobs(jobs):
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise BadInput(f"jobs: a whole number of steps, at least 1 (got {jobs!r})",
                       "invalid-input")
    return jobs


def run(pipeline, store=None, worker=None, targets=None, dry_run=False, *, results=None,
        cache=None, fail_fast=False, keep_failed=False, jobs=None, lease="10m", check=True,
        on_output=None, env=None, machine=None, sysfs_root=None, affinity=None,
        slurm_version=None, launcher="auto", hosts=None, hostfile=None, simulate=None,
        config=None, configfile=None):
    """Runs the pipeline file as `berth run` does — every result through the store,
    rerunning only what changed — and returns its RunReport.

    store: a store URL (default file://<dir>/.berth/store); worker: run as one of many
    workers sharing `store` (a name, or True for a generated one); targets: only these
    steps and what they read; dry_run: say what would run; config: {name: value}
    overriding the pipeline's [config] (`--config`; True/False are true/false), after
    configfile, a TOML file of them (`--configfile`); jobs: at most this many steps at
    once (`-j`; a whole number, at least 1); keep_failed: keep a failed step's staging
    directory with a command.sh that runs it again (`--keep-failed`). on_output(step, text)
    receives each step's output (default: standard error, each line "[step] ...").
    With check (the default) a run in which a step failed raises RunFailed, carrying
    the report. The GIL is released while the run goes on; Ctrl-C ends the running
    steps cleanly and raises KeyboardInterrupt. Steps run in os.environ; env= is read
    instead of it only to discover the allocation, as --env-file is."""
    if worker is True:
        worker = ""
    elif worker is False:
        worker = None
    if isinstance(targets, str):
        targets = [targets]
    options = {
        "store": store, "results": None if results is None else str(results),
        "cache": None if cache is None else str(cache), "dry_run": bool(dry_run),
        "fail_fast": bool(fail_fast), "worker": None if worker is None else str(worker),
        "jobs": _jobs(jobs), "keep_failed": bool(keep_failed),
        "lease": lease, "targets": None if targets is None else [str(t) for t in targets],
        "config": [f"{k}={_config_text(v)}" for k, v in (config or {}).items()],
        "configfile": [] if configfile is None else [str(configfile)],
    }
    out = _run(str(pipeline), options,
               _seams(env, machine, sysfs_root, affinity, slurm_version, launcher, hosts,
                      hostfile, simulate),
               dict(_os.environ), on_output)
    rep = RunReport(out["report"], out["exit_code"], out["worker"])
    if check and out["exit_code"] != 0:
        raise RunFailed(_failure(out["report"]), rep, out["exit_code"])
    return rep


def report(pipeline):
    """The last run's report of the pipeline (`berth report --format json`)."""
    return RunReport(_report(str(pipeline)))


def runs(pipeline, store=None):
    """The pipeline's earlier runs the store keeps, newest first (`berth runs
    --format json`): each a Record with its id, started, host, worker, elapsed_s, nodes
    and counts. The store is `store`, else the one the last run used."""
    return [Record(r) for r in _runs(str(pipeline), store or "")]


# --- What a run left: a step's log, the methods paragraph, the store verified --------


def log(pipeline, step, *, store=None, cache=None):
    """The stored output of `step` in the pipeline's last run, as `berth log PIPELINE
    STEP` prints it: a str (bytes that are not UTF-8 are replaced). store= reads it from
    that store instead of the one the run used; cache= is the run's cache directory when
    it was not beside the pipeline (a worker's). BadInput when the pipeline has not run,
    its last run had no such step or the step kept no log; Error when the store cannot
    be read."""
    out = _log(str(pipeline), str(step), "" if store is None else str(store),
               "" if cache is None else str(cache))
    return out.decode("utf-8", "replace")


def methods(pipeline, *, store=None, run=None):
    """The methods paragraph of the pipeline, as `berth methods PIPELINE` prints it: what
    computed its outputs, in words a paper can use — the whole pipeline, even after a
    targeted run. run= names an earlier run (an id from runs()). store= is the store
    the run used when it was not the pipeline's own. BadInput when the pipeline has not
    run or the store is not there."""
    return _methods(str(pipeline), "" if store is None else str(store),
                    "" if run is None else str(run))


class StoreCheck:
    """What store_verify() found: `objects`, every (name, ok) checked in order;
    `verified`, how many; `bad`, the names of those missing or corrupt (a corrupt copy
    is moved aside, so that the next run recomputes it); `ok`, True when none is bad;
    `store`, the URL checked."""

    def __init__(self, store, objects):
        self.store = store
        self.objects = [(name, bool(ok)) for name, ok in objects]

    @property
    def verified(self):
        return len(self.objects)

    @property
    def bad(self):
        return [name for name, ok in self.objects if not ok]

    @property
    def ok(self):
        return not self.bad

    def __bool__(self):
        return self.ok

    def __repr__(self):
        return (f"berth.StoreCheck(store={self.store!r}, verified={self.verified}, "
                f"bad={len(self.bad)})")


def store_verify(store=None, *, pipeline=None, names=None):
    """Verifies a store as `berth store verify` does: the objects `names`, or every
    object a step row of the store names (for a directory output its manifest and every
    file in it). store= is a URL; pipeline= names the pipeline whose store to verify
    (the one `berth run PIPELINE` uses); with neither, pipeline.toml's here. Returns a
    StoreCheck. A store that is not there is BadInput (nothing is created)."""
    if store is not None and pipeline is not None:
        raise BadInput(f"store_verify: give store= or pipeline= ({pipeline}), not both",
                       "invalid-input")
    if isinstance(names, str):
        names = [names]
    url = str(store) if store is not None else _pipeline_store(
        str(pipeline) if pipeline is not None else "pipeline.toml")
    return StoreCheck(url, _store_verify(url, [str(n) for n in names or []]))


def status(pipeline, cache=None):
    """What a run of the pipeline is doing now (`berth status --format json`): its
    running steps, where, for how long, and what waits; state "ended", "stale" or
    "none" when nothing runs."""
    return Record(_status(str(pipeline), "" if cache is None else str(cache)))

"""berth.Pool: grants are disjoint, from any number of Python threads; "not now" and
"never fits" are values; a grant that waits releases the GIL."""

import threading
import time

import pytest

import berth
from conftest import EMPTY_ENV


def hand_pool():
    # GPU ids unique across nodes, so that a launch's ids say which GPUs it holds.
    return berth.Pool(nodes=[{"name": "a", "cores": list(range(8)), "gpu_ids": ["a0", "a1"]},
                             ("b", "0-7", ["b0", "b1"])])


def test_grants_from_eight_threads_never_overlap():
    pool = hand_pool()
    held = {}  # (node, core) -> grant id, while held
    gpus = {}  # gpu id -> grant id
    lock = threading.Lock()
    problems = []
    granted = [0]

    def worker(seed):
        import random
        rng = random.Random(seed)
        mine = []
        for _ in range(300):
            if len(mine) < 2:
                p = pool.grant(rng.randint(1, 3), rng.randint(1, 2), gpus=rng.randint(0, 1))
                if not p:
                    continue
                with lock:
                    granted[0] += 1
                    for node, cores in zip(p.nodes, p.cores):
                        for c in cores:
                            if (node, c) in held:
                                problems.append((node, c))
                            held[(node, c)] = p.id
                    for g in p.gpu_ids:
                        if g in gpus:
                            problems.append(g)
                        gpus[g] = p.id
                mine.append(p)
            else:
                p = mine.pop(0)
                with lock:
                    for node, cores in zip(p.nodes, p.cores):
                        for c in cores:
                            del held[(node, c)]
                    for g in p.gpu_ids:
                        del gpus[g]
                p.release()
        for p in mine:
            with lock:
                for node, cores in zip(p.nodes, p.cores):
                    for c in cores:
                        del held[(node, c)]
                for g in p.gpu_ids:
                    del gpus[g]
            pool.release(p)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert problems == []
    assert granted[0] > 100
    assert pool.held == 0
    assert pool.free_cores("a") == list(range(8)) and pool.free_cores(1) == list(range(8))


def test_eight_threads_waiting_for_cores_share_them_in_turn():
    pool = berth.Pool(nodes=[("n", [0, 1])])
    running = []
    most = [0]
    lock = threading.Lock()

    def launch(i):
        with pool.grant(1, wait=True, timeout=60) as p:
            with lock:
                running.append(p.cores[0][0])
                assert len(set(running)) == len(running)  # disjoint while held
                most[0] = max(most[0], len(running))
            time.sleep(0.05)
            with lock:
                running.remove(p.cores[0][0])

    threads = [threading.Thread(target=launch, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2
    assert pool.held == 0


def test_not_now_and_never_fits_are_values():
    pool = berth.Pool(nodes=[("n", "0-3")])
    p = pool.grant(4)
    assert p and p.granted and p.nodes == ["n"] and p.cores == [[0, 1, 2, 3]]
    assert p.gpus == 0 and p.id > 0
    later = pool.grant(1)
    assert later is berth.NOT_NOW and not later
    assert repr(later) == "berth.NOT_NOW"
    with pytest.raises(berth.PlacementRefused, match="no placement to render: not now"):
        berth.parallel_command(1, placement=later, command=["true"])
    never = pool.grant(5)
    assert isinstance(never, berth.NeverFits) and not never
    assert "5" in never.reason and str(never) == never.reason
    with pytest.raises(berth.PlacementRefused) as e:
        with never:
            pass
    assert e.value.message == never.reason and e.value.code == "refused"
    with pytest.raises(berth.PlacementRefused, match="not now"):
        with pool.grant(1):
            pass
    gpu = pool.grant(1, gpus=1)
    assert isinstance(gpu, berth.NeverFits) and "GPU" in gpu.reason
    # A malformed request is an error, not a value.
    with pytest.raises(berth.BadInput):
        pool.grant(0)
    pool.release(p)
    pool.release(p)  # twice: harmless
    assert not p.granted
    assert pool.grant(1)
    with pytest.raises(berth.BadInput, match="not granted by this pool"):
        pool.release(berth.Placement(["n"], ["0"]))


def test_a_granted_placement_is_a_context_manager():
    pool = berth.Pool(nodes=[("n", "0-1")])
    with pool.grant(2) as p:
        assert pool.held == 1
        assert pool.free_cores("n") == []
        assert p.granted
    assert pool.held == 0 and not p.granted
    assert pool.free_cores("n") == [0, 1]


def test_nodes_and_memory():
    pool = berth.Pool(nodes=[{"name": "a", "cores": [0, 1], "memory_mb": 1000},
                             {"name": "b", "cores": [0, 1], "memory_mb": 1000}])
    p = pool.grant(2, nodes=2, memory_mb=600)
    assert p.nodes == ["a", "b"] and p.cores == [[0], [0]] and p.memory_mb == 600
    assert pool.grant(1, memory_mb=600) is berth.NOT_NOW
    assert isinstance(pool.grant(1, memory_mb=2000), berth.NeverFits)
    assert [n["name"] for n in pool.nodes] == ["a", "b"]
    with pytest.raises(TypeError):
        berth.Pool(nodes=[("a", [0])], env={})


def test_a_waiting_grant_releases_the_gil():
    pool = berth.Pool(nodes=[("n", [0])])
    first = pool.grant(1)
    ticks = [0]
    stop = threading.Event()

    def other():
        # Runs Python (needs the GIL) while the main thread waits in grant().
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)
            if ticks[0] == 200:
                first.release()

    t = threading.Thread(target=other)
    t.start()
    started = time.monotonic()
    p = pool.grant(1, wait=True, timeout=30)
    waited = time.monotonic() - started
    stop.set()
    t.join()
    assert p and p.cores == [[0]]
    assert ticks[0] >= 200
    assert waited < 20


def test_a_waiting_grant_times_out_as_not_now():
    pool = berth.Pool(nodes=[("n", [0])])
    held = pool.grant(1)
    t0 = time.monotonic()
    assert pool.grant(1, wait=True, timeout=0.2) is berth.NOT_NOW
    assert 0.15 < time.monotonic() - t0 < 10
    assert isinstance(pool.grant(2, wait=True), berth.NeverFits)  # never waits for never
    held.release()


def test_the_pool_over_the_discovered_allocation(fake_node):
    seams = dict(env=EMPTY_ENV, simulate="2x8", sysfs_root=str(fake_node), affinity="0-15",
                 launcher="srun", slurm_version="25.11")
    pool = berth.Pool(**seams)
    assert [n["name"] for n in pool.nodes] == ["sim1", "sim2"]
    assert all(n["cores"] == list(range(8)) for n in pool.nodes)
    grants = [pool.grant(4) for _ in range(4)]
    assert all(grants) and pool.grant(1) is berth.NOT_NOW
    assert {(g.nodes[0], tuple(g.cores[0])) for g in grants} == {
        ("sim1", (0, 1, 2, 3)), ("sim1", (4, 5, 6, 7)), ("sim2", (0, 1, 2, 3)),
        ("sim2", (4, 5, 6, 7))}
    # A granted placement renders in its pool's context: srun on the simulated nodes.
    cmd = berth.parallel_command(4, placement=grants[3], command=["./a.out"])
    assert cmd.argv[0] == "srun" and "--nodelist=sim2" in cmd.argv
    assert cmd.mechanism == "scheduler-enforced"
    assert cmd.placement.cores == ["4-7"]
    # Seams given here build a context of their own: the same answer from the same input.
    assert berth.parallel_command(4, placement=grants[3], command=["./a.out"], **{
        k: v for k, v in seams.items() if k != "launcher"}, launcher="srun") == cmd
    for g in grants:
        g.release()


def test_the_pool_over_a_gpu_node_grants_each_its_own_devices(fake_node):
    # Four NVIDIA GPUs as the driver lays them out: four one-GPU grants, four devices.
    for i in range(4):
        d = fake_node / "proc/driver/nvidia/gpus" / f"0000:0{i + 1}:00.0"
        d.mkdir(parents=True)
        (d / "information").write_text(f"Model: \t\t NVIDIA H100\nGPU UUID: \t GPU-{i}\n")
    pool = berth.Pool(env=EMPTY_ENV, sysfs_root=str(fake_node), affinity="0-15")
    grants = [pool.grant(1, 2, gpus=1) for _ in range(4)]
    assert all(grants)
    assert sorted(g.gpu_ids[0] for g in grants) == ["0", "1", "2", "3"]
    assert pool.grant(1, gpus=1) is berth.NOT_NOW
    # A CPU-only grant takes no device, and the GPUs come back on release.
    cpu = pool.grant(1)
    assert cpu and cpu.gpu_ids == []
    grants[2].release()
    again = pool.grant(1, gpus=1)
    assert again and again.gpu_ids == [grants[2].gpu_ids[0]]


def test_the_pool_over_this_node():
    pool = berth.Pool()
    assert len(pool.nodes) >= 1
    with pool.grant(1) as p:
        assert p and len(p.cores[0]) == 1


def test_nodes_nothing_reaches_are_refused():
    with pytest.raises(berth.PlacementRefused, match="elsewhere"):
        berth.Pool(env=EMPTY_ENV, hosts=["elsewhere"], launcher="local")

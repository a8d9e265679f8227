"""The disk cache of simulated row summaries (models.kernel.simcache): what it keys on, that a
summary read back equals the one simulated, and that it steps aside where it cannot be trusted."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from models.kernel import simcache
from models.kernel.runs import SimSummary, simulate_summary, simulate_uncached
from models.sim import Scenario
from models.sim.kernels import get_profile, register_profile
from models.sim.rules import MinshallNagle

SMALL = Scenario(workload={"qd": 2}, server={"nodelay": True}, run={"ops": 60})


def _same(a: SimSummary, b: SimSummary) -> bool:
    """Equal field by field, NaN equal to NaN (a summary read back holds new NaN objects)."""
    pairs = zip(dataclasses.astuple(a), dataclasses.astuple(b))
    return all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in pairs)


@pytest.fixture
def on(tmp_path, monkeypatch):
    """The cache on, in a fresh folder; the in-process cache emptied before and after."""
    monkeypatch.setenv(simcache.CACHE_ENV, str(tmp_path))
    simulate_summary.cache_clear()
    yield tmp_path
    simulate_summary.cache_clear()


def _entries(folder) -> list:
    return sorted(folder.rglob("*.json"))


def test_off_without_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(simcache.CACHE_ENV, raising=False)
    assert simcache.folder() is None and simcache.key(SMALL) is None
    simulate_summary.cache_clear()
    simulate_summary(SMALL)
    assert not _entries(tmp_path)


def test_a_summary_read_back_equals_the_one_simulated(on):
    first = simulate_summary(SMALL)
    (entry,) = _entries(on)
    assert entry.stem == simcache.key(SMALL)
    simulate_summary.cache_clear()  # a new process would start here
    again = simulate_summary(SMALL)
    assert _same(again, first) and _same(first, simulate_uncached(SMALL))
    # a NaN field (no stall: the stalls' mean is not a number) survives the round trip
    assert math.isnan(first.stall_mean_ms) and math.isnan(again.stall_mean_ms)


def test_the_entry_is_what_is_returned(on):
    """An entry is read, not just written: a doctored one comes back (so the key must be right)."""
    k = simcache.key(SMALL)
    fake = dataclasses.replace(simulate_uncached(SMALL), iops=123.0)
    simcache.store(k, dataclasses.asdict(fake))
    assert simulate_summary(SMALL).iops == 123.0


def test_every_parameter_and_the_code_are_in_the_key(on, monkeypatch):
    keys = {
        simcache.key(SMALL),
        simcache.key(SMALL.replace(workload={"qd": 3})),
        simcache.key(SMALL.replace(server={"proc_s": 2.0000000001e-5})),
        simcache.key(SMALL.replace(kernel={"profile": "linux-6-rwnd"})),
        simcache.key(SMALL.replace(run={"seed": 1})),
    }
    assert len(keys) == 5
    before = simcache.key(SMALL)
    monkeypatch.setattr(simcache, "code_fingerprint", lambda: "another version of models/")
    assert simcache.key(SMALL) != before


def test_a_broken_entry_is_simulated_again_and_rewritten(on):
    k = simcache.key(SMALL)
    for text in (
        "{not json",
        json.dumps({"iops": "fast"}),
        json.dumps({"iops": 1.0}),
        json.dumps({f.name: True for f in dataclasses.fields(SimSummary)}),
    ):
        simcache._path(str(on), k).parent.mkdir(parents=True, exist_ok=True)
        simcache._path(str(on), k).write_text(text)
        simulate_summary.cache_clear()
        assert _same(simulate_summary(SMALL), simulate_uncached(SMALL))
        assert _same(SimSummary(**simcache.load(k)), simulate_uncached(SMALL))


def test_a_rule_from_outside_models_is_never_cached(on):
    class MyNagle(MinshallNagle):  # a reader's own rule: its code is not fingerprinted
        pass

    register_profile(get_profile("linux-6").variant("linux-6-test-simcache", nagle=MyNagle))
    sc = SMALL.replace(kernel={"profile": "linux-6-test-simcache"})
    assert simcache.key(sc) is None
    simulate_summary(sc)
    assert not _entries(on)


def test_store_refuses_what_is_not_a_number(tmp_path):
    with pytest.raises(ValueError, match="numbers only"):
        simcache.store("ab" * 32, {"iops": "fast"}, where=str(tmp_path))


def test_fields_of_the_summary_are_numbers():
    """The cache writes a summary as JSON numbers: a field of another type would not come back."""
    for f in dataclasses.fields(SimSummary):
        assert f.type in ("float", float), f.name


def test_another_version_s_entries_are_pruned_at_the_first_write(on, monkeypatch):
    """An edited checkout keeps one version's entries: the first entry a process writes deletes
    the folders of other versions of models/ (their keys can never be asked for again)."""
    old = on / "0123456789abcdef" / "ab"
    old.mkdir(parents=True)
    (old / ("ab" * 32 + ".json")).write_text('{"iops": 1.0}')
    monkeypatch.setattr(simcache, "_pruned", set())
    simulate_summary(SMALL)
    assert not (on / "0123456789abcdef").exists()
    (entry,) = _entries(on)
    assert entry.parent.parent.name == simcache.code_fingerprint()[:16]
    assert simcache.prune(str(on)) == 0  # nothing else left


def test_the_warm_up_tool_fills_the_cache_the_tests_read(on, monkeypatch, capsys):
    """tools/warm_sim_cache.py runs each shared evaluation once through the cache (a small one
    stands in for the field evaluation here); without the cache it does nothing, and an unknown
    name is refused."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import warm_sim_cache as W

    warmed = ["field5", "field6", "machine7", "machine8"]  # what make test warms
    assert list(W.EVALUATIONS) == warmed
    monkeypatch.setattr(W, "EVALUATIONS", {"small": lambda: simulate_summary(SMALL)})
    assert W.main(["nope"]) == 2 and not _entries(on)
    assert W.main([]) == 0
    (entry,) = _entries(on)
    assert entry.stem == simcache.key(SMALL)
    monkeypatch.delenv(simcache.CACHE_ENV)
    assert W.main([]) == 0 and "nothing to warm" in capsys.readouterr().out


def _exited_pid() -> int:
    """The id of a process that has run and exited (so names no process, barring reuse)."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _lock_of(folder, k: str):
    return folder / simcache.code_fingerprint()[:16] / k[:2] / f"{k}.lock"


def test_a_live_claim_is_waited_for_and_its_entry_read(on):
    """Another live process holds the lock (the parent's id stands for it); the waiter reads the
    entry when it appears, without simulating, and leaves the other's lock alone."""
    import os
    import threading
    import time

    k = simcache.key(SMALL)
    lock = _lock_of(on, k)
    lock.parent.mkdir(parents=True)
    lock.write_text(str(os.getppid()))
    writer = threading.Timer(0.3, simcache.store, args=(k, {"x": 1.0}))
    start = time.monotonic()
    writer.start()
    with simcache.claim(k) as mine:
        waited = time.monotonic() - start
    writer.join()
    assert mine is False and waited >= 0.25
    assert lock.exists()


def test_a_dead_process_s_lock_is_passed_over(on):
    import time

    k = simcache.key(SMALL)
    lock = _lock_of(on, k)
    lock.parent.mkdir(parents=True)
    lock.write_text(str(_exited_pid()))
    start = time.monotonic()
    with simcache.claim(k) as mine:
        assert mine is True and lock.read_text() == str(__import__("os").getpid())
    assert time.monotonic() - start < 1.0 and not lock.exists()


def test_an_empty_lock_is_stale_only_when_old(on):
    import os
    import time

    k = simcache.key(SMALL)
    lock = _lock_of(on, k)
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    assert not simcache._stale(lock)  # being written: wait
    old = time.time() - simcache.EMPTY_LOCK_S - 1
    os.utime(lock, (old, old))
    assert simcache._stale(lock)


def test_a_wait_past_its_limit_simulates_anyway(on):
    import os
    import time

    k = simcache.key(SMALL)
    lock = _lock_of(on, k)
    lock.parent.mkdir(parents=True)
    lock.write_text(str(os.getppid()))
    start = time.monotonic()
    with simcache.claim(k, limit_s=0.2) as mine:
        assert mine is True
    assert 0.2 <= time.monotonic() - start < 2.0
    assert lock.read_text() == str(os.getppid())  # not ours: left as it was


def _simulate_in_child() -> None:
    simulate_summary(SMALL)


def _two_at_once(on, monkeypatch, claim, marks) -> list:
    """Two forked processes ask for the same missing summary at the same moment; the files
    that simulate_uncached (slowed to 0.5 s) marked in ``marks``, one per simulation (outside
    the cache's folder, which its first write prunes)."""
    import multiprocessing
    import os
    import time

    from models.kernel import runs

    real = runs.simulate_uncached

    def slow(scenario):
        (marks / str(os.getpid())).touch()
        time.sleep(0.5)
        return real(scenario)

    monkeypatch.setattr(runs, "simulate_uncached", slow)
    monkeypatch.setattr(simcache, "claim", claim)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_simulate_in_child) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert all(p.exitcode == 0 for p in procs)
    return sorted(marks.iterdir())


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork"
)
def test_two_processes_missing_one_entry_simulate_it_once(on, monkeypatch, tmp_path_factory):
    marks = tmp_path_factory.mktemp("marks")
    assert len(_two_at_once(on, monkeypatch, simcache.claim, marks)) == 1
    assert len(_entries(on)) == 1 and not list(on.rglob("*.lock"))


@pytest.mark.skipif(
    "fork" not in __import__("multiprocessing").get_all_start_methods(), reason="needs fork"
)
def test_without_the_claim_both_would_simulate(on, monkeypatch, tmp_path_factory):
    """The wrong model of the test above: no lock, and both processes simulate the entry."""
    import contextlib

    @contextlib.contextmanager
    def always_mine(k, where=None, limit_s=None):
        yield True

    marks = tmp_path_factory.mktemp("marks")
    assert len(_two_at_once(on, monkeypatch, always_mine, marks)) == 2


def _counting_fit(monkeypatch) -> list:
    """calibrate.fit_costs replaced by a stand-in that counts its calls and returns a fixed fit
    (numpy residuals and a bound, as the real search gives); the list of its calls."""
    import numpy as np

    from models.kernel import calibrate

    calls = []

    def fit_costs(rows, median_us):
        calls.append(len(rows))
        costs = calibrate.HostCosts(1.5e-6, 2e-6, 0.5e-6, 3e-6, 1e-6)
        residuals = tuple(np.float64(0.01 * i) for i in range(len(rows)))
        return calibrate.Fit(costs, residuals, 123, 0.004, at_bound=(("wake_s", "lower"),))

    monkeypatch.setattr(calibrate, "fit_costs", fit_costs)
    return calls


def test_the_calibration_fit_is_made_once_per_cache_and_read_back_equal(on, monkeypatch):
    from types import SimpleNamespace

    from models.kernel import tables

    calls = _counting_fit(monkeypatch)
    run = SimpleNamespace(hz=250)
    rows = [{"qd": 1, "lat_p50_us": 50.0}, {"qd": 8, "lat_p50_us": 90.0}]
    first = tables._fit(run, rows)
    again = tables._fit(run, rows)  # another process's ask: read from the folder
    assert calls == [2] and again == first and type(again.residuals[0]) is type(first.residuals[0])
    tables._fit(run, rows[:1])  # other training rows: another key, fitted again
    tables._fit(SimpleNamespace(hz=1000), rows)  # another tick rate too
    assert calls == [2, 1, 2]
    for entry in _entries(on):  # an entry that is not a fit is fitted again, and rewritten
        entry.write_text(json.dumps({"loss": 1.0}))
    assert tables._fit(run, rows) == first and calls == [2, 1, 2, 2]


def test_without_the_cache_every_ask_fits_again(monkeypatch):
    from types import SimpleNamespace

    from models.kernel import tables

    monkeypatch.delenv(simcache.CACHE_ENV, raising=False)
    calls = _counting_fit(monkeypatch)
    rows = [{"qd": 1, "lat_p50_us": 50.0}]
    tables._fit(SimpleNamespace(hz=250), rows)
    tables._fit(SimpleNamespace(hz=250), rows)
    assert calls == [1, 1]

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

    assert list(W.EVALUATIONS) == ["field5"]  # what make test warms
    monkeypatch.setattr(W, "EVALUATIONS", {"small": lambda: simulate_summary(SMALL)})
    assert W.main(["nope"]) == 2 and not _entries(on)
    assert W.main([]) == 0
    (entry,) = _entries(on)
    assert entry.stem == simcache.key(SMALL)
    monkeypatch.delenv(simcache.CACHE_ENV)
    assert W.main([]) == 0 and "nothing to warm" in capsys.readouterr().out

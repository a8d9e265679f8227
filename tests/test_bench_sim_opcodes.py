"""benchmarks/sim_opcodes.py counts the raw engine's Python instructions per operation: the same
count on every run (a function of the code and the scenario), and bad options refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    sys.path.insert(0, str(ROOT))
    from benchmarks import sim_opcodes

    return sim_opcodes


def test_the_count_repeats_exactly_and_names_the_sender():
    tool = _tool()
    first, second = tool.count(60), tool.count(60)
    n, instructions, calls, events = first
    assert n >= 60 and events > n
    assert first[1] == second[1] and first[2] == second[2]  # deterministic
    assert any(key.startswith("Sender.write ") for key in instructions)
    assert sum(instructions.values()) > 100 * n  # hundreds of bytecodes an operation


@pytest.mark.parametrize("bad", [["--ops", "0"], ["--ops", "300000"], ["--top", "0"]])
def test_bad_options_are_refused_by_name(bad, capsys):
    with pytest.raises(SystemExit):
        _tool().main(bad)
    assert bad[0] in capsys.readouterr().err


def test_the_profile_sums_the_threads_own_copies_of_a_method():
    """The client's and the server's threads each run their own copy of AppThread._step
    (models.sim.own_code); the benchmark's profile counts the calls of both, where cProfile's
    own statistics keep one copy's."""
    import cProfile

    from benchmarks import bench_sim
    from models.sim import simulate

    sc = bench_sim.standard(600)[0].replace(run={"ops": 600, "fast_forward": False})
    prof = bench_sim.SummedProfile()
    prof.enable()
    simulate(sc)
    prof.disable()
    entries = [
        e
        for e in prof.getstats()
        if getattr(e.code, "co_name", "") == "_step" and e.code.co_filename.endswith("app.py")
    ]
    assert len(entries) == 2  # one copy per thread
    key = cProfile.label(entries[0].code)
    assert key == cProfile.label(entries[1].code)  # one key for the two
    prof.snapshot_stats()
    calls = [e.callcount for e in entries]
    assert min(calls) > 0 and prof.stats[key][1] == sum(calls) > max(calls)

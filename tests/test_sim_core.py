"""The simulator's core: standard library only, NumPy's random stream,
exact fast-forward, errors that name the field, the golden table."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from models import framing
from models.data import load
from models.sim import (
    PARTS,
    PROFILES,
    Host,
    Kernel,
    Link,
    Run,
    Scenario,
    Workload,
    get_profile,
    simulate,
)
from models.sim.cycles import FIELDS
from models.sim.engine import Simulation
from models.sim.rng import PCG64

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "tools"))
import sim_golden  # noqa: E402

# -- NumPy's generator, reproduced ---------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 42, 2**16, 2**32 + 5, 2**70 + 3])
def test_pcg64_matches_numpy(seed):
    np = pytest.importorskip("numpy")
    g, p = np.random.default_rng(seed), PCG64(seed)
    ref = [g.uniform(0, 0.004) for _ in range(5)] + list(g.uniform(0.8, 1.2, 50))
    got = [p.uniform(0, 0.004) for _ in range(5)] + [p.uniform(0.8, 1.2) for _ in range(50)]
    assert got == ref


# -- standard library only ---------------------------------------------------------

_BLOCKED = textwrap.dedent("""
    import json, sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("numpy", "sympy", "pandas", "scipy"):
                raise ImportError(f"{name} is blocked")
    sys.meta_path.insert(0, Block())
    from models.sim import Scenario, simulate
    from models.ring import Ring
    from models import framing, presets
    out = {}
    for sc in (presets.busy_count("nagle", 3, ops=300),
               Scenario(workload={"qd": 4}, run={"jitter": 0.2, "ops": 200}),
               presets.one_segment(workload={"qd": 16})):
        r = simulate(sc)
        out[repr(sc)] = [r.iops, list(r.rtts_s), r.tick_phase_s]
    ring = Ring.four_stage(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
    out["ring"] = ring.run(qd=3, ops=100).iops
    print(json.dumps(out))
    assert "numpy" not in sys.modules and "pandas" not in sys.modules
""")


def test_core_runs_without_numpy_sympy_pandas_and_agrees_exactly():
    from models import presets
    from models.ring import Ring

    p = subprocess.run(
        [sys.executable, "-c", _BLOCKED], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    blocked = json.loads(p.stdout)
    for sc in (
        presets.busy_count("nagle", 3, ops=300),
        Scenario(workload={"qd": 4}, run={"jitter": 0.2, "ops": 200}),
        presets.one_segment(workload={"qd": 16}),
    ):
        r = simulate(sc)
        assert blocked[repr(sc)] == [r.iops, list(r.rtts_s), r.tick_phase_s]
    ring = Ring.four_stage(W1=1e-6, SP=16e-6, W2=5e-6, CP=8e-6)
    assert blocked["ring"] == ring.run(qd=3, ops=100).iops


# -- the fast-forward knows every field --------------------------------------------


def _instances(sim):
    s, c = sim.server_ep, sim.client_ep
    return [
        sim.loop,
        sim.clock,
        sim.c2s,
        sim.s2c,
        sim.c2s.rx,
        sim.s2c.rx,
        c,
        s,
        c.sender,
        s.sender,
        c.receiver,
        s.receiver,
        c.receiver.ack,
        s.receiver.ack,
        c.sender.cork,
        c.sender.probe,
        c.receiver.ack.timer,
        sim.client,
        sim.server,
        sim.client.cpu,
    ]


def _fields(obj) -> set:
    names = set(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        names |= set(getattr(cls, "__slots__", ()))
    return names


def _classified(obj) -> set:
    out = set()
    for cls in type(obj).__mro__:
        out |= set(FIELDS.get(cls, {}))
    return out


@pytest.mark.parametrize(
    "kernel,host",
    [
        ({}, {}),
        ({"kernel_timers": True}, {}),
        ({"profile": "linux-2.4"}, {}),
        ({}, {"rx_usecs": 50e-6, "gro": True}),
        ({}, {"shared_cpus": 2}),
    ],
)
def test_cycle_detector_classifies_every_field(kernel, host):
    host = dict(host)
    link = {"shared_cpus": host.pop("shared_cpus", None)}
    sim = Simulation(Scenario(kernel=kernel, server=host, link=link))
    extra = [sim.cpu] if sim.cpu is not None else []
    for obj in _instances(sim) + extra:
        missing = _fields(obj) - _classified(obj)
        assert not missing, f"{type(obj).__name__}: {sorted(missing)}"


def test_fast_forward_is_exact_on_the_books_sweep():
    # Chapter 6's figure: QD 1-24, one-segment responses, TCP_NODELAY.
    from models.presets import one_segment

    for q in (1, 2, 5, 8, 13, 24):
        sc = one_segment(workload={"qd": q}, run={"ops": 3000})
        fast = simulate(sc)
        slow = simulate(sc.replace(run={"fast_forward": False}))
        assert fast.skipped_ops > 2000  # most of the run jumped
        assert fast.rtts_s == slow.rtts_s and fast.iops == slow.iops
        assert fast.hosts == slow.hosts and fast.directions == slow.directions


def test_a_stall_cycle_repeats_with_the_tick():
    # One 40 ms delayed ACK per operation: the cycle is whole ticks.
    r = simulate(run={"ops": 2000})
    assert r.skipped_ops > 1900 and 24 < r.iops < 26


# -- errors name the field -------------------------------------------------------


@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: Workload(qdd=1), "did you mean 'qd'"),
        (lambda: Link(mtuu=1500), "link has no parameter 'mtuu'"),
        (lambda: Host(nodely=True), "did you mean 'nodelay'"),
        (lambda: Kernel(proflie="linux-6"), "did you mean 'profile'"),
        (lambda: Run(opps=3), "did you mean 'ops'"),
        (lambda: Scenario(qd=1), "it is a field of workload"),
        (lambda: Scenario(server={"nodelay": "yes"}), "server.nodelay"),
        (lambda: Scenario(client={"proc_s": -1e-6}), "client.proc_s"),
        (lambda: Scenario(workload={"qd": 0}), "workload.qd"),
        (lambda: Scenario(workload={"qd": 2.5}), "workload.qd"),
        (lambda: Scenario(workload={"request_writes": ()}), "request_writes"),
        (lambda: Scenario(workload={"response_writes": (0,)}), "response_writes"),
        (lambda: Scenario(workload={"legs": ((48,), (48,), (8,))}), "legs"),
        (lambda: Scenario(workload={"legs": ((48,), (48,)), "request_writes": (8,)}), "legs"),
        (lambda: Scenario(workload={"setup_request_writes": (8,)}), "setup_request_writes"),
        (lambda: Scenario(link={"mtu": 52}), "link.mtu"),
        (lambda: Scenario(link={"bandwidth_bps": 0}), "link.bandwidth_bps"),
        (lambda: Scenario(link={"bandwidth_bps": float("inf")}), "bandwidth_bps"),
        (lambda: Scenario(link={"bucket_bytes": 1513}), "link.bucket_bytes"),
        (lambda: Scenario(link={"mtu": 9000, "bucket_bytes": 3028}), "bucket_bytes"),
        (lambda: Scenario(kernel={"profile": "linux-3"}), "kernel.profile"),
        (lambda: Scenario(kernel={"hz": 0}), "kernel.hz"),
        (lambda: Scenario(kernel={"tick_phase_s": 0.004}), "tick_phase_s"),
        (lambda: Scenario(kernel={"autocork": "on"}), "kernel.autocork"),
        (lambda: Scenario(run={"jitter": 1.0}), "run.jitter"),
        (lambda: Scenario(run={"trace_at": "router"}), "run.trace_at"),
        (lambda: Scenario(run={"ops": 0}), "run.ops"),
        (lambda: Scenario().replace(workload={"qdd": 2}), "did you mean"),
        (lambda: Scenario(server=3), "server must be a Host"),
        (lambda: Workload(1), "keyword arguments only"),
    ],
)
def test_bad_input_raises_value_error_naming_the_field(make, word):
    with pytest.raises(ValueError, match=word.replace("(", r"\(")):
        make()


def test_a_profile_missing_a_policy_is_refused():
    with pytest.raises(ValueError, match="policy 'ack'"):
        get_profile("linux-6").with_policies(ack=None)
    with pytest.raises(ValueError, match="unknown rule family 'timers'"):
        get_profile("linux-6").with_policies(timers=object)


# -- what the scenario offers ----------------------------------------------------


def test_stage_times_and_symbols_of_the_default():
    sc = Scenario()
    t = sc.stage_times()
    assert t == {
        "W1": framing.wire_time(48, 1e9),
        "SP": 15.9e-6,
        "W2": framing.wire_time(560, 1e9),
        "CP": 8.6e-6,
    }
    v = sc.symbol_values()
    assert v["RTTmin"] == pytest.approx(sum(t.values()))
    lone = v["RTTmin"] + sc.path_latency_s() + v["SL"] + v["CL"]
    b = load("butterfield2017_rtt_breakdown").set_index("quantity")
    rtt_s = b.loc["RTT", "value_us"] * 1e-6  # us -> s; Butterfield's RTT
    assert lone == pytest.approx(rtt_s, abs=0.05e-6)


def test_scenario_round_trips_through_a_dict():
    sc = Scenario(
        workload={"qd": 4, "legs": ((48,), (48,), (4096,), (48,))},
        server={"cork": True},
        kernel={"hz": 1000},
    )
    assert Scenario.from_dict(json.loads(json.dumps(sc.to_dict()))) == sc


def test_a_four_leg_exchange_costs_two_round_trips():
    # An R2T-style write: command, R2T, data, response.  With TCP_NODELAY
    # and one-segment messages it takes about twice a read's round trip.
    quiet = {"nodelay": True}
    read = simulate(client=quiet, server=quiet, run={"ops": 100})
    write = simulate(
        client=quiet,
        server=quiet,
        run={"ops": 100},
        workload={"legs": ((48,), (48,), (48, 512), (48,))},
    )
    assert 1.8 < write.rtt_mean_s / read.rtt_mean_s < 2.2
    assert write.hosts["server"].busy_counts == {
        1: sum(write.hosts["server"].busy_counts.values())
    }


def test_profiles_name_a_class_per_rule_family():
    from models.sim.rules import FAMILIES

    for p in PROFILES.values():
        for family, base in FAMILIES.items():
            assert issubclass(getattr(p, family), base)


def test_every_part_is_documented_in_the_scenario():
    assert set(PARTS) == {"workload", "link", "client", "server", "kernel", "run"}
    for cls in set(PARTS.values()):
        for name, spec in cls.specs().items():
            assert spec.help and spec.sample is not None, name


# -- the golden table ---------------------------------------------------------------


def test_golden_table():
    rows = sim_golden.read()
    assert len(rows) > 100
    for row in rows:
        got = sim_golden.measure(sim_golden.scenario_of(row))
        for k in sim_golden.V2:
            assert got[k] == row[k], (row["name"], k, got[k], row[k])
        # the first simulator's numbers, unchanged but where a note says why
        if not row["note"]:
            assert sim_golden.relative_change(row["iops"], row["v1_iops"]) < 1e-6, row
            assert row["delayed_acks_c2s"] == row["v1_delayed_acks_c2s"]

"""Chapter 9's stall placement comparison (models.validation.stall_placement): a Nagle server's
stall verdicts with both ends on one CPU, on a CPU each, and unpinned (data/kernel6_stall_placement)
against the simulator's machine of a CPU per end and Butterfield's bound.  Every row must be as
recorded, and the wrong pairings fail: the simulator held to the one-CPU runs, the bound held to the
runs on two CPUs."""

from __future__ import annotations

import pandas as pd
import pytest

from models import data
from models.validation import stall_placement as SP


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    kernel = SP.kernel_verdicts(data.load(SP.DATASET))
    return SP.verdict_table(kernel, SP.simulated_verdicts(kernel.index))


def _not_as_recorded(rows) -> list[str]:
    return [f"{r.quantity}: {r.status}" for r in rows if not r.ok]


def test_every_row_is_as_recorded(table):
    rows = SP.verdict_rows(table, source="test")
    assert not _not_as_recorded(rows)
    tests = [r for r in rows if r.kind == "test"]
    audits = [r for r in rows if r.kind == "audit"]
    assert len(tests) + len(audits) == 3 * len(table) == 144
    # the runs disagree only where a race is plausible: the loopback, 512 B, QD 16 and deeper
    assert all("loopback" in r.quantity and "512 B" in r.quantity for r in audits)
    assert sum(not r.passed for r in tests) == len(SP.KNOWN_FAILING) == 2


def test_one_cpu_stalls_wherever_the_bound_allows_and_two_cpus_where_the_simulator_does(table):
    assert (table["same"] == table["bound"]).all()
    apart = table[table["apart"] != SP.MIXED]
    assert (apart["apart"] == apart["simulator"]).all()
    # the placements differ: pinned together a Nagle client's server stalls from QD 4 up, apart
    # it does not
    deep = table.xs("nagle", level="client_sock_mode").query("qd >= 4")
    assert ((deep["same"] == SP.STALLS) & (deep["apart"] == SP.NO_STALL)).sum() >= 8


@pytest.mark.parametrize(
    "wrong, at_least",
    [
        ({"same": "simulator", "none": "simulator"}, 20),  # a CPU per end for every placement
        ({"apart": "bound"}, 10),  # the one-CPU bound for the runs on two CPUs
    ],
)
def test_the_wrong_pairings_fail(table, wrong, at_least):
    rows = SP.verdict_rows(table, source="test", model_of={**SP.MODEL, **wrong})
    failing = [r for r in rows if r.kind == "test" and not r.passed]
    assert len(failing) >= at_least


def test_known_failures_name_configurations_of_the_sweep(table):
    for link, client, size, qd, pin in SP.KNOWN_FAILING:
        assert (link, client, size, qd) in table.index
        assert pin in SP.MODEL


@pytest.mark.parametrize("bad", ["wifi", "veth", "veth-x", "loop"])
def test_a_link_label_without_an_mtu_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="link must be"):
        SP.mtu_bytes(bad)


@pytest.fixture(scope="module")
def one_cpu(table) -> dict[str, pd.DataFrame]:
    """The kernel's one-CPU verdicts beside the simulator's on one CPU, with a thread holding
    the CPU until it blocks (the model) and with the threads' work taking turns first come,
    first served (the wrong model: the CPU pool as it was before)."""
    out = {}
    for name, hold in (("hold", True), ("turns", False)):
        link = {**SP.ONE_CPU_LINK, "run_to_block": hold}
        sim = SP.simulated_verdicts(table.index, one_cpu=link)
        out[name] = SP.verdict_table(table[["same", "apart", "none"]], sim, sim)
    return out


def test_on_one_cpu_the_simulator_stalls_as_deep_as_the_kernel_with_a_nodelay_client(one_cpu):
    t = one_cpu["hold"]
    nodelay = t.xs("nodelay", level="client_sock_mode")
    assert (nodelay[SP.ONE_CPU] == nodelay["same"]).all()
    # down to QD 64 on the loopback with 512-byte responses, where a CPU each stops after 8
    assert SP.deepest(t, SP.ONE_CPU)[("loopback", "nodelay", 512)] == 64
    assert SP.deepest(t, "apart")[("loopback", "nodelay", 512)] <= 16
    rows = SP.one_cpu_rows(t, source="test")
    assert len(rows) == 8 and all(r.ok for r in rows), [r.status for r in rows if not r.ok]
    assert sum(not r.passed for r in rows) == len(SP.ONE_CPU_FAILING) == 3


def test_turns_on_one_cpu_miss_the_nodelay_stalls(one_cpu):
    """The wrong model: stretches of work that take turns let the server answer between the
    client's writes, and the stall ends."""
    t = one_cpu["turns"]
    nodelay = t.xs("nodelay", level="client_sock_mode")
    assert int((nodelay[SP.ONE_CPU] != nodelay["same"]).sum()) >= 8
    rows = SP.one_cpu_rows(t, source="test")
    assert sum(not r.passed for r in rows) > len(SP.ONE_CPU_FAILING)


def test_the_scheduler_trace_findings_hold_and_can_fail():
    """The scheduler trace of the loop on one CPU (data/kernel6_machine4_preempt): every finding
    holds, and a trace where the server preempts the client it wakes, or where the client never
    preempts the server, fails the finding it contradicts."""
    df = data.load(SP.PREEMPT_DATASET)
    assert all(SP.preemption_findings(df).values())
    assert set(df["client_sock_mode"]) == {"nagle", "nodelay"}
    # the wrong traces
    server_preempts = df.copy()
    client = server_preempts["caller"] == "client"
    server_preempts.loc[client, "preempted"] = server_preempts.loc[client, "wakeups"]
    got = SP.preemption_findings(server_preempts)
    assert not got["the server's wake-ups seldom preempt the client"]
    never = df.assign(preempted=0)
    got = SP.preemption_findings(never)
    assert not got[
        "with a Nagle client, the woken client often preempts the server after its sends"
    ]
    assert got["with a NODELAY client, it seldom does"]


def test_the_fourth_machine_pinned_to_one_cpu_gives_the_second_machines_verdicts():
    """The sweep again on the machine of the scheduler trace: every one-CPU verdict as on the
    second machine, and a sweep with one verdict turned around is told apart."""
    second = SP.kernel_verdicts(data.load(SP.DATASET))
    fourth = SP.kernel_verdicts(data.load(SP.MACHINE4_DATASET))
    assert list(fourth.index) == list(second.index)
    assert (fourth["same"] == second["same"]).all()
    turned = fourth["same"].copy()
    turned.iloc[0] = SP.NO_STALL if turned.iloc[0] == SP.STALLS else SP.STALLS
    assert not (turned == second["same"]).all()


def test_the_preemption_with_the_fourth_machines_profile_gets_every_nagle_client_verdict():
    from models.sim import hostprofile
    from models.validation import machine4 as M4

    fourth = SP.kernel_verdicts(data.load(SP.MACHINE4_DATASET))
    profile = hostprofile.shipped(M4.PROFILE)
    ok, _ = SP.one_cpu_right(
        fourth, SP.simulated_verdicts(fourth.index, profile, one_cpu=SP.PREEMPT_LINK)
    )
    held, _ = SP.one_cpu_right(
        fourth, SP.simulated_verdicts(fourth.index, profile, one_cpu=SP.ONE_CPU_LINK)
    )
    n = int((fourth.index.get_level_values("client_sock_mode") == "nagle").sum())
    assert ok["nagle"] == n > held["nagle"]  # the wrong model (no preemption) misses some

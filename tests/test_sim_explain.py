"""``python -m models.sim --explain`` (models.sim.explain): the limit it names is the one the
simulator's own counters show, and its fixes and thresholds are what they claim."""

from __future__ import annotations

import pytest

from models import presets
from models.analytic import numbers as A
from models.sim import Scenario, simulate
from models.sim.explain import explain, format_explanation


def test_delayed_ack_and_its_fixes() -> None:
    e = explain(Scenario(run={"ops": 200}))
    assert e["binds"] == "delayed-ack"
    assert e["delayed_acks_per_op"] > 0.9
    assert min(e["fixes"].values()) > 100 * e["iops"]
    assert "server" in e["why"]


def test_probe_names_the_cork_and_nodelay_does_not_fix_it() -> None:
    e = explain(Scenario(server={"msg_more": True, "msg_more_last": True}, run={"ops": 20}))
    assert e["binds"] == "probe"
    uncork = next(v for k, v in e["fixes"].items() if "msg-more-last false" in k)
    assert uncork > 100 * e["iops"]
    assert e["fixes"]["--server-nodelay true"] < 2 * e["iops"]  # MSG_MORE outranks NODELAY


@pytest.mark.parametrize(
    "scenario,binds",
    [
        (presets.one_segment(run={"ops": 500}), "queue-depth"),
        (presets.one_segment(workload={"qd": 64}, run={"ops": 3000}), "server-cpu"),
        (
            presets.one_segment(
                workload={"qd": 8, "response_writes": (48, 65536)}, run={"ops": 300}
            ),
            "link",
        ),
    ],
)
def test_resources(scenario: Scenario, binds: str) -> None:
    e = explain(scenario)
    assert e["binds"] == binds
    text = format_explanation(e)
    assert f"binds: {binds}" in text


def test_queue_depth_threshold_is_chapter_3s() -> None:
    sc = presets.one_segment(run={"ops": 500})
    e = explain(sc)
    sym = sc.symbol_values()
    expected = A.qd_min_cpu(sym["CL"], sym["RTTmin"] + sc.path_latency_s(), sc.server.proc_s)
    assert e["inequality"] == "[2]" and e["qd_needed"] == pytest.approx(expected)
    # Past the threshold the server thread binds; well short of it, the queue depth does.
    deep = explain(sc.replace(workload={"qd": 2 * round(expected)}, run={"ops": 3000}))
    assert deep["binds"] == "server-cpu"


def test_explain_uses_a_given_result() -> None:
    sc = Scenario(run={"ops": 50})
    r = simulate(sc)
    assert explain(sc, r)["iops"] == r.iops


def test_reader_scenario_builds_what_it_says() -> None:
    from models.sim.explain import reader_scenario

    sc = reader_scenario(
        link_bps=10e9,
        mtu=9000,
        latency_s=0.001,
        io_bytes=65536,
        op="write",
        server_s=20e-6,
        client_s=5e-6,
        qd=8,
        server_mode="msg-more",
        client_mode="cork",
    )
    assert sc.workload.request_writes == (48, 65536) and sc.workload.response_writes == (48,)
    assert (sc.link.bandwidth_bps, sc.link.mtu, sc.link.latency_s) == (10e9, 9000, 0.001)
    assert sc.server.msg_more and sc.client.cork and sc.workload.qd == 8
    assert (sc.server.proc_s, sc.client.proc_s) == (20e-6, 5e-6)


@pytest.mark.parametrize(
    "kw,name",
    [
        ({"qd": 0}, "qd"),
        ({"qd": 257}, "qd"),
        ({"qd": 2.5}, "qd"),
        ({"mtu": 100000}, "mtu"),
        ({"link_bps": 1e12}, "link_bps"),
        ({"latency_s": float("nan")}, "latency_s"),
        ({"io_bytes": 100}, "io_bytes"),
        ({"op": "trim"}, "op"),
        ({"server_mode": "fast"}, "server_mode"),
        ({"client_s": -1}, "client_s"),
    ],
)
def test_reader_scenario_refuses(kw: dict, name: str) -> None:
    from models.sim.explain import reader_scenario

    with pytest.raises(ValueError, match=name):
        reader_scenario(**kw)

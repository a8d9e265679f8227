"""figures.sequence: two traces of one run become a time-sequence diagram's arrows."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import matplotlib
import pytest

from figures.sequence import FIELDS, both_ends, diagram, draw, sequence_arrows, sequence_figure
from models.presets import busy_count, flory
from models.sim import PROFILES, Scenario, simulate

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from build_live_bundle import run_blocked  # noqa: E402  (the one list of blocked packages)

STALL = Scenario(run={"ops": 4})


def test_every_packet_once_and_forward_in_time():
    client, server, _ = both_ends(STALL)
    d = sequence_arrows(client, server)
    arrows = d["arrows"]
    assert 0 < len(arrows) <= min(len(client), len(server))
    assert all(a["received_s"] >= a["sent_s"] and a["y1"] >= a["y0"] for a in arrows)
    assert [a["sent_s"] for a in arrows] == sorted(a["sent_s"] for a in arrows)
    # every data byte the server sent is in exactly one arrow
    s2c = sorted((a["seq"], a["end"]) for a in arrows if a["direction"] == "S > C" and a["length"])
    assert all(a[1] == b[0] for a, b in zip(s2c, s2c[1:]))


def test_the_stall_is_a_delayed_ack_then_the_released_data():
    """The default two-call response: the client's ACK of the header waits for the delayed-ACK timer
    (ten 4 ms ticks from the start of the tick it was armed in), and the 512 data bytes leave the
    instant it reaches the server."""
    d = diagram(STALL)
    phase = simulate(STALL).tick_phase_s
    tick = 1 / PROFILES["linux-6"].hz
    delayed = [a for a in d["arrows"] if a["ack_delay_s"] and a["ack_delay_s"] > 1e-3]
    assert len(delayed) >= 3
    for a in delayed:
        owed = a["sent_s"] - a["ack_delay_s"]
        into = (owed + phase) % tick
        assert a["ack_delay_s"] == pytest.approx(10 * tick - into, abs=1e-12)
        after = [b for b in d["arrows"] if b["sent_s"] == a["received_s"] and b["length"]]
        assert [b["length"] for b in after] == [512] and after[0]["released_by_ack"]


def test_nothing_is_released_by_an_ack_without_nagle():
    d = diagram(busy_count("nodelay", 2, ops=20))
    assert not any(a["released_by_ack"] for a in d["arrows"])
    d = diagram(busy_count("nagle", 2, ops=20))
    responses = [a for a in d["arrows"] if a["direction"] == "S > C" and a["length"]][4:]
    assert responses and all(a["released_by_ack"] for a in responses)


def test_flory_one_byte_more_costs_a_round_trip():
    d = diagram(flory(framing_mss() + 1))
    tails = [a for a in d["arrows"] if a["length"] == 1]
    assert len(tails) == 2  # one per exchange
    for tail in tails:
        assert tail["released_by_ack"]
        (ack,) = [
            a
            for a in d["arrows"]
            if a["direction"] == "C > S" and not a["length"] and a["received_s"] == tail["sent_s"]
        ]
        assert ack["ack_delay_s"] == 0  # acknowledged on arrival, not delayed


def framing_mss() -> int:
    from models import framing

    return framing.mss(1500)


def test_gaps_are_shortened_and_listed():
    client, server, _ = both_ends(STALL)
    full = sequence_arrows(client, server)
    short = sequence_arrows(client, server, max_gap_s=1e-3, gap_height_s=1e-4)
    assert short["breaks"] and not full["breaks"]
    cut = sum(b["seconds"] - b["height"] for b in short["breaks"])
    assert short["y_max"] == pytest.approx(full["y_max"] - cut, abs=1e-12)
    assert all(b["seconds"] > 1e-3 for b in short["breaks"])
    # order is kept
    ys = [a["y0"] for a in short["arrows"]]
    assert ys == sorted(ys)


def test_windows_select_packets():
    client, server, _ = both_ends(STALL)
    all_arrows = sequence_arrows(client, server)["arrows"]
    some = sequence_arrows(client, server, first=3, count=4)["arrows"]
    assert [a["sent_s"] for a in some] == [a["sent_s"] for a in all_arrows[3:7]]
    req = sequence_arrows(client, server, first_request=2, count=1)["arrows"]
    requests = [a for a in all_arrows if a["direction"] == "C > S" and a["length"]]
    assert req[0]["sent_s"] == requests[2]["sent_s"]
    late = sequence_arrows(client, server, start_s=0.05)["arrows"]
    assert late and all(a["sent_s"] >= 0.05 for a in late)
    assert sequence_arrows(client, server, start_s=10.0) == {
        "arrows": [],
        "breaks": [],
        "t0": 0.0,
        "y_max": 0.0,
    }


def test_records_dicts_and_tuples_give_the_same_diagram():
    client, server, _ = both_ends(STALL)
    as_dicts = [[dataclasses.asdict(r) for r in t] for t in (client, server)]
    as_tuples = [[tuple(getattr(r, f) for f in FIELDS) for r in t] for t in (client, server)]
    ref = sequence_arrows(client, server, max_gap_s=1e-3)
    assert sequence_arrows(*as_dicts, max_gap_s=1e-3) == ref
    assert sequence_arrows(*as_tuples, max_gap_s=1e-3) == ref
    json.dumps(ref)  # plain data


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"max_gap_s": 0.0}, "max_gap_s"),
        ({"gap_height_s": -1.0}, "gap_height_s"),
        ({"first": -1}, "first"),
        ({"first_request": 99}, "first_request"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, name):
    client, server, _ = both_ends(STALL)
    with pytest.raises(ValueError, match=name):
        sequence_arrows(client, server, **kwargs)


def test_mismatched_traces_are_refused():
    client, server, _ = both_ends(STALL)
    early = [dataclasses.replace(r, time=r.time + 1.0) for r in client]
    with pytest.raises(ValueError, match="traces do not match"):
        sequence_arrows(early, server)
    with pytest.raises(ValueError, match="fields"):
        sequence_arrows([(0.0, "C > S")], server)


def test_drawing_makes_one_arrow_per_group():
    import matplotlib.pyplot as plt

    d = diagram(STALL, first_request=2, count=6, max_gap_s=1e-3)
    nodelay = diagram(STALL.replace(server={"nodelay": True}), first_request=2, count=6)
    fig = sequence_figure([("stall", d), ("again", d)])
    assert len(fig.axes) == 2
    fig2, ax = plt.subplots()
    draw(ax, nodelay, title="t")
    groups = {(a["direction"], a["y0"], a["y1"]) for a in nodelay["arrows"]}
    arrows = [c for c in ax.texts if isinstance(c, matplotlib.text.Annotation)]
    # header and data sent together share one arrow, labelled "48 B + 512 B"
    assert len(arrows) == len(groups) < len(nodelay["arrows"])
    assert any(t.get_text() == "48 B + 512 B" for t in ax.texts)
    plt.close("all")


def test_conversion_runs_without_numpy_sympy_pandas():
    """What a live figure would run in the browser: the simulator and the conversion, with the
    heavy packages blocked, give the same arrows as here."""
    body = "\n".join(
        [
            "from models.sim import Scenario",
            "from figures.sequence import diagram",
            "d = diagram(Scenario(run={'ops': 4}), max_gap_s=1e-3)",
            "print(json.dumps(d))",
        ]
    )
    out = run_blocked(body)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(diagram(STALL, max_gap_s=1e-3)))


def test_live_figure_runs_without_numpy_sympy_pandas():
    """Chapter 5's live sequence figure (figures.chapters.sequence) gives the same frame in the
    blocked interpreter as here, for a point off its grid."""
    from figures.chapters.sequence import TWO_CALL_SEQUENCE
    from figures.live import evaluate_json

    spec = {**TWO_CALL_SEQUENCE.spec_json(), "values": {"data": 1000, "fix": "TCP_NODELAY"}}
    out = run_blocked(
        "from figures.live import evaluate_json\n"
        "print(json.dumps(evaluate_json(json.loads(sys.stdin.read()))))",
        stdin=json.dumps(spec),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(evaluate_json(spec)))


def test_live_figure_shows_stall_boundary_and_extra_round_trip():
    from figures.chapters.sequence import two_call_sequence

    mss = framing_mss()
    took = {}
    for data in (mss - 1, mss, mss + 1):
        frame = two_call_sequence(data, "none (Nagle)")
        took[data] = frame["title"].rsplit("takes ", 1)[1]
        rings = [t for t in frame["traces"] if t["name"] == "sent the instant an ACK arrived"]
        assert rings[0]["x"] or data == mss  # a held segment, released by an ACK
    assert took[mss - 1].endswith(" ms") and took[mss].endswith(" µs")
    assert took[mss + 1].endswith(" µs") and float(took[mss + 1][:-3]) > float(took[mss][:-3])

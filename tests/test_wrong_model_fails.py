"""Failing on purpose: a chapter run against a deliberately wrong model must stop with an AssertionError.

These tests prove the chapters' asserts can fail, so that a green test run means the models agree with
the derivations and the data, not merely that the cells ran.  Each test prepends one cell that breaks a
model in the running kernel, executes the chapter, and requires an ``AssertionError`` from a chapter cell
(not an import error or a crash).
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]


def _run_with_patch(chapter: str, patch: str) -> str:
    nb = jupytext.read(ROOT / "book" / chapter)
    nb.cells.insert(0, nbformat.v4.new_code_cell(patch))
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(ROOT / "book")}},
    )
    with pytest.raises(CellExecutionError) as err:
        client.execute()
    return str(err.value)


def test_wrong_cpu_bound_fails_chapter_3():
    """Inequality [2] with SL wrongly added to the refill path: chapter 3's derivation check must fail."""
    message = _run_with_patch(
        "03_bottleneck.md",
        """
import models.analytic as _A
_A.qd_min_cpu_bound = lambda: (_A.S.CL + _A.S.RTTmin + _A.S.SL) / _A.S.SP
""",
    )
    assert "AssertionError" in message and "qd_min_cpu_bound" in message


def test_wrong_framing_fails_chapter_2():
    """Ethernet overhead taken as 18 bytes (no preamble or gap): the wire-time checks must fail."""
    message = _run_with_patch(
        "02_time_on_the_wire.md",
        """
import models.framing as _F
_F.MAC_BYTES = 18
_F.FRAME_OVERHEAD_BYTES = _F.TCPIP_BYTES + 18
""",
    )
    assert "AssertionError" in message


def test_mismeasured_rtt_fails_chapter_1():
    """A ring that reports RTT 5 % long (a timestamp taken too early): Little's-law checks must fail.

    (A wrong stage time would not do: Little's law holds whatever the stage times are.)
    """
    message = _run_with_patch(
        "01_operations_in_flight.md",
        """
import models.ring as _R
_run = _R.Ring.run
def _bad_run(self, *a, **k):
    r = _run(self, *a, **k)
    r.rtts = [x * 1.05 for x in r.rtts]
    r.rtt_mean *= 1.05
    return r
_R.Ring.run = _bad_run
""",
    )
    assert "AssertionError" in message


def test_nagle_off_fails_chapter_4():
    """A simulator whose Nagle rule never holds anything: chapter 4's sweep of inequality [3] must
    fail, because the Nagle server then becomes CPU bound at TCP_NODELAY's queue depth."""
    message = _run_with_patch(
        "04_nagle.md",
        """
import models.sim.rules.nagle as _N
_N.MinshallNagle.holds = lambda self, sender: False
""",
    )
    assert "AssertionError" in message and "q_nagle == math.ceil(x3)" in message


def test_short_delayed_ack_fails_chapter_5():
    """A delayed-ACK timer of 20 ms instead of Linux's 40 ms: the stall no longer meets
    Butterfield's 25 IOPS per request in flight, and chapter 5 must stop there."""
    message = _run_with_patch(
        "05_delayed_ack.md",
        """
import dataclasses as _dc
from models.sim import kernels as _K
for _name in ("linux-6", "linux-2.4"):
    _K.PROFILES[_name] = _dc.replace(_K.PROFILES[_name], delack_min_s=0.020)
""",
    )
    assert "AssertionError" in message and "cap_40ms" in message


def test_wrong_framing_fails_chapter_6():
    """Ethernet overhead taken as 18 bytes in the simulator's wire times: the default scenario no
    longer adds up to Butterfield's measured round trip, and chapter 6 must say so."""
    message = _run_with_patch(
        "06_inside_the_simulator.md",
        """
import models.framing as _F
_F.MAC_BYTES = 18
_F.FRAME_OVERHEAD_BYTES = _F.TCPIP_BYTES + 18
""",
    )
    assert "AssertionError" in message and 'b17["RTT"]' in message


# ---- the comparisons of Parts III and IV added with the audit/fit/test kinds ----------------------
# Each new test row must be able to fail: run its comparison set on a wrong model and require
# assert_all_pass to raise.


def _batched_write_latency_expr(initial_r2t=True, immediate_data=True):
    """MaxOutstandingR2T as batches: every message waits for the one before it, so the latency is
    (1 + ceil(m/R)) round trips plus the wire time of every message."""
    import sympy as sp

    from models.analytic import iscsi as ID

    m = ID.r2t_count_expr(initial_r2t, immediate_data)
    unsolicited = 0 if initial_r2t else ID.Wu
    wire = ID.Wc + unsolicited + m * ID.Wr + sp.Max(m - 1, 0) * ID.Wb + ID.Wl + ID.Ws
    trips = 1 + sp.ceiling(m / ID.R)
    return trips * (ID.RTT + ID.d) + wire / ID.C


def test_batches_of_r2ts_fail_the_simulator_comparison(monkeypatch):
    """Chapter 12: with R2Ts in batches instead of a sliding window, the derived latency misses the
    simulator's where the window slides, and only there."""
    from models.analytic import iscsi as ID
    from models.validation import assert_all_pass
    from models.validation import iscsi as VI

    monkeypatch.setattr(ID, "write_latency_expr", _batched_write_latency_expr)
    rows = VI.window_comparisons()
    with pytest.raises(AssertionError, match="R=2") as err:
        assert_all_pass(rows)
    bad = [r for r in rows if not r.passed]
    assert bad and all(_batches_differ(r) for r in bad)
    assert any(r.extra["window"] > 1 for r in bad)
    assert "R=1, bursts of 8 KiB, RTT" not in str(err.value)  # one R2T at a time, nothing unasked


def _batches_differ(row) -> bool:
    """Where batches of R2Ts and the window part: the window slides (more R2Ts than R, R > 1), or
    the first R2T goes while unsolicited Data-Out is still on its way (batches wait for it)."""
    slides = row.extra["window"] > 1 and row.extra["r2ts"] > row.extra["window"]
    overlap = row.extra["r2ts"] > 0 and row.extra["unsolicited_data_out_bytes"] > 0
    return slides or overlap


def _batched_messages(op, size_bytes, session=None):
    """The simulator's workload with R2Ts in batches of R: each batch's R2Ts released by the last
    Data-Out of the batch before (the first by the last message the initiator writes unasked),
    so every message waits for the whole run of messages before it, a chain."""
    from models import iscsi

    msgs = iscsi.messages(op, size_bytes, session)
    if op != "write":
        return tuple((m.direction, m.writes, m.after) for m in msgs)
    s = session or iscsi.Session()
    out = [(m.direction, m.writes, None) for m in msgs if m.after is None]
    data = [m.writes for m in msgs if m.direction == "C>S" and m.after is not None]
    r2t = iscsi.Pdu("R2T").writes(s, False)
    window = s.max_outstanding_r2t
    for k in range(0, len(data), window):
        group = data[k : k + window]
        out.append(("S>C", r2t * len(group), len(out) - 1))
        release = len(out) - 1
        out += [("C>S", writes, release) for writes in group]
    out.append(("S>C", msgs[-1].writes, len(out) - 1))
    return tuple(out)


def test_a_simulator_replaying_batches_of_r2ts_fails_the_comparison(monkeypatch):
    """Chapter 12 the other way round: the derived (window) latency is right, but the simulator
    replays each write with its R2Ts in batches, a chain of legs.  The comparison must fail where
    batches and the window part, and only there."""
    from models import presets
    from models.validation import assert_all_pass
    from models.validation import iscsi as VI

    assert presets.iscsi_idle_path("write", 1 << 20, VI.grid()[0][1], 1e-3, 1e9).workload.messages
    monkeypatch.setattr(presets, "iscsi_messages", _batched_messages)
    VI.simulated_latency_s.cache_clear()
    try:
        rows = VI.window_comparisons()
    finally:
        VI.simulated_latency_s.cache_clear()
    with pytest.raises(AssertionError, match="R=16"):
        assert_all_pass(rows)
    bad = [r for r in rows if not r.passed]
    assert all(_batches_differ(r) for r in bad)
    assert {r.extra["window"] for r in bad} == {1, 2, 4, 16}
    # With one R2T at a time, only where the R2T overtakes unsolicited Data-Out.
    assert all(r.extra["unsolicited_data_out_bytes"] for r in bad if r.extra["window"] == 1)
    assert {r.extra["regime"] for r in bad} >= {"window", "link"}


def test_a_simulator_replaying_batches_of_r2ts_fails_chapter_12():
    """The same wrong simulator in the running chapter: a cell of chapter 12 must stop."""
    message = _run_with_patch(
        "12_iscsi_exchange.md",
        """
import models.presets as _P
from models import iscsi as _I
def _batched(op, size_bytes, session=None):
    msgs = _I.messages(op, size_bytes, session)
    if op != "write":
        return tuple((m.direction, m.writes, m.after) for m in msgs)
    s = session or _I.Session()
    out = [(m.direction, m.writes, None) for m in msgs if m.after is None]
    data = [m.writes for m in msgs if m.direction == "C>S" and m.after is not None]
    r2t = _I.Pdu("R2T").writes(s, False)
    for k in range(0, len(data), s.max_outstanding_r2t):
        group = data[k : k + s.max_outstanding_r2t]
        out.append(("S>C", r2t * len(group), len(out) - 1))
        out += [("C>S", w, len(out) - 1) for w in group]
    out.append(("S>C", msgs[-1].writes, len(out) - 1))
    return tuple(out)
_P.iscsi_messages = _batched
""",
    )
    assert "AssertionError" in message and "assert_all_pass(win_rows)" in message


def test_batches_of_r2ts_fail_chapter_12():
    """The same wrong model in the running chapter: a cell of chapter 12 must stop."""
    message = _run_with_patch(
        "12_iscsi_exchange.md",
        """
import sympy as _sp
import models.analytic.iscsi as _ID
def _batched(initial_r2t=True, immediate_data=True):
    m = _ID.r2t_count_expr(initial_r2t, immediate_data)
    u = 0 if initial_r2t else _ID.Wu
    wire = (_ID.Wc + u + m * _ID.Wr + _sp.Max(m - 1, 0) * _ID.Wb + _ID.Wl
            + _ID.Ws)
    return (1 + _sp.ceiling(m / _ID.R)) * (_ID.RTT + _ID.d) + wire / _ID.C
_ID.write_latency_expr = _batched
""",
    )
    assert "AssertionError" in message


def test_a_rate_that_ignores_the_round_trip_fails_chapter_11(monkeypatch):
    """Chapter 11: if the default reads kept their rate at every distance (no window), the rates at
    100 and 150 ms would miss the fit at 50 ms by a factor of two or three."""
    from models.validation import assert_all_pass
    from models.validation import wan as VW

    fit_rtt_s = VW.FIT_RTT_MS * 1e-3  # ms -> s
    monkeypatch.setattr(VW.w, "window_bound_Bps", lambda win, rtt_s: win / fit_rtt_s)
    rows = VW.window_64k()
    assert rows[0].kind == "fit" and rows[0].passed  # the fit still agrees by construction
    with pytest.raises(AssertionError, match="100 ms"):
        assert_all_pass(rows)
    assert [r.passed for r in rows if r.kind == "test"] == [False, False]


def test_a_plant_of_two_queues_fails_the_cost_ratio_of_chapter_10():
    """Chapter 10: the writers' rates and the ratio of the marginal costs answer to the plant.  A
    plant of two disk queues meets the thesis's rates (so the rows recorded as failing would pass,
    which assert_all_pass reports) and misses the ratio the single queue gets right."""
    from models.control import thesis as th
    from models.validation import assert_all_pass
    from models.validation import throttling as VT

    assert_all_pass(VT.cost_rows(th.thesis_plant()))  # as recorded
    rows = VT.cost_rows(th.thesis_plant(stations=2))
    with pytest.raises(AssertionError) as err:
        assert_all_pass(rows)
    assert "cost per ms" in str(err.value) and "recorded as failing" in str(err.value)
    ratio, *rates = rows
    assert not ratio.passed and all(r.passed and r.fails for r in rates)

"""Chapter 5 figure: IOPS against queue depth for a response written with
two ``send()`` calls, live in the book (standard library only: it runs in
the browser).

Every curve is a run of the packet simulator (:func:`models.sim.simulate`):
a 48-byte request, a response written as a header then the data, Nagle on
unless the fix turns it off.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from models import framing
from models.sim import Scenario, simulate

__all__ = ["FIXES", "QDS", "two_call_iops", "two_call_qd", "TWO_CALL_QD"]

#: The fixes a reader can pick, and the server socket options each one sets.
FIXES = {
    "none (Nagle)": {},
    "TCP_NODELAY": {"nodelay": True},
    "MSG_MORE on the header": {"msg_more": True},
    "MSG_MORE on both calls": {"msg_more": True, "msg_more_last": True},
}
#: Queue depths of every curve (the chapter's static figure uses the first
#: six).
QDS = (1, 2, 3, 4, 6, 8, 12, 16)
DELACK_S = 0.040  # the 40 ms delayed-ACK timeout (TCP_DELACK_MIN)
PROBE_S = 0.200  # the 200 ms probe floor (TCP_RTO_MIN)
NO_FIX = "none (Nagle)"


def two_call_iops(
    fix: str, header: int, data: int, qds: Sequence[int] = QDS, ops_per_qd: int = 60
) -> list[float]:
    """Simulated IOPS at each queue depth for a ``(header, data)``
    response with one of :data:`FIXES`.

    Each run measures ``ops_per_qd * QD`` operations (a stalled run takes
    40 ms per operation, so its length in simulated time does not grow
    with QD).
    """
    if fix not in FIXES:
        raise ValueError(f"fix must be one of {list(FIXES)}, got {fix!r}")
    sc = Scenario(workload={"response_writes": (header, data)}, server=FIXES[fix])
    return [
        simulate(sc.replace(workload={"qd": int(q)}, run={"ops": ops_per_qd * int(q)})).iops
        for q in qds
    ]


@functools.lru_cache(maxsize=64)
def _no_fix(header: int, data: int, ops_per_qd: int) -> tuple[float, ...]:
    """The no-fix curve, shared by the figures of every fix (computed
    once per header and data size)."""
    return tuple(two_call_iops(NO_FIX, header, data, QDS, ops_per_qd))


def two_call_qd(fix: str, header: int, data: int, ops_per_qd: int = 60) -> dict:
    """IOPS against QD for a response written as ``header`` then ``data``
    bytes (two ``send()`` calls) with ``fix``, beside the same response
    with no fix, and the ceilings of one 40 ms delayed ACK and one 200 ms
    probe per operation."""
    qds = list(QDS)
    none = list(_no_fix(header, data, ops_per_qd))
    y = none if fix == NO_FIX else two_call_iops(fix, header, data, qds, ops_per_qd)
    cap = [q / DELACK_S for q in qds]  # one 40 ms timeout per op: QD/0.040 s
    probe = [q / PROBE_S for q in qds]  # one 200 ms probe per operation
    stalled = [q for q, v in zip(qds, y) if v <= 1.02 * q / DELACK_S]
    traces = []
    if fix != NO_FIX:
        traces.append(
            {
                "x": qds,
                "y": none,
                "name": "no fix (Nagle)",
                "mode": "lines+markers",
                "line": {"color": "#aaaaaa", "width": 1},
                "marker": {"size": 4},
            }
        )
    traces += [
        {"x": qds, "y": y, "name": fix, "mode": "lines+markers", "line": {"color": "#1f77b4"}},
        {
            "x": qds,
            "y": cap,
            "name": "25 x QD: one 40 ms delayed ACK per op",
            "mode": "lines",
            "line": {"color": "black", "dash": "dot", "width": 1},
        },
        {
            "x": qds,
            "y": probe,
            "name": "5 x QD: one 200 ms probe per op",
            "mode": "lines",
            "line": {"color": "#d62728", "dash": "dot", "width": 1},
        },
    ]
    where = (
        f"at or under 25 x QD at QD {', '.join(map(str, stalled))}"
        if stalled
        else "above 25 x QD at every QD"
    )
    return {
        "traces": traces,
        "title": (f"{header} + {data} bytes: {y[0]:,.1f} IOPS at QD 1; {where}"),
    }


_OPS_PER_QD = 60

#: The MSS at MTU 1500, bytes: grid points sit on either side of it.
_MSS = framing.mss(1500)

#: The chapter's main figure.
TWO_CALL_QD = Live(
    "ch5-delack-qd",
    two_call_qd,
    controls=[
        Select("fix", "fix", list(FIXES), NO_FIX),
        Range(
            "header",
            "header (bytes)",
            1,
            4096,
            grid=[8, 48, _MSS],
            value=48,
            integer=True,
            log=True,
        ),
        Range(
            "data",
            "data (bytes)",
            1,
            8192,
            grid=[16, 512, 1024, _MSS - 1, _MSS, 2048, 4096],
            value=512,
            integer=True,
            log=True,
        ),
    ],
    fixed={"ops_per_qd": _OPS_PER_QD},
    layout=legend_below(
        {
            "xaxis": {"title": {"text": "queue depth QD"}},
            "yaxis": {"title": {"text": "IOPS (log scale)"}, "type": "log", "range": [0, 4.8]},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
        }
    ),
    digits=4,
    caption=(
        f"Each curve is a packet simulation (models.sim) of "
        f"{_OPS_PER_QD} x QD operations at each of {len(QDS)} queue "
        f"depths {QDS[0]}-{QDS[-1]} (linux-6 profile, 1 Gb/s, MTU "
        "1500, so MSS 1448 bytes). The grey curve is the same "
        "response with no fix. 84 points (fix x header x data) were "
        "computed when the book was built."
    ),
)

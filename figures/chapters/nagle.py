"""Chapter 4 figure: IOPS against queue depth with Nagle and with
TCP_NODELAY, live in the book (standard library only: it runs in the
browser).

Every curve is a run of the packet simulator (:func:`models.sim.simulate`)
on the source's busy-count set-up (:func:`models.presets.busy_count`:
512-byte reads, MSG_MORE on the header, Nagle or TCP_NODELAY on the
server's socket, the initiator's TCP_NODELAY unchanged).
"""

from __future__ import annotations

from collections.abc import Sequence

from figures.live import Live, Range, Select, iops_qd_layout
from models.presets import busy_count
from models.sim import BUTTERFIELD_SERVER, simulate

__all__ = ["QDS", "CPU_PER_OP_US", "SL_US", "nagle_iops", "nagle_qd", "NAGLE_QD"]

#: Queue depths of every curve.
QDS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64)
#: Server CPU time per operation when each response is its own segment, µs
#: (Butterfield 2017's SP, rounded to 0.1 µs as the figure's caption shows).
CPU_PER_OP_US = round(BUTTERFIELD_SERVER.proc_s * 1e6, 1)  # s -> us
#: Butterfield's server wake-up latency SL in µs, rounded to the slider's
#: 0.1 µs step: the figure's default.
SL_US = round(BUTTERFIELD_SERVER.wake_s * 1e6, 1)  # s -> us


def nagle_iops(
    mode: str,
    sk_us: float,
    sl_us: float,
    autocork: bool,
    qds: Sequence[int] = QDS,
    ops: int = 3000,
) -> list[float]:
    """Simulated IOPS at each queue depth for ``mode`` ``"nagle"`` or
    ``"nodelay"``.

    ``sk_us`` of the :data:`CPU_PER_OP_US` per operation is moved into a per-segment
    transmit cost (``tx_cpu_s``, SK), the rest stays per operation
    (``proc_s``, SP); ``sl_us`` is the server thread's wake-up latency.
    """
    if not 0 <= sk_us < CPU_PER_OP_US:
        raise ValueError(f"sk_us must be in [0, {CPU_PER_OP_US}) µs, got {sk_us!r}")
    server = dict(
        proc_s=(CPU_PER_OP_US - sk_us) * 1e-6,  # µs -> seconds
        tx_cpu_s=sk_us * 1e-6,
        wake_s=sl_us * 1e-6,
    )
    return [
        simulate(
            busy_count(mode, int(q), ops=ops).replace(server=server, kernel={"autocork": autocork})
        ).iops
        for q in qds
    ]


def nagle_qd(sk_us: float, sl_us: float, autocork: str, ops: int = 3000) -> dict:
    """IOPS (thousands) against QD with Nagle and with TCP_NODELAY, and
    the server's CPU limits with one segment per operation (``1/(SP +
    SK)``) and with the segment cost fully shared (``1/SP``).

    ``sk_us`` of the :data:`CPU_PER_OP_US` per operation is a per-segment transmit cost,
    ``sl_us`` the server's wake-up latency (µs); ``autocork`` ``"on"`` or
    ``"off"``; ``ops`` operations per queue depth.
    """
    if autocork not in ("on", "off"):
        raise ValueError(f"autocork must be 'on' or 'off', got {autocork!r}")
    qds = list(QDS)
    k = 1e-3  # IOPS -> thousands
    on = autocork == "on"
    nd = [x * k for x in nagle_iops("nodelay", sk_us, sl_us, on, qds, ops)]
    ng = [x * k for x in nagle_iops("nagle", sk_us, sl_us, on, qds, ops)]
    # 1/(SP + SK) and 1/SP in thousand IOPS (1/µs = 1e6/s)
    one_seg = 1e3 / CPU_PER_OP_US
    shared = 1e3 / (CPU_PER_OP_US - sk_us)
    ahead = [q for q, a, b in zip(qds, nd, ng) if b > a * 1.005]
    i8 = qds.index(8)
    title = f"QD 8: Nagle {ng[i8] / nd[i8]:.0%} of TCP_NODELAY; " + (
        f"Nagle ahead from QD {ahead[0]}" if ahead else "TCP_NODELAY never behind"
    )
    top = [0, qds[-1] + 2]
    return {
        "traces": [
            {
                "x": qds,
                "y": nd,
                "name": "TCP_NODELAY",
                "mode": "lines+markers",
                "line": {"color": "#1f77b4"},
                "marker": {"symbol": "square"},
            },
            {
                "x": qds,
                "y": ng,
                "name": "Nagle",
                "mode": "lines+markers",
                "line": {"color": "#ff7f0e"},
            },
            {
                "x": top,
                "y": [one_seg, one_seg],
                "name": "1/(SP+SK): one segment per operation",
                "mode": "lines",
                "line": {"color": "black", "dash": "dot", "width": 1},
            },
            {
                "x": top,
                "y": [shared, shared],
                "name": "1/SP: segment cost fully shared",
                "mode": "lines",
                "line": {"color": "grey", "dash": "dash", "width": 1},
            },
        ],
        "title": title,
    }


_OPS = 3000

#: The chapter's main figure.
NAGLE_QD = Live(
    "ch4-nagle-qd",
    nagle_qd,
    controls=[
        Range(
            "sk_us",
            "per-segment CPU SK (µs)",
            0,
            12,
            grid=[0.0, 2.0, 4.0, 6.0, 8.0],
            value=4.0,
        ),
        Range(
            "sl_us",
            "server wake-up SL (µs)",
            0,
            200,
            grid=[0.0, SL_US, 50.0, 100.0],
            value=SL_US,
        ),
        Select("autocork", "autocorking", ["off", "on"], "off"),
    ],
    fixed={"ops": _OPS},
    layout=iops_qd_layout(QDS[-1] + 2),
    digits=4,
    caption=(
        f"Each pair of curves is a packet simulation (models.sim) of "
        f"{_OPS} operations at each of {len(QDS)} queue depths "
        f"{QDS[0]}-{QDS[-1]}, with Nagle and with TCP_NODELAY on "
        "the server's socket (512-byte reads, MSG_MORE on the header, "
        "the initiator's TCP_NODELAY; "
        f"SP + SK = {CPU_PER_OP_US} µs). 40 points "
        "(SK x SL x autocorking) were computed when the book was "
        "built."
    ),
)

"""Chapter 4 figure: IOPS against queue depth with Nagle and with TCP_NODELAY, live in the static book.

Every curve is a run of the packet simulator (:func:`models.sim.simulate`) on the source's busy-count
set-up (:func:`models.presets.busy_count`: 512-byte reads, MSG_MORE on the
header, Nagle or TCP_NODELAY on the server's socket, the initiator's
TCP_NODELAY unchanged), made when the page is built.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.presets import busy_count
from models.sim import simulate

from .live import LiveFigure, iops_qd_layout

__all__ = ["QDS", "CPU_PER_OP_US", "nagle_iops", "nagle_live_figure"]

#: Queue depths of every curve.
QDS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48, 64)
#: Server CPU time per operation when each response is its own segment, µs (Butterfield 2017's 15.9 µs).
CPU_PER_OP_US = 15.9


def nagle_iops(mode: str, sk_us: float, sl_us: float, autocork: bool, qds: Sequence[int] = QDS,
               ops: int = 400) -> list[float]:
    """Simulated IOPS at each queue depth for ``mode`` ``"nagle"`` or ``"nodelay"``.

    ``sk_us`` of the 15.9 µs per operation is moved into a per-segment transmit cost (``tx_cpu_s``, SK),
    the rest stays per operation (``proc_s``, SP); ``sl_us`` is the server thread's wake-up latency.
    """
    if not 0 <= sk_us <= CPU_PER_OP_US:
        raise ValueError(f"sk_us must be in [0, {CPU_PER_OP_US}] µs, got {sk_us!r}")
    server = dict(proc_s=(CPU_PER_OP_US - sk_us) * 1e-6, tx_cpu_s=sk_us * 1e-6,  # microseconds -> seconds
                  wake_s=sl_us * 1e-6)
    return [simulate(busy_count(mode, int(q), ops=ops).replace(server=server, kernel={"autocork": autocork})).iops
            for q in qds]


def _frame(sk_us: float, sl_us: float, autocork: str, ops: int) -> dict:
    qds = list(QDS)
    nd = [x / 1e3 for x in nagle_iops("nodelay", sk_us, sl_us, autocork == "on", qds, ops)]  # -> thousands
    ng = [x / 1e3 for x in nagle_iops("nagle", sk_us, sl_us, autocork == "on", qds, ops)]
    one_seg = 1e3 / CPU_PER_OP_US                        # 1/(SP + SK) in thousand IOPS (1/µs = 1e6/s)
    shared = 1e3 / (CPU_PER_OP_US - sk_us)               # 1/SP: segment cost shared by many responses
    ahead = [q for q, a, b in zip(qds, nd, ng) if b > a * 1.005]
    i8 = qds.index(8)
    title = (f"QD 8: Nagle {ng[i8] / nd[i8]:.0%} of TCP_NODELAY; "
             + (f"Nagle ahead from QD {ahead[0]}" if ahead else "TCP_NODELAY never behind"))
    top = [0, qds[-1] + 2]
    return {"traces": [
        {"x": qds, "y": nd, "name": "TCP_NODELAY", "mode": "lines+markers", "line": {"color": "#1f77b4"},
         "marker": {"symbol": "square"}},
        {"x": qds, "y": ng, "name": "Nagle", "mode": "lines+markers", "line": {"color": "#ff7f0e"}},
        {"x": top, "y": [one_seg, one_seg], "name": "1/(SP+SK): one segment per operation", "mode": "lines",
         "line": {"color": "black", "dash": "dot", "width": 1}},
        {"x": top, "y": [shared, shared], "name": "1/SP: segment cost fully shared", "mode": "lines",
         "line": {"color": "grey", "dash": "dash", "width": 1}},
    ], "title": title}


def nagle_live_figure(ops: int = 400) -> LiveFigure:
    """IOPS against QD, Nagle and TCP_NODELAY, over per-segment CPU cost, server wake-up latency, autocorking."""
    axes = {"per-segment CPU SK (µs)": [0.0, 2.0, 4.0, 6.0, 8.0],
            "server wake-up SL (µs)": [0.0, 16.7, 50.0, 100.0],
            "autocorking": ["off", "on"]}
    n = 5 * 4 * 2
    return LiveFigure(
        "ch4-nagle-qd", axes, lambda sk, sl, ac: _frame(sk, sl, ac, ops),
        layout=iops_qd_layout(QDS[-1] + 2, legend_x=0.45),
        arg_names=dict(zip(axes, ["sk", "sl", "ac"])),
        defaults={"per-segment CPU SK (µs)": 4.0, "server wake-up SL (µs)": 16.7, "autocorking": "off"},
        digits=4,
        caption=(f"Precomputed when the book was built: {n} grid points (SK x SL x autocorking), each a "
                 f"packet simulation of {ops} operations at each of {len(QDS)} queue depths {QDS[0]}-{QDS[-1]}, "
                 "with Nagle and with TCP_NODELAY on the server's socket "
                 "(512-byte reads, MSG_MORE on the header, the initiator's "
                 f"TCP_NODELAY; SP + SK = {CPU_PER_OP_US} µs). "
                 "Move a slider to switch curves; "
                 "no Python runs in your browser."))

"""Chapter 3 figure: IOPS against queue depth for the four-stage ring, with
the operational bound and the thresholds of inequalities [1] and [2], live
in the book (standard library only: it runs in the browser)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from figures.live import Live, Range, iops_bound_trace, iops_qd_layout
from models.analytic import numbers as A
from models.ring import Ring
from models.sim import BUTTERFIELD_CLIENT, BUTTERFIELD_SERVER

__all__ = ["SP_US", "SL_US", "CL_US", "read_stage_times", "iops_curve", "iops_qd", "IOPS_QD"]

GBIT = 1e9  # bits per second
#: Butterfield's (2017) server time SP and wake-up latencies SL and CL in
#: µs, rounded to 0.1 µs: the figure's defaults.
SP_US = round(BUTTERFIELD_SERVER.proc_s * 1e6, 1)  # s -> us
SL_US = round(BUTTERFIELD_SERVER.wake_s * 1e6, 1)  # s -> us
CL_US = round(BUTTERFIELD_CLIENT.wake_s * 1e6, 1)  # s -> us


def read_stage_times(
    iosize: int, sp_us: float, cp_us: float, bandwidth_bps: float = GBIT, mtu: int = 1500
) -> dict[str, float]:
    """Stage times in seconds for an iSCSI read: wire times from the sizes,
    thread times given in µs."""
    return {
        "W1": A.wire_time(A.ISCSI_HEADER_BYTES, bandwidth_bps, mtu),
        "SP": sp_us * 1e-6,  # microseconds -> seconds
        "W2": A.wire_time(A.ISCSI_HEADER_BYTES + iosize, bandwidth_bps, mtu),
        "CP": cp_us * 1e-6,
    }


def iops_curve(
    times: Mapping[str, float], latencies: Mapping[str, float], qds: Sequence[int], ops: int = 800
) -> list[float]:
    """Simulated IOPS of the four-stage ring at each queue depth (see
    :class:`models.ring.Ring`)."""
    ring = Ring.from_times(times, latencies)
    # Measure whole rounds (a multiple of QD completions). This lowers the
    # window-edge error on average (about 0.5 % to 0.3 % at 150 operations)
    # but does not remove it: the steady-state pattern of a ring with start
    # latencies need not repeat every QD completions. Little's window
    # allowance still bounds it.
    return [ring.run(int(q), ops=-(-ops // int(q)) * int(q)).iops for q in qds]


def iops_qd(
    iosize: int,
    sp_us: float,
    cp_us: float,
    sl_us: float,
    cl_us: float,
    max_qd: int = 24,
    ops: int = 150,
) -> dict:
    """IOPS (thousands) against QD 1..``max_qd``: the ring simulated with
    start latencies, the bound ``min(QD/RTTmin, 1/TPTmin)``, the knee, and
    the threshold of [1] (response link the bottleneck) or [2] (server
    thread the bottleneck).

    ``iosize`` in bytes (1 Gb/s, MTU 1500); ``sp_us``, ``cp_us`` the server
    and client processing times, ``sl_us``, ``cl_us`` their wake-up
    latencies, all in µs; ``ops`` completions per queue depth.
    """
    times = read_stage_times(iosize, sp_us, cp_us)
    lat = {"SP": sl_us * 1e-6, "CP": cl_us * 1e-6}  # µs -> seconds
    qds = list(range(1, max_qd + 1))
    k = 1e-3  # IOPS -> thousand IOPS
    sim = [x * k for x in iops_curve(times, lat, qds, ops=ops)]
    bound = [x * k for x in A.iops_bound(qds, times)]
    bottleneck = max(times, key=times.get)
    top = 1.15 / A.tpt_min(times) * k
    knee = A.knee_qd(times)
    traces = [
        iops_bound_trace(qds, bound, dash="dash"),
        {
            "x": qds,
            "y": sim,
            "name": "ring simulation",
            "mode": "lines+markers",
            "line": {"color": "#1f77b4"},
        },
    ]
    which = A.bottleneck_inequality(times)
    if which is not None:
        q_need = A.qd_min_bottleneck(times, sl=lat["SP"], cl=lat["CP"])
        label = which + (" network bound" if which == "[1]" else " CPU bound")
        traces.append(
            {
                "x": [q_need, q_need],
                "y": [0, top],
                "name": f"{label} from QD ≥ {q_need:.1f}",
                "mode": "lines",
                "line": {"color": "#d62728", "width": 1},
            }
        )
    traces.append(
        {
            "x": [knee, knee],
            "y": [0, top],
            "name": f"knee RTTmin/TPTmin = {knee:.1f}",
            "mode": "lines",
            "line": {"color": "grey", "width": 1, "dash": "dot"},
        }
    )
    where = "" if which is not None else " (the client: neither [1] nor [2] applies)"
    return {
        "traces": traces,
        "title": (
            f"bottleneck {bottleneck} = "
            f"{times[bottleneck] * 1e6:.1f} µs{where}; peak "
            f"{1 / A.tpt_min(times):,.0f} IOPS"
        ),
    }


#: The chapter's main figure.
IOPS_QD = Live(
    "ch3-iops-qd",
    iops_qd,
    controls=[
        Range(
            "iosize",
            "IOSIZE (bytes)",
            1,
            65536,
            grid=[512, 2048, 4096, 16384],
            value=512,
            integer=True,
            log=True,
        ),
        Range("sp_us", "SP (µs)", 1, 60, grid=[5.0, 10.0, SP_US, 25.0, 40.0], value=SP_US),
        Range("cp_us", "CP (µs)", 1, 60, grid=[8.0, 30.0], value=8.0),
        Range("sl_us", "SL (µs)", 0, 200, grid=[0.0, SL_US, 100.0], value=SL_US),
        Range("cl_us", "CL (µs)", 0, 200, grid=[0.0, CL_US, 100.0], value=CL_US),
    ],
    fixed={"max_qd": 24, "ops": 150},
    layout=iops_qd_layout(25),
    digits=4,
    caption=(
        "Each curve is a ring simulation (models.ring) of 150 "
        "operations per queue depth 1-24 (1 Gb/s, MTU 1500). 360 "
        "points (IOSIZE x SP x CP x SL x CL) were computed when the "
        "book was built."
    ),
)

"""Which limit binds a scenario, in words and numbers (``python -m models.sim --explain``).

:func:`explain` runs a scenario and names what sets its rate: a timer (the delayed ACK meeting
Nagle's algorithm, or the probe timer releasing corked data), the link, the server's or the
client's CPU, or too few operations in flight.  For each it says what would move the limit, and for
a timer it runs the fixes and reports their rates.  The inequalities are those of chapter 3
(:func:`models.analytic.numbers.qd_min_bottleneck`); the timers come from the scenario's kernel
profile.  Standard library only, so the browser can run it too.

>>> from models.sim import Scenario
>>> e = explain(Scenario(run={"ops": 200}))
>>> e["binds"], round(e["iops"])
('delayed-ack', 25)
>>> deep = Scenario(server={"nodelay": True}, workload={"qd": 64})
>>> e = explain(deep.replace(run={"ops": 3000}))
>>> e["binds"]
'server-cpu'
"""

from __future__ import annotations

from typing import Any

from models import framing
from models.analytic import numbers as A

from .engine import simulate
from .kernels import get_profile
from .result import Result
from .scenario import Scenario

__all__ = [
    "BUSY_SHARE",
    "SOCKET_MODES",
    "LIMITS",
    "fix_options",
    "reader_scenario",
    "explain",
    "format_explanation",
]

#: Socket modes a reader can pick for each side, as :class:`~models.sim.scenario.Host` options.
SOCKET_MODES: dict[str, dict[str, bool]] = {
    "nagle": {},
    "nodelay": {"nodelay": True},
    "msg-more": {"msg_more": True},
    "cork": {"cork": True},
}
#: The ranges :func:`reader_scenario` accepts, in its own units (name -> (least, most)).
LIMITS: dict[str, tuple[float, float]] = {
    "link_bps": (1e6, 100e9),  # bits per second
    "mtu": (576, 65536),  # bytes
    "latency_s": (0.0, 0.1),  # one way, seconds
    "io_bytes": (512, 1 << 20),  # bytes
    "server_s": (0.0, 0.01),  # seconds per operation
    "client_s": (0.0, 0.01),  # seconds per operation
    "qd": (1, 256),  # operations
}

#: A resource busy at least this share of the time (CPU or link) is the one that binds.
BUSY_SHARE = 0.95
#: A timer binds when at least this share of operations waited for it, and each operation in
#: flight takes at least this share of the timer's period (quick-ACK start-up runs fast).
TIMER_SHARE = 0.5


def _rate(sc: Scenario) -> float:
    return float(simulate(sc).iops)


def fix_options(sc: Scenario, side: str) -> dict[str, dict[str, bool]]:
    """The usual fixes for data held on ``side``: option (as ``python -m models.sim`` spells it)
    -> the changes to that side's :class:`~models.sim.scenario.Host`."""
    host = sc.host(side)
    out = {f"--{side}-nodelay true": {"nodelay": True}}
    if not host.msg_more:
        out[f"--{side}-msg-more true"] = {"msg_more": True}
    if host.msg_more_last or host.cork:
        out[f"--{side}-msg-more-last false --{side}-cork false"] = {
            "msg_more_last": False,
            "cork": False,
        }
    return out


def _fixes(sc: Scenario, side: str) -> dict[str, float]:
    """Rates (operations per second) of the usual fixes for data held on ``side``."""
    return {k: _rate(sc.replace(**{side: v})) for k, v in fix_options(sc, side).items()}


def _within(name: str, value: float) -> float:
    lo, hi = LIMITS[name]
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number from {lo:g} to {hi:g}, got {value!r}") from None
    if not lo <= v <= hi:  # also refuses NaN
        raise ValueError(f"{name} must be from {lo:g} to {hi:g}, got {value!r}")
    return v


def reader_scenario(
    *,
    link_bps: float = 1e9,
    mtu: int = 1500,
    latency_s: float = 0.0,
    io_bytes: int = 4096,
    op: str = "read",
    server_s: float | None = None,
    client_s: float | None = None,
    qd: int = 1,
    server_mode: str = "nagle",
    client_mode: str = "nodelay",
    ops: int | None = None,
) -> Scenario:
    """A scenario from the numbers an engineer has: link rate (bits per second), MTU (bytes),
    one-way latency (seconds), I/O size (bytes), ``"read"`` or ``"write"``, each host's time per
    operation (seconds; default Butterfield's), queue depth and each side's socket mode (a key of
    :data:`SOCKET_MODES`).  A read is a 48-byte command answered by a 48-byte header and the data
    as two ``send()`` calls; a write sends the command and the data (immediate data) and gets a
    48-byte status.  Each value outside :data:`LIMITS` is refused, naming it and the range.
    """
    for key, mode in (("server_mode", server_mode), ("client_mode", client_mode)):
        if mode not in SOCKET_MODES:
            raise ValueError(f"{key} must be one of {sorted(SOCKET_MODES)}, got {mode!r}")
    if op not in ("read", "write"):
        raise ValueError(f"op must be 'read' or 'write', got {op!r}")
    size = int(_within("io_bytes", io_bytes))
    depth = int(_within("qd", qd))
    if size != io_bytes or depth != qd:
        raise ValueError(f"io_bytes and qd must be whole numbers, got {io_bytes!r}, {qd!r}")
    header = framing.ISCSI_HEADER_BYTES
    writes = {"read": ((header,), (header, size)), "write": ((header, size), (header,))}[op]
    base = Scenario()
    server = {"proc_s": base.server.proc_s if server_s is None else _within("server_s", server_s)}
    client = {"proc_s": base.client.proc_s if client_s is None else _within("client_s", client_s)}
    if ops is None:
        # Enough operations to reach the steady state (several rounds of the queue), but no more
        # than about 40,000 data segments in all, so a run stays well under a second.
        per_op = framing.frames(size, int(_within("mtu", mtu)))
        ops = max(2 * depth, min(4 * depth + 100, 40_000 // per_op))
    return base.replace(
        workload={"qd": depth, "request_writes": writes[0], "response_writes": writes[1]},
        link={
            "bandwidth_bps": _within("link_bps", link_bps),
            "mtu": int(_within("mtu", mtu)),
            "latency_s": _within("latency_s", latency_s),
        },
        server={**server, **SOCKET_MODES[server_mode]},
        client={**client, **SOCKET_MODES[client_mode]},
        run={"ops": ops},
    )


def explain(
    scenario: Scenario, result: Result | None = None, *, fixes: bool = True
) -> dict[str, Any]:
    """Run ``scenario`` (unless its ``result`` is given) and say which limit binds.

    Returns a dict: ``iops``, ``mb_per_s`` (application bytes per second in the busier direction,
    10**6 bytes), ``qd``, ``rtt_mean_s``, ``period_s`` (``QD / IOPS``), ``binds`` (``"delayed-ack"``,
    ``"probe"``, ``"link"``, ``"server-cpu"``, ``"client-cpu"`` or ``"queue-depth"``),
    ``inequality`` and ``qd_needed`` (chapter 3's threshold for the slowest stage, or ``None``),
    ``utilisation`` (link each way, CPU each host), ``fixes`` (option -> operations per second,
    for a timer; ``fixes=False`` leaves it empty and runs nothing more), ``held`` (the side
    whose outgoing data waited longest per segment) and ``why``/``move`` in words.
    """
    r = simulate(scenario) if result is None else result
    sc = r.scenario
    qd = sc.workload.qd
    ops = max(1, r.ops)
    d = r.to_dict()
    util = {
        "link C>S": d["directions"]["C>S"]["link_utilization"],
        "link S>C": d["directions"]["S>C"]["link_utilization"],
        "server CPU": d["hosts"]["server"]["cpu_utilization"],
        "client CPU": d["hosts"]["client"]["cpu_utilization"],
    }
    delayed = sum(v["delayed_acks"] for v in d["directions"].values()) / ops
    probes = sum(v["probes"] for v in d["directions"].values()) / ops
    held = max(
        ("server", "client"),
        key=lambda s: d["directions"]["S>C" if s == "server" else "C>S"]["hold_mean_s"],
    )
    stages = sc.stage_times()
    sym = sc.symbol_values()
    rtt_min = sym["RTTmin"] + sc.path_latency_s() + 2 * sc.link.latency_s  # s
    which = A.bottleneck_inequality(stages)
    qd_needed = (
        A.qd_min_bottleneck(stages, sl=sym["SL"], cl=sym["CL"], rtt_s=rtt_min) if which else None
    )
    response_bytes = max(sum(sc.workload.response_writes), sum(sc.workload.request_writes))
    out: dict[str, Any] = dict(
        iops=r.iops,
        mb_per_s=r.iops * response_bytes / 1e6,  # bytes/s -> MB/s
        qd=qd,
        rtt_mean_s=r.rtt_mean_s,
        rtt_min_s=rtt_min,
        period_s=qd / r.iops if r.iops > 0 else None,
        inequality=which,
        qd_needed=qd_needed,
        utilisation=util,
        delayed_acks_per_op=delayed,
        probes_per_op=probes,
        fixes={},
        held=held,
    )
    profile = get_profile(sc.kernel.profile)
    if probes >= TIMER_SHARE:
        out["binds"] = "probe"
        out["why"] = (
            f"held data waits for the probe timer (at least {1e3 * profile.rto_min_s:.0f} ms) "
            f"on {probes:.2f} of every operation: the {held} leaves MSG_MORE or TCP_CORK set "
            "after its last write"
        )
        out["fixes"] = _fixes(sc, held) if fixes else {}
    elif delayed >= TIMER_SHARE and (out["period_s"] or 0) >= TIMER_SHARE * profile.delack_min_s:
        out["binds"] = "delayed-ack"
        out["why"] = (
            f"Nagle on the {held} holds a partial segment until the peer's delayed ACK "
            f"({1e3 * profile.delack_min_s:.0f} ms or more); {delayed:.2f} delayed ACKs per "
            f"operation, {1e3 * out['period_s']:.1f} ms per operation in flight"
        )
        out["fixes"] = _fixes(sc, held) if fixes else {}
    elif max(util["link C>S"], util["link S>C"]) >= BUSY_SHARE:
        out["binds"] = "link"
        out["why"] = f"the link is {100 * max(util['link C>S'], util['link S>C']):.1f} % busy"
    elif util["server CPU"] >= BUSY_SHARE:
        out["binds"] = "server-cpu"
        out["why"] = f"the server's thread is {100 * util['server CPU']:.1f} % busy"
    elif util["client CPU"] >= BUSY_SHARE:
        out["binds"] = "client-cpu"
        out["why"] = f"the client's thread is {100 * util['client CPU']:.1f} % busy"
    else:
        out["binds"] = "queue-depth"
        need = f"; inequality {which} asks for QD >= {qd_needed:.1f}" if qd_needed else ""
        out["why"] = (
            f"too few operations in flight: {qd} over a round trip of "
            f"{1e6 * r.rtt_mean_s:.1f} us leaves every stage idle part of the time{need}"
        )
    moves = {
        "probe": "clear the cork after each message's last write (see the fixes' rates)",
        "delayed-ack": "TCP_NODELAY or one send call per message on the holding side "
        "(see the fixes' rates), or enough queue depth to keep an ACK coming",
        "link": "a faster link or less data per operation; more queue depth only adds latency",
        "server-cpu": "less server time per operation or more server threads; more queue depth "
        "only adds latency",
        "client-cpu": "less client time per operation or more initiator threads",
        "queue-depth": (
            f"raise the queue depth toward {qd_needed:.0f}"
            if qd_needed
            else "raise the queue depth"
        ),
    }
    out["move"] = moves[out["binds"]]
    out["window"] = "not modelled: the simulator has no receive or congestion window yet"
    return out


def format_explanation(e: dict[str, Any]) -> str:
    """The explanation as a few lines of text."""
    lines = [
        f"{e['iops']:,.1f} operations per second, {e['mb_per_s']:,.3f} MB/s of data at QD "
        f"{e['qd']} (mean round trip {1e6 * e['rtt_mean_s']:,.1f} us; least {1e6 * e['rtt_min_s']:,.1f} us)",
        f"binds: {e['binds']}: {e['why']}",
        f"would move it: {e['move']}",
    ]
    if e["fixes"]:
        lines.append(
            "fixes: " + "; ".join(f"{k} -> {v:,.0f} per second" for k, v in e["fixes"].items())
        )
    if e["qd_needed"] is not None:
        lines.append(
            f"queue depth to keep the slowest stage busy (inequality {e['inequality']}): "
            f"{e['qd_needed']:.1f}"
        )
    u = e["utilisation"]
    lines.append("busy: " + ", ".join(f"{k} {100 * v:.1f} %" for k, v in u.items()))
    lines.append(f"window: {e['window']}")
    return "\n".join(lines)

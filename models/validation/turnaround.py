"""Behind the 16 KiB Nagle server under bbr, what decides bbr's state: the client's turnaround and
the handshake's round trip (comparisons).

The scenario is the ownership traces' ``paced`` one (veth at MTU 1500, the ends a CPU apart, a
NODELAY client, QD 8) with the fourth machine's owned model and the handshake's sample
(:func:`models.validation.machine4.handshake_scenario`).  :func:`turnaround_run` simulates it
with the client's CPU per request raised, for the whole run or its first milliseconds, and with
a warm connection's handshake or a process's first connection's; :func:`turnaround_table` sets
the runs beside the kernel's rate and pacing rate (:mod:`models.validation.pacing_rate`) and the
traced run's pacing timers and time in ``send()`` (:mod:`models.validation.ownership`).  Nothing
is fitted to the kernel's runs here; the tolerance on a pacing rate is
:data:`models.validation.pacing_rate.FACTOR`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from models.validation.pacing_rate import kernel

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "TURNAROUND_US",
    "turnaround_scenario",
    "restore_client_after",
    "TurnaroundRun",
    "turnaround_run",
    "turnaround_table",
    "turnaround_findings",
]


#: The runs of :func:`turnaround_table`: extra client CPU per request (us), for how long (ms
#: from the start; ``None``: the whole run), and whether the handshake is a warm connection's
#: (the path's idle round trip) instead of a process's first connection's.
TURNAROUND_US = ((0.0, None, True), (2.0, None, True), (2.0, 5.0, True), (0.0, None, False))


def turnaround_scenario(
    row: dict[str, Any], extra_us: float, hz: int, ops: int, warm: bool = False
) -> Any:
    """The handshake model's scenario of ``row`` with ``extra_us`` more client CPU per message;
    ``warm``: each end's first sample is the path's idle round trip (a warm connection's), not
    the first connection's that :func:`models.validation.machine4.handshake_scenario` gives."""
    from models.validation import machine4
    from models.validation.fidelity import ProfileHost

    sc = machine4.handshake_scenario("iscsi_loop", row, ProfileHost(machine4.owned_profile()), hz)
    if warm:
        idle = {"handshake_rtt_s": 0.0}  # (0: the path's idle round trip)
        sc = sc.replace(client=idle, server=idle)
    proc = sc.client.proc_s + extra_us * 1e-6  # us -> s
    return sc.replace(client={"proc_s": proc}, run={"ops": ops, "fast_forward": False})


def restore_client_after(sim: Any, extra_us: float, first_ms: float) -> None:
    """Take ``extra_us`` off the client's CPU per request of ``sim`` (a
    :class:`~models.sim.engine.Simulation` not yet run) ``first_ms`` into its run.  The server's
    thread carries the client's processing time of each response it writes
    (``ServerThread.reply_proc``, fs), so that is what changes."""
    from models.sim.events import FS

    less = tuple(p - round(extra_us * FS / 1e6) for p in sim.server.reply_proc)  # us -> fs
    at = round(first_ms * FS / 1e3)  # ms -> fs
    sim.loop.schedule(at, lambda now, arg: setattr(sim.server, "reply_proc", arg), less)


@dataclass(frozen=True)
class TurnaroundRun:
    """One run of :func:`turnaround_run`: its ``result`` (with the packet trace seen at the
    server), the pacing timers its server armed, and its server's bbr after every ACK
    (``BbrModel.trace`` entries; empty under another control)."""

    result: Any
    timer_arms: int
    bbr_trace: tuple


@lru_cache(maxsize=8)
def turnaround_run(
    cc: str, extra_us: float, first_ms: float | None, ops: int = 4000, warm: bool = False
) -> TurnaroundRun:
    """The handshake model behind the 16 KiB Nagle server of the traced ``paced`` scenario under
    ``cc``, the client's CPU per request raised by ``extra_us`` for the whole run (``first_ms``
    ``None``) or for its first ``first_ms`` milliseconds, with a warm connection's handshake if
    ``warm`` (:func:`turnaround_scenario`), ``ops`` operations, every event run; cached, so
    :func:`turnaround_table` and :mod:`models.validation.tail_order` share a run."""
    from models.kernel import load_kernel_run
    from models.sim.engine import Simulation
    from models.validation import machine4, ownership

    hz = load_kernel_run(prefix=machine4.PREFIX).hz
    row = ownership.sample_row("nagle", cc, ownership.PACED)
    sc = turnaround_scenario(row, extra_us, hz, ops, warm)
    sim = Simulation(sc.replace(run={"trace": True, "trace_at": "server"}))
    if first_ms is not None:
        restore_client_after(sim, extra_us, first_ms)
    ctl = sim.server_ep.sender.cc
    model = getattr(ctl, "model", None)
    if model is not None:
        model.trace = []
    r = sim.run()
    return TurnaroundRun(r, getattr(ctl, "timer_arms", 0), tuple(model.trace) if model else ())


def turnaround_table(ops: int = 4000) -> pd.DataFrame:
    """Behind the 16 KiB Nagle server under bbr (the traced ``paced`` scenario), the owned model
    with the handshake's sample and the client's CPU per request raised as each of
    :data:`TURNAROUND_US` says (:func:`turnaround_run`): its rate (``iops``), the share of its
    ACKs in start-up and its median pacing rate there (Gb/s), over the run's ACKs past its first
    fifth, the pacing timers it armed and the server's time inside ``send()`` per operation
    (us, all its calls), beside the kernel's rate and median from :func:`table`'s run
    (``kernel_iops``, ``kernel_pacing_gbps``) and the traced run's timers and time in the calls
    of a response's data (:func:`models.validation.ownership.send_per_op_us`).  Which of two
    ACKs reaches the server first, the client's next request (carrying the previous tail's ACK)
    or its ACK of the next response's first segments, decides whether the tail the first
    releases leaves inside an application-limited period; the client's turnaround sets that
    order."""
    import pandas as pd

    from models.sim.rules.bbr_model import STARTUP
    from models.validation import ownership

    k = kernel()
    k = k[(k["set"] == "paced") & (k["server_sock_mode"] == "nagle")]
    kt = ownership.kernel(ownership.PACED)
    pick = kt[(kt["server_sock_mode"] == "nagle") & (kt["cc"] == "bbr")]
    traced = pick.iloc[0]
    traced_send_us = float(ownership.send_per_op_us(pick).iloc[0])
    rows = []
    for extra, first_ms, warm in TURNAROUND_US:
        run = turnaround_run("bbr", extra, first_ms, ops, warm)
        r = run.result
        past = run.bbr_trace[len(run.bbr_trace) // 5 :]
        gbps = sorted(rate * 8 / 1e9 for _, rate, *_ in past)  # bytes/s -> Gb/s
        done = max(r.completed_total, 1)  # operations, the warm-up's too
        rows.append(
            {
                "extra_client_us": extra,
                "for_ms": math.nan if first_ms is None else first_ms,
                "handshake": "warm" if warm else "first",
                "iops": r.iops,
                "startup_share": sum(mode == STARTUP for _, _, mode, *_ in past) / len(past),
                "pacing_gbps": gbps[len(gbps) // 2],
                "arms_per_op": run.timer_arms / done,
                "send_per_op_us": 1e6 * r.hosts["server"].owned_s / done,  # s per op -> us
                "kernel_iops": float(k["iops"].mean()),
                "kernel_pacing_gbps": math.exp(k["pacing_gbps"].map(math.log).mean()),
                "kernel_arms_per_op": float(traced["pace_kicks_per_op"]),
                "kernel_send_per_op_us": traced_send_us,
            }
        )
    return pd.DataFrame(rows)


def turnaround_findings(t: pd.DataFrame) -> dict[str, bool]:
    """What the text says of :func:`turnaround_table` ``t``: with a warm connection's handshake,
    bbr stays in start-up behind the Nagle server; with two microseconds more client CPU per
    request it leaves and runs at the kernel's rate within a quarter, arming the pacing timer for
    nearly every response as the kernel does, but paces at under a quarter of the kernel's median
    rate (its estimate fell and stayed low; before the rate samples read whole microseconds,
    2026-12-04, it paced within :data:`models.validation.pacing_rate.FACTOR` of the kernel's and
    ran more than a quarter faster); with those two microseconds for the first milliseconds
    only, it leaves and stays out with the profile's own client: two steady states for one set of
    parameters, chosen by the start.  With the handshake a process's first connection measures,
    it leaves start-up, as the kernel does, and out of it runs more than a quarter faster than the
    kernel, arming the pacing timer for fewer responses per
    operation and spending less time in ``send()`` per operation than the kernel's data calls
    alone.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"extra_client_us": [0.0, 2.0, 2.0, 0.0],
    ...     "for_ms": [None, None, 5.0, None], "handshake": ["warm"] * 3 + ["first"],
    ...     "iops": [33449.0, 30959.0, 46250.0, 46451.0], "startup_share": [1.0, 0.0, 0.0, 0.0],
    ...     "pacing_gbps": [82.8, 5.4, 17.2, 14.3], "kernel_iops": [32060.0] * 4,
    ...     "kernel_pacing_gbps": [26.2] * 4, "arms_per_op": [1.0, 0.98, 0.51, 0.5],
    ...     "kernel_arms_per_op": [0.89] * 4, "send_per_op_us": [28.8, 20.0, 21.7, 21.8],
    ...     "kernel_send_per_op_us": [25.3] * 4})
    >>> all(turnaround_findings(t).values())
    True
    >>> t.loc[3, "startup_share"] = 1.0  # the first connection's handshake changing nothing
    >>> turnaround_findings(t)["first connection's handshake: out of start-up, as the kernel"]
    False
    >>> rate = "then it runs at the kernel's rate, the timer armed nearly per operation"
    >>> fast = t.assign(iops=[33449.0, 45000.0, 46250.0, 46451.0])  # out of start-up, too fast
    >>> few = t.assign(arms_per_op=[1.0, 0.5, 0.51, 0.5])  # at the rate, half the timers
    >>> turnaround_findings(fast)[rate], turnaround_findings(few)[rate]
    (False, False)
    >>> near = t.assign(pacing_gbps=[82.8, 13.1, 17.2, 14.3])  # half the kernel's pacing rate
    >>> turnaround_findings(near)["but it paces at under a quarter of the kernel's rate"]
    False
    """
    from models.validation.fidelity import IOPS_TOL

    base, more, start, first = (t.iloc[i] for i in range(4))
    return {
        "with a warm connection's handshake it stays in start-up": bool(
            base["startup_share"] == 1.0 and base["handshake"] == "warm"
        ),
        "two microseconds more client CPU and it leaves": bool(more["startup_share"] == 0.0),
        "then it runs at the kernel's rate, the timer armed nearly per operation": bool(
            abs(more["iops"] / more["kernel_iops"] - 1) <= IOPS_TOL
            and more["arms_per_op"] >= 0.9 * more["kernel_arms_per_op"]
        ),
        "but it paces at under a quarter of the kernel's rate": bool(
            more["pacing_gbps"] < 0.25 * more["kernel_pacing_gbps"]
        ),
        f"two microseconds for the first {start['for_ms']:g} ms only, and it stays out": bool(
            start["startup_share"] == 0.0
        ),
        "first connection's handshake: out of start-up, as the kernel": bool(
            first["startup_share"] == 0.0 and first["handshake"] == "first"
        ),
        "there it runs over a quarter faster than the kernel": bool(
            first["iops"] > 1.25 * first["kernel_iops"]
        ),
        "out of start-up it arms fewer timers and spends less time in send() than the kernel": bool(
            first["arms_per_op"] < first["kernel_arms_per_op"]
            and first["send_per_op_us"] < first["kernel_send_per_op_us"]
        ),
    }

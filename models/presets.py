"""Scenarios the chapters, their figures and the tests share.

Each preset builds a ``models.sim.Scenario`` for one set-up of a
source, in one place; callers change parts with ``.replace(...)``.

>>> busy_count("nagle", 3).workload.qd, busy_count("nagle", 3).client.nodelay
(3, True)
>>> one_segment().server.msg_more, one_segment().client.nodelay
(True, True)
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from models.sim import PROFILES, Scenario, simulate

__all__ = [
    "BUSY_MODES",
    "butterfield",
    "one_segment",
    "busy_count",
    "CPU_BOUND_SHARE",
    "first_cpu_bound",
    "cpu_bound_onset",
    "mode_sweep",
    "first_overtake",
    "flory",
    "flory_setup_s",
    "flory_loopback",
    "iscsi_command",
    "IDLE_HOST",
    "iscsi_messages",
    "iscsi_idle_path",
    "iscsi_idle_latency_s",
]

#: The two socket modes of Butterfield (2017)'s busy-count table.
BUSY_MODES = ("nodelay", "nagle")


def butterfield(**parts) -> Scenario:
    """Butterfield (2017)'s 512-byte read with his stage times: the
    scenario defaults (Nagle on, the response written as header then
    data: the 40 ms stall)."""
    return Scenario(**parts)


def one_segment(**parts) -> Scenario:
    """The configuration Butterfield measured his round trip in: the
    response leaves as one 560-byte segment (``MSG_MORE`` on the header)
    and both sockets set ``TCP_NODELAY``."""
    return Scenario(client={"nodelay": True}, server={"nodelay": True, "msg_more": True}).replace(
        **parts
    )


def busy_count(
    mode: str, qd: int, ops: int = 3000, flush_on_idle: bool = False, wake_spread_s: float = 0.0
) -> Scenario:
    """Butterfield (2017)'s busy-count runs: 512-byte reads from the SCST
    usermode server, which writes each response's header with
    ``MSG_MORE``.  ``mode`` (``"nodelay"`` or ``"nagle"``) sets the
    *server's* socket only: the source changed nothing else.  The
    initiator's socket is the same in both columns: open-iscsi sets
    ``TCP_NODELAY`` on the socket it connects and hands to the kernel
    (``iscsi_io_tcp_connect`` in ``usr/io.c``).

    ``flush_on_idle``: the server pushes held data out before it sleeps.
    The SCST code has both ways of running "always Nagle"
    (``iscsi-scst/kernel/nthread.c``: ``nagle_threshold = 0``, no flush;
    ``nagle_threshold = 1`` with ``nagle_margin = 0``, flush on idle);
    the default is the first, the only one in which Nagle on the server
    alone splits the queue (chapter 4).

    ``wake_spread_s``: each wake-up of either thread waits a random extra
    time, uniform in ``[0, spread)``; the mean extra, ``spread / 2`` per
    wake-up and two wake-ups per round trip, is taken out of the four
    path start latencies (``spread / 4`` each), so a lone operation's
    mean round trip stays the source's 275.7 us."""
    if mode not in BUSY_MODES:
        raise ValueError(f"mode must be one of {BUSY_MODES}, got {mode!r}")
    sc = Scenario(
        workload={"qd": qd},
        client={"nodelay": True},
        server={"nodelay": mode == "nodelay", "msg_more": True, "flush_on_idle": flush_on_idle},
        run={"ops": ops},
    )
    if wake_spread_s:
        cut = wake_spread_s / 4
        sc = sc.replace(
            **{
                side: {
                    "wake_spread_s": wake_spread_s,
                    "tx_latency_s": sc.host(side).tx_latency_s - cut,
                    "rx_latency_s": sc.host(side).rx_latency_s - cut,
                }
                for side in ("client", "server")
            }
        )
    return sc


#: The share of the server thread's limit ``1 / SP`` at which a run counts
#: as CPU bound: a finite run's first and last operations leave it up to
#: half a percent short of the steady state.
CPU_BOUND_SHARE = 0.995


def first_cpu_bound(
    mode: str, qds: Iterable[int] = range(8, 65, 4), ops: int = 2000
) -> tuple[int, float] | None:
    """The first queue depth of ``qds`` (in order) at which the
    busy-count scenario :func:`busy_count` with the server socket
    ``mode`` runs at :data:`CPU_BOUND_SHARE` of ``1 / SP`` or more, with
    its IOPS (operations per second); ``None`` if none does."""
    for qd in qds:
        r = simulate(busy_count(mode, qd, ops=ops))
        if r.iops >= CPU_BOUND_SHARE / r.scenario.server.proc_s:
            return qd, r.iops
    return None


def cpu_bound_onset(
    modes: Iterable[str] = BUSY_MODES, qds: Iterable[int] = range(8, 65, 4), ops: int = 2000
):
    """:func:`first_cpu_bound` for each server socket ``mode``, as a
    table (a pandas ``DataFrame``, one row per mode): the first CPU-bound
    queue depth (``NaN`` if none), the IOPS there and the thread's limit
    ``1 / SP``, both in operations per second."""
    import pandas as pd  # only when needed: the core runs without it

    qds = tuple(qds)
    rows = []
    for mode in modes:
        found = first_cpu_bound(mode, qds, ops)
        rows.append(
            {
                "server socket": mode,
                "first CPU-bound QD": found[0] if found else float("nan"),
                "IOPS there (1/s)": found[1] if found else float("nan"),
                "limit 1/SP (1/s)": 1 / busy_count(mode, 1).server.proc_s,
            }
        )
    return pd.DataFrame(rows).set_index("server socket")


def mode_sweep(qds: Iterable[int], **parts):
    """IOPS (operations per second) of :func:`busy_count` for both server
    sockets at each queue depth of ``qds``, with ``parts`` replaced
    (``Scenario.replace``): a ``DataFrame`` indexed by ``QD`` with the
    columns ``"TCP_NODELAY (1/s)"`` and ``"Nagle (1/s)"``."""
    import pandas as pd  # only when needed: the core runs without it

    cols = {"nodelay": "TCP_NODELAY (1/s)", "nagle": "Nagle (1/s)"}
    rows = {
        qd: {cols[m]: simulate(busy_count(m, qd).replace(**parts)).iops for m in BUSY_MODES}
        for qd in qds
    }
    return pd.DataFrame(rows).T.rename_axis("QD")


def first_overtake(
    xs: Iterable, base: Iterable[float], other: Iterable[float], margin: float = 0.0
) -> Any:
    """The first ``x`` at which ``other`` exceeds ``base`` by more than the
    fraction ``margin`` (``other > (1 + margin) * base``), the three
    sequences read in step; ``None`` if it never does.

    >>> first_overtake([1, 2, 3], [10, 10, 10], [9, 10.5, 12], margin=0.1)
    3
    """
    for x, a, b in zip(xs, base, other):
        if b > (1 + margin) * a:
            return x
    return None


@functools.cache
def flory_setup_s() -> float:
    """Seconds Flory's server took to answer the setup request: the gap
    before packet 6 of his 1447-byte trace (``data/flory2001_trace``)."""
    from models.data import load  # pandas, only when needed

    trace = load("flory2001_trace")
    row = trace[(trace["trace"] == "payload_1447") & (trace["number"] == 6)]
    return float(row["inter_packet_s"].iloc[0])


def flory(payload: int, **parts) -> Scenario:
    """Flory (2001)'s program on Linux 2.4 over Fast Ethernet: one 8-byte
    setup exchange, then 8-byte requests answered by 8 bytes and
    ``payload`` bytes in two ``send()`` calls; traced at the server."""
    return Scenario(
        workload={
            "request_writes": (8,),
            "response_writes": (8, payload),
            "setup_request_writes": (8,),
            "setup_response_writes": (8,),
            "setup_proc_s": flory_setup_s(),
        },
        link={"bandwidth_bps": 100e6},
        kernel={"profile": "linux-2.4"},
        run={"ops": 2, "warmup_ops": 0, "trace": True},
    ).replace(**parts)


def flory_loopback(payload: int, **parts) -> Scenario:
    """Flory's exchange on the 2.4 loopback (MTU 16436, MSS 16384): no
    host latencies, a fast copy in memory (10 Gb/s)."""
    quiet = {"tx_latency_s": 0.0, "rx_latency_s": 0.0}
    return Scenario(
        workload={"request_writes": (8,), "response_writes": (8, payload)},
        link={"mtu": PROFILES["linux-2.4"].loopback_mtu, "bandwidth_bps": 10e9},
        client=quiet,
        server=quiet,
        kernel={"profile": "linux-2.4"},
        run={"ops": 100},
    ).replace(**parts)


def iscsi_command(op: str, size_bytes: int, session=None, **parts) -> Scenario:
    """One iSCSI command per operation, replayed leg by leg
    (:func:`models.iscsi.exchange`): every PDU its own ``send()`` call,
    Nagle off on both sockets so the exchange's own round trips show."""
    from models import iscsi

    legs = tuple(leg.writes for leg in iscsi.exchange(op, size_bytes, session))
    return Scenario(
        workload={"legs": legs}, client={"nodelay": True}, server={"nodelay": True}
    ).replace(**parts)


#: A host that costs nothing (no processing, wake-up, path latency or transmit CPU, Nagle off).  On
#: such hosts a simulated command takes what its messages take on the link, as
#: :func:`models.iscsi.command_latency_s` assumes.
IDLE_HOST: dict[str, Any] = {
    "proc_s": 0.0,
    "wake_s": 0.0,
    "tx_latency_s": 0.0,
    "rx_latency_s": 0.0,
    "softirq_s": 0.0,
    "tx_cpu_s": 0.0,
    "nodelay": True,
}


def iscsi_messages(op: str, size_bytes: int, session=None) -> tuple:
    """One iSCSI command as the simulator's workload messages (``Workload.messages``): for each
    message of :func:`models.iscsi.messages`, its direction, its ``send()`` sizes in bytes (one
    call per PDU) and the message whose reading releases it.  MaxOutstandingR2T is a sliding
    window: the R2T of burst ``j + R`` is released by the Data-Out of burst ``j``."""
    from models import iscsi

    return tuple((m.direction, m.writes, m.after) for m in iscsi.messages(op, size_bytes, session))


def iscsi_idle_path(
    op: str, size_bytes: int, session, rtt_s: float, link_bps: float, **parts
) -> Scenario:
    """One iSCSI command on an idle path: hosts that cost nothing (:data:`IDLE_HOST`), a link of
    ``link_bps`` bits per second with ``rtt_s / 2`` each way, and one operation, the command's
    real exchange (:func:`iscsi_messages`) whatever the keys: immediate and unsolicited data,
    a window of R2Ts that slides, a last burst shorter than the others, a write with no R2T.
    Measure it with :func:`iscsi_idle_latency_s`.
    """
    return Scenario(
        workload={"messages": iscsi_messages(op, size_bytes, session), "qd": 1},
        client=IDLE_HOST,
        server=IDLE_HOST,
        link={"latency_s": rtt_s / 2, "bandwidth_bps": link_bps},
        run={"ops": 1, "warmup_ops": 0},
    ).replace(**parts)


def iscsi_idle_latency_s(scenario: Scenario) -> float:
    """The simulated latency of the command :func:`iscsi_idle_path` set up, seconds: the last of
    its first ``qd`` operations (all issued at time 0) to complete."""
    qd = scenario.workload.qd
    r = simulate(scenario)
    return max(r.rtts_s[:qd])

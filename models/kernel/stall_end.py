"""Where a Nagle server's delayed-ACK stall ends with a TCP_NODELAY client, from a host profile.

At a stall's end the client issues its whole queue again, a ``send()`` per request, and the first
request wakes the server, asleep since the stall began; waking it costs that ``send()`` more, and
the server's first header comes back alone.  The stall sustains itself while the client has issued
every request before that header returns: ``QD*CE + CD <= CE + W1 + SD + SE + W2``
(:func:`models.analytic.symbolic.stall_sustains_condition`, chapter 4).  This module reads the
inequality's times from a host profile (:func:`emit_costs_s`: the profile's measured wake-up after
the stall's idle, its waker's cost, its per-message work and path) and turns them into the largest
stalling queue depth (:func:`predicted_qd`), or, where the queue's responses fill a segment first,
the depth at which they do.  :func:`stall_end` gives everything at once and
``python -m models.measure stall-end --host FILE`` prints it.  Standard library only.

>>> from models.sim import hostprofile
>>> p = hostprofile.shipped("kernel6_machine3")
>>> r = stall_end(p, payload=512, mtu=65536)
>>> r["qd_stall_max"], r["ended_by"]
(14, 'wake-up')
>>> stall_end(p, payload=4096, mtu=9000)["ended_by"]
'segment'
"""

from __future__ import annotations

import math
from typing import Any

from models import framing
from models.sim.kernels import get_profile

__all__ = [
    "PROFILE",
    "HEADER_BYTES",
    "STALL_IDLE_S",
    "wake_after",
    "waker_after",
    "emit_costs_s",
    "predicted_qd",
    "largest_stalling_qd",
    "stall_end",
    "format_stall_end",
]

#: The host profile of the machine chapter 4 measured the stall's end on (``data/hosts``).
PROFILE = "kernel6_machine3"
#: Bytes of a request and of a response header in the harness's iSCSI-like loop.
HEADER_BYTES = framing.ISCSI_HEADER_BYTES
#: How long a stalled server sleeps (seconds), the delayed-ACK timer's minimum
#: (``TCP_DELACK_MIN``, 40 ms) of the linux-6 kernel profile.
STALL_IDLE_S = get_profile("linux-6").delack_min_s


def wake_after(side: dict[str, Any], idle_s: float) -> float:
    """A side's wake-up latency after ``idle_s`` seconds asleep, seconds, as the simulator takes it
    (:func:`models.sim.wakeups.wake_latency`, in whole femtoseconds; no late draw)."""
    from models.sim.events import fs_to_seconds, seconds_to_fs
    from models.sim.wakeups import wake_latency

    fs = seconds_to_fs
    curve = tuple((fs(i), fs(w)) for i, w in side.get("wake_curve_s") or ())
    return fs_to_seconds(
        wake_latency(
            fs(idle_s),
            fs(side.get("wake_s", 0.0)),
            fs(side.get("wake_fast_s", 0.0)),
            fs(side.get("wake_fast_idle_s", 0.0)),
            curve,
        )
    )


def emit_costs_s(profile: Any) -> dict[str, float]:
    """The inequality's times from a host profile, seconds: ``CE`` (the client's processing of a
    response and the ``send()`` of a 48-byte request that leaves as a segment), ``SE`` (the same
    for the server's header), ``SD`` (the server's wake-up after :data:`STALL_IDLE_S` asleep,
    :func:`wake_after`), ``W1 = W2`` (a path's start latencies) and ``CD`` (what waking the
    server after that idle adds to the client's ``send()``, :func:`waker_after`; 0 for a profile
    without ``waker_curve_s``).

    >>> from models.sim import hostprofile
    >>> p = hostprofile.shipped("kernel6_machine3")
    >>> emit_costs_s(p)["SD"] > 2 * p.host["wake_s"]
    True
    """

    def emit(side: dict[str, float]) -> float:
        return (
            side.get("proc_s", 0.0)
            + side.get("send_cpu_s", 0.0)
            + side.get("gso_cpu_s", 0.0)
            + side.get("tx_cpu_s", 0.0)
            + HEADER_BYTES * side.get("send_byte_cpu_s", 0.0)  # s/byte * bytes -> s
        )

    c, s = profile.side("client"), profile.side("server")
    path = s.get("tx_latency_s", 0.0) + c.get("rx_latency_s", 0.0)
    return {
        "CE": emit(c),
        "SE": emit(s),
        "SD": wake_after(s, STALL_IDLE_S),
        "W1": path,
        "W2": path,
        "CD": waker_after(c, STALL_IDLE_S),
    }


def waker_after(side: dict[str, Any], idle_s: float) -> float:
    """What waking a peer's thread asleep ``idle_s`` seconds adds to a side's ``send()``, seconds,
    as the simulator takes it (:func:`models.sim.wakeups.curve_latency` of ``waker_curve_s``, in
    whole femtoseconds); 0 without a curve.

    >>> side = {"waker_curve_s": [[1e-3, 0.0], [40e-3, 13e-6]]}
    >>> waker_after(side, 40e-3) * 1e6  # s -> us
    13.0
    >>> waker_after({}, 40e-3)
    0.0
    """
    from models.sim.events import fs_to_seconds, seconds_to_fs
    from models.sim.wakeups import curve_latency

    curve = side.get("waker_curve_s")
    if not curve:
        return 0.0
    fs = seconds_to_fs
    return fs_to_seconds(curve_latency(tuple((fs(i), fs(c)) for i, c in curve), fs(idle_s)))


def predicted_qd(profile: Any, qds: list[int], payload: int, mss: int) -> tuple[int, str]:
    """The largest of the queue depths ``qds`` at which a NODELAY client's stall sustains itself
    (0 if none), and what ends it: ``"wake-up"`` (above it the client issues its queue before the
    server's first header returns: :func:`models.analytic.numbers.qd_max_stall` with
    :func:`emit_costs_s`) or ``"segment"`` (above it the queue's responses of ``payload`` bytes
    fill an ``mss``-byte segment, which Nagle sends: :func:`models.kernel.runs.stall_possible`),
    whichever comes first.

    >>> from models.sim import hostprofile
    >>> p = hostprofile.shipped("kernel6_machine3")
    >>> predicted_qd(p, [1, 2, 4, 8, 10, 12, 16], 512, 65483)
    (12, 'wake-up')
    >>> predicted_qd(p, [1, 2, 4, 8], 4096, 8948)
    (2, 'segment')
    """
    top, what = largest_stalling_qd(emit_costs_s(profile), payload, mss)
    return max((q for q in qds if q <= top), default=0), what


def largest_stalling_qd(t: dict[str, float], payload: int, mss: int) -> tuple[int, str]:
    """The largest queue depth at which the stall sustains itself, from the inequality's times
    ``t`` (seconds, :func:`emit_costs_s`) and the segment rule, and which of the two ends it
    (:func:`predicted_qd` on every queue depth).

    >>> t = dict(SD=60e-6, SE=5e-6, CE=5e-6, W1=1e-6, W2=1e-6, CD=0.0)
    >>> largest_stalling_qd(t, 512, 65483), largest_stalling_qd(t, 4096, 8948)
    ((14, 'wake-up'), (2, 'segment'))
    """
    from models.analytic.numbers import qd_max_stall
    from models.kernel.runs import stall_possible

    by_wake = math.floor(qd_max_stall(t["SD"], t["SE"], t["CE"], t["W1"], t["W2"], t["CD"]))
    # the largest queue whose responses stay below one segment (each adds at least a header)
    fits = range(1, mss // HEADER_BYTES + 2)
    by_mss = max((q for q in fits if stall_possible(q, HEADER_BYTES, payload, mss)), default=0)
    return (by_mss, "segment") if by_mss < by_wake else (by_wake, "wake-up")


def stall_end(profile: Any, payload: int, mtu: int) -> dict[str, Any]:
    """For a Nagle server answering ``payload``-byte reads to a TCP_NODELAY client over a path of
    ``mtu`` bytes, with ``profile`` (a host profile, or anything
    :func:`models.sim.hostprofile.load` takes): the inequality's times (microseconds), the largest
    queue depth at which the stall sustains itself (``qd_stall_max``, a whole number; 0 if a
    single response already fills a segment) and what ends it there (``"wake-up"`` or
    ``"segment"``).

    Raises
    ------
    ValueError
        ``payload`` not a whole number of bytes from 0, or ``mtu`` not one
        :func:`models.framing.check_mtu` takes, naming it.
    """
    from models import framing
    from models.checks import whole
    from models.sim import hostprofile

    payload = whole("payload", payload, minimum=0)
    mss = framing.mss(framing.check_mtu(mtu))
    t = emit_costs_s(hostprofile.load(profile))
    qd, what = largest_stalling_qd(t, payload, mss)
    return {
        **{f"{k}_us": v * 1e6 for k, v in t.items()},  # s -> us
        "payload_bytes": payload,
        "mss_bytes": mss,
        "qd_stall_max": qd,
        "ended_by": what,
    }


def format_stall_end(r: dict[str, Any], source: str = "") -> str:
    """:func:`stall_end`'s result as a few lines of text."""
    by = (
        "the server's first header comes back while the client is still issuing requests, "
        "and one of them carries its ACK"
        if r["ended_by"] == "wake-up"
        else "the queue's responses fill a segment, which Nagle sends at once"
    )
    return "\n".join(
        [
            f"host profile: {source}" if source else "host profile:",
            f"  client per request CE {r['CE_us']:.2f} us, server to its header SE "
            f"{r['SE_us']:.2f} us, path W1 = W2 {r['W1_us']:.2f} us",
            f"  server's wake-up after the stall's idle SD {r['SD_us']:.1f} us, waking it costs "
            f"the client's send() CD {r['CD_us']:.1f} us",
            f"a Nagle server with a TCP_NODELAY client, {r['payload_bytes']}-byte reads, MSS "
            f"{r['mss_bytes']}: "
            + (
                f"the delayed-ACK stall sustains itself up to QD {r['qd_stall_max']}"
                if r["qd_stall_max"]
                else "no delayed-ACK stall of this kind at any queue depth"
            ),
            f"  (above it {by})"
            if r["qd_stall_max"]
            else "  (even one response fills a segment, which Nagle sends at once)",
        ]
    )

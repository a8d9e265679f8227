"""Flory's step at one MSS: when the client ACKs a response's full segment, kernel and simulator.

Behind a Nagle server on a veth pair at MTU 1500, Flory's response of 1449 bytes (an 8-byte
descriptor, then a full segment and a 1-byte tail that Nagle's algorithm holds until the full
segment is acknowledged) runs at about three quarters of the rate of a 1448-byte one
(:mod:`models.validation.field5`, Flory's steps).  The fifth machine's models on ``linux-6`` miss
the step: the client ACKs the full segment the moment it arrives (more than one ``rcv_mss``
unacknowledged, ``__tcp_ack_snd_check``), the tail follows at once and the client reads the
whole response after one wake-up.  On ``linux-6-rwnd`` the window's test makes that ACK wait for
the client's read (the descriptor and the full segment, unread, would shrink the window:
:mod:`models.sim.rules.rwnd`), the tail leaves only then, and the client wakes a second time for
it: the step is there.

Two captures of the kernel (:data:`CAPTURES`: ``python -m models.measure run --proto flory --sock
nagle --link veth --mtu 1500 --pin apart --count 1000 --duration 3 --iosize N --pcap FILE`` on
the fifth machine, 2026-12-01 10:34 UTC, bbr, ``tcp_autocorking`` 1, 1-minute load 0.26; each
trimmed to its handshake and its last 600 packets by ``tools/trim_pcap.py``) tell which ACK the
kernel's client sends.  :func:`ack_delays` measures, for every full segment the server sends, how
long the client took to ACK it, and :func:`tail_delays` how long after the client's ACK the held
tail left; :func:`evaluate` compares the medians of the captures with the simulator's traces of
the same two Flory rows, the late-wake-up model on each kernel profile.  The captures say the
window's model gets the step with the wrong ACK: the kernel's client ACKs at its read at 1448
bytes, as that model's does, but at once at 1449, as ``linux-6``'s does, and the kernel's tail
then leaves about a wake-up after the ACK (these runs used bbr, whose pacing can hold a segment
that long; a reno run at 10:19 UTC the same day, not bundled, sent its tail 3 us after the ACK).
Both the kernel's client and the window model's wake twice per 1449-byte response, for different
reasons.

>>> ack_delays([(0.0, "S", 0, 8, 0), (5e-6, "S", 8, 1456, 0), (8e-6, "C", 0, 0, 1456)], mss=1448)
[3e-06]
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from models.framing import mss
from models.kernel.runs import HEADER_BYTES
from models.validation import fidelity as FID
from models.validation import field5 as F5
from models.validation import machine4 as M4
from models.validation.qd2race import Record, records_from_capture, records_from_trace

__all__ = [
    "CAPTURES",
    "PAYLOADS",
    "MODELS",
    "ack_delays",
    "tail_delays",
    "simulate",
    "Tail",
    "evaluate",
    "findings",
    "numbers",
]

#: MSS on a veth pair at MTU 1500 (bytes): the full segment's length.
MSS = mss(1500)
#: The two payloads either side of the step (bytes) and the capture of each
#: (``data/captures/NAME.pcap``).
PAYLOADS = (MSS, MSS + 1)
CAPTURES = {n: f"veth1500_flory_nagle_{n}" for n in PAYLOADS}
#: The models: name -> the function making a Flory row's scenario (both with the late model's
#: host profile, :data:`models.validation.field5.PROFILE_LATE`).
MODELS = {
    "late wake-ups, linux-6": M4.freed_clock_scenario,
    "late wake-ups, linux-6-rwnd": F5.window_scenario,
}
#: The row of :attr:`Tail.table` with the kernel's captures.
KERNEL = "kernel (captures)"


def ack_delays(records: list[Record], mss: int = MSS) -> list[float]:
    """For every server data segment of ``mss`` bytes, the seconds until the first client
    segment whose ACK covers it, if that segment is a pure ACK (a request carrying the ACK is not
    a separate ACK and is left out)."""
    out: list[float] = []
    waiting: list[tuple[float, int]] = []  # (sent at, end) of full segments not yet ACKed
    for t, side, start, end, ack in records:
        if side == "S":
            if end - start == mss:
                waiting.append((t, end))
            continue
        covered = [w for w in waiting if ack >= w[1]]
        if covered:
            waiting = [w for w in waiting if ack < w[1]]
            if end == start:  # a pure ACK
                out.extend(round(t - w[0], 12) for w in covered)
    return out


def tail_delays(
    records: list[Record], mss: int = MSS, descriptor: int = HEADER_BYTES["flory"]
) -> list[float]:
    """For every server segment shorter than ``mss`` that is not a ``descriptor`` (a tail that
    Nagle's algorithm held), the seconds since the client's last pure ACK before it."""
    out: list[float] = []
    last: float | None = None
    for t, side, start, end, _ack in records:
        if side == "C":
            last = t if end == start else None
        elif 0 < end - start < mss and end - start != descriptor and last is not None:
            out.append(round(t - last, 12))
            last = None
    return out


def _row(payload: int) -> dict[str, Any]:
    """The fifth machine's Flory row of ``payload`` bytes behind a Nagle server on veth-1500."""
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=F5.PREFIX)
    t = run.table("flory")
    pick = (t.link == "veth-1500") & (t.sock_mode == "nagle") & (t.payload_bytes == payload)
    (i,) = t.index[pick]
    return {**t.loc[i].to_dict(), "hz": run.hz}


def simulate(name: str, payload: int, ops: int = 1000) -> list[Record]:
    """The simulator's trace of the Flory row of ``payload`` bytes with :data:`MODELS`' ``name``
    (``ops`` operations from the connection's start, as the captures' runs)."""
    from models.sim import hostprofile
    from models.sim import simulate as run_sim

    row = _row(payload)
    host = FID.ProfileHost(hostprofile.shipped(F5.PROFILE_LATE))
    sc = MODELS[name]("flory", row, host, row["hz"]).replace(
        run={"trace": True, "ops": ops, "warmup_ops": 0}
    )
    return records_from_trace(run_sim(sc).trace)


@dataclass(frozen=True)
class Tail:
    """:func:`evaluate`'s result: ``table``, the median ACK delay (us) at each payload of the
    kernel's captures and of each model, and how many full segments each median is over;
    ``first_wake_s``, the fifth machine's wake-up after the briefest idle (its curve's first
    point)."""

    table: Any
    first_wake_s: float


def _steady(delays: list[float], trimmed: bool) -> list[float]:
    """A source's delays past its start-up, whose ACKs leave at once while the receive window
    grows (in the kernel's runs, the first few hundred responses): a capture ``trimmed`` to its
    run's end already keeps them all, a simulated run from its start keeps its second half."""
    return delays if trimmed else delays[len(delays) // 2 :]


def evaluate() -> Tail:
    """The captures and both models' traces, measured alike past their start-up."""
    import pandas as pd

    from models._paths import bundled_data_dir
    from models.sim import hostprofile

    folder = bundled_data_dir() / "captures"
    # each source's records by payload, and whether they are cut to the run's end already
    sources = {
        KERNEL: ({n: records_from_capture(folder / f"{CAPTURES[n]}.pcap") for n in PAYLOADS}, True)
    }
    for name in MODELS:
        sources[name] = ({n: simulate(name, n) for n in PAYLOADS}, False)
    rows = {}
    for name, (by, trimmed) in sources.items():
        row = {}
        for n, records in by.items():
            d = _steady(ack_delays(records), trimmed)
            row[f"ACK delay, {n} B (us)"] = statistics.median(d) * 1e6  # s -> us
            row[f"full segments, {n} B"] = len(d)
        tails = _steady(tail_delays(by[PAYLOADS[-1]]), trimmed)
        row[f"tail after the ACK, {PAYLOADS[-1]} B (us)"] = statistics.median(tails) * 1e6
        rows[name] = row
    first = hostprofile.shipped(F5.PROFILE_LATE).host["wake_curve_s"][0][1]
    return Tail(pd.DataFrame(rows).T, first)


def _waits(delay_us: float, tail: Tail) -> bool:
    """An ACK that waited for a read: later than half the machine's briefest wake-up."""
    return delay_us > tail.first_wake_s * 1e6 / 2  # s -> us


def findings(tail: Tail) -> dict[str, bool]:
    """What chapter 9b says of :func:`evaluate`'s result, each a claim that holds or not."""
    t = tail.table
    small, large = (f"ACK delay, {n} B (us)" for n in PAYLOADS)
    tail_col = f"tail after the ACK, {PAYLOADS[-1]} B (us)"
    k = t.loc[KERNEL]
    plain, window = (t.loc[m] for m in MODELS)
    return {
        "the kernel's client ACKs at its read at 1448 bytes and at once at 1449": bool(
            _waits(k[small], tail) and not _waits(k[large], tail)
        ),
        "linux-6's client ACKs at once at both": bool(
            not _waits(plain[small], tail) and not _waits(plain[large], tail)
        ),
        "the window's client waits for its read at both": bool(
            _waits(window[small], tail) and _waits(window[large], tail)
        ),
        "the kernel's tail leaves about a wake-up after the ACK, the models' sooner": bool(
            _waits(k[tail_col], tail)
            and not _waits(plain[tail_col], tail)
            and not _waits(window[tail_col], tail)
        ),
        "each capture has at least a hundred full segments": bool(
            (t.loc[KERNEL, [f"full segments, {n} B" for n in PAYLOADS]] >= 100).all()
        ),
    }


def numbers(tail: Tail) -> dict[str, Any]:
    """The values chapter 9b quotes, by glue name (microseconds)."""
    t = tail.table
    out: dict[str, Any] = {"ft_wake_us": tail.first_wake_s * 1e6}  # s -> us
    out["ft_small_bytes"], out["ft_large_bytes"] = PAYLOADS
    for key, name in zip(("k", "plain", "win"), [KERNEL, *MODELS]):
        for n in PAYLOADS:
            out[f"ft_{key}_{n}_us"] = float(t.loc[name, f"ACK delay, {n} B (us)"])
        out[f"ft_{key}_tail_us"] = float(t.loc[name, f"tail after the ACK, {PAYLOADS[-1]} B (us)"])
    return out

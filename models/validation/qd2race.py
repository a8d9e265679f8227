"""A Nagle server behind a Nagle client at QD 2: how the kernel enters its stall, and the simulator.

On the fifth machine's field sweep the kernel stalls on half the operations of a Nagle server
behind a Nagle client at QD 2, on every link and under every congestion control; the rules' model
(:mod:`models.validation.field5`) did not stall there at all, and with late wake-ups it stalls but
leaves the stall again (its rate several times the kernel's).  A capture of the kernel's run
(:data:`CAPTURE`, ``python -m models.measure run --proto iscsi --sock nagle --client-sock nagle
--pin apart --qd 2 --iosize 512 --count 120 --duration 3 --pcap FILE`` on the fifth machine,
2026-12-01 08:20 UTC, loopback, bbr, ``tcp_autocorking`` 1, 1-minute load 0.32) shows the way in.
Every stall starts with a response's 48-byte header sent alone at a moment when the client had
acknowledged everything the server had sent (a *lone header*): the client's next request, whose
ACK frees the server's queue, reached the server before it had written that response's data, so
the header left at once and Nagle's algorithm held the data written after it; the client, with both
requests out and nothing to send, delays its ACK.  (On the loopback the request that acknowledges a
held response releases it within the client's own ``send()``: the client finds the response
waiting and answers within microseconds (:func:`turnarounds`), while the server's thread must
wake for the request.)  The kernel sends such a header for about every second response, and one in
two of them ends in a stall.

:func:`evaluate` counts, in the kernel's capture and in the simulator's trace of the same
scenario (:func:`simulate`, each model of :data:`MODELS`), the responses, the stalls (gaps of at least
:data:`~models.kernel.runs.STALL_MS`) and the lone headers (:func:`lone_headers`).  Which side of
that race the simulator's server lands on depends on the host costs: a model whose server has both
writes queued before the request arrives sends the whole response when its ACK comes, and the
stagger holds.

>>> lone_headers([(0.0, "S", 0, 48, 0), (1e-5, "S", 48, 96, 0),  # the second finds 48 unacked
...               (2e-5, "C", 0, 0, 96), (3e-5, "S", 96, 144, 0)], header=48)
2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models.kernel.runs import HEADER_BYTES, STALL_MS
from models.validation import fidelity as FID
from models.validation import field5 as F5
from models.validation import machine4 as M4
from models.validation import machine5 as M5

__all__ = [
    "CAPTURE",
    "MODELS",
    "records_from_capture",
    "records_from_trace",
    "lone_headers",
    "turnarounds",
    "simulate",
    "Race",
    "evaluate",
    "findings",
    "numbers",
]

#: The kernel's capture (``data/captures/CAPTURE.pcap``).
CAPTURE = "lo_nagle_nagleclient_qd2_512"
#: Header bytes of a response (iSCSI's basic header segment) and the capture's payload.
HEADER, PAYLOAD = HEADER_BYTES["iscsi"], 512
#: Models simulated beside the capture: name -> (host profile, the function making the scenario).
MODELS = {
    "calibrated here": (M5.PROFILE, FID.field_scenario),
    "rules": (M5.PROFILE_SENT, M4.freed_clock_scenario),
    "rules, late wake-ups": (F5.PROFILE_LATE, M4.freed_clock_scenario),
}

#: One segment as this module reads it: (seconds, side "C" or "S", first byte, end, the ACK
#: field), byte offsets from the start of each side's stream.
Record = tuple[float, str, int, int, int]


def records_from_capture(path: Any) -> list[Record]:
    """The segments of a one-connection capture as :data:`Record` tuples (the SYN's side is the
    client; offsets count from the byte after each side's initial sequence number)."""
    from models.measure.capture import read_pcap

    segs = read_pcap(path)
    syn = next(s for s in segs if s.flags & 0x02 and not s.flags & 0x10)
    client = (syn.src, syn.sport)
    isn: dict[str, int] = {}
    out: list[Record] = []
    for s in segs:
        side = "C" if (s.src, s.sport) == client else "S"
        if s.flags & 0x02:  # SYN: the initial sequence number
            isn[side] = s.seq
            continue
        start = (s.seq - isn[side] - 1) % (1 << 32)
        peer = "S" if side == "C" else "C"
        ack = (s.ack - isn[peer] - 1) % (1 << 32) if s.flags & 0x10 else 0
        out.append((s.time_s, side, start, start + s.payload_bytes, ack))
    return out


def records_from_trace(trace: Any) -> list[Record]:
    """The simulator's trace (``Result.trace``) as :data:`Record` tuples (its sequence numbers
    are tcpdump's relative ones, from 1)."""
    return [
        (r.time, "C" if r.direction == "C > S" else "S", r.seq - 1, r.end - 1, r.ack - 1)
        if r.length
        else (r.time, "C" if r.direction == "C > S" else "S", 0, 0, r.ack - 1)
        for r in trace
    ]


def lone_headers(records: list[Record], header: int = HEADER) -> int:
    """Server data segments of exactly ``header`` bytes sent when the client had acknowledged
    every byte the server had sent before them: a response's header leaving on its own with
    nothing in flight, so that Nagle's algorithm holds the response's data behind it."""
    return len(_lone_indices(records, header))


def _lone_indices(records: list[Record], header: int = HEADER) -> list[int]:
    """The positions in ``records`` of :func:`lone_headers`' segments."""
    acked = sent = 0
    out = []
    for i, (_, side, start, end, ack) in enumerate(records):
        if side == "C":
            acked = max(acked, ack)
        elif end > start:
            if end - start == header and acked >= sent:
                out.append(i)
            sent = max(sent, end)
    return out


def _stalls_after(records: list[Record], lone: list[int], stall_s: float) -> list[tuple]:
    """For each stall (a gap of at least ``stall_s`` seconds) whose last server data segment
    before it is one of the ``lone`` headers: the time of the client's last request before that
    header and of the server's last data segment before that request (``None`` if missing)."""
    lone_at = set(lone)
    out = []
    last_s = last_c = s_before_c = None  # positions: server data, client request, data before it
    seen: tuple = (None, None)  # (last_c, s_before_c) when the last server data left
    for i in range(1, len(records)):
        t, side, start, end, _ = records[i - 1]
        if end > start:
            if side == "S":
                last_s, seen = i - 1, (last_c, s_before_c)
            else:
                last_c, s_before_c = i - 1, last_s
        if records[i][0] - t >= stall_s and last_s in lone_at:
            out.append(tuple(None if k is None else records[k][0] for k in seen))
    return out


def turnarounds(records: list[Record], stall_s: float = STALL_MS / 1e3) -> list[float]:
    """For each stall after a lone header, how long (seconds) after the server's last data
    segment before it the client's request came whose ACK let that header leave alone."""
    found = _stalls_after(records, _lone_indices(records), stall_s)
    return [req - data for req, data in found if req is not None and data is not None]


def _counts(records: list[Record]) -> dict[str, Any]:
    """Responses, stalls and lone headers of one connection's records."""
    stall_s = STALL_MS / 1e3  # ms -> s
    served = max((end for _, side, _, end, _ in records if side == "S"), default=0)
    times = [r[0] for r in records]
    stalls = sum(1 for a, b in zip(times, times[1:]) if b - a >= stall_s)
    responses = served // (HEADER + PAYLOAD)
    lone = _lone_indices(records)
    return {
        "responses": responses,
        "stalls": stalls,
        "responses per stall": responses / stalls if stalls else float("inf"),
        "lone headers": len(lone),
        "stalls after a lone header": len(_stalls_after(records, lone, stall_s)),
        "lone headers per response": len(lone) / responses,
    }


def _row() -> dict[str, Any]:
    """The fifth machine's field-sweep row of the capture's scenario (loopback, bbr)."""
    from models.kernel import load_kernel_run

    run = load_kernel_run(prefix=F5.PREFIX)
    t = run.table("iscsi_loop")
    pick = (
        (t.link == "loopback")
        & (t.cc == "bbr")
        & (t.sock_mode == "nagle")
        & (t.client_sock_mode == "nagle")
        & (t.qd == 2)
        & (t.iosize_bytes == PAYLOAD)
    )
    (i,) = t.index[pick]
    return {**t.loc[i].to_dict(), "hz": run.hz}


def simulate(name: str, ops: int = 400) -> list[Record]:
    """The simulator's trace of the capture's scenario with :data:`MODELS`' ``name``, ``ops``
    operations from the connection's start (the capture's count and more)."""
    from models.sim import hostprofile

    profile, make = MODELS[name]
    return _trace(hostprofile.shipped(profile), make, ops)


def _trace(profile: Any, make: Any, ops: int = 400) -> list[Record]:
    """The trace of the capture's scenario with the host ``profile``, made by ``make``."""
    from models.sim import simulate as run_sim

    row = _row()
    sc = make("iscsi_loop", row, FID.ProfileHost(profile), row["hz"]).replace(
        run={"trace": True, "ops": ops, "warmup_ops": 0}
    )
    return records_from_trace(run_sim(sc).trace)


def _sent_flag() -> dict[bool, dict[str, Any]]:
    """The rules' refit (its costs) simulated as the field evaluation simulates, with
    ``send_cpu_first`` as fitted (``True``) and off (``False``): the counts of each."""
    from models.sim import hostprofile

    base = hostprofile.shipped(M5.PROFILE_SENT)
    out = {}
    for flag in (True, False):
        out[flag] = _counts(_trace(base.with_host(send_cpu_first=flag), FID.field_scenario))
    return out


@dataclass(frozen=True)
class Race:
    """:func:`evaluate`'s result: ``table``, the counts of the kernel's capture (first row) and of
    each model of :data:`MODELS`; ``turnarounds_s``, the capture's :func:`turnarounds`; ``flag``,
    the rules' costs with ``send_cpu_first`` on and off (``True``/``False`` -> counts);
    ``first_wake_s``, the machine's wake-up after the briefest idle (its curve's first point)."""

    table: Any
    turnarounds_s: list
    flag: dict
    first_wake_s: float


#: The kernel's row of :attr:`Race.table`.
KERNEL = "kernel (capture)"


def evaluate() -> Race:
    """The capture and every model of :data:`MODELS` counted, with what the claims need."""
    import pandas as pd

    from models._paths import bundled_data_dir
    from models.sim import hostprofile

    kernel = records_from_capture(bundled_data_dir() / "captures" / f"{CAPTURE}.pcap")
    rows = {KERNEL: _counts(kernel)}
    for name in MODELS:
        rows[name] = _counts(simulate(name))
    first = hostprofile.shipped(M5.PROFILE).host["wake_curve_s"][0][1]
    return Race(pd.DataFrame(rows).T, turnarounds(kernel), _sent_flag(), first)


def findings(race: Race) -> dict[str, bool]:
    """What chapter 9b says of :func:`evaluate`'s result, each a claim that holds or not."""
    import statistics

    t = race.table
    k = t.loc[KERNEL]
    cal, rules, late = (t.loc[m] for m in MODELS)
    on, off = race.flag[True], race.flag[False]
    turns = race.turnarounds_s
    return {
        "every kernel stall starts with a lone header, one in two of them": bool(
            0 < k["stalls"] == k["stalls after a lone header"]
            and 1.5 * k["stalls"] <= k["lone headers"] <= 2.5 * k["stalls"]
        ),
        "the kernel sends a lone header for about every second response": bool(
            0.4 <= k["lone headers per response"] <= 0.6
        ),
        "the calibration's server loses the race as often (responses per stall within a "
        "quarter)": bool(abs(cal["responses per stall"] / k["responses per stall"] - 1) <= 0.25),
        "the rules' server wins it: no stall, hardly a lone header": bool(
            rules["stalls"] == 0 and rules["lone headers per response"] < 0.05
        ),
        "late wake-ups make the rules stall, several times too rarely": bool(
            late["stalls"] > 0 and late["responses per stall"] > 4 * k["responses per stall"]
        ),
        # the rules' costs with the flag never stall here, without it as often as the kernel
        "the segment sent after its send()'s CPU is what wins it": bool(
            on["stalls"] == 0
            and abs(off["responses per stall"] / k["responses per stall"] - 1) <= 0.25
        ),
        "before a stall the client answers sooner than a wake-up takes": bool(
            turns and statistics.median(turns) < race.first_wake_s
        ),
    }


def numbers(race: Race) -> dict[str, Any]:
    """The values chapter 9b quotes from :func:`evaluate`'s result, by glue name."""
    import statistics

    t = race.table
    k = t.loc[KERNEL]
    cal, rules, late = (t.loc[m] for m in MODELS)
    return {
        "qr_k_responses": int(k["responses"]),
        "qr_k_stalls": int(k["stalls"]),
        "qr_k_lone": int(k["lone headers"]),
        "qr_k_per_stall": float(k["responses per stall"]),
        "qr_cal_per_stall": float(cal["responses per stall"]),
        "qr_ops": int(cal["responses"]),
        "qr_rules_lone": int(rules["lone headers"]),
        "qr_late_stalls": int(late["stalls"]),
        "qr_late_per_stall": float(late["responses per stall"]),
        "qr_k_turn_us": statistics.median(race.turnarounds_s) * 1e6,  # s -> us
        "qr_wake_us": race.first_wake_s * 1e6,  # s -> us
    }

"""A host profile: one machine's measured and fitted costs, as the simulator's ``Host`` fields.

``python -m models.measure calibrate`` writes one (JSON); ``Scenario(host=PROFILE_OR_PATH)`` and
``python -m models.sim --host FILE`` apply it to both ends of the connection (one machine, one
program), under any host fields given explicitly, which win.  Standard library only (it runs in
the browser too).

Schema, version 1 (a JSON object)::

    {
      "schema": "queue-depth-host-profile",
      "version": 1,
      "machine": {                      # required: where the costs hold
        "kernel": "6.18.44-...",        #   release (uname -r)
        "config_hz": 250,               #   CONFIG_HZ, or null if unreadable
        "cpus": 2,                      #   optional
        "congestion_control": "bbr",    #   net.ipv4.tcp_congestion_control
        "date": "2026-11-25T12:00:00+00:00"
      },
      "host": {"wake_s": 3e-06, ...},   # required: Host fields, seconds, both ends
      "server": {...}, "client": {...}, # optional: per-side values over "host"
      "provenance": {"wake_s": "measured: ..."},  # optional: how each was found
      "measured": {...}, "fit": {...},  # optional records, never applied
      "settings": {...}                 # optional record, never applied
    }

Only the cost fields of :data:`~models.sim.hostranges.COST_RANGES` (and the flags of ``FLAGS``,
each ``true`` or ``false``) may be set, each a number of seconds (the share
``wake_late_share``: a number from 0 to 1) inside its
documented plausible range (checked when a profile loads; a value outside is an error naming
the field, its range and the value).  The ranges are deliberately wide: they reject a unit
mistake (microseconds typed as seconds) or a fit gone to a corner, not an unusual machine.

How ``python -m models.measure costs`` maps onto the fields (on the host loopback):

``wake_s``, ``wake_fast_s``, ``wake_fast_idle_s``
    the wake-up latency of a thread blocked in ``read()`` on a pipe, pinned to another CPU than
    the waker's (``pipe_cross``: a thread blocked in ``recv()`` is woken the same way, from a
    wait queue by the code that queued the data, and the two ends of a loop run on two CPUs),
    measured again after the sleeper's CPU has idled for set gaps (``cross_by_gap``): the
    median after the shortest gap is ``wake_fast_s`` (the CPU still polling), after the
    longest ``wake_s`` (it halted), and ``wake_fast_idle_s`` lies between the last gap whose
    wake-up was still fast and the next (``models.measure.wakeups.wake_costs``); without
    the gaps, ``wake_s`` is the ``pipe_cross`` median and the fast wake-up is off;
``wake_curve_s``
    with the same wake-up measured after long idle gaps too, 2.5 to 40 ms
    (``cross_by_long_gap``: a virtual CPU idle for milliseconds was descheduled by its host),
    every gap's median as an ``[idle, latency]`` point (``models.measure.wakeups.wake_curve``):
    it decides each wake-up in place of the fast step, and ``wake_s`` stays for what else stands
    in for a wake-up;
``timer_arm_cpu_s``, ``timer_fire_cpu_s``
    arming a timer that becomes the CPU's next event less one that does not (``timer_arm``),
    and the longest pause of a thread spinning on the clock while its timer fires less the
    longest without one (``timer_fire``): bbr's pacing timer;
``timer_spread_s``, ``waker_curve_s``
    the long-gap wake-ups' 90th percentile less their median; the waker's ``write()`` after each
    gap (the long ones with the waker asleep too) less after the shortest, moved to read at the
    ping-pong's idle gap what waking costs its requester's ``send()`` where the ping-pong timed
    that (``pingpong``'s ``waker_us``), or, where the benchmark timed it at every gap, the
    waker's TCP ``send()`` with the peer asleep less with it spinning (``tcp_by_gap``,
    ``tcp_by_long_gap``; ``measure.wakeups``);
``send_cpu_s``, ``send_byte_cpu_s``
    the per-call and per-byte parts of ``send()``'s CPU time (least squares over 48 B to
    64 KiB, and a 48 B ``MSG_MORE`` call that sends no segment);
``handoff_byte_cpu_s``
    what a ``send()`` costs per byte more in the harness's own loop on two CPUs (``loop_bytes``:
    QD 8, responses of 4-32 KiB, least squares over the sizes) than in one thread; profiles
    calibrated before 2026-12-04 hold what the same 64 KiB ``send()`` costs more with its
    reader spinning on the other CPU (``large_cross``, one transfer at a time; no wake-up in
    it), as ``calibrate`` still does where the loop cannot run: charged only where both ends
    have a CPU each of one machine (since 2026-11-29; earlier profiles record the benchmark
    without the field);
``gso_cpu_s``
    the per-segment part: on loopback one super-packet is one segment, and the receiving
    stack's processing runs in the sender's soft interrupt, so this is a super-packet's cost
    end to end; ``calibrate`` adds the fitted per-segment cost to it;
``recv_byte_cpu_s``
    what reading costs per byte in the harness's loop on two CPUs beyond its calls
    (``loop_bytes``); in profiles calibrated before 2026-12-04, and where the loop cannot run,
    what reading a 64 KiB ``send()`` costs beyond as many 512-byte segments' reads in one thread
    (``recv_large``), from a cache that holds the bytes;
``ack_cpu_s``
    a pure ACK's CPU, its sending and its processing by the peer: on loopback both run in the
    thread whose call made the ACK leave, so one thread times both (``ack``: batches with
    ``TCP_QUICKACK`` 2 and 0 after each read, per ACK of difference); the simulator charges it
    where the ACK is received, which on loopback and veth is the sending host's CPU
    (``Link.softirq_on_sender``); fitted when the benchmark gives no number;
``tx_cpu_s``
    0: on loopback it cannot be told from ``gso_cpu_s``, and links with TSO/GSO offload
    (loopback, veth) segment nothing in software;
``send_cpu_first``
    a flag (``calibrate`` leaves it off; the hand-made variants ``kernel6_machine4_sent_*``,
    ``kernel6_machine5_sent_*`` and the ``*_waker`` profiles set it): on, a segment leaves after
    its ``send()``'s CPU up to it, as on loopback or veth, where the call hands the segment to the
    device and runs the receiving stack before it returns;
``xmit_clock_in_call``
    a flag, set by no shipped profile, with ``send_cpu_first``: on, ``tcp_write_xmit`` inside
    a ``send()`` reads the clock after the call's CPU so far, as the kernel refreshes it after
    the copy, for bbr's pacing check and the departure time it stamps;
``pacing_arm_waits``
    a flag, set by no shipped profile: on, a ``send()`` that arms bbr's pacing timer stays in
    the call, its CPU held, until the timer fires, as traced on the seventh machine, where
    reprogramming the CPU's timer for so near an expiry gave the CPU back only with the timer's
    interrupt (``tools/pacing_wait_trace.py``);
``pacing_interrupt_once``
    a flag, set by no shipped profile: on, with ``pacing_arm_waits``, the held call's interrupt
    comes no earlier than the call has reprogrammed the timer, and its CPU is counted once, in
    the wait (``tools/plateau_calls_trace.py``);
``soft_waker``
    a flag, set by no shipped profile: on, a segment a timer or an ACK releases outside the
    thread's ``send()`` pays for waking the sleeping peer (``waker_curve_s``) as a ``send()``
    does, on the CPU that sends it;
``own_socket``
    a flag, set only by the variant ``kernel6_machine4_sent_owned``: on, a segment that reaches
    a host while its thread is inside a ``send()`` that costs CPU waits in the socket's backlog
    until the call ends (Linux lets one context at a time work on a socket: ``tcp_add_backlog``,
    ``release_sock``);
``softirq_first``
    a flag, set by no shipped profile: on, with both ends on one machine and a CPU each, a
    thread's next step waits for the soft-interrupt work queued on its CPU meanwhile, which
    Linux runs inside the ``send()`` that raised it (:mod:`models.sim.softirq_first`);
``handshake_rtt``
    a flag, set by no shipped profile: on, each end's congestion control takes the
    handshake's round trip (a bare header each way over the idle path) as its first RTT
    sample, so bbr paces its first segments at the initial window over that round trip, as
    ``bbr_init_pacing_rate_from_rtt`` does, instead of over the 1 ms it assumes without one.

>>> p = validate({"schema": SCHEMA, "version": 1,
...               "machine": {"kernel": "6.1", "config_hz": 250,
...                           "congestion_control": "cubic",
...                           "date": "2026-01-01"},
...               "host": {"wake_s": 5e-6, "send_cpu_s": 1e-6}})
>>> p.side("server")["wake_s"]
5e-06
>>> validate({**p.to_dict(), "host": {"wake_s": 5.0}})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: host profile: host.wake_s must be in [5e-07, 0.0002] ...got 5.0
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from models.sim.hostranges import COST_RANGES, CURVE_RANGES

__all__ = [
    "SCHEMA",
    "VERSION",
    "HostProfile",
    "validate",
    "load",
    "shipped",
    "SHIPPED",
    "SIDES",
    "handoff_totals",
    "handoff_split",
    "flag_setting",
    "bool_setting",
]

#: The value of the ``schema`` key.
SCHEMA = "queue-depth-host-profile"
#: The schema version this module reads and writes.
VERSION = 1
#: The name of the profile the book ships, ``data/hosts/<SHIPPED>.json``, measured on the machine
#: that measured the bundled kernel dataset (``kernel6_*``); its provenance is in
#: ``data/hosts/README.md``.
SHIPPED = "kernel6"
#: The two ends a profile applies to.
SIDES = ("server", "client")
_TOP = {"schema", "version", "machine", "host", "server", "client", "provenance"}
_RECORDS = {"measured", "fit", "settings", "notes"}
_MACHINE_REQUIRED = ("kernel", "config_hz", "congestion_control", "date")
_MACHINE_OPTIONAL = ("cpus", "machine", "load", "autocorking")


def _curve(where: str, value: Any) -> list:
    idle, latency = CURVE_RANGES[where.rsplit(".", 1)[-1]]
    if not isinstance(value, (list, tuple)) or len(value) < 2:
        raise ValueError(
            f"host profile: {where} must list two or more [idle, latency] points, got {value!r}"
        )
    out = []
    for k, p in enumerate(value):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise ValueError(f"host profile: {where}[{k}] must be [idle, latency], got {p!r}")
        out.append([idle.check(f"{where}[{k}] idle", p[0]), latency.check(f"{where}[{k}]", p[1])])
    if any(a[0] >= b[0] for a, b in zip(out, out[1:])):
        raise ValueError(f"host profile: {where} must list its points with the idle rising")
    return out


#: The ``Host`` flags a profile may set besides its costs (``true`` or ``false``).
FLAGS = (
    "send_cpu_first",
    "xmit_clock_in_call",
    "pacing_arm_waits",
    "pacing_interrupt_once",
    "soft_waker",
    "own_socket",
    "softirq_first",
    "handshake_rtt",
)


def flag_setting(text: str) -> tuple[str, bool]:
    """A command line's ``NAME=true`` or ``NAME=false`` for a flag of ``FLAGS``.

    >>> flag_setting("send_cpu_first=true")
    ('send_cpu_first', True)
    >>> flag_setting("nodelay=true")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 'nodelay' is not a flag a profile may set; known: ...
    """
    return bool_setting(text, FLAGS, "a flag a profile may set")


def bool_setting(text: str, known: Iterable[str], what: str) -> tuple[str, bool]:
    """A command line's ``NAME=true`` or ``NAME=false`` for a name of ``known`` (``what`` names
    them in the error).

    >>> bool_setting("gro=false", ("gro",), "a flag")
    ('gro', False)
    >>> bool_setting("gro=1", ("gro",), "a flag")
    Traceback (most recent call last):
    ...
    ValueError: gro takes true or false, got '1'
    """
    known = tuple(known)
    name, _, value = text.partition("=")
    if name not in known:
        raise ValueError(f"{name!r} is not {what}; known: {', '.join(known)}")
    if value not in ("true", "false"):
        raise ValueError(f"{name} takes true or false, got {value!r}")
    return name, value == "true"


def _costs(where: str, d: Any) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        raise ValueError(f"host profile: {where} must be an object of costs, got {d!r}")
    out: dict[str, Any] = {}
    for name, value in d.items():
        if name in CURVE_RANGES:
            out[name] = _curve(f"{where}.{name}", value)
            continue
        if name in FLAGS:
            if not isinstance(value, bool):
                raise ValueError(
                    f"host profile: {where}.{name} must be true or false, got {value!r}"
                )
            out[name] = value
            continue
        rng = COST_RANGES.get(name)
        if rng is None:
            raise ValueError(
                f"host profile: {where}.{name} is not a cost a profile may set; "
                f"known: {', '.join(sorted([*COST_RANGES, *CURVE_RANGES, *FLAGS]))}"
            )
        out[name] = rng.check(f"{where}.{name}", value)
    return out


@dataclasses.dataclass(frozen=True)
class HostProfile:
    """A validated host profile (:func:`validate`): the machine, the costs of each side
    (seconds, by ``Host`` field), how each was found, and the free-form records."""

    machine: dict
    host: dict
    server: dict
    client: dict
    provenance: dict
    records: dict

    def side(self, name: str) -> dict[str, float]:
        """The ``Host`` field values for ``"server"`` or ``"client"`` (``host`` under the side's own)."""
        if name not in SIDES:
            raise ValueError(f"side must be 'server' or 'client', got {name!r}")
        return {**self.host, **getattr(self, name)}

    def to_dict(self) -> dict:
        """The JSON object this profile was read from (normalised)."""
        d: dict[str, Any] = {
            "schema": SCHEMA,
            "version": VERSION,
            "machine": dict(self.machine),
            "host": dict(self.host),
        }
        for key in ("server", "client", "provenance"):
            if getattr(self, key):
                d[key] = dict(getattr(self, key))
        d.update(self.records)
        return d

    def with_host(self, **costs: Any) -> HostProfile:
        """This profile with the ``host`` fields ``costs`` set (a what-if: the provenance is
        kept as it was), validated as a file would be.

        >>> p = shipped().with_host(wake_late_share=0.0)
        >>> p.host["wake_late_share"], shipped().host["wake_late_share"] > 0
        (0.0, True)
        >>> shipped().with_host(wake_late_share=0.9)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: host profile: host.wake_late_share must be in [0, 0.5] ...
        """
        return validate({**self.to_dict(), "host": {**self.host, **costs}})

    def dumps(self) -> str:
        """The profile as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"

    def describe(self) -> str:
        """One line: the machine and its costs in microseconds."""
        m = self.machine
        costs = ", ".join(
            f"{k} {len(v)} points"
            if k in CURVE_RANGES
            else f"{k} {'on' if v else 'off'}"
            if k in FLAGS
            else f"{k} {v * 1e6:.2f} us"
            if COST_RANGES[k].unit == "seconds"
            else f"{k} {v:g}"
            for k, v in self.host.items()
        )  # s -> us
        return (
            f"host profile of kernel {m['kernel']} (HZ {m['config_hz']}, "
            f"{m['congestion_control']}, {m['date']}): {costs}"
        )


def validate(d: Any) -> HostProfile:
    """Check a profile's JSON object (the module docstring's schema) and return it.

    Raises
    ------
    ValueError
        Naming the bad key or field, what it must be, and the value given.
    """
    if not isinstance(d, Mapping):
        raise ValueError(f"host profile: must be a JSON object, got {type(d).__name__}")
    if d.get("schema") != SCHEMA:
        raise ValueError(f"host profile: schema must be {SCHEMA!r}, got {d.get('schema')!r}")
    if d.get("version") != VERSION:
        raise ValueError(
            f"host profile: version must be {VERSION} (this reader's), got {d.get('version')!r}"
        )
    unknown = set(d) - _TOP - _RECORDS
    if unknown:
        raise ValueError(
            f"host profile: unknown key {sorted(unknown)[0]!r}; known: "
            f"{', '.join(sorted(_TOP | _RECORDS))}"
        )
    machine = d.get("machine")
    if not isinstance(machine, Mapping):
        raise ValueError(f"host profile: machine must be an object, got {machine!r}")
    for key in _MACHINE_REQUIRED:
        if key not in machine:
            raise ValueError(f"host profile: machine.{key} is missing")
    for key in machine:
        if key not in _MACHINE_REQUIRED + _MACHINE_OPTIONAL:
            raise ValueError(
                f"host profile: machine.{key} is not a machine field; known: "
                f"{', '.join(_MACHINE_REQUIRED + _MACHINE_OPTIONAL)}"
            )
    hz = machine["config_hz"]
    if hz is not None and (
        isinstance(hz, bool) or not isinstance(hz, int) or not 10 <= hz <= 10000
    ):
        raise ValueError(f"host profile: machine.config_hz must be null or 10..10000, got {hz!r}")
    for key in ("kernel", "date"):
        if not isinstance(machine[key], str) or not machine[key]:
            raise ValueError(
                f"host profile: machine.{key} must be a non-empty string, got {machine[key]!r}"
            )
    if "host" not in d:
        raise ValueError("host profile: host (the costs, seconds) is missing")
    host = _costs("host", d["host"])
    sides = {s: _costs(s, d.get(s, {})) for s in SIDES}
    prov = d.get("provenance", {})
    if not isinstance(prov, Mapping) or not all(isinstance(v, str) for v in prov.values()):
        raise ValueError(f"host profile: provenance must map fields to text, got {prov!r}")
    return HostProfile(
        machine=dict(machine),
        host=host,
        server=sides["server"],
        client=sides["client"],
        provenance=dict(prov),
        records={k: d[k] for k in sorted(_RECORDS) if k in d},
    )


def load(source: HostProfile | Mapping | str | os.PathLike) -> HostProfile:
    """A :class:`HostProfile` from itself, a JSON object, or the path of a JSON file.

    Raises
    ------
    ValueError
        The file is missing or not JSON, or the profile fails :func:`validate` (the message names
        the file).
    """
    if isinstance(source, HostProfile):
        return source
    if isinstance(source, Mapping):
        return validate(source)
    if not isinstance(source, (str, os.PathLike)):
        raise ValueError(
            f"host must be a host profile, its JSON object or the path of its file, got {source!r}"
        )
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"host profile {path}: cannot read it ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"host profile {path}: not JSON ({exc})") from None
    try:
        return validate(data)
    except ValueError as exc:
        raise ValueError(f"{exc} (in {path})") from None


def shipped(name: str = SHIPPED) -> HostProfile:
    """The host profile the book ships, ``data/hosts/<name>.json`` (the checkout's, or the copy
    installed with the package).

    Raises
    ------
    ValueError
        No such profile (the message names the file), or it fails :func:`validate`.
    """
    from models._paths import bundled_data_dir  # noqa: PLC0415 - only when asked for

    if not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name must be letters, digits, - or _, got {name!r}")
    return load(bundled_data_dir() / "hosts" / f"{name}.json")


def handoff_totals(profile: HostProfile) -> tuple[float, float]:
    """What a message and a pure ACK cost ``profile``'s host with both ends of one machine on a
    CPU each: ``proc_s + handoff_cpu_s`` and ``ack_cpu_s + handoff_ack_cpu_s``, seconds."""
    h = profile.host
    return (
        h.get("proc_s", 0.0) + h.get("handoff_cpu_s", 0.0),
        h.get("ack_cpu_s", 0.0) + h.get("handoff_ack_cpu_s", 0.0),
    )


def handoff_split(profile: HostProfile, share: float) -> HostProfile:
    """``profile`` with ``share`` (0..1) of its two-CPU totals (:func:`handoff_totals`) paid on
    any CPU (``proc_s``, ``ack_cpu_s``) and the rest only on a hand-off between two CPUs
    (``handoff_cpu_s``, ``handoff_ack_cpu_s``); ``share`` 1 puts it all on the CPU (no hand-off).

    >>> d = {"schema": SCHEMA, "version": VERSION, "host": {
    ...     "proc_s": 3e-6, "handoff_cpu_s": 1e-6, "ack_cpu_s": 2e-6},
    ...     "machine": {"kernel": "k", "config_hz": 250,
    ...                 "congestion_control": "bbr", "date": "d"}}
    >>> p = validate(d)
    >>> q = handoff_split(p, 0.25)
    >>> [round(q.host[k] * 1e6, 9) for k in ("proc_s", "handoff_cpu_s")]
    [1.0, 3.0]
    >>> handoff_split(p, 1.5)
    Traceback (most recent call last):
    ...
    ValueError: share must be in [0, 1], got 1.5
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], got {share!r}")
    p, a = handoff_totals(profile)
    host = {
        **profile.host,
        "proc_s": share * p,
        "ack_cpu_s": share * a,
        "handoff_cpu_s": p - share * p,
        "handoff_ack_cpu_s": a - share * a,
    }
    return validate({**profile.to_dict(), "host": host})

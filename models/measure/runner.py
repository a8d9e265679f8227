"""Run one bounded client/server exchange over a :class:`~models.measure.netns.Link`.

:class:`RunSpec` says what to run (Flory's exchange or the iSCSI-like loop, socket mode, queue depth,
payload size, limits); :func:`run_one` starts ``qdperf server`` on the server side, optionally a capture,
then ``qdperf client`` on the client side, and returns a :class:`RunResult` holding both sides' JSON
reports and the capture summary.  Every child process is bounded by its own ``--time-limit``, killed by
the kernel if this process dies (``PR_SET_PDEATHSIG``), and killed here on any error.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import build, capture, sysinfo
from .netns import Link

__all__ = [
    "PROTOCOLS",
    "SOCK_MODES",
    "PIN_MODES",
    "RunSpec",
    "RunResult",
    "run_one",
    "pin_cpus",
    "HarnessError",
]

# Bounds of one run, checked by RunSpec and by the command line (models.measure.cli_args).
#: Most requests the client keeps outstanding.
QD_MAX = 4096
#: Most payload bytes per response (4 MiB).
PAYLOAD_MAX_BYTES = 4 * 1024 * 1024
#: Longest measurement window, seconds.
DURATION_MAX_S = 600.0
#: Longest warm-up, seconds.
WARMUP_MAX_S = 60.0
#: Most operations a run may be asked to stop after.
COUNT_MAX = 10**12
#: Longest congestion-control name (the kernel's TCP_CA_NAME_MAX is 16 with the final NUL).
CC_NAME_MAX = 15
#: Largest ``cc_log_every`` (``qdperf server --cc-log-every``'s own bound).
CC_LOG_EVERY_MAX = 1_000_000

#: Bytes per request and per response header for each protocol.
PROTOCOLS = {"flory": 8, "iscsi": 48}
#: Server socket modes (see ``csrc/qdperf.c``); the first four are the book's, ``more_all`` is the misuse.
SOCK_MODES = ("nagle", "nodelay", "more", "more_nodelay", "more_all")
CLIENT_SOCK_MODES = ("nagle", "nodelay")
#: Where the server and client processes run: wherever the scheduler puts them, both on one CPU,
#: or each on a CPU of its own (``sched_setaffinity`` before the program starts).
PIN_MODES = ("none", "same", "apart")


def pin_cpus(pin: str, allowed: list[int] | None = None) -> dict[str, set[int]] | None:
    """The CPU sets of the server and the client for ``pin`` (:data:`PIN_MODES`), chosen from
    ``allowed`` (default: the CPUs this process may run on), or ``None`` for ``"none"``.

    >>> pin_cpus("same", [2, 3]), pin_cpus("apart", [2, 3]), pin_cpus("none", [2, 3])
    ({'server': {2}, 'client': {2}}, {'server': {2}, 'client': {3}}, None)
    >>> pin_cpus("apart", [0])
    Traceback (most recent call last):
    ...
    ValueError: pin 'apart' needs two CPUs, this process may run on 1: [0]
    """
    if pin not in PIN_MODES:
        raise ValueError(f"pin must be one of {PIN_MODES}, got {pin!r}")
    if pin == "none":
        return None
    cpus = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    if pin == "apart" and len(cpus) < 2:
        raise ValueError(
            f"pin 'apart' needs two CPUs, this process may run on {len(cpus)}: {cpus}"
        )
    return {"server": {cpus[0]}, "client": {cpus[1] if pin == "apart" else cpus[0]}}


def _affinity(cpus: set[int] | None) -> Any:
    """A ``preexec_fn`` that puts the child on ``cpus`` before it runs the program (``exec``
    keeps the affinity, also through ``ip netns exec``), or ``None``."""
    if cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def cc_name_ok(name: str) -> bool:
    """Whether ``name`` may be a congestion-control name: ASCII letters, digits and ``_``, 1..15.

    >>> cc_name_ok("cubic"), cc_name_ok("cubic; rm"), cc_name_ok("")
    (True, False, False)
    """
    return name.isascii() and name.isidentifier() and len(name) <= CC_NAME_MAX


class HarnessError(RuntimeError):
    """A run failed: a process reported an error, hung past its limit, or printed no report."""


def _is_int(value: object) -> bool:
    """An integer, not a ``bool`` (``True`` is an ``int`` to Python, not a count).

    >>> _is_int(8), _is_int(True), _is_int(8.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class RunSpec:
    """One measurement.

    Parameters
    ----------
    proto
        ``"flory"`` (8-byte request, 8-byte descriptor + payload) or ``"iscsi"`` (48 + 48 + payload).
    sock
        Server socket mode: ``nagle``, ``nodelay``, ``more``, ``more_nodelay`` or ``more_all``.
    qd
        Requests the client keeps outstanding (1..4096).
    payload_bytes
        Bytes of data after each response header (Flory's N, iSCSI's IOSIZE), 0..4 MiB.
    duration_s
        Measurement window after the warm-up, seconds.
    warmup_s
        Operations completing in the first ``warmup_s`` seconds are not counted.
    count
        Upper bound on operations (the client stops at whichever limit comes first).
    cc
        Congestion control set per socket with ``TCP_CONGESTION`` (``None``: the namespace default).
    client_cc
        The client socket's congestion control when it differs from the server's (``None``:
        ``cc`` on both; the sweeps' tables record one ``cc`` per run and never set this).
    client_sock
        Client socket mode: ``nagle`` (default socket) or ``nodelay``.
    cc_log_every
        Read the server socket's congestion state before every ``cc_log_every``-th response
        (``qdperf server --cc-log-every``: its report gains ``cc_log``); 0 (default): never.
    capture
        ``True`` capture with tcpdump (fail if impossible), ``False`` never, ``None`` if available.
    pin
        Where the two processes run: ``none`` (the scheduler decides), ``same`` (both on the
        first CPU this process may use), ``apart`` (server on the first, client on the second).
    """

    proto: str = "iscsi"
    sock: str = "nagle"
    qd: int = 1
    payload_bytes: int = 512
    duration_s: float = 2.0
    warmup_s: float = 0.3
    count: int = 10_000_000
    cc: str | None = None
    client_cc: str | None = None
    client_sock: str = "nagle"
    cc_log_every: int = 0
    capture: bool | None = None
    pin: str = "none"

    def __post_init__(self) -> None:
        if self.pin not in PIN_MODES:
            raise ValueError(f"pin must be one of {PIN_MODES}, got {self.pin!r}")
        if self.proto not in PROTOCOLS:
            raise ValueError(f"proto must be one of {sorted(PROTOCOLS)}, got {self.proto!r}")
        if self.sock not in SOCK_MODES:
            raise ValueError(f"sock must be one of {SOCK_MODES}, got {self.sock!r}")
        if self.client_sock not in CLIENT_SOCK_MODES:
            raise ValueError(
                f"client_sock must be one of {CLIENT_SOCK_MODES}, got {self.client_sock!r}"
            )
        if not _is_int(self.qd) or not 1 <= self.qd <= QD_MAX:
            raise ValueError(f"qd must be an integer 1..{QD_MAX}, got {self.qd!r}")
        if not _is_int(self.payload_bytes) or not 0 <= self.payload_bytes <= PAYLOAD_MAX_BYTES:
            raise ValueError(
                f"payload_bytes must be an integer 0..{PAYLOAD_MAX_BYTES}, got {self.payload_bytes!r}"
            )
        if not 0 < self.duration_s <= DURATION_MAX_S:
            raise ValueError(
                f"duration_s must be in (0, {DURATION_MAX_S:g}] seconds, got {self.duration_s!r}"
            )
        if not 0 <= self.warmup_s <= WARMUP_MAX_S:
            raise ValueError(
                f"warmup_s must be in [0, {WARMUP_MAX_S:g}] seconds, got {self.warmup_s!r}"
            )
        if not _is_int(self.count) or not 1 <= self.count <= COUNT_MAX:
            raise ValueError(f"count must be an integer 1..{COUNT_MAX}, got {self.count!r}")
        if not _is_int(self.cc_log_every) or not 0 <= self.cc_log_every <= CC_LOG_EVERY_MAX:
            raise ValueError(
                f"cc_log_every must be an integer 0..{CC_LOG_EVERY_MAX}, got {self.cc_log_every!r}"
            )
        if self.cc is not None and not cc_name_ok(self.cc):
            raise ValueError(
                f"cc must be a congestion control name such as 'cubic', got {self.cc!r}"
            )
        if self.client_cc is not None and not cc_name_ok(self.client_cc):
            raise ValueError(
                "client_cc must be a congestion control name such as 'cubic', "
                f"got {self.client_cc!r}"
            )

    @property
    def header_bytes(self) -> int:
        """Request and response-header size of the protocol, bytes."""
        return PROTOCOLS[self.proto]

    @property
    def response_bytes(self) -> int:
        """Bytes per response, header plus payload."""
        return self.header_bytes + self.payload_bytes

    @property
    def time_limit_s(self) -> float:
        """Hard limit for each process, the warm-up and window and 10 s for connection set-up and the drain."""
        return self.warmup_s + self.duration_s + 10.0


@dataclass
class RunResult:
    """Both sides' reports, the capture summary (or ``None``) and how the run was observed."""

    spec: RunSpec
    link_label: str
    client: dict[str, Any]
    server: dict[str, Any]
    capture_tool: str
    capture_note: str
    capture_summary: dict[str, Any] | None = None
    load_before: list[float] = field(default_factory=list)
    load_after: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    #: CPU time other processes used during the run, percent of all CPUs' time
    #: (``models.measure.sysinfo.other_cpu_pct``); ``nan`` where ``/proc/stat`` is unreadable.
    other_cpu_pct: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["spec"] = asdict(self.spec)
        return d


def _read_port(proc: subprocess.Popen, timeout_s: float) -> int:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    line = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.05)
        if ready:
            line = proc.stdout.readline()
            break
        if proc.poll() is not None:
            break
    if not line.startswith("PORT "):
        rest = proc.stdout.read() if proc.poll() is not None else ""
        if line.startswith(
            "{"
        ):  # the server's own error report, e.g. a congestion control not allowed
            raise HarnessError(f"server failed: {json.loads(line).get('error')}")
        raise HarnessError(f"server did not report its port: {line!r}{rest!r}")
    return int(line.split()[1])


def _last_json(text: str, who: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise HarnessError(f"{who} printed no JSON report: {text[-500:]!r}")


def _kill(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def run_one(
    spec: RunSpec, link: Link, workdir: Path | None = None, keep_pcap: Path | None = None
) -> RunResult:
    """Run ``spec`` once over an entered ``link`` and return both sides' reports.

    Parameters
    ----------
    spec
        What to run.
    link
        An active :class:`~models.measure.netns.Link` (inside its ``with`` block).
    workdir
        Where temporary capture files go (default: a fresh temporary folder, removed afterwards).
    keep_pcap
        If given and a capture is taken, copy the pcap file here.

    Raises
    ------
    HarnessError
        A process failed, printed no report, or ran past its time limit.
    """
    binary = build.qdperf_binary()
    try:
        pins = pin_cpus(spec.pin) or {}
    except ValueError as exc:
        raise HarnessError(str(exc)) from None
    limit = spec.time_limit_s
    cc = ["--cc", spec.cc] if spec.cc else []
    base = ["--proto", spec.proto, "--time-limit", f"{limit:g}"]
    common = [*base, *cc]
    if spec.client_cc:
        client_common = [*base, "--cc", spec.client_cc]
    else:
        client_common = common
    server = client = None
    tmp = tempfile.TemporaryDirectory(prefix="qdm-") if workdir is None else None
    work = Path(tmp.name) if tmp is not None else Path(workdir)  # type: ignore[arg-type]
    load_before = [round(x, 2) for x in os.getloadavg()]
    busy0, own0 = sysinfo.cpu_busy_s(), sysinfo.own_cpu_s()
    t0 = time.monotonic()
    cap_tool, cap_note, cap_summary = "none", "", None
    try:
        server = subprocess.Popen(
            link.prefix("server")
            + [
                str(binary),
                "server",
                "--listen",
                link.server_addr,
                "--port",
                "0",
                "--sock",
                spec.sock,
                *(["--cc-log-every", str(spec.cc_log_every)] if spec.cc_log_every else []),
                *common,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_affinity(pins.get("server")),
        )
        port = _read_port(server, 10.0)
        cap: capture.Capture | None = None
        if spec.capture is not False:
            try:
                cap = capture.Capture(
                    link.prefix("server"),
                    link.iface("server"),
                    port,
                    work / f"run-{port}.pcap",
                    max_packets=2_000_000,
                    max_seconds=limit + 5,
                )
                cap.__enter__()
                cap_tool = "tcpdump"
            except capture.CaptureUnavailable as exc:
                if spec.capture:
                    raise HarnessError(f"capture requested but unavailable: {exc}") from None
                cap, cap_note = None, str(exc)
        try:
            client = subprocess.Popen(
                link.prefix("client")
                + [
                    str(binary),
                    "client",
                    "--connect",
                    link.server_addr,
                    "--port",
                    str(port),
                    "--qd",
                    str(spec.qd),
                    "--iosize",
                    str(spec.payload_bytes),
                    "--duration",
                    f"{spec.duration_s:g}",
                    "--warmup",
                    f"{spec.warmup_s:g}",
                    "--count",
                    str(spec.count),
                    "--client-sock",
                    spec.client_sock,
                    *client_common,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=_affinity(pins.get("client")),
            )
            try:
                c_out, c_err = client.communicate(timeout=limit + 5)
                s_out, s_err = server.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                raise HarnessError(f"run exceeded its time limit of {limit:g} s: {spec}") from None
        finally:
            if cap is not None:
                cap.__exit__(None, None, None)
        c_rep = _last_json(c_out, f"client ({c_err.strip()})")
        s_rep = _last_json(s_out, f"server ({s_err.strip()})")
        for who, rep in (("client", c_rep), ("server", s_rep)):
            if rep.get("error"):
                raise HarnessError(f"{who} failed: {rep['error']} ({spec})")
        if cap is not None:
            segs = cap.segments()
            cap_summary = capture.analyze(segs, port, spec.header_bytes, spec.response_bytes)
            if keep_pcap is not None:
                Path(keep_pcap).write_bytes(cap.path.read_bytes())
    finally:
        _kill(client)
        _kill(server)
        if tmp is not None:
            tmp.cleanup()
    wall_s = time.monotonic() - t0
    other = sysinfo.other_cpu_pct(
        (busy0, sysinfo.cpu_busy_s()), (own0, sysinfo.own_cpu_s()), wall_s
    )
    return RunResult(
        spec=spec,
        link_label=link.spec.label,
        client=c_rep,
        server=s_rep,
        capture_tool=cap_tool,
        capture_note=cap_note,
        capture_summary=cap_summary,
        load_before=load_before,
        load_after=[round(x, 2) for x in os.getloadavg()],
        wall_s=round(wall_s, 3),
        other_cpu_pct=other,
    )

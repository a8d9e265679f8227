"""Read a packetdrill script: the subset :mod:`models.sim.packetdrill` runs.

A script is a list of timed events, one a line (packetdrill's own syntax,
google/packetdrill).  Comments are ``// ...`` to the end of the line and
``/* ... */`` (which may span lines); a leading ``--name=value`` line sets
an option (only ``--tolerance_usecs`` and ``--tolerance_percent``).  Each event line is ``TIME EVENT``:

* ``TIME`` is absolute seconds (``0.100``), relative to the previous
  event (``+0.040``, ``+.1``) or ``*`` (an outbound segment at any time);
* ``EVENT`` is an inbound segment ``< FLAGS START:END(LEN) [ack N] [win N]
  [<options>]`` (the script plays the peer), an outbound expectation
  ``> FLAGS START:END(LEN) [ack N] [<options>]`` (what the simulated local
  socket must send), a system call ``name(args) = result [ERRNO [(text)]]``
  or a shell command in backticks (only the two this module knows,
  :data:`COMMANDS`).

Anything else (time ranges, blocking calls ``...``, other calls, other
options, SACK blocks, code blocks) raises :class:`ScriptError` naming the
file and line: a script is never half-read.

>>> s = parse_script('''
... 0   socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
... +.1 < P. 1:1001(1000) ack 1 win 500
... *   > . 1:1(0) ack 1001
... ''', name="x.pkt")
>>> [(e.line, type(e).__name__, e.time) for e in s.events]
[(2, 'Syscall', Time(kind='abs', seconds=Fraction(0, 1))), \
(3, 'Packet', Time(kind='rel', seconds=Fraction(1, 10))), \
(4, 'Packet', Time(kind='any', seconds=Fraction(0, 1)))]
>>> s.events[1].flags, s.events[1].start, s.events[1].end, s.events[1].ack
('P.', 1, 1001, 1)
>>> parse_script("0 getsockopt(3, SOL_SOCKET, SO_ERROR, [0], [4]) = 0", name="y.pkt")
Traceback (most recent call last):
...
models.sim.packetdrill.parser.ScriptError: y.pkt:1: unsupported system call 'getsockopt' \
(supported: accept, bind, close, connect, fcntl, listen, read, recv, send, setsockopt, \
socket, write)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

__all__ = [
    "ScriptError",
    "Time",
    "TcpOptions",
    "Packet",
    "Syscall",
    "Command",
    "Event",
    "Script",
    "COMMANDS",
    "SYSCALLS",
    "parse_script",
    "parse_file",
]

#: The system calls the runner knows.
SYSCALLS = (
    "accept",
    "bind",
    "close",
    "connect",
    "fcntl",
    "listen",
    "read",
    "recv",
    "send",
    "setsockopt",
    "socket",
    "write",
)

#: The shell commands (in backticks) the runner knows, as patterns: the
#: autocorking sysctl, and a ``tbf`` qdisc on packetdrill's tun device
#: (rate in bits per second with an optional k/m/g prefix, burst in
#: bytes with an optional k/m prefix).
COMMANDS = {
    "sysctl": re.compile(r"sysctl -q net\.ipv4\.tcp_autocorking=(?P<value>[01])"),
    "tbf": re.compile(
        r"tc qdisc (?:add|replace) dev tun0 root tbf rate (?P<rate>\d+)(?P<rate_unit>[kmg]?)bit"
        r" burst (?P<burst>\d+)(?P<burst_unit>[km]?)b?"
        r"(?: (?:latency \d+(?:ms|us)|limit \d+[km]?b?))?"
    ),
}

_FLAGS = ("S", "S.", ".", "P.", "F.", "FP.", "P", "F")
_OPTION_RE = re.compile(r"^--(?P<name>[a-z_]+)=(?P<value>\S+)$")
_TIME_RE = re.compile(r"^(?P<plus>\+)?(?P<num>\d+(?:\.\d*)?|\.\d+)$")
_SEQ_RE = re.compile(r"^(?P<start>\d+):(?P<end>\d+)\((?P<len>\d+)\)$")
_CALL_RE = re.compile(r"^(?P<name>[a-z_]+)\((?P<args>.*)\)\s*=\s*(?P<ret>-?\d+)(?P<rest>.*)$")
_ERRNO_RE = re.compile(r"^\s*(?:(?P<errno>E[A-Z]+)\s*\([^)]*\))?\s*(?:\([^)]*\))?\s*$")


class ScriptError(ValueError):
    """A script the runner cannot run: unsupported or malformed syntax, or
    a state the simulator cannot represent.  The message starts with
    ``file:line:``."""

    def __init__(self, name: str, line: int, message: str) -> None:
        super().__init__(f"{name}:{line}: {message}")
        self.name = name
        self.line = line
        self.reason = message


@dataclass(frozen=True)
class Time:
    """When an event happens: ``kind`` is ``"abs"`` (``seconds`` after
    the script's start), ``"rel"`` (``seconds`` after the previous
    event) or ``"any"`` (an outbound segment at whatever time it
    leaves)."""

    kind: str
    seconds: Fraction


@dataclass(frozen=True)
class TcpOptions:
    """The TCP options of a segment that matter to the runner: the MSS
    (bytes), the window scale shift, whether timestamps and SACK are
    offered; ``any`` for ``<...>``."""

    mss: int | None = None
    wscale: int | None = None
    timestamps: bool = False
    sack_ok: bool = False
    any: bool = False


@dataclass(frozen=True)
class Packet:
    """A segment line: ``inbound`` (``<``, sent by the script's peer) or
    outbound (``>``, expected from the local socket).  Sequence numbers
    are relative (packetdrill's default): the initial sequence number
    is 0, the first data byte 1; ``win`` is in bytes before scaling."""

    line: int
    time: Time
    inbound: bool
    flags: str
    start: int
    end: int
    ack: int | None
    win: int | None
    options: TcpOptions | None
    text: str

    @property
    def length(self) -> int:
        """Payload bytes."""
        return self.end - self.start

    def describe(self) -> str:
        """The segment as packetdrill prints it (without options)."""
        ack = f" ack {self.ack}" if self.ack is not None else ""
        win = f" win {self.win}" if self.win is not None else ""
        return f"{self.flags} {self.start}:{self.end}({self.length}){ack}{win}"


@dataclass(frozen=True)
class Syscall:
    """A system call with its arguments (as written) and the expected
    result (``errno`` as a name, or ``None``)."""

    line: int
    time: Time
    name: str
    args: tuple[str, ...]
    result: int
    errno: str | None
    text: str


@dataclass(frozen=True)
class Command:
    """A shell command in backticks: ``kind`` is a key of
    :data:`COMMANDS` and ``values`` its parsed fields."""

    line: int
    time: Time
    kind: str
    values: dict
    text: str


Event = Packet | Syscall | Command


@dataclass
class Script:
    """A parsed script: its ``name`` (for messages), the option values it
    set and its events in order."""

    name: str
    events: list[Event] = field(default_factory=list)
    options: dict = field(default_factory=dict)
    header: str = ""


def _strip_comments(text: str, name: str) -> list[tuple[int, str]]:
    """Lines (1-based number, text without comments), blank ones dropped."""
    out = []
    in_block = False
    block_start = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        line = ""
        i = 0
        while i < len(raw):
            if in_block:
                j = raw.find("*/", i)
                if j < 0:
                    i = len(raw)
                    break
                in_block = False
                i = j + 2
                continue
            if raw.startswith("//", i):
                break
            if raw.startswith("/*", i):
                in_block = True
                block_start = no
                i += 2
                continue
            line += raw[i]
            i += 1
        if line.strip():
            out.append((no, line.strip()))
    if in_block:
        raise ScriptError(name, block_start, "unterminated /* comment")
    return out


def _header(text: str) -> str:
    """The leading comment lines of a script, without the markers."""
    lines = []
    for raw in text.splitlines():
        s = raw.strip()
        if s.startswith("//"):
            lines.append(s[2:].strip())
        elif not s and lines:
            break
        elif s:
            break
    return "\n".join(lines)


def _parse_time(token: str, name: str, no: int) -> Time:
    if token == "*":
        return Time("any", Fraction(0))
    if "~" in token:
        raise ScriptError(name, no, f"time ranges are not supported: {token!r}")
    if "..." in token:
        raise ScriptError(name, no, f"blocking system calls ('...') are not supported: {token!r}")
    m = _TIME_RE.match(token)
    if m is None:
        raise ScriptError(name, no, f"bad time {token!r} (expected 0.1, +0.1, +.1 or *)")
    return Time("rel" if m["plus"] else "abs", Fraction(m["num"]))


def _parse_options(text: str, name: str, no: int) -> TcpOptions:
    """``<mss 1000,sackOK,TS val 1 ecr 0,nop,wscale 7>`` without brackets."""
    body = text.strip()
    if body == "...":
        return TcpOptions(any=True)
    mss = wscale = None
    ts = sack = False
    for part in (p.strip() for p in body.split(",")):
        words = part.split()
        if not words:
            raise ScriptError(name, no, f"empty TCP option in <{text}>")
        kind = words[0]
        if kind in ("nop", "eol") and len(words) == 1:
            continue
        if kind == "sackOK" and len(words) == 1:
            sack = True
        elif kind == "mss" and len(words) == 2 and words[1].isdigit():
            mss = int(words[1])
        elif kind == "wscale" and len(words) == 2 and words[1].isdigit():
            wscale = int(words[1])
        elif (
            kind == "TS"
            and len(words) == 5
            and words[1] == "val"
            and words[3] == "ecr"
            and words[2].isdigit()
            and words[4].isdigit()
        ):
            ts = True
        elif kind == "sack":
            raise ScriptError(name, no, "SACK blocks are not supported (no loss in the simulator)")
        else:
            raise ScriptError(name, no, f"unsupported TCP option {part!r}")
    return TcpOptions(mss=mss, wscale=wscale, timestamps=ts, sack_ok=sack)


def _parse_packet(rest: str, time: Time, name: str, no: int, text: str) -> Packet:
    inbound = rest[0] == "<"
    body = rest[1:].strip()
    options = None
    if "<" in body:
        i = body.index("<")
        if not body.endswith(">"):
            raise ScriptError(name, no, "TCP options must end the line: '<...>'")
        options = _parse_options(body[i + 1 : -1], name, no)
        body = body[:i].strip()
    tokens = body.split()
    if len(tokens) < 2:
        raise ScriptError(name, no, f"a segment needs flags and START:END(LEN): {rest!r}")
    flags, seq = tokens[0], tokens[1]
    if flags.startswith("["):
        raise ScriptError(name, no, f"IP-level fields are not supported: {flags!r}")
    if flags not in _FLAGS:
        raise ScriptError(
            name, no, f"unsupported TCP flags {flags!r} (supported: {', '.join(_FLAGS)})"
        )
    m = _SEQ_RE.match(seq)
    if m is None:
        raise ScriptError(name, no, f"bad sequence range {seq!r} (expected START:END(LEN))")
    start, end, length = int(m["start"]), int(m["end"]), int(m["len"])
    if end - start != length or end < start:
        raise ScriptError(name, no, f"sequence range {seq!r}: END - START must equal LEN")
    ack = win = None
    i = 2
    while i < len(tokens):
        key = tokens[i]
        if key in ("ack", "win") and i + 1 < len(tokens) and tokens[i + 1].isdigit():
            if key == "ack":
                ack = int(tokens[i + 1])
            else:
                win = int(tokens[i + 1])
            i += 2
        else:
            raise ScriptError(name, no, f"unsupported segment field {key!r}")
    if "." in flags and ack is None and inbound:
        raise ScriptError(name, no, "an inbound segment with the ACK flag '.' needs 'ack N'")
    if "." not in flags and ack is not None:
        raise ScriptError(name, no, f"'ack {ack}' on a segment without the ACK flag '.'")
    return Packet(no, time, inbound, flags, start, end, ack, win, options, text)


def _split_args(text: str) -> tuple[str, ...]:
    """Arguments split on top-level commas (brackets nest)."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur.strip())
    return tuple(args)


def _parse_syscall(rest: str, time: Time, name: str, no: int, text: str) -> Syscall:
    m = _CALL_RE.match(rest)
    if m is None:
        word = rest.split("(")[0].strip()
        if re.fullmatch(r"[a-z_]+", word) and word not in SYSCALLS:
            raise ScriptError(
                name, no, f"unsupported system call {word!r} (supported: {', '.join(SYSCALLS)})"
            )
        raise ScriptError(name, no, f"bad system call {rest!r} (expected name(args) = result)")
    call = m["name"]
    if call not in SYSCALLS:
        raise ScriptError(
            name, no, f"unsupported system call {call!r} (supported: {', '.join(SYSCALLS)})"
        )
    e = _ERRNO_RE.match(m["rest"])
    if e is None:
        raise ScriptError(
            name,
            no,
            f"bad result {m['rest'].strip()!r} after '= {m['ret']}' (an errno needs its text, as "
            "packetdrill requires: '= -1 EAGAIN (Resource temporarily unavailable)')",
        )
    return Syscall(no, time, call, _split_args(m["args"]), int(m["ret"]), e["errno"], text)


def _parse_command(rest: str, time: Time, name: str, no: int, text: str) -> Command:
    if not rest.endswith("`") or len(rest) < 2:
        raise ScriptError(name, no, "a shell command must be closed by a backtick")
    cmd = " ".join(rest[1:-1].split())
    for kind, pattern in COMMANDS.items():
        m = pattern.fullmatch(cmd)
        if m is not None:
            return Command(no, time, kind, m.groupdict(), text)
    raise ScriptError(
        name,
        no,
        f"unsupported shell command `{cmd}` (supported: sysctl -q net.ipv4.tcp_autocorking=0|1,"
        " tc qdisc add dev tun0 root tbf rate R burst B [latency L|limit N])",
    )


def parse_script(text: str, name: str = "<script>") -> Script:
    """Parse the text of a script; ``name`` prefixes error messages.

    Raises
    ------
    ScriptError
        For any line outside the supported subset, with its number.
    """
    script = Script(name=name, header=_header(text))
    lines = _strip_comments(text, name)
    for no, line in lines:
        opt = _OPTION_RE.match(line)
        if opt is not None:
            if script.events:
                raise ScriptError(name, no, "options must come before the first event")
            key, value = opt["name"], opt["value"]
            if key == "tolerance_usecs" and value.isdigit():
                script.options[key] = int(value)
            elif key == "tolerance_percent" and re.fullmatch(r"\d+(\.\d*)?", value):
                script.options[key] = float(value)
            else:
                raise ScriptError(
                    name,
                    no,
                    f"unsupported option {line!r} (supported: --tolerance_usecs=N, "
                    "--tolerance_percent=P)",
                )
            continue
        if line.startswith("%{") or line.startswith("{"):
            raise ScriptError(name, no, "code blocks are not supported")
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise ScriptError(name, no, f"an event needs a time and an action: {line!r}")
        time = _parse_time(parts[0], name, no)
        rest = parts[1].strip()
        if rest.startswith("..."):
            raise ScriptError(name, no, "blocking system calls ('...') are not supported")
        event: Event
        if rest[0] in "<>":
            event = _parse_packet(rest, time, name, no, line)
            if time.kind == "any" and event.inbound:
                raise ScriptError(name, no, "'*' is only allowed on outbound segments")
        elif rest[0] == "`":
            event = _parse_command(rest, time, name, no, line)
        else:
            event = _parse_syscall(rest, time, name, no, line)
        if time.kind == "any" and not isinstance(event, Packet):
            raise ScriptError(name, no, "'*' is only allowed on outbound segments")
        script.events.append(event)
    if not script.events:
        raise ScriptError(name, 1, "the script has no events")
    return script


def parse_file(path: str | Path) -> Script:
    """Parse the script in ``path`` (errors name the file)."""
    p = Path(path)
    return parse_script(p.read_text(encoding="utf-8"), name=str(p))

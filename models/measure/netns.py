"""Where the server and client run: host loopback, a private loopback, or a veth pair between namespaces.

Three kinds of :class:`Link`, all context managers:

``loopback`` (``isolate=False``)
    The host's ``lo`` at 127.0.0.1.  Needs no privileges.  Kernel counters (``/proc/net/netstat``) are
    shared with every other program on the host, so counter deltas are only indicative.
``loopback`` (``isolate=True``, root only)
    ``lo`` inside a fresh network namespace: same interface (MTU 65536), but its own TCP sysctls and
    counters.
``veth``  (root only)
    Two fresh namespaces, server and client, joined by a veth pair with private addresses
    (10.213.0.1 and 10.213.0.2, which exist only inside those namespaces), a chosen MTU, an optional
    ``tbf`` rate limit on both egress sides (to emulate a 1 Gb/s wire), and optionally TSO/GSO/GRO off.

Everything created is removed on exit, on an exception, on Ctrl-C (SIGINT), SIGTERM and SIGHUP (see
:func:`install_signal_handlers`), and at interpreter exit; deleting a namespace deletes its veth end and
qdiscs with it.  Names carry the creating process's id and start time (``qdm<pid>-<start>-<n>s``,
``<start>`` in clock ticks after boot, as in ``/proc/<pid>/stat``), so a namespace whose creator is
gone, killed with SIGKILL say, is recognised even if its pid has been reused: every link that
creates namespaces first removes such leftovers (:func:`cleanup_stale`), as does
``python -m models.measure cleanup``.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from .. import framing

__all__ = [
    "LinkSpec",
    "Link",
    "is_root",
    "install_signal_handlers",
    "cleanup_stale",
    "live_namespaces",
    "owner_alive",
    "PREFIX",
    "veth_names",
    "veth_side",
]

#: Prefix of every namespace and interface name this module creates.
PREFIX = "qdm"
#: Bounds of a veth link's MTU, bytes (68: the IPv4 minimum; 65535: the largest a veth accepts).
MTU_MIN, MTU_MAX = 68, 65535
#: Bounds of a tbf rate limit, bits per second (1 Mb/s to 100 Gb/s).
RATE_MIN_BITS_PER_S, RATE_MAX_BITS_PER_S = 10**6, 10**11
SERVER_ADDR = "10.213.0.1"
CLIENT_ADDR = "10.213.0.2"
_counter = itertools.count()
_live: dict[str, Link] = {}
#: A veth end's name as :func:`veth_names` makes it (the side's letter between the numbers).
_VETH_NAME = re.compile(r"qd\d+(?P<side>[sc])\d+")


def veth_names(number: int, pid: int | None = None) -> tuple[str, str]:
    """The server's and the client's end of veth pair ``number`` made by process ``pid`` (this
    one by default); at most 15 characters each, as interface names must be.

    >>> veth_names(0, pid=4242)
    ('qd4242s0', 'qd4242c0')
    >>> veth_side("qd4242c0"), veth_side("eth0")
    ('client', None)
    """
    pid = os.getpid() if pid is None else pid
    stem = f"qd{pid % 10_000_000}"
    return f"{stem}s{number}"[:15], f"{stem}c{number}"[:15]


def veth_side(name: str) -> str | None:
    """``"server"`` or ``"client"`` for an interface named by :func:`veth_names`, else ``None``
    (a tracing tool's way to tell the ends of a harness run's pair apart)."""
    m = _VETH_NAME.fullmatch(name)
    if m is None:
        return None
    return "server" if m["side"] == "s" else "client"


def is_root() -> bool:
    """True when the process may create namespaces (effective uid 0)."""
    return os.geteuid() == 0


def _ip() -> str:
    ip = shutil.which("ip")
    if ip is None:
        raise RuntimeError(
            "the 'ip' command (iproute2) is needed for namespaces; apt-get install iproute2"
        )
    return ip


def _run(argv: list[str], timeout: float = 20.0) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


@dataclass(frozen=True)
class LinkSpec:
    """What kind of path the TCP connection takes.

    Parameters
    ----------
    kind
        ``"loopback"`` or ``"veth"``.
    mtu
        Veth MTU in bytes (68..65535); must be ``None`` for loopback, whose MTU the kernel fixes
        (65536).
    rate_bits_per_s
        Token-bucket rate limit on both veth egress sides, bits per second, 1e6..1e11 (``None``:
        no limit).
    isolate
        Loopback only: run inside a private namespace (needs root) to isolate sysctls and counters.
    offloads
        Veth only: ``"default"`` keeps the driver's TSO/GSO/GRO, ``"off"`` switches them off so every
        packet on the wire is one TCP segment (as in Butterfield 2017's runs).
    burst_frames
        With a rate limit: the ``tbf`` bucket's depth in full frames (IP packet + Ethernet header),
        :data:`models.framing.TBF_BURST_RANGE`; default :data:`models.framing.TBF_BURST_FRAMES`.
        Any other depth shows in the label (``veth-1500-1g-b10``).
    """

    kind: str = "loopback"
    mtu: int | None = None
    rate_bits_per_s: int | None = None
    isolate: bool = False
    offloads: str = "default"
    burst_frames: int = framing.TBF_BURST_FRAMES

    def __post_init__(self) -> None:
        if self.kind not in ("loopback", "veth"):
            raise ValueError(f"kind must be 'loopback' or 'veth', got {self.kind!r}")
        if self.kind == "veth":
            if self.mtu is None or not MTU_MIN <= int(self.mtu) <= MTU_MAX:
                raise ValueError(
                    f"mtu must be {MTU_MIN}..{MTU_MAX} bytes for a veth link, got {self.mtu!r}"
                )
        elif self.mtu is not None:
            raise ValueError(
                f"mtu cannot be set for loopback (the kernel fixes it), got {self.mtu!r}"
            )
        if self.rate_bits_per_s is not None:
            if self.kind != "veth":
                raise ValueError(
                    "rate_bits_per_s needs kind='veth' (tbf on loopback would slow the host)"
                )
            if not RATE_MIN_BITS_PER_S <= self.rate_bits_per_s <= RATE_MAX_BITS_PER_S:
                raise ValueError(
                    f"rate_bits_per_s must be {RATE_MIN_BITS_PER_S:.0e}..{RATE_MAX_BITS_PER_S:.0e}"
                    f" bits/s, got {self.rate_bits_per_s!r}"
                )
        if self.burst_frames != framing.TBF_BURST_FRAMES:
            if self.rate_bits_per_s is None:
                raise ValueError(
                    "burst_frames needs rate_bits_per_s (it is the depth of the rate limit's "
                    f"token bucket), got burst_frames={self.burst_frames!r} and no rate"
                )
            framing.tbf_burst_bytes(int(self.mtu or 0), self.burst_frames)  # checks the range
        if self.offloads not in ("default", "off"):
            raise ValueError(f"offloads must be 'default' or 'off', got {self.offloads!r}")
        if self.offloads == "off" and self.kind != "veth":
            raise ValueError(
                "offloads='off' needs kind='veth' (the host's lo is not ours to change)"
            )

    @property
    def needs_root(self) -> bool:
        """Whether this link creates namespaces."""
        return self.kind == "veth" or self.isolate

    @property
    def label(self) -> str:
        """Short text such as ``veth-1500-1g`` used in tables and file names."""
        if self.kind == "loopback":
            return "loopback"
        rate = "" if self.rate_bits_per_s is None else f"-{self.rate_bits_per_s / 1e9:g}g"
        off = "-nooffload" if self.offloads == "off" else ""
        burst = framing.burst_suffix(self.burst_frames)
        return f"veth-{self.mtu}{rate}{burst}{off}"


class Link:
    """An active link: addresses, the command prefixes that run a program on each side, and metadata.

    Use as a context manager; :meth:`close` is idempotent and also runs at interpreter exit.
    """

    def __init__(self, spec: LinkSpec) -> None:
        self.spec = spec
        self.server_ns: str | None = None
        self.client_ns: str | None = None
        self.server_iface = "lo"
        self.client_iface = "lo"
        self.server_addr = "127.0.0.1"
        self.client_addr = "127.0.0.1"
        self._created: list[str] = []
        self._closed = False
        self.number = next(_counter)
        self.key = f"{PREFIX}{os.getpid()}-{_start_ticks(os.getpid())}-{self.number}"

    # -- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Link:
        if self.spec.needs_root and not is_root():
            raise PermissionError(
                f"link {self.spec.label!r} creates network namespaces and needs root "
                "(run as root, or use the host loopback)"
            )
        if self.spec.needs_root:
            removed = cleanup_stale()
            if removed:
                print(
                    f"models.measure: removed namespaces left by killed runs: {', '.join(removed)}",
                    file=sys.stderr,
                )
        _live[self.key] = self
        try:
            if self.spec.kind == "loopback" and self.spec.isolate:
                self._make_ns(f"{self.key}l")
                self.server_ns = self.client_ns = f"{self.key}l"
                _run([_ip(), "-n", self.server_ns, "link", "set", "lo", "up"])
            elif self.spec.kind == "veth":
                self._make_veth()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _make_ns(self, name: str) -> None:
        _run([_ip(), "netns", "add", name])
        self._created.append(name)

    def _make_veth(self) -> None:
        spec = self.spec
        ip = _ip()
        s_ns, c_ns = f"{self.key}s", f"{self.key}c"
        self._make_ns(s_ns)
        self._make_ns(c_ns)
        self.server_ns, self.client_ns = s_ns, c_ns
        # interface names: at most 15 characters
        s_if, c_if = veth_names(self.number)
        self.server_iface, self.client_iface = s_if, c_if
        self.server_addr, self.client_addr = SERVER_ADDR, CLIENT_ADDR
        _run(
            [
                ip,
                "link",
                "add",
                s_if,
                "netns",
                s_ns,
                "type",
                "veth",
                "peer",
                "name",
                c_if,
                "netns",
                c_ns,
            ]
        )
        for ns, iface, addr in ((s_ns, s_if, SERVER_ADDR), (c_ns, c_if, CLIENT_ADDR)):
            _run([ip, "-n", ns, "link", "set", "lo", "up"])
            _run([ip, "-n", ns, "link", "set", iface, "mtu", str(spec.mtu)])
            _run([ip, "-n", ns, "addr", "add", f"{addr}/30", "dev", iface])
            _run([ip, "-n", ns, "link", "set", iface, "up"])
            if spec.offloads == "off":
                _run(
                    [
                        ip,
                        "netns",
                        "exec",
                        ns,
                        sys.executable,
                        "-c",
                        f"from models.measure.sysinfo import set_offloads; set_offloads({iface!r}, False)",
                    ]
                )
            if spec.rate_bits_per_s is not None:
                tc = shutil.which("tc")
                if tc is None:
                    raise RuntimeError("the 'tc' command (iproute2) is needed for a rate limit")
                # a bucket of spec.burst_frames full frames (IP packet + Ethernet header), bytes
                assert spec.mtu is not None  # checked when the spec was made
                burst = framing.tbf_burst_bytes(int(spec.mtu), spec.burst_frames)
                _run(
                    [
                        ip,
                        "netns",
                        "exec",
                        ns,
                        tc,
                        "qdisc",
                        "add",
                        "dev",
                        iface,
                        "root",
                        "tbf",
                        "rate",
                        f"{int(spec.rate_bits_per_s)}bit",
                        "burst",
                        str(burst),
                        "latency",
                        "50ms",
                    ]
                )

    def close(self) -> None:
        """Delete every namespace this link created (their veths and qdiscs go with them)."""
        if self._closed:
            return
        self._closed = True
        errors = []
        for name in reversed(self._created):
            res = subprocess.run(
                ["ip", "netns", "del", name], capture_output=True, text=True, timeout=20
            )
            if res.returncode != 0 and name in live_namespaces():
                errors.append(f"{name}: {res.stderr.strip()}")
        self._created.clear()
        _live.pop(self.key, None)
        if errors:
            raise RuntimeError("could not delete namespaces: " + "; ".join(errors))

    # -- use ----------------------------------------------------------------------------------------
    def prefix(self, side: str) -> list[str]:
        """Command prefix that runs a program on ``side`` (``"server"`` or ``"client"``)."""
        if side not in ("server", "client"):
            raise ValueError(f"side must be 'server' or 'client', got {side!r}")
        ns = self.server_ns if side == "server" else self.client_ns
        return [] if ns is None else [_ip(), "netns", "exec", ns]

    def iface(self, side: str) -> str:
        """Interface the ``side`` sends on (``lo`` for loopback)."""
        return self.server_iface if side == "server" else self.client_iface

    def describe(self) -> dict[str, Any]:
        """Sysctls and interface details seen from each side (runs ``models.measure.sysinfo`` there)."""
        out: dict[str, Any] = {
            "label": self.spec.label,
            "kind": self.spec.kind,
            "isolated_netns": self.server_ns is not None,
            "rate_bits_per_s": self.spec.rate_bits_per_s,
            "offloads_setting": self.spec.offloads,
            "tbf_burst_bytes": (
                None
                if self.spec.rate_bits_per_s is None or self.spec.mtu is None
                else framing.tbf_burst_bytes(int(self.spec.mtu), self.spec.burst_frames)
            ),
            "server_addr": self.server_addr,
            "client_addr": self.client_addr,
        }
        for side in ("server", "client"):
            argv = self.prefix(side) + [
                sys.executable,
                "-m",
                "models.measure.sysinfo",
                self.iface(side),
            ]
            env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
            out[side] = (
                json.loads(res.stdout) if res.returncode == 0 else {"error": res.stderr.strip()}
            )
            if self.spec.kind == "loopback":
                break  # one namespace: the client sees the same thing
        return out

    @property
    def mtu(self) -> int:
        """MTU of the server's interface, bytes."""
        try:
            argv = self.prefix("server") + ["cat", f"/sys/class/net/{self.server_iface}/mtu"]
            return int(_run(argv))
        except (RuntimeError, ValueError):
            return int(self.spec.mtu or 65536)


# -- cleanup on signals, at exit, and after SIGKILL -----------------------------------------------


def _close_all() -> None:
    for link in list(_live.values()):
        try:
            link.close()
        except Exception as exc:  # noqa: BLE001 - report and keep cleaning the others
            print(f"models.measure: cleanup: {exc}", file=sys.stderr)


atexit.register(_close_all)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Turn the signal into an exception so every `with Link(...)` and `finally:` runs.
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers() -> None:
    """Make SIGTERM and SIGHUP behave like Ctrl-C (KeyboardInterrupt), so cleanup code runs."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)


def live_namespaces() -> list[str]:
    """Names of every network namespace on the host that this module's prefix could have created."""
    res = subprocess.run([_ip(), "netns", "list"], capture_output=True, text=True, timeout=20)
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX)]


_NAME_RE = re.compile(rf"^{PREFIX}(\d+)-(?:(\d+)-)?")


def _start_ticks(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks after boot, or ``None`` if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces; starttime is field 22
    return int(stat.rsplit(")", 1)[1].split()[19])


def owner_alive(name: str) -> bool:
    """Whether the process that created namespace ``name`` still runs (``True`` for other names).

    The owner is the pid in the name; a name that also records a start time is stale when the
    process with that pid started at another time (the pid was reused).
    """
    m = _NAME_RE.match(name)
    if m is None:
        return True  # not one of ours: never touched
    pid = int(m.group(1))
    start = _start_ticks(pid)
    if start is None:
        return False
    return m.group(2) is None or int(m.group(2)) == start


def cleanup_stale() -> list[str]:
    """Delete namespaces left by harness processes that no longer exist; return their names."""
    removed = []
    for name in live_namespaces():
        m = _NAME_RE.match(name)
        if m is None or owner_alive(name):
            continue
        res = subprocess.run([_ip(), "netns", "del", name], capture_output=True, timeout=20)
        if res.returncode == 0:  # else another harness removed it first
            removed.append(name)
    return removed

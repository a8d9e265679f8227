"""What the kernel and the network interfaces look like: the metadata recorded with every measurement.

Everything here only *reads* (except :func:`set_offloads`, used on interfaces the harness itself created):

* kernel release and version, ``CONFIG_HZ`` (from ``/proc/config.gz`` or ``/boot/config-*``);
* every ``net.ipv4.tcp_*`` sysctl of the *current* network namespace (inside a namespace the TCP sysctls
  are per namespace), plus ``net.core.default_qdisc``, the busy-polling knobs and the socket buffers'
  limits (``rmem_max``, ``wmem_max``);
* per interface: MTU, qdisc, GSO/GRO/TSO limits (``ip -j -d link``), and offload switches read with the
  ``SIOCETHTOOL`` ioctl, so no ``ethtool`` binary is needed;
* CPU count and load averages, and the CPU time the whole machine and this process tree have used
  (:func:`cpu_busy_s`, :func:`own_cpu_s`), from which a run tells how much other work shared it.

``python -m models.measure.sysinfo [IFACE ...]`` prints :func:`namespace_info` as JSON; the runner executes
it inside each namespace with ``ip netns exec``.
"""

from __future__ import annotations

import array
import fcntl
import gzip
import json
import os
import platform
import re
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "kernel_info",
    "hz",
    "tcp_sysctls",
    "interface_info",
    "get_offloads",
    "set_offloads",
    "namespace_info",
    "load_average",
    "cpu_busy_s",
    "own_cpu_s",
    "other_cpu_pct",
    "tool_versions",
]

_SIOCETHTOOL = 0x8946
# struct ethtool_value commands (include/uapi/linux/ethtool.h): (get, set) pairs.
_ETHTOOL = {
    "tx_checksum": (0x16, 0x17),
    "scatter_gather": (0x18, 0x19),
    "tso": (0x1E, 0x1F),
    "gso": (0x23, 0x24),
    "gro": (0x2B, 0x2C),
}


def _config_texts() -> list[str]:
    """The kernel's build configuration texts that can be read (``/proc/config.gz``,
    ``/boot/config-RELEASE``)."""
    texts = []
    cfg = Path("/proc/config.gz")
    if cfg.is_file():
        try:
            texts.append(gzip.decompress(cfg.read_bytes()).decode("utf-8", "replace"))
        except OSError:
            pass
    boot = Path(f"/boot/config-{platform.release()}")
    if boot.is_file():
        texts.append(boot.read_text(errors="replace"))
    return texts


def config_option(name: str) -> str | None:
    """The value of the build option ``name`` (``"y"``, a number, ...), ``"n"`` when the
    configuration says it is not set or leaves it out, ``None`` if no configuration is readable."""
    texts = _config_texts()
    for text in texts:
        m = re.search(rf"^{re.escape(name)}=(.*)$", text, re.M)
        if m:
            return m.group(1)
    return "n" if texts else None


def hz() -> int | None:
    """The kernel's timer frequency ``CONFIG_HZ`` (ticks per second), or ``None`` if no config is readable."""
    value = config_option("CONFIG_HZ")
    return int(value) if value is not None and value.isdigit() else None


def kernel_info() -> dict[str, Any]:
    """Kernel release, ``/proc/version``, ``CONFIG_HZ``, machine and CPU count."""
    try:
        version = Path("/proc/version").read_text().strip()
    except OSError:
        version = platform.version()
    return {
        "release": platform.release(),
        "proc_version": version,
        "config_hz": hz(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages (runnable tasks), rounded to 0.01."""
    return [round(x, 2) for x in os.getloadavg()]


def cpu_busy_s(stat: Path = Path("/proc/stat")) -> float:
    """CPU time all CPUs have spent in user, nice and system mode since boot, seconds.

    Read from the first (``cpu``) line of ``/proc/stat``; interrupt and soft-interrupt time are left
    out, as :func:`own_cpu_s` leaves them out where the kernel accounts them apart from tasks.
    ``nan`` when the file cannot be read (not Linux).
    """
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
        user, nice, system = (int(x) for x in fields[1:4])
    except (OSError, ValueError):
        return float("nan")
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")  # clock ticks -> seconds


def own_cpu_s() -> float:
    """User plus system CPU time of this process and of its children that have been waited for, seconds."""
    import resource  # Unix only; imported here so the module still imports elsewhere

    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def other_cpu_pct(
    busy_s: tuple[float, float], own_s: tuple[float, float], wall_s: float, cpus: int | None = None
) -> float:
    """Share of all CPUs' time that processes other than ours used during an interval, percent.

    Parameters
    ----------
    busy_s
        :func:`cpu_busy_s` at the start and at the end of the interval.
    own_s
        :func:`own_cpu_s` at the start and at the end (every child waited for by then).
    wall_s
        Length of the interval, seconds (> 0).
    cpus
        CPUs of the machine (default: ``os.cpu_count()``).

    The machine's busy time minus our own, over ``wall_s * cpus``, floored at 0 (the two clocks are
    sampled at different grains: a few milliseconds either way). Kernel threads working for us
    (``ksoftirqd``) count as other work.

    >>> other_cpu_pct((100.0, 102.5), (10.0, 12.0), wall_s=2.0, cpus=2)
    12.5
    >>> other_cpu_pct((100.0, 101.0), (10.0, 12.0), wall_s=2.0, cpus=2)
    0.0
    """
    if not wall_s > 0:
        raise ValueError(f"wall_s must be > 0 seconds, got {wall_s!r}")
    n = cpus or os.cpu_count() or 1
    other = (busy_s[1] - busy_s[0]) - (own_s[1] - own_s[0])
    return round(max(0.0, 100.0 * other / (wall_s * n)), 1)


def _read_sysctl(path: Path) -> str | None:
    try:
        return " ".join(path.read_text().split())
    except OSError:
        return None


def tcp_sysctls() -> dict[str, str]:
    """Every readable ``net.ipv4.tcp_*`` sysctl of this network namespace, plus a few ``net.core`` ones."""
    out: dict[str, str] = {}
    base = Path("/proc/sys/net/ipv4")
    for p in sorted(base.glob("tcp_*")):
        v = _read_sysctl(p)
        if v is not None:
            out[f"net.ipv4.{p.name}"] = v
    # rmem_max with tcp_rmem[2] sets a new socket's window scale (tcp_select_initial_window)
    for name in (
        "default_qdisc",
        "busy_poll",
        "busy_read",
        "netdev_max_backlog",
        "rmem_max",
        "wmem_max",
    ):
        v = _read_sysctl(Path("/proc/sys/net/core") / name)
        if v is not None:
            out[f"net.core.{name}"] = v
    return out


def _ethtool_value(ifname: str, cmd: int, value: int | None = None) -> int:
    buf = array.array(
        "I", [cmd, 0 if value is None else value]
    )  # struct ethtool_value {u32 cmd, data}
    addr, _ = buf.buffer_info()
    ifr = struct.pack(
        "16sP16x", ifname.encode()[:15], addr
    )  # struct ifreq: name, then ifr_data pointer
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), _SIOCETHTOOL, ifr)
    return int(buf[1])


def get_offloads(ifname: str) -> dict[str, bool | None]:
    """Offload switches of ``ifname`` (``None`` where the driver does not answer)."""
    out: dict[str, bool | None] = {}
    for name, (get, _set) in _ETHTOOL.items():
        try:
            out[name] = bool(_ethtool_value(ifname, get))
        except OSError:
            out[name] = None
    return out


def set_offloads(
    ifname: str, on: bool, names: tuple[str, ...] = ("tso", "gso", "gro")
) -> dict[str, bool | None]:
    """Switch segmentation/receive offloads of ``ifname`` on or off (needs CAP_NET_ADMIN); return the result."""
    for name in names:
        if name not in _ETHTOOL:
            raise ValueError(f"names: unknown offload {name!r}; known: {sorted(_ETHTOOL)}")
        _ethtool_value(ifname, _ETHTOOL[name][1], 1 if on else 0)
    return get_offloads(ifname)


def interface_info(ifname: str) -> dict[str, Any]:
    """MTU, qdisc, GSO/GRO/TSO size limits (from ``ip -j -d link``) and offload switches of ``ifname``."""
    info: dict[str, Any] = {"name": ifname}
    ip = shutil.which("ip")
    if ip:
        res = subprocess.run(
            [ip, "-j", "-d", "link", "show", "dev", ifname],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if res.returncode == 0 and res.stdout.strip():
            link = json.loads(res.stdout)[0]
            for key in (
                "mtu",
                "qdisc",
                "gso_max_size",
                "gso_max_segs",
                "gro_max_size",
                "tso_max_size",
                "tso_max_segs",
                "txqlen",
            ):
                if key in link:
                    info[key] = link[key]
    if "mtu" not in info:
        try:
            info["mtu"] = int(Path(f"/sys/class/net/{ifname}/mtu").read_text())
        except OSError:
            info["mtu"] = None
    info["offloads"] = get_offloads(ifname)
    tc = shutil.which("tc")
    if tc:
        res = subprocess.run(
            [tc, "qdisc", "show", "dev", ifname], capture_output=True, text=True, timeout=10
        )
        if res.returncode == 0:
            info["tc_qdisc"] = " | ".join(
                line.strip() for line in res.stdout.splitlines() if line.strip()
            )
    return info


def tool_versions() -> dict[str, str | None]:
    """Versions of the external tools the harness may use (``None`` if absent)."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for tool, args in (("tcpdump", ["--version"]), ("ip", ["-V"]), ("tc", ["-V"])):
        path = shutil.which(tool)
        if not path:
            out[tool] = None
            continue
        res = subprocess.run([path, *args], capture_output=True, text=True, timeout=10)
        text = (res.stdout or res.stderr).strip().splitlines()
        out[tool] = text[0] if text else path
    try:
        import dpkt  # noqa: PLC0415 - optional at import time

        out["dpkt"] = dpkt.__version__
    except ImportError:
        out["dpkt"] = None
    return out


def namespace_info(interfaces: tuple[str, ...] = ("lo",)) -> dict[str, Any]:
    """Sysctls and interface details of the current network namespace."""
    return {"sysctls": tcp_sysctls(), "interfaces": {i: interface_info(i) for i in interfaces}}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print(json.dumps(namespace_info(tuple(args) or ("lo",))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The receive buffer's autotuning, the kernel's against the simulator's.

On the fifth machine ``ss`` read both sockets of a few iSCSI-loop runs on a veth pair every 20 ms
(``tools/rcvbuf_ss.py``, :data:`DATASET`): the receive buffer (``skmem``'s ``rb``), ``rcv_space``,
``rcv_rtt`` and ``rcv_ssthresh``, from the first reading after the connection opened to the last
before it closed.  The configurations (:data:`CONFIGS`) are rows of the fifth machine's field
sweep (:data:`models.validation.field5.DATASET`): two fast runs behind a Nagle server (2 and 16
KiB at QD 8 and 16), one stalled on the delayed ACK (512 bytes at QD 1), and two with
``TCP_NODELAY`` on both sockets, one of small responses (512 bytes at QD 1) and one bulk (64 KiB
at QD 64).

The model is chapter 9b's window model (late wake-ups, ``linux-6-rwnd``) on the machine's own
settings (:func:`machine_kernel`: its ``tcp_rmem``, the window scale they give, autotuning as
Linux 6.18 does it), each configuration simulated for as many operations as the kernel's runs
completed (their median), at most :data:`SIM_OPS`: past the start-up in which a fast run's
buffer grows, and no longer than the kernel's run for a slow one (a run stalled on the delayed
ACK reads a window's worth in about five seconds, and then grows its buffer; the kernel's run
ends first).  Compared, per run and side (test rows; nothing here is
fitted): whether the buffer grew at all, and the size it settled at, within a factor of
:data:`FACTOR`.  Why so loose: the buffer is set by the first receive RTT's reads, and goes with
their square (``tcp_rcvbuf_grow``'s room for a sender in slow start), so the kernel's 0.93-ms
RTT estimate (from its timestamps) against the model's window-based one (half that) moves it by
about two.  The check still tells the rules apart: without autotuning (``linux-6-rwnd``) every
fast run fails it (131072 bytes against megabytes), and 6.16's rule (twice the bytes read, no
room for slow start) falls short of every fast client's buffer by more than the factor.

>>> sorted(CONFIGS[0])
['client_sock_mode', 'iosize_bytes', 'link', 'qd', 'sock_mode']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "DATASET",
    "CONFIGS",
    "CONFIG_KEY",
    "FACTOR",
    "SIM_OPS",
    "machine_kernel",
    "field_row",
    "runs",
    "simulation",
    "simulated_buffers",
    "Comparison",
    "compare",
]

DATASET = "kernel6_machine5_rcvbuf_ss"
#: The configurations read, each a row of the fifth machine's field sweep (bbr, veth-1500).
CONFIGS: tuple[dict[str, Any], ...] = tuple(
    {"link": "veth-1500", "sock_mode": s, "client_sock_mode": c, "qd": q, "iosize_bytes": n}
    for s, c, q, n in (
        ("nagle", "nodelay", 8, 2048),
        ("nagle", "nodelay", 16, 16384),
        ("nagle", "nodelay", 1, 512),
        ("nodelay", "nodelay", 1, 512),
        ("nodelay", "nodelay", 64, 65536),
    )
)
#: The columns that name a configuration.
CONFIG_KEY = ("link", "sock_mode", "client_sock_mode", "qd", "iosize_bytes")
#: The settled buffers, kernel's and model's, agree within this factor (see the module).
FACTOR = 2.0
#: The most operations a configuration is simulated for: the client's buffer settles within the
#: first few hundred.
SIM_OPS = 3000


def machine_kernel(sysctls: dict[str, str], base: str = "linux-6.18-rwnd") -> str:
    """The kernel profile ``base`` with a machine's receive buffer: ``tcp_rmem[1]`` to start,
    ``tcp_rmem[2]`` to grow to, and the window scale of the larger of ``tcp_rmem[2]`` and
    ``net.core.rmem_max`` (:func:`~models.sim.rules.rwnd.window_scale`), from ``sysctls`` as a
    sweep's sidecar records them; registered under its own name (returned).

    >>> machine_kernel({"net.ipv4.tcp_rmem": "4096 131072 33554432"})
    'linux-6.18-rwnd'
    >>> machine_kernel({"net.ipv4.tcp_rmem": "4096 131072 6291456"})
    'linux-6.18-rwnd-rmem131072-6291456-ws7'
    """
    import dataclasses

    from models.sim.kernels import PROFILES, register_profile
    from models.sim.rules.rwnd import window_scale

    _, start, most = (int(x) for x in sysctls["net.ipv4.tcp_rmem"].split())
    scale = window_scale(max(most, int(sysctls.get("net.core.rmem_max", 0))))
    p = PROFILES[base]
    if (p.rcv_buf_bytes, p.rcv_buf_max_bytes, p.rcv_wscale) == (start, most, scale):
        return base
    name = f"{base}-rmem{start}-{most}-ws{scale}"
    if name not in PROFILES:
        register_profile(
            dataclasses.replace(
                p, name=name, rcv_buf_bytes=start, rcv_buf_max_bytes=most, rcv_wscale=scale
            )
        )
    return name


def runs(dataset: str = DATASET) -> int:
    """The fewest runs a configuration has in ``dataset`` (a table keyed by :data:`CONFIG_KEY`
    and ``repeat``)."""
    from models import data

    t = data.load(dataset)
    return int(t.groupby(list(CONFIG_KEY)).repeat.nunique().min())


def field_row(cfg: dict[str, Any]) -> dict[str, Any]:
    """The fifth machine's field-sweep row of ``cfg`` under bbr."""
    from models.kernel import load_kernel_run
    from models.validation import field5 as F5

    t = load_kernel_run(prefix=F5.PREFIX).table("iscsi_loop")
    pick = t.cc.eq("bbr")
    for k in CONFIG_KEY:
        pick &= t[k].eq(cfg[k])
    rows = t[pick].to_dict("records")
    if len(rows) != 1:
        raise ValueError(f"no single bbr row of the field sweep for {cfg}: {len(rows)} found")
    return rows[0]


def simulation(
    cfg: dict[str, Any], make: Any, ops: int, kernel: str | None = None
) -> tuple[Any, Any]:
    """``cfg``'s field row simulated for ``ops`` operations with the late wake-ups' host profile
    (:data:`models.validation.field5.PROFILE_LATE`), its scenario made by ``make`` (one of
    field5's scenario functions), on the kernel profile ``kernel`` if given; returns the
    simulation (:class:`models.sim.engine.Simulation`) and its result."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.sim.engine import Simulation
    from models.validation import fidelity as FID
    from models.validation import field5 as F5

    run = load_kernel_run(prefix=F5.PREFIX)
    host = FID.ProfileHost(hostprofile.shipped(F5.PROFILE_LATE))
    sc = make("iscsi_loop", field_row(cfg), host, run.hz).replace(run={"ops": ops})
    sim = Simulation(sc if kernel is None else sc.replace(kernel={"profile": kernel}))
    return sim, sim.run()


def simulated_buffers(cfg: dict[str, Any], kernel: str, ops: int = SIM_OPS) -> dict[str, int]:
    """Each side's receive buffer (bytes) after ``ops`` operations of ``cfg`` simulated as chapter
    9b's window model, on the kernel profile ``kernel``."""
    from models.validation import field5 as F5

    sim, _ = simulation(cfg, F5.window_scenario, ops, kernel)
    out = {}
    for side, ep in (("client", sim.client_ep), ("server", sim.server_ep)):
        space = ep.ack.space
        out[side] = space.buf if space is not None else 0
    return out


@dataclass(frozen=True)
class Comparison:
    """:func:`compare`'s result: ``table``, a row per configuration and side (the kernel's first
    and last buffer, medians over the repeats, the model's settled one, the ratio and the two
    checks, ``grew_right`` and ``within``), and the kernel profile the model ran on."""

    table: Any
    kernel: str


def compare(kernel: str | None = None, data: Any = None) -> Comparison:
    """The kernel's readings (:data:`DATASET`, or ``data``) against the model on ``kernel``
    (default :func:`machine_kernel` of the readings' machine); every row a test."""
    import pandas as pd

    from models import data as D

    readings = D.load(DATASET) if data is None else data
    if kernel is None:
        sweeps = D.describe(DATASET)["measurement"]["sweeps"]
        kernel = machine_kernel(sweeps[-1]["machine"]["sysctls"])
    from models.sim.kernels import PROFILES

    start = PROFILES[kernel].rcv_buf_bytes  # tcp_rmem[1]: a new socket's buffer
    if start is None:
        raise ValueError(f"kernel {kernel!r} keeps no receive buffer (rcv_buf_bytes is None)")
    rows = []
    for cfg in CONFIGS:
        pick = pd.Series(True, index=readings.index)
        for k in CONFIG_KEY:
            pick &= readings[k].eq(cfg[k])
        runs = readings[pick]
        sim = simulated_buffers(cfg, kernel, min(SIM_OPS, int(runs.ops.median())))
        for side, got in runs.groupby("side"):
            first, last = float(got.rb_first.median()), float(got.rb_last.median())
            model = sim[side]
            rows.append(
                {
                    **cfg,
                    "side": side,
                    "role": "test",
                    "kernel_first": first,
                    "kernel_last": last,
                    "model": model,
                    "ratio": model / last,
                    "grew_right": (last > start) == (model > start),
                    "within": 1 / FACTOR <= model / last <= FACTOR,
                }
            )
    return Comparison(pd.DataFrame(rows), kernel)

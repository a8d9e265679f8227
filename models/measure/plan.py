"""The standard sweep's runs: which links, payload sizes, socket modes and queue depths.

:func:`standard_plan` lists the runs: Flory's exchange (8-byte request; 8-byte descriptor and an
N-byte payload as two writes) for N around each link's MSS boundaries, and the iSCSI-like closed loop
at QD 1, 2, 3, 4, 5, 8, 16, 32, 64 for 512, 2048 and 4096 bytes under the four socket modes, on every
link the user may create (host loopback for a normal user; a private loopback and veth pairs at MTU
1500 and 9000, and MTU 1500 rate-limited to 1 Gb/s, for root), plus a congestion-control variant
(cubic).  :func:`models.measure.sweep.run_sweep` runs a plan.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .. import framing
from .netns import LinkSpec, is_root
from .runner import RunSpec

__all__ = [
    "PlannedRun",
    "standard_plan",
    "flory_payloads",
    "ISCSI_QDS",
    "ISCSI_SIZES",
    "BOOK_MODES",
    "LINK_LABELS",
    "field_plan",
    "FIELD_SIZES",
    "FIELD_QDS_NAGLE",
    "FIELD_QDS",
    "PLANS",
    "flory_plan",
    "repeat_plan",
    "pacing_plan",
    "burst_plan",
    "stall_end_plan",
    "STALL_END_QDS",
    "BURST_FRAMES",
    "REPEAT_RUNS",
    "REPEAT_SEED",
    "WARMUP_S",
]

ISCSI_QDS = (1, 2, 3, 4, 5, 8, 16, 32, 64)
ISCSI_SIZES = (512, 2048, 4096)
BOOK_MODES = ("nagle", "nodelay", "more", "more_nodelay")
GIGABIT = 1_000_000_000  # bits per second
#: Warm-up of the Flory and iSCSI-loop runs of the standard and field plans, seconds: the start
#: of each run (the connection's quick ACKs, its receive window and buffer growing, bbr's start-up)
#: that the statistics leave out.  A simulation held to such a row leaves out as much
#: (``models.validation.flory.harness_warmup_ops``).
WARMUP_S = 0.3
#: Ethernet's MTU, bytes: the veth links' default and the MSS boundary Flory measured.
ETHERNET_MTU = 1500
#: Linux 2.4's loopback MTU, bytes (its MSS was 16 KiB).
OLD_LOOPBACK_MTU = 16436
#: The MSS a young loopback connection uses while the peer's window is still small, bytes (32 KiB).
YOUNG_LOOPBACK_MSS = 32 * 1024
#: Every link label a plan may use (root gets all four; a normal user the loopback only).
LINK_LABELS = ("loopback", "veth-1500", "veth-9000", "veth-1500-1g")


#: The field plan's payload sizes, bytes: 512 B to 64 KiB (issue 22's range).
FIELD_SIZES = (512, 2048, 4096, 16384, 65536)
#: Queue depths for a Nagle server, fine at the low end where the stalls end.
FIELD_QDS_NAGLE = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
#: Queue depths for the other server modes.
FIELD_QDS = (1, 2, 4, 8, 16, 32, 64)
#: Client socket modes: the Linux initiator's (open-iscsi sets TCP_NODELAY) and the default.
FIELD_CLIENTS = ("nodelay", "nagle")
#: Congestion-control variants of the field plan, on a subset (the default, bbr here, runs everything).
FIELD_CC_VARIANTS = ("reno", "cubic")
FIELD_CC_SIZES = (512, 4096, 65536)  # bytes
FIELD_CC_QDS = (1, 2, 4, 8, 16, 64)
#: The plans ``python -m models.measure sweep --plan`` knows.
PLANS = ("standard", "field", "flory", "repeat", "pacing", "burst", "stallend")
#: How many field runs the repeat plan measures again, and the seed that picks them.
REPEAT_RUNS = 240
REPEAT_SEED = 22


@dataclass(frozen=True)
class PlannedRun:
    """One run of a sweep: the link it needs and what to run on it."""

    link: LinkSpec
    spec: RunSpec
    table: str  # "flory" or "iscsi"


def _around(mss: int) -> set[int]:
    """One byte below, at, and one byte above ``mss``."""
    return {mss - 1, mss, mss + 1}


def flory_payloads(link: LinkSpec) -> tuple[int, ...]:
    """Flory's payload sizes N (bytes) around the MSS boundaries of ``link``.

    MSS = MTU - 40 (IPv4 + TCP) - 12 (timestamps): 1448 at MTU 1500, 8948 at 9000, 65483 on
    loopback (MTU 65536, capped by the 65535-byte IPv4 packet).  Also the old boundaries (1447/1448
    on loopback, 16383/16384 of the 2.4 loopback, and 32768, the MSS a young loopback connection uses
    while the peer's window is small).
    """
    ethernet = framing.mss(ETHERNET_MTU)  # bytes
    if link.kind == "loopback":
        sizes = {ethernet - 1, ethernet}
        old = framing.mss(OLD_LOOPBACK_MTU)  # bytes
        sizes |= {old - 1, old}
        sizes |= _around(YOUNG_LOOPBACK_MSS)
        sizes |= _around(framing.mss(framing.MAX_MTU))
        return tuple(sorted(sizes))
    assert link.mtu is not None  # a veth link always has an MTU
    mss = framing.mss(int(link.mtu))  # bytes: MTU less 20 IPv4 + 20 TCP + 12 timestamp option
    sizes = _around(mss) | _around(2 * mss) | _around(3 * mss)
    if mss != ethernet:
        sizes |= {ethernet - 1, ethernet}
    return tuple(sorted(sizes))


def _links(root: bool, links: Iterable[str] | None) -> list[LinkSpec]:
    all_links = [LinkSpec("loopback", isolate=root)]
    if root:
        all_links += [
            LinkSpec("veth", mtu=ETHERNET_MTU),
            LinkSpec("veth", mtu=9000),
            LinkSpec("veth", mtu=ETHERNET_MTU, rate_bits_per_s=GIGABIT),
        ]
    if links is None:
        return all_links
    wanted = set(links)
    known = {link.label for link in all_links}
    unknown = wanted - known
    if unknown:
        raise ValueError(
            f"links: unknown or unavailable {sorted(unknown)}; available: {sorted(known)}"
        )
    return [link for link in all_links if link.label in wanted]


def _iscsi_runs(link: LinkSpec, window: float, ccs: list[str | None]) -> list[PlannedRun]:
    plan = []
    for cc in ccs:
        for size in ISCSI_SIZES:
            for mode in BOOK_MODES:
                for qd in ISCSI_QDS:
                    spec = RunSpec(
                        "iscsi",
                        mode,
                        qd,
                        size,
                        duration_s=window,
                        warmup_s=WARMUP_S,
                        cc=cc,
                        capture=False,
                    )
                    plan.append(PlannedRun(link, spec, "iscsi"))
        if cc is None:  # the MSG_MORE misuse (Butterfield 2017: about 200 ms per operation)
            for qd in (1, 2):
                spec = RunSpec(
                    "iscsi",
                    "more_all",
                    qd,
                    512,
                    duration_s=max(window, 1.0),
                    warmup_s=0.5,
                    capture=False,
                )
                plan.append(PlannedRun(link, spec, "iscsi"))
    return plan


def standard_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """The standard sweep.

    Parameters
    ----------
    root
        Whether namespaces may be created (default: the effective uid is 0).  Without root only the
        host loopback is used.
    quick
        Shorter windows (0.5 s instead of 1.5 s) for a trial run of the whole plan.
    links
        Restrict to these link labels (``loopback``, ``veth-1500``, ``veth-9000``, ``veth-1500-1g``).
    cubic
        Add the cubic congestion-control variant of the iSCSI grid on loopback and ``veth-1500-1g``.
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.5  # seconds
    plan: list[PlannedRun] = []
    for link in _links(root, links):
        if link.rate_bits_per_s is None:  # Flory: loopback and the plain veths
            for n in flory_payloads(link):
                for mode in ("nagle", "nodelay"):
                    spec = RunSpec(
                        "flory", mode, 1, n, duration_s=window, warmup_s=WARMUP_S, capture=None
                    )
                    plan.append(PlannedRun(link, spec, "flory"))
        ccs: list[str | None] = [None]
        if cubic and (link.kind == "loopback" or link.rate_bits_per_s) and root:
            ccs.append("cubic")
        plan += _iscsi_runs(link, window, ccs)
    return plan


def _field_run(
    link: LinkSpec, mode: str, client: str, qd: int, size: int, window: float, cc: str | None
) -> PlannedRun:
    spec = RunSpec(
        "iscsi",
        mode,
        qd,
        size,
        duration_s=window,
        warmup_s=WARMUP_S,
        cc=cc,
        client_sock=client,
        capture=False,
    )
    return PlannedRun(link, spec, "iscsi")


def field_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """The field sweep: the configurations the field runs, for fitting and testing a host model.

    Both client socket modes (NODELAY, as the Linux initiator sets it, and Nagle), the four server
    modes, payloads of 512 B to 64 KiB (:data:`FIELD_SIZES`), queue depths 1 to 64 (finer for a
    Nagle server, whose stalls end at low QD), on every link of :func:`standard_plan`, under the
    default congestion control; then reno and cubic on the host loopback's or private loopback's
    and the rate-limited veth's subset (:data:`FIELD_CC_SIZES`, :data:`FIELD_CC_QDS`, Nagle and
    NODELAY servers).  Only the iSCSI-like loop (no Flory runs).  ``cubic=False`` drops the
    reno and cubic variants.  Windows are 1.0 s (0.5 s with ``quick``).
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.0  # seconds
    plan: list[PlannedRun] = []
    for link in _links(root, links):
        for client in FIELD_CLIENTS:
            for size in FIELD_SIZES:
                for mode in BOOK_MODES:
                    qds = FIELD_QDS_NAGLE if mode == "nagle" else FIELD_QDS
                    for qd in qds:
                        plan.append(_field_run(link, mode, client, qd, size, window, None))
        if cubic and (link.kind == "loopback" or link.rate_bits_per_s):
            for cc in FIELD_CC_VARIANTS:
                for client in FIELD_CLIENTS:
                    for size in FIELD_CC_SIZES:
                        for mode in ("nagle", "nodelay"):
                            for qd in FIELD_CC_QDS:
                                plan.append(_field_run(link, mode, client, qd, size, window, cc))
    return plan


def flory_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """Only the Flory runs of :func:`standard_plan` (``cubic`` is accepted and ignored)."""
    return [pr for pr in standard_plan(root, quick, links, cubic=False) if pr.table == "flory"]


def repeat_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """A seeded sample of :func:`field_plan` (:data:`REPEAT_RUNS` runs, seed :data:`REPEAT_SEED`),
    unchanged and in the field plan's order: the same scenarios measured a second time, to see how
    far the kernel repeats itself (an audit of the field table, not a test of any model).

    >>> plan = repeat_plan(root=True)
    >>> len(plan), len({(pr.link.label, pr.spec) for pr in plan})
    (240, 240)
    >>> plan == repeat_plan(root=True)  # the same sample every time
    True
    """
    field = field_plan(root, quick, links, cubic)
    n = min(REPEAT_RUNS, len(field))
    keep = set(random.Random(REPEAT_SEED).sample(range(len(field)), n))
    return [pr for i, pr in enumerate(field) if i in keep]


def pinned(plan: list[PlannedRun], pin: str) -> list[PlannedRun]:
    """``plan`` with every run's processes placed by ``pin`` (``RunSpec.pin``: ``none``, ``same``
    or ``apart``); the runs and their order are unchanged.

    >>> plan = field_plan(root=False, links=["loopback"])
    >>> {pr.spec.pin for pr in pinned(plan, "apart")}, len(pinned(plan, "apart")) == len(plan)
    ({'apart'}, True)
    >>> pinned(plan, "both")
    Traceback (most recent call last):
    ...
    ValueError: pin must be one of ('none', 'same', 'apart'), got 'both'
    """
    return [replace(pr, spec=replace(pr.spec, pin=pin)) for pr in plan]


#: The pacing plan's congestion controls: bbr paces its sends, reno and cubic do not.
PACING_CCS = ("bbr", "reno", "cubic")


def pacing_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """bbr against reno and cubic on the unlimited veth links, where the field plan runs only bbr:
    Nagle and NODELAY servers, a NODELAY client, 4, 16 and 64 KiB, QD 2, 8 and 32 (``cubic`` is
    accepted and ignored; veth needs root, so a normal user gets an empty plan).

    >>> len(pacing_plan(root=True)), len(pacing_plan(root=False))
    (108, 0)
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.0  # seconds
    plan: list[PlannedRun] = []
    for link in _links(root, links):
        if link.kind == "loopback" or link.rate_bits_per_s:
            continue
        for cc in PACING_CCS:
            for size in (4096, 16384, 65536):
                for mode in ("nagle", "nodelay"):
                    for qd in (2, 8, 32):
                        plan.append(_field_run(link, mode, "nodelay", qd, size, window, cc))
    return plan


#: The burst plan's ``tbf`` bucket depths, in full frames: the harness's own (2) to one that holds
#: a 64 KiB response and its headers whole (40 frames of 1514 bytes).
BURST_FRAMES = (2, 4, 10, 40)


def burst_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """The 1 Gb/s veth (MTU 1500) with ``tbf`` buckets of :data:`BURST_FRAMES` full frames: how
    a rate limit's bucket depth moves the rate when its watchdog timer wakes late.  NODELAY server
    and client (no Nagle or cork holds), 4, 16 and 64 KiB, QD 1, 8 and 32, the default congestion
    control.  ``links`` must be ``None`` or include ``veth-1500-1g``; ``cubic`` is accepted and
    ignored; veth needs root, so a normal user gets an empty plan.

    >>> plan = burst_plan(root=True)
    >>> len(plan), sorted({pr.link.label for pr in plan})
    (36, ['veth-1500-1g', 'veth-1500-1g-b10', 'veth-1500-1g-b4', 'veth-1500-1g-b40'])
    >>> len(burst_plan(root=False))
    0
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.0  # seconds
    plan: list[PlannedRun] = []
    for base in _links(root, links):
        if not base.rate_bits_per_s:
            continue
        for frames in BURST_FRAMES:
            link = replace(base, burst_frames=frames)
            for size in (4096, 16384, 65536):
                for qd in (1, 8, 32):
                    plan.append(_field_run(link, "nodelay", "nodelay", qd, size, window, None))
    return plan


#: The stall-end plan's queue depths: every depth where a Nagle server's stall may end, finer than
#: the field plan's (which jumps from 16 to 32 and 64).
STALL_END_QDS = (1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64)


def stall_end_plan(
    root: bool | None = None,
    quick: bool = False,
    links: Iterable[str] | None = None,
    cubic: bool = True,
) -> list[PlannedRun]:
    """Where a Nagle server's delayed-ACK stall ends: a Nagle server, both client modes, 512, 2048
    and 4096 bytes, queue depths :data:`STALL_END_QDS`, on the loopback and the unlimited veth
    links under the default congestion control, and reno on the loopback (``cubic=False`` drops
    reno).  Windows are 1.0 s (0.5 s with ``quick``).

    >>> len(stall_end_plan(root=True)), len(stall_end_plan(root=False))
    (312, 156)
    """
    root = is_root() if root is None else root
    window = 0.5 if quick else 1.0  # seconds
    plan: list[PlannedRun] = []
    for link in _links(root, links):
        if link.rate_bits_per_s:
            continue
        ccs: list[str | None] = [None]
        if cubic and link.kind == "loopback":
            ccs.append("reno")
        for cc in ccs:
            for client in FIELD_CLIENTS:
                for size in (512, 2048, 4096):
                    for qd in STALL_END_QDS:
                        plan.append(_field_run(link, "nagle", client, qd, size, window, cc))
    return plan

"""Chapter 9 figure: a measured kernel beside the packet simulator, IOPS
against queue depth, live in the book (standard library only: it runs in
the browser).

The kernel's runs come from :func:`models.validation.kernel.kernel_tables`
(the bundled run, or ``$QUEUE_DEPTH_KERNEL_RUN``) and reach the page as
plain lists; the simulator's curve is computed by the figure's function,
:func:`kernel_vs_sim`: the row scenario of each measured queue depth
(:func:`models.kernel.row_scenario`, host times fitted once from
the kernel's undelayed runs), plus the two queue depths on each side of the
MSS rule's threshold so the jump shows where it is, with the fitted server
time scaled by a factor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from figures.live import Live, Range, Select
from figures.live.page import legend_below
from models import framing
from models import kernel as KR
from models.sim import get_profile

__all__ = ["MODES", "timer_period_s", "kernel_vs_sim", "kernel_figure", "plot_kernel_vs_sim"]

#: Server socket modes shown, with their labels (qdperf.c ``--sock``).
MODES = {
    "nagle": "Nagle, two send() calls",
    "nodelay": "TCP_NODELAY",
    "more": "MSG_MORE on the header",
    "more_nodelay": "MSG_MORE + TCP_NODELAY",
}
_COLORS = {"bbr": "#d62728", "cubic": "#ff7f0e", "sim": "#1f77b4"}
_LINK_ORDER = ("loopback", "veth-1500", "veth-9000", "veth-1500-1g")


def timer_period_s(hz: int) -> float:
    """The delayed-ACK period of the ``linux-6`` profile with kernel
    timers, seconds: ``(10 + 1) / HZ`` at HZ=250 (``HZ/25`` ticks and the
    timer wheel's round-up)."""
    return get_profile("linux-6").configured(hz=int(hz)).delack_max_s


def _key(link: str, size: int, mode: str) -> str:
    return f"{link}|{int(size)}|{mode}"


def _span(qds: Sequence[int]) -> str:
    if len(qds) > 1:
        return f"QD {qds[0]}-{qds[-1]}"
    return f"QD {qds[0]}" if qds else "never"


def kernel_vs_sim(
    link: str,
    size: int,
    mode: str,
    sp_scale: float,
    links: Mapping[str, Mapping[str, Any]],
    kernel: Mapping[str, Mapping[str, Sequence]],
    qds: Sequence[int],
    host: Mapping[str, float],
    hz: int,
) -> dict:
    """Kernel points and the simulated curve for one link, response size
    and server socket mode, with the fitted server time ``SP`` times
    ``sp_scale``.

    ``links`` maps a link to its ``mtu_bytes`` and
    ``rate_limit_bits_per_s`` (``None``: no limit); ``kernel`` maps
    ``"link|size|mode"`` to ``{cc: [qds, iops, stalled qds]}`` (the
    kernel's runs); ``qds`` are the queue depths simulated when the
    kernel did not run that combination; ``host`` holds the fields of a
    :class:`models.validation.kernel.HostFit`; ``hz`` the kernel's
    ``CONFIG_HZ``.
    """
    if link not in links:
        raise ValueError(f"link must be one of {sorted(links)}, got {link!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if not sp_scale > 0:
        raise ValueError(f"sp_scale must be positive, got {sp_scale!r}")
    fit = KR.HostFit(**host)
    sp_s = fit.sp_s * sp_scale
    measured = kernel.get(_key(link, size, mode), {})
    sim_qds = sorted(
        {int(q) for runs in measured.values() for q in runs[0]} or {int(q) for q in qds}
    )
    threshold = None
    if mode == "nagle":
        mss = framing.mss(int(links[link]["mtu_bytes"]))
        threshold = KR.qd_max_rule(KR.HEADER_BYTES["iscsi"], size, mss)
        top = sim_qds[-1]
        sim_qds = sorted(set(sim_qds) | {q for q in (threshold, threshold + 1) if 1 <= q <= top})
    row = dict(links[link], sock_mode=mode, iosize_bytes=int(size), client_sock_mode="nagle")
    sims = [
        KR.simulate_summary(
            KR.row_scenario("iscsi_loop", dict(row, qd=q), fit, hz).replace(
                server={"proc_s": sp_s}
            )
        )
        for q in sim_qds
    ]
    traces = [
        {
            "x": sim_qds,
            "y": [s.iops for s in sims],
            "name": "simulator (linux-6, kernel timers)",
            "mode": "lines+markers",
            "line": {"color": _COLORS["sim"]},
            "marker": {"size": 5},
        }
    ]
    for cc, (x, y, _) in measured.items():
        traces.append(
            {
                "x": list(x),
                "y": list(y),
                "name": f"kernel 6.x, {cc}",
                "mode": "markers",
                "marker": {
                    "color": _COLORS.get(cc, "#555555"),
                    "size": 9,
                    "symbol": ("circle" if cc == "bbr" else "circle-open"),
                },
            }
        )
    period = timer_period_s(hz)
    qline = list(range(1, 65))
    traces.append(
        {
            "x": qline,
            "y": [(q + 1) / period for q in qline],
            "name": f"(QD + 1) per {period * 1e3:.0f} ms timer period",
            "mode": "lines",
            "line": {"color": "black", "dash": "dot", "width": 1},
        }
    )
    shapes = []
    if threshold:
        t = threshold + 0.5
        shapes.append(
            {
                "type": "line",
                "x0": t,
                "x1": t,
                "yref": "paper",
                "y0": 0,
                "y1": 1,
                "line": {"color": "#2ca02c", "dash": "dash", "width": 1},
            }
        )
    where = f"{link}, {size} B, {MODES[mode]}"
    sim_span = _span([q for q, s in zip(sim_qds, sims) if s.stalls])
    if not measured:
        title = f"{where}: not measured in this run; stalls {sim_span} (simulator)"
    else:
        k = sorted({int(q) for runs in measured.values() for q in runs[2]})
        title = f"{where}: stalls {_span(k)} (kernel), {sim_span} (simulator)"
    if sp_scale != 1:
        title += f"; SP {sp_s * 1e6:.2f} µs"  # s -> µs
    return {"traces": traces, "shapes": shapes, "title": title}


def _plain(value: Any) -> Any:
    """A table value as plain JSON (``None`` for a missing one)."""
    if KR.runs._missing(value):
        return None
    return int(value) if float(value) == int(value) else float(value)


def kernel_figure(tables: tuple | None = None) -> Live:
    """The chapter's main figure: IOPS against QD (log scales) for a link,
    response size and server socket mode of the run, and any scale of the
    fitted server time.

    ``tables`` is :func:`models.validation.kernel.kernel_tables`'s result
    (default: the bundled run or ``$QUEUE_DEPTH_KERNEL_RUN``); its runs go
    to the page as plain lists.  A choice with a single value in the run
    (a normal user's sweep has only loopback) is passed as fixed.
    """
    run, host, _, isc, _ = tables or KR.kernel_tables()
    isc = isc[(isc["client_sock_mode"] == "nagle") & isc["sock_mode"].isin(list(MODES))]
    present = set(isc["link"])
    links = [lk for lk in _LINK_ORDER if lk in present]
    links += sorted(present - set(links))
    sizes = sorted(int(s) for s in set(isc["iosize_bytes"]))
    modes = [m for m in MODES if m in set(isc["sock_mode"])]
    link_opts = {}
    for lk, g in isc.groupby("link"):
        first = g.iloc[0]
        link_opts[lk] = {
            "mtu_bytes": int(first["mtu_bytes"]),
            "rate_limit_bits_per_s": _plain(first["rate_limit_bits_per_s"]),
        }
    kernel: dict[str, dict] = {}
    for (lk, size, mode, cc), h in isc.groupby(
        ["link", "iosize_bytes", "sock_mode", "cc"], sort=False
    ):
        h = h.sort_values("qd")
        kernel.setdefault(_key(lk, size, mode), {})[str(cc)] = [
            [int(q) for q in h["qd"]],
            [float(v) for v in h["iops"]],
            [int(q) for q in h.loc[h["kernel_stalls"], "qd"]],
        ]
    choices = {
        "link": (links, "link", "veth-9000" if "veth-9000" in links else links[0]),
        "size": (sizes, "response data (bytes)", 512 if 512 in sizes else sizes[0]),
        "mode": (modes, "server socket", "nagle" if "nagle" in modes else modes[0]),
    }
    fixed = {
        "links": link_opts,
        "kernel": kernel,
        "qds": sorted(int(q) for q in set(isc["qd"])),
        "host": {
            "rtt1_s": host.rtt1_s,
            "per_op_s": host.per_op_s,
            "n_rtt1": host.n_rtt1,
            "n_per_op": host.n_per_op,
        },
        "hz": int(run.hz),
    }
    controls = []
    for name, (options, label, value) in choices.items():
        if len(options) > 1:
            controls.append(Select(name, label, options, value))
        else:
            fixed[name] = options[0]
    controls.append(
        Range("sp_scale", "server time SP (x fitted)", 0.1, 3, grid=[0.5, 1.0], value=1.0)
    )
    layout = legend_below(
        {
            "xaxis": {
                "title": {"text": "queue depth QD"},
                "type": "log",
                "range": [-0.05, 1.86],
                "tickvals": [1, 2, 3, 4, 5, 8, 16, 32, 64],
            },
            "yaxis": {"title": {"text": "IOPS (log scale)"}, "type": "log", "range": [1, 5.6]},
            "margin": {"t": 40, "r": 10, "b": 45, "l": 60},
        }
    )
    n = 2
    for c in controls[:-1]:
        n *= len(c.options)
    period_ms = timer_period_s(run.hz) * 1e3  # s -> ms
    return Live(
        "ch9-kernel-vs-sim",
        kernel_vs_sim,
        controls=controls,
        fixed=fixed,
        layout=layout,
        digits=4,
        caption=(
            f"Points: the kernel's runs from {run.source} (filled "
            "bbr, open cubic). Line: the packet simulator (models.sim) "
            "on the same scenarios, with the host times fitted once "
            "from the kernel's undelayed runs and the server time SP "
            "scaled by the last control. Dashed green: the largest QD "
            "whose responses, less one header, fit in one segment "
            "(the queue can stall up to there). Dotted: QD + 1 "
            f"operations per {period_ms:.0f} ms timer period. {n} "
            f"points ({' x '.join(c.label for c in controls)}) were "
            "computed when the book was built."
        ),
    )


def plot_kernel_vs_sim(
    link: str = "veth-9000",
    size: int = 512,
    mode: str = "nagle",
    ax=None,
    tables: tuple | None = None,
):
    """The static version of the live figure at one link, size and mode
    with the fitted server time (Matplotlib; the same function's
    numbers)."""
    import matplotlib.pyplot as plt

    live = kernel_figure(tables)
    names = {c.name for c in live.controls}
    values = {k: v for k, v in (("link", link), ("size", size), ("mode", mode)) if k in names}
    frame = live.evaluate(**values)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    sim, *rest = frame["traces"]
    ax.plot(sim["x"], sim["y"], "o-", ms=4, color=_COLORS["sim"], label=sim["name"])
    for trace in rest[:-1]:  # the kernel's runs
        cc = trace["name"].rsplit(", ", 1)[-1]
        color = _COLORS.get(cc, "#555555")
        ax.plot(
            trace["x"],
            trace["y"],
            "o",
            ms=8,
            mfc=color if cc == "bbr" else "none",
            mec=color,
            label=trace["name"],
        )
    ax.plot(rest[-1]["x"], rest[-1]["y"], "k:", lw=1, label=rest[-1]["name"])
    for shape in frame["shapes"]:
        q = shape["x0"] - 0.5
        ax.axvline(
            shape["x0"],
            color="#2ca02c",
            ls="--",
            lw=1,
            label=f"MSS rule: stalls possible up to QD {q:.0f}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [1, 2, 3, 4, 5, 8, 16, 32, 64]
    ax.set_xticks(ticks, labels=[str(t) for t in ticks])
    ax.set_xlabel("queue depth QD")
    ax.set_ylabel("IOPS")
    ax.set_title(f"{link}, {size}-byte reads, {MODES[mode]}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3, which="both")
    return ax

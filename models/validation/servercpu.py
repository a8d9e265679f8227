"""Where a Nagle server's CPU goes behind a ``TCP_NODELAY`` client, the kernel's and the models'.

In the fifth machine's field sweep the window's models run 1.2-2 times the kernel's rate with a
Nagle server behind a NODELAY client on veth-1500 under bbr, at 2-16 KiB and QD 3 and more
(chapter 9b), where the late-wake-up model on ``linux-6`` is about 1.2 times too fast.  The
server's CPU is the bottleneck there: the kernel's server thread never sleeps (its harness
counts a few hundred wake-ups in tens of thousands of operations).  ``tools/pacing_cpu_sweep.py``
counted, on the same machine, bbr's pacing timer and each CPU's time per operation in some of
those configurations (:data:`CONFIGS`, dataset :data:`DATASET`): the pacing timer, whose every
firing costs this machine's CPU about 17 us (the profile's ``timer_arm_cpu_s`` and
``timer_fire_cpu_s``), is most of the difference between a Nagle server and a NODELAY one.  Four
more configurations have a server that writes the header with ``MSG_MORE`` (behind either
client, QD 8), where every model of the field table runs well above the kernel's rate: the
kernel paces that server too, the models much less at 2 KiB.

:func:`compare` sets each model's pacing timers per operation (the server's bbr, simulated as
chapter 9b simulates the row) beside the kernel's: every row a test, a count right within
:data:`ARMS_TOL` timers per operation (the kernel's repeats agree within a few hundredths; a
tenth is where the timer's cost changes a rate by more than a few percent).

>>> sorted(CONFIGS[0])
['client_sock_mode', 'iosize_bytes', 'link', 'qd', 'sock_mode']
"""

from __future__ import annotations

from typing import Any

from models.validation.rcvbuf import CONFIG_KEY

__all__ = [
    "DATASET",
    "CONFIGS",
    "CONFIG_KEY",
    "ARMS_TOL",
    "MORE_BYTES",
    "SIM_OPS",
    "MODELS",
    "compare",
    "shown",
    "runs",
    "findings",
    "numbers",
]

DATASET = "kernel6_machine5_pacing_cpu"
#: The configurations counted, each a row of the fifth machine's field sweep (bbr, veth-1500).
CONFIGS: tuple[dict[str, Any], ...] = tuple(
    {
        "link": "veth-1500",
        "sock_mode": s,
        "client_sock_mode": c,
        "qd": q,
        "iosize_bytes": n,
    }
    for s, c, q, n in (
        *(("nagle", "nodelay", q, n) for n in (2048, 16384) for q in (2, 4, 8, 16)),
        ("nodelay", "nodelay", 8, 2048),
        ("nodelay", "nodelay", 8, 16384),
        # a MSG_MORE server (Nagle on), behind either client: the field sweep's rows where
        # every model runs two to three times the kernel's rate
        *(("more", c, 8, n) for c in ("nodelay", "nagle") for n in (2048, 16384)),
    )
)
#: A model's pacing timers per operation are right within this many of the kernel's.
ARMS_TOL = 0.1
#: Operations each configuration is simulated for.
SIM_OPS = 3000
#: The models compared, by the name chapter 9b gives them (models.validation.field5.MODELS).
MODELS = ("the same, late wake-ups", "the same, the machine's buffer")


def _scenarios() -> dict[str, Any]:
    from models.validation import field5 as F5
    from models.validation import machine4 as M4

    return dict(zip(MODELS, (M4.freed_clock_scenario, F5.tuned_scenario)))


def simulated(cfg: dict[str, Any], model: str) -> dict[str, float]:
    """``model``'s run of ``cfg``: its IOPS, the server's pacing timers armed per operation, and
    the server's CPU per operation (us: its thread and the soft interrupts on its CPU)."""
    from models.validation import rcvbuf as RB

    sim, r = RB.simulation(cfg, _scenarios()[model], SIM_OPS)
    h = r.hosts["server"]
    return {
        "iops": r.iops,
        "arms_per_op": getattr(sim.server_ep.sender.cc, "timer_arms", 0) / r.completed_total,
        "cpu_us_per_op": (h.cpu_utilization + h.softirq_utilization) / r.iops * 1e6,  # s -> us
    }


def compare(data: Any = None) -> Any:
    """The kernel's counts (:data:`DATASET`, medians over the repeats, or ``data``) beside each
    model's, a row per configuration: the kernel's IOPS and pacing timers per operation, its
    server CPU's busy time per operation (us), and for each model its rate over the kernel's,
    its timers per operation and whether they are right (:data:`ARMS_TOL`)."""
    import pandas as pd

    from models import data as D

    k = D.load(DATASET) if data is None else data
    busy = k.server_user_us_per_op + k.server_system_us_per_op + k.server_softirq_us_per_op
    k = k.assign(server_busy_us_per_op=busy)
    cols = ["iops", "arms_per_op", "server_busy_us_per_op", "server_idle_us_per_op"]
    med = k.groupby(list(CONFIG_KEY))[cols].median().reset_index()
    rows = []
    for cfg in med.to_dict("records"):
        row = {**cfg, "role": "test"}
        for i, model in enumerate(MODELS):
            s = simulated({c: cfg[c] for c in CONFIG_KEY}, model)
            row[f"ratio_{i}"] = s["iops"] / cfg["iops"]
            row[f"arms_{i}"] = s["arms_per_op"]
            row[f"arms_right_{i}"] = abs(s["arms_per_op"] - cfg["arms_per_op"]) <= ARMS_TOL
        rows.append(row)
    return pd.DataFrame(rows)


#: :func:`shown`'s columns: the table's, with the names chapter 9b shows.
SHOWN = {
    "sock_mode": "sock_mode",
    "client_sock_mode": "client",
    "qd": "qd",
    "iosize_bytes": "iosize_bytes",
    "iops": "iops",
    "arms_per_op": "kernel timers/op",
    "server_busy_us_per_op": "kernel server CPU (us/op)",
    "ratio_0": "late: rate/kernel",
    "arms_0": "late: timers/op",
    "ratio_1": "machine's buffer: rate/kernel",
    "arms_1": "machine's buffer: timers/op",
}


def shown(t: Any) -> Any:
    """:func:`compare`'s table as chapter 9b shows it (:data:`SHOWN`)."""
    return t[list(SHOWN)].rename(columns=SHOWN)


def runs() -> int:
    """The fewest runs a configuration has in :data:`DATASET`."""
    from models.validation import rcvbuf as RB

    return RB.runs(DATASET)


def findings(t: Any) -> dict[str, bool]:
    """What chapter 9b says of :func:`compare`'s table, each a claim that holds or not."""
    nagle, nodelay = t[t.sock_mode.eq("nagle")], t[t.sock_mode.eq("nodelay")]
    more = t[t.sock_mode.eq("more")]
    cost = nagle.server_busy_us_per_op.median() / nodelay.server_busy_us_per_op.median()
    return {
        "the kernel's Nagle server arms about one pacing timer per operation, a NODELAY one none": (
            bool((nagle.arms_per_op >= 0.9).all() and (nodelay.arms_per_op == 0).all())
        ),
        "and spends about three times the CPU per operation": bool(2.5 <= cost <= 3.5),
        "the late model's timers are right in every Nagle and NODELAY row": bool(
            t.loc[~t.sock_mode.eq("more"), "arms_right_0"].all()
        ),
        "the machine's-buffer model arms too few behind a Nagle server, and runs faster": bool(
            not nagle.arms_right_1.any()
            and (nagle.arms_1 < nagle.arms_per_op).all()
            and (nagle.ratio_1 > nagle.ratio_0).sum() >= len(nagle) - 2
        ),
        "a MSG_MORE server at 2 KiB arms one per operation too, the models fewer, and run faster": (
            _more(more)
        ),
    }


#: The response size of the MSG_MORE rows :func:`_more` judges.
MORE_BYTES = 2048


def _more(more: Any) -> bool:
    """Whether, in the ``MSG_MORE`` rows of :data:`MORE_BYTES` (behind either client), the
    kernel arms at least 0.9 pacing timers per operation, each model at most three quarters of
    one, and each model runs more than a quarter above the kernel's rate (no claim is made of
    the 16-KiB rows)."""
    small = more[more.iosize_bytes.eq(MORE_BYTES)]
    return bool(
        len(small) == 2
        and (small.arms_per_op >= 0.9).all()
        and (small[["arms_0", "arms_1"]] <= 0.75).all().all()
        and (small[["ratio_0", "ratio_1"]] > 1.25).all().all()
    )


def numbers(t: Any) -> dict[str, Any]:
    """The values chapter 9b quotes, by glue name (timers per operation, us, ratios)."""
    nagle, nodelay = t[t.sock_mode.eq("nagle")], t[t.sock_mode.eq("nodelay")]
    small = t[t.sock_mode.eq("more") & t.iosize_bytes.eq(MORE_BYTES)]
    return {
        "sc_k_arms_min": float(nagle.arms_per_op.min()),
        "sc_nagle_us": float(nagle.server_busy_us_per_op.median()),
        "sc_nodelay_us": float(nodelay.server_busy_us_per_op.median()),
        "sc_late_ratio_max": float(nagle.ratio_0.max()),
        "sc_tuned_ratio_max": float(nagle.ratio_1.max()),
        "sc_tuned_arms_min": float(nagle.arms_1.min()),
        "sc_tuned_arms_max": float(nagle.arms_1.max()),
        "sc_tol": ARMS_TOL,
        "sc_more_k_arms_min": float(small.arms_per_op.min()),
        "sc_more_arms_max": float(small[["arms_0", "arms_1"]].max().max()),
        "sc_more_ratio_min": float(small[["ratio_0", "ratio_1"]].min().min()),
        "sc_more_ratio_max": float(small[["ratio_0", "ratio_1"]].max().max()),
        "sc_more_bytes": MORE_BYTES,
    }

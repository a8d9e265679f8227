"""Chapter 9b's soft-interrupts-first model against the fifth machine's field sweep.

:data:`models.validation.field5.SOFTIRQ` is the machine's-buffer model
(:data:`~models.validation.field5.TUNED`) with ``Host.softirq_first``
(:mod:`models.sim.softirq_first`).  Here, on :func:`models.validation.field5.evaluate`'s result:
the rows it was made for (:func:`soft_rows`: a ``MSG_MORE`` and ``TCP_NODELAY`` server behind a
Nagle client), the server's data segments per operation there against the kernel's
(:func:`soft_segments`, :func:`soft_table`), and the stall verdicts it loses against
:data:`~models.validation.field5.TUNED` (:func:`soft_lost`), each simulated longer
(:func:`soft_long_stalls`).  :func:`findings` are chapter 9b's claims, :func:`numbers` the
values it quotes.
"""

from __future__ import annotations

import functools
from typing import Any

from models.validation import fidelity as FID
from models.validation.field5 import MODELS, PREFIX, PROFILE_LATE, SOFTIRQ, TUNED, softirq_scenario

__all__ = [
    "SOFT_GROUPS",
    "SOFT_MIN_QD",
    "SOFT_LONG_OPS",
    "soft_rows",
    "soft_segments",
    "soft_table",
    "soft_lost",
    "soft_long_stalls",
    "findings",
    "numbers",
]


def findings(ev: Any) -> dict[str, bool]:
    """Chapter 9b's claims of :data:`~models.validation.field5.SOFTIRQ` (part of
    :func:`models.validation.field5.findings`)."""
    return {
        "soft interrupts first keep a MSG_MORE header with its data, as the kernel does": (
            _soft_segments(ev)
        ),
        "and mend those servers' rates behind a Nagle client, and the share within": _soft_rates(
            ev
        ),
        "the verdicts they lose are QD-8 stalls they enter later": _soft_entries(ev),
    }


#: The groups whose header the window's models send alone: (server mode, client mode) at
#: :data:`SOFT_MIN_QD` and above, where a request arrives while the header waits.
SOFT_GROUPS = (("more_nodelay", "nagle"),)
SOFT_MIN_QD = 4
#: How many operations :func:`_soft_entries` simulates a row whose stall a model enters later.
SOFT_LONG_OPS = 4000


def soft_rows(ev: Any, name: str) -> Any:
    """Model ``name``'s IOPS rows (:func:`~models.validation.fidelity.iops_table`) of
    :data:`SOFT_GROUPS` at :data:`SOFT_MIN_QD` and above."""
    io = FID.iops_table(ev.tables[name])
    pick = [g in SOFT_GROUPS for g in zip(io.sock_mode, io.client_sock_mode)]
    return io[io.qd.ge(SOFT_MIN_QD) & io.index.isin(io.index[pick])]


def soft_segments(ev: Any) -> dict[str, float]:
    """Of the server in :func:`soft_rows`: the kernel's median data segments per operation
    where a response is 512 bytes (``"kernel"``: header and data fit one segment on every
    link), and for :data:`TUNED` and :data:`SOFTIRQ` (by those names) the median of each row's
    segments per operation beyond the kernel's run's."""
    kernel = soft_rows(ev, SOFTIRQ)
    out = {
        "kernel": float(kernel[kernel.iosize_bytes.eq(512)].server_data_segments_per_op.median())
    }
    for name in (TUNED, SOFTIRQ):
        r = soft_rows(ev, name)
        out[name] = float((r.sim_segments - r.server_data_segments_per_op).median())
    return out


def soft_table(ev: Any) -> Any:
    """:func:`soft_rows` of :data:`TUNED` and :data:`SOFTIRQ`: the median of the server's data
    segments per operation beyond the kernel's (:func:`soft_segments`), the median ratio of
    model to kernel IOPS and the share within the tolerance (percent)."""
    import pandas as pd

    seg = soft_segments(ev)
    rows = {}
    for name in (TUNED, SOFTIRQ):
        r = soft_rows(ev, name)
        rows[name] = {
            "segments per op beyond the kernel's": seg[name],
            "median ratio": float(r.ratio.median()),
            "within a quarter (%)": float(r.within.mean() * 100),  # share -> %
        }
    return pd.DataFrame(rows).T


def _soft_segments(ev: Any) -> bool:
    """Whether the kernel sends one segment per 512-byte response in :func:`soft_rows` (median
    within 0.05 of 1), the buffer's model sends the header alone often (a median of at least
    0.2 segments per operation beyond the kernel's) and the model with soft interrupts first
    sends the kernel's count (within 0.05)."""
    seg = soft_segments(ev)
    return bool(abs(seg["kernel"] - 1) <= 0.05 and seg[TUNED] >= 0.2 and abs(seg[SOFTIRQ]) <= 0.05)


def _soft_rates(ev: Any) -> bool:
    """Whether :data:`SOFTIRQ` has at least 20 points more of :func:`soft_rows` within the
    tolerance than :data:`TUNED`, the largest share within of all rows of any model, and its
    medians inside the goal's range."""
    soft, tuned = soft_rows(ev, SOFTIRQ), soft_rows(ev, TUNED)
    s = ev.summary
    lo, hi = FID.RATIO_RANGE
    return bool(
        soft.within.mean() - tuned.within.mean() >= 0.2
        and s.loc[SOFTIRQ].within_pct == max(s.loc[m].within_pct for m in MODELS)
        and lo <= s.loc[SOFTIRQ].median_q1 <= hi
        and lo <= s.loc[SOFTIRQ].median_q8 <= hi
    )


def soft_lost(ev: Any) -> Any:
    """The test rows whose stall verdict :data:`TUNED` gets right and :data:`SOFTIRQ` wrong."""
    a, b = ev.tables[TUNED], ev.tables[SOFTIRQ]
    right_a = a.kernel_stalls == a.sim_stalls
    right_b = b.kernel_stalls == b.sim_stalls
    return b[(b.role == "test") & right_a & ~right_b]


def soft_long_stalls(ev: Any) -> list[float]:
    """Each of :func:`soft_lost`'s rows simulated by :data:`SOFTIRQ`'s scenario for
    :data:`SOFT_LONG_OPS` operations: the share of its operations that stalled (percent; each
    row simulated once per process, however often it is asked)."""
    return [_long_stalled_pct(int(i)) for i in soft_lost(ev).index]


@functools.lru_cache(maxsize=64)
def _long_stalled_pct(index: int) -> float:
    """Row ``index`` of the field sweep's iSCSI-loop table (the evaluated tables keep its
    index) simulated as :func:`soft_long_stalls` says."""
    from models.kernel import load_kernel_run
    from models.kernel.runs import simulate_uncached
    from models.sim import hostprofile

    run = load_kernel_run(prefix=PREFIX)
    row = run.table("iscsi_loop").loc[index].to_dict()
    host = FID.ProfileHost(hostprofile.shipped(PROFILE_LATE))
    sc = softirq_scenario("iscsi_loop", row, host, run.hz)
    return simulate_uncached(sc.replace(run={"ops": SOFT_LONG_OPS})).stalled_pct


def _soft_entries(ev: Any) -> bool:
    """Whether every verdict :data:`SOFTIRQ` loses against :data:`TUNED` is a QD-8 stall of a
    Nagle server behind a NODELAY client, fewer than ten, where the kernel stalled on 95 % of
    its operations or more, and each stalls on most of its operations when simulated for
    :data:`SOFT_LONG_OPS` operations (it enters the stall after the kernel's run would have
    ended)."""
    lost = soft_lost(ev)
    return bool(
        0 < len(lost) < 10
        and set(zip(lost.sock_mode, lost.client_sock_mode, lost.qd.astype(int)))
        == {("nagle", "nodelay", 8)}
        and (lost.stalled_pct >= 95).all()
        and min(soft_long_stalls(ev)) >= 50
    )


def numbers(ev: Any) -> dict[str, Any]:
    """What chapter 9b says of :data:`~models.validation.field5.SOFTIRQ`, by glue name:
    :func:`soft_segments`, the share of :func:`soft_rows` within the tolerance (percent) and
    the verdicts it loses."""
    seg = soft_segments(ev)
    long = soft_long_stalls(ev)
    return {
        "f5_soft_rows": len(soft_rows(ev, SOFTIRQ)),
        "f5_soft_k_segs": seg["kernel"],
        "f5_soft_tuned_segs": seg[TUNED],
        "f5_soft_soft_segs": seg[SOFTIRQ],
        "f5_soft_tuned_in": float(soft_rows(ev, TUNED).within.mean() * 100),  # share -> %
        "f5_soft_soft_in": float(soft_rows(ev, SOFTIRQ).within.mean() * 100),  # share -> %
        "f5_soft_lost": len(soft_lost(ev)),
        "f5_soft_long_ops": SOFT_LONG_OPS,
        "f5_soft_long_min": min(long) if long else float("nan"),
    }

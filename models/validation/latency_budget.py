"""Chapter 8: the latency budget of a 4 KiB page fault over iSER (HPE 2019).

One block request carries ``PAGES`` 4 KiB pages and ``QD`` requests are in service at once.  Little's law
for the closed loop (``IOPS = QD / RTT``, :func:`models.analytic.iops_identity`) turns the per-request
latency into a per-page time: pages complete at ``PAGES * QD / RTT`` per second, so one page costs
``RTT / (PAGES * QD)`` of wall-clock time.  This module derives that expression, evaluates it, and holds
the chapter's comparisons against the notes' numbers.

>>> page_time_expr()
RTT/(PAGES*QD)
>>> round(page_time(210e-6, pages=32, qd=2) * 1e6, 2)
3.28
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import sympy as sp

from models import analytic as A
from models import data
from models.analytic import S
from models.validation import Comparison, comparisons

__all__ = ["PAGES", "PAGE_BYTES", "page_time_expr", "page_time", "pages_per_request", "layer_waterfall",
           "latency_budget_comparisons"]

#: Pages carried by one request (a count).
PAGES = sp.Symbol("PAGES", positive=True)
#: Size of a page in bytes (4 KiB).
PAGE_BYTES = 4096


@lru_cache(maxsize=None)
def page_time_expr() -> sp.Expr:
    """Wall-clock time per page, derived from ``IOPS = QD / RTT`` with ``PAGES`` pages per operation."""
    iops = sp.solve(A.iops_identity(), S.IOPS)[0]      # requests per second
    pages_per_second = PAGES * iops
    return sp.simplify(1 / pages_per_second)


_page_time = sp.lambdify((S.RTT, PAGES, S.QD), page_time_expr(), modules="numpy")


def page_time(rtt_s, pages, qd):
    """Seconds of wall-clock time per page: ``rtt_s / (pages * qd)``.

    Parameters
    ----------
    rtt_s : float or array
        Latency of one request, seconds (positive).
    pages : float or array
        Pages per request (at least 1).
    qd : float or array
        Requests in service at once (at least 1).
    """
    r, p, q = (np.asarray(x, dtype=float) for x in (rtt_s, pages, qd))
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(f"rtt_s must be positive seconds, got {rtt_s!r}")
    if not np.all(np.isfinite(p)) or np.any(p < 1):
        raise ValueError(f"pages must be at least 1, got {pages!r}")
    if not np.all(np.isfinite(q)) or np.any(q < 1):
        raise ValueError(f"qd must be at least 1, got {qd!r}")
    out = _page_time(r, p, q)
    return float(out) if np.ndim(out) == 0 else out


def pages_per_request(request_bytes: int, page_bytes: int = PAGE_BYTES) -> int:
    """Whole pages in a request of ``request_bytes`` (128 KiB -> 32)."""
    if page_bytes <= 0:
        raise ValueError(f"page_bytes must be positive, got {page_bytes!r}")
    if request_bytes < page_bytes or request_bytes % page_bytes:
        raise ValueError(f"request_bytes must be a positive multiple of {page_bytes}, got {request_bytes!r}")
    return request_bytes // page_bytes


def layer_waterfall() -> pd.DataFrame:
    """The per-page layer table in drawing order, with each bar's start (``start_us``) for a waterfall.

    Leaves of the tree (``io_wait``, then the software-stack layers) are stacked from zero; the totals
    (``page_fault_in_stacks``, ``lmbench_4k``) are drawn from zero as the bars they should equal.
    """
    df = data.load("hpe2019_latency_layers").set_index("layer")
    order = ["io_wait", "fs", "bio", "scsi_to_ib_core", "mlx5"]
    starts, t = [], 0.0
    for name in order:
        starts.append(t)
        t += float(df.latency_us[name])
    leaves = pd.DataFrame({"layer": order, "latency_us": df.latency_us[order].to_numpy(),
                           "start_us": starts, "bar": "part"})
    totals = pd.DataFrame({"layer": ["page_fault_in_stacks", "lmbench_4k"],
                           "latency_us": [df.latency_us["page_fault_in_stacks"], df.latency_us["lmbench_4k"]],
                           "start_us": [float(df.latency_us["io_wait"]), 0.0], "bar": "total"})
    return pd.concat([leaves, totals], ignore_index=True)


@comparisons("ch8.latency_budget")
def latency_budget_comparisons() -> list[Comparison]:
    """Chapter 8's checks: amortization by Little's law and the arithmetic of the layer table."""
    src = "HPE 2019"
    st = data.load("hpe2019_stated").set_index("quantity").value
    run = data.load("hpe2019_rdma_run").iloc[0]
    layers = data.load("hpe2019_latency_layers").set_index("layer").latency_us
    rtt = float(st["request_latency"]) * 1e-6                       # us -> s
    pages = pages_per_request(int(st["max_request_bytes"]))
    qd = float(st["parallel_requests"])
    per_page_us = page_time(rtt, pages, qd) * 1e6                  # s -> us
    stack_sum = sum(float(layers[k]) for k in ("fs", "bio", "scsi_to_ib_core"))
    return [
        Comparison("ch8", "per-page share of request latency, RTT/(PAGES*QD)",
                   measured=float(st["page_latency_share"]), predicted=per_page_us, unit="us", abs_tol=0.05,
                   why="the notes print one decimal", source=f"{src}, hpe2019_stated"),
        Comparison("ch8", "Little's-law page time vs lmbench page-fault latency",
                   measured=float(run.lmbench_4k_us), predicted=per_page_us, unit="us", rel_tol=0.025,
                   why="the request latency is 'around 210 us', two significant figures: its last digit "
                       "alone (5 us) is 2.4 %", source=f"{src}, hpe2019_rdma_run"),
        Comparison("ch8", "one request's latency per page, not halved ('one BIO latency')",
                   measured=float(st["one_bio_latency"]), predicted=page_time(rtt, pages, 1) * 1e6, unit="us",
                   abs_tol=0.07, why="the notes cut 6.5625 to 6.5 rather than round it",
                   source=f"{src}, hpe2019_stated"),
        Comparison("ch8", "4 KiB pages in the run = requests x 32", measured=float(run.pages_4k),
                   predicted=float(run.io_requests * pages), unit="pages", abs_tol=0.0,
                   why="integer arithmetic: must be exact", source=f"{src}, hpe2019_rdma_run"),
        Comparison("ch8", "I/O wait per page = I/O wait / pages", measured=float(run.io_wait_per_4k_us),
                   predicted=float(run.io_wait_s) / float(run.pages_4k) * 1e6, unit="us", abs_tol=0.005,
                   why="the notes print two decimals", source=f"{src}, hpe2019_rdma_run"),
        Comparison("ch8", "elapsed = I/O wait + CPU time, solved for I/O wait", measured=float(run.io_wait_s),
                   predicted=(1 - float(run.cpu_pct) / 100) * float(run.elapsed_s), unit="s", abs_tol=0.09,
                   why="the CPU share has two digits (±0.5 % of 16.42 s = 0.08 s) and the I/O wait is "
                       "printed to 0.01 s", source=f"{src}, hpe2019_rdma_run"),
        Comparison("ch8", "time in stacks = lmbench latency - I/O wait per page",
                   measured=float(layers["page_fault_in_stacks"]),
                   predicted=float(layers["lmbench_4k"] - layers["io_wait"]), unit="us", abs_tol=0.015,
                   why="three values printed to two decimals, each up to 0.005 us off",
                   source=f"{src}, hpe2019_latency_layers"),
        Comparison("ch8", "mlx5 remainder = stacks - FS - BIO - scsi>ib_core", measured=float(layers["mlx5"]),
                   predicted=float(layers["page_fault_in_stacks"]) - stack_sum, unit="us", abs_tol=0.02,
                   why="four values printed to two decimals, each up to 0.005 us off",
                   source=f"{src}, hpe2019_latency_layers"),
        Comparison("ch8", "scsi>ib_core per page = (1.3 + 1.18 us) / 32", measured=float(layers["scsi_to_ib_core"]),
                   predicted=(float(st["iscsi_queuecommand"]) + float(st["ib_poll_handler"])) / pages, unit="us",
                   abs_tol=0.005, why="the notes print two decimals", source=f"{src}, hpe2019_stated"),
        Comparison("ch8", "D2C slope per 1 KiB package, 4K to 64K faults", measured=float(st["d2c_per_1k_package"]),
                   predicted=(float(st["d2c_64k"]) - float(st["d2c_4k"])) / (64 - 4), unit="us", abs_tol=0.005,
                   why="the notes print two decimals", source=f"{src}, hpe2019_stated"),
    ]

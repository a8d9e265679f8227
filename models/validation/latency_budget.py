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

from functools import cache

import numpy as np
import pandas as pd
import sympy as sp

from models import analytic as A
from models import data
from models.analytic import S
from models.validation import Comparison, comparisons

__all__ = [
    "PAGES",
    "PAGE_BYTES",
    "PARTS",
    "page_time_expr",
    "page_time",
    "pages_per_request",
    "layer_waterfall",
    "run_totals",
    "latency_budget_comparisons",
]

#: Pages carried by one request (a count).
PAGES = sp.Symbol("PAGES", positive=True)
#: Size of a page in bytes (4 KiB).
PAGE_BYTES = 4096


@cache
def page_time_expr() -> sp.Expr:
    """Wall-clock time per page, derived from ``IOPS = QD / RTT`` with ``PAGES`` pages per operation."""
    iops = sp.solve(A.iops_identity(), S.IOPS)[0]  # requests per second
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
        raise ValueError(
            f"request_bytes must be a positive multiple of {page_bytes}, got {request_bytes!r}"
        )
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
    leaves = pd.DataFrame(
        {
            "layer": order,
            "latency_us": df.latency_us[order].to_numpy(),
            "start_us": starts,
            "bar": "part",
        }
    )
    totals = pd.DataFrame(
        {
            "layer": ["page_fault_in_stacks", "lmbench_4k"],
            "latency_us": [
                df.latency_us["page_fault_in_stacks"],
                df.latency_us["lmbench_4k"],
            ],
            "start_us": [float(df.latency_us["io_wait"]), 0.0],
            "bar": "total",
        }
    )
    return pd.concat([leaves, totals], ignore_index=True)


#: Sections of chapter 8 a row belongs to (``extra["part"]``).
PARTS = ("little", "audit", "totals")


def run_totals() -> dict:
    """What the rdma run's own totals imply (time(1) and the request count), all derived from the data.

    ``page_time_us``: elapsed seconds per 4 KiB page; ``in_flight``: requests in flight on average by
    Little's law, ``requests x request latency / elapsed``; ``cpu_per_page_us``: (elapsed - I/O wait) per
    page, the notes' own definition of the "page fault in stacks" column; ``passes``: whole passes over
    the 1 GiB file if each pass issues ``1 GiB / 128 KiB + 1`` requests.
    """
    st = data.load("hpe2019_stated").set_index("quantity").value
    run = data.load("hpe2019_rdma_run").iloc[0]
    elapsed = float(run.elapsed_s)
    pages = int(run.pages_4k)
    requests = int(run.io_requests)
    rtt = float(st["request_latency"]) * 1e-6  # us -> s
    per_pass = 2**30 // int(st["max_request_bytes"]) + 1  # 1 GiB / 128 KiB data requests, + 1
    return {
        "page_time_us": elapsed / pages * 1e6,  # s -> us
        "in_flight": requests * rtt / elapsed,  # Little: lambda * W
        "cpu_per_page_us": (elapsed - float(run.io_wait_s)) / pages * 1e6,
        "requests_per_pass": per_pass,
        "passes": requests / per_pass,
        "requests": requests,
        "pages": pages,
        "elapsed_s": elapsed,
    }


@comparisons("ch8.latency_budget")
def latency_budget_comparisons() -> list[Comparison]:
    """Chapter 8's rows: Little's law tested against lmbench and against the run's own totals; audits
    of the notes' arithmetic, some recorded as failing where the notes disagree with themselves."""
    src = "HPE 2019"
    st = data.load("hpe2019_stated").set_index("quantity").value
    run = data.load("hpe2019_rdma_run").iloc[0]
    layers = data.load("hpe2019_latency_layers").set_index("layer").latency_us
    rtt = float(st["request_latency"]) * 1e-6  # us -> s
    pages = pages_per_request(int(st["max_request_bytes"]))
    qd = float(st["parallel_requests"])
    per_page_us = page_time(rtt, pages, qd) * 1e6  # s -> us
    stack_sum = sum(float(layers[k]) for k in ("fs", "bio", "scsi_to_ib_core"))
    tot = run_totals()
    little = {"part": "little"}
    audit = {"part": "audit"}
    totals = {"part": "totals"}
    rounding_210 = (
        "the request latency is 'around 210 us', two significant figures: its last digit alone "
        "(5 us) is 2.4 %"
    )
    return [
        Comparison(
            "ch8",
            "per-page share of request latency, RTT/(PAGES*QD), vs the notes' own quotient",
            measured=float(st["page_latency_share"]),
            predicted=per_page_us,
            unit="us",
            abs_tol=0.05,
            why="the notes print one decimal",
            source=f"{src}, hpe2019_stated",
            extra=little,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "Little's-law page time vs lmbench page-fault latency",
            measured=float(run.lmbench_4k_us),
            predicted=per_page_us,
            unit="us",
            rel_tol=0.025,
            why=rounding_210,
            source=f"{src}, hpe2019_rdma_run",
            extra=little,
            kind="test",
        ),
        Comparison(
            "ch8",
            "one request's latency per page, not halved ('one BIO latency')",
            measured=float(st["one_bio_latency"]),
            predicted=page_time(rtt, pages, 1) * 1e6,
            unit="us",
            abs_tol=0.07,
            why="the notes cut 6.5625 to 6.5 rather than round it",
            source=f"{src}, hpe2019_stated",
            extra=little,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "4 KiB pages in the run = requests x 32",
            measured=float(run.pages_4k),
            predicted=float(run.io_requests * pages),
            unit="pages",
            abs_tol=0.0,
            why="integer arithmetic: must be exact",
            source=f"{src}, hpe2019_rdma_run",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "I/O wait per page = I/O wait / pages",
            measured=float(run.io_wait_per_4k_us),
            predicted=float(run.io_wait_s) / float(run.pages_4k) * 1e6,
            unit="us",
            abs_tol=0.005,
            why="the notes print two decimals",
            source=f"{src}, hpe2019_rdma_run",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "elapsed = I/O wait + CPU time, solved for I/O wait",
            measured=float(run.io_wait_s),
            predicted=(1 - float(run.cpu_pct) / 100) * float(run.elapsed_s),
            unit="s",
            abs_tol=0.09,
            why="the CPU share has two digits (±0.5 % of 16.42 s = 0.08 s) and the I/O wait is "
            "printed to 0.01 s",
            source=f"{src}, hpe2019_rdma_run",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "time in stacks = lmbench latency - I/O wait per page",
            measured=float(layers["page_fault_in_stacks"]),
            predicted=float(layers["lmbench_4k"] - layers["io_wait"]),
            unit="us",
            abs_tol=0.015,
            why="three values printed to two decimals, each up to 0.005 us off",
            source=f"{src}, hpe2019_latency_layers",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "mlx5 remainder = stacks - FS - BIO - scsi>ib_core",
            measured=float(layers["mlx5"]),
            predicted=float(layers["page_fault_in_stacks"]) - stack_sum,
            unit="us",
            abs_tol=0.02,
            why="four values printed to two decimals, each up to 0.005 us off",
            source=f"{src}, hpe2019_latency_layers",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            f"scsi>ib_core per page = ({float(st['iscsi_queuecommand']):g} + "
            f"{float(st['ib_poll_handler']):g} us) / {pages:g}",
            measured=float(layers["scsi_to_ib_core"]),
            predicted=(float(st["iscsi_queuecommand"]) + float(st["ib_poll_handler"])) / pages,
            unit="us",
            abs_tol=0.005,
            why="the notes print two decimals",
            source=f"{src}, hpe2019_stated",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "scsi>ib_core per request: the notes' "
            f"{float(st['scsi_to_ib_core_half_request']):g} x 2 vs their "
            f"{float(st['iscsi_queuecommand']):g} + {float(st['ib_poll_handler']):g} us",
            measured=float(st["scsi_to_ib_core_per_request"]),
            predicted=float(st["iscsi_queuecommand"]) + float(st["ib_poll_handler"]),
            unit="us",
            abs_tol=0.01,
            why="every figure is printed to two decimals",
            source=f"{src}, hpe2019_stated",
            extra=audit,
            kind="audit",
            fails="the notes give the mid-layer to ib_core path of one 128 KiB request twice, "
            f"{float(st['scsi_to_ib_core_per_request']):g} and "
            f"{float(st['iscsi_queuecommand']) + float(st['ib_poll_handler']):g} us; the layer "
            "table uses the smaller, and with the larger the layers would add up to more than "
            "the stack total",
        ),
        Comparison(
            "ch8",
            "D2C slope per 1 KiB package, 4K to 64K faults",
            measured=float(st["d2c_per_1k_package"]),
            predicted=(float(st["d2c_64k"]) - float(st["d2c_4k"])) / (64 - 4),
            unit="us",
            abs_tol=0.005,
            why="the notes print two decimals",
            source=f"{src}, hpe2019_stated",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "D2C of a 64K fault beyond the request's whole Q2C (D2C is part of Q2C)",
            measured=0.0,
            predicted=max(0.0, float(st["d2c_64k"]) - float(st["q2c_latency"])),
            unit="us",
            abs_tol=5.0,
            why="Q2C is 'about 210 us' at 4K, 64K and 128K, so its last digit (±5 us) is the "
            "slack; a part of a request cannot take longer than the whole of it",
            source=f"{src}, hpe2019_stated",
            extra=audit,
            kind="audit",
            fails="the notes' D2C for a 64K fault is longer than the Q2C they give for the same "
            "size; one of the two figures cannot describe the same requests",
        ),
        Comparison(
            "ch8",
            "block layer per request: the table's BIO x 32 pages x 2 vs Q2C - D2C(4K)",
            measured=float(layers["bio"]) * pages * qd,
            predicted=float(st["q2c_latency"]) - float(st["d2c_4k"]),
            unit="us",
            abs_tol=5.0,
            why="Q2C is 'about 210 us', so its last digit (±5 us) dominates the difference",
            source=f"{src}, hpe2019_latency_layers and hpe2019_stated",
            extra=audit,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "block layer per page: the table's BIO vs 2 % of the request latency / 32 / 2",
            measured=float(layers["bio"]),
            predicted=float(st["bio_share"]) / 100 * float(st["request_latency"]) / pages / qd,
            unit="us",
            abs_tol=0.02,
            why="2 % could be 1.5 to 2.5 % (±0.016 us per page) and the table prints two decimals",
            source=f"{src}, hpe2019_latency_layers and hpe2019_stated",
            extra=audit,
            kind="audit",
            fails="the notes' two figures for the block layer disagree by more than a factor of "
            "2; the table's agrees with Q2C - D2C(4K), the 2 % share does not",
        ),
        Comparison(
            "ch8",
            "requests = whole passes over 1 GiB x (1 GiB / 128 KiB + 1)",
            measured=float(tot["requests"]),
            predicted=float(round(tot["passes"]) * tot["requests_per_pass"]),
            unit="requests",
            abs_tol=0.0,
            why="integer arithmetic: exact only if the run made whole passes of 8,192 data "
            "requests plus one; a count not divisible by 8,193 would fail",
            source=f"{src}, hpe2019_rdma_run and hpe2019_stated",
            extra=totals,
            kind="audit",
        ),
        Comparison(
            "ch8",
            "Little's-law page time vs the run's elapsed time per page "
            f"({tot['elapsed_s']:g} s / pages)",
            measured=tot["page_time_us"],
            predicted=per_page_us,
            unit="us",
            rel_tol=0.025,
            why="the same 2.5 % as the test against lmbench: " + rounding_210,
            source=f"{src}, hpe2019_rdma_run",
            extra=totals,
            kind="test",
            fails="time(1) gives about half as much again per page as the law with 2 requests in "
            "service; over the whole run fewer requests were in service on average, or the "
            "process spent time outside its faults that lmbench does not count",
        ),
        Comparison(
            "ch8",
            "page fault in stacks by the column's own definition: (elapsed - I/O wait) / pages",
            measured=float(run.page_fault_in_stacks_us),
            predicted=tot["cpu_per_page_us"],
            unit="us",
            abs_tol=0.02,
            why="the elapsed time and I/O wait are printed to 0.01 s (±0.006 us per page)",
            source=f"{src}, hpe2019_rdma_run",
            extra=totals,
            kind="audit",
            fails=f"the printed {float(run.page_fault_in_stacks_us):g} us is lmbench minus the "
            "I/O wait, not what the column's header defines",
        ),
    ]

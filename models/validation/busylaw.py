"""What a busy server's operation costs: the kernel's law against the simulator's (validation
dashboard, set ``ch9.busylaw``).

On the loopback, a server that never sleeps (the kernel's median busy period serves more than
:data:`BUSY_MIN` requests) runs at the rate its CPU allows, so the time per operation,
``1e6 / IOPS`` microseconds, is what the server spends on one operation.  Over the third
machine's pinned sample (:data:`models.validation.ackheld.DATASET`; runs without a delayed-ACK stall,
responses under 64 KiB) that time is close to a straight line in the data segments the server sends
per operation (``server_data_segments_per_op``, from about a third of a segment behind Nagle to two
with ``TCP_NODELAY``): a cost per operation and a cost per segment (:func:`law`).  The same
regression over the simulator's rates for the same runs gives the model's law.  The two rows compare
the two coefficients; each is a test (the profile was fitted to its own eight calibration runs,
none of these).

Both fail with the kept profile (known): its eight runs, at QD 1 and 8, cannot tell the work per
message from the cost per segment, and the fit put most of the cost per operation into the work per
message.  A profile whose work per message is the measured ``recv()`` floor and whose cost per
segment is about 4 us passes both (``tests/test_busylaw.py``): the law can tell.
"""

from __future__ import annotations

from typing import Any

from models.validation import Comparison, comparisons

__all__ = ["BUSY_MIN", "TOL", "busy_rows", "law", "laws", "busylaw_comparisons"]

#: The kernel's median requests per busy period above which a run's server counts as never asleep.
BUSY_MIN = 50.0


def _tol() -> float:
    from models.validation.fidelity import IOPS_TOL

    return IOPS_TOL


#: Relative tolerance of each coefficient: the IOPS tolerance of the field evaluation (a kernel run
#: repeats itself to about that).
TOL = _tol()
#: Responses of this size and more are left out: their copies, not their segments, set the rate.
LARGE_BYTES = 65536


def busy_rows(table: Any) -> Any:
    """The mask of ``table``'s rows (an ``iscsi_loop`` table) that hold the law: the loopback
    without a rate limit, a server the kernel kept busy, no delayed-ACK stall, responses under
    :data:`LARGE_BYTES`."""
    from models.kernel.runs import STALL_SHARE_PCT
    from models.validation.fidelity import link_limited

    return (
        (table["link"] == "loopback")
        & ~link_limited(table)
        & (table["mean_busy_count"] > BUSY_MIN)
        & (table["stalled_pct"] < STALL_SHARE_PCT)
        & (table["iosize_bytes"] < LARGE_BYTES)
    )


def law(segments: Any, iops: Any) -> tuple[float, float, float]:
    """The least-squares line of the time per operation (``1e6 / iops``, microseconds) on the data
    segments per operation: ``(per operation, per segment, median absolute residual)``,
    microseconds.

    >>> law([0.5, 1.0, 2.0], [1e6 / 3.0, 1e6 / 5.0, 1e6 / 9.0])
    (1.0, 4.0, 0.0)
    """
    import numpy as np

    x = np.asarray(segments, dtype=float)
    y = 1e6 / np.asarray(iops, dtype=float)  # operations/s -> microseconds per operation
    a = np.c_[np.ones_like(x), x]
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = float(np.median(np.abs(a @ coef - y)))
    return round(float(coef[0]), 6), round(float(coef[1]), 6), round(resid, 6)


def laws(profile: Any = None, processes: int | None = None) -> dict[str, Any]:
    """The kernel's law and the simulator's (``profile``, default the third machine's kept one),
    over the same :func:`busy_rows` of the pinned sample, with how many runs hold them (``n``)."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile
    from models.validation import ackheld
    from models.validation.fidelity import simulate_loop

    p = profile if profile is not None else hostprofile.shipped(ackheld.kept_name())
    run = load_kernel_run(prefix=ackheld.PREFIX)
    t = simulate_loop(run, p, processes=processes, rows=busy_rows)
    segs = t["server_data_segments_per_op"]
    return {"kernel": law(segs, t["iops"]), "sim": law(segs, t["sim_iops"]), "n": len(t)}


@comparisons("ch9.busylaw")
def busylaw_comparisons() -> list[Comparison]:
    """The two coefficients of the busy server's law, kernel against simulator."""
    from models.validation.ackheld import DATASET, kept_name

    got = laws()
    (k_op, k_seg, k_res), (s_op, s_seg, _), n = got["kernel"], got["sim"], got["n"]
    source = (
        f"{DATASET}: {n} loopback runs whose server the kernel kept busy, least squares of "
        f"1e6/IOPS on data segments per operation (median residual {k_res:.2f} us)"
    )
    why = "a kernel run repeats itself to about a quarter (the field evaluation's IOPS tolerance)"
    cause = (
        f"the profile ({kept_name()}) was fitted to eight runs at QD 1 and 8, which cannot tell the "
        "work per message from the cost per segment; its fit put the cost into the work per message"
    )
    quantities = (
        ("busy loopback server: CPU per operation beyond its segments", k_op, s_op),
        ("busy loopback server: CPU per data segment it sends", k_seg, s_seg),
    )
    return [
        Comparison(
            "ch9", q, k, s, "us", rel_tol=TOL, why=why, source=source, kind="test", fails=cause
        )
        for q, k, s in quantities
    ]

"""What chapter 9's "One host model for the field" says of the field evaluation
(:func:`models.validation.fidelity.evaluate`): the numbers its text quotes (:func:`numbers`, keyed by
their glue names) and the claims it makes (:func:`findings`), so that the chapter's hidden cell only
asserts and glues them.  ``tests/test_fidelity.py`` holds the claims too."""

from __future__ import annotations

from typing import Any

from models.validation import fidelity as FID

__all__ = ["MISSED", "v1500_rows", "numbers", "findings"]

#: The goals the text names as missed; if that changes, :func:`findings` fails and the text must
#: change with it.
MISSED = frozenset({"stall verdicts", "largest stalling QD", "IOPS within 25%"})


def v1500_rows(df: Any) -> Any:
    """Which rows are the Nagle server's on veth at MTU 1500 with 4 KiB responses from QD 2."""
    return (
        (df.sock_mode == "nagle")
        & (df.link == "veth-1500")
        & (df.qd >= 2)
        & (df.iosize_bytes == 4096)
    )


def _parts(ev: Any) -> dict[str, Any]:
    """The tables both functions read: the IOPS rows, the test rows' stall ends (and those the
    simulator ends too early, on a limited link or behind a Nagle server otherwise), the median
    ratio per response size, the Nagle servers' rows, the veth-1500 Nagle 4 KiB rows from QD 2,
    and the loopback's Flory step."""
    io = FID.iops_table(ev.iscsi)
    ends = FID.stall_end_table(ev.iscsi[ev.iscsi.role == "test"])
    early = ends[ends.sim_qd < ends.kernel_qd]
    limited = early.link.str.endswith("g")
    return {
        "io": io,
        "ends": ends,
        "early": early,
        "early_limited": early[limited],
        "early_nagle": early[(early.sock_mode == "nagle") & ~limited],
        "by_size": io.groupby("iosize_bytes")["ratio"].median(),
        "nagle": io[io.sock_mode == "nagle"],
        "v1500": io[v1500_rows(io)],
        "lo_step": ev.steps[ev.steps.link == "loopback"].iloc[0],
    }


def findings(ev: Any, profile: Any, apart_step: Any) -> dict[str, bool]:
    """The claims of the text; ``apart_step`` is the loopback row of
    :func:`~models.validation.flory.flory_evaluation` with the two ends apart (``machine=False``)."""
    p = _parts(ev)
    host = profile.host
    return {
        "the goals missed are the ones the text names": {g.name for g in ev.goals if not g.met}
        == MISSED,
        "every early stall end is on a limited link or behind a Nagle server": len(
            p["early_limited"]
        )
        + len(p["early_nagle"])
        == len(p["early"]),
        "64 KiB too fast, Nagle servers too fast": bool(
            p["by_size"][65536] > FID.RATIO_RANGE[1] and p["nagle"]["ratio"].median() > 1
        ),
        "the loopback's Flory step: the simulator's drop deeper than the kernel's": bool(
            p["lo_step"].sim_change < p["lo_step"].kernel_change < 1
        ),
        "with the two ends apart the loopback's step is wrong": not bool(apart_step.right),
        # the book's profile prices the pacing timer at nothing: once its work runs on the
        # server's CPU, where the kernel pins it, these rows run too fast
        "veth-1500 Nagle 4 KiB from QD 2: too fast with a timer that costs nothing": bool(
            p["v1500"]["ratio"].median() > 1 + FID.IOPS_TOL
        ),
        "the fast wake-up is faster than the slow one": 0 < host["wake_fast_s"] < host["wake_s"],
    }


def numbers(ev: Any, profile: Any, field: Any, apart_step: Any) -> dict[str, Any]:
    """The values the text quotes, keyed by their glue names (counts, ratios, percent,
    microseconds, thousands of operations/s)."""
    p = _parts(ev)
    io, ends, v1500, lo = p["io"], p["ends"], p["v1500"], p["lo_step"]
    test = ev.iscsi.role == "test"
    train_q1 = ev.iscsi[
        (ev.iscsi.role == "train") & (ev.iscsi.qd == 1) & (ev.iscsi.sock_mode != "nagle")
    ]
    host_us = {k: v * 1e6 for k, v in profile.host.items()}  # s -> us
    at_bound = [k for k, v in profile.provenance.items() if "bound" in v]
    unheld = io[io.sock_mode != "nagle"]
    return {
        "fid_rows": len(field.table("iscsi_loop")),
        "fid_test": int(test.sum()),
        "fid_limited": int((FID.link_limited(ev.iscsi) & test).sum()),
        "fid_q1": float(io.loc[io["qd"] == 1, "ratio"].median()),
        "fid_q8": float(io.loc[io["qd"] >= 8, "ratio"].median()),
        "fid_within": float(io["within"].mean() * 100),  # share -> percent
        "fid_ends_wrong": int((~ends.right).sum()),
        "fid_ends_n": len(ends),
        "fid_ends_early": len(p["early"]),
        "fid_early_limited": len(p["early_limited"]),
        "fid_early_nagle": len(p["early_nagle"]),
        "fid_at_bound": ", ".join(f"`{k}`" for k in at_bound) or "none",
        "fid_q1_lo": float(train_q1.lat_p50_us.min()),
        "fid_q1_hi": float(train_q1.lat_p50_us.max()),
        "fid_r64": float(p["by_size"][65536]),
        "fid_r512": float(p["by_size"][512]),
        "fid_nagle": float(p["nagle"]["ratio"].median()),
        "fid_nagle_within": float(p["nagle"]["within"].mean() * 100),
        "fid_unheld_within": float(unheld["within"].mean() * 100),
        "fid_wake_fast": host_us["wake_fast_s"],
        "fid_wake_idle": host_us["wake_fast_idle_s"],
        "fid_wake_slow": host_us["wake_s"],
        "fid_flory_right": int(ev.steps.right.sum()),
        "fid_flory_n": len(ev.steps),
        "fid_lo_kernel": float((1 - lo.kernel_change) * 100),
        "fid_lo_sim": float((1 - lo.sim_change) * 100),
        "fid_met": sum(g.met for g in ev.goals),
        "fid_lo_apart": float((1 - apart_step.sim_change) * 100),
        "fid_goals": len(ev.goals),
        "fid_v1500_n": len(v1500),
        "fid_v1500_within": int(v1500["within"].sum()),
        "fid_v1500_k": float(v1500["iops"].median() / 1e3),  # operations/s -> k
        "fid_v1500_s": float(v1500["sim_iops"].median() / 1e3),
        "fid_v1500_r": float(v1500["ratio"].median()),
    }

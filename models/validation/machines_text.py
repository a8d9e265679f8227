"""What chapter 9's "On a second machine" says of :func:`models.validation.machines.evaluate`'s
result: the numbers it quotes (:func:`numbers`, keyed by their glue names) and the claims its text
makes (:func:`findings`), each a claim that holds or not, so that the chapter's hidden cell only
asserts and glues them.  ``tests/test_machines.py`` holds the claims too."""

from __future__ import annotations

from typing import Any

from models.validation import machines as MA
from models.validation.fidelity import IOPS_SHARE, RATIO_RANGE, iops_table

__all__ = ["numbers", "findings", "wake_gaps"]


def _share(ev: Any, name: str, qds: Any = None) -> float:
    """The share of ``name``'s IOPS rows within the tolerance (at the depths ``qds``, if given)."""
    io = iops_table(ev.tables[name])
    if qds is not None:
        io = io[io["qd"].isin(list(qds))]
    return float(io["within"].mean())


def _median(ev: Any, name: str, deep: bool) -> float:
    return MA.summary(ev.tables[name])["median, QD >= 8" if deep else "median, QD 1"]


def wake_gaps(profile: Any) -> tuple[dict, dict, dict]:
    """A profile's recorded cross-CPU wake-up after the shortest, the next and the longest idle
    gap (``cross_by_gap`` entries: ``gap_us``, ``median_us``)."""
    gaps = sorted(profile.records["measured"]["wake"]["cross_by_gap"], key=lambda g: g["gap_us"])
    return gaps[0], gaps[1], gaps[-1]


def _stalls(ev: Any) -> tuple[int, int]:
    """The calibrated model's test rows: stalls it has that the kernel had not, and the reverse."""
    t = ev.tables["calibrated"]
    t = t[t["role"] == "test"]
    sim, ker = t["sim_stalls"], t["kernel_stalls"]
    return int((sim & ~ker).sum()), int((~sim & ker).sum())


def _nagle_median(ev: Any) -> float:
    io = iops_table(ev.tables["calibrated"])
    return float(io.loc[io["sock_mode"] == "nagle", "ratio"].median())


def findings(ev: Any, first_share: float) -> dict[str, bool]:
    """The claims of the text; ``first_share`` is the share of the first machine's second draw
    within the tolerance (chapter 9's repeat, above the section)."""
    lo, hi = RATIO_RANGE
    cal, carry, ship = "calibrated", "carried over", "as shipped"
    false_stalls, missed = _stalls(ev)
    w1, w2 = (wake_gaps(ev.profiles[k]) for k in (ship, cal))
    return {
        "the second machine repeats itself far better than the first": _share(ev, MA.AUDITS[1])
        > IOPS_SHARE
        > first_share,
        "as shipped: both medians outside the band": _median(ev, ship, False) > hi
        and _median(ev, ship, True) < lo,
        "carried over: QD 1 inside, QD >= 8 not": lo <= _median(ev, carry, False) <= hi
        and _median(ev, carry, True) < lo,
        "calibrated: both medians inside": all(
            lo <= _median(ev, cal, deep) <= hi for deep in (False, True)
        ),
        "the shares rise from shipped to carried over to calibrated, short of the goal": (
            _share(ev, cal) > _share(ev, carry) > _share(ev, ship) and _share(ev, cal) < IOPS_SHARE
        ),
        "calibrated: nearly all of QD 1 and 2, under half from QD 16": _share(ev, cal, [1, 2])
        > 0.9
        and _share(ev, cal, range(16, 65)) < 0.5,
        "calibrated: stalls both added and missed": false_stalls > 0 and missed > 0,
        "calibrated: Nagle servers too fast": _nagle_median(ev) > hi,
        "the wake-up after the next gap: fast on the first machine, slow on the second": (
            w1[1]["median_us"] < 1.5 * w1[0]["median_us"]
            and w2[1]["median_us"] > 1.5 * w2[0]["median_us"]
        ),
    }


def numbers(ev: Any) -> dict[str, Any]:
    """The values the text quotes, keyed by their glue names (percent, ratios, microseconds,
    nanoseconds per byte, counts, kernel releases)."""
    one, two = ev.profiles["as shipped"], ev.profiles["calibrated"]
    false_stalls, missed = _stalls(ev)
    out: dict[str, Any] = {
        "m1_kernel": one.machine["kernel"],
        "m2_kernel": two.machine["kernel"],
        "m2_runs": len(ev.tables["calibrated"]),
        "m2_again": _share(ev, MA.AUDITS[1]) * 100,  # share -> percent
        "m1_beside": _share(ev, MA.AUDITS[0]) * 100,
        "m1_beside_q1": _median(ev, MA.AUDITS[0], False),
        "m1_beside_q8": _median(ev, MA.AUDITS[0], True),
    }
    for key, name in (("ship", "as shipped"), ("carry", "carried over"), ("cal", "calibrated")):
        out[f"m_{key}_share"] = _share(ev, name) * 100
        out[f"m_{key}_q1"] = _median(ev, name, False)
        out[f"m_{key}_q8"] = _median(ev, name, True)
    out["m_cal_low"] = _share(ev, "calibrated", [1, 2]) * 100
    out["m_cal_deep"] = _share(ev, "calibrated", range(16, 65)) * 100
    out["m_cal_false"] = false_stalls
    out["m_cal_missed"] = missed
    out["m_cal_nagle"] = _nagle_median(ev)
    for k, p in (("m1", one), ("m2", two)):
        w = wake_gaps(p)
        out[f"{k}_w_short"] = w[0]["median_us"]
        out[f"{k}_w_gap0"] = w[0]["gap_us"]
        out[f"{k}_w_gap1"] = w[1]["gap_us"]
        out[f"{k}_w_next"] = w[1]["median_us"]
        out[f"{k}_w_long"] = w[2]["median_us"]
        out[f"{k}_send_ns"] = p.records["measured"]["send_model"]["per_byte_ns"]
        out[f"{k}_recv_ns"] = p.records["measured"]["recv"]["large"]["per_byte_ns"]
    return out

"""The pacing timer's CPU carried to the field sweep's machine (comparisons).

The book's profile (``data/hosts/kernel6.json``) was made before ``python -m models.measure costs``
timed bbr's pacing timer, so in the simulator its timer costs nothing.  The three machines measured
since (:data:`DONORS`, the same virtual machine image on three builds of kernel 6.18.44) each
measured what arming it and taking its interrupt cost, and they agree to within a fifth
(:func:`donor_costs`).  The first machine is gone, so its own costs cannot be measured; this module
carries the donors' median to it (:func:`carried`) and simulates the whole field sweep with it,
and with it and a sent frame freed as the link takes it (``Link.freed_on_handover``, what the fourth
machine's readings showed of loopback and veth).  Nothing is fitted to the field sweep: every row
keeps its role, and a test row is still a test; but the costs are borrowed, so the rows are a
what-if about the first machine, not a measurement of it.

:func:`table` puts the two beside the shipped profile and beside the kernel's own second draw of the
sweep (an audit, :func:`models.validation.draws.repeat_table`): the share of unlimited-link test rows
within :data:`~models.validation.fidelity.IOPS_TOL`, the medians at QD 1 and QD >= 8, the stall
verdicts, and the same share for the bbr rows behind a Nagle server, the rows whose server arms the
timer for nearly every response.
"""

from __future__ import annotations

import copy
import math
import statistics
from typing import TYPE_CHECKING, Any

from models.measure.hostfields import TIMER_FIELDS
from models.validation import fidelity as FID

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DONORS",
    "SHIPPED",
    "CARRIED",
    "FREED",
    "REPEAT",
    "donor_costs",
    "carried_costs",
    "carried",
    "freed_scenario",
    "simulate",
    "table",
    "findings",
    "counting_error_pts",
    "numbers",
]

#: The bundled profiles that measured the pacing timer's costs on their own machine.
DONORS = ("kernel6_machine3", "kernel6_machine4", "kernel6_machine5")
#: The table's rows: three models (tests) and the kernel against itself (an audit).
SHIPPED = "shipped profile"
CARRIED = "timer's CPU carried"
FREED = "timer's CPU carried, frames freed"
REPEAT = "the kernel's second draw"


def donor_costs() -> pd.DataFrame:
    """Each donor's pacing-timer costs (microseconds), one row per donor with its kernel build."""
    import pandas as pd

    from models.sim import hostprofile

    rows = []
    for name in DONORS:
        p = hostprofile.shipped(name)
        row = {"profile": name, "kernel": p.machine.get("kernel", "")}
        row.update({f: p.host[f] * 1e6 for f in TIMER_FIELDS})  # s -> us
        rows.append(row)
    return pd.DataFrame(rows).set_index("profile")


def carried_costs() -> dict[str, float]:
    """The donors' median of each pacing-timer cost, seconds."""
    d = donor_costs()
    return {f: statistics.median(d[f]) / 1e6 for f in TIMER_FIELDS}  # us -> s


def carried(profile: Any) -> Any:
    """``profile`` (a :class:`~models.sim.hostprofile.HostProfile`) with the donors' median
    pacing-timer costs, each field's provenance saying where it came from."""
    from models.sim import hostprofile

    d = copy.deepcopy(profile.to_dict())
    for name, value in carried_costs().items():
        d["host"][name] = value
        d["provenance"][name] = f"carried: the median of {', '.join(DONORS)} (not this machine's)"
    return hostprofile.load(d)


def freed_scenario(table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`~models.validation.fidelity.field_scenario` with a sent data frame freed as the link
    takes it (``Link.freed_on_handover``; a module-level function: it pickles)."""
    return FID.field_scenario(table, row, host, hz).replace(link={"freed_on_handover": True})


def simulate(profile: Any, field: Any, processes: int | None = None) -> dict[str, pd.DataFrame]:
    """The field sweep's iSCSI-loop table (``field``, a :class:`models.kernel.KernelRun`) simulated
    with :func:`carried` ``(profile)``, as :func:`models.validation.fidelity.evaluate` simulates it,
    and again with frames freed; keyed by :data:`CARRIED` and :data:`FREED`."""
    lent = carried(profile)
    return {
        CARRIED: FID.simulate_loop(field, lent, processes=processes),
        FREED: FID.simulate_loop(field, lent, processes=processes, scenario=freed_scenario),
    }


def _bbr_nagle(io: pd.DataFrame) -> pd.DataFrame:
    return io[(io.cc == "bbr") & (io.sock_mode == "nagle")]


def _row(name: str, role: str, df: pd.DataFrame) -> dict[str, Any]:
    from models.validation.ackheld import summary

    base = summary(df)  # the share within, the medians and the verdicts, as every table here
    io = FID.iops_table(df)
    nagle = _bbr_nagle(io)
    return {
        "model": name,
        "role": role,
        "within_pct": base["within_pct"],
        "q1_ratio": base["median_q1"],
        "q8_ratio": base["median_q8"],
        "bbr_nagle_within_pct": float(nagle["within"].mean() * 100),  # share -> percent
        "bbr_nagle_ratio": float(nagle["ratio"].median()),
        "verdicts_right": base["verdicts_right"],
        "verdicts": base["test_rows"],
        "rows": len(io),
    }


def table(
    shipped: pd.DataFrame, sims: dict[str, pd.DataFrame], repeat: pd.DataFrame
) -> pd.DataFrame:
    """One row per model and one for the audit: ``shipped`` is the evaluated field table
    (:attr:`models.validation.fidelity.Evaluation.iscsi`), ``sims`` :func:`simulate`'s result and
    ``repeat`` :func:`models.validation.draws.repeat_table` of the first two draws."""
    import pandas as pd

    rows = [
        _row(SHIPPED, "test", shipped),
        _row(CARRIED, "test (borrowed costs)", sims[CARRIED]),
        _row(FREED, "test (borrowed costs)", sims[FREED]),
        _row(REPEAT, "audit", repeat),
    ]
    return pd.DataFrame(rows).set_index("model")


def findings(t: pd.DataFrame) -> dict[str, bool]:
    """The claims chapter 9 makes of :func:`table`'s result.

    >>> import pandas as pd
    >>> t = pd.DataFrame({"within_pct": [54.0, 58.0, 60.2, 60.3],
    ...     "q1_ratio": [1.07, 1.05, 1.04, 1.04], "q8_ratio": [1.05, 0.95, 0.90, 1.03],
    ...     "bbr_nagle_within_pct": [26.0, 46.0, 48.0, 70.0],
    ...     "bbr_nagle_ratio": [1.4, 0.9, 0.8, 1.0],
    ...     "verdicts_right": [1374, 1374, 1374, 1399], "rows": [861] * 4},
    ...     index=[SHIPPED, CARRIED, FREED, REPEAT])
    >>> all(findings(t).values())
    True
    >>> t.loc[FREED, "within_pct"] = 55.0   # a model no better than the shipped one
    >>> findings(t)["each step brings more rows within a quarter"]
    False
    """
    s, c, f, r = (t.loc[k] for k in (SHIPPED, CARRIED, FREED, REPEAT))
    lo, hi = FID.RATIO_RANGE
    return {
        "each step brings more rows within a quarter": bool(
            s.within_pct < c.within_pct < f.within_pct
        ),
        "the bbr rows behind a Nagle server gain the most": bool(
            f.bbr_nagle_within_pct - s.bbr_nagle_within_pct > f.within_pct - s.within_pct
        ),
        "the shipped profile is too fast behind a Nagle server under bbr": bool(
            s.bbr_nagle_ratio > 1 + FID.IOPS_TOL
        ),
        "no stall verdict changes": bool(s.verdicts_right == c.verdicts_right == f.verdicts_right),
        "the medians stay inside the goal's range": bool(
            all(lo <= x <= hi for x in (c.q1_ratio, c.q8_ratio, f.q1_ratio, f.q8_ratio))
        ),
        "with frames freed the model is as close as the kernel's second draw": bool(
            abs(f.within_pct - r.within_pct) <= counting_error_pts(r.within_pct, int(r.rows))
        ),
        # the miss the text names: not yet the kernel's rows
        "behind a Nagle server under bbr it overshoots, too slow": bool(f.bbr_nagle_ratio < 1),
        "there the kernel's second draw keeps more rows within": bool(
            r.bbr_nagle_within_pct > f.bbr_nagle_within_pct
        ),
    }


def counting_error_pts(share_pct: float, rows: int) -> float:
    """Two standard errors, in percentage points, of the difference between two shares of
    ``rows`` rows each near ``share_pct`` percent (binomial counting alone): how far two tables of
    the same rows can differ in their share within a quarter without telling anything apart.

    >>> round(counting_error_pts(60.0, 861), 1)
    4.7
    """
    p = share_pct / 100  # percent -> share
    return 2 * math.sqrt(2 * p * (1 - p) / rows) * 100  # share -> percentage points


def numbers(t: pd.DataFrame) -> dict[str, Any]:
    """The values chapter 9 quotes (percent, ratios, counts, microseconds), by glue name."""
    d = donor_costs()
    carried_us = {f: v * 1e6 for f, v in carried_costs().items()}  # s -> us
    out: dict[str, Any] = {
        "tc_arm_us": carried_us["timer_arm_cpu_s"],
        "tc_fire_us": carried_us["timer_fire_cpu_s"],
        "tc_arm_lo": float(d["timer_arm_cpu_s"].min()),
        "tc_arm_hi": float(d["timer_arm_cpu_s"].max()),
        "tc_fire_lo": float(d["timer_fire_cpu_s"].min()),
        "tc_fire_hi": float(d["timer_fire_cpu_s"].max()),
    }
    for key, name in (("ship", SHIPPED), ("carry", CARRIED), ("freed", FREED), ("rep", REPEAT)):
        row = t.loc[name]
        out[f"tc_{key}_within"] = float(row.within_pct)
        out[f"tc_{key}_nagle"] = float(row.bbr_nagle_within_pct)
        out[f"tc_{key}_nagle_r"] = float(row.bbr_nagle_ratio)
    return out

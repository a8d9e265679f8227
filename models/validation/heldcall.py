"""The held pacing call, counted once: what the eighth machine's traced calls show happens inside
a ``send()`` that arms bbr's pacing timer, the two rules that follow from it, and what they do
on three machines' runs.

The dataset (:data:`DATASET`, ``tools/plateau_calls_trace.py``, the plateau's rows of
:mod:`models.validation.plateau`) gives, for each of the server's data calls that armed the
timer, when the timer's soft interrupt ran after the arming, how long the call went on after it,
and whether the client's CPU was idle at that moment.  The machine's own microbenchmarks
(``data/hosts/kernel6_machine8.json``) give what arming a timer that becomes the CPU's next event
costs (``timer_arm_cpu_s``), what its interrupt costs (``timer_fire_cpu_s``) and what waking a
peer asleep on another CPU adds to the waker (``waker_curve_s``).  Two rules of the simulator
follow, each a ``Host`` flag:

* ``pacing_interrupt_once``: with ``pacing_arm_waits``, the held call's interrupt comes no
  earlier than the call has armed the timer, and its CPU is counted once, in the wait (the rule
  of chapter 9d charged it again after the wait, a known double count standing in for the
  call's work after the interrupt);
* ``soft_waker``: a segment released outside the thread's ``send()`` (here the held tail, when
  the timer fires) pays for waking the sleeping peer as a ``send()`` does; that is the call's
  work after the interrupt.

:func:`evaluate` holds the best rules with the wait (:func:`models.validation.machine7.waits`)
and with both flags too (:func:`~models.validation.machine7.waits_once`) to the seventh
machine's sample (a test: the rules were found on the eighth's trace, nothing of the seventh's
runs was looked at), the eighth's sample (where they were found: not a test) and the sixth
machine's whole field sweep (a test, another kind of virtual machine).
"""

from __future__ import annotations

import functools
from typing import Any

from models.validation import fidelity as FID

__all__ = [
    "DATASET",
    "SITES",
    "ROLES",
    "RULES",
    "WITHIN",
    "BY",
    "role",
    "FIRE_TOL",
    "FIRED_PCT",
    "kernel",
    "host_us",
    "pooled",
    "sample_table",
    "goal_lists",
    "evaluate",
    "goal_table",
    "site_role",
    "within_share",
    "findings",
    "numbers",
]

DATASET = "kernel6_machine8_plateau_calls"
#: The runs each pair of rules is held to, and what the new rules' column is there (the rule
#: with the call waiting is a test at all three).
SITES = ("the seventh's sample", "the eighth's sample", "the sixth's sweep")
ROLES = {SITES[0]: "test", SITES[1]: "fit", SITES[2]: "test"}
#: The two rules: the best rules with the held call, and with it counted once.
RULES = ("the call waits", "counted once")
#: The goal the comparison reads: the share of the rate goal's rows within the tolerance.
WITHIN = f"IOPS within {FID.IOPS_TOL:.0%}"
#: What names a scenario's row.
BY = ["link", "client_sock_mode", "qd", "iosize_bytes"]


def role(site: str, rule: str) -> str:
    """What the column of ``site`` under ``rule`` is: the rule with the call waiting is a test
    everywhere, the new rules where :data:`ROLES` says.

    >>> role(SITES[1], RULES[0]), role(SITES[1], RULES[1])
    ('test', 'fit')
    """
    return "test" if rule == RULES[0] else ROLES[site]


def site_role(roles: dict[str, str], rules: tuple, site: str, rule: str) -> str:
    """The role ``roles`` gives ``site``, for either of ``rules`` alike (a comparison whose two
    rules share each site's role); another rule is refused by name.

    >>> site_role({"here": "fit"}, ("a", "b"), "here", "b")
    'fit'
    """
    if rule not in rules:
        raise ValueError(f"rule must be one of {rules}, got {rule!r}")
    return roles[site]


def _armed(calls: Any = None) -> Any:
    from models import data

    d = data.load(DATASET) if calls is None else calls
    return d[(d["kind"] == "data") & d["armed"]]


def kernel(calls: Any = None) -> Any:
    """Per scenario of the trace, the server's data calls that armed the timer: how many, the
    share whose timer fired before the call returned (%), the medians (us) of the call, of the
    fire after the arming and of the return after the fire, and the share of fires that found
    the client's CPU idle (%)."""
    a = _armed(calls)
    fired = a[a["fire_after_arm_us"].notna()]
    out = a.groupby(BY).agg(calls=("call_us", "size"), call_us=("call_us", "median"))
    g = fired.groupby(BY)
    out["fired_pct"] = 100 * g.size() / out["calls"]
    out["fire_after_arm_us"] = g["fire_after_arm_us"].median()
    out["returned_after_fire_us"] = g["returned_after_fire_us"].median()
    out["peer_idle_pct"] = 100 * g["peer_idle_at_fire"].mean()
    return out


def pooled(calls: Any = None) -> Any:
    """All scenarios' fired calls together, by whether the client's CPU was idle at the fire:
    how many and the median return after the fire (us)."""
    a = _armed(calls)
    fired = a[a["fire_after_arm_us"].notna() & a["peer_idle_at_fire"].notna()]
    return fired.groupby(fired["peer_idle_at_fire"].astype(bool)).agg(
        calls=("call_us", "size"), returned_after_fire_us=("returned_after_fire_us", "median")
    )


def host_us(profile: str | None = None) -> dict[str, float]:
    """A machine's microbenchmarks (us; the eighth's unless ``profile`` names another shipped
    profile): arming a timer that becomes the CPU's next event, its interrupt, and their sum;
    the waker's cost, the median of its curve's points."""
    from statistics import median

    from models.sim import hostprofile
    from models.validation import machine8 as M8

    h = hostprofile.shipped(profile or M8.PROFILE).host
    arm, fire = h["timer_arm_cpu_s"] * 1e6, h["timer_fire_cpu_s"] * 1e6  # s -> us
    waker = median(w for _, w in h["waker_curve_s"]) * 1e6
    return {"arm_us": arm, "fire_us": fire, "arm_fire_us": arm + fire, "waker_us": waker}


def sample_table(prefix: str, profile: Any, processes: int, make: Any = None) -> Any:
    """A machine's sample of the field runs (``prefix``) simulated under ``profile``'s host,
    each row's scenario from ``make`` (a module-level function; default
    :func:`models.validation.field6.softirq_scenario`)."""
    from models.kernel import load_kernel_run
    from models.validation import field6 as F6

    run = load_kernel_run(prefix=prefix)
    table = run.table("iscsi_loop")
    make = F6.softirq_scenario if make is None else make
    summarise = functools.partial(
        FID.row_summary, make, "iscsi_loop", FID.ProfileHost(profile), run.hz
    )
    return FID.simulated(table, summarise, processes=processes)


@functools.lru_cache(maxsize=1)
def goal_lists(processes: int | None = None) -> dict[tuple[str, str], list]:
    """The field evaluation's goals (:class:`~models.validation.fidelity.Goal` lists) for each
    site and pair of rules ``(site, rule)``: the seventh's and the eighth's samples each on its
    own machine's calibration, the sixth's sweep as
    :func:`models.validation.machine7.sixth_goals` (Flory's too); the rule with the call waiting
    is read from those machines' evaluations (the same models).

    Cached once per process (a copy each call): ``processes`` says how many simulate it, not
    what, so chapter 9e's two comparisons share one run."""
    return dict(_goal_lists(FID.workers() if processes is None else processes))


@functools.lru_cache(maxsize=1)
def _goal_lists(processes: int) -> dict[tuple[str, str], list]:
    """The cached run behind :func:`goal_lists`."""
    from models.sim import hostprofile
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    n = processes
    waits, once = RULES
    seventh = hostprofile.shipped(M7.PROFILE)
    eighth = hostprofile.shipped(M8.PROFILE)
    # (the machines' own evaluations are cached once per process whatever ``processes`` is, so
    # that their chapters' runs answer and nothing is simulated twice)
    out = {
        (SITES[0], waits): FID.goals(M7.evaluate(processes).tables[M7.WAIT]),
        (SITES[0], once): FID.goals(sample_table(M7.PREFIX, M7.waits_once(seventh), n)),
        (SITES[1], waits): FID.goals(M8.evaluate(processes).tables[M8.HERE[1]]),
        (SITES[1], once): FID.goals(sample_table(M8.PREFIX, M7.waits_once(eighth), n)),
    }
    out[(SITES[2], waits)] = list(M7.sixth_goals(processes))
    out[(SITES[2], once)] = list(M7.sixth_goals(processes, once=True))
    return out


def evaluate(processes: int | None = None) -> Any:
    """:func:`goal_lists` as a table: one row per goal, one column per ``(site, rule)``, the
    goals' values as the field evaluation writes them."""
    return goal_table(goal_lists(processes))


def goal_table(lists: dict[tuple[str, str], list]) -> Any:
    """Goal lists by ``(site, rule)`` as a table: one row per goal, one column per
    ``(site, rule)``, the goals' values as the field evaluation writes them."""
    import pandas as pd

    return pd.DataFrame({col: {g.name: g.value for g in gs} for col, gs in lists.items()})


#: The fire counts as the timer's two costs if its median is within this share of their sum
#: (set after the trace was seen, 4 % there: the microbenchmarks' own spread between tries is
#: of that order), and the timer must fire inside the call in this share of armed calls (%;
#: 98-100 % there).
FIRE_TOL, FIRED_PCT = 0.15, 95.0


def within_share(goals: Any, site: str, rule: str) -> float:
    """The share within the tolerance (%) of ``site`` under ``rule``, from the goals' text of a
    :func:`goal_table`."""
    return float(str(goals.loc[WITHIN, (site, rule)]).rstrip("%"))


def findings(k: Any, pool: Any, host: dict[str, float], goals: Any) -> dict[str, bool]:
    """The chapter's claims (each fails on a wrong world in ``tests/test_heldcall.py``):

    * ``the timer's costs`` (a test: a microbenchmark against a trace): in every scenario at
      least 95 % of the armed calls saw their timer fire before returning, and the median fire
      after the arming is within :data:`FIRE_TOL` of the machine's arming and interrupt costs;
    * ``the work after it`` (a test): with the client's CPU idle the calls go on after the fire
      longer, by at least half the machine's waker cost, than with it busy;
    * ``better where tested``: on the seventh's sample the flags put more rows within the
      tolerance;
    * ``same verdicts, medians in range``: on both samples the flags give the stall verdicts the
      rule with the call waiting gives, and both median ratios inside the goal's range;
    * ``worse on the sixth``: on the sixth's sweep they put fewer, where the rule with the call
      waiting already ran QD 8 and above too fast (median ratio above 1).
    """
    waits, once = RULES
    lo, hi = FID.RATIO_RANGE
    qds = ("median ratio, QD 1", "median ratio, QD >= 8")
    return {
        "the timer's costs": bool(
            (k["fired_pct"] >= FIRED_PCT).all()
            and ((k["fire_after_arm_us"] / host["arm_fire_us"] - 1).abs() <= FIRE_TOL).all()
        ),
        "the work after it": bool(
            pool.loc[True, "returned_after_fire_us"] - pool.loc[False, "returned_after_fire_us"]
            >= 0.5 * host["waker_us"]
        ),
        "better where tested": within_share(goals, SITES[0], once)
        > within_share(goals, SITES[0], waits),
        "same verdicts, medians in range": all(
            goals.at["stall verdicts", (site, waits)] == goals.at["stall verdicts", (site, once)]
            and all(lo <= float(goals.at[q, (site, once)]) <= hi for q in qds)
            for site in SITES[:2]
        ),
        "worse on the sixth": within_share(goals, SITES[2], once)
        < within_share(goals, SITES[2], waits)
        and float(goals.at[qds[1], (SITES[2], waits)]) > 1,
    }


def numbers(k: Any, pool: Any, host: dict[str, float], goals: Any) -> dict[str, float]:
    """The numbers the chapter quotes, by name (us, %; the sixth machine's timer from the profile
    its sweep is held to)."""
    from models.validation import field6 as F6

    waits, once = RULES
    out = {
        "hc_fired_lo": float(k["fired_pct"].min()),
        "hc_fire_lo": float(k["fire_after_arm_us"].min()),
        "hc_fire_hi": float(k["fire_after_arm_us"].max()),
        "hc_arm": host["arm_us"],
        "hc_int": host["fire_us"],
        "hc_arm_fire": host["arm_fire_us"],
        "hc_back_idle": float(pool.loc[True, "returned_after_fire_us"]),
        "hc_back_busy": float(pool.loc[False, "returned_after_fire_us"]),
        "hc_busy_n": int(pool.loc[False, "calls"]),
        "hc_idle_lo": float(k["peer_idle_pct"].min()),
        "hc_waker": host["waker_us"],
    }
    for i, site in enumerate(SITES):
        for rule, tag in ((waits, "w"), (once, "o")):
            out[f"hc_{i}{tag}_within"] = within_share(goals, site, rule)
    out["hc_six_qd8"] = float(goals.at["median ratio, QD >= 8", (SITES[2], waits)])
    out["hc_six_timer"] = host_us(F6.PROFILE_WAKER)["arm_fire_us"]
    return out

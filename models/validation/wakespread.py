"""Wake-ups that scatter: the measured spread of each machine's socket wake-ups drawn in the
simulator instead of one latency per idle gap, held to three machines' runs.

Each profile's wake-up curve (``Host.wake_curve_s``) gives one latency per idle gap: the median
of the socket benchmark's wake-ups after that gap (``tcp_by_gap``), moved to the ping-pong's.  The
benchmark also kept each gap's 90th percentile, and on these virtual machines it lies a few
microseconds above the median (tens where the wake-ups split into a polling and a halted group).
A model that wakes every thread after exactly the median takes the same side of every race
between two threads' wake-ups on every operation, where the kernel takes one side on some
operations and the other on the rest.

The rule here has no free parameter: each wake-up draws a uniform extra latency in
``[0, wake_spread_s)`` (``Host.wake_spread_s``, seeded), and the curve moves down by half of it,
so each gap's median and mean wake-up stay the curve's.  The width is
:func:`models.measure.wakeups.wake_spread`: at each gap, the width of the uniform draw with that
gap's median and 90th percentile, the median over the gaps.  :func:`spread_profile` builds it
from a profile's own benchmark records.

:func:`evaluate` holds the best rules with the held call counted once
(:mod:`models.validation.heldcall`), with one wake-up per idle and with the spread, to the seventh
machine's sample and the sixth machine's whole field sweep (tests) and to the eighth's sample,
where hand-picked spreads of 10 and 20 us were tried before the width was defined from the
benchmark (so its column is a fit).
"""

from __future__ import annotations

import functools
from typing import Any

from models.validation import fidelity as FID
from models.validation import heldcall as HC

__all__ = [
    "SITES",
    "ROLES",
    "RULES",
    "WITHIN",
    "SWEEP_MOVE",
    "CAPTURE",
    "QD2_ROW",
    "role",
    "lone_shares",
    "spread_profile",
    "spreads",
    "SEEDS",
    "seeded_scenario",
    "seed_within",
    "goal_lists",
    "evaluate",
    "findings",
    "numbers",
]

SITES, ROLES = HC.SITES, HC.ROLES  # the sites heldcall's columns come from, alike
#: One wake-up latency per idle gap (the best rules as shipped), and the measured spread.
RULES = ("one wake-up per idle", "wake-ups that scatter")
WITHIN = HC.WITHIN
#: The random draws' seeds each sample is run with (the sweep and the tables: the first alone);
#: on the eighth's sample seeds 0-4 gave 68-73 % within the tolerance, so one seed's share says
#: little beyond two or three points.
SEEDS = (0, 1, 2)
#: Percentage points the sixth machine's share of rows within the tolerance may move by: set
#: after the evaluation was seen (it moved by 2).
SWEEP_MOVE = 3.0


#: The kernel's capture of a Nagle server's QD 2 row on the eighth machine
#: (``data/captures/CAPTURE.pcap``), and the sample's row it repeats: (link, server socket mode,
#: client socket mode, QD, response payload bytes).
CAPTURE = "veth1500_nagle_nodelayclient_qd2_2048"
QD2_ROW = ("veth-1500", "nagle", "nodelay", 2, 2048)


def role(site: str, rule: str) -> str:
    """What the column of ``site`` under ``rule`` is (:data:`ROLES`, alike for both rules).

    >>> role(SITES[0], RULES[1]), role(SITES[1], RULES[1])
    ('test', 'fit')
    """
    return HC.site_role(ROLES, RULES, site, rule)


def spread_profile(profile: Any) -> Any:
    """``profile`` with its benchmark's spread (``Host.wake_spread_s``, from
    :func:`models.measure.wakeups.wake_spread` of its own records) and its wake-up curve moved
    down by half of it; the profile itself when its records hold no spread.

    >>> from models.sim import hostprofile
    >>> from models.validation import machine8 as M8
    >>> p = hostprofile.shipped(M8.PROFILE)
    >>> s = spread_profile(p)
    >>> round(s.host["wake_spread_s"] * 1e6, 2)  # us
    8.59
    >>> round((p.host["wake_curve_s"][0][1] - s.host["wake_curve_s"][0][1]) * 1e6, 2)  # us
    4.29
    """
    from models.measure.wakeups import wake_spread

    width = wake_spread(profile.records.get("measured", {}).get("wake", {}))
    curve = profile.host.get("wake_curve_s")
    if not width or not curve:
        return profile
    if width / 2 >= min(t for _, t in curve):
        raise ValueError(
            f"wake_spread_s {width:g} s: half of it must stay below the curve's smallest "
            f"wake-up, {min(t for _, t in curve):g} s"
        )
    moved = [[idle, t - width / 2] for idle, t in curve]
    return profile.with_host(wake_spread_s=width, wake_curve_s=moved)


def _profiles() -> dict[str, Any]:
    """Each site's best rules with the held call counted once, one wake-up per idle."""
    from models.sim import hostprofile
    from models.validation import field6 as F6
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    sixth = hostprofile.shipped(F6.PROFILE_WAKER).with_host(pacing_arm_waits=True, **M7.ONCE_FLAGS)
    return {
        SITES[0]: M7.waits_once(hostprofile.shipped(M7.PROFILE)),
        SITES[1]: M7.waits_once(hostprofile.shipped(M8.PROFILE)),
        SITES[2]: sixth,
    }


def spreads() -> dict[str, float]:
    """Each site's measured spread (seconds) and its curve's smallest wake-up (seconds), by
    ``"<site>"`` and ``"<site> curve"``."""
    out = {}
    for site, p in _profiles().items():
        out[site] = float(spread_profile(p).host.get("wake_spread_s", 0.0))
        out[f"{site} curve"] = float(min(t for _, t in p.host["wake_curve_s"]))
    return out


def seeded_scenario(seed: int, table: str, row: dict[str, Any], host: Any, hz: int) -> Any:
    """:func:`models.validation.field6.softirq_scenario` drawing with ``seed`` (module level:
    bound with :func:`functools.partial`, it pickles)."""
    from models.validation import field6 as F6

    return F6.softirq_scenario(table, row, host, hz).replace(run={"seed": seed})


@functools.lru_cache(maxsize=1)
def _sample_goals(processes: int) -> dict[tuple[str, int], list]:
    """The two samples' goals with the spread, by ``(site, seed)``."""
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8

    profiles = _profiles()
    out = {}
    for site, m in ((SITES[0], M7), (SITES[1], M8)):
        profile = spread_profile(profiles[site])
        for seed in SEEDS:
            make = functools.partial(seeded_scenario, seed)
            out[(site, seed)] = FID.goals(HC.sample_table(m.PREFIX, profile, processes, make))
    return out


def seed_within(processes: int | None = None) -> Any:
    """The two samples' share of rows within the tolerance with the spread (%), one row per seed
    of :data:`SEEDS`, and one wake-up per idle's (``"one"``) beside them."""
    import pandas as pd

    n = FID.workers() if processes is None else processes
    got = _sample_goals(n)
    rows: dict[Any, dict[str, float]] = {}
    for (site, seed), gs in got.items():
        value = next(g.value for g in gs if g.name == WITHIN)
        rows.setdefault(seed, {})[site] = float(str(value).rstrip("%"))
    goals = evaluate(processes)
    rows["one"] = {s: HC.within_share(goals, s, RULES[0]) for s in SITES[:2]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")


@functools.lru_cache(maxsize=1)
def lone_shares(ops: int = 2000) -> dict[str, float]:
    """How often a response's header leaves alone on :data:`QD2_ROW` (lone headers,
    :func:`models.validation.qd2race.lone_headers`, per response): in the kernel's capture, and
    in the best rules' trace on the eighth machine's calibration with one wake-up per idle
    (``"one"``) and with the spread (``"spread"``), ``ops`` operations each."""
    from models._paths import bundled_data_dir
    from models.framing import ISCSI_HEADER_BYTES
    from models.sim.engine import Simulation
    from models.validation import field6 as F6
    from models.validation import machine7 as M7
    from models.validation import machine8 as M8
    from models.validation import qd2race as Q

    size = ISCSI_HEADER_BYTES + QD2_ROW[4]  # bytes of one response
    rec = Q.records_from_capture(bundled_data_dir() / "captures" / f"{CAPTURE}.pcap")
    data = [r for r in rec if r[1] == "S" and r[3] > r[2]]
    responses = (data[-1][3] - data[0][2]) / size
    out = {"kernel": Q.lone_headers(rec, ISCSI_HEADER_BYTES) / responses}
    row, hz = M7.sample_row(*QD2_ROW, prefix=M8.PREFIX)
    one = _profiles()[SITES[1]]
    for name, profile in (("one", one), ("spread", spread_profile(one))):
        sc = F6.softirq_scenario("iscsi_loop", row, FID.ProfileHost(profile), hz)
        result = Simulation(sc.replace(run={"ops": ops, "trace": True})).run()
        lone = Q.lone_headers(Q.records_from_trace(result.trace), ISCSI_HEADER_BYTES)
        out[name] = lone / result.completed_total
    return out


@functools.lru_cache(maxsize=1)
def _sixth(processes: int) -> tuple:
    """The sixth machine's sweep (and Flory's steps) with the spread."""
    from models.kernel import load_kernel_run
    from models.validation import field6 as F6
    from models.validation import flory as FL

    run = load_kernel_run(prefix=F6.PREFIX)
    profile = spread_profile(_profiles()[SITES[2]])
    _, _, lists = FL.models_on_sweep(run, {RULES[1]: (profile, F6.softirq_scenario)}, processes)
    return tuple(lists[RULES[1]])


def goal_lists(processes: int | None = None) -> dict[tuple[str, str], list]:
    """The field evaluation's goals for each site and rule ``(site, rule)``; one wake-up per
    idle is :mod:`models.validation.heldcall`'s column (the same models, from its cached
    runs)."""
    n = FID.workers() if processes is None else processes
    one, spread = RULES
    held = HC.goal_lists(processes)
    out = {(site, one): held[(site, HC.RULES[1])] for site in SITES}
    samples = _sample_goals(n)
    for site in SITES[:2]:
        out[(site, spread)] = samples[(site, SEEDS[0])]
    out[(SITES[2], spread)] = list(_sixth(n))
    return out


def evaluate(processes: int | None = None) -> Any:
    """:func:`goal_lists` as a table: one row per goal, one column per ``(site, rule)``."""
    return HC.goal_table(goal_lists(processes))


def _count(goals: Any, name: str, site: str, rule: str) -> int:
    """The first number of a goal's "k of n" value (0 when the goal has none there)."""
    value = str(goals.loc[name, (site, rule)]) if name in goals.index else ""
    head = value.split(" of ")[0]
    return int(head) if head.isdigit() else 0


def findings(
    sp: dict[str, float], goals: Any, seeds: Any, lone: dict[str, float]
) -> dict[str, bool]:
    """The chapter's claims on the spreads ``sp`` (:func:`spreads`), the evaluation ``goals``
    (:func:`evaluate`), the samples' shares by seed ``seeds`` (:func:`seed_within`) and the QD 2
    row's lone headers ``lone`` (:func:`lone_shares`), each failed by a wrong world in
    ``tests/test_wakespread.py`` (the QD 2 thresholds set after the capture was read):

    * ``a few microseconds, below every curve``: each machine's spread is above 0 and half of it
      below its curve's smallest wake-up (so no drawn wake-up is shorter than the benchmark's
      fastest median less half the spread);
    * ``more rows within the tolerance on both samples``: on the seventh's and the eighth's
      samples the spread's share within the tolerance, averaged over :data:`SEEDS`, is above one
      wake-up per idle's;
    * ``the same verdicts, no fewer on the sweep``: the samples' stall verdicts are unchanged and
      the sweep's right verdicts and largest stalling QDs do not fall;
    * ``the sweep's magnitudes hold``: the sixth's share within the tolerance moves by under
      :data:`SWEEP_MOVE` points;
    * ``the QD 2 row stays apart``: the kernel sends a lone header for under one response in ten
      on :data:`QD2_ROW`, both models for at least four in ten.
    """
    one, spread = RULES
    first, second, sweep = SITES
    verdicts = "stall verdicts"
    return {
        "a few microseconds, below every curve": all(
            0 < sp[s] and sp[s] / 2 < sp[f"{s} curve"] for s in SITES
        ),
        "more rows within the tolerance on both samples": all(
            float(seeds.loc[list(SEEDS), s].mean()) > float(seeds.at["one", s])
            for s in (first, second)
        ),
        "the same verdicts, no fewer on the sweep": all(
            goals.at[verdicts, (s, spread)] == goals.at[verdicts, (s, one)]
            for s in (first, second)
        )
        and all(
            _count(goals, name, sweep, spread) >= _count(goals, name, sweep, one)
            for name in (verdicts, "largest stalling QD")
        ),
        "the sweep's magnitudes hold": abs(
            HC.within_share(goals, sweep, spread) - HC.within_share(goals, sweep, one)
        )
        < SWEEP_MOVE,
        "the QD 2 row stays apart": lone["kernel"] < 0.1
        and min(lone["one"], lone["spread"]) >= 0.4,
    }


def numbers(
    sp: dict[str, float], goals: Any, seeds: Any, lone: dict[str, float]
) -> dict[str, float]:
    """The numbers the chapter quotes, by name (microseconds, %, rows)."""
    one, spread = RULES
    sweep = SITES[2]
    out: dict[str, float] = {"ws_seeds_n": len(SEEDS)}
    for name in ("kernel", "one", "spread"):
        out[f"ws_lone_{name}"] = 100 * lone[name]  # share -> %
    for i, site in enumerate(SITES[:2]):
        drawn = seeds.loc[list(SEEDS), site]
        out[f"ws_{i}_lo"], out[f"ws_{i}_hi"] = float(drawn.min()), float(drawn.max())
        out[f"ws_{i}_mean"] = float(drawn.mean())
    for i, site in enumerate(SITES):
        out[f"ws_{i}_us"] = sp[site] * 1e6  # s -> us
        for rule, tag in ((one, "o"), (spread, "s")):
            out[f"ws_{i}{tag}_within"] = HC.within_share(goals, site, rule)
    for rule, tag in ((one, "o"), (spread, "s")):
        out[f"ws_2{tag}_verdicts"] = _count(goals, "stall verdicts", sweep, rule)
        out[f"ws_2{tag}_largest"] = _count(goals, "largest stalling QD", sweep, rule)
        out[f"ws_2{tag}_flory"] = _count(goals, "Flory's thresholds", sweep, rule)
    return out

"""Flory's thresholds (issue 22): the rate change across one byte past an MSS multiple, the
kernel's against the simulator's.

Flory's sweep (``python -m models.measure sweep --plan flory``) sends payloads on either side of
each threshold of :data:`FLORY_PAIRS` behind each server mode at QD 1; :func:`flory_steps` compares
the kernel's change of rate across a pair with the simulator's, and :func:`flory_goal` is the goal
of :mod:`models.validation.fidelity` on them.  Its rows are simulated as the harness measured them,
leaving out the operations of the harness's warm-up (:func:`harness_warmup_ops`).

>>> [f"{a}/{b}" for link, a, b in FLORY_PAIRS]
['1447/1448', '1448/1449', '4344/4345', '65483/65484']
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from models import framing
from models.validation.fidelity import (
    FIELD_PREFIX,
    IOPS_TOL,
    Goal,
    ProfileHost,
    field_scenario,
    goals,
    row_summary,
    simulate_loop,
    simulated,
    workers,
)

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "FLORY_PAIRS",
    "flory_steps",
    "step_rows",
    "flory_goal",
    "harness_warmup_ops",
    "harness_warmed",
    "flory_evaluation",
    "models_on_sweep",
]

#: Flory's thresholds as (link, payload below, payload above), bytes: one MSS (1447/1448) and one byte
#: past one and three MSS on Ethernet, one byte past the loopback's MSS (issue 22).
_ETH_MSS = framing.mss(1500)  # bytes: Ethernet's MSS
_LO_MSS = framing.mss(framing.MAX_MTU)  # bytes: the loopback's (IPv4's 65535-byte cap)
FLORY_PAIRS = (
    ("veth-1500", _ETH_MSS - 1, _ETH_MSS),
    ("veth-1500", _ETH_MSS, _ETH_MSS + 1),
    ("veth-1500", 3 * _ETH_MSS, 3 * _ETH_MSS + 1),
    ("loopback", _LO_MSS, _LO_MSS + 1),
)


def flory_steps(df: pd.DataFrame, mode: str = "nagle") -> pd.DataFrame:
    """Per pair of :data:`FLORY_PAIRS`: the kernel's and the simulator's change of rate from the
    smaller payload to the larger (``iops`` and ``sim_iops`` of a Flory table, server ``mode``),
    and whether the simulator's change has the kernel's direction and is within :data:`IOPS_TOL`
    of its size (ratio of the two changes)."""
    import pandas as pd

    rows = []
    by = df[df["sock_mode"] == mode].set_index(["link", "payload_bytes"])
    for link, a, b in FLORY_PAIRS:
        if (link, a) not in by.index or (link, b) not in by.index:
            continue
        k = float(by.loc[(link, b), "iops"] / by.loc[(link, a), "iops"])
        s = float(by.loc[(link, b), "sim_iops"] / by.loc[(link, a), "sim_iops"])
        same_way = (k > 1) == (s > 1)
        rows.append(
            {
                "link": link,
                "payloads": f"{a}/{b}",
                "kernel_change": k,
                "sim_change": s,
                "right": bool(same_way and abs(s / k - 1.0) <= IOPS_TOL),
            }
        )
    return pd.DataFrame(rows)


def step_rows(df: pd.DataFrame, mode: str = "nagle") -> pd.DataFrame:
    """The rows of a Flory table that :func:`flory_steps` reads: server ``mode``, the two payloads
    of each of :data:`FLORY_PAIRS` on its link (simulating only these gives the same steps).

    >>> import pandas as pd
    >>> df = pd.DataFrame({"link": ["veth-1500"] * 3 + ["loopback"], "sock_mode": ["nagle"] * 4,
    ...                    "payload_bytes": [1447, 1448, 2000, 1448]})
    >>> step_rows(df).payload_bytes.tolist()
    [1447, 1448]
    """
    wanted = {(link, n) for link, a, b in FLORY_PAIRS for n in (a, b)}
    keep = [
        m == mode and (link, int(n)) in wanted
        for link, m, n in zip(df["link"], df["sock_mode"], df["payload_bytes"])
    ]
    return df[keep]


def flory_goal(steps: pd.DataFrame) -> Goal:
    """The goal on Flory's thresholds for :func:`flory_steps`' table: every step right."""
    right = int(steps["right"].sum()) if len(steps) else 0
    return Goal(
        "Flory's thresholds",
        f"direction and size within {IOPS_TOL:.0%}",
        f"{right} of {len(steps)}",
        right == len(steps),
        len(steps),
    )


def harness_warmup_ops(iops: float) -> int:
    """Operations the kernel completed in the harness's warm-up at a row's ``iops``
    (:data:`models.measure.plan.WARMUP_S`, which the row's statistics leave out).

    >>> harness_warmup_ops(13526.0), harness_warmup_ops(23.3), harness_warmup_ops(0.0)
    (4058, 7, 0)
    """
    from models.measure.plan import WARMUP_S

    if isinstance(iops, bool) or not isinstance(iops, (int, float)) or not iops >= 0:
        raise ValueError(f"iops must be a number of operations per second >= 0, got {iops!r}")
    if not math.isfinite(iops):
        raise ValueError(f"iops must be finite, got {iops!r}")
    return math.ceil(WARMUP_S * iops)  # seconds x operations per second -> operations


def harness_warmed(make: Callable[..., Any], table: str, row: dict, host: Any, hz: int) -> Any:
    """``make``'s scenario of a harness row, leaving out at its start as many operations as the
    kernel's warm-up did (:func:`harness_warmup_ops`), and at least the scenario's own warm-up
    (its quick-ACK start); module level: it pickles."""
    sc = make(table, row, host, hz)
    return sc.replace(run={"warmup_ops": max(sc.warmup, harness_warmup_ops(float(row["iops"])))})


def flory_evaluation(
    profile: Any = None,
    run: Any = None,
    machine: bool = True,
    processes: int | None = None,
    scenario: Callable[..., Any] | None = None,
    harness_warmup: bool = True,
) -> pd.DataFrame:
    """Flory's steps (:func:`flory_steps`) alone, as :func:`~models.validation.fidelity.evaluate`
    computes them: the field sweep's Flory rows (or ``run``'s) simulated with ``profile``;
    ``machine=False`` gives each thread and soft interrupt a CPU of its own
    (:class:`~models.validation.fidelity.ProfileHost`); ``scenario`` makes each row's scenario
    instead of :func:`~models.validation.fidelity.field_scenario` (same arguments, a module-level
    function).

    Each row leaves out the operations of the harness's warm-up (:func:`harness_warmup_ops`), as
    the kernel's row did: a receiver whose window still grows (``tcp_grow_window``) enters
    quick-ACK mode on each segment and releases a held tail at once, so a model with the
    machine's growing buffer shows Flory's held-tail steps only past that growth, hundreds of
    exchanges in.  ``harness_warmup=False`` leaves out only the scenario's own start (its quick
    ACKs, ``2 QD + 20`` operations), as the iSCSI-loop rows are simulated: a contrast, and a
    wrong model for the tests."""
    from models.kernel import load_kernel_run
    from models.sim import hostprofile

    run = run or load_kernel_run(prefix=FIELD_PREFIX)
    host = ProfileHost(profile or hostprofile.shipped(), machine=machine)
    make = scenario or field_scenario
    if harness_warmup:
        make = functools.partial(harness_warmed, make)
    each = functools.partial(row_summary, make, "flory", host, run.hz)
    n = workers() if processes is None else processes
    return flory_steps(simulated(step_rows(run.table("flory")), each, processes=n))


def models_on_sweep(
    run: Any, named: dict[str, tuple[Any, Callable[..., Any]]], processes: int
) -> tuple[dict, dict, dict]:
    """Each model of ``named`` (name -> (host profile, scenario function)) held to every
    iSCSI-loop run of the sweep ``run`` and to its Flory steps: by name, the evaluated table
    (:func:`~models.validation.fidelity.simulate_loop`), the steps (:func:`flory_evaluation`) and
    the field's goals with Flory's last, simulated in ``processes`` processes, model after model."""
    tables, steps, lists = {}, {}, {}
    for name, (profile, make) in named.items():
        t = simulate_loop(run, profile, processes=processes, scenario=make)
        s = flory_evaluation(profile, run, processes=processes, scenario=make)
        tables[name], steps[name] = t, s
        lists[name] = goals(t) + [flory_goal(s)]
    return tables, steps, lists

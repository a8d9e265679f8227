"""What a tcpdump capture does to the rates of Flory's rows (``tools/capture_cost.py``).

The Flory sweep captured its runs with tcpdump where it could (its table's ``capture_tool``), and
Flory's goal (:mod:`models.validation.flory`) holds the simulator, which has no capture in it, to
the change of those captured rates across each threshold.  The dataset :data:`DATASET` runs the
same exchange at the same payloads behind a Nagle and a ``TCP_NODELAY`` server, each run once
captured and once not, interleaved, on a seventh machine.  All its rows are kernel against
kernel: audits of the measurement, not tests of a model.

* :func:`rates`: per link, payload and server mode, the median rate and median exchange time of
  the captured and of the uncaptured runs, what the capture adds to the exchange (us) and how
  much faster the uncaptured runs are (``slowdown``);
* :func:`steps`: Flory's change of rate across each pair of
  :data:`~models.validation.flory.FLORY_PAIRS` behind the Nagle server, from the captured and from
  the uncaptured runs, and how far apart the two are against the goal's quarter
  (:data:`~models.validation.fidelity.IOPS_TOL`).

>>> import pandas as pd
>>> df = pd.DataFrame({"link": ["veth-1500"] * 4, "payload_bytes": [1448] * 4,
...                    "sock_mode": ["nodelay"] * 4, "captured": [True, True, False, False],
...                    "iops": [90.0, 100.0, 110.0, 120.0],
...                    "exchange_p50_us": [10.0, 11.0, 8.0, 9.0]})
>>> rates(df).loc[("veth-1500", 1448, "nodelay"), ["added_us", "slowdown"]].round(3).tolist()
[2.0, 1.211]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation.fidelity import IOPS_TOL
from models.validation.flory import FLORY_PAIRS

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = [
    "DATASET",
    "STALL_US",
    "load",
    "rates",
    "steps",
    "repeat_steps",
    "turning",
    "against_misses",
    "worst_miss",
    "findings",
    "numbers",
]

#: The seventh machine's runs with and without the capture.
DATASET = "kernel6_machine7_capture_cost"
#: An exchange slower than this at its median is a delayed-ACK stall (us); the capture cannot
#: move a 40 ms wait, so such points are left out of what the capture adds.
STALL_US = 10_000.0


def load() -> pd.DataFrame:
    """The bundled dataset, checked against its sidecar."""
    from models.data import load as load_dataset

    return load_dataset(DATASET)


def rates(df: pd.DataFrame) -> pd.DataFrame:
    """Per ``(link, payload_bytes, sock_mode)``: the median ``iops`` and ``exchange_p50_us`` of
    the captured runs (``iops_cap``, ``p50_cap``) and of the others (``iops_free``,
    ``p50_free``), ``added_us`` = ``p50_cap - p50_free`` and ``slowdown`` = ``iops_free /
    iops_cap``; ``stalled`` where the uncaptured median exchange is a delayed-ACK stall."""
    g = df.groupby(["link", "payload_bytes", "sock_mode", "captured"])
    med = g[["iops", "exchange_p50_us"]].median().unstack("captured")
    out = med.copy()
    out.columns = [
        f"{'iops' if what == 'iops' else 'p50'}_{'cap' if cap else 'free'}"
        for what, cap in med.columns
    ]
    out["added_us"] = out["p50_cap"] - out["p50_free"]
    out["slowdown"] = out["iops_free"] / out["iops_cap"]
    out["stalled"] = out["p50_free"] > STALL_US
    return out


def _pair_steps(iops: pd.Series, mode: str) -> dict[str, float]:
    """Flory's change of rate across each pair of ``FLORY_PAIRS`` (``"a/b"`` -> rate at ``b``
    over rate at ``a``) from ``iops`` indexed by ``(link, payload_bytes, sock_mode)``; pairs
    it lacks are left out."""
    out = {}
    for link, a, b in FLORY_PAIRS:
        if (link, a, mode) in iops.index and (link, b, mode) in iops.index:
            out[f"{a}/{b}"] = float(iops[(link, b, mode)] / iops[(link, a, mode)])
    return out


def steps(df: pd.DataFrame, mode: str = "nagle") -> pd.DataFrame:
    """Flory's change of rate across each pair of ``FLORY_PAIRS`` behind the ``mode`` server
    (index ``payloads``): ``captured`` and ``free`` (the larger payload's median rate over the
    smaller's), their ratio ``captured / free`` and whether it is inside the goal's quarter
    (``within``); pairs the dataset lacks are left out."""
    import pandas as pd

    r = rates(df)
    t = pd.DataFrame(
        {"captured": _pair_steps(r["iops_cap"], mode), "free": _pair_steps(r["iops_free"], mode)}
    )
    t.index.name = "payloads"
    t["ratio"] = t["captured"] / t["free"]
    t["within"] = (t["ratio"] - 1).abs() <= IOPS_TOL
    return t


def repeat_steps(df: pd.DataFrame, mode: str = "nagle") -> pd.DataFrame:
    """Flory's steps from the uncaptured runs of each sweep apart (a column per sweep, index
    ``payloads``): how far the kernel moves a step between two sweeps minutes apart."""
    import pandas as pd

    free = df[~df["captured"]]
    med = free.groupby(["sweep", "link", "payload_bytes", "sock_mode"])["iops"].median()
    t = pd.DataFrame({int(s): _pair_steps(med.loc[s], mode) for s in med.index.levels[0]})
    t.index.name = "payloads"
    return t


def _moves(st: pd.DataFrame) -> pd.Series:
    """How far the capture moved each step of a :func:`steps` table: the larger of captured
    and uncaptured over the smaller, less 1."""
    return st["ratio"].map(lambda r: max(r, 1 / r)) - 1


def turning(st: pd.DataFrame) -> list[str]:
    """The pairs of a :func:`steps` table whose step falls with the capture and rises without."""
    return list(st.index[(st["captured"] < 1) & (st["free"] > 1)])


def against_misses(model_steps: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """Per pair a model misses (``right`` false in a
    :func:`~models.validation.flory.flory_steps` table): the model's step over the kernel's
    (``miss``), the capture's move of that step here (``capture``: captured over uncaptured, from
    :func:`steps` of ``df``), and whether the capture could account for the miss (``covers``:
    the miss no farther from 1, in ratio, than the capture moved any step here)."""
    import math

    import pandas as pd

    st = steps(df)
    most = math.log1p(float(_moves(st).max()))
    rows = []
    for r in model_steps[~model_steps["right"].astype(bool)].itertuples():
        miss = float(r.sim_change / r.kernel_change)
        rows.append(
            {
                "payloads": r.payloads,
                "miss": miss,
                "capture": float(st.loc[r.payloads, "ratio"]),
                "covers": abs(math.log(miss)) <= most,
            }
        )
    return pd.DataFrame(rows, columns=["payloads", "miss", "capture", "covers"]).set_index(
        "payloads"
    )


def worst_miss(misses: pd.DataFrame) -> tuple[str, float]:
    """The pair of an :func:`against_misses` table whose miss is farthest from 1, and the miss."""
    if misses.empty:
        raise ValueError("misses has no rows: the model missed no step")
    pair = misses["miss"].map(lambda m: max(m, 1 / m)).idxmax()
    return str(pair), float(misses.loc[pair, "miss"])


def numbers(df: pd.DataFrame) -> dict[str, Any]:
    """The values the chapter quotes: the number of runs and of points that do not stall; over
    those points the median and largest slowdown (``slow_pct_*``, % of the captured rate) and
    added time (``added_us_*``); the capture's largest move of a step (``move_max_pct``); the
    step that turns under it (``turn_pair``; its ``turn_cap`` and ``turn_free``) and that
    step in the first and the last sweep without the capture (``repeat_first``,
    ``repeat_last``).

    Raises
    ------
    ValueError
        No step turns under the capture, so there is none for the text to name.
    """
    r = rates(df)
    moving = r[~r["stalled"]]
    st = steps(df)
    turns = turning(st)
    if not turns:
        raise ValueError("no step of Flory's turns under the capture in these runs")
    turn = turns[0]
    rep = repeat_steps(df).loc[turn]
    return {
        "runs": float(len(df)),
        "points": float(len(moving)),
        "slow_pct_median": 100 * float(moving["slowdown"].median() - 1),
        "slow_pct_max": 100 * float(moving["slowdown"].max() - 1),
        "added_us_median": float(moving["added_us"].median()),
        "added_us_max": float(moving["added_us"].max()),
        "move_max_pct": 100 * float(_moves(st).max()),
        "turn_pair": turn,
        "turn_cap": float(st.loc[turn, "captured"]),
        "turn_free": float(st.loc[turn, "free"]),
        "repeat_first": float(rep.iloc[0]),
        "repeat_last": float(rep.iloc[-1]),
    }


def findings(df: pd.DataFrame) -> dict[str, bool]:
    """What the text says of the dataset: the capture slows more than half of the points that
    do not stall, and by more than 5 % at their median; a stalled point keeps its rate (within
    5 %: the capture cannot move a 40 ms wait); no step of Flory's moves by more than the goal's
    quarter between the captured runs and the others; exactly one step turns under the
    capture; and the kernel's own repeat (that step's uncaptured value in two sweeps) moves it
    farther than the capture moved any step."""
    r = rates(df)
    moving, stalled = r[~r["stalled"]], r[r["stalled"]]
    st = steps(df)
    turns = turning(st)
    rep = repeat_steps(df)
    repeat_move = float((rep.max(axis=1) / rep.min(axis=1) - 1).loc[turns].max()) if turns else 0
    return {
        "the capture slows most points that do not stall": bool(
            (moving["slowdown"] > 1).mean() > 0.5
        ),
        "by more than 5 % at the median": bool(moving["slowdown"].median() > 1.05),
        "a stalled point keeps its rate": bool(
            len(stalled) > 0 and ((stalled["slowdown"] - 1).abs() < 0.05).all()
        ),
        "no step moves by more than the goal's quarter": bool(st["within"].all()),
        "one step turns under the capture": len(turns) == 1,
        "the kernel's repeat moves that step farther than the capture moves any": bool(
            rep.shape[1] >= 2 and repeat_move > float(_moves(st).max())
        ),
    }

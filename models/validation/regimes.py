"""bbr's two regimes on the eighth machine: why its kernel is slow at QD 32 and fast at QD 8.

The probe row of chapter 9e (:data:`models.validation.machine8.PROBE`: veth at MTU 1500, bbr, a
``TCP_NODELAY`` server, a Nagle client, 16 KiB responses) runs at the pacing-wait plateau at QD 32
while the same shape runs four times faster at QD 8, and every model runs both fast. The kernel's
server read its own socket through six whole runs (``tools/cc_regimes.py``, :data:`DATASET`):

* its estimate in start-up is a whole number of packets per whole microsecond (12, one 16 KiB
  buffer acknowledged within the same microsecond tick: the rate samples take their times from
  ``tcp_mstamp`` and the buffers' departure stamps, both in microseconds);
* at QD 8 it stays in start-up through the whole run; at QD 32 it leaves start-up (the flight now
  and then fills the window, so samples that are not application-limited end start-up) and its
  estimate then falls, with the pacing that follows it, to a few GB/s: the plateau.

The simulator's rate sampler keeps times in whole microseconds (:mod:`models.sim.rules.rate`), so
its estimate at QD 8 is the kernel's; at QD 32 its flight never comes near the window, so it stays
in start-up and fast: the mechanism still missing is whatever lets the kernel's flight reach the
window now and then (:func:`model`, :func:`findings`).
"""

from __future__ import annotations

from typing import Any

from models.measure.runner import RunSpec
from models.sim.rules.bbr_model import HIGH_GAIN

__all__ = [
    "DATASET",
    "DEPTHS",
    "WARMUP_US",
    "MODEL_OPS",
    "kernel",
    "runs",
    "packets_per_us",
    "model",
    "findings",
    "numbers",
]

#: The kernel's readings (``tools/cc_regimes.py``, the eighth machine, 2026-12-04).
DATASET = "kernel6_machine8_cc_regimes"
#: The two queue depths (the fast one, the probe's own).
DEPTHS = (8, 32)
#: The harness's warm-up in microseconds (readings after it fall in the measured window): its
#: default, which the tool's runs keep.
WARMUP_US = round(RunSpec.warmup_s * 1e6)  # s -> us
#: Operations the model runs from the connection's start at each depth (at QD 32 about 180 ms
#: simulated, longer than the kernel's slowest exit from start-up in :data:`DATASET`).
MODEL_OPS = {8: 12_000, 32: 40_000}


def kernel() -> Any:
    """The readings of :data:`DATASET`, the handshake's (response 0) left out."""
    from models import data

    k = data.load(DATASET)
    return k[k["op"] > 0]


def runs(k: Any = None) -> Any:
    """One row per kernel run (draw, QD): its IOPS (the sidecar's), when it left start-up (ms
    after ``accept()``, NaN if never), the share of its readings in start-up, its highest
    estimate in start-up and its median one in the measured window (GB/s), whether every reading
    in start-up was 12 packets per microsecond, and the most packets in flight."""
    import pandas as pd

    from models.data import describe

    k = kernel() if k is None else k
    iops = {(r["draw"], r["qd"]): r["iops"] for r in describe(DATASET)["measurement"]["runs"]}
    out = []
    for (draw, qd), g in k.groupby(["draw", "qd"]):
        start = g["cwnd_gain_x256"] == HIGH_GAIN  # start-up's window gain, x256
        left = g.loc[~start, "time_us"]
        window = g[g["time_us"] >= WARMUP_US]
        out.append(
            {
                "draw": draw,
                "qd": qd,
                "iops": iops[(draw, qd)],
                "left_ms": float(left.min()) / 1e3 if len(left) else float("nan"),  # us -> ms
                "startup_share": float(start.mean()),
                "startup_gbs": float(g.loc[start, "bw_bytes_per_s"].max()) / 1e9,  # B/s -> GB/s
                "all_twelve": bool(
                    (g.loc[start, "bw_bytes_per_s"] / 1e9).map(packets_per_us).sub(12).abs().max()
                    <= 0.12
                ),
                "window_gbs": float(window["bw_bytes_per_s"].median()) / 1e9,
                "flight_max": int(g["unacked"].max()),
            }
        )
    return pd.DataFrame(out)


def packets_per_us(gbs: float) -> float:
    """An estimate in GB/s as full segments per microsecond on the runs' path (veth at MTU 1500,
    :func:`models.framing.mss`).

    >>> round(packets_per_us(17.376), 3)
    12.0
    """
    from models.framing import mss

    return gbs * 1e9 / mss(1500) / 1e6  # GB/s -> B/s -> packets/s -> packets/us


def model(qd: int) -> dict[str, Any]:
    """The probe row at ``qd`` simulated for :data:`MODEL_OPS` operations from the start
    (:func:`models.validation.machine8.probe_run`, cached): its rate, span (ms), bbr's mode at
    the end, the estimate (GB/s), the window and the most packets in flight (packets)."""
    from models.validation import machine8 as M8

    if qd not in MODEL_OPS:
        raise ValueError(f"qd must be one of {sorted(MODEL_OPS)}, got {qd!r}")
    p = M8.probe_run(MODEL_OPS[qd], qd)
    return {
        "iops": p["sim_iops"],
        "span_ms": p["sim_s"] * 1e3,  # s -> ms
        "mode": p["mode"],
        "gbs": p["gbs"],
        "cwnd": p["cwnd"],
        "flight_max": p["flight_max"],
    }


def findings(r: Any, m8: dict, m32: dict) -> dict[str, bool]:
    """What chapter 9e says of the runs ``r`` (:func:`runs`) and the model at QD 8 and 32
    (``m8``, ``m32``: :func:`model`), each a claim that holds or not (thresholds set after the
    runs were seen; tests in ``tests/test_regimes.py`` fail each with a wrong world):

    * ``twelve packets per microsecond``: every run's highest start-up estimate is 12 segments
      per microsecond (within 1 %), and at QD 8 every reading is;
    * ``QD 8 stays in start-up``: every QD 8 run reads start-up at every reading;
    * ``QD 32 leaves start-up``: every QD 32 run leaves it, its estimate in the measured window
      under half the start-up one, and its rate under half the QD 8 runs' slowest;
    * ``only QD 32 fills the flight``: every QD 32 run has more than 140 packets in flight at some
      reading, every QD 8 run under 100;
    * ``the model's estimate is the kernel's``: the model's estimate at QD 8 is the kernel's
      start-up estimate within 1 %, and it stays in start-up there;
    * ``the model misses the exit`` (the known failure): at QD 32 the model stays in start-up over
      a span longer than the kernel's slowest exit, its flight never above 100 packets, its
      rate over twice the kernel's.
    """
    q8, q32 = r[r["qd"] == 8], r[r["qd"] == 32]
    twelve = (r["startup_gbs"].map(packets_per_us) - 12).abs() <= 0.12
    kernel_gbs = float(r["startup_gbs"].median())
    return {
        "twelve packets per microsecond": bool(twelve.all() and q8["all_twelve"].all()),
        "QD 8 stays in start-up": bool((q8["startup_share"] == 1).all()),
        "QD 32 leaves start-up": bool(
            q32["left_ms"].notna().all()
            and (q32["window_gbs"] < q32["startup_gbs"] / 2).all()
            and (q32["iops"] < q8["iops"].min() / 2).all()
        ),
        "only QD 32 fills the flight": bool(
            (q32["flight_max"] > 140).all() and (q8["flight_max"] < 100).all()
        ),
        "the model's estimate is the kernel's": bool(
            abs(m8["gbs"] / kernel_gbs - 1) <= 0.01 and m8["mode"] == "startup"
        ),
        "the model misses the exit": bool(
            m32["mode"] == "startup"
            and m32["span_ms"] > q32["left_ms"].max()
            and m32["flight_max"] <= 100
            and m32["iops"] > 2 * q32["iops"].max()
        ),
    }


def numbers(r: Any, m8: dict, m32: dict) -> dict[str, Any]:
    """The numbers the chapter quotes, by name (``rg_``)."""
    from models.framing import mss

    q8, q32 = r[r["qd"] == 8], r[r["qd"] == 32]
    return {
        "rg_mss": mss(1500),
        "rg_startup_gbs": float(r["startup_gbs"].median()),
        "rg_pkts_us": packets_per_us(float(r["startup_gbs"].median())),
        "rg_q8_iops_k": float(q8["iops"].median()) / 1e3,  # ops/s -> k
        "rg_q32_iops_lo_k": float(q32["iops"].min()) / 1e3,
        "rg_q32_iops_hi_k": float(q32["iops"].max()) / 1e3,
        "rg_left_lo_ms": float(q32["left_ms"].min()),
        "rg_left_hi_ms": float(q32["left_ms"].max()),
        "rg_window_gbs_lo": float(q32["window_gbs"].min()),
        "rg_window_gbs_hi": float(q32["window_gbs"].max()),
        "rg_q32_flight_lo": int(q32["flight_max"].min()),
        "rg_q8_flight": int(q8["flight_max"].max()),
        "rg_m8_gbs": m8["gbs"],
        "rg_m8_iops_k": m8["iops"] / 1e3,
        "rg_m32_iops_k": m32["iops"] / 1e3,
        "rg_m32_span_ms": m32["span_ms"],
        "rg_m32_flight": m32["flight_max"],
        "rg_m32_cwnd": m32["cwnd"],
    }

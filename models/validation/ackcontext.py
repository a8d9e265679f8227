"""Where the client's pure ACKs leave on the probe run's shape, the kernel's against the model's.

At QD 32 the eighth machine's kernel runs :data:`models.validation.machine8.PROBE` (veth-1500,
bbr, a ``TCP_NODELAY`` server and a Nagle client, 16 KiB responses) at a quarter of its QD 8
rate: its bbr leaves start-up and its estimate falls from the one-tick samples' 17 GB/s to a
few GB/s (chapter 9e, :mod:`models.validation.regimes`).  A one-tick sample is a 16 KiB buffer
acknowledged within a microsecond of leaving, which only an ACK sent in answer to its arrival
can be: in the receive soft interrupt, or from the socket's backlog as the client's call that
held the socket ends; an ACK left to the client's read comes later.  The dataset (:data:`DATASET`,
``tools/ack_context_trace.py``) counts, in a window of each of three runs at each QD of
:data:`QDS`, the client's pure ACKs by where they were queued: a soft interrupt, right after the
backlog gave the socket a data segment, or otherwise in the client's calls (its read, mostly).
:func:`model` counts the model's on the same shape by the rule that sends each: the arrival's
check (the model's client has no backlog: a segment that arrives during its call is processed at
once), the read, the delayed-ACK timer.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = [
    "DATASET",
    "QDS",
    "kernel",
    "count_pure_acks",
    "model",
    "table",
    "findings",
    "numbers",
]

DATASET = "kernel6_machine8_ack_context"
#: The queue depths traced: the probe's own, where the kernel's bbr falls, and the one where it
#: stays in start-up.
QDS = (8, 32)

#: The model's rules that send a pure ACK, by where the kernel would queue it: in the arrival's
#: soft interrupt (the receive path's check, or a delayed ACK sent early as its timer is almost
#: due), at the read (``tcp_cleanup_rbuf``, the application's step inlines it), or on the
#: delayed-ACK timer (a soft interrupt too, in the kernel's count).
_WHERE = {
    "receive": "arrival",
    "check": "arrival",
    "_arm_delayed_ack": "arrival",
    "_cleanup_rbuf": "read",
    "on_read": "read",
    "_step": "read",
    "_on_timer": "timer",
}


def kernel(runs: Any = None) -> Any:
    """One row per traced run (its QD and repeat): its rate (operations/s), its pure ACKs and the
    share of them sent in answer to an arrival (%: in a soft interrupt or from the backlog) and
    at the client's read or another of its calls (%)."""
    from models import data

    d = data.load(DATASET) if runs is None else runs
    answered = d["softirq"] + d["backlog"]
    return d.assign(
        arrival_pct=100 * answered / d["acks"],
        read_pct=100 * (d["acks"] - answered) / d["acks"],
    ).set_index(["qd", "repeat"])[["run_iops", "acks", "arrival_pct", "read_pct"]]


def count_pure_acks(sim: Any) -> dict[str, int]:
    """Count the pure ACKs of ``sim``'s client (not yet run) by the rule that sends each (see
    :data:`_WHERE`): the client's endpoint is given a subclass of its own class whose
    ``send_ack`` counts its caller's kind and does nothing else."""
    import sys

    ep = sim.client_ep
    base = type(ep)
    got = {"arrival": 0, "read": 0, "timer": 0, "other": 0}

    class Counted(base):  # type: ignore[misc, valid-type]
        __slots__ = ()

        def send_ack(self, now: int) -> None:
            f = sys._getframe(1)
            name = f.f_code.co_name
            if name == "send_ack" and f.f_back is not None:  # the receiver's relay: its caller
                name = f.f_back.f_code.co_name
            got[_WHERE.get(name, "other")] += 1
            base.send_ack(self, now)

    ep.__class__ = Counted
    return got


def model(qd: int) -> dict[str, float]:
    """The probe's shape at ``qd`` as chapter 9e's other tables run it
    (:func:`models.validation.machine8.probe_run` for
    :data:`models.validation.regimes.MODEL_OPS` operations, cached): the rate (operations/s),
    pure ACKs per operation and the share of them sent on arrival or on the delayed-ACK timer
    (%: what the kernel's trace counts in a soft interrupt or the backlog), at the read and
    otherwise."""
    from models.validation import machine8 as M8
    from models.validation import regimes as RG

    if qd not in RG.MODEL_OPS:
        raise ValueError(f"qd must be one of {sorted(RG.MODEL_OPS)}, got {qd!r}")
    ops = RG.MODEL_OPS[qd]
    p = M8.probe_run(ops, qd)
    got = p["client_acks"]
    acks = sum(got.values())
    done = p["sim_iops"] * p["sim_s"]  # operations completed
    return {
        "iops": p["sim_iops"],
        "acks_per_op": acks / done,
        "arrival_pct": 100 * (got["arrival"] + got["timer"]) / acks,
        "read_pct": 100 * got["read"] / acks,
        "other_pct": 100 * got["other"] / acks,
    }


@functools.lru_cache(maxsize=1)
def _model_rows() -> tuple:
    return tuple(model(qd) for qd in QDS)


def table(runs: Any = None) -> Any:
    """Per QD: the model's rate and shares (:func:`model`, run once per process), prefixed
    ``m_``."""
    import pandas as pd

    return pd.DataFrame(list(_model_rows()), index=pd.Index(QDS, name="qd")).add_prefix("m_")


#: What "nearly all" and "seldom" mean in the claims (% of a run's pure ACKs); set after the
#: trace was seen (the kernel's runs: 90-97 % in answer to arrivals at QD 8; at QD 32 99 % at
#: the read in two runs, 95 % in answer in the third).
MOST, FEW = 85.0, 15.0


def findings(k: Any, m: Any) -> dict[str, bool]:
    """The chapter's claims about :func:`kernel`'s runs ``k`` and :func:`table`'s model ``m``
    (each fails on a wrong world in ``tests/test_ackcontext.py``):

    * ``the kernel answers arrivals at QD 8`` (an audit): in every run at QD 8 at least
      :data:`MOST` % of the client's pure ACKs answer an arrival;
    * ``its slowest runs at QD 32 wait for the read``: at QD 32 some run leaves at least
      :data:`MOST` % to the read, and each such run is slower than each that answers arrivals;
    * ``the model leaves many to the read at QD 8``: at least twice :data:`FEW` % of its pure ACKs
      at QD 8 wait for the read (the kernel's runs: at most :data:`FEW` %);
    * ``and answers arrivals at QD 32``: at least :data:`FEW` % of its pure ACKs at QD 32 answer
      an arrival, where the kernel's runs that wait for the read leave fewer.
    """
    q8, q32 = k.xs(8, level="qd"), k.xs(32, level="qd")
    read32 = q32[q32["read_pct"] >= MOST]
    answer32 = q32[q32["read_pct"] < MOST]
    slower = (
        read32.empty or answer32.empty or (read32["run_iops"].max() < answer32["run_iops"].min())
    )
    return {
        "the kernel answers arrivals at QD 8": bool((q8["arrival_pct"] >= MOST).all()),
        "its slowest runs at QD 32 wait for the read": bool(not read32.empty and slower),
        "the model leaves many to the read at QD 8": bool(
            m.at[8, "m_read_pct"] >= 2 * FEW and (q8["read_pct"] <= FEW).all()
        ),
        "and answers arrivals at QD 32": bool(
            m.at[32, "m_arrival_pct"] >= FEW and (read32["arrival_pct"] < FEW).all()
        ),
    }


def numbers(k: Any, m: Any) -> dict[str, float]:
    """The numbers the chapter quotes, by name (% and thousands of operations a second)."""
    q8, q32 = k.xs(8, level="qd"), k.xs(32, level="qd")
    read32 = q32[q32["read_pct"] >= MOST]
    answer32 = q32[q32["read_pct"] < MOST]
    return {
        "ac_k8_lo": float(q8["arrival_pct"].min()),
        "ac_k8_kops": float(q8["run_iops"].median()) / 1e3,  # operations/s -> thousands
        "ac_read32_n": len(read32),
        "ac_read32_lo": float(read32["read_pct"].min()),
        "ac_read32_kops_hi": float(read32["run_iops"].max()) / 1e3,
        "ac_read32_kops_lo": float(read32["run_iops"].min()) / 1e3,
        "ac_answer32_kops": float(answer32["run_iops"].min()) / 1e3 if len(answer32) else 0.0,
        "ac_m8_read": float(m.at[8, "m_read_pct"]),
        "ac_m32_arrival": float(m.at[32, "m_arrival_pct"]),
        "ac_m32_kops": float(m.at[32, "m_iops"]) / 1e3,
    }

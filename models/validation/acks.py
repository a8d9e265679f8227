"""Which ACKs wait: the client's pure ACKs per operation, kernel against simulator.

The harness records, from ``tcp_info``, how many segments without data the client sent per
operation (``client_pure_acks_per_op``): the pure ACKs.  They are a count the simulator makes too,
and they cost the server CPU (``ack_cpu_s`` in the host profile), so a simulator that ACKs more or
less often than the kernel is wrong about the rate for a reason that a count shows.

Linux ACKs two full segments at once only if the window it would advertise does not shrink
(``__tcp_ack_snd_check``); otherwise the ACK waits for the application's read or rides on its next
request.  The book's kernel profile ``linux-6`` leaves that test out; ``linux-6-rwnd`` has it
(:mod:`models.sim.rules.rwnd`).  :func:`compare` holds both to the field sweep with the shipped host
profile.  The rows compared (:func:`ack_rows`) are the test rows on unlimited links at QD 2 and more
without a kernel stall (at QD 1 every response is ACKed once in both; a stall's ACK is the timer's).
A count agrees within :data:`ACK_TOL` of the kernel's or :data:`ACK_FLOOR` ACKs per operation,
whichever is larger: below a tenth of an ACK per operation the count is a few ACKs per thousand
operations, decided by start-up and by the odd late wake-up.

>>> import pandas as pd
>>> t = pd.DataFrame({"client_pure_acks_per_op": [1.0, 0.5, 0.02], "sim_client_acks": [1.1, 1.0, 0.1]})
>>> agrees(t).tolist()
[True, False, True]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from models.validation.fidelity import goals, link_limited, simulate_loop

if TYPE_CHECKING:  # annotations only
    import pandas as pd

__all__ = ["KERNELS", "ACK_TOL", "ACK_FLOOR", "agrees", "ack_rows", "compare"]

#: The kernel profiles compared: the book's, and the same with the receive window's test.
KERNELS = ("linux-6", "linux-6-rwnd")
#: A simulated count agrees within this share of the kernel's ...
ACK_TOL = 0.25
#: ... or within this many ACKs per operation, whichever is larger.
ACK_FLOOR = 0.1


def agrees(df: pd.DataFrame) -> pd.Series:
    """Whether each row's simulated pure ACKs per operation (``sim_client_acks``) agree with the
    kernel's (``client_pure_acks_per_op``)."""
    kernel = df["client_pure_acks_per_op"]
    gap = (df["sim_client_acks"] - kernel).abs()
    return gap <= (ACK_TOL * kernel).clip(lower=ACK_FLOOR)


def ack_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of an evaluated iSCSI-loop table (:func:`~models.validation.fidelity.simulate_loop`)
    whose ACK counts are compared, with ``agrees``."""
    keep = (
        (table["role"] == "test")
        & ~link_limited(table)
        & (table["qd"] >= 2)
        & ~table["kernel_stalls"]
    )
    out = table[keep].copy()
    out["agrees"] = agrees(out)
    return out


def compare(
    run: Any = None,
    profile: Any = None,
    processes: int | None = None,
    done: dict | None = None,
) -> dict:
    """The field sweep (``run``, default the bundled one) simulated on each kernel profile of
    :data:`KERNELS` with the host ``profile`` (default the shipped one); ``done`` maps a kernel
    profile to its evaluated iSCSI-loop table if already simulated (e.g. ``{"linux-6":
    fidelity.evaluate().iscsi}``).  Returns ``{"tables": {kernel: evaluated table}, "summary":
    one row per kernel}``: the share of ACK counts that agree and the median gap (ACKs per
    operation) over :func:`ack_rows`, then the field goals."""
    import pandas as pd

    from models.kernel import load_kernel_run
    from models.validation.fidelity import FIELD_PREFIX

    run = run or load_kernel_run(prefix=FIELD_PREFIX)
    done = done or {}
    tables = {
        k: done[k] if k in done else simulate_loop(run, profile, processes, kernel=k)
        for k in KERNELS
    }
    rows = []
    for kernel, table in tables.items():
        acks = ack_rows(table)
        gap = (acks["sim_client_acks"] - acks["client_pure_acks_per_op"]).abs()
        rows.append(
            {
                "kernel profile": kernel,
                "ACK counts agree": float(acks["agrees"].mean()),
                "median gap (ACKs/op)": float(gap.median()),
                **{g.name: g.value for g in goals(table)},
            }
        )
    return {"tables": tables, "summary": pd.DataFrame(rows).set_index("kernel profile")}

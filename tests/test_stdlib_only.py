"""The models the live figures run in the browser need only the stdlib.

The reader's browser runs CPython compiled to WebAssembly (Pyodide) with no
NumPy, SymPy or pandas.  Here a fresh interpreter is started with those
packages blocked (``sys.modules[name] = None`` makes any import of them
fail; ``BLOCKED`` and ``run_blocked`` in ``tools/build_live_bundle.py``),
imports the models, computes a few numbers and prints them as JSON;
they must equal, bit for bit, the numbers this process computes with the
normal imports.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from models import analytic as A
from models.ring import Ring

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from build_live_bundle import BLOCKED, run_blocked  # noqa: E402  (the one list)

STAGES = {"W1": 1.104e-6, "SP": 15.9e-6, "W2": 5.2e-6, "CP": 8e-6}

# Run in both interpreters (source text, so the blocked one needs no import
# of this test module, which imports NumPy).
NUMBERS = textwrap.dedent("""
    def numbers(A, Ring, stages):
        ring = Ring.four_stage(W1=1.104e-6, SP=15.9e-6, W2=5.2e-6,
                               CP=8e-6, SL=16.7e-6, CL=23.7e-6)
        runs = [ring.run(q, ops=300) for q in (1, 3, 8)]
        sizes = (0, 48, 560, 1448, 1449, 20000)
        mtus = (576, 1500, 9000, 65536)
        return {
            "wire_time": [A.wire_time(n, 1e9, m) for n in sizes
                          for m in mtus],
            "framing_efficiency": [A.framing_efficiency(m) for m in mtus],
            "frames": [A.frames(n, 1500) for n in sizes],
            "mss": [A.mss(m) for m in mtus],
            "iops_bound": A.iops_bound([1, 2.5, 8, 100], stages,
                                       latency=3e-6),
            "iops_bound_scalar": A.iops_bound(4, stages),
            "knee_qd": A.knee_qd(stages, latency=1e-6),
            "rtt_min": A.rtt_min(stages),
            "tpt_min": A.tpt_min(list(stages.values())),
            "cap": A.iops_bandwidth_cap(512, 1e9, mtu=1500),
            "qd_min": [A.qd_min_cpu(23.7e-6, 30e-6, 15.9e-6),
                       A.qd_min_network(23.7e-6, 30e-6, 16.7e-6, 5.2e-6)],
            "ring": [[r.iops, r.rtt_mean, r.busy_fraction["SP"]]
                     for r in runs],
        }
""")


def test_blocked_packages_really_fail_to_import():
    out = run_blocked("try:\n    import numpy\nexcept ImportError:\n    print('blocked')")
    assert out.stdout.strip() == "blocked", out.stderr


def test_models_give_identical_numbers_without_numpy_sympy_pandas():
    out = run_blocked(
        "\n".join(
            [
                "from models import analytic as A",
                "from models.ring import Ring",
                NUMBERS,
                f"print(json.dumps(numbers(A, Ring, {STAGES!r})))",
                # Nothing imported any blocked package behind our back.
                f"assert not any(sys.modules.get(n) for n in {BLOCKED!r})",
            ]
        )
    )
    assert out.returncode == 0, out.stderr
    namespace: dict = {}
    exec(NUMBERS, namespace)
    here = json.loads(json.dumps(namespace["numbers"](A, Ring, STAGES)))
    assert json.loads(out.stdout) == here


def test_numpy_arrays_still_in_and_out():
    arr = A.iops_bound(np.arange(1, 20), STAGES)
    assert isinstance(arr, np.ndarray) and arr.shape == (19,)
    assert arr.tolist() == A.iops_bound(list(range(1, 20)), STAGES)
    assert A.iops_bound(np.array([[1, 2], [3, 4]]), STAGES).shape == (2, 2)
    assert isinstance(A.iops_bound(np.float64(3), STAGES), float)
    assert isinstance(A.iops_bound(np.array(3.0), STAGES), float)
    assert A.wire_time(np.int64(560), np.float64(1e9)) == A.wire_time(560, 1e9)
    with pytest.raises(ValueError, match="qd"):
        A.iops_bound(np.array([1.0, 0.5]), STAGES)


def test_symbols_still_there_lazily():
    assert A.S.QD == sp.Symbol("QD", positive=True)
    assert A.S["SP"] is A.S.SP
    assert [str(s) for s in A.S][:2] == ["QD", "RTT"]
    with pytest.raises(AttributeError, match="no symbol"):
        _ = A.S.NOPE


@pytest.mark.parametrize(
    "cl, rtt, sl, w2, sp_",
    [
        (23.7e-6, 30e-6, 16.7e-6, 5.2e-6, 15.9e-6),
        (0.0, 1e-3, 0.0, 1e-4, 2e-4),
        (1e-6, 2e-6, 3e-6, 4e-6, 5e-6),
    ],
)
def test_numeric_thresholds_equal_the_derivations(cl, rtt, sl, w2, sp_):
    cpu = A.numeric(A.qd_min_cpu_bound())(CL=cl, RTTmin=rtt, SP=sp_)
    net = A.numeric(A.qd_min_network_bound())(CL=cl, RTTmin=rtt, SL=sl, W2=w2)
    assert A.qd_min_cpu(cl, rtt, sp_) == pytest.approx(cpu, rel=1e-15)
    assert A.qd_min_network(cl, rtt, sl, w2) == pytest.approx(net, rel=1e-15)
    with pytest.raises(ValueError, match="sp"):
        A.qd_min_cpu(cl, rtt, 0.0)
    with pytest.raises(ValueError, match="w2"):
        A.qd_min_network(cl, rtt, sl, -1.0)

"""bbr's state, kernel trace against simulator (models.validation.pacing): the check holds for the
shipped model and fails for a model without the application-limited mark."""

from __future__ import annotations

import pandas as pd
import pytest

from models.validation import pacing as P


@pytest.fixture(scope="module")
def kernel() -> pd.DataFrame:
    return P.kernel_states()


def test_the_kernel_trace_shows_the_split(kernel):
    k = kernel.set_index("server_sock_mode")
    assert k.loc["nagle", "bbr_mode"] == "probe_bw" and k.loc["nagle", "startup_share"] == 0
    assert k.loc["nodelay", "bbr_mode"] == "startup" and k.loc["nodelay", "startup_share"] == 1
    # the Nagle server's estimate spans more than a factor of ten; the NODELAY server's is steady
    assert k.loc["nagle", "estimate_q90_gbps"] > 10 * k.loc["nagle", "estimate_q10_gbps"]
    assert k.loc["nodelay", "estimate_q90_gbps"] == k.loc["nodelay", "estimate_q10_gbps"]


def test_the_simulated_states_agree_with_the_kernel(kernel):
    assert P.states_agree(pd.concat([kernel, P.simulated_states(ops=600)]))


def test_without_the_app_limited_mark_the_check_fails(kernel, monkeypatch):
    # a wrong model: no send() ever marks the samples application-limited, so the NODELAY server
    # leaves start-up like the Nagle one
    from models.sim.rules.rate import RateSampler

    monkeypatch.setattr(RateSampler, "check_app_limited", lambda self, *a, **k: None)
    sim = P.simulated_states(ops=600)
    assert (sim["startup_share"] < 0.5).all()
    assert not P.states_agree(pd.concat([kernel, sim]))

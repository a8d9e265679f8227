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


def test_bbr_window_matches_the_nodelay_server_and_is_short_for_the_nagle_one(kernel):
    sim = P.simulated_states(ops=600)
    within = P.window_within(pd.concat([kernel, sim]))
    # the NODELAY server (start-up: 2.89 x the BDP plus three super-packets) is within the
    # tolerance; the Nagle server's window is below the kernel's, whose ACK-aggregation
    # allowance is larger (the finding chapter 9 states)
    assert within == {"nodelay": True, "nagle": False}
    k = kernel.set_index("server_sock_mode")["window_q50_packets"]
    s = sim.set_index("server_sock_mode")["window_q50_packets"]
    assert s["nagle"] < k["nagle"]


def test_with_renos_window_the_window_check_fails(kernel, monkeypatch):
    # a wrong model, the simulator before bbr's window: bbr paces, but the window grows by
    # Reno's rule (slow start without loss) and bbr never sets it
    from models.sim.rules import bbr as B

    bbr_acked = B.Bbr.acked

    def acked(self, now, ack):
        cwnd, out = self.cwnd, self.packets_out
        bbr_acked(self, now, ack)  # bbr's model, pacing rate and window...
        self.cwnd = cwnd  # ...the window undone
        if out > self.packets_out:
            self.grow(out - self.packets_out)  # Reno's growth instead
        m = self.model
        if m.trace:
            m.trace[-1] = (*m.trace[-1][:3], self.cwnd, m.trace[-1][4])

    monkeypatch.setattr(B.Bbr, "acked", acked)
    sim = P.simulated_states(ops=600)
    assert P.window_within(pd.concat([kernel, sim])) == {"nodelay": False, "nagle": False}

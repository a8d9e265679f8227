"""The default hosts (``BUTTERFIELD_SERVER``, ``BUTTERFIELD_CLIENT``, the
scenario's defaults) against the dataset they are derived from.

The simulator's core imports only the standard library (it runs in the
reader's browser), so it cannot read ``data/`` itself; its constants are
checked here, each by the subtraction ``models/sim/scenario.py`` states.
"""

from __future__ import annotations

import pytest

from models.data import load
from models.sim import BUTTERFIELD_CLIENT, BUTTERFIELD_SERVER, Scenario


@pytest.fixture(scope="module")
def breakdown() -> dict:
    """Butterfield (2017)'s QD-1 breakdown, seconds by quantity."""
    t = load("butterfield2017_rtt_breakdown").set_index("quantity")
    return {q: v * 1e-6 for q, v in t["value_us"].items()}  # us -> s


def test_server_host_is_the_server_interval_less_its_wake_up(breakdown):
    s = BUTTERFIELD_SERVER
    assert s.wake_s == pytest.approx(breakdown["SL_plus_SN"], abs=1e-12)
    assert s.wake_s + s.proc_s == pytest.approx(breakdown["S2_minus_S1"], abs=1e-12)


def test_client_host_is_the_client_time_less_its_wake_up(breakdown):
    c = BUTTERFIELD_CLIENT
    client_time = breakdown["RTT"] - breakdown["C2_minus_C1"]
    assert client_time == pytest.approx(breakdown["client_time"], abs=1e-12)
    assert c.wake_s == pytest.approx(breakdown["CL_plus_CN"], abs=1e-12)
    assert c.wake_s + c.proc_s == pytest.approx(client_time, abs=1e-12)


def test_path_latencies_share_the_network_time_evenly(breakdown):
    for h in (BUTTERFIELD_SERVER, BUTTERFIELD_CLIENT):
        assert h.tx_latency_s == h.rx_latency_s
    total = 2 * (BUTTERFIELD_SERVER.tx_latency_s + BUTTERFIELD_CLIENT.tx_latency_s)
    assert total == pytest.approx(breakdown["CT_plus_SR_plus_ST_plus_CR"], abs=1e-12)
    assert Scenario().path_latency_s() == pytest.approx(total, abs=1e-12)


def test_scenario_defaults_are_the_presets():
    sc = Scenario()
    assert sc.server == BUTTERFIELD_SERVER and sc.client == BUTTERFIELD_CLIENT


def test_server_time_agrees_with_the_cpu_bound_rate():
    cpu = load("butterfield2017_cpu_bound_iops")
    remote = float(cpu.loc[cpu["initiator"] == "remote", "throughput_iops"].iloc[0])
    # the source rounds the rate to three digits: half a unit of the third
    assert 1 / BUTTERFIELD_SERVER.proc_s == pytest.approx(remote, rel=0.005)

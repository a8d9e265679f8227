"""Host.handoff_cpu_s and Host.handoff_ack_cpu_s: CPU that a message and a pure ACK cost more when
both ends run on one machine with a CPU each (Link.softirq_on_sender), and only then."""

from __future__ import annotations

import pytest

from models.sim import Scenario, simulate

BASE = Scenario(
    workload={"qd": 8},
    client={"nodelay": True, "proc_s": 2e-6, "ack_cpu_s": 1e-6},
    server={"nodelay": True, "proc_s": 3e-6, "ack_cpu_s": 1e-6},
    run={"ops": 400},
)
APART = {"softirq_on_sender": True}
SHARED = {"shared_cpus": 1}


def _iops(sc: Scenario) -> float:
    return simulate(sc).iops


def test_apart_the_hand_off_adds_to_the_message_cost():
    split = BASE.replace(
        link=APART,
        client={"proc_s": 1e-6, "handoff_cpu_s": 1e-6},
        server={"proc_s": 1e-6, "handoff_cpu_s": 2e-6},
    )
    assert _iops(split) == pytest.approx(_iops(BASE.replace(link=APART)), rel=1e-12)
    # and it is a cost: more of it, fewer operations
    more = split.replace(server={"handoff_cpu_s": 50e-6})
    assert _iops(more) < 0.9 * _iops(split)


def test_apart_the_ack_hand_off_adds_to_the_ack_cost():
    whole = BASE.replace(link=APART, client={"ack_cpu_s": 4e-6}, server={"ack_cpu_s": 4e-6})
    split = BASE.replace(
        link=APART,
        client={"ack_cpu_s": 1e-6, "handoff_ack_cpu_s": 3e-6},
        server={"ack_cpu_s": 1e-6, "handoff_ack_cpu_s": 3e-6},
    )
    assert simulate(split).iops == pytest.approx(simulate(whole).iops, rel=1e-12)


@pytest.mark.parametrize("link", [SHARED, {}], ids=["one shared CPU", "two machines"])
def test_without_two_cpus_of_one_machine_nothing_is_handed_off(link):
    plain = BASE.replace(link=link)
    handoff = plain.replace(
        client={"handoff_cpu_s": 5e-6, "handoff_ack_cpu_s": 5e-6},
        server={"handoff_cpu_s": 5e-6, "handoff_ack_cpu_s": 5e-6},
    )
    assert _iops(handoff) == _iops(plain)


@pytest.mark.parametrize("name", ["handoff_cpu_s", "handoff_ack_cpu_s"])
def test_a_bad_value_names_the_parameter(name):
    with pytest.raises(ValueError, match=name):
        BASE.replace(server={name: -1e-6})

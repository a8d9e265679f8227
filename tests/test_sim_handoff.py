"""Host.handoff_cpu_s, Host.handoff_ack_cpu_s and Host.handoff_byte_cpu_s: CPU that a message, a
pure ACK and a byte sent cost more when both ends run on one machine with a CPU each
(Link.softirq_on_sender), and only then."""

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


#: A busy server of 16 KiB responses on a link that limits nothing (its CPU sets the rate).
BYTES = BASE.replace(
    workload={"qd": 16, "request_writes": (48,), "response_writes": (48, 16384)},
    link={"mtu": 65536, "bandwidth_bps": 1e12},
    server={"send_byte_cpu_s": 0.05e-9},
)


def test_apart_the_byte_hand_off_adds_to_the_copy_cost():
    # send_byte 0.05 + handoff 0.1 ns per byte apart is send_byte 0.15 ns per byte
    split = BYTES.replace(link=APART, server={"handoff_byte_cpu_s": 0.1e-9})
    whole = BYTES.replace(link=APART, server={"send_byte_cpu_s": 0.15e-9})
    assert _iops(split) == pytest.approx(_iops(whole), rel=1e-12)
    # each 16 KiB response pays 16,448 bytes at 0.1 ns more: about 1.6 us of the server's CPU
    plain = _iops(BYTES.replace(link=APART))
    assert _iops(split) < plain


@pytest.mark.parametrize("link", [SHARED, {}], ids=["one shared CPU", "two machines"])
def test_without_two_cpus_of_one_machine_no_byte_is_handed_off(link):
    plain = BYTES.replace(link=link)
    assert _iops(plain.replace(server={"handoff_byte_cpu_s": 1e-9})) == _iops(plain)


@pytest.mark.parametrize("name", ["handoff_cpu_s", "handoff_ack_cpu_s", "handoff_byte_cpu_s"])
def test_a_bad_value_names_the_parameter(name):
    with pytest.raises(ValueError, match=name):
        BASE.replace(server={name: -1e-6})

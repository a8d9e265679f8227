"""models.validation.socketwake: the third machine's wake-up measured as the harness meets it
(a thread in poll() on a TCP socket; the ping-pong's level) and the path held at half the kernel's
smallest round trip, against the wrong model that takes the wake-ups from the pipe benchmark."""

from __future__ import annotations

import pytest

from models.measure.wakeups import socket_wake_curve
from models.sim import hostprofile
from models.validation import ackheld as AH
from models.validation import socketwake as SW


@pytest.fixture(scope="module")
def n():
    return SW.numbers()


def test_the_findings_hold(n):
    assert all(SW.findings(n).values()), SW.findings(n)


def test_the_profile_s_curve_is_its_own_measurement():
    p = hostprofile.shipped(AH.kept_name())
    curve = socket_wake_curve(p.records["measured"]["wake"])
    flat = [v for point in curve for v in point]
    assert flat == pytest.approx([v for point in p.host["wake_curve_s"] for v in point])
    assert p.provenance["tx_latency_s"].startswith("measured: half the kernel's smallest")
    assert "path_s" in p.records["fit"]["fixed"]


def test_the_pipe_s_wake_up_fails_the_findings(n):
    # the wrong model as the profile (its pipe wake-ups): the claims about the pinned sample fail
    wrong = dict(n, within_socket=n["within_pipe"], q1_socket=n["q1_pipe"])
    f = SW.findings(wrong)
    assert not f["more runs within with the socket's wake-up"]
    assert not f["without it QD 1 is further off, on the side the pipe's wake-up sets"]
    p = SW.pipe_wake(hostprofile.shipped(AH.kept_name()))
    assert "wake_curve_s" not in p.host and p.host["wake_fast_s"] > 0

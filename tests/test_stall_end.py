"""models.kernel.stall_end and ``python -m models.measure stall-end``: the deepest queue at which a
Nagle server keeps stalling on a TCP_NODELAY client's delayed ACK, from a host profile."""

from __future__ import annotations

import copy
import json
import math

import pytest

from models import analytic as A
from models import framing
from models.kernel import stall_end as SE
from models.measure.__main__ import main
from models.sim import hostprofile

PROFILE = "kernel6_machine3"


def test_the_end_is_the_inequality_s_on_the_profile_s_times():
    p = hostprofile.shipped(PROFILE)
    r = SE.stall_end(p, payload=512, mtu=framing.MAX_MTU)
    t = SE.emit_costs_s(p)
    top = A.qd_max_stall(t["SD"], t["SE"], t["CE"], t["W1"], t["W2"], t["CD"])
    assert r["ended_by"] == "wake-up" and r["qd_stall_max"] == math.floor(top)
    assert r["CD_us"] == pytest.approx(t["CD"] * 1e6) and r["CD_us"] > 0  # s -> us
    assert r["mss_bytes"] == framing.mss(framing.MAX_MTU)
    # the chapter's sweep measured only some depths: predicted_qd picks the largest of them
    assert r["qd_stall_max"] == 14
    assert SE.predicted_qd(p, [1, 2, 4, 8, 10, 12], 512, r["mss_bytes"]) == (12, "wake-up")
    assert SE.predicted_qd(p, [1, 2, 4, 8, 10], 512, r["mss_bytes"]) == (10, "wake-up")


def test_a_dearer_wake_up_for_the_waker_ends_the_stall_sooner():
    p = hostprofile.shipped(PROFILE)
    d = copy.deepcopy(p.to_dict())
    d["host"]["waker_curve_s"] = [[i, 2 * c] for i, c in d["host"]["waker_curve_s"]]
    base = SE.stall_end(p, 512, framing.MAX_MTU)
    dear = SE.stall_end(hostprofile.load(d), 512, framing.MAX_MTU)
    # twice the cost: CD/CE (about 2.2) more requests' time
    assert dear["qd_stall_max"] == math.floor(
        A.qd_max_stall(*(dear[f"{k}_us"] * 1e-6 for k in ("SD", "SE", "CE", "W1", "W2", "CD")))
    )
    more = base["CD_us"] / base["CE_us"]
    assert math.floor(more) <= base["qd_stall_max"] - dear["qd_stall_max"] <= math.ceil(more)


def test_responses_that_fill_a_segment_end_it_first():
    p = hostprofile.shipped(PROFILE)
    r = SE.stall_end(p, payload=4096, mtu=9000)
    assert (r["qd_stall_max"], r["ended_by"]) == (2, "segment")
    none = SE.stall_end(p, payload=65536, mtu=framing.MAX_MTU)
    assert none["qd_stall_max"] == 0
    assert "no delayed-ACK stall" in SE.format_stall_end(none)


@pytest.mark.parametrize(
    "kwargs, word",
    [({"payload": -1, "mtu": 1500}, "payload"), ({"payload": 512, "mtu": 40}, "mtu")],
)
def test_bad_sizes_are_refused_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        SE.stall_end(hostprofile.shipped(PROFILE), **kwargs)


def test_the_command_prints_the_end_and_its_terms(capsys, tmp_path):
    assert main(["stall-end"]) == 0
    out = capsys.readouterr().out
    assert f"{PROFILE} (the book's)" in out and "up to QD 14" in out and "CD 13.6 us" in out
    path = tmp_path / "mine.json"
    path.write_text(hostprofile.shipped(PROFILE).dumps())
    assert (
        main(["stall-end", "--host", str(path), "--iosize", "4096", "--mtu", "9000", "--json"])
        == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert got["host"] == str(path) and (got["qd_stall_max"], got["ended_by"]) == (2, "segment")


@pytest.mark.parametrize(
    "argv, word",
    [
        (["--iosize", "-1"], "--iosize"),
        (["--mtu", "40"], "--mtu"),
        (["--iosize", "x"], "--iosize"),
    ],
)
def test_the_command_refuses_bad_flags(argv, word, capsys):
    with pytest.raises(SystemExit) as info:
        main(["stall-end", *argv])
    assert info.value.code == 2
    assert word in capsys.readouterr().err


def test_the_command_refuses_a_file_that_is_not_a_profile(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["stall-end", "--host", str(bad)]) == 2
    assert "schema" in capsys.readouterr().err
    assert main(["stall-end", "--host", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err

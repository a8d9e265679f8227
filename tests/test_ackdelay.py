"""How long a Nagle server's data wait for their ACK (models.validation.ackdelay,
tools/ack_delay_sweep.py, models.measure.streams.ack_delays): the bundled sweep against the
simulator, a check that can pass, the tool's columns and refusals, and the wait read from a
capture-like stream."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.measure import streams
from models.validation import ackdelay as AD

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import ack_delay_sweep  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return AD.table()


def test_the_simulator_acks_the_server_s_data_far_sooner_than_the_kernel(table):
    f = AD.findings(table)
    assert all(f.values()), f
    assert not table["full_within"].any()  # a miss in every case, stated in chapter 9


def test_the_check_can_pass(table):
    right = table.assign(sim_full_ack_p50_us=table["full_ack_p50_us"] * 1.2)
    ok = (right["sim_full_ack_p50_us"] / right["full_ack_p50_us"] - 1.0).abs() <= AD.TOL
    assert ok.all()
    assert not AD.findings(right)["the simulator ACKs full segments sooner in every case"]


def test_the_tool_writes_the_bundled_columns_and_every_case():
    desc = data.describe(AD.DATASET)
    assert [f["name"] for f in desc["schema"]["fields"]] == [n for n, *_ in ack_delay_sweep.FIELDS]
    assert desc["schema"]["primaryKey"] == ack_delay_sweep.KEY
    df = data.load(AD.DATASET)
    assert set(df["cc"]) == set(ack_delay_sweep.CCS)
    cases = {(r.link, r.iosize_bytes, r.qd) for r in df.itertuples()}
    assert cases == {(k, s, q) for k, v in ack_delay_sweep.CASES.items() for s, q in v}
    assert (df["full_segments"] > 100).all()  # every run's full-segment median rests on many


@pytest.mark.parametrize(
    "argv, word", [(["--repeats", "0"], "--repeats"), (["--links", "x"], "--links")]
)
def test_bad_arguments_are_refused_before_any_run(argv, word, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        ack_delay_sweep.main(["--out", str(tmp_path), *argv])
    assert info.value.code == 2
    assert word in capsys.readouterr().err


def test_an_unacked_segment_has_no_wait_and_each_waits_from_its_own_send():
    data = [(0.0, 0, 1448), (1e-6, 1448, 2896), (2e-6, 2896, 3000)]
    acks = [(0.5e-6, 0), (3e-6, 2896)]  # an ACK older than the data covers nothing; none the tail
    w = streams.ack_delays(data, acks, mss=1448)
    assert [round(x * 1e6) for x in w["full"]] == [3, 2] and w["tail"] == []


def test_without_tcpdump_or_root_the_sweep_exits_before_any_run(monkeypatch):
    monkeypatch.setattr(ack_delay_sweep.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match="needs tcpdump and root"):
        ack_delay_sweep.sweep(0, ["veth-1500"], 1, 0.1)

"""Chapter 9's comparisons (``ch9.kernel``): the simulator against the bundled kernel sweep, back-tests with
corrupted kernel rows that must fail the right comparison, and a reader's own sweep folder."""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest

from models import data
from models import kernel as KR
from models.validation import kernel as K
from models.validation import run as run_set


@pytest.fixture(scope="module")
def bundled():
    return KR.kernel_tables("")  # the bundled run, whatever the environment says


def _failed(rows):
    return {r.quantity for r in rows if not r.passed}


def _compare(run, host, tables_run):
    """Re-derive the three tables from a (possibly corrupted) run and return its comparisons."""
    fl, isc, busy = (
        KR.flory_table(tables_run, host),
        KR.iscsi_table(tables_run, host),
        KR.busy_table(tables_run, host),
    )
    return K.comparisons_for(tables_run, host, fl, isc, busy)


def _with_table(run, name, df):
    return dataclasses.replace(run, tables={**run.tables, name: df})


def test_every_comparison_holds_on_the_bundled_run(monkeypatch):
    monkeypatch.delenv(KR.KERNEL_RUN_ENV, raising=False)
    rows = run_set("ch9.kernel")
    assert len(rows) > 50
    assert all(r.passed for r in rows), _failed(rows)
    assert all(r.chapter == "ch9" and r.why for r in rows)


def test_stall_verdicts_follow_the_mss_rule(bundled):
    _, _, fl, isc, _ = bundled
    assert (fl.kernel_stalls == fl.rule_stalls).all() and (fl.sim_stalls == fl.rule_stalls).all()
    kept = isc[isc.excluded == ""]
    assert (kept.kernel_stalls == kept.rule_stalls).all() and (
        kept.sim_stalls == kept.rule_stalls
    ).all()
    left = isc[isc.excluded != ""]  # one scenario measured twice with opposite verdicts
    assert len(left) == 2 and left.kernel_stalls.nunique() == 2


def test_a_stall_marked_where_none_was_fails_the_verdict_and_threshold(bundled):
    run, host, *_ = bundled
    df = run.iscsi.copy()
    bad = (
        (df.link == "veth-1500")
        & (df.sock_mode == "nagle")
        & (df.iosize_bytes == 512)
        & (df.qd == 3)
    )
    assert bad.sum() == 1
    df.loc[bad, "stalled_pct"] = 60.0  # the transcription error: QD 3 "stalled"
    failed = _failed(_compare(run, host, _with_table(run, "iscsi_loop", df)))
    assert failed == {
        "iSCSI loop, veth-1500, bbr: runs (mode x size x QD) given the kernel's stall verdict",
        "iSCSI loop, veth-1500, bbr, 512 B, Nagle: largest QD that stalls",
    }


def test_a_flory_payload_marked_stalled_fails_its_link(bundled):
    run, host, *_ = bundled
    df = run.flory.copy()
    bad = (df.link == "veth-1500") & (df.sock_mode == "nagle") & (df.payload_bytes == 1448)
    df.loc[bad, "stalled_pct"] = 100.0
    failed = _failed(_compare(run, host, _with_table(run, "flory", df)))
    assert failed == {
        "Flory, veth-1500: runs (payload x socket mode) given the kernel's stall verdict",
        "Flory, veth-1500, Nagle: largest payload that stalls",
    }


def test_a_40_ms_stall_fails_the_stall_period(bundled):
    # A kernel whose timer fired on the due tick (no round-up) would show 40 ms: the quarter-tick
    # tolerance must catch it.
    run, host, *_ = bundled
    df = run.iscsi.copy()
    rows = (df.link == "veth-9000") & (df.sock_mode == "nagle") & (df.qd == 1)
    df.loc[rows, "lat_p50_us"] = 40_000.0
    fl = run.flory.copy()
    fl.loc[
        (fl.link == "veth-9000") & (fl.stalled_pct >= KR.STALL_SHARE_PCT), "exchange_p50_us"
    ] = 40_000.0
    failed = _failed(
        _compare(run, host, _with_table(_with_table(run, "iscsi_loop", df), "flory", fl))
    )
    assert failed == {"veth-9000: median stalled exchange at QD 1 (median of 6 runs)"}


def test_a_slow_stalled_run_fails_the_floor(bundled):
    run, host, *_ = bundled
    df = run.iscsi.copy()
    row = (
        (df.link == "loopback")
        & (df.cc == "bbr")
        & (df.sock_mode == "nagle")
        & (df.qd == 2)
        & (df.iosize_bytes == 512)
    )
    df.loc[row, "iops"] = 45.0  # two operations per 44 ms: every operation stalled
    failed = _failed(_compare(run, host, _with_table(run, "iscsi_loop", df)))
    assert failed == {"loopback: lowest measured/simulated IOPS over 36 stalled runs at QD 2-64"}


def test_timers_without_the_round_up_fail(bundled):
    run, host, fl, isc, busy = bundled
    plain = isc.copy()
    plain["sim_p50_us"] = [
        KR.simulate_summary(
            KR.row_scenario("iscsi_loop", r, host, run.hz).replace(kernel={"kernel_timers": False})
        ).p50_us
        if r["sock_mode"] in ("nagle", "more_all") and r["qd"] <= 2
        else r["sim_p50_us"]
        for r in isc.to_dict("records")
    ]
    failed = _failed(K.comparisons_for(run, host, fl.assign(sim_p50_us=40_000.0), plain, busy))
    assert any("median stalled exchange at QD 1" in q for q in failed)
    assert any("MSG_MORE on both calls" in q for q in failed)


def _reader_folder(tmp_path, prefix="mine", link="loopback"):
    """A sweep folder as a normal user's run would write it: loopback only, one congestion control."""
    for t in ("flory", "iscsi_loop", "busy_counts"):
        src = data.DATA_DIR / f"kernel6_{t}"
        with open(f"{src}.csv", newline="") as f:
            rows = list(csv.reader(f))
        head, body = rows[0], rows[1:]
        keep = [r for r in body if r[head.index("link")] == link and r[head.index("cc")] == "bbr"]
        name = f"{prefix}_{t}"
        with open(tmp_path / f"{name}.csv", "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(head)
            w.writerows(keep)
        desc = json.loads(src.with_suffix(".json").read_text())
        desc.update(name=name, path=f"{name}.csv")
        (tmp_path / f"{name}.json").write_text(json.dumps(desc))
        data.rehash(name, tmp_path)
    return tmp_path


def test_a_readers_folder_is_loaded_fitted_and_compared(tmp_path, monkeypatch):
    folder = _reader_folder(tmp_path)
    monkeypatch.setenv(KR.KERNEL_RUN_ENV, str(folder))
    run, host, fl, isc, busy = KR.kernel_tables()
    assert run.folder == folder and run.prefix == "mine" and run.hz == 250
    assert set(isc.link) == {"loopback"} and set(isc.cc) == {"bbr"}
    assert 10e-6 < host.rtt1_s < 25e-6
    rows = run_set("ch9.kernel")
    assert rows and all(r.passed for r in rows), _failed(rows)
    assert all(str(folder) in r.source for r in rows)


def test_a_readers_folder_with_an_edited_csv_is_refused(tmp_path):
    folder = _reader_folder(tmp_path)
    csv_path = folder / "mine_iscsi_loop.csv"
    csv_path.write_text(csv_path.read_text().replace(",nagle,", ",nodelay,", 1))
    with pytest.raises(data.DatasetError, match="hash"):
        KR.load_kernel_run(folder)


def test_bad_inputs_are_refused(tmp_path, bundled):
    with pytest.raises(ValueError, match="directory"):
        KR.load_kernel_run(tmp_path / "missing")
    with pytest.raises(ValueError, match="iscsi_loop"):
        KR.load_kernel_run(tmp_path)
    run, host, *_ = bundled
    row = run.iscsi.iloc[0].to_dict()
    with pytest.raises(ValueError, match="sock_mode"):
        KR.row_scenario("iscsi_loop", dict(row, sock_mode="cork"), host)
    with pytest.raises(ValueError, match="table"):
        KR.row_scenario("pings", row, host)
    with pytest.raises(ValueError, match="columns"):
        KR.fit_host(run.iscsi.drop(columns=["lat_p50_us"]))


@pytest.mark.parametrize(
    "qd, n, mss, stalls",
    [
        (1, 1447, 1448, True),
        (1, 1448, 1448, False),
        (2, 512, 1448, True),
        (3, 512, 1448, False),
        (16, 512, 8948, True),
        (17, 512, 8948, False),
    ],
)
def test_stall_possible(qd, n, mss, stalls):
    assert KR.stall_possible(qd, 48 if n == 512 else 8, n, mss) is stalls


def test_link_options():
    assert KR.link_options(65536) == {"mtu": 65536, "bandwidth_bps": KR.UNLIMITED_BPS}  # MSS 65483
    assert KR.link_options(1500, 1e9) == {"mtu": 1500, "bandwidth_bps": 1e9, "bucket_bytes": 3028}
    assert KR.link_options(9000, float("nan"))["bandwidth_bps"] == KR.UNLIMITED_BPS


def test_the_fit_is_the_stated_recipe(bundled):
    run, host, *_ = bundled
    d = run.iscsi
    one = (
        d.sock_mode.isin(["more", "more_nodelay"])
        & d.rate_limit_bits_per_s.isna()
        & (d.cc == "bbr")
        & (48 + d.iosize_bytes <= d.mtu_bytes.clip(upper=65535) - 52)
    )
    assert host.rtt1_s == pytest.approx(d[one & (d.qd == 1)].lat_p50_us.median() * 1e-6)
    assert host.per_op_s == pytest.approx((1 / d[one & (d.qd == 64)].iops).median())
    opts = host.scenario_options()
    assert len({opts["server"]["wake_s"], opts["client"]["wake_s"], opts["client"]["proc_s"]}) == 1


def test_calibration_overview_marks_roles_and_tolerance():
    ov = K.calibration_overview("")
    assert list(dict.fromkeys(ov.role)) == ["train", "test", "bbr"]
    assert (ov.counts_as == ov.role.map(K.ROLE_KINDS)).all()
    off = (ov.sim_rate_iops / ov.rate_iops - 1).abs()
    assert (ov.within == (off <= K.CALIBRATION_TOL)).all()
    # the test groups within the tolerance are the calibration set's passing test rows
    tests = [r for r in run_set("ch9.calibration") if r.quantity.startswith("test:")]
    assert int((ov.within & (ov.role == "test")).sum()) == sum(r.passed for r in tests)

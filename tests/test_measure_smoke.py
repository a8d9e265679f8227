"""Smoke test of the kernel harness on the host loopback (a few seconds, no privileges needed).

Checks the rule the book leans on most: a response written as two send() calls with Nagle on waits for
the client's delayed ACK (about 40 ms, rounded up to the next 4 ms jiffy at HZ=250) even on loopback,
while MSG_MORE on the header sends header and data as one segment at once.  Skips, saying why, when
there is no C compiler or no loopback TCP.
"""

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from models.measure import Link, LinkSpec, RunSpec, run_one
from models.measure.build import BuildError, qdperf_binary
from models.measure.runner import _affinity, pin_cpus

pytestmark = pytest.mark.timeout(120)


def _loopback_tcp_works() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
        return None
    except OSError as exc:
        return f"loopback TCP sockets unavailable: {exc}"


@pytest.fixture(scope="module")
def loopback() -> Link:
    why = _loopback_tcp_works()
    if why:
        pytest.skip(why)
    try:
        qdperf_binary()
    except BuildError as exc:
        pytest.skip(f"cannot compile the C harness: {exc}")
    with Link(LinkSpec("loopback")) as link:
        yield link


def test_nagle_two_sends_stall_on_loopback(loopback: Link) -> None:
    r = run_one(
        RunSpec("iscsi", "nagle", 1, 512, duration_s=0.5, warmup_s=0.2, capture=False), loopback
    )
    c = r.client
    assert c["window_ops"] >= 5
    # delayed-ACK timer: 40 ms minimum, fires on a jiffy (4 ms at HZ=250, 10 ms at HZ=100): 36..60 ms
    assert 36_000 <= c["lat_p50_us"] <= 60_000
    assert c["stalled_ops"] == c["window_ops"]
    assert c["iops"] < 30  # about 1 / 44 ms
    # header and data left as separate segments
    assert r.server["tcp_info"]["data_segs_out"] == 2 * r.server["ops"]


def test_msg_more_header_does_not_stall(loopback: Link) -> None:
    r = run_one(
        RunSpec("iscsi", "more", 1, 512, duration_s=0.3, warmup_s=0.1, capture=False), loopback
    )
    c = r.client
    assert c["stalled_ops"] == 0
    assert (
        c["lat_p50_us"] < 5_000
    )  # microseconds on loopback; 5 ms leaves room for a loaded machine
    assert c["iops"] > 200
    assert r.server["tcp_info"]["data_segs_out"] == r.server["ops"]  # one segment per response


def test_queue_depth_kept_and_busy_counts(loopback: Link) -> None:
    r = run_one(
        RunSpec("iscsi", "nodelay", 4, 512, duration_s=0.3, warmup_s=0.05, capture=False), loopback
    )
    s, c = r.server, r.client
    # every request answered exactly once, in order (the client checks tags), none lost
    assert c["issued"] == c["completed"] == s["ops"]
    busy = {int(k): v for k, v in s["busy_hist"].items()}
    # busy counts add up to the operations; periods of 256+ requests share the last bucket, whose
    # requests the server reports separately
    assert sum(k * v for k, v in busy.items() if k < 256) + s["busy_overflow_ops"] == s["ops"]
    assert (s["busy_overflow_ops"] == 0) == (busy.get(256, 0) == 0)
    assert sum(busy.values()) == s["wakeups"]


def test_count_limit_bounds_the_run(loopback: Link) -> None:
    r = run_one(
        RunSpec("flory", "nodelay", 1, 100, duration_s=30, warmup_s=0, count=7, capture=False),
        loopback,
    )
    assert r.client["completed"] == 7 and r.client["end"] == "count"
    assert r.wall_s < 10


def test_the_server_reads_its_socket_every_nth_response(loopback: Link) -> None:
    """qdperf server --cc-log-every: a reading before responses 0, N, 2N, ... (the first before
    any data: the handshake's srtt alone), every column named, none when it is off."""
    r = run_one(
        RunSpec("iscsi", "nagle", 4, 512, duration_s=30, warmup_s=0, count=40, capture=False,
                cc="reno", cc_log_every=8),
        loopback,
    )  # fmt: skip
    s = r.server
    log = [dict(zip(s["cc_log_columns"], row, strict=True)) for row in s["cc_log"]]
    assert [x["op"] for x in log] == list(range(0, s["ops"], 8))
    assert log[0]["delivered"] <= 1 and log[0]["rtt_us"] > 0  # nothing sent yet
    assert all(a["t_us"] <= b["t_us"] for a, b in zip(log, log[1:], strict=False))
    assert all(x["bw_Bps"] == 0 and x["pacing_gain_x256"] == 0 for x in log)  # reno: no bbr info
    off = run_one(RunSpec("iscsi", "nagle", 1, 512, count=5, warmup_s=0, capture=False), loopback)
    assert "cc_log" not in off.server


def test_cli_smoke_command() -> None:
    import subprocess
    import sys

    why = _loopback_tcp_works()
    if why:
        pytest.skip(why)
    root = Path(__file__).resolve().parents[1]
    res = subprocess.run(
        [sys.executable, "-m", "models.measure", "smoke", "--duration", "0.3"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if res.returncode == 2 and "compiler" in res.stderr:
        pytest.skip(res.stderr.strip())
    assert res.returncode == 0, res.stderr + res.stdout
    out = json.loads(res.stdout)
    assert out["ok"] and all(out["checks"].values())


def test_sweep_writes_a_valid_dataset(loopback: Link, tmp_path: Path) -> None:
    """Two runs through the sweep machinery; the tables load through the project's dataset validator."""
    from models.measure.sweep import PlannedRun, run_sweep

    lo = LinkSpec("loopback")
    plan = [
        PlannedRun(
            lo,
            RunSpec("flory", "nodelay", 1, 1448, duration_s=0.2, warmup_s=0.05, capture=False),
            "flory",
        ),
        PlannedRun(
            lo,
            RunSpec("iscsi", "nodelay", 2, 512, duration_s=0.2, warmup_s=0.05, capture=False),
            "iscsi",
        ),
        # the same run with the other client mode: the busy-count table's key tells them apart
        PlannedRun(
            lo,
            RunSpec(
                "iscsi",
                "nodelay",
                2,
                512,
                duration_s=0.2,
                warmup_s=0.05,
                client_sock="nodelay",
                capture=False,
            ),
            "iscsi",
        ),
    ]
    written = run_sweep(
        plan, tmp_path, prefix="smoke6", command_line="pytest", progress=lambda m: None
    )
    assert set(written) == {"flory", "iscsi_loop", "busy_counts"}
    data = pytest.importorskip("models.data")
    busy = data.load("smoke6_busy_counts", tmp_path)  # its primary key holds: no duplicate
    assert list(busy["client_sock_mode"]) == ["nagle"] * 3 + ["nodelay"] * 3
    assert list(busy["busy_count"]) == [1, 2, 3] * 2
    assert list(busy["or_more"]) == [False, False, True] * 2
    assert all(
        abs(g.sum() - 100) < 1e-3 for _, g in busy.groupby("client_sock_mode")["cycles_pct"]
    )
    loop = data.load("smoke6_iscsi_loop", tmp_path)
    assert loop.loc[0, "qd"] == 2 and loop.loc[0, "iops"] > 0
    assert list(loop["client_sock_mode"]) == ["nagle", "nodelay"]
    flory = data.load("smoke6_flory", tmp_path)
    assert flory.loc[0, "payload_bytes"] == 1448
    meta = json.loads((tmp_path / "smoke6_flory.json").read_text())["measurement"]
    assert meta["kernel"]["release"] and "net.ipv4.tcp_autocorking" in meta["host_sysctls"]
    assert meta["links"]["loopback"]["server"]["interfaces"]["lo"]["mtu"] > 0


def test_pinned_processes_start_on_the_cpus_asked_for() -> None:
    """``--pin``: the child is on its CPU before the program runs (the affinity survives exec)."""
    cpus = sorted(os.sched_getaffinity(0))
    for pin in ("same", "apart") if len(cpus) >= 2 else ("same",):
        for role, want in pin_cpus(pin).items():
            out = subprocess.run(
                ["grep", "Cpus_allowed_list", "/proc/self/status"],
                preexec_fn=_affinity(want),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert out.split()[-1] == str(min(want)), (pin, role, out)
    assert pin_cpus("none") is None


def test_a_pinned_run_completes(loopback: Link) -> None:
    pin = "apart" if len(os.sched_getaffinity(0)) >= 2 else "same"
    r = run_one(
        RunSpec("iscsi", "nodelay", 4, 512, duration_s=0.2, warmup_s=0.05, capture=False, pin=pin),
        loopback,
    )
    assert r.spec.pin == pin and r.client["completed"] == r.server["ops"] > 0


def test_each_socket_takes_its_own_congestion_control(loopback: Link) -> None:
    # RunSpec.client_cc: the client's socket reports reno while the server's reports bbr
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    names = set(avail.read_text().split()) if avail.exists() else set()
    if not {"bbr", "reno"} <= names:
        pytest.skip(f"needs bbr and reno, the kernel offers {sorted(names)}")
    r = run_one(
        RunSpec(
            "iscsi", "nagle", 2, 512, duration_s=0.2, cc="bbr", client_cc="reno", capture=False
        ),
        loopback,
    )
    assert (r.server["cc"], r.client["cc"]) == ("bbr", "reno")


def test_a_flory_row_takes_its_rates_from_a_run_without_the_capture(
    loopback: Link, tmp_path: Path
) -> None:
    """The capture slows Flory's exchange (models.validation.capture_cost): the sweep runs a
    captured Flory point twice, captured for the spread columns, then without the capture for
    every other column; the raw record keeps both runs."""
    from models.measure.capture import tcpdump_path
    from models.measure.sweep import PlannedRun, run_sweep

    if tcpdump_path() is None or os.geteuid() != 0:
        pytest.skip("capturing needs tcpdump and root")
    spec = RunSpec("flory", "nodelay", 1, 1448, duration_s=0.2, warmup_s=0.05, capture=True)
    written = run_sweep(
        [PlannedRun(LinkSpec("loopback"), spec, "flory")],
        tmp_path,
        prefix="cap6",
        raw=True,
        command_line="pytest",
        progress=lambda m: None,
    )
    raw = [json.loads(line) for line in (tmp_path / "cap6_raw.jsonl").read_text().splitlines()]
    assert [r["capture_tool"] for r in raw] == ["tcpdump", "none"]
    data = pytest.importorskip("models.data")
    row = data.load("cap6_flory", tmp_path).iloc[0]
    assert written["flory"].name == "cap6_flory.csv"
    assert row["iops"] == pytest.approx(raw[1]["client"]["iops"], rel=1e-4)  # uncaptured
    assert row["iops"] != pytest.approx(raw[0]["client"]["iops"], rel=1e-4)
    assert row["capture_tool"] == "tcpdump" and row["response_spread_p50_us"] >= 0


def test_spread_from_belongs_to_the_flory_table_alone(loopback: Link) -> None:
    from models.measure.tables import rows_for

    res = run_one(
        RunSpec("iscsi", "nodelay", 1, 512, count=5, warmup_s=0, capture=False), loopback
    )
    with pytest.raises(ValueError, match="spread_from is for the flory table only"):
        rows_for("iscsi_loop", res, loopback, spread_from=res)

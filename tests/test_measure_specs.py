"""Input validation of the harness (no sockets needed) and the dataset tables it writes."""

import pytest

from models import framing
from models.measure import LinkSpec, RunSpec
from models.measure.sweep import SCHEMAS, flory_payloads, standard_plan


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"proto": "http"}, "proto"),
        ({"sock": "cork"}, "sock"),
        ({"qd": 0}, "qd"),
        ({"qd": -3}, "qd"),
        ({"payload_bytes": -1}, "payload_bytes"),
        ({"payload_bytes": 5 * 2**20}, "payload_bytes"),
        ({"duration_s": 0}, "duration_s"),
        ({"warmup_s": -1}, "warmup_s"),
        ({"count": 0}, "count"),
        ({"cc": "cubic; rm"}, "cc"),
        ({"client_sock": "more"}, "client_sock"),
        ({"pin": "both"}, "pin"),
        ({"cc_log_every": -1}, "cc_log_every"),
        ({"cc_log_every": 10**7}, "cc_log_every"),
        ({"cc_log_every": True}, "cc_log_every"),  # a bool is not a count
        ({"qd": True}, "qd"),
        ({"count": True}, "count"),
        ({"payload_bytes": False}, "payload_bytes"),
    ],
)
def test_runspec_rejects_bad_values(kwargs: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        RunSpec(**kwargs)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"kind": "wifi"}, "kind"),
        ({"kind": "veth"}, "mtu"),
        ({"kind": "veth", "mtu": 40}, "mtu"),
        ({"kind": "loopback", "mtu": 1500}, "mtu"),
        ({"kind": "loopback", "rate_bits_per_s": 10**9}, "rate"),
        ({"kind": "veth", "mtu": 1500, "rate_bits_per_s": 10}, "rate"),
        ({"kind": "veth", "mtu": 1500, "offloads": "maybe"}, "offloads"),
        ({"kind": "veth", "mtu": 1500, "burst_frames": 10}, "burst_frames needs rate"),
        ({"kind": "veth", "mtu": 1500, "rate_bits_per_s": 10**9, "burst_frames": 0}, "1..1000"),
        ({"kind": "veth", "mtu": 1500, "rate_bits_per_s": 10**9, "burst_frames": 2.5}, "1..1000"),
    ],
)
def test_linkspec_rejects_bad_values(kwargs: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        LinkSpec(**kwargs)


def test_labels_and_sizes() -> None:
    assert LinkSpec("veth", mtu=1500, rate_bits_per_s=10**9).label == "veth-1500-1g"
    assert LinkSpec("loopback").label == "loopback"
    deep = LinkSpec("veth", mtu=1500, rate_bits_per_s=10**9, burst_frames=10)
    assert deep.label == "veth-1500-1g-b10"
    # the label is how a row carries the depth to the simulator
    assert framing.burst_frames(deep.label) == 10
    assert framing.burst_frames("veth-1500-1g") == framing.TBF_BURST_FRAMES
    assert RunSpec("iscsi", payload_bytes=512).response_bytes == 560
    assert RunSpec("flory", payload_bytes=1447).response_bytes == 1455
    # MSS = MTU - 52 (IPv4 20 + TCP 20 + timestamps 12): 1448 at 1500, 8948 at 9000
    assert {1447, 1448, 1449} <= set(flory_payloads(LinkSpec("veth", mtu=1500)))
    assert {8947, 8948, 8949} <= set(flory_payloads(LinkSpec("veth", mtu=9000)))
    assert {65482, 65483} <= set(flory_payloads(LinkSpec("loopback")))


def test_standard_plan_covers_the_issue_grid() -> None:
    plan = standard_plan(root=True)
    iscsi = {
        (p.link.label, p.spec.sock, p.spec.qd, p.spec.payload_bytes, p.spec.cc)
        for p in plan
        if p.table == "iscsi"
    }
    for label in ("loopback", "veth-1500"):
        for mode in ("nagle", "nodelay", "more", "more_nodelay"):
            for qd in (1, 2, 3, 4, 5, 8, 16, 32, 64):
                for size in (512, 2048, 4096):
                    assert (label, mode, qd, size, None) in iscsi
    assert ("loopback", "nagle", 1, 512, "cubic") in iscsi
    flory = {(p.link.label, p.spec.payload_bytes) for p in plan if p.table == "flory"}
    assert (
        ("veth-1500", 1447) in flory
        and ("veth-1500", 1448) in flory
        and ("loopback", 65483) in flory
    )
    # a normal user gets the host loopback only
    assert {p.link.label for p in standard_plan(root=False)} == {"loopback"}
    assert all(not p.link.needs_root for p in standard_plan(root=False))
    with pytest.raises(ValueError, match="links"):
        standard_plan(root=False, links=["veth-1500"])


def test_schemas_have_units_and_keys() -> None:
    for table, sch in SCHEMAS.items():
        names = [f["name"] for f in sch["fields"]]
        assert len(names) == len(set(names)), table
        assert set(sch["primaryKey"]) <= set(names)
        for f in sch["fields"]:
            if f["type"] in ("number", "integer"):
                assert f.get("unit"), (table, f["name"])


def test_schemas_are_read_from_the_bundled_sidecars():
    """The tables' schemas are written once, in data/kernel6_*.json, and the harness reads them."""
    import json

    from models import data
    from models.measure import schemas

    assert list(SCHEMAS) == ["flory", "iscsi_loop", "busy_counts"]
    for table, sch in SCHEMAS.items():
        desc = json.loads((data.DATA_DIR / f"kernel6_{table}.json").read_text())
        assert sch["fields"] == desc["schema"]["fields"]
        assert sch["primaryKey"] == desc["schema"]["primaryKey"]
        assert (sch["title"], sch["description"]) == (desc["title"], desc["description"])
    SCHEMAS["flory"]["fields"].clear()  # a copy: the next reader is not affected
    assert SCHEMAS["flory"]["fields"]
    with pytest.raises(KeyError):
        SCHEMAS["nope"]
    with pytest.raises(ValueError, match="table"):
        schemas.template("nope")


def test_a_missing_or_broken_schema_sidecar_is_a_clear_error(tmp_path):
    import json
    import shutil

    from models import data
    from models.measure import schemas

    with pytest.raises(schemas.SchemaError, match="'flory' table.*descriptor not found"):
        schemas.template("flory", tmp_path)
    shutil.copy(data.DATA_DIR / "kernel6_busy_counts.json", tmp_path)
    desc = json.loads((tmp_path / "kernel6_busy_counts.json").read_text())
    desc["schema"]["fields"][-1].pop("unit")
    (tmp_path / "kernel6_busy_counts.json").write_text(json.dumps(desc))
    with pytest.raises(schemas.SchemaError, match="'busy_counts' table.*needs a unit"):
        schemas.template("busy_counts", tmp_path)


def test_a_written_sidecar_carries_the_bundled_schema():
    from models.measure.tables import csv_text, sidecar

    meta = {
        "command_line": "pytest",
        "started_utc": "2026-01-02T03:04:05+00:00",
        "finished_utc": "2026-01-02T03:05:05+00:00",
        "kernel": {"release": "6.x", "config_hz": 250, "cpus": 2},
        "host_sysctls": {},
        "load_start": [0.1],
        "load_end": [0.2],
    }
    for table, sch in SCHEMAS.items():
        text = csv_text(table, []).encode()
        assert text.decode().strip().split(",") == [f["name"] for f in sch["fields"]]
        desc = sidecar(f"x_{table}", table, text, meta)
        assert desc["schema"] == {"fields": sch["fields"], "primaryKey": sch["primaryKey"]}
        assert (desc["title"], desc["description"]) == (sch["title"], sch["description"])
        assert desc["sources"][0]["year"] == 2026 and desc["measurement"] is meta


def test_field_plan_covers_both_clients_sizes_and_congestion_controls() -> None:
    from models.measure.plan import FIELD_QDS_NAGLE, FIELD_SIZES, field_plan

    plan = field_plan(root=True)
    runs = {
        (p.link.label, p.spec.client_sock, p.spec.sock, p.spec.qd, p.spec.payload_bytes, p.spec.cc)
        for p in plan
    }
    assert len(runs) == len(plan)  # no run twice
    assert all(p.table == "iscsi" for p in plan)
    for label in ("loopback", "veth-1500", "veth-9000", "veth-1500-1g"):
        for client in ("nodelay", "nagle"):
            for size in FIELD_SIZES:
                for qd in FIELD_QDS_NAGLE:
                    assert (label, client, "nagle", qd, size, None) in runs
                assert (label, client, "more_nodelay", 64, size, None) in runs
    assert ("veth-1500-1g", "nodelay", "nagle", 2, 65536, "reno") in runs
    assert ("loopback", "nagle", "nodelay", 16, 4096, "cubic") in runs
    assert not any(r[0] == "veth-1500" and r[5] for r in runs)  # variants on two links only
    assert {p.link.label for p in field_plan(root=False)} == {"loopback"}


def test_a_disturbed_run_is_run_again_once_and_the_second_result_kept(monkeypatch):
    """Other processes over the limit during a run: the sweep runs it again once, pausing first."""
    from models.measure import sweep

    plan = standard_plan(root=False, quick=True, links=["loopback"])
    pr = plan[0]
    shares = iter([35.0, 20.0, 0.5])  # the first two runs disturbed, the third would be clean
    made = []

    def fake_run(pr_, link, pcap_dir, say):
        made.append(
            sweep.RunResult(pr_.spec, "loopback", {}, {}, "none", "", other_cpu_pct=next(shares))
        )
        return made[-1]

    monkeypatch.setattr(sweep, "_run_with_retry", fake_run)
    said, paused = [], []
    res = sweep._run_undisturbed(pr, None, None, said.append, pause=paused.append)
    assert len(made) == 2 and res is made[1] and res.other_cpu_pct == 20.0
    assert paused == [sweep.SETTLE_S] and "35 %" in said[0]
    summary = sweep._other_cpu_summary([("x", res.other_cpu_pct), ("y", 1.0)])
    assert summary["over_limit"] == ["x: 20 %"] and summary["max_pct"] == 20.0


def test_other_cpu_share_is_the_machine_s_busy_time_minus_our_own(tmp_path):
    from models.measure import sysinfo

    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 9000 0 7 8 0 0 0\ncpu0 1 2 3\n")
    ticks = sysinfo.os.sysconf("SC_CLK_TCK")
    assert sysinfo.cpu_busy_s(stat) == 150 / ticks  # user + nice + system; irq, softirq left out
    assert sysinfo.cpu_busy_s(tmp_path / "missing") != sysinfo.cpu_busy_s(tmp_path / "missing")
    assert sysinfo.own_cpu_s() > 0
    with pytest.raises(ValueError, match="wall_s must be > 0"):
        sysinfo.other_cpu_pct((0, 1), (0, 0), wall_s=0)


def test_the_recorded_sysctls_hold_what_sets_the_window_scale():
    """tcp_select_initial_window takes the larger of tcp_rmem[2] and net.core.rmem_max for a new
    socket's window scale: both are recorded with every measurement (on Linux)."""
    import sys

    from models.measure import sysinfo

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/sys")
    got = sysinfo.tcp_sysctls()
    assert "net.ipv4.tcp_rmem" in got and "net.core.rmem_max" in got
    assert int(got["net.core.rmem_max"]) > 0

"""The socket-ownership trace: tools/ownership_trace.py reads tracefs lines as the kernel prints them,
and models.validation.ownership states what the bundled runs show, each claim able to fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import ownership_trace  # noqa: E402

from models.measure.netns import CLIENT_ADDR, SERVER_ADDR  # noqa: E402
from models.validation import ownership as OWN  # noqa: E402


def _line(pid: int, cpu: int, flags: str, t_us: int, event: str, rest: str) -> str:
    # the default trace format: task-pid, [cpu], the five context columns, seconds
    return f"   qdperf-{pid}    [{cpu:03d}] {flags} 100.{t_us:06d}: {event}{rest}"


def _probe(addr: str, data_len: int) -> str:
    return f": family=AF_INET src={addr}:4000 dest=10.0.0.9:5000 mark=0x0 data_len={data_len} "


IOSIZE = int(OWN.PACED.scenario["iosize_bytes"])  # bytes of a response's data


def test_a_window_is_summarised_per_send_and_per_context():
    server, client = 7, 8
    big = f"(fd: 4, buff: 0x1, len: {IOSIZE:#x}, flags: 0x4000, addr: 0, addr_len: 0)"
    lines = [
        "# tracer: nop",
        _line(server, 0, ".....", 0, "sys_sendto", big),
        _line(server, 0, "..s1.", 2, "tcp_probe", _probe(CLIENT_ADDR, 15928)),  # soft interrupt
        _line(server, 0, "..s1.", 5, "hrtimer_expire_entry", ": function=tcp_pace_kick now=1"),
        _line(server, 0, ".....", 6, "tcp_probe", _probe(SERVER_ADDR, 48)),  # from the backlog
        _line(server, 0, ".....", 8, "tcp_probe", _probe(SERVER_ADDR, 0)),
        _line(server, 0, ".....", 9, "sys_sendto", " -> 0x4000"),
        # a short send() of another size is not a response's data
        _line(
            client, 1, ".....", 10, "sys_sendto", "(fd: 3, buff: 0x2, len: 0x30, flags: 0x4000)"
        ),
        _line(client, 1, ".....", 11, "sys_sendto", " -> 0x30"),
        _line(client, 1, "..s1.", 12, "tcp_probe", _probe(SERVER_ADDR, 48)),
        _line(client, 1, ".....", 13, "tcp_probe", _probe(CLIENT_ADDR, 504)),  # its backlog
        _line(client, 1, ".....", 14, "tcp_probe", _probe(CLIENT_ADDR, 0)),  # an ACK: not data
        _line(server, 0, ".....", 20, "sys_sendto", big),
        _line(server, 0, ".....", 23, "sys_sendto", " -> 0x4000"),
        # the server's header: not a response's data, but one of its calls
        _line(
            server, 0, ".....", 14, "sys_sendto", "(fd: 4, buff: 0x3, len: 0x30, flags: 0xc000)"
        ),
        _line(server, 0, ".....", 16, "sys_sendto", " -> 0x30"),
    ]
    lines = [lines[0], *sorted(lines[1:], key=lambda ln: float(ln.split(": ")[0].split()[-1]))]
    row = ownership_trace.summarise(lines, IOSIZE)
    assert row["ops"] == 2
    assert row["send_us_p50"] == pytest.approx(6.0)  # 9 us and 3 us
    assert row["window_ms"] == pytest.approx(0.023)
    assert row["send_busy_pct"] == pytest.approx(100 * 12 / 23, abs=0.01)
    # the server's calls of any length (the client's 48-byte send() is not the server's)
    assert row["send_all_busy_pct"] == pytest.approx(100 * 14 / 23, abs=0.01)
    assert row["server_backlog_pct"] == pytest.approx(100 * 2 / 3, abs=0.01)
    assert row["client_backlog_pct"] == pytest.approx(50.0)
    assert row["pace_kicks_per_op"] == pytest.approx(0.5)


def test_a_window_without_a_response_is_an_error():
    with pytest.raises(RuntimeError, match="no send"):
        ownership_trace.summarise(["# tracer: nop"], IOSIZE)


def test_the_bundled_runs_show_what_the_text_says():
    t = OWN.kernel()
    assert sorted(map(tuple, t[OWN.KEY].values.tolist())) == [
        ("more", "bbr"),
        ("more", "reno"),
        ("nagle", "bbr"),
        ("nagle", "reno"),
    ]
    f = OWN.findings(t)
    assert all(f.values()), f


def test_a_wrong_kernel_fails_the_claims():
    # the pacing timer's cost taken out of bbr's send(): bbr's send() as long as reno's
    t = OWN.kernel().copy()
    reno = t[t.cc == "reno"].set_index("server_sock_mode")["send_us_p50"]
    t.loc[t.cc == "bbr", "send_us_p50"] = t.loc[t.cc == "bbr", "server_sock_mode"].map(reno)
    f = OWN.findings(t)
    assert not f["under bbr the server's send() lasts at least twice reno's"]
    assert not f["the longer send() covers most of the time bbr adds"]
    # and a server that never owns its socket when segments arrive
    t = OWN.kernel().assign(server_backlog_pct=5.0)
    assert not OWN.findings(t)["most segments reaching the server wait in its backlog"]


def test_the_two_models_beside_the_traced_runs():
    # the calibrated profile: its bbr estimate stays far above the kernel's, and the timer the
    # kernel's bbr fires per operation it fires seldom (MSG_MORE) or only between (Nagle); the
    # refitted one, sent after its CPU, fires it per operation and runs at the kernel's rates
    t = OWN.table()
    k = t.set_index(OWN.KEY)
    assert k.loc[("more", "bbr"), "sim_class"] == "seldom"
    assert k.loc[("nagle", "bbr"), "sim_class"] != "per_op"
    assert (k.xs("reno", level="cc")["right"]).all()
    f = OWN.model_findings(t)
    assert all(f.values()), f


def test_the_sent_model_without_its_rule_fails_its_claims():
    # the refitted profile with each segment leaving at its send()'s start again: the pacing
    # timer behind the servers and the rates are what the claims of the sent model fail on
    from models.sim import hostprofile
    from models.validation import machine4

    d = machine4.sent_profile().to_dict()
    d["host"]["send_cpu_first"] = False
    t = OWN.table(sent=hostprofile.load(d))
    f = OWN.model_findings(t)
    assert not f["sent after its CPU, the timer class is the kernel's in every run"]
    assert not f["sent after its CPU, every rate is within the tolerance"]


def test_the_owned_model_without_its_rule_fails_its_claims():
    # the same refit with no socket owner: nothing waits in a backlog, so neither claim the
    # kernel's traces make of the backlogs holds for it
    from models.sim import hostprofile
    from models.validation import machine4

    d = machine4.owned_profile().to_dict()
    d["host"]["own_socket"] = False
    t = OWN.table(owned=hostprofile.load(d))
    assert (t["owned_server_backlog_pct"] == 0).all()
    f = OWN.model_findings(t)
    assert not f["with a socket owner, most segments reaching the server wait in its backlog"]
    assert not f["with a socket owner, the client's data wait less under bbr"]


def test_calls_that_end_with_their_own_cpu_fail_the_owner_s_claims(monkeypatch):
    # the owner without its calls lasting while an interrupt that came during them runs on the
    # thread's CPU (the pacing timer's, a soft interrupt's): bbr's send() is then too short and
    # most of the server's segments no longer wait in its backlog
    from models.sim.app import AppThread

    def ends_with_its_cpu(self, now, _arg):
        self.ep.release(now)
        (self.next_call if self.writes else self.step)(now, None)

    monkeypatch.setattr(AppThread, "_call_end", ends_with_its_cpu)
    f = OWN.model_findings(OWN.table())
    assert not f["with a socket owner, the server's time in send() is the kernel's in every run"]
    assert not f["with a socket owner, most segments reaching the server wait in its backlog"]


def test_the_tool_runs_the_scenario_the_comparison_simulates():
    from models.measure import cli

    for trace in OWN.SETS.values():
        for mode, cc in trace.runs:
            args = cli.parser().parse_args(
                ["run", "--sock", mode, "--cc", cc, *ownership_trace.run_args(trace)]
            )
            link = trace.link
            assert (args.link, args.mtu, args.rate) == (link.kind, link.mtu, link.rate_bits_per_s)
            assert (args.client_sock, args.qd, args.iosize) == tuple(
                trace.scenario[k] for k in ("client_sock_mode", "qd", "iosize_bytes")
            )
            row = OWN.sample_row(
                mode, cc, trace
            )  # the pinned sample's row the comparison simulates
            assert row["link"] == link.label
            assert {k: row[k] for k in trace.scenario} == trace.scenario
            assert (row["sock_mode"], row["cc"]) == (mode, cc)


def test_the_tool_writes_the_bundled_descriptions_again():
    from models import data

    for trace in OWN.SETS.values():
        desc = data.describe(trace.dataset)
        runs = desc["measurement"]["runs"]
        assert ownership_trace.description(runs, trace) == desc["description"]
        assert sorted(runs) == sorted(f"{mode}/{cc}" for mode, cc in trace.runs)


def test_the_tool_says_in_one_line_what_it_needs_to_trace(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "no_tracefs"
    # not root: root is needed, and tracefs
    got = ownership_trace.tracing_problem(missing, euid=1000)
    assert "root" in got and f"tracefs at {missing}" in got
    # root, without tracefs: how to mount it
    got = ownership_trace.tracing_problem(missing, euid=0)
    assert f"tracefs mounted at {missing}" in got and "mount -t tracefs" in got
    # root and tracefs: nothing lacks
    (tmp_path / "trace").write_text("")
    assert ownership_trace.tracing_problem(tmp_path, euid=0) is None
    # the command line stops before any run, with that one line and no traceback
    monkeypatch.setattr(ownership_trace, "TRACEFS", missing)
    with pytest.raises(SystemExit) as e:
        ownership_trace.main(["--out", str(tmp_path / "out")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tracefs" in err and "root" in err
    assert not (tmp_path / "out").exists()


def test_the_trace_buffer_size_to_put_back():
    """The tool puts tracefs's buffer size back after each run; before the buffer is first used
    tracefs reads "7 (expanded: 1408)", and 1408 is the size to restore, not 7."""
    assert ownership_trace._buffer_kb("16387\n") == "16387"
    assert ownership_trace._buffer_kb("7 (expanded: 1408)\n") == "1408"


def test_the_small_runs_show_what_the_text_says():
    # 2 KiB at QD 64 behind MSG_MORE and TCP_NODELAY: the kernel never arms bbr's pacing timer;
    # the owned model does under bbr (a known failure) and with the pacing clock read in the
    # call it does not, at the kernel's rate and time in send()
    t = OWN.table(trace=OWN.SMALL)
    f = OWN.small_findings(t)
    assert all(f.values()), f


def test_without_the_clock_in_the_call_the_small_runs_fail_its_claim(monkeypatch):
    # the wrong model: the clock model's scenario without the flag is the owned model, and the
    # claim made of the clock fails with it
    from models.validation import machine4

    monkeypatch.setattr(machine4, "clock_scenario", machine4.replies_scenario)
    f = OWN.small_findings(OWN.table(trace=OWN.SMALL))
    assert not f["with the clock in the call, every run is the kernel's"]


def test_the_clock_in_the_call_misses_the_paced_runs():
    # the known failure the text names: with the clock in the call the 16 KiB runs under bbr are
    # paced about every other response and run too fast, further off than the owned model
    t = OWN.table()
    f = OWN.clock_findings(t)
    assert all(f.values()), f
    # the owned model's numbers in the clock's place: the claims of the clock's miss fail
    wrong = t.copy()
    for col in ("arms_per_op", "iops"):
        wrong[f"clock_{col}"] = wrong[f"owned_{col}"]
    f = OWN.clock_findings(wrong)
    assert not f["with the clock in the call, bbr's timer is armed half as often"]
    assert not f["with the clock in the call, bbr runs too fast"]

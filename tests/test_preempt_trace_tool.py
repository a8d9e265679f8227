"""tools/preempt_trace.py: its columns are the bundled dataset's, its reading of a trace counts
each wake-up once with what the CPU did next, and a trace it cannot read is refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from models import data
from models.validation import stall_placement as SP

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import preempt_trace  # noqa: E402


def _call(pid: int, t: float, n: int) -> list[str]:
    return [
        f" q-{pid} [000] ..... {t:.6f}: sys_sendto(fd: 3, buff: 0x1, len: {n:#x}, flags: 0x4000)",
    ]


def _wake(pid: int, t: float, target: int) -> str:
    return (
        f" q-{pid} [000] ..... {t:.6f}: sched_wakeup: comm=q pid={target} prio=120 target_cpu=000"
    )


def _exit(pid: int, t: float) -> str:
    return f" q-{pid} [000] ..... {t:.6f}: sys_sendto -> 0x30"


def _switch(pid: int, t: float, state: str, to: int) -> str:
    return (
        f" q-{pid} [000] ..... {t:.6f}: sched_switch: prev_comm=q prev_pid={pid} prev_prio=120 "
        f"prev_state={state} ==> next_comm=q next_pid={to} next_prio=120"
    )


def test_columns_are_the_bundled_datasets():
    df = data.load(SP.PREEMPT_DATASET)
    assert list(df.columns) == [name for name, *_ in preempt_trace.FIELDS]
    assert sorted(set(df["client_sock_mode"])) == sorted(preempt_trace.CLIENTS)


def test_each_wakeup_is_counted_once_with_what_followed():
    server, client = 7, 8
    lines = [
        *_call(server, 1.0, 48),  # the server's header wakes the client, which preempts it
        _wake(server, 1.1, client),
        _exit(server, 1.2),
        _switch(server, 1.3, "R", client),
        *_call(client, 1.4, 48),  # the client's request wakes the server; the client blocks
        _wake(client, 1.5, server),
        _exit(client, 1.6),
        _switch(client, 1.7, "S", server),
        *_call(server, 1.8, 512),  # data that wakes nobody: not counted
        _exit(server, 1.9),
        *_call(server, 2.0, 512),  # data that wakes the client; the server goes on
        _wake(server, 2.1, client),
        _exit(server, 2.2),
        *_call(server, 2.3, 48),
        _exit(server, 2.4),
    ]
    got = {
        (r["caller"], r["call"]): (r["wakeups"], r["preempted"])
        for r in preempt_trace.summarise(lines, 512)
    }
    assert got == {
        ("server", "header"): (1, 1),
        ("client", "request"): (1, 0),
        ("server", "data"): (1, 0),
    }


def test_a_trace_without_both_ends_is_refused():
    with pytest.raises(ValueError, match="one server and one client"):
        preempt_trace.summarise(_call(7, 1.0, 48) + [_exit(7, 1.1)], 512)


def test_a_window_longer_than_half_the_run_is_refused_before_any_run(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        preempt_trace.main(["--out", str(tmp_path), "--duration", "1", "--window-ms", "600"])
    assert e.value.code == 2
    assert "--window-ms must be in (0, 500]" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())

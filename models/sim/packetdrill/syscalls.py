"""The system calls of a packetdrill script acted out on the simulated socket (a part of
:mod:`models.sim.packetdrill.runner`'s run)."""

from __future__ import annotations

from models.sim.packetdrill.outcome import (
    _BYTE_UNITS,
    _RATE_UNITS,
    _TCP_WINDOW_CLAMP,
    Mismatch,
    _Failed,
    _seconds,
)
from models.sim.packetdrill.parser import (
    Command,
    ScriptError,
    Syscall,
)
from models.sim.packetdrill.state import _State
from models.sim.sender import NAGLE, NODELAY


class _Syscalls(_State):
    """System calls, socket options and commands of a run (mixed into its ``_Run``)."""

    def syscall(self, ev: Syscall, now: int) -> None:
        name = self.script.name
        call, args = ev.name, ev.args

        def fd_arg(i: int = 0) -> int:
            if len(args) <= i or not args[i].isdigit():
                raise ScriptError(name, ev.line, f"{call}: argument {i + 1} must be an fd")
            return int(args[i])

        def result(value: int, errno: str | None = None) -> None:
            if (value, errno) != (ev.result, ev.errno):
                got = f"{value}" + (f" {errno}" if errno else "")
                want = f"{ev.result}" + (f" {ev.errno}" if ev.errno else "")
                raise _Failed(
                    Mismatch(
                        ev.line,
                        _seconds(now),
                        f"{call}(...) = {want}",
                        f"{call}(...) = {got}",
                        _seconds(now),
                        f"{call} returned {got}, the script expects {want}",
                    )
                )

        if call == "socket":
            if ev.result < 0:
                raise ScriptError(name, ev.line, "socket() must return an fd")
            if len(args) != 3 or args[1] != "SOCK_STREAM" or args[2] != "IPPROTO_TCP":
                raise ScriptError(name, ev.line, "only socket(..., SOCK_STREAM, IPPROTO_TCP)")
            self.fds[ev.result] = "socket"
            return
        if call in ("bind", "listen"):
            fd = fd_arg()
            if self.fds.get(fd) != "socket":
                raise ScriptError(name, ev.line, f"{call} on fd {fd}, not an unconnected socket")
            if call == "listen":
                self.state = "listen"
            result(0)
            return
        if call == "fcntl":
            fd = fd_arg()
            if len(args) != 3 or args[1] != "F_SETFL" or "O_NONBLOCK" not in args[2]:
                raise ScriptError(name, ev.line, "only fcntl(fd, F_SETFL, O_RDWR|O_NONBLOCK)")
            self.nonblocking = True
            result(0)
            return
        if call == "connect":
            fd = fd_arg()
            if self.fds.get(fd) != "socket" or self.state != "closed":
                raise ScriptError(name, ev.line, "connect needs a fresh socket")
            self.state = "syn-sent"
            self.conn_fd = fd
            self.syn_time = now
            self.synthetic(now, "S", 0, 0, 0)
            if self.nonblocking:
                result(-1, "EINPROGRESS")
            elif (ev.result, ev.errno) != (0, None):
                result(0)
            return
        if call == "accept":
            if self.state != "established":
                raise ScriptError(
                    name,
                    ev.line,
                    "accept before the handshake completed (blocking accept is not supported)",
                )
            if ev.result < 0:
                raise ScriptError(name, ev.line, "accept must return an fd")
            self.conn_fd = ev.result
            self.fds[ev.result] = "connection"
            return
        if call == "setsockopt":
            self.setsockopt(ev, now)
            return
        if call == "close":
            fd = fd_arg()
            if fd == self.conn_fd:
                self.state = "closed-local"
            result(0)
            return
        # write, send, read, recv: the connection
        fd = fd_arg()
        if fd != self.conn_fd:
            raise ScriptError(name, ev.line, f"{call} on fd {fd}, not the connection")
        self.check_established(ev, f"{call}()")
        ep = self.ep
        if call in ("write", "send"):
            want = 4 if call == "send" else 3
            if len(args) != want or not args[2].isdigit():
                raise ScriptError(
                    name, ev.line, f"{call} needs {want} arguments with a byte count"
                )
            nbytes = int(args[2])
            more = False
            if call == "send":
                flags = args[3]
                if flags == "MSG_MORE":
                    more = True
                elif flags != "0":
                    raise ScriptError(
                        name, ev.line, f"send flags {flags!r} (supported: 0, MSG_MORE)"
                    )
            if nbytes:
                ep.sender.write(now, nbytes, more)
            result(nbytes)
            return
        want = 4 if call == "recv" else 3
        if len(args) != want or not args[2].isdigit():
            raise ScriptError(name, ev.line, f"{call} needs {want} arguments with a byte count")
        if call == "recv" and args[3] != "0":
            raise ScriptError(name, ev.line, f"recv flags {args[3]!r} (supported: 0)")
        rx = ep.receiver
        queued = rx.rcv_nxt - rx.copied_seq
        if queued == 0:
            if self.fin:
                result(0)
            elif self.nonblocking:
                result(-1, "EAGAIN")
            else:
                raise ScriptError(
                    name, ev.line, f"{call} with no data queued would block (not supported)"
                )
            return
        if int(args[2]) < queued:
            raise ScriptError(
                name,
                ev.line,
                f"{call} of {args[2]} bytes with {queued} queued: the simulator reads everything "
                "queued (partial reads are not supported)",
            )
        result(rx.read(now))

    def setsockopt(self, ev: Syscall, now: int) -> None:
        name = self.script.name
        args = ev.args
        if len(args) != 5 or not args[0].isdigit():
            raise ScriptError(name, ev.line, "setsockopt(fd, level, option, [value], length)")
        fd, level, opt, raw = int(args[0]), args[1], args[2], args[3]
        if fd not in self.fds:
            raise ScriptError(name, ev.line, f"setsockopt on unknown fd {fd}")
        if level == "SOL_SOCKET" and opt == "SO_REUSEADDR":
            return  # no effect on the connection
        tcp_level = level in ("IPPROTO_TCP", "SOL_TCP")
        if tcp_level and opt in ("TCP_WINDOW_CLAMP", _TCP_WINDOW_CLAMP):
            self.set_window_clamp(ev, raw)
            return
        if not tcp_level or opt not in ("TCP_NODELAY", "TCP_CORK", "TCP_QUICKACK"):
            raise ScriptError(
                name,
                ev.line,
                f"setsockopt {level} {opt} is not supported (supported: TCP_NODELAY, TCP_CORK, "
                "TCP_QUICKACK, TCP_WINDOW_CLAMP before the connection, SO_REUSEADDR)",
            )
        if raw not in ("[0]", "[1]"):
            raise ScriptError(name, ev.line, f"{opt} value must be [0] or [1], got {raw}")
        if (ev.result, ev.errno) != (0, None):
            raise ScriptError(name, ev.line, f"setsockopt {opt} returns 0 here")
        on = raw == "[1]"
        ep = self.ep if self.state == "established" else None
        if opt == "TCP_NODELAY":
            self.nodelay = on
            if ep is not None:
                ep.sender.mode = NODELAY if on else NAGLE
                if on:  # __tcp_sock_set_nodelay: push with TCP_NAGLE_PUSH
                    ep.sender.flush(now)
        elif opt == "TCP_CORK":
            self.cork = on
            if ep is not None:
                ep.sender.set_cork(now, on)
        elif not on:
            raise ScriptError(
                name, ev.line, "TCP_QUICKACK [0] (enter pingpong mode) is not supported"
            )
        elif ep is not None:
            ep.receiver.ack.quickack(now)

    def set_window_clamp(self, ev: Syscall, raw: str) -> None:
        """``TCP_WINDOW_CLAMP``: accepted before the connection exists and
        only where it makes the window test of ``__tcp_ack_snd_check``
        hold (as linux-6's ACK rule, without a receive window, assumes);
        the initial receive window (which sizes the quick-ACK budget) is
        clamped too, and a profile with a receive window keeps the clamp
        (:mod:`models.sim.rules.rwnd`)."""
        name = self.script.name
        if self.state not in ("closed", "listen"):
            raise ScriptError(name, ev.line, "TCP_WINDOW_CLAMP only before the connection")
        value = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else ""
        limit = self.profile.rcv_wnd_bytes // 2
        if not value.isdigit() or not 0 < int(value) <= limit:
            raise ScriptError(
                name,
                ev.line,
                f"TCP_WINDOW_CLAMP {raw}: only clamps of 1 to {limit} bytes (half the initial "
                "receive window) are supported: there the right edge of the window advances "
                "with every segment, as the simulator's ACK rule assumes",
            )
        if (ev.result, ev.errno) != (0, None):
            raise ScriptError(name, ev.line, "setsockopt TCP_WINDOW_CLAMP returns 0 here")
        self.window_clamp = int(value)

    def command(self, ev: Command) -> None:
        if self.state in ("established", "closed-local"):
            raise ScriptError(
                self.script.name, ev.line, "shell commands must come before the connection exists"
            )
        v = ev.values
        if ev.kind == "sysctl":
            self.autocork = v["value"] == "1"
            if self.autocork and not self.profile.autocork:
                raise ScriptError(
                    self.script.name,
                    ev.line,
                    f"profile {self.profile.name!r} has no autocorking (tcp_autocorking "
                    "arrived in Linux 3.14)",
                )
        else:
            rate = int(v["rate"]) * _RATE_UNITS[v["rate_unit"]]  # bits/s
            burst = int(v["burst"]) * _BYTE_UNITS[v["burst_unit"]]  # bytes
            if rate <= 0 or burst <= 0:
                raise ScriptError(self.script.name, ev.line, "tbf rate and burst must be positive")
            self.tbf = (rate, burst)

    # -- the script ----------------------------------------------------------

"""The host-cost microbenchmarks' result as a few lines of text
(:func:`models.measure.costs.run_costs`'s ``settings`` and ``costs``; ``python -m models.measure
costs`` prints it).  Standard library only."""

from __future__ import annotations

from typing import Any

#: Below this share of its windows seeing the timer's interrupt (``timer_fire``'s
#: ``seen_share``), :func:`format_costs` warns that the cost is not reliable.
TIMER_SEEN_MIN = 0.5

__all__ = ["TIMER_SEEN_MIN", "format_costs"]


def format_costs(result: dict[str, Any]) -> str:
    """The costs as a few lines of text (microseconds)."""
    st, c = result["settings"], result["costs"]
    k = st["kernel"]
    lines = [
        f"kernel {k['release']}, HZ {k['config_hz']}, {k['cpus']} CPUs, "
        f"cc {st['congestion_control']}, autocorking {st['autocorking']}, "
        f"load {st['load']} -> {st['load_after']}",
    ]
    for name, w in c["wake"].items():
        if name == "pingpong":
            lines.append(
                f"ping-pong over TCP, {w['bytes']} B each way: round trip {w['poll_median_us']:.1f} "
                f"us in poll(), {w['spin_median_us']:.1f} us spinning; a wake-up adds "
                f"{w['wake_us']:.1f} us (each side idles {w['idle_us']:.0f} us)"
                + (
                    f"; the send() that wakes costs {w['waker_us']:.1f} us more CPU"
                    if "waker_us" in w
                    else ""
                )
            )
            continue
        if name in ("cross_by_gap", "cross_by_long_gap", "tcp_by_gap", "tcp_by_long_gap"):
            how = "a TCP socket in poll()" if name.startswith("tcp") else "pipe_cross"
            lines.append(
                f"wake-up ({how}) after the sleeper's CPU idled: "
                + ", ".join(f"{g['gap_us']:g} us: {g['median_us']:.1f}" for g in w)
                + " us (medians)"
            )
            if name == "tcp_by_gap":
                lines.append("  " + _late_line(c["wake"]))
            if all("spin_peer_waker_median_us" in g for g in w):
                lines.append(
                    "  what it adds to the waker's send() (asleep less spinning peer): "
                    + ", ".join(
                        f"{g['gap_us']:g} us: "
                        f"{g['waker_median_us'] - g['spin_peer_waker_median_us']:.1f}"
                        for g in w
                    )
                    + " us (medians)"
                )
            continue
        lines.append(
            f"wake-up ({name}): median {w['median_us']:.2f} us, p90 {w['p90_us']:.2f} us "
            f"({w['samples']} samples)"
        )
    for s in c["send"]:
        more = " MSG_MORE" if s["msg_more"] else ""
        lines.append(
            f"send() {s['bytes']} B{more}: CPU {s['cpu_us']:.2f} us per call, "
            f"{s['segments_per_call']:.2f} segments per call"
        )
    m = c["send_model"]
    lines.append(
        f"send() split: {m['per_call_us']:.2f} us per call + {m['per_segment_us']:.2f} us per "
        f"segment + {m['per_byte_ns']:.3f} ns per byte (worst misfit {m['max_residual_us']:.2f} us)"
    )
    r = c["recv"]
    lines.append(
        f"recv(): CPU {r['cpu_us_per_segment']:.2f} us per {r['bytes_per_segment']} B segment"
    )
    if "large" in r:
        big = r["large"]
        lines.append(
            f"recv() of {big['bytes']} B: CPU {big['cpu_us']:.2f} us in {big['segments']:g} "
            f"segments, {big['per_byte_ns']:.3f} ns per byte beyond small reads"
        )
    if "loop_bytes" in c:
        lb = c["loop_bytes"]
        each = ", ".join(
            f"{z['bytes'] // 1024} KiB: send() {z['send_cpu_us']:.2f}, recv() "
            f"{z['recv_cpu_us']:.2f} us"
            for z in lb["sizes"]
        )
        lines.append(
            f"the loop, QD {lb['qd']}, two CPUs, CPU per operation: {each}; per byte "
            f"{lb['send_per_byte_ns']:.3f} ns to send ({lb['send_extra_per_byte_ns']:+.3f} "
            f"beside one thread's), {lb['recv_per_byte_ns']:.3f} ns to read "
            f"(worst misfit {lb['max_residual_us']:.2f} us)"
        )
    if "timer_arm" in c:
        t = c["timer_arm"]
        lines.append(
            f"arming a timer: {t['near_us']:.2f} us when it becomes the CPU's next event, "
            f"{t['far_us']:.2f} us when not: {t['arm_us']:.2f} us to reprogram the clock event "
            f"(bbr's pacing timer; Host.timer_arm_cpu_s)"
        )
    if "timer_fire" in c:
        t = c["timer_fire"]
        lines.append(
            f"a timer firing on a busy CPU: its interrupt takes {t['fire_us']:.2f} us "
            f"(longest pause {t['gap_us']:.2f} us against {t['base_us']:.2f} us without a "
            f"timer, beginning {t['at_us']:+.2f} us from the timer's time; bbr's pacing timer; "
            f"Host.timer_fire_cpu_s)"
        )
        seen = t.get("seen_share")
        if seen is not None and seen < TIMER_SEEN_MIN:
            lines.append(
                f"warning: the timer's interrupt was seen in only {seen:.0%} of the windows: "
                "timer_fire is not reliable on this machine"
            )
    if "ack" in c:
        a = c["ack"]
        lines.append(
            f"pure ACK, sent and processed: CPU {a['cpu_us_per_ack']:.2f} us per ACK "
            f"(p10 {a['p10_us']:.2f}, p90 {a['p90_us']:.2f}; {a['repeats_used']} of "
            f"{a['repeats']} repeats; {a['acks_per_iter']['ack']:.2f} against "
            f"{a['acks_per_iter']['held']:.2f} ACKs per iteration)"
        )
    return "\n".join(lines)


def _late_line(wake: dict[str, Any]) -> str:
    """The late wake-ups after a brief idle (``Host.wake_late_share`` and ``wake_late_s``), or
    why they cannot be told."""
    from .wakeups import late_mean_s, late_share

    share = late_share(wake)
    if share is None:
        return "late wake-ups: not told by this run (no tails, ping-pong or long gaps)"
    mean = late_mean_s(wake)
    return f"late wake-ups (as slow as the longest idle's): {100 * share:.2f} %" + (
        f", {mean * 1e6:.0f} us on average" if mean else ""  # s -> us
    )

"""The progress bar of a compiled program that cannot report its own progress (pgdiag.run.progress.Ticker):
what it draws at a given time, and that a study run with progress on draws it and closes it."""

import io
import time

from pgdiag.run.progress import Ticker, clock


def test_the_bar_is_drawn_against_the_plan():
    tick = Ticker("gradient-study 1/2", planned=120.0, enabled=False)
    start = time.perf_counter()
    tick.phase("compiling")
    assert tick.line(start + 5).startswith("gradient-study 1/2: compiling 0:0")
    tick.phase("running")
    since = tick._since
    line = tick.line(since + 30)
    assert "[######..................]" in line and "0:30 of ~2:00 planned, about 1:30 left" in line
    assert "0:30 past the plan" in tick.line(since + 150)
    unplanned = Ticker("x", planned=None, enabled=False)
    unplanned.phase("running")
    assert unplanned.line(unplanned._since + 61) == "x: running 1:01"


def test_an_enabled_bar_redraws_and_closes_with_the_times():
    out = io.StringIO()
    with Ticker("steps 1/1", planned=0.3, enabled=True, stream=out, interval=0.02, terminal=True) as tick:
        tick.phase("compiling")
        time.sleep(0.1)
        tick.phase("running")
        time.sleep(0.1)
    text = out.getvalue()
    assert "\rsteps 1/1: compiling" in text and "planned" in text
    last = text.rstrip("\n").split("\r")[-1].strip()
    assert last.startswith("steps 1/1: done in 0:00 (compiling 0:00, running 0:00; planned ~0:00 running)")
    assert text.endswith("\n")


def test_into_a_log_a_bar_adds_a_line_now_and_then_instead_of_redrawing(monkeypatch):
    """stderr into a file (a CI log): no carriage returns, a line every LOG_EVERY seconds and the closing one."""
    from pgdiag.run import progress

    monkeypatch.setattr(progress, "LOG_EVERY", 0.05)
    out = io.StringIO()   # not a terminal
    with Ticker("steps 1/1", planned=10.0, enabled=True, stream=out, interval=0.01) as tick:
        tick.phase("running")
        time.sleep(0.18)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and 2 <= len(lines) <= 5, lines
    assert lines[-1].startswith("steps 1/1: done in")


def test_a_disabled_bar_writes_nothing():
    out = io.StringIO()
    with Ticker("x", planned=1.0, enabled=False, stream=out) as tick:
        tick.phase("running")
    assert out.getvalue() == ""


def test_clock():
    assert (clock(0), clock(59.6), clock(61), clock(3599), clock(3600), clock(-3)) == (
        "0:00", "1:00", "1:01", "59:59", "1:00:00", "0:00")

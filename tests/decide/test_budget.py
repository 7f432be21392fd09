"""The time budget, max_duration: the loop stops with exit 4 and a stopped event naming the
budget once the segment has run that long; status shows the time left; analyze the time each
kept improvement took. The clock the session reads is moved forward instead of waited for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Tool, ledger_lines, runs, start_args, write

from git_autoresearch import ledger as ledger_mod
from git_autoresearch.review.analysis import analysis_text, analyze
from git_autoresearch.session.config import duration_seconds, format_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("8h", 28800), ("90m", 5400), ("3600s", 3600), ("1h30m", 5400), ("1.5h", 5400),
    ("2d", 172800), ("0s", 0), ("0", 0),
])
def test_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["8", "8x", "h", "", "30m1h", "1h1h", "-1h", "1 h"])
def test_malformed_durations_are_none(text: str) -> None:
    assert duration_seconds(text) is None


def test_format_duration() -> None:
    assert [format_duration(s) for s in (0, 12.9, 240, 28745, -5)] == \
        ["0s", "12s", "4m 0s", "7h 59m 5s", "0s"]


def test_start_refuses_a_malformed_duration_naming_the_key(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--max-duration", "8 hours"), expect=2)
    assert "max_duration '8 hours' is not a duration such as 8h, 90m, 3600s or 1h30m" in res.err
    assert not (repo / ".auto").exists()


def _clock(monkeypatch: pytest.MonkeyPatch, ahead_s: float) -> None:
    """The session's clock, ``ahead_s`` seconds after the real one."""
    real = ledger_mod.now_ms
    monkeypatch.setattr("git_autoresearch.session.session.now_ms",
                        lambda: real() + int(ahead_s * 1000))


def test_loop_stops_once_the_duration_is_spent(repo: Path, ar: Tool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args("--max-duration", "1h"))
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "within the hour", "--json").json()["status"] == "keep"
    _clock(monkeypatch, 3600)
    write(repo / "value.txt", "80\n")
    res = ar(repo, "run", "-d", "after the hour", expect=4)
    assert "max_duration (1h) spent in this segment: the loop stops here" in res.err
    assert "unrecorded changes (value.txt)" in res.err
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert ar(repo, "run", "-d", "again", expect=4).err == (
        "git autoresearch: max_duration (1h) spent in this segment: the loop stops here; the work "
        "tree has unrecorded changes (value.txt): record them with git autoresearch discard, or "
        "with keep --metric VALUE for a number measured elsewhere\n")
    stopped = [e for e in ledger_lines(repo) if e.get("type") == "stopped"]
    assert [(e["budget"], e["next_run"], e["command"]) for e in stopped] == \
        [("max_duration", 3, "run")], "one event per budget and next run"
    found = ar(repo, "status", "--json").json()
    assert (found["max_duration"], found["time_left_seconds"]) == ("1h", 0)
    assert "time left   0s of 1h (spent: the next run exits 4)" in ar(repo, "status").out
    assert "max_duration is spent: the next run exits 4" in ar(repo, "resume").out
    assert ar(repo, "sessions", "--json").json()["sessions"][0]["state"] == "stopped"
    assert ar(repo, "doctor").code == 0, "the state ref holds the stopped event"
    # A new segment starts its own clock; 0 lifts the budget.
    ar(repo, "discard", "-d", "after the hour, recorded by hand")
    ar(repo, "start", "--new-segment", "--max-duration", "0")
    assert ar(repo, "status", "--json").json()["max_duration"] is None
    ar(repo, "run", "-d", "no budget now")


def test_status_shows_the_time_left(repo: Path, ar: Tool,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args("--max-duration", "8h"))
    _clock(monkeypatch, 3600)
    left = ar(repo, "status", "--json").json()["time_left_seconds"]
    assert 25200 - 300 < left <= 25200
    assert "time left   6h 5" in ar(repo, "status").out
    assert "max_duration = \"8h\"" in (repo / ".auto" / "config.toml").read_text()


def test_no_budget_no_time_left(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    found = ar(repo, "status", "--json").json()
    assert (found["max_duration"], found["time_left_seconds"]) == (None, None)
    assert "time left" not in ar(repo, "status").out
    assert "max_duration" not in (repo / ".auto" / "config.toml").read_text()


def test_max_experiments_stop_is_an_event_naming_the_budget(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--max-experiments", "1"))
    ar(repo, "run", "-d", "one")
    assert ar(repo, "run", "-d", "two", expect=4).err == (
        "git autoresearch: max_experiments (1) reached in this segment: the loop stops here\n")
    stopped = [e for e in ledger_lines(repo) if e.get("type") == "stopped"]
    assert [(e["budget"], e["next_run"]) for e in stopped] == [("max_experiments", 3)]


def test_analyze_reports_the_time_per_kept_improvement() -> None:
    lines = [{"type": "config", "name": "g", "metricName": "ms", "metricUnit": "ms",
              "bestDirection": "lower", "timestamp": 1_000_000},
             *({"run": n, "commit": "abc1234", "metric": m, "metrics": {}, "status": s,
                "description": f"run {n}", "timestamp": t, "segment": 0, "confidence": None,
                "asi": {}}
               for n, m, s, t in [(1, 100, "keep", 1_000_000), (2, 120, "discard", 1_060_000),
                                  (3, 90, "keep", 1_300_000),  # 300 s after the baseline
                                  (4, 95, "keep", 1_400_000),  # kept, not better: no improvement
                                  (5, 80, "keep", 5_200_000)])]  # 3900 s after run 3
    book = ledger_mod.parse("".join(json.dumps(line) + "\n" for line in lines).encode())
    result = analyze(book.current)
    assert result["runs_per_improvement"] == [{"run": 3, "runs": 2, "seconds": 300.0},
                                              {"run": 5, "runs": 2, "seconds": 3900.0}]
    assert result["mean_seconds_per_improvement"] == 2100.0
    assert "time per improvement: 35m 0s on average (5m 0s, 1h 5m 0s)" in \
        analysis_text(result, "ms", "ms")

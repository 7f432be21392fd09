"""The stop rules besides the budgets: ``target_metric`` (the segment's best reaches a value),
``max_runs_without_keep`` (a plateau) and ``max_failures_in_a_row`` (crashes or failed checks).
Each stops the loop as the budgets do: the next run or measure exits 4 with the reason, one
``stopped`` event names the rule and the reason, and status shows the pending stop."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from conftest import BIN, Tool, commit_all, ledger_lines, make_crew, runs, start_args, write

STRICT = ("--decision", "strict")


def stopped(repo: Path) -> list[dict[str, Any]]:
    return [e for e in ledger_lines(repo) if e.get("type") == "stopped"]


def breakable(repo: Path) -> None:
    """bench.sh fails while the ignored file .broken exists (a build that broke, whatever the
    experiment: a revert never touches an ignored file)."""
    write(repo / "bench.sh", "#!/bin/sh\ntest -e .broken && exit 1\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    write(repo / ".gitignore", ".broken\n")
    commit_all(repo)


def test_the_loop_stops_once_the_best_reaches_the_target(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args(*STRICT, "--target-metric", "80"))
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "ninety", "--json").json()["status"] == "keep"
    found = ar(repo, "status", "--json").json()
    assert (found["target_metric"], found["stop_rule"], found["stop_reason"]) == (80, None, None)
    assert "target      80\n" in ar(repo, "status").out
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "eighty", "--json").json()["status"] == "keep"
    write(repo / "value.txt", "70\n")
    reason = ("target_metric (80) reached in this segment: the best so far is 80 (run 3)")
    res = ar(repo, "run", "-d", "seventy", expect=4)
    assert res.err == (f"git autoresearch: {reason}: the loop stops here; the work tree has "
                       "unrecorded changes (value.txt): record them with git autoresearch "
                       "discard, or with keep --metric VALUE for a number measured elsewhere\n")
    assert [r["run"] for r in runs(repo)] == [1, 2, 3]
    ar(repo, "measure", expect=4)
    # keep names no measure that the rule stops (it named one, and an agent went round)
    assert ar(repo, "keep", "-d", "seventy", expect=3).err == (
        f"git autoresearch: nothing to keep: no pending measurement with a metric, and {reason}: "
        "nothing more is measured (pass --metric VALUE, or git autoresearch discard reverts "
        "the change)\n")
    ar(repo, "run", "-d", "again", expect=4)
    assert [(e["rule"], e["reason"], e["next_run"], e["command"]) for e in stopped(repo)] == \
        [("target_metric", reason, 4, "run")], "one event per rule and next run"
    found = ar(repo, "status", "--json").json()
    assert (found["stop_rule"], found["stop_reason"]) == ("target_metric", reason)
    assert f"stop rule   {reason}: the next run exits 4\n" in ar(repo, "status").out
    resumed = ar(repo, "resume", "--json").json()
    assert (resumed["stop_rule"], resumed["stop_reason"]) == ("target_metric", reason)
    assert f"{reason}: the next run exits 4" in ar(repo, "resume").out
    assert ar(repo, "sessions", "--json").json()["sessions"][0]["state"] == "stopped"
    # A new segment without the target goes on.
    ar(repo, "discard", "-d", "past the target, recorded by hand")
    ar(repo, "start", "--new-segment", "--target-metric", "none")
    assert "target_metric" not in (repo / ".auto" / "config.toml").read_text()
    write(repo / "value.txt", "60\n")
    assert ar(repo, "run", "-d", "no target now", "--json").json()["status"] == "keep"


@pytest.mark.parametrize(("direction", "target", "stops"), [
    ("lower", "100", True), ("lower", "99.5", False),
    ("higher", "100", True), ("higher", "100.5", False)])
def test_the_target_is_reached_at_or_past_it_in_the_direction(
        repo: Path, ar: Tool, direction: str, target: str, stops: bool) -> None:
    """The baseline (100) is the best so far."""
    ar(repo, *start_args(*STRICT, "--direction", direction, "--target-metric", target))
    found = ar(repo, "status", "--json").json()
    assert found["stop_rule"] == ("target_metric" if stops else None)
    ar(repo, "measure", expect=4 if stops else 0)


def test_a_plateau_stops_the_loop_and_a_keep_restarts_the_count(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args(*STRICT, "--max-runs-without-keep", "2"))
    write(repo / "value.txt", "120\n")
    ar(repo, "run", "-d", "worse")
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    write(repo / "value.txt", "95\n")
    ar(repo, "run", "-d", "worse again")
    found = ar(repo, "status", "--json").json()
    assert (found["runs_without_keep"], found["max_runs_without_keep"], found["stop_rule"]) == \
        (1, 2, None)
    assert "no keep     1 of 2 runs in a row\n" in ar(repo, "status").out
    write(repo / "value.txt", "96\n")
    ar(repo, "run", "-d", "worse once more")
    reason = ("max_runs_without_keep (2) reached in this segment: 2 run(s) in a row without "
              "a keep (runs 4 to 5)")
    assert ar(repo, "run", "-d", "a third", expect=4).err.startswith(
        f"git autoresearch: {reason}: the loop stops here")
    ar(repo, "run", "-d", "a third", expect=4)
    assert [(e["rule"], e["reason"], e["next_run"]) for e in stopped(repo)] == \
        [("max_runs_without_keep", reason, 6)]
    assert ar(repo, "status", "--json").json()["stop_rule"] == "max_runs_without_keep"
    assert ar(repo, "log", "--tsv").out.splitlines()[-1] == f"-\t-\t-\tstopped\t-\t{reason}"
    # A keep by hand ends the plateau.
    write(repo / "value.txt", "50\n")
    ar(repo, "keep", "-d", "found by hand", "--metric", "50")
    write(repo / "value.txt", "40\n")
    assert ar(repo, "run", "-d", "on again", "--json").json()["status"] == "keep"
    ar(repo, "start", "--new-segment", "--max-runs-without-keep", "0")
    assert ar(repo, "status", "--json").json()["max_runs_without_keep"] is None
    assert "no keep" not in ar(repo, "status").out


def test_failures_in_a_row_stop_the_loop(repo: Path, ar: Tool) -> None:
    breakable(repo)
    ar(repo, *start_args(*STRICT, "--max-failures-in-a-row", "2",
                         "--checks-command", "test ! -e fail-checks"))
    write(repo / "value.txt", "90\n")
    write(repo / "fail-checks", "")
    assert ar(repo, "run", "-d", "checks fail", "--json").json()["status"] == "checks_failed"
    write(repo / "value.txt", "120\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    (repo / ".broken").touch()
    assert ar(repo, "run", "-d", "broken", "--json").json()["status"] == "crash"
    found = ar(repo, "status", "--json").json()
    assert (found["failures_in_a_row"], found["max_failures_in_a_row"], found["stop_rule"]) \
        == (1, 2, None), "the discard ended the first streak"
    assert "failures    1 of 2 runs in a row (crash or checks_failed)\n" in \
        ar(repo, "status").out
    (repo / ".broken").unlink()
    write(repo / "value.txt", "85\n")
    write(repo / "fail-checks", "")
    assert ar(repo, "run", "-d", "checks fail again", "--json").json()["status"] == \
        "checks_failed"
    reason = ("max_failures_in_a_row (2) reached in this segment: 2 run(s) in a row crashed "
              "or failed their checks (runs 4 to 5)")
    res = ar(repo, "measure", expect=4)
    assert res.err == f"git autoresearch: {reason}: the loop stops here\n"
    ar(repo, "run", "-d", "x", expect=4)
    assert [(e["rule"], e["reason"], e["next_run"], e["command"]) for e in stopped(repo)] == \
        [("max_failures_in_a_row", reason, 6, "measure")]
    assert f"stop rule   {reason}: the next run exits 4\n" in ar(repo, "status").out
    # A discard recorded by hand ends the row, as run(1) says: the loop goes on.
    ar(repo, "discard", "-d", "the last change, by hand")
    assert ar(repo, "status", "--json").json()["stop_rule"] is None
    assert not (repo / "fail-checks").exists()  # (the discard took it with the rest)
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "on again", "--json").json()["status"] == "keep"


def test_a_shell_loop_ends_by_itself_once_the_build_keeps_failing(repo: Path) -> None:
    breakable(repo)
    env = dict(os.environ)
    env["PATH"] = f"{sysconfig.get_paths()['scripts']}{os.pathsep}{BIN}{os.pathsep}{env['PATH']}"
    started = subprocess.run(["git", "autoresearch", *start_args(
        *STRICT, "--max-failures-in-a-row", "3")], cwd=repo, env=env, capture_output=True,
        text=True)
    assert started.returncode == 0, started.stderr
    (repo / ".broken").touch()
    loop = subprocess.run("n=0; while git autoresearch run -d try; do n=$((n+1)); done; "
                          "echo $n", shell=True, cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300)
    assert loop.stdout.strip().splitlines()[-1] == "3"
    assert "git autoresearch: max_failures_in_a_row (3) reached in this segment: 3 run(s) in " \
        "a row crashed or failed their checks (runs 2 to 4): the loop stops here\n" in loop.stderr
    assert [r["status"] for r in runs(repo)] == ["keep", "crash", "crash", "crash"]
    assert [e["rule"] for e in stopped(repo)] == ["max_failures_in_a_row"]


def test_every_worker_stops_on_a_rule_with_one_event(repo: Path, ar: Tool) -> None:

    main, w1, w2 = make_crew(repo, ar, "--max-runs-without-keep", "2")
    write(w1 / "value.txt", "150\n")
    assert ar(w1, "run", "-d", "worse", "--json").json()["status"] == "discard"
    write(w2 / "value.txt", "160\n")
    assert ar(w2, "run", "-d", "worse", "--json").json()["status"] == "discard"
    for where in (w1, w2, main, w1):
        said = ar(where, "run", "-d", "stopped", expect=4).err
        assert "max_runs_without_keep (2) reached in this segment" in said
    assert [(e["rule"], e["next_run"]) for e in stopped(main)] == \
        [("max_runs_without_keep", 4)]


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--target-metric", "fast", "target_metric 'fast' is not a number (or 'none', which lifts "
                                "it)"),
    ("--target-metric", "nan", "target_metric 'nan' is not a number (or 'none', which lifts "
                               "it)"),
    ("--max-runs-without-keep", "-1", None),
    ("--max-failures-in-a-row", "x", None)])
def test_bad_stop_rules_are_refused_naming_them(repo: Path, ar: Tool, option: str, value: str,
                                                 said: str | None) -> None:
    res = ar(repo, *start_args(option, value), expect=2)
    if said is not None:
        assert said in res.err
    else:
        assert option in res.err
    assert not (repo / ".auto").exists()


def test_bad_stop_rules_in_a_config_file_are_refused(repo: Path, ar: Tool) -> None:
    config = repo.parent / "rules.toml"
    config.write_text("max_failures_in_a_row = 1.5\n")
    res = ar(repo, *start_args("--config", str(config)), expect=2)
    assert "max_failures_in_a_row must be a whole number of at least 1" in res.err
    config.write_text("target_metric = true\n")
    res = ar(repo, *start_args("--config", str(config)), expect=2)
    assert "target_metric must be a number" in res.err


def test_stop_rules_from_a_config_file_are_checked_against_tampering(repo: Path,
                                                                      ar: Tool) -> None:
    config = repo.parent / "rules.toml"
    config.write_text("target_metric = 50\nmax_runs_without_keep = 10\n"
                      "max_failures_in_a_row = 3\n")
    ar(repo, *start_args(*STRICT, "--config", str(config)))
    text = (repo / ".auto" / "config.toml").read_text()
    assert "target_metric = 50\nmax_runs_without_keep = 10\nmax_failures_in_a_row = 3\n" in text
    cfg = repo / ".auto" / "config.toml"
    cfg.chmod(0o644)
    cfg.write_text(text.replace("max_failures_in_a_row = 3", "max_failures_in_a_row = 30"))
    res = ar(repo, "run", "-d", "x", expect=3)
    assert "max_failures_in_a_row: 3 -> 30" in res.err

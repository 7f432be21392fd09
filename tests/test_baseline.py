"""A segment whose baseline was never measured, and the ways out that name a session branch,
followed with an experiment in the work tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import git, ledger_lines, runs, start_args, write

TOOL = [sys.executable, "-m", "git_autoresearch"]

NEVER = ("the baseline of this segment was never measured (start was interrupted); set aside "
         "the experiment in the work tree (value.txt) with git autoresearch discard -d "
         "DESCRIPTION (it is recorded and kept at an attempt ref), then run git autoresearch "
         "start --new-segment")
NEVER_CLEAN = ("the baseline of this segment was never measured (start was interrupted); run "
               "git autoresearch start --new-segment")


def killed_before_baseline(repo: Path) -> None:
    proc = subprocess.run([*TOOL, *start_args("--scope", "value.txt")], cwd=repo,
                          capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTORESEARCH_DIE_AT": "start:before-baseline"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_a_start_killed_before_its_baseline_is_reported_and_the_way_out_works(repo: Path, ar
                                                                              ) -> None:
    killed_before_baseline(repo)
    assert ar(repo, "status", "--json").json()["warnings"] == [NEVER_CLEAN]
    assert ar(repo, "status").err == f"warning: {NEVER_CLEAN}\n"
    doctor = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert doctor == [{"problem": NEVER_CLEAN, "fix": None, "fixed": False}]
    assert ar(repo, "resume", "--json").json()["warnings"] == [NEVER_CLEAN]

    write(repo / "value.txt", "5\n")  # an experiment, in the tree before any baseline
    assert ar(repo, "status", "--json").json()["warnings"] == [NEVER]
    assert ar(repo, "run", "-d", "idea", expect=3).err == f"git autoresearch: {NEVER}\n"
    assert ar(repo, "keep", "-d", "idea", "--metric", "5", expect=3).err == \
        f"git autoresearch: {NEVER}\n"
    assert runs(repo) == [] and (repo / "value.txt").read_text() == "5\n"
    # The way out, followed as the message says.
    discarded = ar(repo, "discard", "-d", "idea", "--json").json()
    assert (discarded["run"], discarded["status"], discarded["attempt_ref"]) == \
        (1, "discard", "refs/autoresearch/s1/attempts/1")
    assert git(repo, "show", "refs/autoresearch/s1/attempts/1:value.txt") == "5"
    assert (repo / "value.txt").read_text() == "100\n"
    baseline = ar(repo, "start", "--new-segment", "--json").json()["baseline"]
    assert (baseline["run"], baseline["metric"], baseline["baseline"]) == (2, 100, True)
    status = ar(repo, "status", "--json").json()
    assert (status["segment"]["baseline"]["run"], status["segment"]["baseline"]["metric"],
            status["warnings"]) == (2, 100, [])
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    write(repo / "value.txt", "5\n")
    kept = ar(repo, "keep", "-d", "idea again", "--metric", "5", "--json").json()
    assert (kept["run"], kept["status"]) == (3, "keep")


def test_a_session_started_without_a_baseline_still_keeps_its_first_run(repo: Path, ar
                                                                        ) -> None:
    ar(repo, *start_args("--no-baseline", "--scope", "value.txt"))
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    write(repo / "value.txt", "5\n")
    kept = ar(repo, "keep", "-d", "first", "--metric", "5", "--json").json()
    assert (kept["run"], kept["status"]) == (1, "keep")
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_a_failed_baseline_names_how_to_set_an_experiment_aside(repo: Path, ar) -> None:
    write(repo / "bench.sh", "#!/bin/sh\nexit 1\n", 0o755)
    git(repo, "commit", "-q", "-am", "broken bench")
    ar(repo, *start_args("--scope", "value.txt"), expect=3)
    write(repo / "value.txt", "5\n")
    failed = ("the baseline of this segment failed (run 1: the command exited with code "
              "1); "
              "fix the command, then set aside the experiment in the work tree (value.txt) "
              "with git autoresearch discard -d DESCRIPTION (it is recorded and kept at an "
              "attempt ref), then run git autoresearch start --new-segment")
    assert ar(repo, "run", "-d", "idea", expect=3).err == f"git autoresearch: {failed}\n"
    assert ar(repo, "keep", "-d", "idea", "--metric", "5", expect=3).err == \
        f"git autoresearch: {failed}\n"
    assert failed in ar(repo, "status", "--json").json()["warnings"]


def test_a_keep_recorded_in_place_of_the_baseline_is_pointed_out(repo: Path, ar) -> None:
    """A ledger written before keep refused it: the first kept run is an experiment."""
    killed_before_baseline(repo)
    path = repo / ".auto" / "log.jsonl"
    header = ledger_lines(repo)[0]
    record = {"run": 1, "commit": git(repo, "rev-parse", "--short", "HEAD"), "metric": 5,
              "metrics": {}, "status": "keep", "description": "idea", "timestamp": 1,
              "segment": header.get("segment", 0), "confidence": None}
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")
    doubt = ("the baseline of this segment was never measured: run 1, an experiment, was kept "
             "in its place, and improvements are computed against it; to compare with the "
             "unmodified code, run git autoresearch start --new-segment")
    assert doubt in ar(repo, "status", "--json").json()["warnings"]
    assert doubt in [f["problem"] for f in ar(repo, "doctor", "--json", expect=3).json()
                     ["findings"]]

"""run --retry: a run that was not kept, tried again on the incumbent of now, measured and
decided as a new run that names the run it retried; log, show and the dashboard link both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Tool, commit_all, git, ledger_lines, runs, start_args, write

# The score is the larger of value.txt and src/b.txt: lowering b alone gains nothing until value
# is lowered too, so a discard's reason stops holding after a later keep.
MAX_BENCH = ('#!/bin/sh\na=$(cat value.txt); b=$(cat src/b.txt)\n'
             'if [ "$a" -gt "$b" ]; then echo "score: $a"; else echo "score: $b"; fi\n')


def two_levers(repo: Path, ar: Tool) -> None:
    """Runs: 1 baseline (100), 2 discard (b lowered to 50: still 100), 3 keep (value lowered to
    70: the score is b's 80), with a protected notes file."""
    write(repo / "max.sh", MAX_BENCH, 0o755)
    write(repo / "src" / "b.txt", "80\n")
    commit_all(repo, "two levers")
    ar(repo, *start_args("--command", "sh max.sh", "--protected", "notes.md",
                         "--allow-missing"))
    write(repo / "src" / "b.txt", "50\n")
    assert ar(repo, "run", "-d", "lower b", "--json").json()["status"] == "discard"
    write(repo / "value.txt", "70\n")
    assert ar(repo, "run", "-d", "lower value", "--json").json()["status"] == "keep"


def test_a_retry_is_measured_on_the_new_incumbent_and_linked_both_ways(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the table's descriptions whole
    two_levers(repo, ar)
    write(repo / "notes.md", "my notes\n")  # protected: no obstacle, never touched
    incumbent = git(repo, "rev-parse", "HEAD")
    record = ar(repo, "run", "--retry", "2", "--json").json()
    assert (record["run"], record["status"], record["metric"], record["retry_of"],
            record["description"], record["committed"]) == (
        4, "keep", 70, 2, "retry of run 2: lower b", True)
    assert git(repo, "rev-parse", "HEAD^") == incumbent
    assert git(repo, "log", "-1", "--format=%s") == "retry of run 2: lower b"
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "src/b.txt"
    assert (repo / "src" / "b.txt").read_text() == "50\n"
    assert (repo / "notes.md").read_text() == "my notes\n"
    assert runs(repo)[-1]["retry_of"] == 2
    table = ar(repo, "log").out.splitlines()
    assert table[3].endswith("  retried by run 4: lower b")
    assert table[5].endswith("  retry of run 2: lower b")
    assert ar(repo, "show", "2", "--json").json()["retried_by"] == [4]
    shown = ar(repo, "show", "4", "--json").json()
    assert (shown["record"]["retry_of"], shown["retried_by"]) == (2, [])
    assert "\nretried by run 4\n" in ar(repo, "show", "2").out
    assert "\nretry of run 2\n" in ar(repo, "show", "4").out
    # A filter that leaves the retry out still reads it: the run it retried says so.
    assert ar(repo, "log", "--status", "discard").out.splitlines()[2].endswith(
        "  retried by run 4: lower b")
    assert [r["run"] for r in ar(repo, "log", "--where", "retry_of=2", "--json").json()["runs"]] \
        == [4]
    ar(repo, "dashboard", "-o", str(repo / ".auto" / "page.html"))
    page = (repo / ".auto" / "page.html").read_text()
    assert "<td>retried by run 4: lower b</td>" in page
    assert "<td>retry of run 2: lower b</td>" in page


def test_a_retry_of_a_retry_names_only_the_run_it_retries_and_d_replaces_the_text(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    two_levers(repo, ar)
    write(repo / "src" / "b.txt", "90\n")
    ar(repo, "run", "-d", "raise b")  # run 4, a discard (90)
    first = ar(repo, "run", "--retry", "4", "--json").json()  # run 5: 90 again
    assert (first["status"], first["description"]) == ("discard", "retry of run 4: raise b")
    again = ar(repo, "run", "--retry", "5", "--json").json()
    assert (again["retry_of"], again["description"]) == (5, "retry of run 5: raise b")
    given = ar(repo, "run", "--retry", "4", "-d", "raise b, once more", "--json").json()
    assert (given["retry_of"], given["description"]) == (4, "raise b, once more")
    table = ar(repo, "log").out.splitlines()
    assert table[5].endswith("  retried by runs 5, 7: raise b")
    assert table[6].endswith("  retry of run 4; retried by run 6: raise b")
    assert table[8].endswith("  retry of run 4: raise b, once more")


def test_a_dry_run_of_a_retry_leaves_nothing_behind(repo: Path, ar: Tool) -> None:
    two_levers(repo, ar)
    before = ledger_lines(repo)
    head = git(repo, "rev-parse", "HEAD")
    found = ar(repo, "run", "--retry", "2", "--dry-run", "--json").json()
    assert (found["status"], found["metric"], found["dry_run"], found["retry_of"]) == (
        "keep", 70, True, 2)
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD") == head
    assert ledger_lines(repo) == before
    assert ar(repo, "status", "--json").json()["pending"] is None
    said = ar(repo, "run", "--retry", "2", "--dry-run").out.splitlines()
    assert said[0] == "retrying run 2 (dry run: its change is off the work tree again)"
    assert said[-1] == "decision: keep (dry run: nothing applied)"


def test_what_cannot_be_retried_is_refused_and_nothing_changes(repo: Path, ar: Tool) -> None:
    two_levers(repo, ar)
    ar(repo, "discard", "-d", "nothing changed")  # run 4: its attempt changes nothing
    write(repo / "src" / "b.txt", "90\n")
    ar(repo, "run", "-d", "b up")  # run 5: a discard whose attempt ref goes below
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/attempts/5")
    write(repo / "value.txt", "95\n")
    ar(repo, "run", "-d", "value up")  # run 6: a discard that conflicts with run 8's keep
    write(repo / "value.txt", "60\n")
    ar(repo, "run", "-d", "value down")  # run 7: a discard (b is 80)
    write(repo / "value.txt", "60\n")
    write(repo / "src" / "b.txt", "60\n")
    ar(repo, "run", "-d", "both down")  # run 8: keep
    before = ledger_lines(repo)
    head = git(repo, "rev-parse", "HEAD")
    refusals = [
        (["--retry", "3"], 2, "run 3 is kept: its change is on the session branch already; only "
                              "a run not kept (discard, crash, checks_failed) can be retried"),
        (["--retry", "5"], 2, "run 5 has no attempt to retry: it has no attempt ref (recorded by "
                              "another tool, or by discard before anything changed)"),
        (["--retry", "9"], 2, "no run 9 in the ledger (runs are 1 to 8)"),
        (["--retry", "4"], 3, "run 4 recorded no change (nothing in the scope had changed): "
                              "nothing to retry"),
        (["--retry", "6"], 3, f"run 6's change conflicts with HEAD ({head[:7]}) in value.txt: "
                              "nothing was changed"),
        ([], 2, "Missing option '-d' / '--description'. (see git autoresearch run -h)"),
        (["--retry", "7", "-d", ""], 2, "the description is empty: say what the run tried"),
    ]
    for args, code, message in refusals:
        assert ar(repo, "run", *args, expect=code).err == f"git autoresearch: {message}\n"
        assert git(repo, "status", "--porcelain") == ""
    write(repo / "README.md", "edited\n")
    assert ar(repo, "run", "--retry", "2", expect=3).err == (
        "git autoresearch: the work tree has changes (README.md): run, keep, discard or revert "
        "them before retrying run 2\n")
    assert (repo / "README.md").read_text() == "edited\n"
    assert (repo / "src" / "b.txt").read_text() == "60\n"
    assert ledger_lines(repo) == before
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_retry_cut_short_while_measuring_takes_its_change_back(repo: Path, ar: Tool) -> None:
    two_levers(repo, ar)
    before = ledger_lines(repo)
    stopped = subprocess.run(
        [sys.executable, "-m", "git_autoresearch", "run", "--retry", "2"], cwd=repo,
        capture_output=True, text=True,
        env={**os.environ, "GIT_AUTORESEARCH_DIE_AT": "group:started@TERM"})
    assert (stopped.returncode, stopped.stderr) == (143, "git autoresearch: terminated\n")
    assert git(repo, "status", "--porcelain") == ""
    assert ledger_lines(repo) == before
    assert ar(repo, "run", "--retry", "2", "--json").json()["status"] == "keep"

"""A segment whose baseline was never measured, and the ways out that name a session branch,
followed with an experiment in the work tree."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

from conftest import Tool, git, ledger_lines, runs, start_args, tool, write

NEVER = ("the baseline of this segment was never measured (start was interrupted or "
         "refused); set aside the experiment in the work tree (value.txt) with git "
         "autoresearch discard -d "
         "DESCRIPTION (it is recorded and kept at an attempt ref), then run git autoresearch "
         "start --new-segment")
NEVER_CLEAN = ("the baseline of this segment was never measured (start was interrupted or "
               "refused); run git autoresearch start --new-segment")


def killed_before_baseline(repo: Path) -> None:
    proc = tool(repo, *start_args("--scope", "value.txt"),
                env={"GIT_AUTORESEARCH_DIE_AT": "start:before-baseline"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def test_a_start_killed_before_its_baseline_is_reported_and_the_way_out_works(repo: Path, ar: Tool
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


def test_a_session_started_without_a_baseline_still_keeps_its_first_run(repo: Path, ar: Tool
                                                                        ) -> None:
    ar(repo, *start_args("--no-baseline", "--scope", "value.txt"))
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    write(repo / "value.txt", "5\n")
    kept = ar(repo, "keep", "-d", "first", "--metric", "5", "--json").json()
    assert (kept["run"], kept["status"]) == (1, "keep")
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_a_failed_baseline_names_how_to_set_an_experiment_aside(repo: Path, ar: Tool) -> None:
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


def test_a_keep_recorded_in_place_of_the_baseline_is_pointed_out(repo: Path, ar: Tool) -> None:
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


def test_resume_in_a_linked_worktree_names_the_worktree_that_has_the_branch(repo: Path, ar: Tool
                                                                           ) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    other = repo.parent / "wt2"
    git(repo, "worktree", "add", "-q", str(other), "main")
    there = repo.resolve()
    res = ar(other, "resume", "--session-id", "s1", expect=3)
    assert res.err == ("git autoresearch: the session branch autoresearch/s1 is checked out in "
                       f"another worktree, {there}: carry on there (cd {there} && git "
                       "autoresearch resume); nothing was changed here\n")
    assert not (other / ".auto").exists()
    assert git(other, "status", "--porcelain", "--ignored") == ""
    assert git(other, "symbolic-ref", "--short", "HEAD") == "main"
    # The way out, followed: resume where the branch is checked out.
    assert ar(there, "resume", "--json").json()["actions"] == []
    # A session folder copied here by hand: run names the worktree too, not git switch.
    shutil.copytree(repo / ".auto", other / ".auto")
    res = ar(other, "run", "-d", "idea", expect=3)
    assert res.err == ("git autoresearch: the work tree is on branch main, and the session "
                       "branch autoresearch/s1 is checked out in another worktree, "
                       f"{there}: carry on there (cd {there})\n")
    res = ar(other, "start", "--new-segment", expect=3)
    assert res.err == ("git autoresearch: check out the session branch autoresearch/s1 before "
                       "starting a new segment (it is checked out in another worktree, "
                       f"{there}: start the new segment there)\n")


def test_a_missing_session_branch_names_the_remotes_that_exist(repo: Path, ar: Tool,
                                                               tmp_path: Path) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "50\n")
    ar(repo, "keep", "-d", "better", "--metric", "50")
    git(repo, "clone", "-q", "--bare", str(repo), str(tmp_path / "upstream.git"))
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-q", "-D", "autoresearch/s1")
    res = ar(repo, "resume", expect=3)
    assert res.err == ("git autoresearch: the session branch autoresearch/s1 does not exist "
                       "here (this repository has no remote to fetch it from)\n")
    git(repo, "remote", "add", "upstream", str(tmp_path / "upstream.git"))
    res = ar(repo, "resume", expect=3)
    assert res.err == ("git autoresearch: the session branch autoresearch/s1 does not exist "
                       "here (bring it with its runs from a remote (upstream): git autoresearch "
                       "pull upstream s1)\n")
    ar(repo, "pull", "upstream", "s1")  # as it says
    assert ar(repo, "resume", "--json").json()["actions"] == ["checked out autoresearch/s1"]
    assert (repo / "value.txt").read_text() == "50\n"


def lines(*changed: tuple[int, str]) -> str:
    rows = [f"line {n}" for n in range(1, 8)]
    for n, text in changed:
        rows[n - 1] = text
    return "\n".join(rows) + "\n"


def off_the_branch_with_an_experiment(repo: Path, ar: Tool) -> None:
    """A session whose keep changed line 1 of src/data.txt; then main checked out, and line 7
    of that file edited there: a plain git switch back refuses to overwrite it."""
    write(repo / "src" / "data.txt", lines())
    git(repo, "add", "src/data.txt")
    git(repo, "commit", "-q", "-m", "data")
    ar(repo, *start_args("--scope", "src/"))
    write(repo / "src" / "data.txt", lines((1, "kept")))
    ar(repo, "keep", "-d", "kept", "--metric", "90")
    git(repo, "switch", "-q", "main")
    write(repo / "src" / "data.txt", lines((7, "experiment")))
    plain = subprocess.run(["git", "switch", "autoresearch/s1"], cwd=repo, capture_output=True)
    assert plain.returncode != 0  # what the old message said to do


def test_run_off_the_branch_with_an_experiment_names_a_switch_that_works(repo: Path, ar: Tool
                                                                         ) -> None:
    off_the_branch_with_an_experiment(repo, ar)
    res = ar(repo, "run", "-d", "idea", expect=3)
    assert res.err == ("git autoresearch: the work tree is on branch main, not on the session "
                       "branch autoresearch/s1, and has uncommitted changes (src/data.txt): "
                       "carry them over with git switch --merge autoresearch/s1, or commit "
                       "them on main first and then git switch autoresearch/s1\n")
    git(repo, "switch", "-q", "--merge", "autoresearch/s1")
    assert (repo / "src" / "data.txt").read_text() == lines((1, "kept"), (7, "experiment"))
    record = ar(repo, "run", "-d", "idea", "--json").json()
    assert (record["run"], record["status"]) == (3, "discard")
    assert git(repo, "show", "refs/autoresearch/s1/attempts/3:src/data.txt") + "\n" == \
        lines((1, "kept"), (7, "experiment"))


def test_resume_off_the_branch_with_an_experiment_names_a_switch_that_works(repo: Path, ar: Tool
                                                                            ) -> None:
    off_the_branch_with_an_experiment(repo, ar)
    res = ar(repo, "resume", expect=3)
    assert res.err == ("git autoresearch: cannot check out autoresearch/s1: uncommitted changes "
                       "in src/data.txt; carry them over with git switch --merge "
                       "autoresearch/s1, or commit them on main first and then git switch "
                       "autoresearch/s1, then run git autoresearch resume again\n")
    git(repo, "switch", "-q", "--merge", "autoresearch/s1")
    assert ar(repo, "resume", "--json").json()["actions"] == []
    assert (repo / "src" / "data.txt").read_text() == lines((1, "kept"), (7, "experiment"))


def test_a_worktree_whose_folder_is_gone_is_named_with_how_to_free_the_branch(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    other = tmp_path / "wt2"
    git(repo, "switch", "-q", "main")
    git(repo, "worktree", "add", "-q", str(other), "autoresearch/s1")
    gone = other.resolve()
    shutil.rmtree(other)
    res = ar(repo, "resume", expect=3)
    assert res.err == ("git autoresearch: the session branch autoresearch/s1 is checked out in "
                       f"a worktree whose folder is gone, {gone}: free the branch with git "
                       "worktree prune; nothing was changed here\n")
    git(repo, "worktree", "prune")  # as it says
    assert ar(repo, "resume", "--json").json()["actions"] == ["checked out autoresearch/s1"]

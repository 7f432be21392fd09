"""finalize: the session's keeps replayed onto its base as a branch to review, with the final
checks, an A/B measurement and .auto/final.md; the session branch and the work tree untouched."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import BIN, Tool, commit_all, git, ledger_lines, start_args, write

# The score is value.txt plus other.txt: keeps of either file improve it.
BENCH = '#!/bin/sh\necho "score: $(( $(cat value.txt) + $(cat other.txt) ))"\n'


def night(repo: Path, ar: Tool, bench: str = BENCH) -> None:
    """A session of four runs: keeps 2 (value.txt), 3 (other.txt alone), 4 (value.txt again)
    and a discard, 5, measured by ``bench``."""
    write(repo / "bench.sh", bench, 0o755)
    write(repo / "other.txt", "10\n")
    commit_all(repo)
    ar(repo, *start_args())
    for value, other, what in (("90", "10", "lower the value"), ("90", "5", "lower the other"),
                               ("80", "5", "lower the value again"), ("85", "5", "worse")):
        write(repo / "value.txt", f"{value}\n")
        write(repo / "other.txt", f"{other}\n")
        ar(repo, "run", "-d", what)


def snapshot(repo: Path) -> dict[str, str]:
    """The session branch, HEAD, the index and every file of the work tree (.git aside, and the
    files finalize writes: the ledger, which gains one line, and final.md)."""
    files = {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.parts
             and p.name not in ("final.md", "log.jsonl")}
    return {"branch": git(repo, "rev-parse", "autoresearch/s1"),
            "head": git(repo, "symbolic-ref", "HEAD"), "index": git(repo, "write-tree"),
            **files}


def test_finalize_replays_every_keep_with_its_trailers_and_touches_nothing_else(
        repo: Path, ar: Tool) -> None:
    night(repo, ar)
    before, lines = snapshot(repo), ledger_lines(repo)
    base = git(repo, "rev-parse", "main")
    done = ar(repo, "finalize", "--checks-command", "test $(cat value.txt) = 80",
              "--samples", "2", "--json").json()
    assert snapshot(repo) == before and ledger_lines(repo)[:-1] == lines
    assert (done["branch"], done["runs"], done["base"]) == ("autoresearch/s1-final", [2, 3, 4],
                                                            base[:7])
    final = git(repo, "rev-parse", "autoresearch/s1-final")
    assert done["commit"] == final[:7]
    assert git(repo, "rev-list", "--count", f"{base}..{final}") == "3"
    assert git(repo, "rev-parse", f"{final}^{{tree}}") == \
        git(repo, "rev-parse", "autoresearch/s1^{tree}")  # the same code as the session
    runs = git(repo, "log", "--reverse", "--format=%(trailers:key=Autoresearch-Run,valueonly)",
               f"{base}..{final}").split()
    assert runs == ["2", "3", "4"]
    results = git(repo, "log", "--reverse", "--format=%(trailers:key=Result,valueonly)",
                  f"{base}..{final}").split()
    assert results == ['{"status":"keep","score":100}', '{"status":"keep","score":95}',
                       '{"status":"keep","score":85}']
    assert done["checks"]["passed"] is True and done["checks"]["command"] == \
        "test $(cat value.txt) = 80"
    assert done["samples"] == {"base": [110, 110], "final": [85, 85]}
    assert done["verdict"] == "confirmed" and done["effect"] == -25
    line = [x for x in ledger_lines(repo) if x.get("type") == "final"]
    assert len(line) == 1 and "run" not in line[0] and line[0]["runs"] == [2, 3, 4]
    notes = (repo / ".auto" / "final.md").read_text()
    assert notes.startswith("# lower the value\n")
    for run, what in ((2, "lower the value"), (3, "lower the other"),
                      (4, "lower the value again")):
        assert f"| {run} | `" in notes and f"| {what} |" in notes
    assert "- run 5 (discard, worse " in notes and "Final checks `test $(cat value.txt) = 80`: " \
        "passed." in notes and "**-22.73%**" in notes
    assert ar(repo, "doctor", "--json").json()["findings"] == []  # final.md on the state ref


def test_a_conflict_is_named_run_by_run_and_no_branch_is_made(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    before = snapshot(repo)
    res = ar(repo, "finalize", "--drop", "2", "--samples", "0", expect=3)
    assert res.err == ("  run 3: applied\n  run 4: conflict (value.txt)\n"
                       "git autoresearch: run 4 conflicts in value.txt: no branch was made "
                       "(leave them out with --drop, or replay only some with --only); runs "
                       "left out (2) are not replayed: a keep that builds on one conflicts\n")
    assert git(repo, "branch", "--list", "autoresearch/s1-final") == ""
    assert snapshot(repo) == before
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    doc = ar(repo, "finalize", "--drop", "2", "--samples", "0", "--json", expect=3).json()
    assert doc["exit_code"] == 3 and doc["commit"] is None
    assert [(r["run"], r["outcome"], r["paths"]) for r in doc["replayed"]] == \
        [(3, "applied", []), (4, "conflict", ["value.txt"])]
    assert ar(repo, "finalize", "--only", "3", "--samples", "0", "--json").json()["runs"] == [3]


def test_split_makes_a_branch_per_keep_that_applies_alone_and_names_dependencies(
        repo: Path, ar: Tool) -> None:
    night(repo, ar)
    done = ar(repo, "finalize", "--split", "--samples", "0", "--json").json()
    assert [(r["run"], r["branch"], r["depends_on"]) for r in done["split"]] == \
        [(2, "autoresearch/s1-final-2", []), (3, "autoresearch/s1-final-3", []),
         (4, None, [2])]
    base = git(repo, "rev-parse", "main")
    for run in (2, 3):
        tip = git(repo, "rev-parse", f"autoresearch/s1-final-{run}")
        assert git(repo, "rev-parse", f"{tip}^") == base
        assert git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)",
                   tip) == str(run)
    text = ar(repo, "finalize", "--split", "--force", "--samples", "0").out
    assert "run 4: does not apply alone (depends on run(s) 2)" in text


def test_an_existing_final_branch_is_replaced_only_with_force(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    ar(repo, "finalize", "--samples", "0", "--only", "2")
    first = git(repo, "rev-parse", "autoresearch/s1-final")
    # what a finalize killed outright left (its worktree) goes even when this one refuses
    left = repo / ".git" / "autoresearch" / "final-999999999" / "tree"
    git(repo, "worktree", "add", "-q", "--detach", str(left), "HEAD")
    res = ar(repo, "finalize", "--samples", "0", expect=3)
    assert not left.parent.exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert res.err == ("git autoresearch: branch autoresearch/s1-final exists (an earlier "
                       "finalize?); pass --force to replace it\n")
    assert git(repo, "rev-parse", "autoresearch/s1-final") == first
    assert ar(repo, "finalize", "--samples", "0", "--force", "--json").json()["runs"] == \
        [2, 3, 4]


def test_failing_final_checks_exit_5_with_the_branch_made(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    res = ar(repo, "finalize", "--checks-command", "echo broken; exit 1", "--samples", "0",
             expect=5)
    assert "final checks: FAILED (echo broken; exit 1): the checks command exited with " \
        "code 1" in res.out
    assert res.err.endswith("fix this before it is merged\n")
    assert git(repo, "rev-parse", "--verify", "-q", "autoresearch/s1-final") != ""
    assert "Final checks `echo broken; exit 1`: **failed** (" in \
        (repo / ".auto" / "final.md").read_text()


def test_the_final_checks_default_to_the_configured_ones(repo: Path, ar: Tool) -> None:
    write(repo / "other.txt", "10\n")
    write(repo / "bench.sh", BENCH, 0o755)
    commit_all(repo)
    ar(repo, *start_args("--checks-command", "true",
                         "--final-checks-command", "test -f other.txt"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    done = ar(repo, "finalize", "--samples", "0", "--json").json()
    assert done["checks"]["command"] == "test -f other.txt" and done["checks"]["passed"]


def test_a_keep_an_audit_found_within_noise_is_left_out_unless_asked(repo: Path,
                                                                      ar: Tool) -> None:
    night(repo, ar)
    write(repo / "README.md", "a change the score does not see\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "cosmetic", "--metric", "80")  # a keep by hand: run 6
    best = [ln for ln in ar(repo, "status").out.splitlines() if ln.startswith("best ")]
    apart = "% vs baseline as measured apart (finalize measures them side by side)"
    assert best[0].endswith(apart)
    assert ar(repo, "audit", "6", "--samples", "2", "--json").json()["audits"][0]["verdict"] \
        == "within noise"
    # (the audit measured run 6 against its parent, not against the baseline)
    best = [ln for ln in ar(repo, "status").out.splitlines() if ln.startswith("best ")]
    assert "(run 6, commit " in best[0] and best[0].endswith(f"{apart}; audit: within noise")
    done = ar(repo, "finalize", "--samples", "0", "--json")
    assert done.json()["runs"] == [2, 3, 4]
    assert done.json()["dropped"] == [{"run": 6, "why": "audit: within noise"}]
    assert "run 6 left out (audit: within noise); --include-noise replays it" in done.err
    again = ar(repo, "finalize", "--samples", "0", "--force", "--include-noise", "--drop", "3",
               "--json")
    assert again.json()["runs"] == [2, 4, 6]
    # The notes' command to measure again replays the same keeps: the options are given.
    body = (repo / ".auto" / "final.md").read_text()
    assert "`git autoresearch finalize --force --drop 3 --include-noise` measures both again" \
        in body
    # The reviewer reads that an audit found run 6 within noise, in its row and below the
    # table (final.md said "better" for it and nothing of the audit).
    row = next(line for line in body.splitlines() if line.startswith("| 6 |"))
    assert "| within noise |" in row, row
    assert "Run 6 was found within noise by an audit and replayed all the same " \
        "(--include-noise or --only)." in body


def test_unknown_runs_and_a_session_without_keeps_are_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    assert ar(repo, "finalize", expect=3).err == ("git autoresearch: no keep to finalize: the "
                                                  "session has no committed keep after its "
                                                  "baseline\n")
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    assert ar(repo, "finalize", "--drop", "7", expect=2).err == (
        "git autoresearch: --drop 7: not a committed keep of the session (they are: 2)\n")
    assert ar(repo, "finalize", "--only", "1", expect=2).err == (
        "git autoresearch: --only 1: not a committed keep of the session (they are: 2)\n")


def test_a_session_that_went_on_after_its_finalize_is_running_again(repo: Path,
                                                                    ar: Tool) -> None:
    night(repo, ar)
    ar(repo, "finalize", "--samples", "0")
    assert ar(repo, "sessions", "--json").json()["sessions"][0]["state"] == "finalized"
    write(repo / "value.txt", "99\n")
    ar(repo, "run", "-d", "worse, after the finalize")  # run 6, an attempt of a live session
    assert ar(repo, "sessions", "--json").json()["sessions"][0]["state"] == "running"
    ar(repo, "gc")
    assert git(repo, "rev-parse", "--verify", "-q", "refs/autoresearch/s1/attempts/6")


def test_a_session_id_that_passes_for_a_final_branch_is_refused(repo: Path, ar: Tool) -> None:
    for sid in ("x-final", "x-final-3"):
        res = ar(repo, "start", "--goal", "g", "--command", "sh bench.sh",
                 "--metric-pattern", r"score: (\S+)", "--session-id", sid, expect=2)
        assert f"session id '{sid}' ends like the branches finalize makes" in res.err
    assert not (repo / ".auto").exists()


def test_split_branches_are_no_sessions_and_a_forced_finalize_drops_stale_ones(
        repo: Path, ar: Tool) -> None:
    night(repo, ar)
    ar(repo, "finalize", "--split", "--samples", "0")
    assert [s["id"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["s1"]
    ar(repo, "finalize", "--force", "--samples", "0")
    assert git(repo, "branch", "--list", "autoresearch/s1-final-*") == ""


def test_an_interrupted_finalize_leaves_no_branch(repo: Path, ar: Tool, tmp_path: Path) -> None:
    night(repo, ar)
    pidfile = tmp_path / "checks.pid"
    proc = subprocess.Popen([str(BIN / "git-autoresearch-finalize"), "--samples", "0",
                             "--checks-command", f"echo $$ > '{pidfile}'; sleep 60"],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert git(repo, "branch", "--list", "autoresearch/s1-final") != ""  # made, then...
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert git(repo, "branch", "--list", "autoresearch/s1-final") == ""  # ...taken back
    assert not [x for x in ledger_lines(repo) if x.get("type") == "final"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert not (repo / ".auto" / "final.md").exists()
    assert os.path.exists(repo / ".auto" / "log.jsonl")


def test_drop_and_only_of_one_run_is_a_usage_error(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    assert ar(repo, "finalize", "--only", "4", "--drop", "4", expect=2).err == (
        "git autoresearch: run 4 is given to both --drop and --only: give it to one\n")


def test_final_notes_give_the_unit_once() -> None:
    """A metric named for its unit (parse_ms, in ms) is written once, as the chart's axis."""
    from git_autoresearch.ledger import parse
    from git_autoresearch.review.pr_body import render

    def body(name: str, unit: str) -> str:
        return render(parse(b""), {"base": "abc1234", "branch": "b", "commit": "def5678"},
                      goal="g", metric_name=name, unit=unit, direction="lower",
                      command="sh bench.sh", session_id="s1")

    assert "Session `s1`: parse_ms, lower is better." in body("parse_ms", "ms")
    assert "Session `s1`: total (ms), lower is better." in body("total", "ms")


def two_segments(repo: Path, ar: Tool) -> tuple[str, str]:
    """The night a user reported: a keep (run 2) measured by bench.sh, then a second
    benchmark, bench2.sh, committed by hand on the session branch and a new segment that
    measures with it, and a keep there (run 4). Returns the two segments' baseline commits."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower the value")
    first = git(repo, "rev-parse", "main")
    write(repo / "bench2.sh", '#!/bin/sh\necho "score: $(( $(cat value.txt) * 2 ))"\n', 0o755)
    git(repo, "add", "bench2.sh")
    git(repo, "commit", "-q", "-m", "a second benchmark")
    second = git(repo, "rev-parse", "HEAD")
    ar(repo, "start", "--new-segment", "--command", "sh bench2.sh")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "lower it again")
    return first, second


def test_keeps_are_replayed_onto_the_baseline_of_their_segment(repo: Path, ar: Tool) -> None:
    first, second = two_segments(repo, ar)
    res = ar(repo, "finalize", expect=3)
    assert res.err == (
        f"git autoresearch: commit {second[:7]} (\"a second benchmark\"), between the baselines "
        "of segments 0 and 1, is no kept run: replayed onto segment 0's baseline "
        f"{first[:7]}, the keeps of segment 1 would lack it; finalize one segment's keeps "
        "(--segment 1, or --segment 0)\n")
    assert git(repo, "branch", "--list", "autoresearch/s1-final") == ""
    assert not [x for x in ledger_lines(repo) if x.get("type") == "final"]
    assert not (repo / ".auto" / "final.md").exists()
    done = ar(repo, "finalize", "--segment", "1", "--samples", "2", "--json").json()
    assert (done["base"], done["segment"], done["runs"]) == (second[:7], 1, [4])
    assert git(repo, "rev-parse", "autoresearch/s1-final^") == second
    assert done["samples"] == {"base": [180, 180], "final": [160, 160]}  # by bench2.sh
    assert done["verdict"] == "confirmed"
    # Segment 0's keeps, measured as they were: by bench.sh, the command of segment 0.
    done = ar(repo, "finalize", "--segment", "0", "--samples", "2", "--force", "--json").json()
    assert (done["base"], done["segment"], done["runs"]) == (first[:7], 0, [2])
    assert done["samples"] == {"base": [100, 100], "final": [90, 90]}
    notes = (repo / ".auto" / "final.md").read_text()
    assert f"replayed onto `{first[:7]}`, the baseline of segment 0, as branch" in notes
    assert "\nsh bench.sh\n" in notes and "bench2" not in notes
    assert "`git autoresearch finalize --force --segment 0` measures both again" in notes


def test_the_notes_of_one_segments_finalize_tell_of_that_segments_runs(repo: Path,
                                                                        ar: Tool) -> None:
    two_segments(repo, ar)
    write(repo / "value.txt", "200\n")
    assert ar(repo, "run", "-d", "a later idea, worse", "--json").json()["status"] == "discard"
    ar(repo, "finalize", "--segment", "0", "--samples", "0")
    notes = (repo / ".auto" / "final.md").read_text()
    assert "a later idea, worse" not in notes
    assert "2 runs; 1 kept change(s) replayed onto" in notes  # (runs 1 and 2: segment 0)
    ar(repo, "finalize", "--segment", "1", "--samples", "0", "--force")
    notes = (repo / ".auto" / "final.md").read_text()
    assert "a later idea, worse" in notes and "3 runs; 1 kept change(s)" in notes


def test_segment_and_only_are_checked(repo: Path, ar: Tool) -> None:
    two_segments(repo, ar)
    assert ar(repo, "finalize", "--segment", "2", expect=2).err == (
        "git autoresearch: --segment 2: the session has segments 0 to 1\n")
    assert ar(repo, "finalize", "--segment", "1", "--only", "2", expect=2).err == (
        "git autoresearch: --only 2: not a committed keep of segment 1 (they are: 4)\n")


def test_keeps_of_segments_with_only_keeps_between_go_onto_the_earliest_baseline(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower the value")
    ar(repo, "start", "--new-segment", "--max-samples", "8")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "lower it again")
    done = ar(repo, "finalize", "--samples", "2", "--json").json()
    assert (done["base"], done["segment"], done["runs"]) == \
        (git(repo, "rev-parse", "--short=7", "main"), 0, [2, 4])
    assert done["samples"] == {"base": [100, 100], "final": [80, 80]}


def test_a_base_that_lacks_the_benchmark_is_refused_before_anything_is_made(
        repo: Path, ar: Tool) -> None:
    """A keep of segment 0 added bench2.sh, which segment 1 measures with: segment 0's
    baseline cannot be measured by it."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    write(repo / "bench2.sh", '#!/bin/sh\necho "score: $(cat value.txt)"\n', 0o755)
    ar(repo, "run", "-d", "lower the value, and a second benchmark")
    ar(repo, "start", "--new-segment", "--command", "sh bench2.sh")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "lower it again")
    base = git(repo, "rev-parse", "--short=7", "main")
    res = ar(repo, "finalize", expect=3)
    assert res.err == (
        "git autoresearch: the measurement command (sh bench2.sh) runs bench2.sh, which the "
        f"base commit {base} (the baseline of segment 0) lacks: it cannot be measured against "
        "the final branch; finalize the keeps of a segment whose baseline has it (--segment "
        "N), or make the branch without measuring (--samples 0)\n")
    assert git(repo, "branch", "--list", "autoresearch/s1-final") == ""
    assert not (repo / ".auto" / "final.md").exists()
    assert ar(repo, "finalize", "--samples", "0", "--json").json()["runs"] == [2, 4]


def flaky_night(repo: Path, ar: Tool, flag: Path) -> None:
    """:func:`night` with a benchmark that fails (exit 2) once ``flag`` exists."""
    night(repo, ar, f"#!/bin/sh\ntest -e '{flag}' && exit 2\n" + BENCH.split("\n", 1)[1])


def test_a_measurement_that_fails_exits_5_leaving_the_branch_and_notes(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    flaky_night(repo, ar, flag)
    flag.touch()
    base = git(repo, "rev-parse", "--short=7", "main")
    res = ar(repo, "finalize", "--samples", "2", expect=5)
    why = f"base {base}, sample 1: the command exited with code 2"
    assert res.err.endswith(
        f"git autoresearch: the measurement failed ({why}): the branch autoresearch/s1-final "
        "is not verified (it and final.md are left for review); fix this before it is "
        "merged\n")
    assert f"measured: failed ({why})" in res.out
    assert git(repo, "branch", "--list", "autoresearch/s1-final") != ""
    line = [x for x in ledger_lines(repo) if x.get("type") == "final"][-1]
    assert (line["verdict"], line["reason"]) == ("crash", why)
    notes = (repo / ".auto" / "final.md").read_text()
    assert f"## Result\n\n**The measurement failed**: {why}. The final branch was not " \
        "measured against the base: its effect is unknown.\n" in notes
    doc = ar(repo, "finalize", "--samples", "2", "--force", "--json", expect=5).json()
    assert (doc["exit_code"], doc["verdict"], doc["reason"]) == (5, "crash", why)
    assert doc["error"].startswith(f"the measurement failed ({why}): the branch ")
    assert doc["commit"] == git(repo, "rev-parse", "--short=7", "autoresearch/s1-final")


def test_a_measurement_that_cannot_begin_exits_5(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    scratch = repo / git(repo, "rev-parse", "--git-path", "autoresearch")
    blocker = write(scratch / f"audit-{os.getpid()}", "not a folder\n")  # the audit's folder
    res = ar(repo, "finalize", "--samples", "2", expect=5)
    assert "git autoresearch: the measurement failed (it could not begin: File exists (" in \
        res.err
    assert git(repo, "branch", "--list", "autoresearch/s1-final") != ""
    blocker.unlink()


def test_both_failures_are_said_at_once(repo: Path, ar: Tool, tmp_path: Path) -> None:
    flag = tmp_path / "broken"
    flaky_night(repo, ar, flag)
    flag.touch()
    res = ar(repo, "finalize", "--samples", "1", "--checks-command", "exit 1", expect=5)
    assert "the measurement failed (base " in res.err
    assert "; the final checks failed (the checks command exited with code 1): the branch" \
        in res.err


def test_the_reproduce_recipe_of_final_md_runs_as_printed(repo: Path, ar: Tool) -> None:
    """The lines under "Reproduce" run in a shell, from a subfolder, as a reviewer pastes
    them: each side prints its metric, and the work tree ends where it began."""
    night(repo, ar)
    ar(repo, "finalize", "--samples", "1")
    notes = (repo / ".auto" / "final.md").read_text()
    recipe = notes.split("## Reproduce\n\n```sh\n", 1)[1].split("```", 1)[0]
    before = snapshot(repo)
    shell = subprocess.run(["sh", "-e", "-c", recipe], cwd=repo / "src", capture_output=True,
                           text=True)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout == "score: 110\nscore: 85\n"  # the base's, then the final branch's
    assert snapshot(repo) == before


def test_a_commit_made_by_hand_on_the_session_branch_is_named_not_replayed(
        repo: Path, ar: Tool) -> None:
    """finalize replays the keeps, not what was committed by hand between them: it says so on
    stderr, in the ledger line and in final.md, and names it when a keep conflicts."""
    night(repo, ar)
    write(repo / "NOTES.md", "what I learnt\n")
    commit_all(repo, "hand: add NOTES.md")
    hand = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "lower the value once more")
    res = ar(repo, "finalize", "--samples", "0", "--json")
    done = res.json()
    assert done["runs"] == [2, 3, 4, 6]
    assert done["hand_commits"] == [{"commit": hand[:7], "subject": "hand: add NOTES.md"}]
    assert f"warning: commit {hand[:7]} (\"hand: add NOTES.md\") on the session branch is no " \
        "kept run: it is not replayed, though run 6 after it was measured with it\n" in res.err
    assert "NOTES.md" not in git(repo, "ls-tree", "--name-only", "autoresearch/s1-final")
    notes = (repo / ".auto" / "final.md").read_text()
    assert f"## Commits made by hand, not replayed\n\n- `{hand[:7]}` hand: add NOTES.md" in notes
    assert "any keep made after one was measured with it" in notes
    # One at the tip, no keep after it: nothing is said of keeps measured with it.
    write(repo / "TODO.md", "next\n")
    commit_all(repo, "hand: add TODO.md")
    tip = git(repo, "rev-parse", "HEAD")
    res = ar(repo, "finalize", "--samples", "0", "--force")
    assert f"warning: commit {tip[:7]} (\"hand: add TODO.md\") on the session branch is no " \
        "kept run: it is not replayed\n" in res.err
    git(repo, "reset", "-q", "--hard", "HEAD^")
    # a keep that builds on a hand commit conflicts: the message names the hand commit
    write(repo / "value.txt", "65\n")
    commit_all(repo, "hand: value 65")
    write(repo / "value.txt", "60\n")
    ar(repo, "run", "-d", "lower it from 65")
    err = ar(repo, "finalize", "--samples", "0", "--force", expect=3).err
    assert "run 7 conflicts in value.txt: no branch was made" in err
    assert f"; commits made by hand ({hand[:7]}, " in err
    assert ") are not replayed: a keep that builds on one conflicts\n" in err
    # Runs left out are named too: a keep can build on one of them as well.
    err = ar(repo, "finalize", "--samples", "0", "--force", "--drop", "6", expect=3).err
    assert "; runs left out (6) and commits made by hand (" in err


def test_keeps_that_replay_to_nothing_are_refused(repo: Path, ar: Tool) -> None:
    """A keep that undid a commit made by hand is empty on the base: no branch equal to the
    base is made, passing as a finalize."""
    write(repo / "bench.sh", BENCH, 0o755)
    write(repo / "other.txt", "10\n")
    commit_all(repo)
    ar(repo, *start_args())
    write(repo / "value.txt", "150\n")
    commit_all(repo, "hand: pad")
    write(repo / "value.txt", "100\n")
    assert ar(repo, "run", "-d", "undo the pad", "--json").json()["status"] == "keep"
    err = ar(repo, "finalize", "--samples", "3", expect=3).err
    assert "every keep replayed is empty on the base" in err and "hand: pad" in err
    assert git(repo, "branch", "--list", "autoresearch/s1-final") == ""
    assert not [x for x in ledger_lines(repo) if x.get("type") == "final"]


def test_a_recorded_keep_that_is_no_longer_on_the_branch_is_said_left_out(
        repo: Path, ar: Tool) -> None:
    night(repo, ar)
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # run 4's keep commit goes
    res = ar(repo, "finalize", "--samples", "0", "--json")
    assert res.json()["runs"] == [2, 3]
    why = [d["why"] for d in res.json()["dropped"] if d["run"] == 4]
    assert why and why[0].startswith("not on the session branch")
    assert "run 4 left out (not on the session branch" in res.err
    assert "- run 4 (not on the session branch" in (repo / ".auto" / "final.md").read_text()


def test_a_branch_left_by_a_finalize_killed_outright_is_replaced(repo: Path, ar: Tool) -> None:
    """A finalize killed (SIGKILL) after it made its branch, before it recorded it, left the
    branch with no ledger line: the next finalize replaces it without --force, saying so, and
    doctor names it meanwhile; one that a ledger line records is replaced only with --force."""
    night(repo, ar)
    killed = subprocess.run([str(BIN / "git-autoresearch-finalize"), "--samples", "0",
                             "--only", "2", "--checks-command", "kill -9 $PPID"],
                            cwd=repo, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert git(repo, "branch", "--list", "autoresearch/s1-final") != ""
    assert not [x for x in ledger_lines(repo) if x.get("type") == "final"]
    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any("autoresearch/s1-final" in f["problem"] and "killed" in f["problem"]
               for f in found), found
    assert any("holds the worktrees of finalize killed outright" in f["problem"]
               for f in found), found
    fixed = ar(repo, "doctor", "--fix", "--json", expect=None).json()["findings"]
    assert [f["fixed"] for f in fixed if "holds the worktrees" in f["problem"]] == [True]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    res = ar(repo, "finalize", "--samples", "0", "--json")
    assert res.json()["runs"] == [2, 3, 4]
    assert "replacing branch autoresearch/s1-final" in res.err
    ar(repo, "finalize", "--samples", "0", expect=3)  # recorded now: --force only

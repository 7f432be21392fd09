"""apply (a run not kept brought back onto the work tree) and diff (the code between two runs, or
a run and its parent), on real repositories."""

from __future__ import annotations

from pathlib import Path

from conftest import Tool, git, start_args, write


def session(repo: Path, ar: Tool) -> None:
    """Runs: 2 keep (value 90), 3 discard (value 95 and a change to src/lib.py), 4 keep (80)."""
    ar(repo, *start_args("--protected", "notes.md", "--allow-missing"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    write(repo / "value.txt", "95\n")
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    ar(repo, "run", "-d", "worse, with a lib change")
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "better again")


def test_apply_on_the_head_it_was_tried_on_puts_the_change_back(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--protected", "notes.md", "--allow-missing"))
    write(repo / "value.txt", "105\n")
    write(repo / "new.txt", "a new file\n")
    write(repo / "notes.md", "notes of then\n")
    ar(repo, "run", "-d", "worse")
    write(repo / "notes.md", "notes of now\n")  # protected: never in the way, never touched
    head = git(repo, "rev-parse", "HEAD")
    assert (repo / "value.txt").read_text() == "100\n" and not (repo / "new.txt").exists()
    done = ar(repo, "apply", "2", "--json").json()
    assert (done["run"], done["replayed"], sorted(done["paths"])) == (2, False,
                                                                     ["new.txt", "value.txt"])
    assert (repo / "value.txt").read_text() == "105\n"
    assert (repo / "new.txt").read_text() == "a new file\n"
    assert (repo / "notes.md").read_text() == "notes of now\n"
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-only") == ""  # the index did not move
    again = ar(repo, "run", "-d", "the same again", "--json").json()
    assert (again["status"], again["metric"]) == ("discard", 105)


def test_apply_after_a_keep_replays_the_change_onto_head(repo: Path, ar: Tool) -> None:
    session(repo, ar)
    write(repo / "value.txt", "80\n")  # nothing else
    head = git(repo, "rev-parse", "HEAD")
    res = ar(repo, "apply", "3", expect=3)
    assert res.err == ("git autoresearch: run 3's change conflicts with HEAD "
                       f"({head[:7]}) in value.txt: nothing was changed\n")
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    # Without the conflicting part: a run that changed lib.py alone is replayed cleanly.
    write(repo / "src" / "lib.py", "def f():\n    return 3\n")
    ar(repo, "run", "-d", "lib only, no gain")
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "better still")
    done = ar(repo, "apply", "5", "--json").json()
    assert (done["replayed"], done["paths"]) == (True, ["src/lib.py"])
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 3\n"
    assert (repo / "value.txt").read_text() == "70\n"


def test_apply_refuses_what_it_cannot_do_and_changes_nothing(repo: Path, ar: Tool) -> None:
    session(repo, ar)
    assert ar(repo, "apply", "2", expect=2).err == (
        "git autoresearch: run 2 is kept: its change is on the session branch already\n")
    assert ar(repo, "apply", "9", expect=2).err.startswith("git autoresearch: no run 9")
    write(repo / "value.txt", "1\n")
    assert ar(repo, "apply", "3", expect=3).err == (
        "git autoresearch: the work tree has changes (value.txt): run, keep, discard or revert "
        "them before applying run 3\n")
    assert (repo / "value.txt").read_text() == "1\n"


def test_apply_of_a_run_that_changed_nothing_in_the_scope_says_so_and_where_the_rest_is(
        repo: Path, ar: Tool) -> None:
    """A run whose changes were all set aside as outside the scope recorded no change: apply
    says so (not that its change is in HEAD already), names the ref of what it set aside, and
    the command it gives brings an untracked file back."""
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "notes" / "idea.txt", "keep me\n")
    ar(repo, "run", "-d", "outside only")
    assert not (repo / "notes" / "idea.txt").exists()
    ref = "refs/autoresearch/s1/scope/2"
    err = ar(repo, "apply", "2", expect=3).err
    assert err == ("git autoresearch: run 2 recorded no change (nothing in the scope had "
                   "changed): nothing to apply; what it set aside as outside the scope is at "
                   f"{ref} (notes/idea.txt): git restore --source={ref} -- "
                   "':(top,literal)<path>' brings a file back\n")
    git(repo, "restore", f"--source={ref}", "--", "notes/idea.txt")
    assert (repo / "notes" / "idea.txt").read_text() == "keep me\n"


def test_diff_of_a_run_against_its_parent_and_of_two_runs(repo: Path, ar: Tool) -> None:
    session(repo, ar)
    one = ar(repo, "diff", "3").out
    parent = git(repo, "rev-parse", "autoresearch/s1~1")
    assert one.startswith(f"# its parent {parent[:7]} -> run 3 (discard, 95) ")
    assert "\n-90\n+95\n" in one and "+    return 2\n" in one
    two = ar(repo, "diff", "2", "4").out
    assert two.splitlines()[0].startswith("# run 2 (keep, 90) ")
    assert two.splitlines()[0].endswith(": -11.11%")
    assert "\n-90\n+80\n" in two and "lib.py" not in two
    assert ar(repo, "diff", "3", "--name-only").out.splitlines()[1:] == ["src/lib.py",
                                                                        "value.txt"]
    assert "2 files changed" in ar(repo, "diff", "3", "--stat").out
    doc = ar(repo, "diff", "2", "3", "--json").json()
    assert (doc["from"]["run"], doc["to"]["run"], round(doc["change_pct"], 2)) == (2, 3, 5.56)
    base = ar(repo, "diff", "1", "4").out  # the baseline is the code it measured
    assert base.splitlines()[0].startswith("# run 1 (keep, 100) ")
    assert base.splitlines()[0].endswith(": -20.00%") and "\n-100\n+80\n" in base
    assert ar(repo, "diff", "1", "2", "3", expect=2).err == (
        "git autoresearch: diff takes one or two runs, not 3\n")


def test_a_baseline_that_set_changes_aside_is_still_the_code_it_measured(repo: Path,
                                                                         ar: Tool) -> None:
    """A benchmark that rewrites a committed file outside the scope: the baseline's keep set
    that rewrite aside at an attempt ref, which diff and show then took for the run's only
    commit, and said the baseline had none ("the kept measurement changed nothing"). The
    attempt ref of a keep holds what it set aside; the baseline is the code it measured."""
    write(repo / "results.txt", "none\n")
    write(repo / "bench.sh", '#!/bin/sh\necho "score: $(cat value.txt)"\ndate +%N > '
                             'results.txt\n', 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a benchmark that writes its results")
    start = git(repo, "rev-parse", "HEAD")
    baseline = ar(repo, *start_args("--decision", "strict", "--scope", "value.txt"),
                  "--json").json()["baseline"]
    assert baseline["attempt_ref"] and baseline["scope_violations"] == ["results.txt"]
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "eighty")
    out = ar(repo, "diff", "1", "2").out
    assert out.splitlines()[0].startswith(f"# run 1 (keep, 100) {start[:7]} -> run 2 ")
    assert "\n-100\n+80\n" in out
    assert f"it measured {start[:7]}" in ar(repo, "show", "1").out


def test_diffs_header_gives_the_unit_on_both_sides(repo: Path, ar: Tool) -> None:
    """Both runs' metrics in diff's header carry the metric's unit (the first had none); a
    run without one shows ``-`` alone."""
    ar(repo, *start_args("--decision", "strict", "--metric-unit", "ms"))
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "eighty")
    header = ar(repo, "diff", "1", "2").out.splitlines()[0]
    assert header.startswith("# run 1 (keep, 100 ms) ") and " -> run 2 (keep, 80 ms) " in header
    write(repo / "value.txt", "not a number\n")
    ar(repo, "run", "-d", "a crash")
    header = ar(repo, "diff", "2", "3").out.splitlines()[0]
    assert " -> run 3 (crash, -) " in header, header


def test_a_recorded_commit_is_an_object_id_never_a_revision(repo: Path, ar: Tool) -> None:
    """A run line written by hand or another tool whose ``commit`` is a revision (``HEAD~1``)
    is no commit of the run's: show and diff present none (they showed the commit it names),
    and diff says, as show does, that a commit the line names is not in this repository
    (it said the kept measurement changed nothing)."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    with (repo / ".auto" / "log.jsonl").open("a") as ledger:
        ledger.write('{"run": 3, "status": "keep", "metric": 45, "commit": "HEAD~1"}\n')
        ledger.write('{"run": 4, "status": "keep", "metric": 40, "commit": "deadbee"}\n')
    shown = ar(repo, "show", "3").out
    assert "commit HEAD~1 is not in this repository" in shown, shown
    said = ar(repo, "diff", "2", "3", expect=2).err
    assert "run 3 has no commit to compare: commit HEAD~1 is not in this repository" in said
    said = ar(repo, "diff", "2", "4", expect=2).err
    assert "run 4 has no commit to compare: commit deadbee is not in this repository" in said

"""Swapping the benchmark in one step: start --new-segment commits the files that define the new
segment's success (a segment commit, no Result trailer), measures the baseline on that commit,
and decides the segment's runs against it; audit and finalize find the files in git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import Tool, commit_all, git, ledger_lines, runs, start_args, write

# The number in value.txt, plus noise from 0 to 4 on every sample.
NOISY = ('#!/bin/sh\nn=$(od -An -N1 -tu1 /dev/urandom | tr -d " ")\n'
         'echo "score: $(( $(cat value.txt) + n % 5 ))"\n')
# The new benchmark: no noise, and a weight that is data.
EXACT = '#!/bin/sh\necho "score: $(( $(cat value.txt) * $(cat data/weight.txt) ))"\n'


def noisy_session(repo: Path, ar: Tool) -> None:
    write(repo / "noisy.sh", NOISY, 0o755)
    commit_all(repo, "a noisy benchmark")
    ar(repo, *start_args("--command", "sh noisy.sh", "--protected", "notes.md",
                         "--allow-missing"))


def test_one_new_segment_commits_the_new_benchmark_and_measures_its_baseline_on_it(
        repo: Path, ar: Tool) -> None:
    noisy_session(repo, ar)
    ar(repo, "guard", "install")  # a commit by hand of a readonly file would be refused
    before = git(repo, "rev-parse", "HEAD")
    write(repo / "exact.sh", EXACT, 0o755)
    write(repo / "data" / "weight.txt", "3\n")
    write(repo / "notes.md", "why the swap\n")  # protected: neither committed nor refused
    started = ar(repo, "start", "--new-segment", "--command", "sh exact.sh",
                 "--readonly", "data", "--json").json()
    head = git(repo, "rev-parse", "HEAD")
    assert (started["segment"], started["segment_commit"], started["committed_paths"]) == (
        1, head[:7], ["data/weight.txt", "exact.sh"])
    assert git(repo, "rev-parse", "HEAD^") == before
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == [
        "data/weight.txt", "exact.sh"]
    assert git(repo, "log", "-1", "--format=%(trailers:only,unfold)") == (
        "Autoresearch-Segment: 1\nAutoresearch-Session: s1")
    assert git(repo, "log", "-1", "--format=%s") == (
        "segment 1: the files that define success (data/weight.txt, exact.sh)")
    assert git(repo, "status", "--porcelain") == "?? notes.md"
    baseline = started["baseline"]
    assert (baseline["run"], baseline["metric"], baseline["commit"]) == (2, 300, head[:7])
    header = [line for line in ledger_lines(repo) if line.get("type") == "config"][-1]
    assert header["base_commit"] == head
    write(repo / "value.txt", "90\n")
    write(repo / "data" / "weight.txt", "1\n")  # what defines success now: undone, recorded
    record = ar(repo, "run", "-d", "lower value", "--json").json()
    assert (record["status"], record["metric"], record["segment"]) == ("keep", 270, 1)
    assert (record["decision"]["verdict"], record["decision"]["pool_median"]) == ("better", 300)
    assert record["readonly_violations"] == ["data/weight.txt"]
    assert (repo / "data" / "weight.txt").read_text() == "3\n"
    assert git(repo, "rev-parse", "HEAD^") == head
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    audited = ar(repo, "audit", "--samples", "3", "--json").json()
    assert [(a["audited_run"], a["verdict"]) for a in audited["audits"]] == [(3, "confirmed")]
    # finalize replays the keep onto the commit it was measured against, its segment's
    # baseline: the segment commit, which holds the new benchmark.
    final = ar(repo, "finalize", "--samples", "3", "--json").json()
    assert (final["base"], final["segment"], final["segment_commits"]) == (head[:7], 1, [])
    assert (final["runs"], final["verdict"]) == ([3], "confirmed")
    assert final["samples"] == {"base": [300, 300, 300], "final": [270, 270, 270]}
    branch = "autoresearch/s1-final"
    assert git(repo, "log", "--format=%s", branch).splitlines()[:2] == [
        "lower value", "segment 1: the files that define success (data/weight.txt, exact.sh)"]
    assert git(repo, "show", f"{branch}:exact.sh") == EXACT.strip()
    assert final["measured_base"] is None
    assert f"git checkout -q --detach {head}   # before" in (
        repo / ".auto" / "final.md").read_text()


def test_finalize_replays_a_segment_commit_between_the_keeps_of_two_segments(
        repo: Path, ar: Tool) -> None:
    """Keeps of segments 0 and 1 go onto segment 0's baseline, the segment commit between
    them replayed before segment 1's keep (no commit by hand, so nothing is refused); the base
    side is measured with it, so both sides run the new benchmark."""
    noisy_session(repo, ar)
    first = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "ninety", "--metric", "90")
    write(repo / "exact.sh", EXACT, 0o755)
    write(repo / "data" / "weight.txt", "3\n")
    write(repo / "data" / "odd *name.txt", "3\n")  # (git reads '*' as a glob unless told)
    swap = ar(repo, "start", "--new-segment", "--command", "sh exact.sh", "--readonly", "data",
              "--json").json()
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "eighty", "--json").json()["status"] == "keep"
    final = ar(repo, "finalize", "--samples", "2", "--json").json()
    assert (final["base"], final["segment"]) == (first[:7], 0)
    assert [(s["segment"], s["source"][:7], s["outcome"]) for s in final["segment_commits"]] \
        == [(1, swap["segment_commit"], "applied")]
    assert final["samples"] == {"base": [300, 300], "final": [240, 240]}
    assert git(repo, "rev-parse", f"{final['measured_base']}^") == first
    notes = (repo / ".auto" / "final.md").read_text()
    line = ("git checkout -q autoresearch/s1-final -- ':(top,literal)data/odd *name.txt' "
            "data/weight.txt exact.sh   # the benchmark")
    assert line in notes
    git(repo, "switch", "-q", "--detach", final["base"])
    subprocess.run(["sh", "-e", "-c", line], cwd=repo, check=True)
    assert git(repo, "status", "--porcelain") == \
        'A  "data/odd *name.txt"\nA  data/weight.txt\nA  exact.sh'


def test_a_new_segment_commits_only_what_its_options_name_now(repo: Path, ar: Tool) -> None:
    noisy_session(repo, ar)
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "noisy.sh", EXACT, 0o755)  # an edit of the benchmark that no option names
    res = ar(repo, "start", "--new-segment", "--max-experiments", "5", expect=3)
    assert res.err == (
        "git autoresearch: the work tree has uncommitted changes: noisy.sh; commit or remove "
        "them first; a new segment commits only the changed files its options name now "
        "(--command, --metric-command, --checks-command, --readonly, --commit-path)\n")
    write(repo / "data" / "weight.txt", "2\n")
    write(repo / "stray.txt", "x\n")
    res = ar(repo, "start", "--new-segment", "--command", "sh noisy.sh", expect=3)
    assert res.err == (
        "git autoresearch: the work tree has untracked files: data/weight.txt, stray.txt; "
        "commit or remove them, ignore them (.gitignore), or pass --force (they are then never "
        "touched); a new segment "
        "commits only the changed files its options name now (--command, --metric-command, "
        "--checks-command, --readonly, --commit-path)\n")
    assert ar(repo, "start", "--new-segment", "--command", "sh noisy.sh", "--commit-path",
              "data", "--commit-path", "nothing.txt", expect=2).err == (
        "git autoresearch: --commit-path nothing.txt matches no changed file of the work tree "
        "(a new or edited file to commit with the new segment)\n")
    assert ar(repo, *start_args("--commit-path", "data"), expect=2).err == (
        "git autoresearch: --commit-path is for start --new-segment (a new session starts from "
        "a clean work tree): commit the files first\n")
    assert git(repo, "rev-parse", "HEAD") == head and len(runs(repo)) == 1
    started = ar(repo, "start", "--new-segment", "--command", "sh noisy.sh", "--commit-path",
                 "data", "--force", "--json").json()
    assert started["committed_paths"] == ["data/weight.txt", "noisy.sh"]
    assert started["baseline"]["metric"] == 200
    assert git(repo, "status", "--porcelain") == "?? stray.txt"
    # Nothing left to commit: a new segment as before, no commit.
    again = ar(repo, "start", "--new-segment", "--command", "sh noisy.sh", "--json").json()
    assert (again["segment_commit"], again["committed_paths"]) == (None, [])
    assert git(repo, "rev-parse", "HEAD^") == head


def test_with_workers_a_new_segment_refuses_to_commit_files(repo: Path, ar: Tool) -> None:
    """The workers follow the session branch: a segment commit on worker main's branch would
    not reach them, so it is refused and nothing changes."""
    ar(repo, *start_args())
    ar(repo, "worker", "add", "1")
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "exact.sh", EXACT, 0o755)
    assert ar(repo, "start", "--new-segment", "--command", "sh exact.sh", expect=3).err == (
        "git autoresearch: this session has workers: a new segment cannot commit exact.sh here "
        "(the workers follow the session branch); start a new session with the new benchmark "
        "committed\n")
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == "?? exact.sh"
    assert sum(1 for e in ledger_lines(repo) if e.get("type") == "config") == 1


def test_a_new_segment_says_which_readonly_paths_its_list_no_longer_holds(
        repo: Path, ar: Tool) -> None:
    """--readonly given again replaces the list (the new segment's files define success now);
    what it drops is said, not dropped unseen."""
    write(repo / "data" / "old.txt", "1\n")
    write(repo / "data2" / "new.txt", "2\n")
    commit_all(repo, "data")
    ar(repo, *start_args("--readonly", "data", "--readonly", "src"))
    started = ar(repo, "start", "--new-segment", "--readonly", "data2", "--readonly", "src",
                 "--json").json()
    assert started["config"]["readonly"] == ["data2", "src"]
    assert ("--readonly given now replaces the segment's list: data is no longer readonly "
            "(give it again with --readonly to keep it)") in started["warnings"]
    again = ar(repo, "start", "--new-segment", "--max-experiments", "5", "--json").json()
    assert again["config"]["readonly"] == ["data2", "src"]
    assert not [w for w in again["warnings"] if "no longer" in w]

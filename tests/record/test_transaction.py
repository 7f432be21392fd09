"""Recording a run, field by field: what keep and discard write into the record and say, for
the cases where a wrong line would still let the command succeed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Tool, git, ledger_lines, runs, start_args, write

from git_autoresearch.decide.rules import inconclusive_reason
from git_autoresearch.git import Repo


def test_metrics_given_without_a_measurement_are_not_timed(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    kept = ar(repo, "keep", "-d", "given", "--metric", "90", "--json").json()
    assert (kept["metric"], kept["samples"], kept["duration_s"]) == (90, [90], None)
    write(repo / "value.txt", "80\n")
    by_name = ar(repo, "keep", "-d", "by name", "--metrics", "score=80", "--json").json()
    assert (by_name["metric"], by_name["samples"], by_name["metrics"]) == (80, [80], {})
    write(repo / "value.txt", "70\n")
    only = ar(repo, "discard", "-d", "secondary", "--metrics", "mem=3", "--json").json()
    assert (only["metric"], only["metrics"], only["duration_s"]) == (None, {"mem": 3}, None)


@pytest.mark.parametrize("rule", ["strict", "sequential"])
def test_a_given_metric_that_does_not_beat_the_best_is_a_forced_keep(repo: Path, ar: Tool,
                                                                      rule: str) -> None:
    """A metric the caller gave is one number: it is judged against the best so far, as
    strict judges, and a keep the judgement would not make is recorded as forced, with why."""
    ar(repo, *start_args("--decision", rule, "--no-remeasure-incumbent"))
    write(repo / "value.txt", "120\n")
    kept = ar(repo, "keep", "-d", "worse", "--metric", "120", "--json").json()
    why = "120 does not beat the best so far (100, run 1)"
    assert kept["warnings"] == [f"{why}; kept because you asked (its decision is recorded as "
                                "forced)"]
    assert (kept["decision"]["rule"], kept["decision"]["verdict"], kept["decision"]["forced"],
            kept["reason"]) == ("strict", "worse", True, f"kept by hand: {why}")
    assert runs(repo)[-1]["reason"] == f"kept by hand: {why}"
    assert git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Decision,valueonly)"
               ) == "strict worse +20.00%, 1 sample(s) against 1, forced"
    assert "worse +20.0%* " in ar(repo, "log").out
    write(repo / "value.txt", "50\n")
    res = ar(repo, "keep", "-d", "better", "--metric", "50")
    assert res.err == ""
    assert res.out.splitlines()[0] == "run 3: keep  score = 50 (best was 100)"
    better = runs(repo)[-1]
    assert ("decision" in better, "reason" in better) == (False, False)


def test_the_human_line_of_a_forced_keep_says_why(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict", "--min-effect", "0.05"))
    write(repo / "value.txt", "97\n")
    assert ar(repo, "measure", "--json").json()["status"] == "discard"
    res = ar(repo, "keep", "-d", "3% better")
    why = "97 beats the best so far (100, run 1) by less than min_effect (5.00%)"
    assert res.err == (f"warning: {why}; kept because you asked (its decision is recorded as "
                       "forced)\n")
    assert res.out.splitlines()[0] == f"run 2: keep  score = 97 (best was 100)  [kept by hand: " \
        f"{why}]"
    assert (runs(repo)[-1]["decision"]["verdict"], runs(repo)[-1]["decision"]["forced"]) == \
        ("inconclusive", True)
    # A metric given by the caller is held to min_effect too (of the best, now 97: 4.85).
    write(repo / "value.txt", "92.2\n")
    short = ar(repo, "keep", "-d", "4.8 better", "--metric", "92.2", "--json").json()
    assert (short["decision"]["verdict"], short["reason"]) == (
        "inconclusive", "kept by hand: 92.2 beats the best so far (97, run 2) by less than "
        "min_effect (5.00%)")
    write(repo / "value.txt", "87\n")
    enough = ar(repo, "keep", "-d", "5.2 better", "--metric", "87", "--json").json()
    assert (enough["warnings"], enough["reason"]) == ([], None)


def test_a_keep_of_few_samples_under_the_sequential_rule_says_so(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "sequential", "--baseline-samples", "3"))
    write(repo / "value.txt", "50\n")
    kept = ar(repo, "keep", "-d", "given", "--metric", "50", "--json").json()
    assert kept["warnings"] == [
        "the new incumbent has 1 sample(s): a gain is hard to prove against so few; run "
        "measures it again after the next revert, up to baseline_samples (3)"]


def test_a_keep_the_rule_made_on_an_exact_metric_says_nothing_of_samples(
        repo: Path, ar: Tool) -> None:
    """measure said keep on one sample of a metric that does not vary (evidence exact): keep
    agrees and has nothing to warn of, as run has not."""
    ar(repo, *start_args("--baseline-samples", "3"))
    write(repo / "value.txt", "50\n")
    measured = ar(repo, "measure", "--json").json()
    assert (measured["status"], measured["decision"]["evidence"]) == ("keep", "exact")
    kept = ar(repo, "keep", "-d", "measured", "--metrics", "extra=5", "--json").json()
    assert (kept["status"], kept["warnings"]) == ("keep", [])


@pytest.mark.parametrize(("baseline", "most", "warned"), [
    (5, 2, "2 sample(s)"), (5, 3, None), (2, 2, None), (1, 2, None)])
def test_the_few_samples_note_stops_at_three_or_the_baseline_samples(
        repo: Path, ar: Tool, baseline: int, most: int, warned: str | None) -> None:
    """Noisy samples (a list the benchmark reads in turn) that the sequential rule cannot
    decide before --max-samples: the kept incumbent has ``most`` samples, and the note says
    so while they are fewer than 3 and than the baseline's."""
    write(repo / "samples.txt", "".join(f"{v}\n" for v in
                                        [100, 120, 80, 110, 90][:baseline] + [99, 101, 100]))
    write(repo / "bench.sh", "#!/bin/sh\nn=$(cat .count 2>/dev/null || echo 0)\n"
          "echo $((n + 1)) > .count\necho \"score: $(sed -n \"$((n + 1))p\" samples.txt)\"\n",
          0o755)
    write(repo / ".gitignore", ".count\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a noisy benchmark")
    ar(repo, *start_args("--baseline-samples", str(baseline), "--max-samples", str(most)))
    write(repo / "value.txt", "90\n")
    measured = ar(repo, "measure", "--json").json()
    assert measured["samples"] == [99, 101, 100][:most]
    kept = ar(repo, "keep", "-d", "noisy", "--json").json()
    notes = [w for w in kept["warnings"] if w.startswith("the new incumbent has")]
    assert notes == ([] if warned is None else [
        f"the new incumbent has {warned}: a gain is hard to prove against so few; run "
        f"measures it again after the next revert, up to baseline_samples ({baseline})"])


def test_a_pending_measurement_replaced_by_a_given_metric_keeps_its_set_aside(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt", "--decision", "strict"))
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "out of scope\n")
    measured = ar(repo, "measure", "--json").json()
    kept = ar(repo, "keep", "-d", "given", "--metric", "90", "--json").json()
    assert "the pending measurement is not used: the metric you gave is recorded" in \
        kept["warnings"]
    assert kept["scope_ref"] == measured["scope_ref"] and kept["scope_ref"]
    assert kept["scope_violations"] == ["README.md"]


def test_changed_files_are_named_up_to_five(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    for count, listed in ((5, "a0, a1, a2, a3, a4"), (6, "a0, a1, a2, a3, a4 ...")):
        write(repo / "value.txt", "90\n")
        for i in range(count):
            write(repo / f"a{i}", "before\n")
        ar(repo, "measure")
        for i in range(count):
            write(repo / f"a{i}", "after\n")
        record = ar(repo, "discard", "-d", "changed", "--json").json()
        assert record["warnings"] == [f"the work tree changed since it was measured ({listed}); "
                                      "the run is recorded without that measurement"]
        assert record["metric"] is None and record["samples"] == []


def test_a_discard_with_a_given_metric_after_a_change_records_it_alone(repo: Path, ar: Tool
                                                                      ) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "measure")
    write(repo / "value.txt", "80\n")
    record = ar(repo, "discard", "-d", "given", "--metric", "80", "--json").json()
    assert record["metric"] == 80 and record["samples"] == [80]
    write(repo / "value.txt", "85\n")
    ar(repo, "measure")
    write(repo / "value.txt", "86\n")
    secondary = ar(repo, "discard", "-d", "given", "--metrics", "mem=2", "--json").json()
    assert secondary["warnings"] == ["the work tree changed since it was measured (value.txt); "
                                     "the run is recorded with the metrics you gave alone"]
    assert (secondary["metric"], secondary["metrics"]) == (None, {"mem": 2})


def test_recording_during_a_merge_is_refused_before_anything_changes(repo: Path, ar: Tool
                                                                    ) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    head = git(repo, "rev-parse", "HEAD")
    (repo / ".git" / "MERGE_HEAD").write_text(head + "\n")
    for command in ("keep", "discard"):
        res = ar(repo, command, "-d", "x", "--metric", "90", expect=3)
        assert res.err.strip().endswith("a merge is in progress; finish or abort it first")
    assert (repo / "value.txt").read_text() == "90\n" and len(runs(repo)) == 1


def test_a_conflict_git_left_in_the_index_is_refused_before_anything_is_measured_or_recorded(
        repo: Path, ar: Tool) -> None:
    """``git switch --merge`` (as a refusal off the session branch advises) can conflict: git
    then leaves the file with conflict markers and unmerged in the index, with no MERGE_HEAD.
    No command measures the markers or commits them: run, measure, keep, discard and crash refuse
    (exit 3), naming the file; nothing is recorded and the conflict stays as git left it;
    status, doctor and resume say so (resume said the next run measures it), and start
    --new-segment names it as such."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "ninety", "--metric", "90")
    git(repo, "switch", "-q", "main")
    write(repo / "value.txt", "95\n")
    git(repo, "switch", "-q", "--merge", "autoresearch/s1")
    conflicted = (repo / "value.txt").read_text()
    assert "<<<<<<<" in conflicted and git(repo, "status", "--porcelain") == "UU value.txt"
    lines = len(ledger_lines(repo))
    head = git(repo, "rev-parse", "HEAD")
    for command in (["run", "-d", "x"], ["measure"], ["keep", "-d", "x", "--metric", "80"],
                    ["discard", "-d", "x"], ["crash", "-d", "x"]):
        said = ar(repo, *command, expect=3).err
        assert said.count("\n") == 1 and "Traceback" not in said, said
        assert "value.txt" in said and "conflict" in said and "git add" in said, said
    assert len(ledger_lines(repo)) == lines and git(repo, "rev-parse", "HEAD") == head
    assert (repo / "value.txt").read_text() == conflicted
    assert git(repo, "status", "--porcelain") == "UU value.txt"
    assert any("value.txt" in w and "conflict" in w
               for w in ar(repo, "status", "--json").json()["warnings"])
    assert "value.txt" in ar(repo, "doctor", expect=3).out
    said = ar(repo, "resume", "--json").json()["warnings"]
    assert any("value.txt is unmerged" in w for w in said), said
    assert not any("the next run measures them" in w for w in said), said
    said = ar(repo, "start", "--new-segment", expect=3).err  # (commit it first, it said)
    assert "value.txt is unmerged" in said and "commit or remove" not in said, said
    write(repo / "value.txt", "80\n")  # resolved, and marked so
    git(repo, "add", "value.txt")
    assert ar(repo, "run", "-d", "resolved", "--json").json()["status"] == "keep"


def test_a_conflict_on_a_file_head_deleted_names_git_rm_to_take_heads_side(
        repo: Path, ar: Tool) -> None:
    """A file the session deleted and the other side edited is unmerged as "deleted by us"
    (``DU``): HEAD has no such file, so ``git restore --staged --worktree`` fails on it ("path
    is unmerged") where ``git rm`` takes HEAD's side; the refusal names that, and it works."""
    ar(repo, *start_args("--decision", "strict"))
    (repo / "README.md").unlink()
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "no README", "--metric", "90")
    git(repo, "switch", "-q", "main")
    write(repo / "README.md", "edited on main\n")
    git(repo, "switch", "-q", "--merge", "autoresearch/s1")
    assert git(repo, "status", "--porcelain") == "DU README.md"
    said = ar(repo, "run", "-d", "x", expect=3).err
    assert "git rm README.md" in said and "restore --staged --worktree README.md" not in said, \
        said
    git(repo, "rm", "-q", "README.md")
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "on again", "--json").json()["status"] == "keep"


def test_a_keep_against_a_failed_baseline_is_refused(repo: Path, ar: Tool) -> None:
    write(repo / "value.txt", "oops\n")
    git(repo, "commit", "-qam", "no number")
    ar(repo, *start_args(), expect=None)
    write(repo / "value.txt", "90\n")
    res = ar(repo, "keep", "-d", "x", "--metric", "90", expect=3)
    assert "baseline" in res.err
    assert git(repo, "log", "-1", "--format=%s") == "no number"


def test_every_record_carries_its_confidence_and_the_kept_commit(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    values = [90, 95, 80, 85]
    for value in values:
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "measure")
        ar(repo, "keep" if value in (90, 80) else "discard", "-d", str(value))
    written = runs(repo)
    assert [r["run"] for r in written] == [1, 2, 3, 4, 5]
    # pi's |best kept - baseline| / MAD over the runs so far, the run itself included: run 3's
    # metrics 100, 90, 95 have a MAD of 5 and a best of 90 (2.0); runs 4 and 5 have a MAD of 5
    # and a best of 80 (4.0); fewer than 3 runs have none.
    assert [r["confidence"] for r in written] == [None, None, 2.0, 4.0, 4.0]
    assert ar(repo, "log", "--json").json()["runs"][-1]["confidence"] == written[-1]["confidence"]
    branch_runs = Repo.discover(repo).scratch / "branch-runs"
    head = git(repo, "rev-parse", "HEAD")
    assert head in branch_runs.read_text()
    assert not (repo / ".auto" / "pending.json").exists()


def test_a_crash_keeps_the_tail_of_its_log(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "".join(f"x{i}\n" for i in range(1, 41)))
    ar(repo, "measure", expect=None)
    record = ar(repo, "discard", "-d", "crashed", "--json").json()
    assert record["status"] == "crash" and record["metric"] is None
    assert record["reason"] == "metric 'x1' is not a number"
    assert record["tail"] == "\n".join(f"x{i}" for i in range(11, 41))


def test_every_crash_has_a_tail_even_one_that_printed_nothing(repo: Path, ar: Tool) -> None:
    """An agent reads a crash's ``reason`` and ``tail`` (README): a benchmark that timed out
    silently, and a crash recorded by hand, have a tail too, empty."""
    write(repo / "bench.sh", '#!/bin/sh\n[ "$(cat value.txt)" = slow ] && exec sleep 30\n'
          'echo "score: $(cat value.txt)"\n', 0o755)
    git(repo, "commit", "-qam", "a benchmark that can hang")
    ar(repo, *start_args("--decision", "strict", "--timeout-seconds", "0.5"))
    write(repo / "value.txt", "slow\n")
    record = ar(repo, "run", "-d", "hangs", "--json").json()
    assert (record["status"], record["tail"]) == ("crash", "")
    assert record["reason"].startswith("timeout")
    assert runs(repo)[-1]["tail"] == ""
    write(repo / "value.txt", "90\n")
    record = ar(repo, "crash", "-d", "by hand", "--json").json()
    assert (record["status"], record["tail"]) == ("crash", "")
    assert [r["run"] for r in ar(repo, "log", "--json").json()["runs"] if "tail" in r] == [2, 3]


@pytest.mark.parametrize("min_effect, direction, low, high, reason", [
    (0.05, "lower", -0.1, -0.01, "better, but not shown to be better by min_effect (5.00%)"),
    (0.05, "lower", -0.1, 0.0, "within noise"),
    (0.05, "higher", 0.01, 0.1, "better, but not shown to be better by min_effect (5.00%)"),
    (0.05, "higher", 0.0, 0.1, "within noise"),
    (0.05, "lower", None, -0.01, "within noise"),
    (0.05, "lower", -0.1, None, "within noise"),
    (0.0, "lower", -0.1, -0.01, "not shown to be better"),
    (0.0, "higher", 0.01, 0.1, "not shown to be better"),
    (0.0, "lower", -0.1, 0.01, "within noise"),
])
def test_the_reason_an_inconclusive_run_was_discarded(min_effect: float, direction: str,
                                                      low: float | None, high: float | None,
                                                      reason: str) -> None:
    found = {"relative_low": low, "relative_high": high}
    assert inconclusive_reason(found, min_effect, direction) == reason


def test_a_dropped_measurement_still_names_what_it_set_aside(repo: Path, ar: Tool) -> None:
    """The measurement is dropped (the work tree changed since), but the changes it put back
    before it ran are still the run's: its scope ref and violations stay in the record."""
    ar(repo, *start_args("--scope", "value.txt", "--decision", "strict"))
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "out of scope\n")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    measured = ar(repo, "measure", "--json").json()
    assert measured["scope_ref"] and measured["readonly_violations"] == ["bench.sh"]
    write(repo / "value.txt", "80\n")
    record = ar(repo, "discard", "-d", "changed", "--json").json()
    assert record["metric"] is None
    assert record["scope_ref"] == measured["scope_ref"]
    assert record["scope_violations"] == ["README.md"]
    assert record["readonly_violations"] == ["bench.sh"]


def test_a_readonly_file_changed_without_a_measurement_is_named(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    record = ar(repo, "discard", "-d", "edited the benchmark", "--json").json()
    assert record["readonly_violations"] == ["bench.sh"]
    assert git(repo, "show", "HEAD:bench.sh") == (repo / "bench.sh").read_text().strip()


def test_record_itself_refuses_during_a_merge(repo: Path, ar: Tool) -> None:
    """recording.record's own promise, for callers other than the commands (which check
    first): no run is recorded while a merge is in progress, and nothing changes."""
    from git_autoresearch.record.transaction import record
    from git_autoresearch.runtime.errors import Refused
    from git_autoresearch.session.session import Session

    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    (repo / ".git" / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD") + "\n")
    session = Session.open(repo)
    with pytest.raises(Refused, match="^a merge is in progress; finish or abort it first$"):
        record(session, "discard", "x", result=None, recheck_discard=False)
    assert (repo / "value.txt").read_text() == "90\n" and len(runs(repo)) == 1


def test_record_itself_refuses_a_keep_without_a_metric(repo: Path, ar: Tool) -> None:
    """recording.record's own promise (the keep command checks first): no measurement, or
    one with no metric (a crash), is no keep, and nothing changes."""
    import dataclasses

    from git_autoresearch.measure.samples import Measurement
    from git_autoresearch.record.transaction import record
    from git_autoresearch.runtime.errors import Refused
    from git_autoresearch.session.session import Session

    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    crashed = dataclasses.replace(Measurement.empty(), reason="exit 7")
    assert crashed.status == "crash"
    for result in (None, crashed):
        session = Session.open(repo)
        with pytest.raises(Refused, match="^a keep needs a metric: measure first or pass "
                                          "--metric$"):
            record(session, "keep", "x", result=result, recheck_discard=False)
        assert (repo / "value.txt").read_text() == "90\n" and len(runs(repo)) == 1


def test_a_discard_of_failed_checks_records_their_reason(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict", "--checks-command",
                         "echo 'the fifty test failed'; test $(cat value.txt) != 50"))
    write(repo / "value.txt", "50\n")
    ar(repo, "measure")
    record = ar(repo, "discard", "-d", "fifty", "--json").json()
    assert (record["status"], record["metric"]) == ("checks_failed", 50)
    assert record["reason"] == record["checks"]["reason"] and record["reason"]
    assert "the fifty test failed" in record["checks"]["tail"]


def test_a_keep_sets_aside_what_is_outside_its_scope_under_a_kept_message(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict", "--scope", "value.txt"))
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "outside\n")
    record = ar(repo, "keep", "-d", "with an outside change", "--metric", "90",
                "--json").json()
    assert record["scope_violations"] == ["README.md"]
    message = git(repo, "log", "-1", "--format=%B", record["attempt_ref"])
    assert message.splitlines()[0] == (
        "changes outside the scope or to readonly paths of kept run 2")
    assert git(repo, "show", f"{record['attempt_ref']}:README.md") == "outside"
    assert (repo / "README.md").read_text() == "project\n"


def test_an_inconclusive_discard_says_why_in_its_record(repo: Path, ar: Tool) -> None:
    """The strict rule, no min_effect: a tie is inconclusive, discarded with the reason the
    decision gives."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "100\n")
    write(repo / "README.md", "a change that changes nothing measured\n")
    tied = ar(repo, "run", "-d", "the same", "--json").json()
    assert (tied["status"], tied["decision"]["verdict"]) == ("discard", "inconclusive")
    assert tied["reason"] == inconclusive_reason(tied["decision"], 0.0, "lower") == \
        "within noise"
    write(repo / "README.md", "another change that changes nothing measured\n")
    kept_out = ar(repo, "run", "-d", "the same again", "--json").json()
    assert kept_out["reason"] == tied["reason"]


def test_every_set_aside_of_a_run_measured_twice_is_named(repo: Path, ar: Tool) -> None:
    """Measured, changed, measured again: the first measurement's set-aside (a readonly file
    changed) is the run's too, named in the record beside the second's."""
    ar(repo, *start_args("--scope", "value.txt", "--decision", "strict"))
    write(repo / "value.txt", "90\n")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    first = ar(repo, "measure", "--json").json()
    assert first["readonly_violations"] == ["bench.sh"] and first["scope_ref"]
    write(repo / "value.txt", "80\n")
    write(repo / "README.md", "outside\n")
    second = ar(repo, "measure", "--json").json()
    assert second["readonly_violations"] == [] and second["scope_violations"] == ["README.md"]
    kept = ar(repo, "keep", "-d", "twice", "--json").json()
    assert kept["scope_refs"] == [first["scope_ref"], second["scope_ref"]]
    assert kept["readonly_violations"] == ["bench.sh"]
    assert kept["scope_violations"] == ["README.md"]


def test_a_snapshot_that_cannot_be_written_is_a_warning_after_the_run(repo: Path,
                                                                      ar: Tool) -> None:
    """A folder where the untracked snapshot goes: it is read as no snapshot (every untracked
    file the user's), and the run is recorded, saying the snapshot was not written."""
    ar(repo, *start_args("--decision", "strict"))
    snapshot = repo / ".git" / "autoresearch" / "untracked"
    snapshot.unlink()
    write(snapshot / "in-the-way", "a folder where the file goes\n")
    write(repo / "value.txt", "95\n")
    record = ar(repo, "discard", "-d", "worse", "--json").json()
    [said] = record["warnings"]
    assert said.startswith(f"run 2 was recorded, but cannot write {snapshot}: ")
    assert said.endswith(": the files untracked before the next experiment are those before "
                         "this one")
    assert [r["run"] for r in runs(repo)] == [1, 2]


def test_a_recorded_run_leaves_no_pending_measurement(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "95\n")
    ar(repo, "measure")
    pending = repo / ".git" / "autoresearch" / "pending.json"
    assert pending.exists()
    ar(repo, "discard", "-d", "worse")
    assert not pending.exists()
    refused = ar(repo, "keep", "-d", "the discarded one", expect=3)
    assert "nothing to keep: no pending measurement" in refused.err


def test_where_a_run_stands_once_its_git_side_is_done() -> None:
    from git_autoresearch.record.transaction import run_state

    assert run_state({"run": 3, "status": "keep", "commit": "abc1234", "committed": True}) \
        == "run 3 was committed as abc1234"
    assert run_state({"run": 3, "status": "keep", "commit": "abc1234", "committed": False}) \
        == "run 3 was kept at abc1234 (nothing to commit)"
    assert run_state({"run": 4, "status": "crash", "attempt_ref": "refs/autoresearch/s1/"
                      "attempts/4"}) == ("run 4 (crash) was reverted, its attempt saved at "
                                         "refs/autoresearch/s1/attempts/4")


@pytest.mark.parametrize("name", ["intent.json", "pending.json", "log.jsonl"])
def test_a_folder_where_a_session_file_goes_is_no_internal_error(repo: Path, ar: Tool,
                                                                 name: str) -> None:
    """An unreadable intent record is set aside, an unreadable pending measurement is none
    (and the run says it could not remove it), an unreadable ledger is refused (exit 3) until
    resume puts back its copy from the state ref."""
    ar(repo, *start_args("--decision", "strict"))
    folder = (repo / ".auto" if name == "log.jsonl" else repo / ".git" / "autoresearch") / name
    folder.unlink(missing_ok=True)
    write(folder / "inside", "in the way\n")
    write(repo / "value.txt", "95\n")
    if name == "log.jsonl":
        for command in (["status"], ["discard", "-d", "worse"]):
            refused = ar(repo, *command, expect=3)
            assert refused.err.strip() == (
                f"git autoresearch: cannot read the ledger {folder}: Is a directory (git "
                "autoresearch resume puts back its copy on the state ref)")
        said = ar(repo, "resume", "--json").json()["actions"]
        assert said[0].startswith("restored .auto/log.jsonl (a folder was in its place; it is "
                                  "now .auto/log.jsonl.before-resume.")
        assert (Path(repo / said[0].split("it is now ")[1].rstrip(")")) / "inside").exists()
    record = ar(repo, "discard", "-d", "worse", "--json").json()
    assert (record["run"], record["status"]) == (2, "discard")
    assert (repo / "value.txt").read_text() == "100\n"
    if name == "intent.json":
        assert not folder.exists() and list(folder.parent.glob("intent.abandoned.*.json"))
    if name == "pending.json":
        assert record["warnings"] == [
            f"run 2 was recorded, but {folder} could not be removed: Is a directory"]


def test_a_discard_on_the_pool_names_the_sample_of_the_incumbent_taken_now() -> None:
    # (which may be far from the pool: the machine got faster meanwhile, and the candidate
    # is worse still against it; the reason gives the number, never "agreed")
    from git_autoresearch.decide.rules import discard_reason

    found = {"verdict": "inconclusive", "relative": 0.04, "evidence": "pool",
             "candidate_samples": 2, "incumbent_fresh": [100.5], "stopped_early": True}
    assert discard_reason(found, 0.0, "lower") == (
        "not better (+4.0%): 2 sample(s) against the incumbent's earlier samples and one of "
        "it taken now (100.5); stopped early")
    assert discard_reason({**found, "incumbent_fresh": []}, 0.0, "lower") == (
        "not better (+4.0%): 2 sample(s) against the incumbent's earlier samples; stopped early")


@pytest.mark.parametrize("direction,relative", [("lower", -0.157), ("higher", 0.157)])
def test_a_discard_whose_estimate_is_better_never_says_not_better(direction: str,
                                                                   relative: float) -> None:
    # A gain the test could not tell from the samples, its interval across zero: "not shown
    # to be better", as the estimate itself is on the better side ("not better (-15.7%)"
    # contradicted its own figure).
    from git_autoresearch.decide.rules import discard_reason

    pool = {"verdict": "inconclusive", "relative": relative, "relative_low": -0.4,
            "relative_high": 0.3, "evidence": "pool", "candidate_samples": 16,
            "incumbent_fresh": [10.088], "stopped_early": False}
    shown = f"{relative:+.1%}"
    assert discard_reason(pool, 0.0, direction) == (
        f"not shown to be better ({shown}): 16 sample(s) against the incumbent's earlier "
        "samples and one of it taken now (10.088)")
    fresh = {**pool, "evidence": "fresh", "candidate_samples": 4,
             "incumbent_fresh": [1.0, 1.1, 1.2, 1.3], "stopped_early": True}
    assert discard_reason(fresh, 0.0, direction) == (
        f"not shown to be better ({shown}): 4 sample(s), 4 of the incumbent measured beside "
        "them; stopped early")


def test_every_run_document_has_a_reason_null_for_a_keep(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    kept = ar(repo, "run", "-d", "better", "--json").json()
    assert kept["status"] == "keep" and kept["reason"] is None
    write(repo / "value.txt", "95\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["reason"] is not None


def test_the_reason_of_a_gain_not_shown_gives_its_estimate() -> None:
    from git_autoresearch.decide.rules import discard_reason

    found = {"verdict": "inconclusive", "relative": -0.146, "relative_low": -0.28,
             "relative_high": -0.04, "evidence": "fresh", "candidate_samples": 10,
             "incumbent_fresh": [1.0] * 10, "stopped_early": False}
    assert discard_reason(found, 0.0, "lower") == (
        "not shown to be better (-14.6%): 10 sample(s), 10 of the incumbent measured beside "
        "them")

"""The loop end to end on real repositories: start, run, keep, discard, crash, log, status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    TAKEN_AGAIN,
    Tool,
    commit_all,
    git,
    ledger_lines,
    paused_at,
    runs,
    start_args,
    write,
)


def test_start_records_baseline_on_new_branch(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args(), "--json")
    data = res.json()
    assert data["branch"] == "autoresearch/s1"
    assert data["baseline"]["metric"] == 100
    assert data["baseline"]["status"] == "keep"
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    header, baseline = ledger_lines(repo)
    assert header["type"] == "config"
    assert header["metricName"] == "score"
    assert header["bestDirection"] == "lower"
    assert header["config_hash"].startswith("sha256:")
    assert baseline["run"] == 1 and baseline["segment"] == 0
    assert baseline["commit"] == git(repo, "rev-parse", "HEAD")[:7]
    cfg = repo / ".auto" / "config.toml"
    assert cfg.stat().st_mode & 0o777 == 0o444
    assert "/.auto/" in (repo / ".git" / "info" / "exclude").read_text()
    assert (repo / ".auto" / "prompt.md").read_text().startswith("# Autoresearch session")
    assert git(repo, "status", "--porcelain") == ""


def test_run_keeps_improvement_with_trailer_matching_ledger(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    res = ar(repo, "run", "-d", "lower the value to 90", "--asi", "hypothesis=smaller is faster",
             "--json")
    record = res.json()
    assert record["status"] == "keep" and record["metric"] == 90 and record["run"] == 2
    head = git(repo, "rev-parse", "HEAD")
    assert record["commit"] == head[:7]
    message = git(repo, "log", "-1", "--format=%B")
    assert message == ('lower the value to 90\n\nResult: {"status":"keep","score":90}\n'
                       "Autoresearch-Run: 2\nAutoresearch-Session: s1\n"
                       "Autoresearch-Decision: sequential better -10.00%, 1 sample(s) against 5")
    trailer = git(repo, "log", "-1", "--format=%(trailers:key=Result,valueonly)")
    assert json.loads(trailer) == {"status": "keep", "score": 90}
    assert runs(repo)[-1]["asi"] == {"hypothesis": "smaller is faster"}
    assert git(repo, "log", "--oneline", "--grep", "Result:").splitlines() == [
        f"{head[:7]} lower the value to 90"]


def test_run_discards_regression_and_keeps_attempt(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "120\n")
    write(repo / "src" / "new.py", "x = 1\n")
    before = git(repo, "rev-parse", "HEAD")
    record = ar(repo, "run", "-d", "raise it", "--json").json()
    assert record["status"] == "discard"
    assert record["attempt_ref"] == "refs/autoresearch/s1/attempts/2"
    assert git(repo, "rev-parse", "HEAD") == before
    assert (repo / "value.txt").read_text() == "100\n"
    assert not (repo / "src" / "new.py").exists()
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:value.txt") == "120"
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:src/new.py") == "x = 1"
    assert git(repo, "rev-parse", "refs/autoresearch/s1/attempts/2^") == before
    shown = ar(repo, "show", "2").out
    assert "-100\n+120" in shown and "src/new.py" in shown


@pytest.mark.parametrize("value", ["90", "120"], ids=["keep", "discard"])
def test_a_file_outside_the_scope_edited_while_a_run_measured_is_named_where_it_is_saved(
        repo: Path, ar: Tool, value: str) -> None:
    """A tracked file outside the scope edited by hand while the benchmark ran (here by the
    benchmark itself): a keep sets it aside, a discard's revert takes it with the rest. Either
    way the record lists it in ``scope_violations`` and a warning names the ref that saved it
    (the attempt ref, not the set-aside of the changes outside the scope before measuring)
    and the command that brings it back, which does (a discard said nothing of it, and its
    ``scope_violations`` was empty)."""
    write(repo / "bench.sh", "#!/bin/sh\n[ -e ../edit-now ] && echo 'by hand' >> README.md "
          "&& rm ../edit-now\necho \"score: $(cat value.txt)\"\n", 0o755)
    commit_all(repo, "a benchmark that edits the README")
    ar(repo, *start_args("--decision", "strict", "--scope", "value.txt"))
    write(repo / "value.txt", f"{value}\n")
    write(repo / "src" / "lib.py", "set aside before measuring\n")
    write(repo.parent / "edit-now", "")
    record = ar(repo, "run", "-d", "the change", "--json").json()
    assert record["status"] == ("keep" if value == "90" else "discard")
    assert record["scope_violations"] == ["README.md", "src/lib.py"]
    ref = record["attempt_ref"]
    assert ref == "refs/autoresearch/s1/attempts/2"
    assert git(repo, "show", f"{ref}:README.md") == "project\nby hand"
    notes = [w for w in record["warnings"] if w.startswith("reverted changes outside")]
    aside = "refs/autoresearch/s1/scope/2"
    assert notes == [
        f"reverted changes outside the scope: src/lib.py (saved at {aside}; git restore "
        f"--source={aside} -- ':(top,literal)<path>' brings one back {TAKEN_AGAIN})",
        f"reverted changes outside the scope as the run was recorded: README.md (saved at "
        f"{ref}; git restore --source={ref} -- ':(top,literal)<path>' brings one back "
        f"{TAKEN_AGAIN})"]
    assert (repo / "README.md").read_text() == "project\n"
    git(repo, "restore", f"--source={ref}", "--", ":(top,literal)README.md")
    assert (repo / "README.md").read_text() == "project\nby hand\n"


def test_a_run_refuses_to_keep_what_changed_after_its_measurement_ended(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """Files changed after the measurement ended and before the run is recorded (a process the
    benchmark left running; here the run paused at ``run:measured``): a tracked file the
    experiment had not touched, edited, and a new file. The keep is refused (exit 3) naming
    both: what the run would commit is not what it measured; nothing is committed and both
    stay in the work tree as they were. (A run that recorded from the survey that ended its
    measurement committed the run without them.)"""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    head = git(repo, "rev-parse", "HEAD")
    go = tmp_path / "go"
    paused = paused_at("run:measured", go, repo, "run", "-d", "lower")
    write(repo / "src" / "lib.py", "def f():\n    return 'late'\n")
    write(repo / "late.txt", "late\n")
    go.touch()
    _, err = paused.communicate(timeout=60)
    assert paused.returncode == 3, err
    assert "changed since it was measured (late.txt, src/lib.py)" in err
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 'late'\n"
    assert (repo / "late.txt").read_text() == "late\n"
    assert (repo / "value.txt").read_text() == "90\n"


def test_a_discard_reverts_and_saves_what_changed_after_its_measurement_ended(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """The same late changes on a run that is discarded: the revert takes them too (the work
    tree is HEAD's again) and the attempt holds them, so that nothing unmeasured is left for
    the next run to measure as its own."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "120\n")
    go = tmp_path / "go"
    paused = paused_at("run:measured", go, repo, "run", "-d", "higher", "--json")
    write(repo / "src" / "lib.py", "def f():\n    return 'late'\n")
    write(repo / "late.txt", "late\n")
    go.touch()
    out, err = paused.communicate(timeout=60)
    assert paused.returncode == 0, err
    assert json.loads(out)["status"] == "discard"
    assert git(repo, "status", "--porcelain") == ""
    attempt = "refs/autoresearch/s1/attempts/2"
    assert git(repo, "show", f"{attempt}:late.txt") == "late"
    assert git(repo, "show", f"{attempt}:src/lib.py") == "def f():\n    return 'late'"


@pytest.mark.parametrize("value", ["90", "120"], ids=["keep", "discard"])
@pytest.mark.parametrize("move", ["switch", "detach", "commit"])
def test_a_run_whose_head_moved_while_it_measured_records_nothing(
        repo: Path, ar: Tool, tmp_path: Path, move: str, value: str) -> None:
    """HEAD moved by hand while a run measured (here while it paused at ``run:measured``):
    switched to another branch, detached, or given a commit on the session branch. The run
    is refused (exit 3), saying so: no keep is committed on the branch HEAD is on now (nor
    on the session branch), no revert undoes the change against a commit it was not measured
    on, no run is recorded, and the change stays where git put it."""
    ar(repo, *start_args("--decision", "strict"))
    git(repo, "branch", "other")
    before = {ref: git(repo, "rev-parse", ref) for ref in ("autoresearch/s1", "other")}
    lines = len(ledger_lines(repo))
    write(repo / "value.txt", f"{value}\n")
    go = tmp_path / "go"
    paused = paused_at("run:measured", go, repo, "run", "-d", "the change")
    if move == "switch":
        git(repo, "switch", "-q", "other")
    elif move == "detach":
        git(repo, "checkout", "-q", "--detach")
    else:
        commit_all(repo, "by hand")
    hand = git(repo, "rev-parse", "HEAD")
    go.touch()
    _, err = paused.communicate(timeout=60)
    assert paused.returncode == 3, err
    said = {"switch": "branch other", "detach": "a detached HEAD",
            "commit": f"{before['autoresearch/s1'][:7]} to {hand[:7]}"}[move]
    assert said in err and "while the run measured" in err and "nothing was recorded" in err, err
    assert len(ledger_lines(repo)) == lines
    assert git(repo, "rev-parse", "HEAD") == hand
    assert git(repo, "rev-parse", "other") == before["other"]
    if move != "commit":
        assert git(repo, "rev-parse", "autoresearch/s1") == before["autoresearch/s1"]
        assert (repo / "value.txt").read_text() == f"{value}\n"
    assert not git(repo, "for-each-ref", "refs/autoresearch/s1/attempts/")
    if move == "commit":  # the commit taken back, the next run records its change
        assert f"git reset --soft {before['autoresearch/s1'][:7]}" in err, err
        git(repo, "reset", "-q", "--soft", before["autoresearch/s1"])
        done = ar(repo, "run", "-d", "the change again", "--json").json()
        assert (done["status"], done["metric"]) == ("keep" if value == "90" else "discard",
                                                    int(value))
    if move == "switch":  # back on the session branch, the run is recorded as it measured
        git(repo, "switch", "-q", "--merge", "autoresearch/s1")
        status = "keep" if value == "90" else "discard"
        assert ar(repo, status, "-d", "the change", "--json").json()["metric"] == int(value)


def _committing_by_hand(repo: Path, ar: Tool) -> str:
    """A session (strict) whose benchmark commits the work tree by hand once, the next time
    it runs, with value.txt changed to 90 for it to commit; returns the commit it begins on."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "bench.sh", "#!/bin/sh\n[ -e ../commit-now ] && git commit -qam 'by hand' "
          "&& rm ../commit-now\necho \"score: $(cat value.txt)\"\n", 0o755)
    git(repo, "update-index", "--chmod=+x", "bench.sh")
    git(repo, "commit", "-qm", "a benchmark that commits", "--", "bench.sh")
    ar(repo, "keep", "-d", "the benchmark", "--metric", "100")
    write(repo / "value.txt", "90\n")
    write(repo.parent / "commit-now", "")
    return git(repo, "rev-parse", "HEAD")


def test_a_commit_by_hand_while_the_benchmark_ran_taken_back_leaves_its_measurement(
        repo: Path, ar: Tool) -> None:
    """The change committed by hand while the benchmark ran (here by the benchmark itself):
    once ``git reset --soft`` takes the commit back, as the refusal says, the work tree is
    again what the run measured on the commit it measured it on, so the measurement is still
    pending, not stale, and a keep records it."""
    start = _committing_by_hand(repo, ar)
    err = ar(repo, "run", "-d", "the change", expect=3).err
    assert f"git reset --soft {start[:7]}" in err, err
    git(repo, "reset", "-q", "--soft", start)
    pending = ar(repo, "status", "--json").json()["pending"]
    assert pending is not None and pending["changed_since"] == [], pending
    assert (pending["metric"], pending["status"]) == (90, "keep")
    done = ar(repo, "keep", "-d", "the change", "--json").json()
    assert (done["status"], done["metric"]) == ("keep", 90)
    assert git(repo, "show", "HEAD:value.txt") == "90"


def test_a_measure_whose_head_moved_says_so_and_keep_names_the_way_back(
        repo: Path, ar: Tool) -> None:
    """The same commit by hand while ``measure`` ran: measure says HEAD moved and what brings
    the measurement back (it said nothing of it), keep refuses naming ``git reset --soft``
    too, and after it keep records the measurement."""
    start = _committing_by_hand(repo, ar)
    warnings = ar(repo, "measure", "--json").json()["warnings"]
    hand = git(repo, "rev-parse", "HEAD")
    assert any(f"HEAD moved from {start[:7]} to {hand[:7]} while this measured" in w
               and f"git reset --soft {start[:7]}" in w for w in warnings), warnings
    said = ar(repo, "keep", "-d", "the change", expect=3).err
    assert f"git reset --soft {start[:7]}" in said, said
    git(repo, "reset", "-q", "--soft", start)
    done = ar(repo, "keep", "-d", "the change", "--json").json()
    assert (done["status"], done["metric"], done["samples"]) == ("keep", 90, [90])


def test_a_start_whose_head_moved_during_its_baseline_names_the_way_on(
        repo: Path, ar: Tool) -> None:
    """HEAD switched to another branch while start measured the baseline (here by the
    benchmark itself): nothing is recorded, and the refusal names what measures it again,
    start --new-segment back on the session branch (keep has no measurement to record)."""
    git(repo, "branch", "other")
    write(repo / "bench.sh", "#!/bin/sh\n[ -e ../switch-now ] && git switch -q other\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    commit_all(repo, "a benchmark that switches")
    git(repo, "branch", "-f", "other")
    write(repo.parent / "switch-now", "")
    said = ar(repo, *start_args("--decision", "strict"), expect=3).err
    assert "while the baseline measured" in said and "start --new-segment" in said, said
    assert "keep or discard" not in said, said
    assert not runs(repo)
    (repo.parent / "switch-now").unlink()
    git(repo, "switch", "-q", "autoresearch/s1")
    ar(repo, "start", "--new-segment")
    assert [r["status"] for r in runs(repo)] == ["keep"]


def test_a_run_lists_the_sessions_refs_once(repo: Path, ar: Tool) -> None:
    """One ``git for-each-ref`` over the session's refs a run, a keep and a discard alike,
    set-asides named all the same: its own set-aside (an out-of-scope edit) is named in the
    record from that listing and the ref its measurement wrote."""
    import os
    import sys

    ar(repo, *start_args("--decision", "strict", "--scope", "value.txt"))
    env = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    for value, status in (("90", "keep"), ("120", "discard")):
        write(repo / "value.txt", value + "\n")
        write(repo / "README.md", f"edited for {status}\n")
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", status,
                               "--json"], cwd=repo, capture_output=True, text=True,
                              check=True, env=env)
        listings = [ln for ln in done.stderr.splitlines() if " git for-each-ref " in ln]
        assert len(listings) == 1, done.stderr
        record = json.loads(done.stdout)
        assert record["status"] == status
        assert record["scope_violations"] == ["README.md"]
        assert record["scope_refs"] == [f"refs/autoresearch/s1/scope/{record['run']}"]


def test_what_is_read_of_head_once_is_not_asked_of_git_again(repo: Path, ar: Tool) -> None:
    """The run HEAD's trailers name is read of git once per commit (then kept in the scratch
    folder): a discard after a discard does not ask again, and a run after a keep does not ask
    at all (the keep read its trailers back). The check it serves still holds: HEAD's keep
    whose ledger line was lost (and the state mirror's memory of it gone) refuses the next run,
    its answer read from the file; asked of git once the file is gone, it says the same."""
    import os
    import sys

    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    env = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    traces = []
    for value in ("120", "130"):
        write(repo / "value.txt", value + "\n")
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", value],
                              cwd=repo, capture_output=True, text=True, check=True, env=env)
        traces.append(done.stderr)
    assert not [t for t in traces if " git log -1 " in t], traces
    ledger = repo / ".auto" / "log.jsonl"
    ledger.write_text("".join(line for line in ledger.read_text().splitlines(keepends=True)
                              if '"run": 2,' not in line and '"run":2,' not in line))
    (repo / ".git" / "autoresearch" / "state-cache.json").unlink()
    write(repo / "value.txt", "80\n")
    for _ in ("from the file", "from git"):
        res = ar(repo, "run", "-d", "after the loss", expect=3)
        assert "lost the line of kept run 2, which HEAD's commit" in res.err
        assert (repo / "value.txt").read_text() == "80\n"
        (repo / ".git" / "autoresearch" / "head-facts").unlink()


@pytest.mark.parametrize("hooks", [False, True])
def test_a_run_reads_the_ledger_once_and_then_what_it_appended(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch, hooks: bool) -> None:
    """A run reads the ledger file once: the lines it appends itself (the before hooks'
    lines, its record, the after hooks' lines, then under the sequential rule the
    incumbent's new sample after a discard) are read alone, on top of the runs it read (at the
    end of a long session a whole read is most of the command's time). What it then decides
    and says is what a fresh read finds: the incumbent's pool grown by the new sample."""
    from git_autoresearch import ledger

    ar(repo, *start_args())
    if hooks:
        for stage in ("before", "after"):
            write(repo / ".auto" / "hooks" / f"{stage}.sh", "#!/bin/sh\ncat > /dev/null\n",
                  0o755)
    whole_reads: list[int] = []
    parse = ledger._parse

    def counted(data: bytes) -> ledger.Ledger:
        whole_reads.append(len(data))
        return parse(data)

    monkeypatch.setattr(ledger, "_parse", counted)
    write(repo / "value.txt", "120\n")
    record = ar(repo, "run", "-d", "worse", "--json").json()
    assert record["status"] == "discard"
    assert len(whole_reads) == 1
    assert len([e for e in ledger_lines(repo) if e.get("type") == "hook"]) == 2 * hooks
    resampled = [e for e in ledger_lines(repo) if e.get("type") == "incumbent"]
    assert [e["after_run"] for e in resampled] == [2]
    noise = ar(repo, "status", "--json").json()["noise"]
    assert noise["incumbent_samples"] == \
        len(runs(repo)[0]["samples"]) + len(resampled[0]["samples"])


def test_a_line_another_process_appended_is_read_after_the_commands_own(repo: Path,
                                                                          ar: Tool) -> None:
    """The runs a command read are carried on over its own appended lines only when the
    ledger held just what it read: a line another process appended meanwhile (a hand edit, a
    tool that takes no lock), or an edit in place that kept its size and modification time,
    makes it read the file again, and find both."""
    from git_autoresearch.session.session import Session

    ar(repo, *start_args())
    session = Session.open(repo)
    assert [r.number for r in session.ledger.runs] == [1]
    path = repo / ".auto" / "log.jsonl"
    with path.open("a") as fh:
        fh.write(json.dumps({"run": 7, "metric": 99, "status": "discard", "commit": "abc1234",
                             "description": "by another tool"}) + "\n")
    with session.shared("test"):
        session.append([{"run": 8, "metric": 98, "status": "discard", "commit": "abc1234",
                         "description": "ours"}])
    assert [r.number for r in session.ledger.runs] == [1, 7, 8]
    with session.shared("test"):
        session.append([{"run": 9, "metric": 97, "status": "discard", "commit": "abc1234",
                         "description": "ours"}])
    assert [(r.number, r.line) for r in session.ledger.runs] == [(1, 2), (7, 3), (8, 4), (9, 5)]
    # An edit in place that keeps the size and puts the modification time back (touch -r,
    # cp -p): the time of the status change still shows it.
    import os

    before = path.stat()
    data = path.read_bytes()
    with path.open("r+b") as fh:
        fh.write(data.replace(b'"metric": 99', b'"metric": 11', 1))
    assert path.read_bytes() != data
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with session.shared("test"):
        session.append([{"run": 10, "metric": 96, "status": "discard", "commit": "abc1234",
                         "description": "ours"}])
    assert [(r.number, r.metric) for r in session.ledger.runs][1:] == \
        [(7, 11), (8, 98), (9, 97), (10, 96)]


def test_the_readonly_benchmark_is_read_of_git_whatever_the_scratch_folder_says(
        repo: Path, ar: Tool) -> None:
    """Which files the benchmark names (and so are readonly) is never taken from a file an
    agent can write: a head-facts file claiming the command names none does not let a run
    keep an edited bench.sh; it is set aside, named a readonly violation."""
    from git_autoresearch import __version__

    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    head = git(repo, "rev-parse", "HEAD")
    named = json.dumps([str(repo), "sh bench.sh", None, None])
    write(repo / ".git" / "autoresearch" / "head-facts", json.dumps(
        {"commit": head, "made_by": __version__, "facts": {"command_files " + named: []}}))
    write(repo / "value.txt", "80\n")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    record = ar(repo, "run", "-d", "cheat", "--json").json()
    assert record["readonly_violations"] == ["bench.sh"]
    assert record["metric"] == 80
    assert git(repo, "show", "HEAD:bench.sh") == "#!/bin/sh\necho \"score: $(cat value.txt)\""


def test_equal_metric_is_discarded(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "README.md", "changed\n")
    assert ar(repo, "run", "-d", "same", "--json").json()["status"] == "discard"


def test_higher_direction(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--direction", "higher"))
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "lower", "--json").json()["status"] == "discard"
    write(repo / "value.txt", "110\n")
    assert ar(repo, "run", "-d", "higher", "--json").json()["status"] == "keep"


def test_crash_reverts_and_records_reason(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "oops\n")
    record = ar(repo, "run", "-d", "broken", "--json").json()
    assert record["status"] == "crash"
    assert record["metric"] is None, "no metric: not pi's placeholder 0, the best ever read"
    assert runs(repo)[-1]["metric"] == 0, "the ledger keeps pi-autoresearch's 0"
    assert "oops" in record["reason"]
    assert (repo / "value.txt").read_text() == "100\n"


def test_checks_failed_is_reverted(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--checks-command", "test ! -e src/bad.py"))
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "bad.py", "")
    record = ar(repo, "run", "-d", "fast but wrong", "--json").json()
    assert record["status"] == "checks_failed"
    assert record["checks"]["passed"] is False
    assert (repo / "value.txt").read_text() == "100\n"
    assert not (repo / "src" / "bad.py").exists()


def test_measure_then_keep_and_discard(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    measured = ar(repo, "measure", "--json").json()
    # The same fields as the run document: status is the loop's decision, decision the rule's.
    assert (measured["metric"], measured["status"], measured["dry_run"]) == (80, "keep", False)
    assert measured["decision"]["verdict"] == "better"
    assert len(runs(repo)) == 1, "measure records nothing"
    kept = ar(repo, "keep", "-d", "eighty", "--json").json()
    assert kept["metric"] == 80 and kept["status"] == "keep"
    write(repo / "value.txt", "70\n")
    assert "decision: keep (nothing recorded" in ar(repo, "measure").out
    dropped = ar(repo, "discard", "-d", "seventy, but I do not trust it", "--json").json()
    assert dropped["status"] == "discard" and dropped["metric"] == 70
    assert (repo / "value.txt").read_text() == "80\n"


def test_measure_of_no_change_says_it_is_a_noise_probe(repo: Path, ar: Tool) -> None:
    """measure on a work tree that changed nothing in the scope says, as run does, that it
    measured the incumbent again: a noise probe (its text said only "decision: discard")."""
    ar(repo, *start_args("--decision", "strict"))
    said = ar(repo, "measure").out
    assert "decision: discard (nothing in the scope changed, so this measured the incumbent " \
           "again: a noise probe, never kept; nothing recorded" in said, said
    kept = ar(repo, "keep", "-d", "kept by hand all the same", "--force").out
    assert "nothing to commit" in kept and "never kept" not in kept, kept


def test_keep_refuses_failed_checks_unless_forced(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--checks-command", "test ! -e src/bad.py"))
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "bad.py", "")
    ar(repo, "measure")
    res = ar(repo, "keep", "-d", "x", expect=3)
    assert res.err == (
        "git autoresearch: the pending measurement failed its checks; discard it, or keep it "
        "anyway with --force\n")
    assert [r["run"] for r in runs(repo)] == [1]
    kept = ar(repo, "keep", "-d", "x", "--force", "--json").json()
    why = "its checks failed (the checks command exited with code 1)"
    assert (kept["status"], kept["decision"]["forced"], kept["reason"]) == \
        ("keep", True, f"kept by hand: {why}")
    assert kept["warnings"][0] == f"{why}; kept because you asked (its decision is recorded " \
        "as forced)"


def test_a_stale_measurement_that_failed_its_checks(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--checks-command", "test ! -e src/bad.py"))
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "bad.py", "")
    ar(repo, "measure")
    write(repo / "src" / "bad.py", "changed after measuring\n")
    res = ar(repo, "keep", "-d", "x", expect=3)
    assert "changed since it was measured" in res.err and "checks" not in res.err
    record = ar(repo, "discard", "-d", "x", "--json").json()
    assert record["status"] == "discard" and record["checks"] is None


def test_given_metrics_are_checked(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    for bad in ("bad name=3", "status=7", "x=nan", "noequals"):
        assert "--metrics" in ar(repo, "keep", "-d", "x", "--metric", "50", "--metrics", bad,
                                 expect=2).err
    res = ar(repo, "keep", "-d", "x", "--metric", "50", "--metrics", "score=3", expect=2)
    assert res.err == (
        "git autoresearch: the primary metric score is given twice (--metric and --metrics)\n")
    res = ar(repo, "keep", "-d", "x", "--metrics", "score=3", "--metrics", "score=4", expect=2)
    assert res.err == "git autoresearch: --metrics score is given twice\n"
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n"
          "echo 'METRIC status=9'\necho 'METRIC rss_mb=12'\n", 0o755)
    git(repo, "commit", "-qam", "bench prints more")
    record = ar(repo, "run", "-d", "y", "--json").json()
    assert record["metrics"] == {"rss_mb": 12}


def test_an_empty_description_is_refused(repo: Path, ar: Tool,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    assert ar(repo, "run", "-d", " \n\t ", expect=2).err == (
        "git autoresearch: the description is empty: say what the run tried\n")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\n")))
    assert ar(repo, "discard", "-d", "-", expect=2).err == (
        "git autoresearch: the description is empty (stdin gave none): say what the run tried\n")
    assert (repo / "value.txt").read_text() == "50\n"


def test_discard_of_failed_checks_records_checks_failed(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--checks-command", "test $(cat value.txt) != 50"))
    write(repo / "value.txt", "50\n")
    ar(repo, "measure", expect=0)
    assert ar(repo, "discard", "-d", "x", "--json").json()["status"] == "checks_failed"


def test_keep_with_metric_given_by_caller(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--no-baseline"))
    write(repo / "value.txt", "1\n")
    record = ar(repo, "keep", "-d", "measured elsewhere", "--metric", "-0.35",
                "--metrics", "total_µs=14600", "--json").json()
    assert record["metric"] == -0.35
    assert record["metrics"] == {"total_µs": 14600}
    trailer = git(repo, "log", "-1", "--format=%(trailers:key=Result,valueonly)")
    assert trailer == '{"status":"keep","score":-0.35,"total_µs":14600}'


def test_keep_without_measurement_is_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    res = ar(repo, "keep", "-d", "x", expect=3)
    assert res.err == (
        "git autoresearch: nothing to keep: no pending measurement with a metric (run git "
        "autoresearch measure, or pass --metric VALUE)\n")
    assert [r["run"] for r in runs(repo)] == [1]


def test_keep_with_nothing_changed_makes_no_commit(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--no-baseline"))
    head = git(repo, "rev-parse", "HEAD")
    record = ar(repo, "keep", "-d", "noise", "--metric", "5", "--json").json()
    assert record["status"] == "keep" and record["commit"] == head[:7]
    assert git(repo, "rev-parse", "HEAD") == head


def test_no_baseline_keeps_first_run(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--no-baseline"))
    write(repo / "value.txt", "500\n")
    assert ar(repo, "run", "-d", "first", "--json").json()["status"] == "keep"


def test_dry_run_applies_nothing(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "10\n")
    data = ar(repo, "run", "-d", "x", "--dry-run", "--json").json()
    assert data["status"] == "keep" and data["dry_run"] is True
    assert data["decision"]["rule"] == "sequential"
    assert (repo / "value.txt").read_text() == "10\n"
    assert len(runs(repo)) == 1


def test_runs_are_numbered_and_log_tsv(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    for value in ("90", "95", "x", "80"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", f"try {value}")
    assert [r["run"] for r in runs(repo)] == [1, 2, 3, 4, 5]
    assert [r["status"] for r in runs(repo)] == ["keep", "keep", "discard", "crash", "keep"]
    tsv = ar(repo, "log", "--tsv").out.splitlines()
    assert tsv[0] == "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription"
    assert tsv[3].split("\t")[:4] == ["3", "-", "95", "discard"]
    assert tsv[4].split("\t")[:4] == ["4", "-", "-", "crash"]
    rows = ar(repo, "log", "--json", "--status", "keep", "--last", "2").json()["runs"]
    assert [r["run"] for r in rows] == [2, 5]
    assert rows[1]["delta_pct"] == -20.0
    table = ar(repo, "log").out
    assert "try 80" in table and "-20.0%" in table


def test_status_reports_best_and_agrees_with_branch(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "60\n")
    ar(repo, "run", "-d", "sixty")
    data = ar(repo, "status", "--json").json()
    seg = data["segment"]
    assert seg["baseline"]["metric"] == 100
    assert seg["best"]["metric"] == 60 and seg["best"]["run"] == 2
    assert seg["improvement_pct"] == -40.0
    assert seg["runs"] == 2 and seg["kept"] == 2
    assert data["warnings"] == []
    human = ar(repo, "status").out
    assert "best        60 (run 2" in human
    assert data["pending"] is None and "pending" not in human
    write(repo / "value.txt", "70\n")
    ar(repo, "measure")
    data = ar(repo, "status", "--json").json()
    pending = data["pending"]
    assert pending["decision"]["verdict"] == "worse"
    assert {**pending, "decision": None} == {"metric": 70, "status": "discard", "decision": None,
                                             "changed_since": []}
    assert isinstance(data["pending"]["metric"], int), "70, as every other output writes it"
    assert "pending     70, measured and not yet recorded" in ar(repo, "status").out
    write(repo / "value.txt", "65\n")
    assert ar(repo, "status", "--json").json()["pending"]["changed_since"] == ["value.txt"]
    assert "pending     70, stale: value.txt changed since" in ar(repo, "status").out


def test_stop_sentinel_ends_loop_with_exit_4(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    assert ar(repo, "stop").out.startswith("created ")
    asked = (repo / ".auto" / "STOP").read_text()
    assert ar(repo, "stop").out.startswith("already there "), "a second stop says so"
    assert (repo / ".auto" / "STOP").read_text() == asked
    res = ar(repo, "run", "-d", "x", expect=4)
    assert res.err == (
        "git autoresearch: STOP sentinel found: the loop stops here (the sentinel was removed)\n")
    assert not (repo / ".auto" / "STOP").exists()
    assert any(line.get("type") == "stopped" for line in ledger_lines(repo))
    assert ar(repo, "doctor").code == 0, "the state ref holds the stopped event"
    ar(repo, "run", "-d", "x", expect=0)


def test_max_experiments_ends_loop_with_exit_4(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--max-experiments", "2"))
    ar(repo, "run", "-d", "one")
    ar(repo, "run", "-d", "two")
    assert ar(repo, "run", "-d", "three", expect=4).err == (
        "git autoresearch: max_experiments (2) reached in this segment: the loop stops here\n")
    assert len(runs(repo)) == 3


def test_new_segment_after_failed_baseline(repo: Path, ar: Tool) -> None:
    res = ar(repo, *start_args("--metric-pattern", r"nomatch: (\d+)"), expect=3)
    assert res.err.splitlines()[0] == (
        "git autoresearch: the baseline failed (metric pattern 'nomatch: (\\d+)' matched nothing "
        "in the log); the session is kept: fix the command, then run git autoresearch start "
        "--new-segment")
    assert runs(repo)[0]["status"] == "crash"
    data = ar(repo, "start", "--new-segment", "--metric-pattern", r"score: (\S+)", "--json").json()
    assert data["segment"] == 1 and data["baseline"]["metric"] == 100
    assert ar(repo, "status", "--json").json()["segment"]["baseline"]["run"] == 2


def test_edited_config_is_refused_naming_the_key(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    cfg = repo / ".auto" / "config.toml"
    cfg.chmod(0o644)
    cfg.write_text(cfg.read_text().replace('direction = "lower"', 'direction = "higher"'))
    res = ar(repo, "run", "-d", "x", expect=3)
    assert res.err == (
        f"git autoresearch: {cfg} was edited since the segment began (direction: 'lower' -> "
        "'higher'); to measure under the new configuration run git autoresearch start "
        "--new-segment (on a clean work tree: commit or restore an experiment in progress with "
        "git first; it is not recorded); to undo the edit: chmod u+w .auto/config.toml && git "
        "show refs/autoresearch/s1/state:config.toml > .auto/config.toml && chmod 0444 "
        ".auto/config.toml\n")
    assert "git show refs/autoresearch/s1/state:config.toml > .auto/config.toml" in res.err
    assert len(runs(repo)) == 1
    for reading in (["log"], ["status"], ["summary"], ["analyze"]):
        assert "was edited since the segment began" in ar(repo, *reading).err, reading
    undo = res.err.split("to undo the edit: ", 1)[1].strip()
    subprocess.run(["bash", "-c", undo], cwd=repo, check=True)
    assert cfg.stat().st_mode & 0o777 == 0o444
    assert ar(repo, "run", "-d", "after the undo", "--json").json()["run"] == 2


def test_runs_from_subdirectory(repo: Path, ar: Tool) -> None:
    ar(repo / "src", *[a if a != "bench.sh" else "../bench.sh" for a in start_args()])
    write(repo / "value.txt", "50\n")
    assert ar(repo / "src", "run", "-d", "from src", "--json").json()["status"] == "keep"
    write(repo / "value.txt", "70\n")
    assert ar(repo / "src", "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert (repo / "value.txt").read_text() == "50\n"


def test_start_from_detached_head(repo: Path, ar: Tool) -> None:
    git(repo, "checkout", "-q", "--detach")
    ar(repo, *start_args())
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"


def test_linked_worktree(repo: Path, ar: Tool, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "other")
    ar(wt, *start_args())
    write(wt / "value.txt", "42\n")
    assert ar(wt, "run", "-d", "in a worktree", "--json").json()["status"] == "keep"
    write(wt / "value.txt", "43\n")
    assert ar(wt, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert git(repo, "rev-parse", "refs/autoresearch/s1/attempts/3")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    assert not (repo / ".auto").exists()


def test_sha256_repository(tmp_path: Path, ar: Tool) -> None:
    top = tmp_path / "sha256"
    top.mkdir()
    git(top, "init", "-q", "--object-format=sha256", "-b", "main")
    write(top / "value.txt", "100\n")
    write(top / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n", 0o755)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "initial")
    ar(top, *start_args("--decision", "strict"))
    write(top / "value.txt", "42\n")
    assert ar(top, "run", "-d", "better", "--json").json()["status"] == "keep"
    write(top / "value.txt", "43\n")
    res = ar(top, "run", "-d", "worse", "--json")
    assert res.json()["status"] == "discard" and "warning" not in res.err
    assert len(git(top, "rev-parse", "refs/autoresearch/s1/attempts/3")) == 64
    assert git(top, "show", "refs/autoresearch/s1/attempts/3:value.txt") == "43"
    assert git(top, "log", "-1", "--format=%s", "refs/autoresearch/s1/state") == \
        "after run 3 (discard)"
    ar(top, "doctor")


def test_default_session_id_from_goal(repo: Path, ar: Tool) -> None:
    data = ar(repo, "start", "--goal", "Speed up: the Parser!", "--command", "sh bench.sh",
              "--readonly", "bench.sh",
              "--metric-pattern", r"score: (\S+)", "--no-baseline", "--json").json()
    assert data["session_id"].startswith("speed-up-the-parser-20")


def test_a_long_goal_makes_a_session_id_cut_between_words() -> None:
    from git_autoresearch.lifecycle.start import default_session_id

    assert default_session_id("faster predictions without losing accuracy on the test set",
                              "2026-12-01") == "faster-predictions-without-losing-2026-12-01"
    assert default_session_id("x" * 50, "2026-12-01") == "x" * 40 + "-2026-12-01"


def test_config_file(repo: Path, ar: Tool, tmp_path: Path) -> None:
    conf = write(tmp_path / "ar.toml", 'goal = "from file"\ncommand = "sh bench.sh"\n'
                 'metric_pattern = "score: (\\\\S+)"\nmetric_name = "score"\n'
                 'session_id = "fromfile"\nruns_per_experiment = 3\nreadonly = ["bench.sh"]\n')
    data = ar(repo, "start", "--decision", "strict", "--config", str(conf), "--json").json()
    assert data["config"]["runs_per_experiment"] == 3
    assert data["baseline"]["samples"] == [100, 100, 100]
    assert data["session_id"] == "fromfile"


def test_keep_refuses_a_tree_changed_since_measured(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    write(repo / "src" / "lib.py", "def f():\n    return 'unmeasured'\n")
    res = ar(repo, "keep", "-d", "x", expect=3)
    assert "changed since it was measured (src/lib.py)" in res.err
    ar(repo, "measure")
    assert ar(repo, "keep", "-d", "x", "--json").json()["metric"] == 80


def test_a_given_metric_is_recorded_alone(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--checks-command", "true"))
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    record = ar(repo, "keep", "-d", "x", "--metric", "75", "--json").json()
    assert record["metric"] == 75 and record["samples"] == [75] and record["checks"] is None


def test_a_given_metric_is_kept_alone_when_the_tree_changed_since_measured(repo: Path, ar: Tool
                                                                          ) -> None:
    ar(repo, *start_args("--checks-command", "true"))
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    write(repo / "value.txt", "70\n")
    res = ar(repo, "keep", "-d", "x", "--metrics", "rss_mb=3", expect=3)
    assert "changed since it was measured (value.txt)" in res.err
    record = ar(repo, "keep", "-d", "x", "--metric", "70", "--json").json()
    assert record["metric"] == 70 and record["samples"] == [70] and record["checks"] is None
    assert any("pending measurement is not used" in w for w in record["warnings"])
    assert git(repo, "show", "HEAD:value.txt") == "70"


def test_keep_warns_when_not_better(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "120\n")
    ar(repo, "measure")
    res = ar(repo, "keep", "-d", "worse, but simpler")
    assert "does not beat the best so far (100, run 1)" in res.err


def test_discard_without_measurement_has_no_metric(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "1\n")
    record = ar(repo, "discard", "-d", "changed my mind", "--json").json()
    assert record["metric"] is None
    row = ar(repo, "log", "--json").json()["runs"][-1]
    assert row["delta_pct"] is None
    assert ar(repo, "status", "--json").json()["segment"]["best"]["metric"] == 100


def test_keep_with_nothing_to_commit_says_so(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "100\n")
    res = ar(repo, "keep", "-d", "re-measure", "--metric", "99")
    assert "nothing to commit: HEAD stays at" in res.out
    assert runs(repo)[-1]["committed"] is False
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_run_after_failed_baseline_is_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--metric-pattern", r"nomatch: (\d+)"), expect=3)
    write(repo / "value.txt", "1\n")
    res = ar(repo, "run", "-d", "x", expect=3)
    assert "baseline of this segment failed" in res.err
    assert (repo / "value.txt").read_text() == "1\n"


def test_concurrent_callers_get_consecutive_runs(repo: Path, ar: Tool) -> None:
    import subprocess
    import sys

    ar(repo, *start_args("--command", "sleep 1; sh bench.sh"))
    write(repo / "value.txt", "90\n")
    tool = [sys.executable, "-m", "git_autoresearch"]
    first = subprocess.Popen([*tool, "run", "-d", "holder"], cwd=repo)
    import time

    time.sleep(0.3)
    second = subprocess.run([*tool, "discard", "-d", "waiter"], cwd=repo, capture_output=True,
                            text=True)
    assert first.wait() == 0 and second.returncode == 0, second.stderr
    assert [r["run"] for r in runs(repo)] == [1, 2, 3]


def test_stop_mentions_unrecorded_changes(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    ar(repo, "stop")
    write(repo / "value.txt", "1\n")
    res = ar(repo, "run", "-d", "x", expect=4)
    assert "unrecorded changes (value.txt)" in res.err
    assert ar(repo, "resume", "--json").json()["warnings"] == [
        "the work tree has unrecorded changes (value.txt): the next run measures them (or "
        "record them with git autoresearch discard or keep)"], "resume says so too"
    ar(repo, "run", "-d", "x")
    assert ar(repo, "resume", "--json").json()["warnings"] == []


def test_new_segment_can_lift_the_limit_but_not_change_the_id(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--max-experiments", "1"))
    ar(repo, "run", "-d", "one")
    assert ar(repo, "run", "-d", "two", expect=4).err == (
        "git autoresearch: max_experiments (1) reached in this segment: the loop stops here\n")
    res = ar(repo, "start", "--new-segment", "--session-id", "other", expect=2)
    assert "--session-id cannot change" in res.err
    ar(repo, "start", "--new-segment", "--max-experiments", "0")
    for i in range(3):
        ar(repo, "run", "-d", f"unlimited {i}")


def test_discard_after_changes_since_measure_drops_the_stale_metric(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    write(repo / "src" / "lib.py", "def f():\n    return 'changed after measuring'\n")
    record = ar(repo, "discard", "-d", "x", "--json").json()
    assert record["metric"] is None and record["samples"] == []
    assert any("changed since it was measured" in w for w in record["warnings"])


def test_a_crash_records_metric_zero_and_shows_none(repo: Path, ar: Tool) -> None:
    """The ledger writes pi-autoresearch's 0 for a crash (its readers take the line); every
    JSON document says null, since 0 would read as the best result ever. No rule decided it:
    it carries no decision of the measurement it was recorded over (which read 'better', and
    put the crash among log --decision better), and a number given keeps as its sample."""
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    ar(repo, "measure")
    record = ar(repo, "crash", "-d", "it broke later", "--json").json()
    assert (record["metric"], record["decision"], record["samples"]) == (None, None, [80])
    assert runs(repo)[-1]["metric"] == 0 and "decision" not in runs(repo)[-1]
    assert ar(repo, "log", "--json").json()["runs"][-1]["metric"] is None
    assert ar(repo, "log", "--decision", "better", "--json").json()["runs"] == []
    assert ar(repo, "show", "2", "--json").json()["record"]["metric"] is None
    write(repo / "value.txt", "70\n")
    record = ar(repo, "crash", "-d", "measured elsewhere", "--metric", "5", "--json").json()
    assert (record["metric"], record["decision"], record["samples"]) == (None, None, [5])
    assert "a crash's metric is null" in " ".join(ar(repo, "crash", "-h").out.split())


def test_keep_warnings_reach_json_and_force_refusal_says_only_that(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "120\n")
    ar(repo, "measure")
    record = ar(repo, "keep", "-d", "slower but simpler", "--json").json()
    # Said once (it was said twice, once without the decision's mark).
    assert record["warnings"] == ["120 does not beat the best so far (100, run 1); kept "
                                  "because you asked (its decision is recorded as forced)"]
    assert (record["decision"]["verdict"], record["decision"]["forced"]) == ("worse", True)
    write(repo / "value.txt", "130\n")
    ar(repo, "measure")
    write(repo / "value.txt", "140\n")
    res = ar(repo, "keep", "-d", "x", "--force", expect=3)
    assert "kept because you asked" not in res.err


def test_out_of_scope_reverts_are_a_warning_in_json(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "edited\n")
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert any("reverted changes outside the scope: README.md" in w
               for w in record["warnings"])


def test_mean_is_rounded(repo: Path, ar: Tool) -> None:
    write(repo / "c.sh", "n=$(cat .n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .n\n"
                         "echo \"score: 0.00$n\"\n")
    write(repo / ".gitignore", ".n\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "c")
    data = ar(repo, "start", "--decision", "strict",
              "--goal", "g", "--command", "sh c.sh", "--metric-pattern",
              r"score: (\S+)", "--readonly", "c.sh", "--runs-per-experiment", "3",
              "--aggregate", "mean", "--json").json()
    assert data["baseline"]["metric"] == 0.002


def test_a_torn_ledger_line_is_reported_by_the_loop_and_set_aside_by_the_next_append(
        repo: Path, ar: Tool) -> None:
    """A line cut short (a crash mid-append) is reported with its number by the commands a loop
    runs, not only by log and status; the next append sets it aside as a record of its own
    (pi-autoresearch's export dashboard, assets/template.html:394, refuses a ledger with a
    line that is not JSON), and nothing is left for resume to do."""
    ar(repo, *start_args())
    path = repo / ".auto" / "log.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"run": 100, "trunc')
    write(repo / "value.txt", "90\n")
    res = ar(repo, "run", "-d", "after a torn line")
    warning = ("warning: the ledger " + str(path) + " has 1 line(s) that "
               "cannot be read (line 3: not JSON (JSONDecodeError)); git autoresearch resume "
               "sets them aside in .auto/log.rejected.jsonl")
    assert warning in res.err.splitlines()
    assert res.out.startswith("run 2: keep")
    assert path.read_text().count('"trunc') == 1
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "again", "--json").json()["warnings"] == []
    assert ar(repo, "resume", "--json").json()["actions"] == []
    assert not (repo / ".auto" / "log.rejected.jsonl").exists()


def test_a_new_segment_brings_the_prompt_header_up_to_date_and_keeps_the_notes(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    prompt = repo / ".auto" / "prompt.md"
    notes = prompt.read_text().replace("## Learnings\n", "## Learnings\n- caching helps\n")
    prompt.write_text(notes)
    ar(repo, "start", "--new-segment", "--goal", "lower the value again",
       "--metric-name", "total")
    text = prompt.read_text()
    assert text.startswith("# Autoresearch session: lower the value again\n\n"
                           "Metric: total (lower is better)\n")
    assert text.split("Readonly: ", 1)[1].split("\n", 1)[1] == \
        notes.split("Readonly: ", 1)[1].split("\n", 1)[1]  # everything below, as it was
    mine = "# My own plan\n- keep it short\n"
    prompt.write_text(mine)
    ar(repo, "start", "--new-segment", "--goal", "a third goal")
    assert prompt.read_text() == mine  # a header the agent rewrote is left alone


def test_run_json_says_committed_for_every_status(repo: Path, ar: Tool) -> None:
    """An agent reads d['committed'] whatever the run became: false for a discard."""
    ar(repo, *start_args())
    write(repo / "value.txt", "200\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["committed"] is False
    write(repo / "value.txt", "50\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["committed"] is True


def test_a_run_that_changed_nothing_in_the_scope_says_it_was_a_noise_probe(
        repo: Path, ar: Tool) -> None:
    """A run whose work tree holds no change in the scope (none at all, or only changes set
    aside as outside it) says why its number, even a better one, is discarded: it measured the
    incumbent again, a noise probe."""
    ar(repo, *start_args("--scope", "value.txt"))
    said = "nothing in the scope changed, so this measured the incumbent again: a noise probe"
    assert said in ar(repo, "run", "-d", "nothing").out
    write(repo / "README.md", "edited\n")
    write(repo / "!idea.md", "an idea\n")
    write(repo / "-todo.md", "a todo\n")
    res = ar(repo, "run", "-d", "outside only")
    assert said in res.out and "reverted out-of-scope changes: !idea.md, -todo.md, README.md" \
        in res.out
    # the command it names brings the file back, and it alone, from any folder of the work
    # tree, whatever its name (':/!idea.md' would bring back every file but idea.md, and
    # ':/-todo.md' is refused as an unknown magic)
    restore = res.out.split("; ")[-1].split(" brings")[0]
    assert restore == ("git restore --source=refs/autoresearch/s1/scope/3 -- "
                       "':(top,literal)<path>'")
    (repo / "sub").mkdir()
    for name in ("!idea.md", "-todo.md"):
        git(repo / "sub", "restore", "--source=refs/autoresearch/s1/scope/3", "--",
            restore.split("'")[1].replace("<path>", name))
    assert (repo / "!idea.md").read_text() == "an idea\n"
    assert (repo / "-todo.md").read_text() == "a todo\n"
    assert (repo / "README.md").read_text() == "project\n"
    (repo / "!idea.md").unlink()
    (repo / "-todo.md").unlink()
    write(repo / "value.txt", "90\n")
    assert said not in ar(repo, "run", "-d", "a change").out


OUTPUT_BENCH = ('#!/bin/sh\nmkdir -p src/__pycache__\n'
                'echo built > "src/__pycache__/lib-$(cat value.txt).pyc"\n'
                'echo "score: $(cat value.txt)"\n')


@pytest.mark.parametrize("scope", [[], ["--scope", "value.txt"]])
def test_what_the_measurement_creates_is_never_the_experiment(repo: Path, ar: Tool,
                                                             scope: list[str]) -> None:
    """Files the benchmark writes in the work tree (Python's __pycache__, a build's output)
    are what measuring made, not the experiment: a keep does not commit them, a discard does
    not remove them, and the next run does not set them aside as outside the scope."""
    write(repo / "bench.sh", OUTPUT_BENCH, 0o755)
    git(repo, "commit", "-qam", "a benchmark that leaves bytecode")
    ar(repo, *start_args(*scope))
    write(repo / "value.txt", "90\n")
    assert "keep" in ar(repo, "run", "-d", "better").out
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert (repo / "src" / "__pycache__" / "lib-90.pyc").read_text() == "built\n"
    write(repo / "value.txt", "95\n")
    assert "discard" in ar(repo, "run", "-d", "worse").out
    assert (repo / "src" / "__pycache__" / "lib-95.pyc").read_text() == "built\n"
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "better again")
    assert [(r["status"], r.get("scope_violations") or []) for r in runs(repo)[1:]] == [
        ("keep", []), ("discard", []), ("keep", [])]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert git(repo, "status", "--porcelain").splitlines() == [
        "?? src/__pycache__/"]


def test_a_commit_by_hand_under_the_incumbent_is_said_by_run_and_status(repo: Path,
                                                                       ar: Tool) -> None:
    """The sequential rule compares a candidate with the incumbent's samples, those of the
    kept run whose commit is HEAD: after a commit made by hand on the session branch HEAD is
    no kept run's, the samples measured other code, and run and status say so (until a keep
    makes HEAD a kept run's commit again)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    assert ar(repo, "status", "--json").json()["warnings"] == []
    write(repo / "src" / "lib.py", "def f():\n    return 3\n")
    git(repo, "commit", "-qam", "by hand")
    head = git(repo, "rev-parse", "--short", "HEAD")
    kept = runs(repo)[-1]["commit"]
    said = (f"HEAD ({head}) is the commit of no kept run (a commit made by hand, or the branch "
            f"moved): the incumbent's samples are run 2's ({kept}), which measured other "
            "code, so each run measures HEAD beside it until a keep; git autoresearch start "
            "--new-segment measures HEAD as a new baseline")
    assert ar(repo, "status", "--json").json()["warnings"] == [said]
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "on the commit by hand", "--json").json()
    assert record["status"] == "keep" and said in record["warnings"]
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_a_noise_probe_on_a_commit_by_hand_warns_and_stays_out_of_the_kept_runs_samples(
        repo: Path, ar: Tool) -> None:
    """A run with no change after a commit made by hand measures HEAD, other code than the
    kept run's: run --json says so, as for a change, and its sample never joins the kept
    run's pool (here after the branch was moved back to the kept run's commit)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    kept = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "300\n")
    git(repo, "commit", "-qam", "by hand: much slower")
    probe = ar(repo, "run", "-d", "no change", "--json").json()
    assert probe["decision"]["verdict"] == "no_change"
    assert any("is the commit of no kept run" in w for w in probe["warnings"]), probe
    git(repo, "reset", "-q", "--hard", kept)
    write(repo / "value.txt", "89\n")
    decided = ar(repo, "run", "-d", "a little better", "--json").json()["decision"]
    assert decided["pool_spread"] == 0 and decided["incumbent_samples"] == 1, decided


@pytest.mark.parametrize("rule", ["sequential", "strict"])
def test_a_regression_against_a_better_commit_by_hand_is_not_kept_on_old_samples(
        repo: Path, ar: Tool, rule: str) -> None:
    """A commit made by hand that is better than the kept runs (70 against 90), then a change
    that undoes half of it (80): the sequential rule decided on the last keep's samples (90),
    found 80 better and kept a regression of HEAD, with no sample of HEAD taken. Now it
    knows those samples measured other code and decides on HEAD's, measured beside the
    candidate: worse, reverted. The strict rule, which compares with the best kept number,
    measures HEAD beside it too and takes the better of the two as its bar; run and status
    say so under both rules."""
    ar(repo, *start_args("--decision", rule))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    write(repo / "value.txt", "70\n")
    git(repo, "commit", "-qam", "by hand")
    head = git(repo, "rev-parse", "HEAD")
    said = "is the commit of no kept run (a commit made by hand, or the branch moved)"
    warned = ar(repo, "status", "--json").json()["warnings"]
    assert len(warned) == 1 and said in warned[0]
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "half of it undone", "--json").json()
    assert len(record["warnings"]) == 1 and said in record["warnings"][0]
    assert (record["status"], record["decision"]["verdict"]) == ("discard", "worse")
    assert record["decision"]["incumbent_fresh"] == ([70, 70] if rule == "sequential" else [70])
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "value.txt").read_text() == "70\n"
    write(repo / "value.txt", "60\n")  # (better than HEAD: kept, and HEAD is a keep again)
    assert ar(repo, "run", "-d", "better than the hand commit", "--json").json()["status"] \
        == "keep"
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_a_commit_by_hand_whose_head_cannot_be_measured_beside_says_the_pool_was_other_code(
        repo: Path, ar: Tool) -> None:
    # The benchmark needs an ignored file the incumbent's worktree lacks: the run falls back
    # on the last keep's samples, and its warning says they measured other code than HEAD,
    # not only that a machine's load may move.
    write(repo / ".gitignore", "need\n")
    write(repo / "bench.sh", "#!/bin/sh\ncat need >/dev/null || exit 3\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a benchmark that needs an ignored file")
    write(repo / "need", "x\n")
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    write(repo / "value.txt", "70\n")
    git(repo, "commit", "-qam", "by hand")
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "half of it undone", "--json").json()
    said = [w for w in record["warnings"] if "gave no metric in its worktree" in w]
    assert len(said) == 1 and said[0].endswith(
        "this run was decided on the incumbent's earlier samples alone, which measured other "
        "code than HEAD (the last kept run's): its verdict may mislead"), record["warnings"]


@pytest.mark.parametrize("scope", [[], ["--scope", "value.txt"]])
def test_a_shell_redirection_into_the_work_tree_is_no_part_of_the_experiment(
        repo: Path, ar: Tool, scope: list[str]) -> None:
    """``run --json > out.json 2> err.txt`` in the work tree: the shell creates both files
    before the run begins. They were the experiment's new files: set aside as outside the
    scope (the run's answer written to a file already gone), or committed empty by a keep.
    Now the files the command writes its output to are left alone, as files from before the
    experiment are, and a warning says so (in the document the file receives)."""
    import subprocess
    import sys

    ar(repo, *start_args("--decision", "strict", *scope))
    write(repo / "value.txt", "90\n")
    with (repo / "out.json").open("wb") as out, (repo / "err.txt").open("wb") as err:
        subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", "kept",
                        "--json"], cwd=repo, stdout=out, stderr=err, check=True)
    record = json.loads((repo / "out.json").read_text())
    assert (record["status"], record["scope_violations"]) == ("keep", [])
    assert record["warnings"] == [
        "err.txt and out.json, where this command writes its output, are in the work tree: "
        "they are no part of the experiment (never committed, set aside or reverted); write "
        "the output outside the work tree, or under .auto/"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "value.txt"
    assert git(repo, "for-each-ref", "refs/autoresearch/s1/scope/") == ""
    write(repo / "value.txt", "95\n")
    with (repo / "out.json").open("wb") as out:
        subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", "discarded",
                        "--json"], cwd=repo, stdout=out, check=True)
    assert json.loads((repo / "out.json").read_text())["status"] == "discard"
    assert (repo / "err.txt").exists()
    assert git(repo, "status", "--porcelain") == "?? err.txt\n?? out.json"


@pytest.mark.parametrize("then", ["keep", "discard"])
def test_a_redirection_of_measure_or_into_a_tracked_file_is_left_alone(repo: Path, ar: Tool,
                                                                       then: str) -> None:
    """``measure --json > m.json``, then keep or discard: keep refused, the file being new
    since the measurement, and discard deleted it (saving it at the attempt ref). The
    untracked files a command writes its output to are left alone by it and by the commands
    after it. A redirection into a tracked file (``run > run.log`` of a committed run.log)
    committed the file truncated, or reverted it, wiping what the run wrote; it is refused."""
    import subprocess
    import sys

    write(repo / "run.log", "committed\n")
    commit_all(repo)
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n" if then == "keep" else "95\n")
    with (repo / "m.json").open("wb") as out:
        subprocess.run([sys.executable, "-m", "git_autoresearch", "measure", "--json"],
                       cwd=repo, stdout=out, check=True)
    written = (repo / "m.json").read_text()
    measured = json.loads(written)
    assert [w for w in measured["warnings"] if "where this command writes" in w] == [
        "m.json, where this command writes its output, is in the work tree: it is no part "
        "of the experiment (never committed, set aside or reverted); write the output "
        "outside the work tree, or under .auto/"]
    record = ar(repo, then, "-d", "after measure", "--json").json()
    assert record["status"] == then and record["metric"] is not None
    assert (repo / "m.json").read_text() == written
    assert "m.json" not in git(repo, "show", "--name-only", "--format=", "HEAD")
    # A tracked file would be the next run's change, committed or reverted with it: such a
    # redirection is refused before anything is measured or changed.
    write(repo / "value.txt", "85\n")
    for command in (["run", "-d", "logged"], ["measure"], ["discard", "-d", "x"]):
        with (repo / "run.log").open("wb") as out:
            done = subprocess.run([sys.executable, "-m", "git_autoresearch", *command],
                                  cwd=repo, stdout=out, stderr=subprocess.STDOUT)
        assert done.returncode == 2
        assert (repo / "run.log").read_text() == (
            "git autoresearch: run.log, where this command writes its output, is a tracked "
            "file of the work tree, which a run would commit or revert: write the output "
            "outside the work tree, or under .auto/; nothing was measured or changed\n")
        assert (repo / "value.txt").read_text() == "85\n"
        git(repo, "checkout", "--", "run.log")
    assert [r["run"] for r in runs(repo)] == [1, 2]


def test_under_the_strict_rule_a_run_with_no_change_is_never_kept(repo: Path, ar: Tool,
                                                                  tmp_path: Path) -> None:
    """A run with nothing in the scope changed measures the incumbent again: under the strict
    rule too it is a noise probe, discarded however lucky its number (kept, it would become
    the best, a bar that noise set for every run after)."""
    counter = tmp_path / "counter"
    counter.write_text("100\n")
    write(repo / "bench.sh", f'#!/bin/sh\nn=$(cat "{counter}")\necho $((n - 1)) > "{counter}"\n'
                             'echo "score: $n"\n', 0o755)
    git(repo, "commit", "-qam", "a benchmark that gets quicker each time (noise)")
    ar(repo, *start_args("--decision", "strict"))
    record = ar(repo, "run", "-d", "nothing changed", "--json").json()
    assert (record["status"], record["decision"]["verdict"]) == ("discard", "no_change")
    assert record["metric"] < runs(repo)[0]["metric"]  # (a better number, by noise)
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "a change", "--json").json()["status"] == "keep"


def test_a_revert_names_the_files_it_removed(repo: Path, ar: Tool) -> None:
    """A discard removes the files the experiment created (its attempt ref keeps them): they
    are named, as a list a person can read back (a name with a newline or ", " quoted)."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "500\n")
    write(repo / "src" / "MY_NOTES.md", "precious\n")
    write(repo / "src" / "top\nnew.txt", "odd\n")
    out = ar(repo, "run", "-d", "worse").out
    assert '  removed the files it created: src/MY_NOTES.md, "src/top\\nnew.txt" (kept there; ' \
        "git restore --source=refs/autoresearch/s1/attempts/2 -- ':(top,literal)<path>' " \
        f"brings one back {TAKEN_AGAIN})\n" in out
    assert not (repo / "src" / "MY_NOTES.md").exists()
    write(repo / "value.txt", "600\n")
    write(repo / "src" / "again.md", "x\n")
    write(repo / "src" / "staged.md", "y\n")
    git(repo, "add", "src/staged.md")  # a new file staged goes too, and is named
    done = ar(repo, "run", "-d", "worse again", "--json").json()
    assert (done["status"], sorted(done["removed"])) == ("discard",
                                                        ["src/again.md", "src/staged.md"])
    assert not (repo / "src" / "staged.md").exists()
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["removed"] == []


def test_a_keep_after_head_moved_says_why_the_measurement_is_gone(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "measure")
    measured = git(repo, "rev-parse", "--short=7", "HEAD")
    git(repo, "commit", "-qam", "by hand")
    err = ar(repo, "keep", "-d", "k", expect=3).err
    assert err == (f"git autoresearch: nothing to keep: the measurement taken on {measured} was "
                   f"dropped: HEAD moved since (to {git(repo, 'rev-parse', '--short', 'HEAD')}; "
                   f"git reset --soft {measured} takes back what was committed since, where it "
                   "counts again); run git autoresearch measure again, or pass --metric VALUE\n")


def test_a_discard_of_no_change_does_not_say_it_reverted(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--decision", "strict"))
    out = ar(repo, "discard", "-d", "nothing changed").out
    assert "  nothing to revert (no change); the attempt is kept at " in out
    assert "reverted;" not in out
    write(repo / "value.txt", "500\n")
    assert "  reverted; the attempt is kept at " in ar(repo, "discard", "-d", "worse").out


def test_a_command_waiting_for_the_session_lock_says_so(repo: Path, ar: Tool) -> None:
    from git_autoresearch.git import Repo
    from git_autoresearch.session.lock import SessionLock

    ar(repo, *start_args("--decision", "strict"))
    with SessionLock(Repo.discover(repo).scratch, "run", wait=0):
        waited = subprocess.run([sys.executable, "-m", "git_autoresearch", "discard", "-d", "x"],
                                cwd=repo,
                                capture_output=True, text=True, timeout=60,
                                env={**os.environ, "GIT_AUTORESEARCH_LOCK_WAIT": "1.5"})
    assert waited.stderr.startswith(
        f"waiting for the session lock, which another git-autoresearch command holds (pid "
        f"{os.getpid()} run), 1.5s at most\n"), waited.stderr

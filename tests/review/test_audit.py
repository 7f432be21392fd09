"""git autoresearch audit: kept runs measured again against their parents, each side in a
temporary git worktree, interleaved; the verdict recorded in the ledger and shown by log, show
and the dashboard. Real repositories; the benchmark's value is the number in value.txt of the
checkout it runs in, so each side's value is set by its commit."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BIN,
    Tool,
    assert_dies,
    check_document,
    count_u,
    enumerated_counts,
    git,
    ledger_lines,
    start_args,
    tail,
    write,
)

# Appends the value it reports to $AUDIT_ORDER (when set), and can be made to wait.
BENCH = """#!/bin/sh
value=$(cat value.txt)
[ -z "$AUDIT_ORDER" ] || echo "$value $AUTORESEARCH_RUN $AUTORESEARCH_SAMPLE" >> "$AUDIT_ORDER"
if [ -n "$AUDIT_SLEEP" ]; then echo $$ > "$AUDIT_SLEEP"; sleep 60; fi
echo "score: $value"
"""


@pytest.fixture
def session(repo: Path, ar: Tool) -> Path:
    """A session whose kept runs are: 1 the baseline (100), 2 a real gain (80), 3 a change that
    does not move the value (80, kept by hand), 4 a keep that is in truth worse (90, kept with
    a metric given by the caller)."""
    write(repo / "bench.sh", BENCH, 0o755)
    git(repo, "commit", "-q", "-am", "bench that can report its order")
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "a real gain")
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    ar(repo, "keep", "-d", "noise taken for a gain", "--metric", "79")
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "worse, kept on a lucky number", "--metric", "70")
    return repo


def audits(top: Path) -> list[dict[str, Any]]:
    return [line for line in ledger_lines(top) if line.get("type") == "audit"]


def worktrees(top: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in
            git(top, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def scratch(top: Path) -> Path:
    return top / git(top, "rev-parse", "--git-path", "autoresearch")


def assert_clean_up(top: Path) -> None:
    assert worktrees(top) == [str(top)]
    assert not [p.name for p in scratch(top).iterdir() if p.is_dir()]
    assert not (top / ".git" / "worktrees").exists() or \
        not list((top / ".git" / "worktrees").iterdir())


def test_each_keep_gets_its_verdict_recorded(session: Path, ar: Tool) -> None:
    out = ar(session, "audit", "--samples", "3").out
    found = audits(session)
    assert [(a["audited_run"], a["verdict"]) for a in found] == [
        (2, "confirmed"), (3, "within noise"), (4, "regression")]
    commits = git(session, "log", "--format=%h", "-3").split()
    assert [a["commit"] for a in found] == commits[::-1]
    assert [a["parent"] for a in found] == [git(session, "rev-parse", "--short", f"{c}^")
                                            for c in commits[::-1]]
    first = found[0]
    assert first["samples"] == {"parent": [100, 100, 100], "commit": [80, 80, 80]}
    assert first["direction"] == "lower"
    # The effect in a run decision's names: one name, one meaning, in every document.
    assert {k: first[k] for k in ("effect", "effect_low", "effect_high", "relative",
                                  "relative_low", "relative_high", "confidence_level")} == {
        "effect": -20, "effect_low": -20, "effect_high": -20, "relative": -0.2,
        "relative_low": -0.2, "relative_high": -0.2, "confidence_level": 1}
    assert isinstance(first["timestamp"], int)
    assert found[2]["effect"] == 10
    assert "run 2: confirmed" in out and "run 4: regression" in out
    assert "effect -20 [-20, -20] (-20.00% [-20.00%, -20.00%])" in out
    assert_clean_up(session)


def test_noisy_samples_are_judged_by_the_rank_test(repo: Path, ar: Tool, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Each sample reads the next number of a shared list: the parent's and the commit's
    # samples overlap, so a small gain is within noise; a clear one is confirmed.
    write(repo / "bench.sh", "#!/bin/sh\nn=$(cat \"$AUDIT_COUNTER\")\n"
          "echo $((n + 1)) > \"$AUDIT_COUNTER\"\n"
          "echo \"score: $(( $(cat value.txt) + n % 3 ))\"\n", 0o755)
    git(repo, "commit", "-q", "-am", "a noisy bench")
    counter = write(tmp_path / "counter", "0\n")
    monkeypatch.setenv("AUDIT_COUNTER", str(counter))
    ar(repo, *start_args())
    write(repo / "value.txt", "99\n")
    ar(repo, "keep", "-d", "one percent, under the noise", "--metric", "90")
    write(repo / "value.txt", "50\n")
    ar(repo, "keep", "-d", "a clear gain", "--metric", "50")
    document = ar(repo, "audit", "--samples", "6", "--json").json()
    verdicts = [(a["audited_run"], a["verdict"]) for a in document["audits"]]
    assert verdicts == [(2, "within noise"), (3, "confirmed")]
    noisy = document["audits"][0]
    assert noisy["effect_low"] < 0 <= noisy["effect_high"]
    assert 0 < noisy["p_better"] < 1 and noisy["confidence_level"] < 1
    assert document["audits"] == audits(repo)


def test_the_sides_take_turns(session: Path, ar: Tool, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    order = tmp_path / "order"
    monkeypatch.setenv("AUDIT_ORDER", str(order))
    ar(session, "audit", "2", "--samples", "3")
    assert [line.split()[:2] for line in order.read_text().splitlines()] == \
        [["100", "2"], ["80", "2"]] * 3
    # Each side's samples are numbered 1, 2, 3 (AUTORESEARCH_SAMPLE), as in a measurement.
    assert [line.split()[2] for line in order.read_text().splitlines()] == \
        ["1", "1", "2", "2", "3", "3"]


def test_higher_is_better_turns_the_verdicts(repo: Path, ar: Tool) -> None:
    ar(repo, *[a if a != "lower" else "higher" for a in start_args()])
    write(repo / "value.txt", "120\n")
    ar(repo, "run", "-d", "higher now")
    line = ar(repo, "audit", "--samples", "2", "--json").json()["audits"][0]
    assert (line["verdict"], line["direction"], line["effect"]) == \
        ("confirmed", "higher", 20)


def test_the_session_work_tree_index_and_head_are_untouched(session: Path, ar: Tool) -> None:
    write(session / "value.txt", "55\n")  # an experiment in progress
    write(session / "src" / "lib.py", "staged\n")
    git(session, "add", "src/lib.py")
    write(session / "new.txt", "untracked\n")
    before = (git(session, "status", "--porcelain=v2", "-z", "--untracked-files=all"),
              git(session, "rev-parse", "HEAD"), git(session, "symbolic-ref", "HEAD"),
              (session / ".git" / "index").read_bytes())
    ar(session, "audit", "2", "--samples", "1")
    after = (git(session, "status", "--porcelain=v2", "-z", "--untracked-files=all"),
             git(session, "rev-parse", "HEAD"), git(session, "symbolic-ref", "HEAD"),
             (session / ".git" / "index").read_bytes())
    assert after == before
    assert (session / "value.txt").read_text() == "55\n"
    assert (session / "new.txt").read_text() == "untracked\n"
    assert audits(session)[0]["samples"] == {"parent": [100], "commit": [80]}


def test_log_show_and_the_dashboard_show_audits(session: Path, ar: Tool) -> None:
    ar(session, "audit", "2", "4", "--samples", "2")
    table = ar(session, "log").out.splitlines()
    assert [line.split()[:3] for line in table[2:6]] == [
        ["1", "keep", "100"], ["2", "keep", "✓"], ["3", "keep", "79"], ["4", "keep", "✗"]]
    assert table[-1] == ("audited (git autoresearch audit): ✓ confirmed, ~ within noise, "
                         "✗ regression, ! crashed")
    rows = ar(session, "log", "--json").json()["runs"]
    assert [row["audit"] and row["audit"]["verdict"] for row in rows] == \
        [None, "confirmed", None, "regression"]
    shown = ar(session, "show", "4", "--json").json()
    assert [a["verdict"] for a in shown["audits"]] == ["regression"]
    # status's best and incumbent carry their latest audit as log does: the audit line.
    best = ar(session, "status", "--json").json()["segment"]["best"]
    assert best["audit"]["verdict"] and best["audit"] == rows[best["run"] - 1]["audit"]
    assert "audit: " in ar(session, "status").out
    text = ar(session, "show", "2").out
    assert "audit " in text and "run 2: confirmed" in text
    assert "commit median 80 (2), parent median 100 (2)" in text
    ar(session, "dashboard")
    page = (session / ".auto" / "dashboard.html").read_text()
    assert '<span class="audit" title="audit: confirmed, effect -20.00%">✓</span>' in page
    assert '<span class="audit" title="audit: regression, effect +12.50%">✗</span>' in page


def test_a_later_audit_wins_in_log_and_show_keeps_them_all(session: Path, ar: Tool,
                                                            tmp_path: Path) -> None:
    ar(session, "audit", "3", "--samples", "1")
    ar(session, "audit", "3", "--samples", "1")
    assert len(ar(session, "show", "3", "--json").json()["audits"]) == 2
    assert ar(session, "log", "--json").json()["runs"][2]["audit"]["verdict"] == "within noise"


def test_an_audit_line_is_mirrored_on_the_state_ref(session: Path, ar: Tool) -> None:
    ar(session, "audit", "2", "--samples", "1")
    assert ar(session, "doctor", "--json").json()["findings"] == []


def test_the_loop_reads_past_audit_lines(session: Path, ar: Tool) -> None:
    ar(session, "audit", "2", "--samples", "1")
    write(session / "value.txt", "60\n")
    result = ar(session, "run", "-d", "after an audit", "--json").json()
    assert (result["run"], result["status"]) == (5, "keep")
    assert ar(session, "status", "--json").json()["segment"]["runs"] == 5
    ar(session, "doctor")


@pytest.mark.parametrize("args,said", [
    (["9"], "no run 9 in the ledger (runs are 1 to 4)"),
    (["1"], "run 1 is the baseline of its segment"),
    (["2", "x"], "Invalid value"),
    (["--samples", "0"], "Invalid value"),
])
def test_a_bad_run_is_a_usage_error(session: Path, ar: Tool, args: list[str],
                                    said: str) -> None:
    assert said in ar(session, "audit", *args, expect=2).err
    assert audits(session) == []


def test_a_run_that_is_no_keep_is_refused(session: Path, ar: Tool) -> None:
    write(session / "value.txt", "200\n")
    ar(session, "run", "-d", "worse")
    assert "run 5 is a discard, not a keep" in ar(session, "audit", "5", expect=2).err
    ar(session, "keep", "-d", "nothing to commit", "--metric", "90")
    assert "run 6 is a keep that committed nothing" in ar(session, "audit", "6",
                                                          expect=2).err


def test_no_session_exits_3(repo: Path, ar: Tool) -> None:
    result = ar(repo, "audit", "--json", expect=3)
    assert result.json()["exit_code"] == 3


def test_nothing_to_audit_is_said(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    result = ar(repo, "audit", "--json")
    assert result.json()["audits"] == []
    assert result.err == ("warning: no committed keep after the baseline in the current "
                          "segment: nothing to audit\n")


def test_a_crashing_side_is_recorded_and_its_worktrees_removed(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "not a number\n")
    ar(repo, "keep", "-d", "breaks the benchmark", "--metric", "50")
    line = ar(repo, "audit", "--json").json()["audits"][0]
    assert line["verdict"] == "crash" and line["effect"] is None
    assert line["samples"] == {"parent": [100], "commit": []}
    assert line["reason"].startswith(f"commit {line['commit']}, sample 1: ")
    assert "score: not a number" in line["tail"]
    assert ar(repo, "log").out.splitlines()[3].split()[:3] == ["2", "keep", "!"]
    assert_clean_up(repo)


def test_the_tool_failing_mid_audit_removes_the_worktrees(session: Path, ar: Tool,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    # The seam: the measurement itself, raising as a bug in the tool would, after a sample.
    from git_autoresearch.measure.samples import measure as real

    calls: list[Path] = []

    def failing(*args: Any, top: Path, **kwargs: Any) -> Any:
        calls.append(top)
        if len(calls) == 3:
            raise RuntimeError("a bug")
        return real(*args, top=top, **kwargs)

    monkeypatch.setattr("git_autoresearch.review.audit.measure", failing)
    assert "internal error: RuntimeError: a bug" in ar(session, "audit", expect=1).err
    assert [p.name for p in calls] == ["parent", "commit", "parent"]
    assert_clean_up(session)
    assert audits(session) == []


def test_the_audit_line_is_written_under_the_session_lock(session: Path, ar: Tool,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from git_autoresearch.session.lock import SessionLock

    monkeypatch.setenv("GIT_AUTORESEARCH_LOCK_WAIT", "0.3")
    with SessionLock(scratch(session), "a test"):
        err = ar(session, "audit", "2", "--samples", "1", expect=3).err
    assert "holds the session lock (pid" in err
    assert err.rstrip().endswith("the audit of run 2 (confirmed) was not recorded")
    assert audits(session) == []
    assert_clean_up(session)


def test_an_untracked_script_the_command_names_is_brought_along(repo: Path, ar: Tool) -> None:
    # .auto/ is never committed: a measure script there must still run on both sides.
    write(repo / ".auto" / "measure.sh", 'echo "score: $(cat value.txt)"\n')
    ar(repo, *[a if a != "sh bench.sh" else "sh .auto/measure.sh" for a in start_args()],
       "--force")
    write(repo / "value.txt", "70\n")
    ar(repo, "keep", "-d", "gain", "--metric", "70")
    line = ar(repo, "audit", "--samples", "1", "--json").json()["audits"][0]
    assert line["samples"] == {"parent": [100], "commit": [70]}


def sleeping_audit(session: Path, tmp_path: Path, *extra: str
                   ) -> tuple[subprocess.Popen[bytes], int]:
    """An audit of run 2 whose benchmark sleeps: the process, once the benchmark runs, and the
    benchmark's pid."""
    pidfile = tmp_path / "bench.pid"
    env = {**os.environ, "AUDIT_SLEEP": str(pidfile)}
    proc = subprocess.Popen([str(BIN / "git-autoresearch-audit"), "2", *extra], cwd=session,
                            env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    return proc, int(pidfile.read_text())


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)],
                         ids=["INT", "TERM"])
def test_a_signal_mid_audit_removes_the_worktrees(session: Path, tmp_path: Path,
                                                  sig: int, code: int) -> None:
    proc, bench = sleeping_audit(session, tmp_path)
    assert len(worktrees(session)) == 3  # the session's, the parent's and the commit's
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err.decode()
    assert_dies(bench, "the benchmark")
    assert_clean_up(session)
    assert audits(session) == []


def test_a_signal_mid_audit_says_what_an_audit_keeps(session: Path, tmp_path: Path) -> None:
    proc, _ = sleeping_audit(session, tmp_path, "--json")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert check_document(json.loads(out))["error"] == (
        "interrupted (SIGINT); each audit finished before it is in the ledger")
    assert err.decode().endswith("\ngit autoresearch audit: interrupted\n")
    assert b"no run was recorded" not in out + err


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_what_a_killed_audit_left_is_swept_by_the_next(session: Path, tmp_path: Path,
                                                      ar: Tool, reaped: bool) -> None:
    proc, bench = sleeping_audit(session, tmp_path)
    proc.kill()
    if reaped:
        proc.communicate()
    else:  # ended, but not reaped by its parent yet: a zombie, whose pid still answers kill 0
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/stat").read_bytes().rpartition(b")")[2].split()[0] \
                != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.02)
    os.killpg(bench, signal.SIGKILL)  # its benchmark, in a group of its own
    assert len(worktrees(session)) == 3
    ar(session, "audit", "3", "--samples", "1")
    assert_clean_up(session)
    proc.communicate()


def test_the_program_runs_through_git(session: Path) -> None:
    proc = subprocess.run(["git", "autoresearch", "audit", "2", "--samples", "1", "--json"],
                          cwd=session / "src", capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert check_document(json.loads(proc.stdout))["audits"][0]["verdict"] == "confirmed"
    assert_clean_up(session)


def test_too_few_samples_to_tell_is_said_so_not_within_noise(repo: Path, ar: Tool) -> None:
    """A noisy metric audited with 2 samples a side: the rank test's smallest p-value (1/6)
    can never reach 5%, so a 50% gain is "too few samples", not "within noise" (which would
    drop the keep from finalize); with 3 a side it is confirmed."""
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(( $(cat value.txt) + "
          "${AUTORESEARCH_SAMPLE:-1} ))\"\n", 0o755)
    git(repo, "commit", "-q", "-am", "a noisy bench")
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "50\n")
    ar(repo, "run", "-d", "half")
    few = ar(repo, "audit", "--samples", "2", "--json").json()["audits"][0]
    assert (few["verdict"], few["effect"]) == ("too few samples", -50)
    shown = ar(repo, "log").out
    assert "? too few samples" in shown.splitlines()[-1]
    enough = ar(repo, "audit", "--samples", "3", "--json").json()["audits"][0]
    assert enough["verdict"] == "confirmed"


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_an_audit_confirms_at_five_percent_and_gives_the_90_percent_interval(
        direction: str) -> None:
    """An audit is the sequential rule at its last look at a one-sided 5 % and its interval at
    90 % (the numbers written out here): among 5 commit samples against 5 of the parent, every
    Mann-Whitney count whose p-value of better is at most 0.05 confirms the keep, the others
    up to 0.10 (which a keep's own 10 % would take) are within noise; the effect and p-values
    are those counted from the orderings."""

    from git_autoresearch.review.audit import Target, judge

    sign = -1.0 if direction == "higher" else 1.0
    parent = [sign * 10.0 * (i + 1) for i in range(5)]
    target = Target(3, "c" * 40, "p" * 40)
    verdicts = {}
    for u in range(26):
        above = [u // 5 + (i < u % 5) for i in range(5)]
        commit = [sign * (10.0 * k + 5 + 0.01 * i) for i, k in enumerate(above)]
        audit = judge(target, {"parent": parent, "commit": commit}, direction)
        ours = [sign * p for p in parent]
        p_better = tail(count_u(ours, [sign * c for c in commit]), 5, 5)
        assert (audit.p_better, audit.p_worse) == (p_better, tail(25 - u, 5, 5))
        verdicts[u] = audit.verdict
        counts = enumerated_counts(5, 5)
        cut = max(1, max(c for c in range(len(counts) + 1)
                         if sum(counts[:c]) / sum(counts) <= 0.05))
        diffs = sorted(c - p for c in commit for p in parent)
        # (a positive metric falls no further than -100 %: minus the parent's median, 30)
        floor = -30.0 if direction == "lower" else -math.inf
        assert audit.effect is not None
        assert (audit.effect.low, audit.effect.high, audit.effect.confidence) == \
            (max(diffs[cut - 1], floor), max(diffs[len(diffs) - cut], floor),
             1 - 2 * sum(counts[:cut]) / sum(counts))
        if p_better <= 0.05:
            assert audit.verdict == "confirmed", u
        elif p_better <= 0.10:
            assert audit.verdict == "within noise", u
    assert sorted(set(verdicts.values())) == ["confirmed", "regression", "within noise"]
    assert [u for u, v in verdicts.items() if v == "confirmed"] == [0, 1, 2, 3, 4]  # 12/252


def test_an_audits_medians_are_printed_without_float_noise() -> None:
    """The median of two samples is their mean, computed: 4.03 and 4.09 print as 4.06, not
    4.0600000000000005."""
    from git_autoresearch.commands.audit import audit_lines

    lines = audit_lines({"audited_run": 2, "verdict": "within noise", "commit": "abc1234",
                         "parent": "def5678", "samples": {"commit": [4.03, 4.09],
                                                          "parent": [5.0, 5.2]}}, "ms")
    assert "commit median 4.06 ms (2), parent median 5.1 ms (2)" in lines[1], lines


def test_a_keep_of_an_earlier_segment_is_measured_with_that_segments_command(
        repo: Path, ar: Tool) -> None:
    # Segment 1 measures with bench2.sh (twice the value, higher is better), a script the
    # commits of segment 0 lack: run 2 is audited by bench.sh, lower is better, as it was kept.
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "a gain", "--json").json()["status"] == "keep"
    write(repo / "bench2.sh", '#!/bin/sh\necho "score: $(( $(cat value.txt) * 2 ))"\n', 0o755)
    git(repo, "add", "bench2.sh")
    git(repo, "commit", "-q", "-m", "a second benchmark")
    ar(repo, "start", "--new-segment", "--command", "sh bench2.sh", "--direction", "higher")
    done = ar(repo, "audit", "2", "--samples", "3", "--json").json()["audits"]
    assert [(a["verdict"], a["direction"], a["samples"]) for a in done] == [
        ("confirmed", "lower", {"parent": [100, 100, 100], "commit": [80, 80, 80]})]
    assert audits(repo)[-1]["verdict"] == "confirmed"


def test_a_keep_of_an_earlier_segment_gets_that_segments_shared_paths(
        repo: Path, ar: Tool) -> None:
    # Segment 0's benchmark reads the ignored folder cache/ (its shared path); segment 1's
    # shares cache2/ instead: run 2 is audited with cache/ linked in, not a false crash.
    write(repo / ".gitignore", "cache/\ncache2/\n")
    write(repo / "cache" / "factor", "1\n")
    write(repo / "cache2" / "factor", "2\n")
    write(repo / "bench.sh", '#!/bin/sh\necho "score: $(( $(cat value.txt) * '
          '$(cat cache/factor) ))"\n', 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a benchmark that reads cache/")
    ar(repo, *start_args("--shared-paths", "cache"))
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "a gain", "--json").json()["status"] == "keep"
    ar(repo, "start", "--new-segment", "--shared-paths", "cache2")
    done = ar(repo, "audit", "2", "--samples", "3", "--json").json()["audits"]
    assert [(a["verdict"], a["samples"]) for a in done] == [
        ("confirmed", {"parent": [100, 100, 100], "commit": [80, 80, 80]})]


def test_show_and_diff_give_an_earlier_segments_runs_in_its_own_unit(repo: Path,
                                                                      ar: Tool) -> None:
    ar(repo, *start_args("--metric-unit", "ms"))
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "a gain", "--json").json()["status"] == "keep"
    ar(repo, "audit", "2", "--samples", "3")
    write(repo / "bench2.sh", '#!/bin/sh\necho "score: $(( $(cat value.txt) * 2 ))"\n', 0o755)
    git(repo, "add", "bench2.sh")
    git(repo, "commit", "-q", "-m", "a second benchmark")
    ar(repo, "start", "--new-segment", "--command", "sh bench2.sh", "--metric-unit", "ops",
       "--direction", "higher")
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "more", "--json").json()["status"] == "keep"
    shown = ar(repo, "show", "2").out
    assert "median 100 ms" in shown and " ops" not in shown, shown
    # Each audit line says the metric its effect is in, whatever segment is current.
    again = ar(repo, "audit", "2", "--samples", "2", "--json").json()
    assert (again["metric_unit"], again["audits"][0]["metric_unit"]) == ("ops", "ms")
    assert [(a["metric_name"], a["metric_unit"]) for a in audits(repo)] == [("score", "ms")] * 2
    assert ar(repo, "diff", "2").out.startswith("# its parent ")
    assert "(keep, 80 ms)" in ar(repo, "diff", "2").out.splitlines()[0]
    # Two runs of segments that measure differently: no change between them.
    assert ar(repo, "diff", "2", "4", "--json").json()["change_pct"] is None
    head = git(repo, "rev-parse", "--short=7", "HEAD")
    assert ar(repo, "diff", "2", "4").out.splitlines()[0].endswith(f"(keep, 180 ops) {head}")
    # The dashboard's card of a finalize of segment 0: in segment 0's unit.
    ar(repo, "finalize", "--segment", "0", "--samples", "2")
    ar(repo, "dashboard", "-o", "page.html")
    assert "final minus base -20 ms" in (repo / "page.html").read_text()


def test_an_earlier_segment_measured_by_an_untracked_script_since_changed_is_refused(
        repo: Path, ar: Tool) -> None:
    # Segment 0 measured with .auto/measure.sh (never committed); the user rewrote it for
    # segment 1: run 2 cannot be measured as it was kept, which audit and finalize say
    # before measuring (a false crash before), recording nothing.
    write(repo / ".auto" / "measure.sh", 'echo "score: $(cat value.txt)"\n')
    ar(repo, *[a if a != "sh bench.sh" else "sh .auto/measure.sh" for a in start_args()],
       "--force")
    write(repo / "value.txt", "70\n")
    assert ar(repo, "run", "-d", "gain", "--json").json()["status"] == "keep"
    ar(repo, "start", "--new-segment", "--max-samples", "8")
    # Unchanged: audited as kept.
    line = ar(repo, "audit", "2", "--samples", "1", "--json").json()["audits"][0]
    assert line["samples"] == {"parent": [100], "commit": [70]}
    write(repo / ".auto" / "measure.sh", 'echo "other: $(cat value.txt)"\n')
    ar(repo, "start", "--new-segment", "--metric-pattern", r"other: (\S+)")
    before = audits(repo)
    for args in (["audit", "2", "--samples", "1"], ["finalize", "--segment", "0", "--force"]):
        err = ar(repo, *args, expect=3).err
        assert err == ("git autoresearch: run 2 was measured with .auto/measure.sh as it was "
                       "when segment 0 began, and it has changed since: it cannot be measured "
                       "as it was kept (put that version back to measure it)\n"), err
    assert audits(repo) == before


def test_a_segment_header_records_the_digests_of_small_untracked_inputs_only(
        repo: Path, ar: Tool) -> None:
    # The script and a small ignored data file are recorded; a data file of 17 MiB is not
    # read at every start.
    write(repo / ".gitignore", "data/\n")
    write(repo / "data" / "small", "1\n")
    (repo / "data" / "big").write_bytes(b"\0" * (17 << 20))
    write(repo / ".auto" / "measure.sh", 'cat data/small data/big >/dev/null\n'
          'echo "score: $(cat value.txt)"\n')
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore data")
    ar(repo, *[a if a != "sh bench.sh" else "sh .auto/measure.sh data/small data/big"
               for a in start_args()], "--force")
    header = next(line for line in ledger_lines(repo) if line.get("type") == "config")
    assert sorted(header["inputs"]) == [".auto/measure.sh", "data/small"]
    assert all(v.startswith("sha256:") and len(v) == 71 for v in header["inputs"].values())

"""Several agents at once on one machine: workers on linked worktrees sharing one ledger, keeps
replayed onto an incumbent that moved, the session branch advanced by compare-and-swap only,
and nothing lost when a worker is killed at any step of a keep or a replay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import (
    TOOL,
    WORKER_STEPS,
    Tool,
    check_document,
    git,
    ledger_lines,
    left_behind,
    make_crew,
    paused_at,
    runs,
    start_args,
    tool,
    write,
)

BRANCH = "autoresearch/s1"


@pytest.fixture
def crew(repo: Path, ar: Tool) -> tuple[Path, Path, Path]:
    """:func:`make_crew` with the default options."""
    return make_crew(repo, ar)


def test_workers_share_one_ledger_and_keep_on_the_moved_incumbent(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """w1 keeps; w2's candidate, made on the old incumbent, is replayed onto w1's keep before
    it is measured: its record says so, and every keep on the session branch is the child of
    the commit it was measured on."""
    main, w1, w2 = crew
    assert git(main, "symbolic-ref", "--short", "HEAD") == "autoresearch-workers/s1/main"
    base = git(main, "rev-parse", "--short", BRANCH)
    write(w1 / "value.txt", "90\n")
    first = ar(w1, "run", "-d", "value 90", "--json").json()
    assert (first["run"], first["status"], first["metric"], first["worker"]) == (
        2, "keep", 190, "w1")
    assert "replayed" not in first
    assert first["warnings"] == [], "w1 is at its own keep: nothing to follow"
    write(w2 / "extra.txt", "80\n")
    second = ar(w2, "run", "-d", "extra 80", "--json").json()
    assert (second["run"], second["status"], second["metric"], second["worker"]) == (
        3, "keep", 170, "w2"), "measured again on w1's keep: 90 + 80"
    assert second["replayed"] == {"from": base, "onto": first["commit"],
                                  "kept_meanwhile": [2],
                                  "saved_at": "refs/autoresearch/s1/replays/3"}
    assert git(main, "rev-parse", "--short", BRANCH) == second["commit"]
    assert git(main, "rev-parse", "--short", f"{BRANCH}^") == first["commit"]
    assert git(main, "rev-parse", "--short", f"{BRANCH}^^") == base
    assert git(main, "show", f"{BRANCH}:value.txt") == "90"
    assert git(main, "show", f"{BRANCH}:extra.txt") == "80"
    # One ledger, in the main work tree; a worker's .auto is a link to it.
    assert [(r["run"], r.get("worker")) for r in runs(main)] == [
        (1, None), (2, "w1"), (3, "w2")]
    assert (w1 / ".auto").resolve() == (main / ".auto").resolve()
    listed = {w["worker"]: w for w in ar(main, "worker", "list", "--json").json()["workers"]}
    assert set(listed) == {"main", "w1", "w2"}
    assert (listed["w1"]["behind"], listed["w2"]["behind"]) == (True, False)
    assert listed["w2"]["last_run"] == {"run": 3, "status": "keep",
                                        "description": "extra 80"}
    assert git(w2, "status", "--porcelain") == ""
    shown = ar(main, "log").out.splitlines()
    assert shown[0].endswith("commit   worker    description")
    assert shown[2].split()[-2:] == ["main", "baseline"]
    assert shown[3].split()[-3:] == ["w1", "value", "90"]
    assert shown[4].split()[-3:] == ["w2", "extra", "80"]
    for where in (main, w1, w2):  # a worker on its own branch is where it should be
        assert ar(where, "status", "--json").json()["warnings"] == []
        assert ar(where, "doctor", "--json").json()["findings"] == []


def test_a_candidate_that_conflicts_with_a_keep_is_discarded_and_saved(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """Both change value.txt: the second cannot be replayed; it is a discard naming the
    conflict, its candidate at its attempt ref, and the worker then follows the incumbent."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    write(w2 / "value.txt", "50\n")
    record = ar(w2, "run", "-d", "value 50", "--json").json()
    assert (record["run"], record["status"]) == (3, "discard")
    assert record["reason"] == ("conflicts with run(s) 2 kept meanwhile by other workers "
                                "(value.txt)")
    assert record["replayed"]["conflicts"] == ["value.txt"]
    assert git(main, "show", f"{record['attempt_ref']}:value.txt") == "50"
    assert (w2 / "value.txt").read_text() == "90\n", "w2 follows the incumbent"
    assert git(w2, "rev-parse", "HEAD") == git(main, "rev-parse", BRANCH)
    assert git(main, "show", f"{BRANCH}:value.txt") == "90"


def test_keep_by_hand_replays_and_asks_for_a_new_measurement(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """keep in a worker whose incumbent moved after its measurement is refused (exit 3) with
    the candidate replayed onto the incumbent; measured again, it keeps on the incumbent."""
    main, w1, w2 = crew
    write(w2 / "extra.txt", "80\n")
    assert ar(w2, "measure", "--json").json()["metric"] == 180
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    refused = ar(w2, "keep", "-d", "extra 80", expect=3)
    # w2's measurement holds run 2, so w1's keep is run 3.
    assert "the incumbent moved since this candidate was measured (run(s) 3 kept by other " \
           "workers): the candidate was replayed onto the incumbent" in refused.err
    assert (w2 / "value.txt").read_text() == "90\n"
    assert (w2 / "extra.txt").read_text() == "80\n"
    assert git(w2, "rev-parse", "HEAD") == git(main, "rev-parse", BRANCH)
    ar(w2, "measure")
    kept = ar(w2, "keep", "-d", "extra 80", "--json").json()
    assert (kept["run"], kept["metric"]) == (2, 170)
    assert git(main, "rev-parse", "--short", BRANCH) == kept["commit"]


def test_runs_measured_at_once_get_distinct_numbers(crew: tuple[Path, Path, Path],
                                                     ar: Tool) -> None:
    """A measurement pending in w1 holds its run number: w2's run takes the next, and w1's
    keep records the number it measured under."""
    main, w1, w2 = crew
    from git_autoresearch.git import Repo
    from git_autoresearch.session.lock import SessionLock

    write(w1 / "value.txt", "90\n")
    assert ar(w1, "measure", "--json").json()["metric"] == 190
    listed = ar(main, "worker", "list", "--json").json()["workers"]
    doing = {w["worker"]: w["measuring"] for w in listed}
    assert doing["w1"] is None, "no command runs there: the held number is idle"
    with SessionLock(Repo.discover(w1).scratch, "run"):
        doing = {w["worker"]: w["measuring"]
                 for w in ar(main, "worker", "list", "--json").json()["workers"]}
    assert doing["w1"] == 2
    write(w2 / "extra.txt", "99\n")
    assert ar(w2, "run", "-d", "extra 99", "--json").json()["run"] == 3
    assert ar(w1, "discard", "-d", "value 90", "--json").json()["run"] == 2
    assert ar(main, "run", "-d", "nothing", "--json").json()["run"] == 4
    assert sorted(r["run"] for r in runs(main)) == [1, 2, 3, 4]


def test_workers_running_at_the_same_time_lose_no_run(crew: tuple[Path, Path, Path]) -> None:
    """Two workers' runs started at once (separate processes): both recorded, distinct
    numbers, the branch linear with each keep on its parent."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "90\n")
    write(w2 / "extra.txt", "80\n")
    procs = [subprocess.Popen([*TOOL, "run", "-d", f"from {w.name}", "--json"], cwd=w,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in (w1, w2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    recorded = sorted((r["run"], r["worker"], r["status"]) for r in runs(main)[1:])
    assert recorded == [(2, "w1", "keep"), (3, "w2", "keep")] or recorded == [
        (2, "w2", "keep"), (3, "w1", "keep")]
    assert git(main, "show", f"{BRANCH}:value.txt") == "90"
    assert git(main, "show", f"{BRANCH}:extra.txt") == "80"
    assert len(git(main, "rev-list", f"{BRANCH}~2..{BRANCH}").split()) == 2


def test_remove_refuses_unrecorded_changes_and_the_last_puts_main_back(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    main, w1, w2 = crew
    write(w1 / "value.txt", "42\n")
    refused = ar(main, "worker", "remove", "w1", expect=3)
    assert refused.err.strip() == (
        "git autoresearch: worker w1 has unrecorded changes or files (value.txt): record them "
        "(git autoresearch discard, in its worktree), or remove it with --force, which saves "
        "them on a ref first")
    ar(w1, "discard", "-d", "value 42")
    attempt = runs(main)[-1]["attempt_ref"]
    assert ar(main, "worker", "remove", "w1").out.strip() == f"removed worker w1 ({w1})"
    assert not w1.exists()
    assert git(main, "show", f"{attempt}:value.txt") == "42", "its attempts stay"
    write(w2 / "extra.txt", "80\n")
    ar(w2, "run", "-d", "extra 80")
    said = ar(main, "worker", "remove", "w2").out.strip()
    assert said == f"removed worker w2 ({w2}); the main work tree is back on {BRANCH}"
    assert git(main, "symbolic-ref", "--short", "HEAD") == BRANCH
    assert not w2.parent.exists(), "the empty workers' folder goes too"
    assert (main / "extra.txt").read_text() == "80\n", "moved to the incumbent"
    assert git(main, "status", "--porcelain") == ""
    assert ar(main, "worker", "list", "--json").json()["workers"] == []
    assert ar(main, "run", "-d", "alone again", "--json").json()["run"] == 4
    assert "worker" not in runs(main)[-1]


def test_worker_commands_refuse_bad_input(crew: tuple[Path, Path, Path], ar: Tool) -> None:
    main, w1, _ = crew
    assert ar(main, "worker", "add", "--name", "a/b", expect=2).err.strip() == (
        "git autoresearch: bad worker name 'a/b': letters, digits, - and _, up to 40, a letter "
        "or digit first, not 'main' or 'HEAD'")
    assert ar(main, "worker", "add", "--name", "w1", expect=3).err.strip() == (
        "git autoresearch: worker w1 exists already (git autoresearch worker list)")
    assert ar(main, "worker", "remove", "main", expect=3).err.strip().startswith(
        "git autoresearch: worker main is the main work tree")
    assert ar(main, "worker", "remove", "nobody", expect=3).err.strip() == (
        "git autoresearch: no worker nobody in session s1 (git autoresearch worker list)")
    assert ar(w1, "worker", "add", expect=3).err.strip().startswith(
        "git autoresearch: this is worker w1's worktree")




@pytest.mark.parametrize("step", WORKER_STEPS)
def test_a_worker_killed_in_a_keep_or_a_replay_loses_nothing(
        crew: tuple[Path, Path, Path], ar: Tool, step: str) -> None:
    """A worker killed between its keep commit and the session branch's advance, or at any
    step of a replay: the next command finishes the job, the candidate is never lost, and the
    branch ends with each keep on its parent."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    write(w2 / "extra.txt", "80\n")
    env = {"GIT_AUTORESEARCH_DIE_AT": step}
    if step == "keep:before-advance":  # a plain keep, no replay: w1 keeps on its own tip
        write(w1 / "extra.txt", "80\n")
        killed = tool(w1, "run", "-d", "killed", env=env)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        done = ar(w1, "resume", "--json").json()
        assert done["actions"][0].startswith("finished the interrupted keep of run 3")
        assert left_behind(w1) == []
        assert git(main, "show", f"{BRANCH}:extra.txt") == "80"
        assert git(main, "rev-parse", BRANCH) == git(w1, "rev-parse", "HEAD")
        return
    killed = tool(w2, "run", "-d", "killed", env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert git(main, "show", "refs/autoresearch/s1/replays/3:extra.txt") == "80"
    incumbent = git(main, "rev-parse", "--short", BRANCH)
    assert ar(w2, "resume", "--json").json()["actions"] == [
        f"finished the interrupted replay of run 3's candidate onto {incumbent}: it is in the "
        "work tree, to be measured"]
    assert left_behind(w2) == []
    assert (w2 / "extra.txt").read_text() == "80\n"
    assert (w2 / "value.txt").read_text() == "90\n"
    record = ar(w2, "run", "-d", "carries on", "--json").json()
    assert (record["run"], record["status"], record["metric"]) == (3, "keep", 170)
    assert git(main, "show", f"{BRANCH}:extra.txt") == "80"
    assert git(main, "show", f"{BRANCH}:value.txt") == "90"
    assert git(main, "rev-parse", "--short", f"{BRANCH}^") == runs(main)[1]["commit"], \
        "kept on w1's keep, the commit it was measured on again"
    assert sorted(r["run"] for r in runs(main)) == [1, 2, 3]


def test_a_stale_candidate_is_measured_on_the_incumbent_not_judged_against_it(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A gain made on an old base is replayed onto the incumbent before it is measured: w1
    kept 100 -> 10 (score 110); w2's 100 -> 95 alone scores 195, worse than 110, but on the
    incumbent it scores 105, a keep."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "10\n")
    ar(w1, "run", "-d", "value 10")
    write(w2 / "extra.txt", "95\n")
    record = ar(w2, "run", "-d", "extra 95", "--json").json()
    assert (record["status"], record["metric"], record["replayed"]["kept_meanwhile"]) == (
        "keep", 105, [2])
    assert git(main, "show", f"{BRANCH}:extra.txt") == "95"
    assert git(main, "show", f"{BRANCH}:value.txt") == "10"


def test_the_session_branch_checked_out_somewhere_stops_a_keep(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """With workers the session branch is checked out nowhere: when someone checks it out
    (in the main work tree), a worker's keep is refused before anything changes, naming it."""
    main, w1, _ = crew
    git(main, "switch", "-q", BRANCH)
    write(w1 / "value.txt", "90\n")
    refused = ar(w1, "run", "-d", "value 90", expect=3)
    assert refused.err.strip() == (
        f"git autoresearch: the session branch {BRANCH} is checked out in {main}: with "
        "workers, it is checked out nowhere and moves only by keeps; there, git switch "
        "autoresearch-workers/s1/main (or the worker's own branch); nothing was recorded")
    assert (w1 / "value.txt").read_text() == "90\n"
    assert len(runs(main)) == 1


def test_a_worktree_whose_add_was_killed_before_its_marker_is_still_a_worker(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """worker add killed between git worktree add and the marker: the worktree is still
    known as a worker by its branch, reads the main work tree's session, and runs."""
    main, w1, _ = crew
    marker = Path(git(w1, "rev-parse", "--git-path", "autoresearch"))
    if not marker.is_absolute():
        marker = w1 / marker
    (marker / "worker.json").unlink()
    assert ar(w1, "status", "--json").json()["session_id"] == "s1"
    write(w1 / "value.txt", "90\n")
    record = ar(w1, "run", "-d", "value 90", "--json").json()
    assert (record["run"], record["worker"], record["status"]) == (2, "w1", "keep")
    assert (w1 / ".auto").resolve() == (main / ".auto").resolve(), "no second .auto/"


def test_remove_keeps_what_a_worker_left_and_waits_for_a_running_command(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A worker's protected or untracked files are unrecorded work too: remove refuses them;
    --force saves them on a ref first. A worker running a command is never removed."""
    from git_autoresearch.git import Repo
    from git_autoresearch.session.lock import SessionLock

    main, w1, _ = crew
    write(w1 / "notes.txt", "mine\n")
    refused = ar(main, "worker", "remove", "w1", expect=3)
    assert "worker w1 has unrecorded changes or files (notes.txt)" in refused.err
    with SessionLock(Repo.discover(w1).scratch, "run"):
        busy = ar(main, "worker", "remove", "w1", "--force", expect=3)
    assert busy.err.startswith("git autoresearch: worker w1 is running a command (pid ")
    assert w1.exists()
    said = ar(main, "worker", "remove", "w1", "--force", "--json").json()["said"]
    assert said == [f"removed worker w1 ({w1}); its unrecorded changes are saved at "
                    "refs/autoresearch/s1/removed/w1"]
    assert git(main, "show", "refs/autoresearch/s1/removed/w1:notes.txt") == "mine"


def test_stop_stops_every_worker(crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """With workers, STOP stays until removed by hand, so that every worker's loop stops."""
    main, w1, w2 = crew
    ar(main, "stop")
    for where in (w1, w2, w1):
        said = ar(where, "run", "-d", "x", expect=4).err
        assert "with workers it stays, so that every worker stops" in said
    assert (main / ".auto" / "STOP").exists()
    stopped = [e.get("worker") for e in ledger_lines(main) if e.get("type") == "stopped"]
    assert stopped == ["w1", "w2", "w1"]


def test_a_worker_reads_the_session_folder_through_its_link(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A measured command that runs .auto/measure.sh works in a worker (its .auto is a link to
    the main work tree's, ignored by git), and so do summary and worker list there."""
    main, w1, w2 = crew
    assert (w1 / ".auto").is_symlink() and (w1 / ".auto" / "config.toml").is_file()
    assert git(w1, "status", "--porcelain", "--untracked-files=all") == ""
    git(w1, "clean", "-xfdq")
    assert not (w1 / ".auto").exists()
    ar(w1, "status")
    assert (w1 / ".auto" / "config.toml").is_file(), "the next command puts the link back"
    write(main / ".auto" / "ideas.md", "- [ ] try the cache\n")
    assert "try the cache" in ar(w1, "summary").out
    listed = {w["worker"]: w["path"] for w in ar(w1, "worker", "list", "--json").json()["workers"]}
    assert listed == {"main": str(main), "w1": str(w1), "w2": str(w2)}


def test_worker_add_refuses_names_twice_and_folders_inside(crew: tuple[Path, Path, Path],
                                                           ar: Tool) -> None:
    main, _, _ = crew
    assert ar(main, "worker", "add", "--name", "a", "--name", "a", expect=2).err.strip() == \
        "git autoresearch: worker a is named twice"
    assert ar(main, "worker", "add", "2", "--name", "a", expect=2).err.strip() == \
        "git autoresearch: give COUNT or --name, not both (--name makes one worker each)"
    assert "bad worker name 'HEAD'" in ar(main, "worker", "add", "--name", "HEAD",
                                          expect=2).err
    inside = ar(main, "worker", "add", "--path", "src", expect=3).err
    assert inside.strip() == (f"git autoresearch: {main / 'src'} is inside the work tree: put "
                              f"the workers outside it (--path {main.parent / 'project.workers'})")
    assert [w["worker"] for w in ar(main, "worker", "list", "--json").json()["workers"]] == [
        "main", "w1", "w2"]


def test_max_experiments_counts_the_runs_other_workers_are_measuring(
        repo: Path, ar: Tool) -> None:
    """With a limit of 2 experiments, one recorded and one being measured by w1 (a command
    running there, its number held), w2's run stops (exit 4) instead of exceeding it."""
    from git_autoresearch.git import Repo
    from git_autoresearch.session.lock import SessionLock

    ar(repo, *start_args("--decision", "strict", "--max-experiments", "2"))
    ar(repo, "worker", "add", "2")
    w1, w2 = repo.parent / "project.workers" / "w1", repo.parent / "project.workers" / "w2"
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "first")
    write(w1 / "value.txt", "80\n")
    assert ar(w1, "measure", "--json").json()["metric"] == 80  # holds run 3
    write(w2 / "value.txt", "85\n")
    with SessionLock(Repo.discover(w1).scratch, "run"):
        stopped = ar(w2, "run", "-d", "third", expect=4)
    assert "max_experiments (2) reached in this segment, counting the runs other workers are " \
           "measuring (w1 (run 3))" in stopped.err
    assert ar(w2, "run", "-d", "third", "--json").json()["run"] == 4, \
        "once w1's command is gone its held number no longer counts"


def test_a_session_with_workers_is_running_and_gc_leaves_it_alone(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A worker's branch holds the session tip: that is no merge. sessions says running, and
    gc deletes none of its attempt refs (apply still finds a discarded run)."""
    main, w1, _ = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "keep")
    write(w1 / "value.txt", "95\n")
    ar(w1, "run", "-d", "worse")
    for where in (w1, main):
        found = ar(where, "sessions", "--json").json()["sessions"]
        assert [s["state"] for s in found] == ["running"]
        ar(where, "gc")
    assert git(main, "show", "refs/autoresearch/s1/attempts/3:value.txt") == "95"


def test_a_new_segment_with_workers_starts_on_the_incumbent(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """The main work tree is behind after w1's keep: start --new-segment moves it to the
    incumbent and measures the baseline there (nothing written twice, nothing refused)."""
    main, w1, _ = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "keep")
    done = ar(main, "start", "--new-segment", "--json").json()
    assert (done["baseline"]["metric"], done["baseline"]["status"]) == (190, "keep")
    assert git(main, "rev-parse", "HEAD") == git(main, "rev-parse", BRANCH)
    assert sum(1 for e in ledger_lines(main) if e.get("type") == "config") == 2


def test_a_run_measured_under_an_old_segment_is_not_recorded_into_a_new_one(
        crew: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """w1 measures (its benchmark waits for a flag) while the main work tree starts a new
    segment: w1's run is refused (exit 3) and nothing of it lands in the new segment."""
    import time

    main, w1, _ = crew
    flag = tmp_path / "go"
    write(main / ".auto" / "slow.sh", f"case $PWD in */w1) while [ ! -e {flag} ]; do sleep "
          "0.05; done;; esac\n")
    write(w1 / "value.txt", "90\n")
    env = {**os.environ, "GIT_AUTORESEARCH_LOCK_WAIT": "60"}
    subprocess.run([*TOOL, "start", "--new-segment", "--command",
                    "sh .auto/slow.sh; sh bench.sh"], cwd=main, check=True, env=env,
                   capture_output=True)
    slow = subprocess.Popen([*TOOL, "run", "-d", "slow", "--json"], cwd=w1, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    held = main / ".git" / "autoresearch-sessions" / "s1" / "reserved" / "w1"
    while not held.exists():
        assert time.monotonic() < deadline, "w1 never started measuring"
        time.sleep(0.05)
    newer = subprocess.Popen([*TOOL, "start", "--new-segment", "--min-effect", "0.01"],
                             cwd=main, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    while sum(1 for e in ledger_lines(main) if e.get("type") == "config") < 3:
        assert time.monotonic() < deadline, "the new segment was never written"
        time.sleep(0.05)
    flag.touch()
    out, err = slow.communicate(timeout=60)
    newer.communicate(timeout=60)
    assert slow.returncode == 3, (out, err)
    assert "a new segment (2) began while this run was measured" in err
    assert not any(r["description"] == "slow" for r in runs(main))
    assert (w1 / "value.txt").read_text() == "90\n", "the experiment stays in the work tree"


def test_a_workers_hook_lines_name_it(crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """The ledger's hook lines name the worker whose run fired them, as its run records do."""
    main, w1, _ = crew
    write(main / ".auto" / "hooks" / "after.sh", "#!/bin/sh\necho noted\n", 0o755)
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    fired = [line for line in ledger_lines(main) if line.get("type") == "hook"]
    assert [(h["stage"], h["worker"]) for h in fired] == [("after", "w1")]


def test_an_interrupted_replay_is_named_by_status_and_doctor_and_fixed_by_doctor_fix(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A worker killed mid-replay, its work tree already reverted: the candidate is only on
    its replay ref until the next command finishes the replay. status and doctor say so,
    naming the ref (doctor said "no problems found" while the edit was gone from the work
    tree), and doctor --fix finishes it."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    write(w2 / "README.md", "edited in w2\n")
    killed = tool(w2, "run", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT": "replay:reverted"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert (w2 / "README.md").read_text() == "project\n"
    said = "the replay of run 3's candidate onto "
    assert any(said in w and "refs/autoresearch/s1/replays/3" in w
               for w in ar(w2, "status", "--json").json()["warnings"])
    found = ar(w2, "doctor", "--json", expect=3).json()["findings"]
    assert [f["fix"] for f in found if said in f["problem"]] == [
        "finish it: the candidate back in the work tree"], found
    fixed = ar(w2, "doctor", "--fix", "--json").json()["findings"]
    assert all(f["fixed"] for f in fixed if f["fix"]), fixed
    assert (w2 / "README.md").read_text() == "edited in w2\n"
    assert ar(w2, "doctor", "--json").json()["findings"] == []


def test_a_candidate_replayed_twice_is_described_over_both_hops(
        crew: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """w2's candidate is replayed onto w1's keep before it is measured, and again onto w1's
    next keep, made while it was measured: its record's ``replayed`` says where it was first
    made (``from``) and every run kept meanwhile, as workers(7) says (it described the last
    hop alone: ``from`` an incumbent in between, one run kept meanwhile)."""
    main, w1, w2 = crew
    base = git(main, "rev-parse", "--short=7", BRANCH)
    write(w2 / "extra.txt", "80\n")
    write(w1 / "value.txt", "90\n")
    first = ar(w1, "run", "-d", "value 90", "--json").json()["run"]
    go = tmp_path / "go"
    paused = paused_at("run:measured", go, w2, "run", "-d", "w2's candidate", "--json")
    write(w1 / "value.txt", "70\n")
    second = ar(w1, "run", "-d", "value 70", "--json").json()
    assert second["status"] == "keep", second
    go.touch()
    out, err = paused.communicate(timeout=60)
    assert paused.returncode == 0, err
    replayed = json.loads(out)["replayed"]
    assert (replayed["from"], replayed["kept_meanwhile"], replayed["onto"]) == (
        base, [first, second["run"]], second["commit"]), replayed


def test_a_workers_keep_killed_before_its_advance_after_another_kept_is_undone(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """w1 killed between its keep commit and the session branch's advance, and w2 keeps
    meanwhile: the session branch moved on, so w1's keep cannot go onto it. resume undoes it
    (the candidate stays in w1's work tree, to be measured again: onto w2's keep, replayed),
    where it recorded a keep on a commit off the session branch, beside w2's on the same
    parent, which doctor then called a problem with no way out."""
    main, w1, w2 = crew
    base = git(main, "rev-parse", BRANCH)
    write(w1 / "value.txt", "90\n")
    killed = tool(w1, "run", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT":
                                                  "keep:before-advance"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    write(w2 / "extra.txt", "80\n")
    assert ar(w2, "run", "-d", "w2 keeps", "--json").json()["status"] == "keep"
    kept = git(main, "rev-parse", BRANCH)
    done = ar(w1, "resume", "--json").json()
    assert "could not land" in done["actions"][0] and "undone here" in done["actions"][0], done
    assert git(w1, "rev-parse", "HEAD") == base
    assert (w1 / "value.txt").read_text() == "90\n"
    assert [(r["run"], r["status"]) for r in runs(main)] == [(1, "keep"), (3, "keep")]
    assert ar(main, "doctor", "--json").json()["findings"] == []
    again = ar(w1, "run", "-d", "value 90 again", "--json").json()
    assert again["status"] == "keep" and again["replayed"]["from"] == base[:7], again
    assert git(main, "rev-parse", f"{BRANCH}^") == kept
    assert ar(main, "doctor", "--json").json()["findings"] == []


def test_a_workers_interrupted_keep_is_finished_under_the_shared_lock(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """Finishing a worker's killed keep moves the session branch and writes the ledger, which
    every worker shares: while another worker holds the shared lock, resume waits for it, and
    refuses once the wait is over with nothing finished; then it finishes the keep."""
    from git_autoresearch.git import Repo
    from git_autoresearch.session.lock import SessionLock
    from git_autoresearch.session.shared import shared_dir

    main, w1, _ = crew
    write(w1 / "value.txt", "90\n")
    killed = tool(w1, "run", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT":
                                                  "keep:before-advance"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    tip = git(main, "rev-parse", BRANCH)
    with SessionLock(shared_dir(Repo.discover(main), "s1"), "another worker", wait=0):
        waited = tool(w1, "resume", env={"GIT_AUTORESEARCH_LOCK_WAIT": "0.2"})
    assert waited.returncode == 3, waited.stderr
    assert waited.stderr.strip() == (
        "git autoresearch: another git-autoresearch command holds the session lock "
        f"(pid {os.getpid()} another worker); waited 0.2s")
    assert git(main, "rev-parse", BRANCH) == tip, "the branch did not move under the lock"
    assert len(runs(main)) == 1, "no ledger line was written under the lock"
    done = ar(w1, "resume", "--json").json()
    assert done["actions"][0].startswith("finished the interrupted keep of run 2")
    assert git(main, "rev-parse", BRANCH) == git(w1, "rev-parse", "HEAD")
    assert [r["run"] for r in runs(main)] == [1, 2]


def test_a_discard_decided_while_another_worker_kept_is_measured_again_on_the_keep(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """With two measurement slots, w2's candidate (extra 105: 205, worse than 200) is measured
    while w1 keeps value 10: the discard was decided against a base that is gone, so the
    candidate is replayed onto w1's keep and measured again there (10 + 105 = 115, still
    worse than 110): the record says so."""
    import json

    _, w1, w2 = make_crew(repo, ar, "--measure-slots", "2")
    write(w2 / "extra.txt", "105\n")
    go = tmp_path / "go"
    paused = paused_at("group:started", go, w2, "run", "-d", "extra 105", "--json")
    write(w1 / "value.txt", "10\n")
    kept = ar(w1, "run", "-d", "value 10", "--json").json()
    assert (kept["run"], kept["status"], kept["metric"]) == (3, "keep", 110), \
        "w2 holds run 2"
    go.touch()
    out, err = paused.communicate(timeout=120)
    assert paused.returncode == 0, err
    record = check_document(json.loads(out))
    assert (record["run"], record["status"], record["metric"]) == (2, "discard", 115)
    assert record["replayed"]["kept_meanwhile"] == [3]
    assert (w2 / "extra.txt").read_text() == "100\n"
    assert (w2 / "value.txt").read_text() == "10\n", "reverted on the new incumbent"


def test_a_discard_by_hand_in_a_worker_behind_the_incumbent_is_recorded(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """A discard asks for no replay: w2, behind w1's keep, discards its candidate as it is,
    and then follows the incumbent."""
    main, w1, w2 = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    write(w2 / "extra.txt", "150\n")
    record = ar(w2, "discard", "-d", "by hand", "--json").json()
    assert (record["run"], record["status"], record.get("replayed")) == (3, "discard", None)
    assert (w2 / "extra.txt").read_text() == "100\n"
    assert git(w2, "rev-parse", "HEAD") == git(main, "rev-parse", BRANCH), "it followed"


def test_a_worker_not_behind_a_rewritten_session_branch_stays_and_says_so(
        crew: tuple[Path, Path, Path], ar: Tool) -> None:
    """Somebody moved the session branch by hand to a commit that does not descend from w2's:
    after its discard, w2 does not follow it, and says so."""
    main, _, w2 = crew
    elsewhere = git(main, "commit-tree", "-p", f"{BRANCH}~1", "-m", "by hand",
                    git(main, "rev-parse", f"{BRANCH}^{{tree}}"))
    git(main, "update-ref", f"refs/heads/{BRANCH}", elsewhere)
    head = git(w2, "rev-parse", "HEAD")
    write(w2 / "extra.txt", "150\n")
    record = ar(w2, "discard", "-d", "nothing", "--json").json()
    assert record["warnings"] == [
        f"the worker branch is not behind the session branch {BRANCH}; it was left where it is"]
    assert git(w2, "rev-parse", "HEAD") == head


def test_a_repair_in_one_worktree_is_no_loss_in_another(crew: tuple[Path, Path, Path],
                                                        ar: Tool) -> None:
    """doctor --fix in the main work tree sets a malformed line aside and mirrors: a worker's
    next run, whose cache still names the state commit before the repair, asks the ref's tip
    and finds nothing lost, where it warned at every run that lines were lost and its own
    doctor --fix could not clear it."""
    main, w1, _ = crew
    write(w1 / "value.txt", "90\n")
    ar(w1, "run", "-d", "value 90")
    with (main / ".auto" / "log.jsonl").open("a") as fh:
        fh.write("tried foo by hand\n")
    write(w1 / "value.txt", "80\n")
    ar(w1, "run", "-d", "value 80")
    ar(main, "doctor", "--fix")
    write(w1 / "value.txt", "70\n")
    assert ar(w1, "run", "-d", "value 70", "--json").json()["warnings"] == []
    assert ar(w1, "doctor").out == "no problems found\n"

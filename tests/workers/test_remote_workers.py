"""Workers on several machines through a git remote (``worker join``): one session branch that
advances on the remote only by a push with a lease, run numbers taken there, each worker's
runs travelling as its ledger ref and read back merged, in time order, by every clone; and
nothing lost when a keep is refused, cannot be sent, or is killed on its way."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from conftest import (
    HOST_STEPS,
    REMOTE_STEPS,
    Tool,
    check_document,
    git,
    launch,
    left_behind,
    paused_at,
    runs,
    start_args,
    tool,
    write,
)

from git_autoresearch.git import Repo
from git_autoresearch.history import queue
from git_autoresearch.history.remote_ledger import merged
from git_autoresearch.history.state_ref import saved_ledger

BRANCH = "autoresearch/s1"


def remote_refs(remote: Path) -> dict[str, str]:
    listing = git(remote, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ") for line in listing.splitlines())


@pytest.fixture
def machines(repo: Path, ar: Tool, tmp_path: Path,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Session s1 (score = value.txt + extra.txt, strict rule) started in ``repo`` (machine
    a), shared through a bare remote: a joined as worker ma, which sends it; a clone b joined
    as mb. Returns (a, b, remote)."""
    return make_machines(repo, ar, tmp_path, tmp_path_factory, "--decision", "strict")


# The layouts make_machines built in this test process, by their start options: each test gets
# a copy (building one starts about 30 git processes, and most of this file's tests begin with
# one).
LAYOUTS: dict[tuple[str, ...], Path] = {}


def make_machines(repo: Path, ar: Tool, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                  *start: str) -> tuple[Path, Path, Path]:
    """The ``machines`` fixture's session, started with the ``start`` options, in ``tmp_path``
    (``repo`` is its ``project``): a copy of the layout built once, whose remote URLs and
    workers' records of their own folder are then pointed at the copy, the only places the
    layout names its folder (besides the reflogs)."""
    layout = LAYOUTS.get(start)
    if layout is None:
        layout = tmp_path_factory.mktemp("machines")
        shutil.copytree(repo, layout / "project", symlinks=True)
        build_machines(layout / "project", ar, layout, *start)
        LAYOUTS[start] = layout
    shutil.rmtree(repo)
    for name in ("project", "b", "remote.git"):
        shutil.copytree(layout / name, tmp_path / name, symlinks=True)
    remote = tmp_path / "remote.git"
    for clone in (repo, tmp_path / "b"):
        git(clone, "remote", "set-url", "origin", str(remote))
        record = clone / ".git" / "autoresearch" / "worker.json"
        data = json.loads(record.read_text())
        assert data["main"] == str(layout / clone.name)
        record.write_text(json.dumps({**data, "main": str(clone)}))
    return repo, tmp_path / "b", remote


def build_machines(repo: Path, ar: Tool, tmp_path: Path, *start: str) -> None:
    """:func:`make_machines`'s layout, built in ``tmp_path`` from ``repo`` (its project)."""
    write(repo / "extra.txt", "100\n")
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(( $(cat value.txt) + "
          "$(cat extra.txt) ))\"\n", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two numbers")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    ar(repo, *start_args(*start, "--scope", "value.txt", "--scope", "extra.txt"))
    joined = ar(repo, "worker", "join", "origin", "s1", "--name", "ma", "--json").json()
    assert (joined["worker"], joined["branch"], joined["notes"]) == (
        "ma", "autoresearch-workers/s1/ma", ["sent session s1 to origin"])
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    joined = ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--json").json()
    assert joined["notes"] == ["restored .auto/config.toml", "restored .auto/prompt.md",
                               "restored .auto/log.jsonl"]
    assert git(b, "symbolic-ref", "--short", "HEAD") == "autoresearch-workers/s1/mb"


def test_two_machines_share_one_session_through_a_remote(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b keeps; a's candidate, made on the old incumbent, is replayed onto b's keep before it
    is measured; the remote's branch is a's keep on b's; run numbers never repeat; and each
    clone's log shows every run, in time order, with its worker."""
    a, b, remote = machines
    write(b / "value.txt", "90\n")
    first = ar(b, "run", "-d", "value 90", "--json").json()
    assert (first["run"], first["status"], first["metric"], first["worker"]) == (
        2, "keep", 190, "mb")
    write(a / "extra.txt", "80\n")
    second = ar(a, "run", "-d", "extra 80", "--json").json()
    assert (second["run"], second["status"], second["metric"], second["worker"]) == (
        3, "keep", 170, "ma")
    assert second["replayed"]["kept_meanwhile"] == [2]
    there = remote_refs(remote)
    assert there[f"refs/heads/{BRANCH}"] == git(a, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", "--short", f"{BRANCH}^") == first["commit"]
    assert git(remote, "show", f"{BRANCH}:value.txt") == "90"
    assert git(remote, "show", f"{BRANCH}:extra.txt") == "80"
    assert {"refs/autoresearch/s1/ledgers/ma", "refs/autoresearch/s1/ledgers/mb",
            "refs/autoresearch/s1/runs/2", "refs/autoresearch/s1/runs/3"} <= set(there)
    synced = ar(b, "worker", "sync", "--json").json()
    assert (synced["runs"], synced["workers"]) == (3, ["ma", "mb"])
    for clone in (a, b):
        rows = ar(clone, "log", "--format", "jsonl").out.splitlines()
        assert [(json.loads(r)["run"], json.loads(r).get("worker")) for r in rows] == [
            (1, None), (2, "mb"), (3, "ma")]
    # Each clone's own ledger file holds what it wrote; the others' come from their refs.
    assert [r["run"] for r in runs(b)] == [1, 2]
    assert git(b, "rev-parse", BRANCH) == git(a, "rev-parse", "HEAD")


def test_a_keep_the_remote_refuses_is_undone_and_measured_again(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b measured on the old incumbent; a keeps first; b's keep is refused by the lease: it
    is undone in b (nothing recorded, the candidate in the work tree, replayed onto a's keep),
    and once measured again it lands on a's keep."""
    a, b, remote = machines
    write(b / "value.txt", "70\n")
    ar(b, "measure")
    write(a / "extra.txt", "60\n")
    kept = ar(a, "run", "-d", "extra 60", "--json").json()
    refused = ar(b, "keep", "-d", "value 70", expect=3)
    incumbent = git(a, "rev-parse", "--short", "HEAD")
    assert refused.err.strip() == (
        f"git autoresearch: the incumbent moved since this candidate was measured (run(s) "
        f"{kept['run']} kept by other workers): the candidate was replayed onto the incumbent "
        f"{incumbent} (run(s) {kept['run']}; saved at refs/autoresearch/s1/replays/2) and must "
        "be measured against it: git autoresearch measure, then keep")
    assert git(b, "rev-parse", "--short", "HEAD") == incumbent
    assert git(b, "status", "--porcelain", "--untracked-files=no") == "M value.txt"
    assert (b / "extra.txt").read_text() == "60\n"
    assert [r["run"] for r in runs(b)] == [1]
    assert git(remote, "rev-parse", "--short", BRANCH) == incumbent
    ar(b, "measure")
    record = ar(b, "keep", "-d", "value 70", "--json").json()
    assert (record["run"], record["status"], record["metric"]) == (2, "keep", 130)
    assert git(remote, "rev-parse", "--short", f"{BRANCH}^") == incumbent
    assert git(remote, "show", f"{BRANCH}:value.txt") == "70"


def test_run_replays_and_measures_again_when_the_push_is_refused(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """a keeps while b's run is between its commit and its push: b's push is refused, the
    keep undone, the candidate replayed onto a's keep, measured again and kept there."""
    a, b, remote = machines
    go = tmp_path / "go"
    write(b / "value.txt", "70\n")
    paused = paused_at("keep:before-push", go, b, "run", "-d", "value 70", "--json")
    write(a / "extra.txt", "60\n")
    kept = ar(a, "run", "-d", "extra 60", "--json").json()
    go.touch()
    out, err = paused.communicate(timeout=60)
    assert paused.returncode == 0, err
    record = check_document(json.loads(out))
    assert (record["run"], record["status"], record["metric"]) == (2, "keep", 130)
    assert record["replayed"]["kept_meanwhile"] == [kept["run"]]
    assert git(remote, "rev-parse", f"{BRANCH}^") == git(a, "rev-parse", "HEAD")
    assert git(remote, "rev-parse", BRANCH) == git(b, "rev-parse", "HEAD")


@pytest.mark.parametrize("step", REMOTE_STEPS[:2])
def test_a_keep_killed_on_its_way_to_the_remote_lands_on_resume(
        machines: tuple[Path, Path, Path], ar: Tool, step: str) -> None:
    """Killed after the keep's commit, before or after its push: resume finishes the run,
    the remote holds the keep, and the ledger ref carries its record."""
    _, b, remote = machines
    write(b / "value.txt", "90\n")
    killed = tool(b, "run", "-d", "value 90", env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = ar(b, "resume", "--json").json()
    assert done["actions"][0].startswith("finished the interrupted keep of run 2")
    assert left_behind(b) == []
    assert git(remote, "rev-parse", BRANCH) == git(b, "rev-parse", "HEAD")
    assert git(remote, "show", f"{BRANCH}:value.txt") == "90"
    sent = git(remote, "show", "refs/autoresearch/s1/ledgers/mb:log.jsonl").splitlines()
    assert json.loads(sent[-1])["run"] == 2


def test_a_keep_killed_before_its_push_while_another_kept_is_undone(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Killed before its push, and a kept meanwhile: resume cannot land it, so it undoes it,
    the candidate stays in the work tree, and the next run replays it onto a's keep."""
    a, b, remote = machines
    write(b / "value.txt", "70\n")
    killed = tool(b, "run", "-d", "value 70", env={"GIT_AUTORESEARCH_DIE_AT": "keep:before-push"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    write(a / "extra.txt", "60\n")
    kept = ar(a, "run", "-d", "extra 60", "--json").json()
    done = ar(b, "resume", "--json").json()
    assert done["actions"][0].startswith(
        "the interrupted keep of run 2 could not land on origin: the incumbent moved")
    assert left_behind(b) == []
    assert (b / "value.txt").read_text() == "70\n"
    assert [r["run"] for r in runs(b)] == [1]
    record = ar(b, "run", "-d", "value 70", "--json").json()
    assert (record["run"], record["status"], record["metric"]) == (2, "keep", 130)
    assert record["replayed"]["kept_meanwhile"] == [kept["run"]]
    assert git(remote, "rev-parse", f"{BRANCH}^") == git(a, "rev-parse", "HEAD")


def test_a_resume_that_cannot_read_the_remote_keeps_the_interrupted_keep(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Killed before its push; on resume the remote rejects the push and cannot be read, so
    whether the keep landed is unknown: nothing is undone, the intent stays, and a resume
    once the remote answers lands the keep."""
    _, b, remote = machines
    write(b / "value.txt", "90\n")
    killed = tool(b, "run", "-d", "value 90", env={"GIT_AUTORESEARCH_DIE_AT": "keep:before-push"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    head = git(b, "rev-parse", "HEAD")
    write(remote / "hooks" / "pre-receive", "#!/bin/sh\nexit 1\n", 0o755)
    git(b, "config", "remote.origin.uploadpack", "false")
    refused = ar(b, "resume", expect=3)
    assert refused.err.startswith("git autoresearch: cannot fetch session s1 from origin: ")
    assert git(b, "rev-parse", "HEAD") == git(b, "rev-parse", BRANCH) == head, "not undone"
    intent = json.loads((b / git(b, "rev-parse", "--git-path", "autoresearch/intent.json"))
                        .read_text())
    assert (intent["op"], intent["run"]) == ("keep", 2), "the intent stays"
    (remote / "hooks" / "pre-receive").unlink()
    git(b, "config", "--unset", "remote.origin.uploadpack")
    done = ar(b, "resume", "--json").json()
    assert done["actions"][0].startswith("finished the interrupted keep of run 2")
    assert git(remote, "rev-parse", BRANCH) == head
    assert [r["run"] for r in runs(b)] == [1, 2]


def test_a_refused_keep_killed_half_undone_is_undone_on_resume(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Killed while undoing a refused keep (index and session branch back, HEAD not):
    resume undoes the rest, and nothing is recorded; the next run replays the candidate."""
    a, b, remote = machines
    base = git(b, "rev-parse", "HEAD")
    write(b / "value.txt", "70\n")
    ar(b, "measure")
    write(a / "extra.txt", "60\n")
    ar(a, "run", "-d", "extra 60")
    killed = tool(b, "keep", "-d", "value 70",
                  env={"GIT_AUTORESEARCH_DIE_AT": "land:undone-branch"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = ar(b, "resume", "--json").json()
    assert done["actions"][0].startswith(
        "the interrupted keep of run 2 could not land on origin")
    assert left_behind(b) == []
    assert git(b, "rev-parse", "HEAD") == base
    assert git(b, "rev-parse", BRANCH) == git(remote, "rev-parse", BRANCH) == git(
        a, "rev-parse", "HEAD")
    assert git(b, "status", "--porcelain", "--untracked-files=no") == "M value.txt"
    assert [r["run"] for r in runs(b)] == [1]
    record = ar(b, "run", "-d", "value 70", "--json").json()
    assert (record["run"], record["status"], record["metric"]) == (2, "keep", 130)
    assert git(remote, "rev-parse", f"{BRANCH}^") == git(a, "rev-parse", "HEAD")


def test_a_keep_that_cannot_reach_the_remote_keeps_nothing(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """The remote is gone between measure and keep: the keep is undone (nothing kept that
    the remote does not hold), the candidate stays, and the message says so."""
    _, b, _ = machines
    write(b / "value.txt", "70\n")
    ar(b, "measure")
    head = git(b, "rev-parse", "HEAD")
    git(b, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    refused = ar(b, "keep", "-d", "value 70", expect=3)
    assert refused.err.strip() == (
        "git autoresearch: the keep could not be sent to origin (git push failed: is it "
        "reachable and writable?); nothing was recorded, and the candidate is in the work "
        "tree: measure it again once the remote can be reached")
    assert git(b, "rev-parse", "HEAD") == git(b, "rev-parse", BRANCH) == head
    assert (b / "value.txt").read_text() == "70\n"
    assert [r["run"] for r in runs(b)] == [1]
    gone = ar(b, "measure", expect=3)
    assert gone.err.strip() == (f"git autoresearch: cannot fetch session s1 from origin: "
                                f"'{tmp_path / 'gone.git'}' does not appear to be a git "
                                "repository")


def test_a_run_number_taken_on_the_remote_is_stepped_over(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Run 2 was taken on the remote by someone b has not heard of: b's keep takes 3."""
    a, b, remote = machines
    git(a, "push", "-q", "origin", f"{BRANCH}:refs/autoresearch/s1/runs/2")
    write(b / "value.txt", "90\n")
    record = ar(b, "keep", "-d", "value 90", "--metric", "190", "--json").json()
    assert record["run"] == 3
    assert "refs/autoresearch/s1/runs/3" in remote_refs(remote)


def test_join_refuses_a_taken_name_a_bad_name_and_a_missing_session(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    _, _, remote = machines
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(remote), str(c))
    taken = ar(c, "worker", "join", "origin", "s1", "--name", "mb", expect=3)
    assert taken.err.strip() == ("git autoresearch: a worker named mb already joined session "
                                 "s1 through origin: choose another name (--name)")
    bad = ar(c, "worker", "join", "origin", "s1", "--name", "-x", expect=2)
    assert bad.err.strip().startswith("git autoresearch: bad worker name '-x'")
    missing = ar(c, "worker", "join", "origin", "s9", "--name", "mc", expect=3)
    assert missing.err.strip().startswith("git autoresearch: origin has no session s9")
    assert not (c / ".auto").exists()
    assert git(c, "symbolic-ref", "--short", "HEAD") == "main"


def test_a_session_branch_pushed_by_hand_first_is_not_the_session(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """git push --all before the first join puts the session branch on the remote without the
    session's files: the first join still sends them, and a clone then joins; a clone that
    joins or pulls before that is told which part is missing."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    ar(repo, *start_args())
    git(repo, "push", "-q", "origin", "--all")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    early = ar(b, "worker", "join", "origin", "s1", "--name", "mb", expect=3)
    assert "origin has no session s1 (no session files, refs/autoresearch/s1/state)" in early.err
    pulled = ar(b, "pull", "origin", "s1", expect=3)
    assert "origin holds the branch of session s1 but not its files" in pulled.err
    assert not (b / ".auto").exists()
    joined = ar(repo, "worker", "join", "origin", "s1", "--name", "ma", "--json").json()
    assert joined["notes"] == ["sent session s1 to origin"]
    ar(b, "worker", "join", "origin", "s1", "--name", "mb")
    assert (b / ".auto" / "config.toml").is_file()
    assert git(b, "rev-parse", "HEAD") == git(repo, "rev-parse", "autoresearch/s1")


def test_merged_ledgers_add_each_missing_run_once_in_time_order() -> None:
    """A foreign run goes before the first local line stamped later; a run number the local
    ledger (or an earlier foreign one) holds is not added twice; a torn last line stays last."""
    header = b'{"type":"config","name":"x","timestamp":100}'
    local = (header + b'\n{"run":1,"timestamp":200}\n{"run":3,"timestamp":400}\n'
             b'{"run":5,"timest')
    foreign = [b'{"run":2,"timestamp":300}\n{"run":3,"timestamp":400}\n',
               b'{"run":2,"timestamp":300}\n{"run":4,"timestamp":450}\n{"run":0}\n']
    assert merged(local, foreign) == (
        header + b'\n{"run":1,"timestamp":200}\n{"run":2,"timestamp":300}\n'
        b'{"run":3,"timestamp":400}\n{"run":4,"timestamp":450}\n{"run":5,"timest')
    assert merged(local, [b'{"run":3,"timestamp":1}\n']) == local


def test_every_clone_lists_reads_and_finalizes_all_workers_runs(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """After b and a kept: a's worker list names b's worker as another clone; a reviewer's
    fresh clone that pulls the session reads every run; finalize in a fetches first, so b's
    keep made after a's last run is on the final branch."""
    a, b, _ = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    write(a / "extra.txt", "80\n")
    ar(a, "run", "-d", "extra 80")
    write(b / "value.txt", "70\n")
    ar(b, "run", "-d", "value 70")
    listed = {w["worker"]: w for w in ar(a, "worker", "list", "--json").json()["workers"]}
    assert (listed["ma"]["path"], listed["ma"]["elsewhere"]) == (str(a), False)
    assert (listed["mb"]["path"], listed["mb"]["elsewhere"]) == (None, True)
    assert "(another clone)" in ar(a, "worker", "list").out
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(machines[2]), str(review))
    ar(review, "pull", "origin", "s1")
    rows = [json.loads(r) for r in ar(review, "log", "--format", "jsonl").out.splitlines()]
    assert [(r["run"], r.get("worker"), r["metric"]) for r in rows] == [
        (1, None, 200), (2, "mb", 190), (3, "ma", 170), (4, "mb", 150)]
    ar(review, "pull", "origin", "s1")  # again, with the ledger refs here already
    # push from a joined clone leaves the ledger refs and run numbers alone (they travel by
    # themselves): a's ledger ref moved since b fetched (a's discard), and b's push still goes.
    write(a / "extra.txt", "99\n")
    assert ar(a, "run", "-d", "worse", "--json").json()["status"] == "discard"
    pushed = ar(b, "push", "origin", "s1", "--json").json()
    assert not [m for m in pushed["moved"] if "/ledgers/" in m["ref"] or "/runs/" in m["ref"]]
    final = ar(a, "finalize", "--samples", "0", "--json").json()
    assert final["runs"] == [2, 3, 4]
    assert git(a, "show", "autoresearch/s1-final:value.txt") == "70"


def test_every_reading_command_gives_one_best_in_every_clone(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """b keeps 190 (run 2), then a keeps 170 on it (run 3). Once b has fetched, each joined
    clone, and a reviewer's clone that pulled the session, reads the same runs and the same
    best from sessions, status, log and the dashboard, though no clone's own ledger file holds
    both keeps."""
    a, b, remote = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    write(a / "extra.txt", "80\n")
    ar(a, "run", "-d", "extra 80")
    ar(b, "worker", "sync")
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(remote), str(review))
    ar(review, "pull", "origin", "s1")
    assert [r["run"] for r in runs(a)] == [1, 3] and [r["run"] for r in runs(b)] == [1, 2]
    for clone in (a, b, review):
        status = ar(clone, "status", "--json").json()
        assert (status["segment"]["best"]["run"], status["segment"]["best"]["metric"],
                status["total_runs"]) == (3, 170, 3), clone
        listed = ar(clone, "sessions", "--json").json()["sessions"]
        assert [(s["id"], s["best"], s["gain_pct"], s["runs"], s["kept"]) for s in listed] == [
            ("s1", 170, -15.0, 3, 3)], clone
        top = ar(clone, "log", "--kept", "--sort", "best", "-n", "1", "--json").json()["runs"]
        assert [(r["run"], r["metric"]) for r in top] == [(3, 170)], clone
        every = ar(clone, "log", "--all-sessions", "--kept", "--sort", "best",
                   "--json").json()["runs"]
        assert [(r["run"], r["metric"]) for r in every] == [(3, 170), (2, 190), (1, 200)], clone
        analyzed = ar(clone, "analyze", "--json").json()
        assert (analyzed["best"]["run"], analyzed["runs"]) == (3, 3), clone
        ar(clone, "dashboard", "-o", str(tmp_path / "page.html"))
        page = (tmp_path / "page.html").read_text(encoding="utf-8")
        assert "baseline → best</div><div class=\"v\">200 → 170</div>" in page, clone
        assert "runs (segment / all)</div><div class=\"v\">3 / 3</div>" in page, clone


def kept_by_two_clones(machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b keeps 190 (run 2), then a keeps 170 on it (run 3): neither run is on the remote's
    state ref, which holds the ledger a sent when it joined."""
    a, b, _ = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    write(a / "extra.txt", "80\n")
    ar(a, "run", "-d", "extra 80")


def test_a_fresh_clone_that_pulls_reads_every_run_and_joins_to_run(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """A clone that pulls the session (not joining it) gets a ledger file that holds the
    joined clones' runs: doctor finds nothing and finalize takes both keeps. A run there is
    refused, nothing measured, naming the join that lets it run; once joined, run 4 is judged
    against run 3's 170 and reaches the other clones. Its ledger used to hold the state ref's
    run 1 only: run refused over HEAD's keep of run 3 (and, once that was mended, its keep
    wedged the joined clones), and doctor said it needed a person."""
    kept_by_two_clones(machines, ar)
    a, b, remote = machines
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(remote), str(review))
    pulled = ar(review, "pull", "origin", "s1", "--json").json()
    assert pulled["restored"][-1] == ("added runs 2, 3 to .auto/log.jsonl (recorded by the "
                                      "clones that joined the session)")
    assert pulled["notes"] == ["session s1 is run by clones that joined it through origin (ma, "
                               "mb): to run it here, join it (git autoresearch worker join "
                               "origin s1)"]
    assert [(r["run"], r.get("worker")) for r in runs(review)] == [
        (1, None), (2, "mb"), (3, "ma")]
    assert ar(review, "pull", "origin", "s1", "--json").json()["restored"] == []
    # (the runs added are mirrored on the state ref: doctor names the branch alone)
    assert ar(review, "doctor", expect=3).out.strip() == (
        "- the work tree is on branch main, not on the session branch autoresearch/s1 (git "
        "autoresearch resume checks it out) [needs a person]")
    assert ar(review, "resume").err == (
        "warning: session s1 is run by clones that joined it through a remote (workers ma, "
        "mb): to run it here, join it (git autoresearch worker join origin s1)\n")
    assert ar(review, "doctor").out.strip() == "no problems found"
    final = ar(review, "finalize", "--samples", "0", "--json").json()
    assert final["runs"] == [2, 3]
    git(review, "switch", "-q", "main")  # (off the session branch, the join is named first)
    assert "join it to run here" in ar(review, "run", "-d", "x", expect=3).err
    git(review, "switch", "-q", BRANCH)
    write(review / "value.txt", "85\n")
    before = (review / ".auto" / "log.jsonl").read_bytes()
    config = (review / ".auto" / "config.toml").read_bytes()
    state = git(review, "rev-parse", "refs/autoresearch/s1/state")
    for command in (["run", "-d", "value 85"], ["measure"], ["keep", "--metric", "165", "-d", "x"],
                    ["keep", "-d", "x"], ["discard", "-d", "x"]):
        refused = ar(review, *command, expect=3)
        assert refused.err.strip() == (
            "git autoresearch: session s1 is run by clones that joined it through a remote "
            "(workers ma, mb): a run here would take its number on no remote and its keep "
            "would reach none of them; join it to run here (git autoresearch worker join "
            "origin s1); nothing was measured or recorded"), command
    refused = ar(review, "start", "--new-segment", "--goal", "again", expect=3)
    assert refused.err.strip() == (
        "git autoresearch: session s1 is run by clones that joined it through a remote "
        "(workers ma, mb): a new segment here would reach none of them; start a new session "
        "(git autoresearch start --session-id NEW) and have them join it; nothing was changed")
    assert (review / ".auto" / "log.jsonl").read_bytes() == before
    assert (review / ".auto" / "config.toml").read_bytes() == config
    assert git(review, "rev-parse", "refs/autoresearch/s1/state") == state
    assert git(review, "status", "--porcelain") == "M value.txt"
    git(review, "stash", "-q")
    ar(review, "worker", "join", "origin", "s1", "--name", "mr")
    git(review, "stash", "pop", "-q")
    done = ar(review, "run", "-d", "value 85", "--json").json()
    assert (done["run"], done["status"], done["metric"]) == (4, "keep", 165)
    write(b / "extra.txt", "70\n")  # (b's candidate, made on its run 2, is replayed)
    again = ar(b, "run", "-d", "extra 70", "--json").json()
    assert (again["run"], again["replayed"]["kept_meanwhile"]) == (5, [3, 4])


def test_a_run_a_joined_clones_ledger_lost_stays_on_its_ledger_ref(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b's ledger loses its two discarded runs' lines (by hand; the rule's verdict on both is
    "worse"): b's next run warns that the state ref holds them, and its ledger ref, which the
    other clones read b's runs from, keeps them, where it was pushed without them (the runs
    vanished from every other clone's log); doctor --fix puts the lines back in b's file."""
    a, b, remote = machines
    write(b / "value.txt", "150\n")
    ar(b, "run", "-d", "worse")
    write(b / "value.txt", "140\n")
    ar(b, "run", "-d", "worse again")
    ledger = b / ".auto" / "log.jsonl"
    ledger.write_bytes(b"".join(line for line in ledger.read_bytes().splitlines(True)
                                if b'"verdict":"worse"' not in line))
    write(b / "value.txt", "90\n")
    assert ar(b, "run", "-d", "value 90", "--json").json()["run"] == 4
    sent = [json.loads(line).get("run") for line in
            git(remote, "show", "refs/autoresearch/s1/ledgers/mb:log.jsonl").splitlines()]
    assert [n for n in sent if n is not None] == [1, 2, 3, 4]
    ar(a, "worker", "sync")
    assert [r["run"] for r in ar(a, "log", "--json").json()["runs"]] == [1, 2, 3, 4]
    ar(b, "doctor", "--fix")
    assert [r["run"] for r in runs(b)] == [1, 2, 3, 4]


def test_a_joined_clone_whose_ledger_lost_the_incumbents_line_is_told_doctor(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b keeps (the incumbent), then its ledger loses that line (by hand): run names doctor
    --fix, which puts it back from the state ref, where it named worker sync, which could
    not help (the record is on b's own ledger ref, which b does not read)."""
    _, b, _ = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    ledger = b / ".auto" / "log.jsonl"
    ledger.write_bytes(b"".join(ledger.read_bytes().splitlines(True)[:-1]))
    write(b / "value.txt", "80\n")
    refused = ar(b, "run", "-d", "value 80", expect=3)
    assert refused.err.strip().endswith(
        "log.jsonl lost the line of kept run 2, the incumbent, which this clone's ledger ref "
        "holds; git autoresearch doctor --fix restores it; nothing was measured or changed")
    ar(b, "doctor", "--fix")
    assert ar(b, "run", "-d", "value 80", "--json").json()["status"] == "keep"


def test_worker_add_in_a_joined_clone_is_refused(machines: tuple[Path, Path, Path],
                                                 ar: Tool, tmp_path: Path) -> None:
    """Local workers of a joined clone would take run numbers on no remote: refused, no
    worktree made, naming the join that works."""
    _, b, _ = machines
    refused = ar(b, "worker", "add", "1", "--path", str(tmp_path / "w"), expect=3)
    assert refused.err.strip() == (
        "git autoresearch: this clone joined session s1 through origin: a worker added here "
        "would take its run numbers on no remote; clone the repository again and join from "
        "there (git autoresearch worker join origin s1 --name NAME)")
    assert not (tmp_path / "w").exists()
    # nor is one removed there, with a message that does not send it to itself
    assert ar(b, "worker", "remove", "ma", expect=3).err.strip() == (
        "git autoresearch: this clone is worker mb of session s1, joined through origin: its "
        "other workers are clones that joined too (git autoresearch worker list); it adds and "
        "removes none")


def test_a_joined_clone_with_the_session_branch_in_another_worktree_takes_no_number(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """Another worktree of b has the session branch checked out: b's run is refused before
    a run number is taken on the remote or anything is measured, naming what works there
    (it named a worker branch a joined clone does not have, after taking the number)."""
    _, b, remote = machines
    other = tmp_path / "other"
    git(b, "worktree", "add", "-q", str(other), BRANCH)
    write(b / "value.txt", "90\n")
    refused = ar(b, "run", "-d", "value 90", expect=3)
    assert refused.err.strip() == (
        f"git autoresearch: the session branch {BRANCH} is checked out in {other}: with "
        "workers, it is checked out nowhere and moves only by keeps; there, git switch "
        "--detach; nothing was recorded")
    assert not [ref for ref in remote_refs(remote) if "/runs/" in ref]
    git(other, "switch", "-q", "--detach")
    assert ar(b, "run", "-d", "value 90", "--json").json()["run"] == 2


def test_a_join_that_would_move_the_checked_out_session_branch_is_refused(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """A clone that pulled and resumed has the session branch checked out; another clone
    keeps; its join used to move the branch's ref under the work tree, which held the old
    files staged against the new commit, and its next keep undid the other clone's. Now the
    join is refused, nothing changed, naming the way out, which works."""
    a, b, remote = machines
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(remote), str(review))
    ar(review, "pull", "origin", "s1")
    ar(review, "resume")
    head = git(review, "rev-parse", "HEAD")
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    refused = ar(review, "worker", "join", "origin", "s1", "--name", "mr", expect=3)
    assert refused.err.strip() == (
        "git autoresearch: the session branch autoresearch/s1 is checked out here and the "
        "remote has newer commits on it; the branch and the work tree were left as they are "
        "(the remote's refs fetched): switch to another branch (git switch -), then run this "
        "again")
    assert git(review, "rev-parse", "HEAD", BRANCH) == f"{head}\n{head}"
    assert git(review, "status", "--porcelain") == ""
    git(review, "switch", "-q", "-")
    ar(review, "worker", "join", "origin", "s1", "--name", "mr")
    assert git(review, "status", "--porcelain") == ""
    write(review / "extra.txt", "80\n")
    done = ar(review, "run", "-d", "extra 80", "--json").json()
    assert (done["status"], done["metric"]) == ("keep", 170)
    assert git(remote, "show", f"{BRANCH}:value.txt") == "90"


def test_a_clone_that_fetched_the_refs_by_hand_resumes_with_every_run(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """resume restores .auto/ from a state ref fetched by hand, with the runs of the joined
    clones' ledger refs fetched beside it."""
    kept_by_two_clones(machines, ar)
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(machines[2]), str(review))
    git(review, "fetch", "-q", "origin", "refs/autoresearch/*:refs/autoresearch/*",
        f"{BRANCH}:{BRANCH}")
    resumed = ar(review, "resume", "--session-id", "s1").out
    assert "added runs 2, 3 to .auto/log.jsonl (recorded by the clones that joined the " \
        "session)" in resumed
    assert [r["run"] for r in runs(review)] == [1, 2, 3]
    assert ar(review, "doctor").out.strip() == "no problems found"


def test_doctor_restores_the_joined_clones_runs_a_pulled_ledger_lacks(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """A clone whose ledger lacks runs the joined clones recorded (pulled by an earlier
    version): doctor finds them on the clones' ledger refs, and --fix puts them back."""
    kept_by_two_clones(machines, ar)
    review = tmp_path / "review"
    git(tmp_path, "clone", "-q", str(machines[2]), str(review))
    ar(review, "pull", "origin", "s1")
    # (as an older version left it: the state ref and the ledger the first join sent)
    git(review, "update-ref", "refs/autoresearch/s1/state", "refs/autoresearch/s1/state^")
    (review / ".auto" / "log.jsonl").write_bytes(saved_ledger(Repo.discover(review), "s1"))
    git(review, "switch", "-q", BRANCH)
    found = ar(review, "doctor", "--json", expect=None).json()["findings"]
    commits = [git(review, "rev-parse", "--short", rev) for rev in (f"{BRANCH}^", BRANCH)]
    assert [(f["problem"], f["fix"]) for f in found] == [
        (f"commit {commits[0]} records run 2 as kept, but the ledger has no run 2",
         "restore the run's line from the ledger ref of worker mb"),
        (f"commit {commits[1]} records run 3 as kept, but the ledger has no run 3",
         "restore the run's line from the ledger ref of worker ma")]
    ar(review, "doctor", "--fix")
    assert [r["run"] for r in runs(review)] == [1, 2, 3]
    assert ar(review, "doctor").out.strip() == "no problems found"


def test_a_new_segment_is_refused_in_a_joined_clone(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Other clones would never see a new segment's header: refused, nothing written."""
    _, b, _ = machines
    before = (b / ".auto" / "log.jsonl").read_bytes()
    refused = ar(b, "start", "--new-segment", "--goal", "again", expect=3)
    assert refused.err.strip() == (
        "git autoresearch: this clone joined session s1 through origin: a new segment would "
        "not reach the other clones; start a new session (git autoresearch start --session-id "
        "NEW) and have them join it")
    assert (b / ".auto" / "log.jsonl").read_bytes() == before


def test_a_candidate_is_judged_against_a_keep_whose_push_just_landed(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """b's keep is on the remote, b not yet done recording it: a's candidate, replayed onto it,
    is judged against its record, which travelled in the same push: a change that makes no
    difference there is no keep."""
    a, b, remote = machines
    go = tmp_path / "go"
    write(b / "value.txt", "90\n")
    paused = paused_at("keep:after-push", go, b, "run", "-d", "value 90", "--json")
    write(a / "extra.txt", "100\n\n")  # the same score: no gain on any commit
    record = ar(a, "run", "-d", "no gain", "--json").json()
    go.touch()
    out, err = paused.communicate(timeout=60)
    assert paused.returncode == 0, err
    assert (record["status"], record["metric"]) == ("discard", 190)
    assert record["replayed"]["kept_meanwhile"] == [json.loads(out)["run"]]
    assert git(remote, "rev-parse", BRANCH) == git(b, "rev-parse", "HEAD")


def test_a_keep_killed_after_its_push_is_recorded_though_another_kept_on_it(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b's keep landed, then b was killed; a kept on top of it: b's resume records b's keep
    (its commit is on the remote's branch), nothing undone."""
    a, b, remote = machines
    write(b / "value.txt", "90\n")
    killed = tool(b, "run", "-d", "value 90", env={"GIT_AUTORESEARCH_DIE_AT": "keep:after-push"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    write(a / "extra.txt", "80\n")
    assert ar(a, "run", "-d", "extra 80", "--json").json()["status"] == "keep"
    done = ar(b, "resume", "--json").json()
    assert done["actions"][0].startswith("finished the interrupted keep of run 2")
    mine = [r for r in runs(b) if r["run"] == 2]
    assert [(r["status"], r["metric"]) for r in mine] == [("keep", 190)]
    assert git(remote, "rev-parse", f"{BRANCH}^") == git(b, "rev-parse", "HEAD")
    assert (b / "value.txt").read_text() == "90\n"


def test_a_join_killed_before_it_took_its_name_joins_again(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """Killed after fetching, before its name was taken on the remote: the same join again
    works; meanwhile nothing names that worker."""
    _, _, remote = machines
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(remote), str(c))
    killed = tool(c, "worker", "join", "origin", "s1", "--name", "mc",
                  env={"GIT_AUTORESEARCH_DIE_AT": "join:before-claim"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "refs/autoresearch/s1/ledgers/mc" not in remote_refs(remote)
    joined = ar(c, "worker", "join", "origin", "s1", "--name", "mc", "--json").json()
    assert joined["branch"] == "autoresearch-workers/s1/mc"
    assert "refs/autoresearch/s1/ledgers/mc" in remote_refs(remote)


def test_two_joins_under_one_name_at_once_let_one_in(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """Two clones join as mc at the same moment: the name is taken by creating its ledger ref
    on the remote only if absent, so the second is refused and is no worker; a name that
    differs only in case is refused too."""
    _, _, remote = machines
    c, d = tmp_path / "c", tmp_path / "d"
    for clone in (c, d):
        git(tmp_path, "clone", "-q", str(remote), str(clone))
    go = tmp_path / "go"
    paused = paused_at("join:before-claim", go, c, "worker", "join", "origin", "s1", "--name",
                       "mc")
    ar(d, "worker", "join", "origin", "s1", "--name", "mc")
    go.touch()
    _, err = paused.communicate(timeout=60)
    assert paused.returncode == 3
    assert err.strip() == (
        "git autoresearch: a worker named mc joined session s1 through origin meanwhile (or "
        "the remote refused its ledger ref): join again with another name (--name); this clone "
        "is no worker yet")
    assert git(c, "symbolic-ref", "--short", "HEAD") == "main"
    assert ar(c, "worker", "join", "origin", "s1", "--name", "MB", expect=3).err.strip() == (
        "git autoresearch: a worker named mb already joined session s1 through origin: choose "
        "another name (--name)")


def test_sync_sends_what_the_remote_lacks_and_fetches_the_others_attempts(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """worker sync sends this clone's ledger when the remote's copy lags, and brings the other
    clones' attempt refs, so that show and doctor find a discard's attempt."""
    a, b, remote = machines
    write(a / "extra.txt", "150\n")
    worse = ar(a, "run", "-d", "worse", "--json").json()
    assert worse["status"] == "discard"
    ar(b, "worker", "sync")
    attempt = f"refs/autoresearch/s1/attempts/{worse['run']}"
    assert git(b, "rev-parse", attempt) == git(a, "rev-parse", attempt)
    assert ar(b, "doctor").out.strip() == "no problems found"
    with open(b / ".auto" / "log.jsonl", "a") as ledger:
        ledger.write('{"type":"note","text":"by hand"}\n')
    ar(b, "worker", "sync")
    sent = git(remote, "show", "refs/autoresearch/s1/ledgers/mb:log.jsonl").splitlines()
    assert json.loads(sent[-1]) == {"type": "note", "text": "by hand"}


def test_push_and_pull_in_joined_clones_leave_each_clones_state_alone(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Each joined clone's state ref mirrors its own ledger: after b pushes, a's pull and push
    still go (they used to call the two states diverged)."""
    a, b, _ = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    write(a / "extra.txt", "150\n")
    ar(a, "run", "-d", "worse")
    ar(b, "push", "origin", "s1")
    ar(a, "pull", "origin", "s1")
    ar(a, "push", "origin", "s1")


def test_an_attempt_ref_a_kill_kept_from_the_remote_is_sent_by_the_next_sync(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """A discard killed after its ledger line, before its push: the next sync sends its
    attempt ref, so doctor finds it in every clone."""
    a, b, remote = machines
    write(b / "extra.txt", "150\n")
    killed = tool(b, "run", "-d", "worse", env={"GIT_AUTORESEARCH_DIE_AT": "record:after-ledger"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    attempt = "refs/autoresearch/s1/attempts/2"
    assert attempt not in remote_refs(remote)
    ar(b, "resume")
    ar(b, "worker", "sync")
    assert remote_refs(remote)[attempt] == git(b, "rev-parse", attempt)
    ar(a, "worker", "sync")
    assert ar(a, "doctor").out.strip() == "no problems found"


@pytest.mark.parametrize("rule", ["strict", "sequential"])
def test_a_run_is_decided_against_the_incumbent_the_remote_holds_then(
        repo: Path, ar: Tool, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        rule: str) -> None:
    """a measured its candidate on the old incumbent; b kept meanwhile: before a decides, it
    reads the remote's tip again, replays its candidate onto b's keep, measures it there and
    decides against b's keep (its samples the pool), never against the incumbent that is
    gone; for a discard as for a keep."""
    a, b, remote = make_machines(repo, ar, tmp_path, tmp_path_factory, "--decision", rule)
    for extra, value, verdict in (("150", "90", "discard"), ("50", "80", "keep")):
        go = tmp_path / "go"
        go.unlink(missing_ok=True)
        write(a / "extra.txt", f"{extra}\n")
        paused = paused_at("run:measured", go, a, "run", "-d", f"extra {extra}", "--json")
        write(b / "value.txt", f"{value}\n")
        kept = ar(b, "run", "-d", f"value {value}", "--json").json()
        assert kept["status"] == "keep"
        go.touch()
        out, err = paused.communicate(timeout=60)
        assert paused.returncode == 0, err
        record = check_document(json.loads(out))
        assert record["replayed"]["kept_meanwhile"] == [kept["run"]]
        assert (record["status"], record["metric"]) == (verdict, int(value) + int(extra))
        assert record["decision"]["pool_median"] == kept["metric"]
        assert git(remote, "rev-parse", BRANCH) == git(
            b if verdict == "discard" else a, "rev-parse", "HEAD")
        ar(b, "worker", "sync")
        git(b, "checkout", "-q", "--", ".")


def test_a_remote_whose_hooks_refuse_is_quoted_and_nothing_is_recorded(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """A remote that refuses the session's refs (a pre-receive hook) is no other clone that
    kept first: its words are said, nothing is recorded, the candidate stays."""
    a, b, remote = machines
    write(remote / "hooks" / "pre-receive", "#!/bin/sh\necho 'read-only until Monday'\n"
          "exit 1\n", 0o755)
    write(b / "value.txt", "90\n")
    res = ar(b, "run", "-d", "value 90", expect=3)
    assert "the remote refused refs/autoresearch/s1/" in res.err
    assert "pre-receive hook declined" in res.err and "read-only until Monday" in res.err
    assert "taken by other workers" not in res.err and "same name" not in res.err
    assert [r["run"] for r in runs(b)] == [1] or not runs(b)
    assert (b / "value.txt").read_text() == "90\n"


def test_a_joined_clone_that_finalized_says_so_and_gc_cleans_it(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """A clone that joined through a remote has a worker branch of its own; once it has
    finalized, with no run after, the session is finalized there too (not running), and gc
    deletes its attempt refs."""
    a, b, _ = machines
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "value 90")
    write(b / "value.txt", "95\n")
    ar(b, "run", "-d", "value 95")
    assert ar(b, "sessions", "--json").json()["sessions"][0]["state"] == "running"
    ar(b, "finalize", "--samples", "0")
    assert ar(b, "sessions", "--json").json()["sessions"][0]["state"] == "finalized"
    done = ar(b, "gc", "s1", "--json").json()
    assert done["deleted"] == {"s1": ["refs/autoresearch/s1/attempts/3"]}
    write(b / "value.txt", "85\n")
    ar(b, "run", "-d", "value 85, after finalize")
    assert ar(b, "sessions", "--json").json()["sessions"][0]["state"] == "running"


def test_stop_in_a_joined_clone_says_it_stops_this_clone(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Each clone has its own .auto/: STOP in one stops its workers, and says that a clone
    joined through the remote is stopped in its own; the other clone goes on."""
    a, b, _ = machines
    ar(b, "stop")
    said = ar(b, "run", "-d", "stopped", expect=4).err
    assert "a clone that joined through the remote has its own .auto/STOP" in said
    assert "every worker stops" not in said
    write(a / "value.txt", "90\n")
    assert ar(a, "run", "-d", "goes on", "--json").json()["status"] == "keep"


def racing_remote(remote: Path, ref: str, commit: str) -> None:
    """An update hook on ``remote`` that, once, sets ``ref`` to ``commit`` itself: another push
    that lands after the remote checked this push's lease and before it locks the ref, as
    clones that push at the same moment do (the update hook runs between the two, outside the
    quarantine). The remote's answer is then not a lease that failed (``stale info``) but an
    atomic transaction that could not lock the ref."""
    write(remote / "hooks" / "update",
          f"#!/bin/sh\n[ \"$1\" = {ref} ] && [ ! -e raced ] && touch raced && "
          f"git update-ref {ref} {commit}\nexit 0\n", 0o755)


def test_a_run_number_lost_in_a_race_on_the_remote_is_stepped_over(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Another clone takes run 2 between the lease check and the lock ("cannot lock ref ...:
    reference already exists"): that is a number taken, stepped over, not the remote's refusal."""
    a, b, remote = machines
    racing_remote(remote, "refs/autoresearch/s1/runs/2", git(a, "rev-parse", BRANCH))
    write(b / "value.txt", "90\n")
    record = ar(b, "keep", "-d", "value 90", "--metric", "190", "--json").json()
    assert record["run"] == 3
    assert "refs/autoresearch/s1/runs/3" in remote_refs(remote)


def test_a_keep_that_loses_a_race_for_the_branch_is_measured_again(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Another clone's keep lands on the session branch between the lease check and the lock
    ("is at ... but expected ..."): b's keep is undone and refused as when the lease fails, the
    candidate left in the work tree, never as the remote's refusal."""
    a, b, remote = machines
    write(a / "value.txt", "80\n")
    theirs = ar(a, "keep", "-d", "value 80", "--metric", "180", "--json").json()["commit"]
    full = git(a, "rev-parse", theirs)
    git(remote, "update-ref", f"refs/heads/{BRANCH}", git(remote, "rev-parse", f"{full}^"))
    racing_remote(remote, f"refs/heads/{BRANCH}", full)
    write(b / "value.txt", "90\n")
    res = ar(b, "keep", "-d", "value 90", "--metric", "190", expect=3)
    assert "remote refused" not in res.err and "measure" in res.err, res.err
    assert (b / "value.txt").read_text() == "90\n"


# --- a measuring host (git autoresearch measurer) -----------------------------------------

def queued_candidate(agent: Path, value: str, description: str, base: str | None = None,
                     path: str = "value.txt") -> queue.Candidate:
    """What an agent's clone queues: a commit of its work tree (``path`` = ``value``) on the
    incumbent it built on (``base``, default its HEAD)."""
    repo = Repo.discover(agent)
    on = base or repo.head()
    assert on is not None
    blob = git(agent, "hash-object", "-w", "--stdin", input=value.encode())
    entries = [f"100644 blob {blob}\t{path}" if line.endswith(f"\t{path}") else line
               for line in git(agent, "ls-tree", on).splitlines()]
    tree = git(agent, "mktree", input=("\n".join(entries) + "\n").encode())
    commit = repo.commit_tree(tree, [on], "work tree")
    return queue.submit(repo, "origin", "s1", commit, agent="mb", description=description,
                        asi={"hypothesis": "lower"})


def test_a_host_drains_the_queue(machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Two candidates queued by b on the baseline: the host a measures each on its own machine
    against the incumbent, keeps the better one on the remote, replays the other (another
    file) onto that keep and discards it, records both as runs that name the candidate,
    answers each with its record, and leaves the queue empty."""
    a, b, remote = machines
    better = queued_candidate(b, "90\n", "ninety")
    worse = queued_candidate(b, "130\n", "extra 130", path="extra.txt")
    res = ar(a, "measurer", "--drain")
    assert res.out.splitlines() == [
        f"candidate {better.key} from mb: run 2 keep, score = 190",
        f"candidate {worse.key} from mb: run 3 discard, score = 220",
        "the queue is empty: 2 candidate(s) answered"]
    agent = Repo.discover(b)
    kept = queue.verdict(agent, "origin", "s1", better.key)
    dropped = queue.verdict(agent, "origin", "s1", worse.key)
    assert kept is not None and dropped is not None
    assert (kept["run"], kept["status"], kept["queued"], kept["description"], kept["asi"]) == (
        2, "keep", {"key": better.key, "agent": "mb"}, "ninety", {"hypothesis": "lower"})
    assert (dropped["run"], dropped["status"]) == (3, "discard")
    tip = git(remote, "rev-parse", BRANCH)
    assert git(remote, "show", f"{tip}:value.txt") == "90"
    assert git(remote, "rev-parse", f"{tip}^") == git(remote, "rev-parse", f"{better.commit}^")
    assert "refs/autoresearch/s1/attempts/3" in remote_refs(remote)
    assert not [r for r in remote_refs(remote) if "/queue/" in r or "/measuring/" in r]
    assert [r["run"] for r in runs(a)] == [1, 2, 3]
    assert git(a, "status", "--porcelain") == ""


def test_a_host_with_json_prints_a_line_per_candidate_answered(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """measurer --json: one document a line for each candidate, as it is answered (the
    candidate, this host, when it was taken and answered, the verdict it sent), and nothing
    else on stdout; a refused candidate's line carries why."""
    a, b, _ = machines
    base = Repo.discover(b).head()
    better = queued_candidate(b, "90\n", "ninety")
    clash = queued_candidate(b, "80\n", "eighty, on the baseline", base=base)
    res = ar(a, "measurer", "--drain", "--json")
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert [(d["key"], d["agent"], d["host"], d["sent"]) for d in lines] == [
        (better.key, "mb", "ma", True), (clash.key, "mb", "ma", True)]
    assert (lines[0]["verdict"]["run"], lines[0]["verdict"]["status"]) == (2, "keep")
    assert "conflicts with the incumbent (" in lines[1]["verdict"]["refused"]
    assert all(d["taken_at"] <= d["answered_at"] for d in lines)
    assert lines[0]["answered_at"] <= lines[1]["taken_at"]
    assert "the queue is empty: 2 candidate(s) answered" in res.err


def test_a_host_stopped_by_a_signal_ends_its_json_lines_with_the_error(
        machines: tuple[Path, Path, Path]) -> None:
    """measurer --json waiting on an empty queue, then terminated: exit 143, and its last
    line is the error document, on one line as the others are."""
    a, _, _ = machines
    host = launch(a, "measurer", "--json", "--poll", "0.1")
    time.sleep(1.0)
    host.send_signal(signal.SIGTERM)
    out, err = host.communicate(timeout=60)
    assert host.returncode == 143, err.decode()
    [line] = out.decode().splitlines()
    document = check_document(json.loads(line))
    assert (document["schema"], document["exit_code"]) == ("git-autoresearch:error/1", 143)


def test_a_host_stopped_after_many_runs_names_none_it_answered_for(
        machines: tuple[Path, Path, Path]) -> None:
    """A host that answered two candidates, then terminated while it waited: its message and
    its error document name no run (their verdicts were sent), not every one of a night's
    runs."""
    a, b, remote = machines
    queued_candidate(b, "90\n", "ninety")
    queued_candidate(b, "130\n", "extra 130", path="extra.txt")
    host = launch(a, "measurer", "--poll", "0.1", "--json")
    end = time.monotonic() + 60
    while len([r for r in remote_refs(remote) if "/verdicts/" in r]) < 2:
        assert time.monotonic() < end, "the host answered no two candidates"
        time.sleep(0.1)
    host.send_signal(signal.SIGTERM)
    out, err = host.communicate(timeout=60)
    assert host.returncode == 143
    assert err.decode().splitlines()[-1] == "git autoresearch: terminated"
    last = json.loads(out.decode().splitlines()[-1])
    assert (last["exit_code"], last["recorded"]) == (143, None)


def test_two_hosts_share_one_queue(machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Two measurers drain one queue at the same time (a and b, each a joined clone): every
    candidate is answered once, by one of them, every run is recorded once, and the queue is
    empty; the keeps on the remote's branch each have a record."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb")
    sent = [queued_candidate(b, f"{value}\n", f"value {value}", path=path)
            for value, path in ((95, "value.txt"), (96, "extra.txt"), (80, "value.txt"),
                                (85, "extra.txt"), (99, "value.txt"), (70, "extra.txt"))]
    hosts = [launch(where, "measurer", "--drain", "--json", "--poll", "0.1")
             for where in (a, b)]
    lines = []
    for host in hosts:
        out, err = host.communicate(timeout=120)
        assert host.returncode == 0, err.decode()
        lines += [check_document(json.loads(line)) for line in out.decode().splitlines()]
    assert sorted(d["key"] for d in lines) == sorted(c.key for c in sent)
    assert all(d["sent"] for d in lines)
    measured = [d["verdict"]["run"] for d in lines if "run" in d["verdict"]]
    assert len(set(measured)) == len(measured)
    assert not [r for r in remote_refs(remote) if "/queue/" in r or "/measuring/" in r]
    ar(a, "worker", "sync")
    recorded = [r for r in ar(a, "log", "--json").json()["runs"] if r.get("queued")]
    assert sorted(r["run"] for r in recorded) == sorted(measured)
    assert sorted(r["queued"]["key"] for r in recorded) == sorted(
        d["key"] for d in lines if "run" in d["verdict"])


def test_a_candidate_that_conflicts_with_the_incumbent_is_refused(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """After a keep, a candidate built on the baseline that changes the same lines conflicts:
    it is refused, with nothing measured or recorded, and the host goes on."""
    a, b, _ = machines
    base = Repo.discover(b).head()
    queued_candidate(b, "90\n", "ninety")
    ar(a, "measurer", "--drain")
    clash = queued_candidate(b, "80\n", "eighty, on the baseline", base=base)
    res = ar(a, "measurer", "--drain")
    verdict = queue.verdict(Repo.discover(b), "origin", "s1", clash.key)
    assert verdict is not None and "conflicts with the incumbent (" in verdict["refused"]
    assert f"candidate {clash.key} from mb: refused:" in res.out
    assert [r["run"] for r in runs(a)] == [1, 2]
    assert git(a, "status", "--porcelain") == ""


def test_a_measuring_host_outside_a_joined_clone_is_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    res = ar(repo, "measurer", "--drain", expect=3)
    assert "a measuring host runs in a clone joined to the session's remote" in res.err


def test_a_host_with_changes_in_its_work_tree_takes_nothing(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """A host whose work tree has changes refuses (exit 3) before taking a candidate, whether
    the queue holds one or not: no claim is left on the remote, the candidate stays queued for
    another host, and the changes stay as they are."""
    a, b, remote = machines
    write(a / "value.txt", "95\n")
    write(a / "notes.txt", "mine\n")
    idle = ar(a, "measurer", "--drain", expect=3)
    assert "the work tree of this measuring host has changes (notes.txt, value.txt)" in idle.err
    sent = queued_candidate(b, "90\n", "ninety")
    busy = ar(a, "measurer", "--drain", expect=3)
    assert "has changes (notes.txt, value.txt)" in busy.err and ": taken" not in busy.err
    refs = remote_refs(remote)
    assert f"refs/autoresearch/s1/queue/{sent.key}" in refs
    assert not [r for r in refs if "/measuring/" in r]
    assert (a / "value.txt").read_text() == "95\n" and (a / "notes.txt").read_text() == "mine\n"


def test_an_agent_whose_remote_is_gone_is_told_what_git_said(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """The remote renamed away: run refuses (exit 3) quoting git, nothing queued and the work
    tree as it is."""
    _, b, _ = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    git(b, "remote", "rename", "origin", "up")
    write(b / "value.txt", "90\n")
    res = ar(b, "run", "-d", "ninety", expect=3)
    assert "cannot queue the candidate on origin: 'origin' does not appear to be a git " \
           "repository" in res.err
    assert (b / "value.txt").read_text() == "90\n"
    assert ar(b, "collect", expect=3).err.endswith("(run --no-wait queues one)\n")


def test_a_clone_measured_on_a_host_is_no_host(machines: tuple[Path, Path, Path], ar: Tool
                                                ) -> None:
    _, b, _ = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    res = ar(b, "measurer", "--drain", expect=3)
    assert "this clone was joined with --measure-on-host: a host measures its candidates" \
        in res.err


def queue_holds(remote: Path, seconds: float = 20) -> None:
    """Wait until a candidate is queued on ``remote``."""
    import time

    end = time.monotonic() + seconds
    while not any("/queue/" in ref for ref in remote_refs(remote)):
        assert time.monotonic() < end, "no candidate was queued"
        time.sleep(0.1)


def test_an_agent_measured_on_a_host_waits_for_its_verdict(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b joined with --measure-on-host: its run queues the work tree and waits; the host a
    measures and keeps it; b's run then prints the record as a local run does, and b's work
    tree is on the new incumbent, clean, as after a local keep."""
    a, b, remote = machines
    joined = ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    assert "run queues each candidate for a measuring host" in joined.out
    write(b / "value.txt", "90\n")
    agent = launch(b, "run", "--wait-timeout", "60", "-d", "ninety", "--asi", "hypothesis=lower",
                   "--json")
    queue_holds(remote)
    ar(a, "measurer", "--drain")
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err.decode()
    record = check_document(json.loads(out))
    assert (record["run"], record["status"], record["metric"], record["committed"],
            record["queued"]["agent"]) == (2, "keep", 190, True, "mb"), record
    assert record["warnings"] == [], record["warnings"]
    assert "queued candidate mb-" in err.decode() and "waiting for a measuring host" in err.decode()
    assert git(b, "rev-parse", "HEAD") == git(remote, "rev-parse", BRANCH)
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "90\n"


def test_an_agent_that_waits_too_long_leaves_its_candidate_queued(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """No host runs: --wait-timeout gives up (exit 3), the candidate stays queued for a host
    to take later, and the work tree is as it was."""
    _, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")
    res = ar(b, "run", "-d", "ninety", "--wait-timeout", "0.5", expect=3)
    assert "no verdict on candidate mb-" in res.err and "it stays queued" in res.err
    assert any("/queue/mb-" in ref for ref in remote_refs(remote))
    assert (b / "value.txt").read_text() == "90\n"
    assert [r["run"] for r in runs(b)] == [1]


def test_an_agents_candidate_that_conflicts_is_recorded_as_a_discard(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b (measured on a host) queues a change to value.txt while a keeps another change to it:
    the host refuses b's candidate with nothing measured, and b's run records it as a discard
    that says so, saved at its attempt ref and reverted, then follows the new incumbent."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(a / "value.txt", "80\n")
    ar(a, "keep", "-d", "eighty", "--metric", "180")
    write(b / "value.txt", "90\n")
    agent = launch(b, "run", "--wait-timeout", "60", "-d", "ninety", "--json")
    queue_holds(remote)
    ar(a, "measurer", "--drain")
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err.decode()
    record = check_document(json.loads(out))
    assert (record["status"], record["metric"], record["decision"]) == ("discard", None, None)
    assert record["reason"].startswith("not measured: candidate mb-")
    assert "conflicts with the incumbent (" in record["reason"]
    assert not record["reason"].endswith("nothing was changed")  # (its work tree was reverted)
    assert git(b, "show", f"refs/autoresearch/s1/attempts/{record['run']}:value.txt") == "90"
    assert git(b, "rev-parse", "HEAD") == git(remote, "rev-parse", BRANCH)
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "80\n"


HOST_SCRIPTS = Path(__file__).resolve().parents[2] / "share" / "measuring-host"


def test_the_batch_and_ci_examples_drain_the_queue(machines: tuple[Path, Path, Path], ar: Tool,
                                                   tmp_path: Path) -> None:
    """The shipped measuring-host scripts on a local bare remote: the Slurm job (run as Slurm
    runs a copy, drain.sh found from the submit folder) clones, joins as a host and answers
    b's queued candidate; the CI job's command then runs in the same kept clone, joining again
    under its name, and answers the next; each job ends once the queue is empty."""
    import re
    import shutil
    import subprocess

    _, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    env = {**os.environ, "REMOTE": str(remote), "SESSION": "s1", "MEASURER_NAME": "h1",
           "AUTORESEARCH_WORKDIR": str(tmp_path / "host")}
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(HOST_SCRIPTS / "measure.sbatch", spool / "slurm_script")
    for value, job in (("90\n", [str(spool / "slurm_script")]), ("80\n", None)):
        write(b / "value.txt", value)
        agent = launch(b, "run", "--wait-timeout", "60", "-d", f"value {value.strip()}",
                       "--json")
        queue_holds(remote)
        if job is None:  # the CI job's step, as the runner's shell runs it
            yml = (HOST_SCRIPTS / "measure-queue.yml").read_text()
            step = re.search(r"^        run: (sh .*drain\.sh\")$", yml, re.M)
            assert step is not None
            job = ["sh", "-c", step.group(1)]
        done = subprocess.run(["sh", *job] if job[0] != "sh" else job, env={
            **env, "SLURM_SUBMIT_DIR": str(HOST_SCRIPTS)}, capture_output=True, text=True,
            timeout=120)
        assert done.returncode == 0, done.stderr
        assert "the queue is empty: 1 candidate(s) answered" in done.stdout
        out, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err.decode()
        assert json.loads(out)["status"] == "keep"
    assert git(remote, "show", f"{BRANCH}:value.txt") == "80"
    assert [r["run"] for r in runs(tmp_path / "host")] == [1, 2, 3]


def test_a_host_killed_while_measuring_measures_the_candidate_again_once(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """The host dies (SIGKILL) after measuring b's candidate, before recording it: the
    candidate stays queued, taken by the dead host, and its change is left on the host's work
    tree. Restarted under its name, the host takes the candidate back, puts its work tree
    back, measures it again and answers it: one run for the candidate."""
    a, b, remote = machines
    candidate = queued_candidate(b, "90\n", "ninety")
    died = tool(a, "measurer", "--drain", env={"GIT_AUTORESEARCH_DIE_AT": "run:measured"})
    assert died.returncode == -9
    assert any(f"/measuring/{candidate.key}" in ref for ref in remote_refs(remote))
    assert (a / "value.txt").read_text() == "90\n"
    res = ar(a, "measurer", "--drain")
    assert "the queue is empty: 1 candidate(s) answered" in res.out
    record = queue.verdict(Repo.discover(b), "origin", "s1", candidate.key)
    assert record is not None and (record["run"], record["status"]) == (2, "keep")
    assert [r["run"] for r in runs(a)] == [1, 2]


def test_a_host_killed_before_its_verdict_answers_from_the_ledger(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """The host dies after recording the candidate's run, before sending the verdict: the
    next host answers it from the ledger, and the candidate is not measured twice."""
    a, b, _ = machines
    candidate = queued_candidate(b, "90\n", "ninety")
    died = tool(a, "measurer", "--drain",
                env={"GIT_AUTORESEARCH_DIE_AT": HOST_STEPS[0]})
    assert died.returncode == -9
    assert [r["run"] for r in runs(a)] == [1, 2]
    ar(a, "measurer", "--drain")
    record = queue.verdict(Repo.discover(b), "origin", "s1", candidate.key)
    assert record is not None and (record["run"], record["status"]) == (2, "keep")
    assert [r["run"] for r in runs(a)] == [1, 2]


def test_a_host_terminated_as_its_verdict_is_sent_names_no_run(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """SIGTERM at the moment the verdict has been pushed: the host exits 143 saying only
    "terminated", its error document's ``recorded`` null (the run's verdict is on the remote,
    nothing is left unanswered), and a restarted host finds nothing to measure."""
    a, b, _ = machines
    candidate = queued_candidate(b, "90\n", "ninety")
    died = tool(a, "measurer", "--drain", "--json",
                env={"GIT_AUTORESEARCH_DIE_AT": HOST_STEPS[1] + "@TERM"})
    assert died.returncode == 143, died.stderr
    assert died.stderr.splitlines()[-1] == "git autoresearch: terminated"
    last = json.loads(died.stdout.splitlines()[-1])
    assert (last["exit_code"], last["recorded"]) == (143, None)
    record = queue.verdict(Repo.discover(b), "origin", "s1", candidate.key)
    assert record is not None and (record["run"], record["status"]) == (2, "keep")
    assert "the queue is empty: 0 candidate(s) answered" in ar(a, "measurer", "--drain").out
    assert [r["run"] for r in runs(a)] == [1, 2]


@pytest.mark.parametrize("step", ["keep:after-commit", "keep:before-push", "keep:after-push",
                                  "record:before-ledger", "record:after-ledger"])
def test_a_host_killed_while_it_keeps_answers_the_candidate_once(
        machines: tuple[Path, Path, Path], ar: Tool, step: str) -> None:
    """A host killed at each step of a candidate's keep: restarted, it finishes that keep first
    (landing it on the remote), answers the candidate with its record, and the agent's collect
    records nothing more: the candidate is one run, a keep, on both sides."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")
    ar(b, "run", "-d", "ninety", "--no-wait")
    died = tool(a, "measurer", "--drain", env={"GIT_AUTORESEARCH_DIE_AT": step})
    assert died.returncode == -9, died.stderr
    ar(a, "measurer", "--drain")
    record = ar(b, "collect", "--json").json()
    assert (record["run"], record["status"]) == (2, "keep"), record
    ar(a, "worker", "sync")
    ar(b, "worker", "sync")
    for side in (a, b):  # (the runs as read, every worker's merged)
        assert [(r["run"], r["status"]) for r in ar(side, "log", "--json").json()["runs"]] \
            == [(1, "keep"), (2, "keep")]
    assert git(remote, "show", f"{BRANCH}:value.txt") == "90"
    assert not [r for r in remote_refs(remote) if "/queue/" in r or "/measuring/" in r]
    assert git(a, "status", "--porcelain") == "" and git(b, "status", "--porcelain") == ""


def test_a_host_terminated_before_recording_gives_its_candidate_back(
        machines: tuple[Path, Path, Path]) -> None:
    """SIGTERM to a host that measured a candidate and recorded nothing yet: exit 143, and the
    candidate is back in the queue with no claim, for the next host at once."""
    a, b, remote = machines
    sent = queued_candidate(b, "90\n", "ninety")
    host = tool(a, "measurer", "--drain", env={"GIT_AUTORESEARCH_DIE_AT": "run:measured@TERM"})
    assert host.returncode == 143, host.stderr
    assert f"candidate {sent.key} from mb: taken" in host.stderr
    refs = remote_refs(remote)
    assert f"refs/autoresearch/s1/queue/{sent.key}" in refs
    assert not [r for r in refs if "/measuring/" in r]
    assert [r["run"] for r in runs(a)] == [1]


def test_a_host_stopped_by_stop_gives_its_candidate_back(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """.auto/STOP on the host: it exits 4 before taking the candidate, which stays queued
    with no claim, for another host (or this one once STOP is gone)."""
    a, b, remote = machines
    sent = queued_candidate(b, "90\n", "ninety")
    ar(a, "stop")
    ar(a, "measurer", "--drain", expect=4)
    refs = remote_refs(remote)
    assert f"refs/autoresearch/s1/queue/{sent.key}" in refs
    assert not [r for r in refs if "/measuring/" in r]


def test_an_agent_killed_while_waiting_collects_its_verdict_next_time(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """b's run is killed while it waits: the candidate stays queued and the host measures it.
    b's next run collects that verdict (saying so) instead of queueing the same work tree
    twice, and leaves the work tree as a local run does."""
    import signal

    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")
    agent = launch(b, "run", "--wait-timeout", "60", "-d", "ninety", "--json")
    queue_holds(remote)
    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=20)
    ar(a, "measurer", "--drain")
    res = ar(b, "run", "-d", "something else", "--json")
    assert res.json()["run"] == 2 and res.json()["description"] == "ninety"
    assert "queued by an earlier run, is collected first" in res.err
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "90\n"
    assert [r["run"] for r in runs(a)] == [1, 2]


def test_a_run_killed_while_it_queues_leaves_nothing_to_wait_for_forever(
        machines: tuple[Path, Path, Path], ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate is remembered before it is pushed: a run killed in between leaves it known
    but not queued. The next run finds it nowhere on the remote, says so, and queues its own
    work tree instead of waiting for a verdict that will never come; before, a run killed
    just after the push (not yet remembered) made the next run queue the work tree again and
    wait for ever (seen in CI)."""
    from git_autoresearch.history import queue

    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")

    def killed(*args: object, **kwargs: object) -> bool:
        raise SystemExit(137)

    with monkeypatch.context() as patched, pytest.raises(SystemExit):
        patched.setattr(queue, "_push", killed)
        ar(b, "run", "-d", "ninety", "--no-wait")
    assert (b / ".git" / "autoresearch" / "queued.json").exists()
    assert not [r for r in remote_refs(remote) if "/queue/" in r]
    queued = ar(b, "run", "-d", "ninety again", "--no-wait", "--json")
    assert "never reached the queue" in queued.err and "queued instead" in queued.err
    assert queued.json()["description"] == "ninety again"
    assert len([r for r in remote_refs(remote) if "/queue/" in r]) == 1
    ar(a, "measurer", "--drain")
    collected = ar(b, "collect", "--json").json()
    assert (collected["run"], collected["description"]) == (2, "ninety again")


def test_an_agent_that_does_not_wait_collects_its_verdict_with_its_next_run(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """run --no-wait queues the candidate and returns (the queued document), the work tree
    as it is; a second --no-wait is refused until the verdict is collected; once the host has
    measured it, the next run collects it and leaves the work tree on the new incumbent."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")
    queued = check_document(ar(b, "run", "-d", "ninety", "--no-wait", "--json").json())
    assert (queued["agent"], queued["remote"], queued["description"]) == ("mb", "origin",
                                                                          "ninety")
    assert any(f"/queue/{queued['key']}" in ref for ref in remote_refs(remote))
    assert (b / "value.txt").read_text() == "90\n"
    again = ar(b, "run", "-d", "more", "--no-wait", expect=3)
    assert "is not collected yet: git autoresearch collect" in again.err
    ar(a, "measurer", "--drain")
    record = ar(b, "run", "-d", "collect", "--json").json()
    assert (record["run"], record["status"], record["queued"]["key"]) == (2, "keep",
                                                                          queued["key"])
    assert git(b, "status", "--porcelain") == ""
    assert git(b, "rev-parse", "HEAD") == git(remote, "rev-parse", BRANCH)


def test_collect_waits_for_the_verdict_a_run_no_wait_left(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """run --no-wait, then collect --no-wait while no host has measured it: the candidate,
    still queued (exit 0, its queued document), nothing changed; then a host measures it and
    collect prints the run's record as run would, leaving the work tree on the new
    incumbent; a second collect has nothing left to collect (exit 3)."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "90\n")
    queued = ar(b, "run", "-d", "ninety", "--no-wait", "--json").json()
    early = check_document(ar(b, "collect", "--no-wait", "--json").json())
    assert (early["schema"], early["key"]) == ("git-autoresearch:queued/1", queued["key"])
    assert ar(b, "status", "--json").json()["queued"] == {
        "key": queued["key"], "remote": "origin", "base": queued["base"],
        "description": "ninety"}
    assert f"queued      candidate {queued['key']} ('ninety') on origin, its verdict not " \
           "collected: git autoresearch collect" in ar(b, "status").out
    assert (b / "value.txt").read_text() == "90\n" and [r["run"] for r in runs(b)] == [1]
    ar(a, "measurer", "--drain")
    res = ar(b, "collect", "--json")
    record = res.json()
    assert (record["schema"], record["run"], record["status"], record["metric"],
            record["queued"]["key"]) == ("git-autoresearch:run/1", 2, "keep", 190,
                                         queued["key"])
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "90\n"
    assert git(b, "rev-parse", "HEAD") == git(remote, "rev-parse", BRANCH)
    none = ar(b, "collect", expect=3)
    assert "no candidate queued from this clone awaits its verdict" in none.err
    assert "queued" not in ar(b, "status", "--json").json()


def test_collect_gives_up_after_its_timeout_and_a_discard_reverts(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """collect --wait-timeout with no host: exit 3, the candidate still queued and the work
    tree as it is; once a host discards it, collect (in words) reverts the work tree and says
    where the attempt is kept."""
    a, b, remote = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(b / "value.txt", "130\n")
    ar(b, "run", "-d", "worse", "--no-wait")
    late = ar(b, "collect", "--wait-timeout", "0.3", expect=3)
    assert "no verdict on candidate mb-" in late.err and "it stays queued" in late.err
    assert (b / "value.txt").read_text() == "130\n"
    ar(a, "measurer", "--drain")
    res = ar(b, "collect")
    assert res.out.splitlines()[0].startswith("run 2: discard  score = 230 (best was 200)")
    assert "reverted; the attempt is kept at refs/autoresearch/s1/attempts/2" in res.out
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "100\n"


def test_two_commands_collecting_one_candidate_record_it_once(
        machines: tuple[Path, Path, Path], ar: Tool) -> None:
    """Two collect commands wait on one candidate (as a run left waiting and a collect can):
    the host refuses it (a conflict), one of them records the discard and reverts the work
    tree, the other is refused (exit 3), and the candidate is recorded once."""
    a, b, _ = machines
    ar(b, "worker", "join", "origin", "s1", "--name", "mb", "--measure-on-host")
    write(a / "value.txt", "80\n")
    ar(a, "keep", "-d", "eighty", "--metric", "180")
    write(b / "value.txt", "90\n")
    sent = ar(b, "run", "-d", "ninety", "--no-wait", "--json").json()
    waiting = [launch(b, "collect", "--wait-timeout", "60", "--json") for _ in range(2)]
    time.sleep(2.0)  # (both have read the candidate they wait for)
    ar(a, "measurer", "--drain")
    ends = [(p.wait(timeout=60), p.communicate()) for p in waiting]
    assert sorted(code for code, _ in ends) == [0, 3], ends
    lost = next(err.decode() for code, (_, err) in ends if code == 3)
    assert f"the verdict on candidate {sent['key']} was collected by another command" in lost
    ar(b, "worker", "sync")
    mine = [r for r in runs(b) if (r.get("queued") or {}).get("key") == sent["key"]]
    assert [r["status"] for r in mine] == ["discard"]
    assert git(b, "status", "--porcelain") == "" and (b / "value.txt").read_text() == "80\n"


def test_an_agents_new_file_travels_and_what_is_set_aside_reaches_the_remote(
        machines: tuple[Path, Path, Path], ar: Tool, tmp_path: Path) -> None:
    """In a freshly joined agent clone, then again after a collected keep: a file the
    experiment creates is part of the candidate (not taken for the user's), and what the host
    sets aside (here that new file, outside the scope) is saved on the remote, so that the
    agent reads it back after a sync. A file that was there before joining stays the user's."""
    a, _, remote = machines
    b = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    write(b / "mine.txt", "the user's\n")
    ar(b, "worker", "join", "origin", "s1", "--name", "mc", "--measure-on-host")
    for value, made in (("90", "new.txt"), ("80", "more.txt")):
        write(b / "value.txt", f"{value}\n")
        write(b / made, "made by the experiment\n")
        ar(b, "run", "-d", f"{value} and {made}", "--no-wait")
        ar(a, "measurer", "--drain")
        record = ar(b, "collect", "--json").json()
        assert (record["status"], record["scope_violations"]) == ("keep", [made]), record
        ref = record["scope_ref"]
        assert ref in remote_refs(remote)
        ar(b, "worker", "sync")
        assert git(b, "show", f"{ref}:{made}") == "made by the experiment"
        assert not (b / made).exists()
    assert (b / "mine.txt").read_text() == "the user's\n"
    assert git(b, "status", "--porcelain") == "?? mine.txt"


def test_collect_is_for_a_clone_measured_on_a_host(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    res = ar(repo, "collect", expect=3)
    assert "collect is for a clone measured on a host" in res.err
    both = ar(repo, "collect", "--no-wait", "--wait-timeout", "1", expect=2)
    assert "--no-wait and --wait-timeout exclude each other" in both.err


def test_no_wait_is_for_a_clone_measured_on_a_host(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    res = ar(repo, "run", "-d", "x", "--no-wait", expect=2)
    assert "--no-wait and --wait-timeout are for a clone measured on a host" in res.err

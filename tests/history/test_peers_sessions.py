"""Finding a peer's session and its commits: a keep or a discard written by another tool (no
``Autoresearch-Run`` trailer), a pi-autoresearch session below the repository's top or behind
pi's ``workingDir``, and history rewritten after the session (rebase, amend)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Tool, git, ledger_lines, runs, start_args, write


def _pi_commit(top: Path, description: str, trailer: dict[str, object]) -> str:
    """Commit everything as pi-autoresearch's keep does, and return the 7-character id it
    records. pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2383-2397: the message
    is ``${description}\\n\\nResult: ${JSON.stringify(resultData)}`` after ``git add -A``;
    index.ts:2404 records ``git rev-parse --short=7 HEAD`` as the run's ``commit``."""
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m",
        f"{description}\n\nResult: {json.dumps(trailer, separators=(',', ':'))}")
    return git(top, "rev-parse", "--short=7", "HEAD")


def _pi_ledger(where: Path, lines: list[dict[str, object]]) -> Path:
    """A pi-autoresearch ledger at ``where/.auto/log.jsonl`` (one JSON.stringify line each)."""
    return write(where / ".auto" / "log.jsonl",
                 "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"
                         for line in lines))


PI_HEADER: dict[str, object] = {"type": "config", "name": "speed", "metricName": "total_ms",
                                "metricUnit": "ms", "bestDirection": "lower"}


def _pi_run(run: int, commit: str, metric: float, status: str,
            description: str) -> dict[str, object]:
    """A run line as pi-autoresearch 1.6.2 writes it (index.ts:2421-2427: ``run`` then the
    experiment's fields, ``asi`` omitted when empty)."""
    return {"run": run, "commit": commit, "metric": metric, "metrics": {}, "status": status,
            "description": description, "timestamp": 1796060393266 + run, "segment": 0,
            "confidence": None}


def _pi_session(repo: Path) -> tuple[str, str, str]:
    """A pi-autoresearch session at the top of ``repo``: baseline (kept, nothing committed),
    run 2 kept (committed), run 3 discarded (its ``commit`` is HEAD, run 2's: pi records the
    commit the experiment started from and reverts it). Returns the three commits."""
    base = git(repo, "rev-parse", "--short=7", "HEAD")
    write(repo / "value.txt", "80\n")
    kept = _pi_commit(repo, "halve the work", {"status": "keep", "total_ms": 80})
    _pi_ledger(repo, [PI_HEADER, _pi_run(1, base, 100, "keep", "baseline"),
                      _pi_run(2, kept, 80, "keep", "halve the work"),
                      _pi_run(3, kept, 90, "discard", "unroll")])
    return base, kept, kept


# --- item 1: a keep or discard written by another tool ----------------------------------------

def test_show_finds_a_pi_keep_by_its_record_commit(repo: Path, ar: Tool) -> None:
    """A keep pi-autoresearch committed has a ``Result:`` trailer and no ``Autoresearch-Run``
    (pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2384: the message is the
    description and ``Result: {...}`` alone); its record's ``commit`` (index.ts:2404-2407, the
    ``--short=7`` id of the new commit) names it. Failed before: "(no commit: the kept
    measurement changed nothing)"."""
    _, kept, _ = _pi_session(repo)
    full = git(repo, "rev-parse", kept)
    shown = ar(repo, "show", "2", "--json").json()
    assert shown["diff_commit"] == full
    assert shown["diff_source"] == "record"
    assert shown["diff"].startswith(f"commit {full}\n\nhalve the work\n")
    assert "-100\n+80\n" in shown["diff"]
    text = ar(repo, "show", "2").out
    assert (f"(commit {kept}, named by the record's commit field: no Autoresearch-Run trailer "
            "names this run)") in text
    assert "no commit: the kept measurement changed nothing" not in text


def test_show_a_record_without_a_known_status_shows_it_as_read(repo: Path, ar: Tool) -> None:
    """A pi-autoresearch record may lack its status, which pi reads as keep (pi-autoresearch
    1.6.2, extensions/pi-autoresearch/jsonl.ts:74); show --json shows it as read, the status
    written (none, or one unknown) in recorded_status, as log --json does, and its document
    stands to its schema (conftest checks it)."""
    _pi_session(repo)
    lines = ledger_lines(repo)
    del lines[3]["status"]
    lines[2]["status"] = "weird"
    _pi_ledger(repo, lines)
    for run, written in ((3, None), (2, "weird")):
        record = ar(repo, "show", str(run), "--json").json()["record"]
        assert (record["status"], record["recorded_status"]) == ("keep", written)
        logged = ar(repo, "log", "--run", str(run), "--json").json()["runs"][0]
        assert (logged["status"], logged["recorded_status"]) == ("keep", written)


def test_show_a_pi_discard_names_the_commit_it_started_from(repo: Path, ar: Tool) -> None:
    """pi-autoresearch's discard records the commit the agent passed (HEAD, the last keep:
    pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2277 ``commit:
    params.commit.slice(0, 7)``) and reverts the experiment (index.ts:2437): no commit holds the
    attempt, so the keep's diff is not shown as if it were the discard's."""
    _, kept, _ = _pi_session(repo)
    shown = ar(repo, "show", "3", "--json").json()
    assert (shown["diff_commit"], shown["diff_source"], shown["diff"]) == (None, None, "")
    text = ar(repo, "show", "3").out
    assert text.endswith(f"(no attempt ref recorded for this run; its record names {kept}, "
                         "the kept commit it started from)\n")


def test_show_a_pi_baseline_that_committed_nothing(repo: Path, ar: Tool) -> None:
    """pi's baseline keep commits nothing (index.ts:2393 ``git diff --cached --quiet`` exits 0)
    and records the commit it measured: ``show`` says that, without the diff of that commit,
    which is not the run's."""
    base, _, _ = _pi_session(repo)
    write(repo / ".auto" / "log.jsonl", (repo / ".auto" / "log.jsonl").read_text()
          + json.dumps(_pi_run(4, git(repo, "rev-parse", "--short=7", "HEAD"), 79, "keep",
                               "re-run")) + "\n")
    assert ar(repo, "show", "1", "--json").json()["diff_commit"] is None
    assert ar(repo, "show", "1").out.endswith(
        f"(no commit: the kept measurement changed nothing; it measured {base})\n")
    assert ar(repo, "show", "4", "--json").json()["diff_commit"] is None


def test_show_a_karpathy_discard_whose_commit_exists(repo: Path, ar: Tool) -> None:
    """karpathy/autoresearch commits each experiment before running it and, for a discard,
    resets the branch back (karpathy/autoresearch program.md:98 "git commit", program.md:104
    "If val_bpb is equal or worse, you git reset back to where you started"); the row's
    ``commit`` is the experiment's own commit. Failed before: "(no attempt ref recorded for
    this run)"."""
    base = git(repo, "rev-parse", "--short=7", "HEAD")
    write(repo / "value.txt", "95\n")
    git(repo, "commit", "-qam", "increase LR")
    kept = git(repo, "rev-parse", "--short=7", "HEAD")
    write(repo / "value.txt", "120\n")
    git(repo, "commit", "-qam", "switch to GeLU")
    tried = git(repo, "rev-parse", "--short=7", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD^")
    write(repo.parent / "results.tsv",
          "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"
          f"{base}\t1.0\t44.0\tkeep\tbaseline\n"
          f"{kept}\t0.95\t44.0\tkeep\tincrease LR\n"
          f"{tried}\t1.2\t44.0\tdiscard\tswitch to GeLU\n")
    ar(repo, "import", str(repo.parent / "results.tsv"))
    shown = ar(repo, "show", "3", "--json").json()
    assert shown["diff_commit"] == git(repo, "rev-parse", tried)
    assert shown["diff_source"] == "record"
    assert "-95\n+120\n" in shown["diff"]
    kept_shown = ar(repo, "show", "2", "--json").json()
    assert kept_shown["diff_commit"] == git(repo, "rev-parse", kept)
    assert "-100\n+95\n" in kept_shown["diff"]


# --- item 13: history rewritten after the session ----------------------------------------------

def _session_with_keeps(repo: Path, ar: Tool) -> dict[int, str]:
    """Our session on ``repo``: baseline (run 1), keeps 2 and 3, a discard (run 4). Returns
    each run's recorded commit."""
    ar(repo, *start_args())
    for value in ("90", "80", "85"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"value {value}")
    return {r["run"]: r["commit"] for r in runs(repo)}


def _trailer_commits(repo: Path) -> dict[int, str]:
    """Run number -> the 7-character id of the commit whose Autoresearch-Run trailer names it,
    on the session branch."""
    found = {}
    for line in git(repo, "log", "--format=%h %(trailers:key=Autoresearch-Run,valueonly)",
                    "--abbrev=7", "main..autoresearch/s1").splitlines():
        commit, _, number = line.partition(" ")
        if number.strip():
            found[int(number)] = commit
    return found


def test_rebase_doctor_finds_commits_by_trailers_and_fix_updates_ledger(repo: Path,
                                                                       ar: Tool) -> None:
    """After ``git rebase`` every keep commit has a new id, found again by its
    ``Autoresearch-Run`` and ``Autoresearch-Session`` trailers. Failed before: ``doctor`` said
    nothing was wrong and ``status`` gave no warning, while the ledger named commits on no
    branch."""
    before = _session_with_keeps(repo, ar)
    git(repo, "switch", "-q", "main")
    write(repo / "README.md", "project, moved on\n")
    git(repo, "commit", "-qam", "main moved on")
    git(repo, "switch", "-q", "autoresearch/s1")
    git(repo, "rebase", "-q", "main")
    after = _trailer_commits(repo)
    assert sorted(after) == [2, 3] and after[2] != before[2] and after[3] != before[3]

    warnings = ar(repo, "status", "--json").json()["warnings"]
    for number in (2, 3):
        assert (f"run {number} is recorded as kept at {before[number]}, which is on no branch; "
                f"commit {after[number]} on autoresearch/s1 carries its trailers "
                f"(Autoresearch-Run: {number}, Autoresearch-Session: s1): history was "
                "rewritten (a rebase or an amend); git autoresearch doctor --fix updates the "
                "ledger") in warnings

    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    rewritten = [f for f in found if "carries its trailers" in f["problem"]]
    assert [f["fix"] for f in rewritten] == ["update the ledger's commit fields"] * 2
    assert any(f["problem"] == f"run 4 names commit {before[3]}, which is on no branch; it is "
               f"run 3's, now {after[3]}" for f in found)

    fixed = ar(repo, "doctor", "--fix", "--json").json()
    assert all(f["fixed"] for f in fixed["findings"] if f["fix"])
    lines = runs(repo)
    assert [r["commit"] for r in lines] == [before[1], after[2], after[3], after[3]]
    assert [r.get("commit_before_rewrite") for r in lines] == [None, before[2], before[3],
                                                               before[3]]
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    assert ar(repo, "status", "--json").json()["warnings"] == []
    saved = git(repo, "show", "refs/autoresearch/s1/state:log/00000.jsonl")
    assert f'"commit":"{after[3]}"' in saved
    assert ar(repo, "show", "3", "--json").json()["diff_commit"].startswith(after[3])


def test_amend_of_the_last_keep(repo: Path, ar: Tool) -> None:
    """``git commit --amend --no-edit`` keeps the message, so the trailers, and gives the keep
    a new id: doctor finds it and --fix records it; the rest of each line stays as it was."""
    before = _session_with_keeps(repo, ar)
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    git(repo, "add", "src/lib.py")
    git(repo, "commit", "-q", "--amend", "--no-edit")
    after = git(repo, "rev-parse", "--short=7", "HEAD")
    old_lines = (repo / ".auto" / "log.jsonl").read_text().splitlines()
    finding = [f for f in ar(repo, "doctor", "--json", expect=3).json()["findings"]
               if "carries its trailers" in f["problem"]]
    assert [f["problem"].split(",")[0] for f in finding] == [
        f"run 3 is recorded as kept at {before[3]}"]
    ar(repo, "doctor", "--fix")
    new_lines = (repo / ".auto" / "log.jsonl").read_text().splitlines()
    changed = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert len(changed) == 2  # run 3's line, and run 4's (the discard started from it)
    for old, new in changed:
        assert new == old.replace(f'"commit":"{before[3]}"',
                                  f'"commit":"{after}"', 1)[:-1] \
            + f',"commit_before_rewrite":"{before[3]}"}}'
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    assert ledger_lines(repo)[0]["type"] == "config"


@pytest.mark.parametrize("way", ["reset", "trailers"])
def test_a_keep_reworded_without_its_trailers_names_the_way_back(repo: Path, ar: Tool,
                                                                 way: str) -> None:
    """``git commit --amend -m`` of the last keep drops its trailers: doctor (exit 3) and
    status name the commit that holds the same change without them, and the two ways back
    (they said only that the keep is not on the branch, and doctor stayed at exit 3 for the
    rest of the session): ``git reset --soft`` to the kept commit, or the trailers put back
    on the reworded commit, which doctor --fix then records. Either clears it."""
    before = _session_with_keeps(repo, ar)
    kept = git(repo, "rev-parse", before[3])
    git(repo, "commit", "-q", "--amend", "-m", "value 80, reworded by hand")
    reworded = git(repo, "rev-parse", "--short=7", "HEAD")
    found = [f["problem"] for f in ar(repo, "doctor", "--json", expect=3).json()["findings"]]
    said = (f"run 3 is recorded as kept at {before[3]}, which is not on autoresearch/s1: its "
            f"commit {reworded} there holds the same change without its trailers (reworded by "
            f"hand?); git reset --soft {before[3]} puts the kept commit back, or reword it "
            f"keeping the trailer lines git show -s --format=%(trailers) {before[3]} prints "
            "(git autoresearch doctor --fix then records it)")
    assert found == [said], found
    warned = ar(repo, "status", "--json").json()["warnings"]
    assert said in warned
    # (HEAD holds the kept code: not "the commit of no kept run", whose way is a new segment)
    assert not any("commit of no kept run" in w for w in warned), warned
    if way == "reset":
        git(repo, "reset", "-q", "--soft", before[3])
    else:
        trailers = git(repo, "show", "-s", "--format=%(trailers)", kept)
        git(repo, "commit", "-q", "--amend", "-m", f"value 80, reworded by hand\n\n{trailers}")
        ar(repo, "doctor", "--fix")
    assert ar(repo, "doctor", "--json").json()["findings"] == []
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_a_keep_the_branch_was_reset_past_names_the_fast_forward_back(repo: Path,
                                                                      ar: Tool) -> None:
    """``git reset --hard HEAD~`` drops the last keep from the branch: doctor and status name
    the fast-forward that brings it back (they said only that it is not on the branch), and
    it does."""
    before = _session_with_keeps(repo, ar)
    git(repo, "reset", "-q", "--hard", "HEAD~")
    said = (f"run 3 is recorded as kept at {before[3]}, which is not on autoresearch/s1: the "
            "branch was moved back past it by hand (git reset?); git merge --ff-only "
            f"{before[3]} brings the keep back")
    assert [f["problem"] for f in ar(repo, "doctor", "--json", expect=3).json()["findings"]
            ] == [said]
    assert said in ar(repo, "status", "--json").json()["warnings"]
    git(repo, "merge", "-q", "--ff-only", before[3])
    assert ar(repo, "doctor", "--json").json()["findings"] == []


def test_status_warns_when_a_pi_keep_is_on_no_branch(repo: Path, ar: Tool) -> None:
    """A pi-autoresearch session read in place, its keep amended afterwards: the record's
    commit (pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2404) is on no branch
    now. Failed before: no warning."""
    _, kept, _ = _pi_session(repo)
    git(repo, "commit", "-q", "--amend", "-m", "halve the work, squashed")
    warnings = ar(repo, "status", "--json").json()["warnings"]
    assert warnings == [f"run 2 is recorded as kept at {kept}, which is on no branch (history "
                        "rewritten after the session: a rebase, an amend or a squash merge?)"]


# --- item 2: a pi-autoresearch session below the top, or behind its workingDir ----------------

def _pi_package(repo: Path) -> Path:
    """A monorepo package with a pi-autoresearch session of three runs in its own ``.auto/``
    (pi keeps its files in the folder it was started in: pi-autoresearch 1.6.2,
    extensions/pi-autoresearch/index.ts:602-607 with paths.ts:72-76)."""
    package = repo / "packages" / "parser"
    write(package / "src" / "parse.py", "x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "parser package")
    head = git(repo, "rev-parse", "--short=7", "HEAD")
    _pi_ledger(package, [PI_HEADER, _pi_run(1, head, 100, "keep", "baseline"),
                         _pi_run(2, head, 110, "discard", "unroll"),
                         _pi_run(3, head, 105, "discard", "inline")])
    return package


def test_pi_session_in_a_package_is_found_from_it_and_below(repo: Path, ar: Tool) -> None:
    """pi-autoresearch reads its session in the folder it runs in, a package of a monorepo
    (index.ts:602 ``sessionFilePath(dir, "log")``): found from that folder and from any
    folder below it. Failed before: "no session here"."""
    package = _pi_package(repo)
    for where in (package, package / "src"):
        found = ar(where, "status", "--json").json()
        assert (found["total_runs"], found["segment"]["baseline"]["metric"]) == (3, 100)
        assert found["limit"] is None
    assert [r["run"] for r in ar(package / "src", "log", "--json").json()["runs"]] == [1, 2, 3]


def test_pi_working_dir_and_max_iterations(repo: Path, ar: Tool) -> None:
    """pi-autoresearch's ``.auto/config.json`` in the folder it runs in names ``workingDir``
    (relative to that folder: index.ts:493-499) where the session files are, and
    ``maxIterations``, reached when the segment's runs, the baseline included, number that
    many (index.ts:1713-1714 ``currentResults(...).length >= state.maxExperiments``; 2463).
    Failed before: "no session here", and a limit counted after the baseline."""
    _pi_package(repo)
    write(repo / ".auto" / "config.json",
          json.dumps({"workingDir": "packages/parser", "maxIterations": 3}))
    found = ar(repo, "status", "--json").json()
    assert (found["total_runs"], found["limit"], found["limit_reached"]) == (3, 3, True)
    assert "limit       3 of 3 experiments (reached)" in ar(repo, "status").out
    write(repo / ".auto" / "config.json",
          json.dumps({"workingDir": "packages/parser", "maxIterations": 4.9}))
    found = ar(repo, "status", "--json").json()
    assert (found["limit"], found["limit_reached"]) == (4, False)


def test_pi_working_dir_that_does_not_exist(repo: Path, ar: Tool) -> None:
    """A ``workingDir`` that is no folder is refused in pi's words (index.ts:565-576)."""
    write(repo / ".auto" / "config.json", json.dumps({"workingDir": "packages/gone"}))
    failed = ar(repo, "log", expect=3)
    assert failed.err == (f'git autoresearch: workingDir "{repo / "packages" / "gone"}" (from '
                          f'{repo / ".auto" / "config.json"}) does not exist\n')


def test_pi_package_ideas_and_prompt_are_its_own(repo: Path, ar: Tool) -> None:
    """The backlog and the prompt of a pi-autoresearch session are in its own folder
    (index.ts:603-604 ``sessionFilePath(dir, "prompt" | "ideas")``): ``ideas next`` and
    ``summary`` read them there. Failed before: ``ideas next`` found no backlog."""
    package = _pi_package(repo)
    write(package / ".auto" / "ideas.md", "- [ ] try a lookup table\n")
    write(package / ".auto" / "prompt.md", "# speed\n\n## Dead ends\n- regex caching\n")
    assert ar(package, "ideas", "next").out == "1: try a lookup table\n"
    text = ar(package / "src", "summary").out
    assert "try a lookup table" in text and "regex caching" in text


def test_show_a_run_read_from_trailers_alone(repo: Path, ar: Tool) -> None:
    """With no ledger, the kept runs are the branch's ``Result:`` trailers (pi-autoresearch
    1.6.2, extensions/pi-autoresearch/index.ts:2384 writes them): ``show 1`` is that commit.
    Failed before: "(no commit: the kept measurement changed nothing)"."""
    write(repo / "value.txt", "80\n")
    kept = _pi_commit(repo, "halve the work", {"status": "keep", "total_ms": 80})
    shown = ar(repo, "show", "1", "--json").json()
    assert (shown["diff_commit"][:7], shown["diff_source"]) == (kept, "record")
    assert "-100\n+80\n" in shown["diff"]


def test_show_says_when_a_records_commit_is_not_in_this_repository(repo: Path,
                                                                     ar: Tool) -> None:
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"g","metricName":"m","bestDirection":"lower"}\n'
          '{"run":1,"commit":"deadbee","metric":5,"metrics":{},"status":"keep",'
          '"description":"elsewhere","timestamp":1,"segment":0,"confidence":null}\n')
    assert "(no diff: commit deadbee is not in this repository)" in ar(repo, "show", "1").out

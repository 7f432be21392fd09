"""The ledger is the product's memory: full and read-only disks, torn copies, huge inputs,
doctor --fix that converges, a ledger that lost its header, and concurrent writers of session
files. Storage faults are real: a small tmpfs or a read-only bind mount (we run as root, so file
permissions would not stop a write)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TOOL, Tool, git, ledger_lines, runs, start_args, tool, write


class Mounts:
    """Mounts made by a test, undone at its end; the test is skipped when mounting is not
    permitted here (not root, no CAP_SYS_ADMIN, a container that forbids it)."""

    def __init__(self) -> None:
        self.points: list[Path] = []

    def _mount(self, *args: str, target: Path) -> None:
        proc = subprocess.run(["mount", *args], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"mounting is not permitted here: {proc.stderr.strip()}")
        self.points.append(target)

    def tmpfs(self, target: Path, size: str) -> None:
        self._mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target), target=target)

    def read_only(self, target: Path) -> None:
        self._mount("--bind", str(target), str(target), target=target)
        self._mount("-o", "remount,ro,bind", str(target), target=target)
        self.points.pop()

    def undo(self) -> None:
        for point in reversed(self.points):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
        self.points.clear()


@pytest.fixture
def mounts() -> Iterator[Mounts]:
    made = Mounts()
    try:
        yield made
    finally:
        made.undo()


def fill(folder: Path, leave_pages: int) -> Path:
    """Fill the filesystem of ``folder`` with one file, then give back ``leave_pages`` pages
    of 4096 bytes. Returns the filler, which a test removes to free the space again."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    size = filler.stat().st_size
    os.truncate(filler, max(0, size - 4096 * leave_pages))
    return filler


def head(top: Path) -> str:
    return git(top, "rev-parse", "HEAD")


# --- 1. the index copied aside by a keep ---------------------------------------------------


@pytest.mark.parametrize("torn", [b"", b"DIRC\0\0\0\2"])
def test_a_torn_copy_of_the_index_is_never_restored(repo: Path, ar: Tool, torn: bytes) -> None:
    """A keep killed while it copies the index aside, with the copy cut short (0 bytes, or a
    header only): resume leaves the index the keep found, and git can read it."""
    ar(repo, *start_args("--scope", "value.txt", "--scope", "src/"))
    write(repo / "value.txt", "50\n")
    write(repo / "src" / "new.py", "x = 1\n")
    git(repo, "add", "src/new.py")
    staged = git(repo, "diff", "--cached", "--name-status")
    killed = tool(repo, "keep", "-d", "killed", "--metric", "50",
                  env={"GIT_AUTORESEARCH_DIE_AT": "keep:saving-index"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    write(repo / ".git" / "autoresearch" / "index-before-keep", torn)
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions == ["rolled back the interrupted keep of run 2: nothing was committed, and "
                       "the experiment is still in the work tree"]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo,
                          capture_output=True).returncode == 0
    assert git(repo, "diff", "--cached", "--name-status") == staged
    assert (repo / "value.txt").read_text() == "50\n"
    assert not (repo / ".git" / "autoresearch" / "index-before-keep").exists()
    assert [r["run"] for r in runs(repo)] == [1]


def test_a_sigterm_while_the_index_is_copied_aside(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "50\n")
    git(repo, "add", "value.txt")
    head = git(repo, "rev-parse", "HEAD")
    res = tool(repo, "keep", "-d", "terminated", "--metric", "50",
               env={"GIT_AUTORESEARCH_DIE_AT": "keep:saving-index@TERM"})
    # A SIGTERM waits for the record to be written whole, then ends the command.
    assert (res.returncode, res.stderr) == \
        (143, "git autoresearch: terminated after run 2 was recorded (keep)\n")
    assert sorted(p.name for p in (repo / ".git" / "autoresearch").iterdir()
                  if p.name.startswith("index") or p.name.endswith(".tmp")) == []
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert git(repo, "rev-parse", "HEAD^") == head
    assert ar(repo, "resume", "--json").json()["actions"] == []
    assert git(repo, "status", "--porcelain") == ""


# --- 6. full and read-only disks ----------------------------------------------------------


def _session_on_tmpfs(repo: Path, ar: Tool, mounts: Mounts) -> Path:
    auto = repo / ".auto"
    auto.mkdir()
    mounts.tmpfs(auto, "256k")
    ar(repo, *start_args())
    return auto


def test_a_keep_on_a_full_disk_is_refused_and_finished_later(repo: Path, ar: Tool,
                                                             mounts: Mounts) -> None:
    auto = _session_on_tmpfs(repo, ar, mounts)
    ledger = auto / "log.jsonl"
    write(repo / "value.txt", "50\n")
    filler = fill(auto, leave_pages=1)  # room to start, none for a 12 KB line
    before = ledger.read_bytes()
    res = tool(repo, "keep", "-d", "a long idea " + "x" * 12000, "--metric", "50")
    short = git(repo, "rev-parse", "--short=7", "HEAD")
    assert res.returncode == 3, res.stderr
    assert res.stderr == (
        f"git autoresearch: run 2 was committed as {short}, but its ledger line could not "
        f"be written to {ledger}: No space left on device; free space (or make it writable), "
        "then git autoresearch resume (or any run, keep or discard) finishes recording it\n")
    assert ledger.read_bytes() == before, "no torn line"
    assert git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)") == "2"
    filler.unlink()
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions == ["finished the interrupted keep of run 2"]
    assert [(r["run"], r["status"], r["commit"]) for r in runs(repo)] == \
        [(1, "keep", runs(repo)[0]["commit"]), (2, "keep", short)]
    write(repo / "value.txt", "40\n")
    assert ar(repo, "keep", "-d", "next", "--metric", "40", "--json").json()["run"] == 3


def test_a_discard_on_a_full_disk_is_finished_by_the_next_run(repo: Path, ar: Tool,
                                                              mounts: Mounts) -> None:
    auto = _session_on_tmpfs(repo, ar, mounts)
    write(repo / "value.txt", "500\n")
    filler = fill(auto, leave_pages=1)
    res = tool(repo, "discard", "-d", "worse " + "y" * 12000)
    assert res.returncode == 3, res.stderr
    assert "run 2 (discard) was reverted, its attempt saved at refs/autoresearch/s1/" \
           "attempts/2, but its ledger line could not be written" in res.stderr
    assert (repo / "value.txt").read_text() == "100\n"
    filler.unlink()
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "next", "--json").json()["run"] == 3
    assert [(r["run"], r["status"]) for r in runs(repo)] == \
        [(1, "keep"), (2, "discard"), (3, "keep")]


def test_a_full_disk_is_refused_before_anything_changes(repo: Path, ar: Tool,
                                                        mounts: Mounts) -> None:
    auto = _session_on_tmpfs(repo, ar, mounts)
    write(repo / "value.txt", "50\n")
    fill(auto, leave_pages=0)
    old = head(repo)
    for command in (["keep", "-d", "k", "--metric", "50"], ["discard", "-d", "d"]):
        res = tool(repo, *command)
        assert res.returncode == 3, res.stderr
        assert res.stderr == (f"git autoresearch: cannot write {auto}: No space left on "
                              "device; nothing was changed or recorded\n")
        assert head(repo) == old
        assert (repo / "value.txt").read_text() == "50\n"
    assert [r["run"] for r in runs(repo)] == [1]


@pytest.mark.parametrize("folder", [".git", ".git/objects", ".git/refs"])
def test_a_git_folder_that_cannot_be_written_is_refused_before_measuring(
        repo: Path, ar: Tool, mounts: Mounts, tmp_path: Path, folder: str) -> None:
    """A .git folder this user cannot write, or its objects or refs (a repository of another
    user, what a sudo git leaves, a read-only mount), while our own folders can be: refused
    before the benchmark runs, where the run measured, then failed (an internal error
    replacing .git/index that left a keep interrupted; a staging error that blamed a clean
    filter; exit 1 from update-ref); audit and finalize too."""
    ar(repo, *start_args())
    write(repo / "value.txt", "60\n")
    ar(repo, "keep", "-d", "kept", "--metric", "60")
    write(repo / "value.txt", "50\n")
    scratch = repo / ".git" / "autoresearch"
    ours = [scratch, repo / ".git" / "autoresearch-sessions"]  # (the session's lock)
    for mine in ours:
        shutil.copytree(mine, tmp_path / mine.name)
    mounts.read_only(repo / folder)
    if folder == ".git":
        for mine in ours:
            mounts.tmpfs(mine, "4m")
            shutil.copytree(tmp_path / mine.name, mine, dirs_exist_ok=True)
    ledger = (repo / ".auto" / "log.jsonl").read_bytes()
    old = head(repo)
    for command in (["run", "-d", "r"], ["keep", "-d", "k", "--metric", "50"],
                    ["discard", "-d", "d"], ["audit", "2"], ["finalize"]):
        res = tool(repo, *command)
        assert res.returncode == 3, res.stderr
        assert res.stderr == (f"git autoresearch: cannot write {repo / folder}: Read-only "
                              "file system; nothing was changed or recorded\n")
        assert head(repo) == old and (repo / "value.txt").read_text() == "50\n"
    assert (repo / ".auto" / "log.jsonl").read_bytes() == ledger
    assert not (scratch / "intent.json").exists()
    res = tool(repo, "gc", "--force", "s1")
    assert (res.returncode, res.stderr) == (3, f"git autoresearch: cannot write {repo / folder}: "
                                               "Read-only file system; nothing was deleted\n")


@pytest.mark.parametrize("command", [["status"], ["log", "--json"], ["resume"], ["doctor"],
                                     ["run", "-d", "r"], ["ideas", "list"]])
def test_a_session_folder_that_cannot_be_read_is_named(repo: Path, ar: Tool,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      command: list[str]) -> None:
    """.auto/ that this user cannot read (a folder of another user, mode 000): one line that
    names it, exit 3, where status, log and resume ended in an internal error. (Root reads
    every folder, so the kernel's refusal is played here: stat of a path in .auto/ fails
    with EACCES.)"""
    ar(repo, *start_args())
    auto = repo / ".auto"
    stat = Path.stat

    def refused(self: Path, **kwargs: Any) -> os.stat_result:
        if self.parent == auto:
            raise PermissionError(13, "Permission denied", str(self))
        return stat(self, **kwargs)

    monkeypatch.setattr(Path, "stat", refused)
    said = ar(repo, *command, expect=3).err
    assert said.startswith("git autoresearch: cannot read ") and said.count("\n") == 1
    assert f" {auto}/" in said and ": Permission denied" in said


@pytest.mark.parametrize(("name", "command"), [
    ("log.jsonl", ["resume"]), ("log.jsonl", ["status"]), ("ideas.md", ["doctor"]),
    ("ideas.md", ["summary"]), ("ideas.md", ["ideas", "list"]), ("prompt.md", ["doctor"]),
    ("prompt.md", ["summary"])])
def test_a_session_file_that_cannot_be_read_is_named(repo: Path, ar: Tool,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    name: str, command: list[str]) -> None:
    """A session file this user cannot read (mode 000, another user's, what a sudo run left):
    one line naming it, exit 3, where resume, doctor, summary and ideas ended in an internal
    error; an unreadable ledger names the way out that works (resume cannot read it either).
    (Root reads every file: the kernel's EACCES is played in-process.)"""
    import io

    ar(repo, *start_args())
    ar(repo, "ideas", "add", "an idea")
    path = repo / ".auto" / name
    assert path.exists()
    opened = io.open

    def refused(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, os.PathLike)) and os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return opened(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", refused)
    said = ar(repo, *command, expect=3).err
    way_out = f" (make it this user's again: chown or chmod u+rw {path})" \
        if name == "log.jsonl" else ""
    assert said == (f"git autoresearch: cannot read {'the ledger ' if way_out else ''}{path}: "
                    f"Permission denied{way_out}\n")


def test_a_read_only_ledger_is_refused_before_the_commit(repo: Path, ar: Tool,
                                                         mounts: Mounts) -> None:
    ar(repo, *start_args())
    ledger = repo / ".auto" / "log.jsonl"
    before = ledger.read_bytes()
    write(repo / "value.txt", "50\n")
    mounts.read_only(ledger)
    old = head(repo)
    for command in (["keep", "-d", "k", "--metric", "50"], ["discard", "-d", "d"],
                    ["run", "-d", "r"]):
        res = tool(repo, *command)
        assert res.returncode == 3, res.stderr
        assert res.stderr == (f"git autoresearch: cannot write {ledger}: Read-only file "
                              "system; nothing was changed or recorded\n")
        assert head(repo) == old
        assert (repo / "value.txt").read_text() == "50\n"
    assert ledger.read_bytes() == before
    assert not (repo / ".git" / "autoresearch" / "intent.json").exists()


# --- run numbers ----------------------------------------------------------------------------


def test_a_kept_run_whose_line_was_lost_keeps_its_number(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    ledger = repo / ".auto" / "log.jsonl"
    before = ledger.read_bytes()
    write(repo / "value.txt", "50\n")
    ar(repo, "keep", "-d", "kept", "--metric", "50")
    ledger.write_bytes(before)  # its line lost, as a full disk used to lose it
    write(repo / "value.txt", "40\n")
    # Recorded now, the keep would be judged against the baseline, and the state ref would
    # lose run 2's line: refused until doctor --fix puts the line back.
    res = ar(repo, "keep", "-d", "next", "--metric", "40", expect=3)
    assert "lost the line of kept run 2" in res.err and "doctor --fix" in res.err
    ar(repo, "doctor", "--fix")
    assert ar(repo, "keep", "-d", "next", "--metric", "40", "--json").json()["run"] == 3


# --- 7. huge and deep inputs ------------------------------------------------------------------


def test_a_deeply_nested_asi_is_refused_before_anything_changes(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "500\n")
    deep = "[" * 1000 + "]" * 1000
    res = ar(repo, "discard", "-d", "deep", "--asi-json", f'{{"x":{deep}}}', expect=2)
    assert res.err == "git autoresearch: --asi-json nests deeper than 64 levels\n"
    assert (repo / "value.txt").read_text() == "500\n"
    assert not (repo / ".git" / "autoresearch" / "intent.json").exists()
    assert ar(repo, "discard", "-d", "flat", "--json").json()["run"] == 2


def test_inputs_too_big_for_a_ledger_line_are_refused(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "500\n")
    res = ar(repo, "discard", "-d", "x" * 400_000, expect=2)
    assert res.err == ("git autoresearch: --description takes 400000 bytes in the ledger; at "
                       "most 393216 bytes are accepted\n")
    # Escapes count: 100,000 control characters take 600,000 bytes as JSON.
    res = ar(repo, "discard", "-d", "\x01" * 100_000, expect=2)
    assert "--description takes 600000 bytes in the ledger" in res.err
    res = ar(repo, "discard", "-d", "d", "--asi", "note=" + "z" * 70_000, expect=2)
    assert res.err == ("git autoresearch: --asi takes 70000 bytes in the ledger; at most "
                       "65536 bytes are accepted\n")
    pairs = [arg for i in range(6) for arg in ("--asi", f"k{i}=" + "z" * 60_000)]
    res = ar(repo, "discard", "-d", "d", *pairs, expect=2)
    assert "at most 262144 bytes are accepted" in res.err
    res = ar(repo, "ideas", "add", "i" * 70_000, expect=2)
    assert "the idea takes 70000 bytes" in res.err
    assert (repo / "value.txt").read_text() == "500\n"
    assert [r["run"] for r in runs(repo)] == [1]
    record = ar(repo, "discard", "-d", "x" * 393_216, "--json").json()
    assert record["run"] == 2 and len(record["description"]) == 393_216


def test_a_line_too_long_to_read_never_wedges_the_state_ref(repo: Path, ar: Tool) -> None:
    """A run record over 1 MiB (as earlier versions could write): its number is not reused,
    doctor --fix sets it aside, and the state ref takes every later update."""
    ar(repo, *start_args())
    ledger = repo / ".auto" / "log.jsonl"
    write(repo / "value.txt", "500\n")
    ar(repo, "discard", "-d", "ok")
    with open(ledger, "ab") as fh:
        fh.write(json.dumps({"run": 3, "commit": "abc1234", "metric": 1, "status": "discard",
                             "description": "x" * (1 << 20)}).encode() + b"\n")
    assert "ledger line 4 is not a readable record (line of 1048660 bytes is too long)" in \
        ar(repo, "doctor", expect=3).out
    write(repo / "value.txt", "400\n")
    assert ar(repo, "discard", "-d", "after", "--json").json()["run"] == 4
    assert ar(repo, "doctor", "--fix", "--json").json()["findings"][0]["fixed"] is True
    assert ar(repo, "doctor", "--fix").out == "no problems found\n"
    write(repo / "value.txt", "300\n")
    res = ar(repo, "discard", "-d", "later", "--json")
    assert res.json()["run"] == 5 and res.json()["warnings"] == []
    state = git(repo, "show", "refs/autoresearch/s1/state:log/00000.jsonl")
    assert state.encode() + b"\n" == ledger.read_bytes()


# --- 8. doctor --fix converges; every way out works ----------------------------------------


def test_a_record_with_an_invalid_status_is_kept_and_told(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2 reads an unknown status as keep (extensions/pi-autoresearch/
    jsonl.ts:74): the record is neither set aside nor rebuilt; doctor says how it is read."""
    ar(repo, *start_args())
    write(repo / "value.txt", "500\n")
    ar(repo, "discard", "-d", "two")
    ledger = repo / ".auto" / "log.jsonl"
    bad = ledger.read_bytes().replace(b'"status":"discard"', b'"status":"discarded"')
    ledger.write_bytes(bad)
    ar(repo, "ideas", "add", "mirrors the session files")  # the state ref now holds it too
    assert git(repo, "show", "refs/autoresearch/s1/state:log/00000.jsonl").encode() + b"\n" \
        == bad
    res = ar(repo, "doctor", "--fix")
    assert res.out == "no problems found\n"
    assert "run 2 ('discarded'): not one of keep, discard, crash, checks_failed; read as " \
        "keep" in res.err
    assert ledger.read_bytes() == bad
    assert not (repo / ".auto" / "log.rejected.jsonl").exists()


def _lose_header(repo: Path) -> bytes:
    ledger = repo / ".auto" / "log.jsonl"
    whole = ledger.read_bytes()
    ledger.write_bytes(whole[whole.index(b"\n") + 1:])
    return whole


@pytest.mark.parametrize("via", ["keep", "status", "start"])
def test_a_ledger_that_lost_its_header_has_a_way_out(repo: Path, ar: Tool, via: str) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "500\n")
    ar(repo, "discard", "-d", "two")
    whole = _lose_header(repo)
    write(repo / "value.txt", "50\n")
    hint = "git autoresearch resume"
    if via == "keep":
        res = ar(repo, "keep", "-d", "k", "--metric", "50", expect=3)
        assert f"lost its configuration header; {hint} restores it" in res.err
    elif via == "status":
        warnings = ar(repo, "status", "--json").json()["warnings"]
        assert any(hint in w for w in warnings), warnings
    else:
        res = ar(repo, "start", "--new-segment", expect=3)
        assert f"run {hint} first" in res.err
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions[0].startswith("restored the configuration header of .auto/log.jsonl "
                                 "from the state ref")
    assert (repo / ".auto" / "log.jsonl").read_bytes() == whole
    assert ar(repo, "keep", "-d", "k", "--metric", "50", "--json").json()["run"] == 3


def test_doctor_fix_restores_a_lost_header(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    whole = _lose_header(repo)
    found = ar(repo, "doctor", expect=3).out
    assert "has no configuration header line [fixable with --fix]" in found
    ar(repo, "doctor", "--fix")
    assert (repo / ".auto" / "log.jsonl").read_bytes() == whole
    assert ar(repo, "doctor", "--fix").out == "no problems found\n"


# --- 9. concurrent writers of session files ------------------------------------------------


def test_eight_concurrent_ideas_add_lose_nothing(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    script = "for i in 1 2 3; do \"$@\" ideas add \"idea $N-$i\" >/dev/null || exit 1; done"
    procs = [subprocess.Popen(["sh", "-c", script, "sh", *TOOL], cwd=repo,
                              env={**os.environ, "N": str(n)}, stderr=subprocess.PIPE)
             for n in range(8)]
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, errors
    ideas = ar(repo, "ideas", "list", "--json").json()["ideas"]
    assert sorted(i["text"] for i in ideas) == sorted(f"idea {n}-{i}" for n in range(8)
                                                     for i in (1, 2, 3))


@pytest.mark.parametrize("command", [["ideas", "add", "an idea"], ["stop"],
                                     ["hooks", "install", "notify"],
                                     ["start", "--new-segment", "--no-baseline"]])
def test_upkeep_on_a_read_only_session_folder(repo: Path, ar: Tool, mounts: Mounts,
                                              command: list[str]) -> None:
    ar(repo, *start_args())
    auto = repo / ".auto"
    before = {p.name: p.read_bytes() for p in auto.iterdir() if p.is_file()}
    mounts.read_only(auto)
    res = tool(repo, *command)
    assert res.returncode == 3, res.stderr
    assert res.stderr.startswith(f"git autoresearch: cannot write {auto}"), res.stderr
    assert res.stderr.count("\n") == 1 and "Read-only file system" in res.stderr
    assert {p.name: p.read_bytes() for p in auto.iterdir() if p.is_file()} == before


def test_a_full_scratch_folder_after_the_commit_is_finished_later(repo: Path, ar: Tool,
                                                                  mounts: Mounts) -> None:
    """The keep commits, then cannot build the temporary index that sets the out-of-scope
    change aside: it says so with the run's state, and resume finishes it once there is room."""
    ar(repo, *start_args("--scope", "value.txt"))
    scratch = repo / ".git" / "autoresearch"
    saved = {p.name: p.read_bytes() for p in scratch.iterdir() if p.is_file()}
    mounts.tmpfs(scratch, "64k")
    for name, data in saved.items():
        (scratch / name).write_bytes(data)
    write(repo / "value.txt", "50\n")
    write(repo / "README.md", "out of scope\n")
    filler = fill(scratch, leave_pages=3)  # the lock, the intent, the index copy; no more
    res = tool(repo, "keep", "-d", "k", "--metric", "50")
    short = git(repo, "rev-parse", "--short=7", "HEAD")
    assert res.returncode == 3, res.stderr
    assert res.stderr.startswith(f"git autoresearch: run 2 was committed as {short}, but ")
    assert res.stderr.endswith("; git autoresearch resume (or any run, keep or discard) "
                               "finishes recording it\n")
    filler.unlink()
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert actions == ["finished the interrupted keep of run 2"]
    assert (repo / "README.md").read_text() == "project\n"
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:README.md") == "out of scope"
    assert [(r["run"], r["commit"]) for r in runs(repo)][1:] == [(2, short)]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_run_that_mirrors_several_times_gives_a_mirror_warning_once(repo: Path, ar: Tool,
                                                                      as_json: bool) -> None:
    """A discard under the sequential rule mirrors after its record, after the incumbent's
    new sample and after its after hook: a ledger that lost a line makes each mirror refuse
    with the same words, said once (it was said three times)."""
    ar(repo, *start_args("--decision", "sequential", "--baseline-samples", "3"))
    write(repo / ".auto" / "hooks" / "after.sh", "#!/bin/sh\ncat >/dev/null\n", 0o755)
    ar(repo, "ideas", "add", "an idea")  # (the state ref holds the hook)
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    ledger.write_bytes(lines[0] + b'{"type":"note","text":"a line"}\n' + lines[1])
    ar(repo, "ideas", "add", "another")
    lines = ledger.read_bytes().splitlines(keepends=True)
    ledger.write_bytes(lines[0] + lines[2])  # (the note is lost)
    write(repo / "value.txt", "150\n")
    res = ar(repo, "run", "-d", "worse", *(["--json"] if as_json else []))
    said = res.json()["warnings"] if as_json else res.err.splitlines()
    lost = [w for w in said if "lost lines that refs/autoresearch/s1/state holds" in w]
    assert len(lost) == 1, said
    assert [r["status"] for r in runs(repo)] == ["keep", "discard"]
    kinds = [line["type"] for line in ledger_lines(repo) if "type" in line]
    assert kinds == ["config", "incumbent", "hook"]  # (three mirrors)


@pytest.mark.parametrize("lost", ["last", "middle"])
def test_a_ledger_that_lost_lines_is_restored_as_the_warning_says(repo: Path, ar: Tool,
                                                                  lost: str) -> None:
    ar(repo, *start_args())
    for value in ("500", "400"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "discard", "-d", f"tried {value}")
    ar(repo, "ideas", "add", "an idea")  # the state ref holds the whole ledger
    ledger = repo / ".auto" / "log.jsonl"
    whole = ledger.read_bytes()
    lines = whole.splitlines(keepends=True)
    del lines[-1 if lost == "last" else -2]
    ledger.write_bytes(b"".join(lines))
    warning = ("lost lines that refs/autoresearch/s1/state holds; git "
               "autoresearch doctor --fix restores them\n")
    res = ar(repo, "ideas", "add", "another", expect=0)
    assert warning in res.err
    found = ar(repo, "doctor", "--fix", "--json").json()["findings"]
    assert found and all(f["fixed"] for f in found), found
    assert ar(repo, "doctor", "--fix").out == "no problems found\n"
    assert [r["run"] for r in runs(repo)] == [1, 2, 3]
    assert ledger.read_bytes() == whole
    write(repo / "value.txt", "300\n")
    res = ar(repo, "discard", "-d", "next", "--json").json()
    assert (res["run"], res["warnings"]) == (4, [])


def test_whole_index_knows_a_copy_git_can_read(repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.runtime.atomic import whole_index

    index = (repo / ".git" / "index").read_bytes()
    for cut, whole in ((len(index), True), (len(index) - 1, False), (12, False), (0, False)):
        write(tmp_path / "copy", index[:cut])
        assert whole_index(tmp_path / "copy") is whole, cut
    # index.skipHash (git 2.40) writes a zero checksum: whole, though nothing can be checked.
    write(tmp_path / "copy", index[:-20] + bytes(20))
    assert whole_index(tmp_path / "copy") is True
    write(tmp_path / "copy", b"XXXX" + index[4:])
    assert whole_index(tmp_path / "copy") is False


def test_an_intent_record_too_deep_to_read_is_set_aside(repo: Path, ar: Tool) -> None:
    """As an earlier version left it after a 1,000-level --asi-json: every command went on
    failing until a person deleted the file."""
    ar(repo, *start_args())
    intent = repo / ".git" / "autoresearch" / "intent.json"
    write(intent, '{"op":"revert","run":2,"record":{"asi":' + "[" * 100_000 + "]" * 100_000
          + "}}")
    write(repo / "value.txt", "500\n")
    record = ar(repo, "discard", "-d", "next", "--json").json()
    assert record["run"] == 2
    assert not intent.exists()
    aside = [p.name for p in intent.parent.iterdir() if p.name.startswith("intent.abandoned.")]
    assert len(aside) == 1


def test_doctor_fix_says_why_the_state_ref_could_not_be_written(repo: Path, ar: Tool,
                                                               mounts: Mounts) -> None:
    ar(repo, *start_args())
    refs = repo / ".git" / "refs" / "autoresearch" / "s1"
    mounts.read_only(refs)
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "--metric", "90", "-d", "x")  # its mirror fails: the state ref is behind
    res = ar(repo, "doctor", "--fix", expect=3)
    lines = res.err.splitlines()
    assert res.out == "- the state ref does not hold the current session files [not fixed: " \
                      "see the warning below]\n"
    assert len(lines) == 1 and lines[0].startswith(
        "warning: the session files were not mirrored on the state ref: ")
    data = ar(repo, "doctor", "--fix", "--json", expect=3).json()
    assert data["warnings"] == [lines[0].removeprefix("warning: ")]
    mounts.undo()
    assert ar(repo, "doctor", "--fix").out == "- the state ref does not hold the current " \
                                             "session files [fixed]\n"
    assert ar(repo, "doctor").out == "no problems found\n"


def test_a_record_with_long_violation_paths_still_fits_and_names_them(repo: Path, ar: Tool) -> None:
    """Many long out-of-scope paths with a description near its limit: the record is cut to
    fit the ledger's line (the count kept), never refused after the changes were set aside."""
    ar(repo, *start_args("--scope", "value.txt"))
    deep = repo / "out" / "/".join(["d" * 200] * 5)
    deep.mkdir(parents=True)
    for i in range(1100):
        (deep / f"{'f' * 200}{i:05d}").write_text("y")
    write(repo / "value.txt", "50\n")
    record = ar(repo, "run", "-d", "a" * 390000, "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations_total"] == 1100
    assert 0 < len(record["scope_violations"]) < 1100
    assert record["scope_ref"] == "refs/autoresearch/s1/scope/2"
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert len(git(repo, "ls-tree", "-r", "--name-only", "refs/autoresearch/s1/scope/2")
               .splitlines()) >= 1100


def test_output_that_cannot_be_written_does_not_misreport_a_recorded_run(repo: Path,
                                                                         ar: Tool) -> None:
    """stdout on a full disk, or a reader that closed the pipe: the run was recorded, so the
    exit code says so, and stderr says the output was lost."""
    import shlex

    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "git_autoresearch", "keep", "-d", "kept",
                              "--metric", "50", "--json"], cwd=repo, stdout=full,
                             stderr=subprocess.PIPE, text=True)
    assert (res.returncode, res.stderr) == (0, (
        "git autoresearch: the output could not be written (No space left on device); the "
        "command itself finished with exit code 0\n"))
    assert [(r["run"], r["status"]) for r in runs(repo)] == [(1, "keep"), (2, "keep")]
    write(repo / "value.txt", "40\n")
    tool_line = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "git_autoresearch",
                                                  "keep", "-d", "kept again", "--metric", "40"])
    piped = subprocess.run(["bash", "-c", f"{tool_line} | (exec 0<&-); echo ${{PIPESTATUS[0]}}"],
                           cwd=repo, capture_output=True, text=True)
    assert piped.stdout.strip() == "0", piped.stderr
    assert [r["run"] for r in runs(repo)] == [1, 2, 3]


BENCH = "#!/bin/sh\necho \"score: $(cat value.txt)\"\n"


def _repository_on_tmpfs(tmp_path: Path, ar: Tool, mounts: Mounts, bench: str = BENCH) -> Path:
    """The ``repo`` fixture's project, made again inside a 2 MB tmpfs, with a session whose
    benchmark is ``bench``."""
    top = tmp_path / "small"
    top.mkdir()
    mounts.tmpfs(top, "2m")
    git(top, "init", "-q", "-b", "main")
    write(top / "value.txt", "100\n")
    write(top / "bench.sh", bench, 0o755)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "initial")
    ar(top, *start_args("--scope", "value.txt"))
    return top


def test_a_disk_that_fills_while_git_writes_is_refused_and_leaves_no_garbage(
        tmp_path: Path, ar: Tool, mounts: Mounts) -> None:
    """git runs out of space writing an object (a big file outside the scope being set
    aside): exit 3 naming the git directory's disk, the state and the way out; git's
    temporary objects of that call are removed, so freeing the user's own file is enough."""
    top = _repository_on_tmpfs(tmp_path, ar, mounts)
    big = os.urandom(500 * 1024)
    write(top / "big.bin", big)
    write(top / "value.txt", "50\n")
    filler = fill(top, leave_pages=74)  # 296 KB: room to start, not for the big object
    ledger = (top / ".auto" / "log.jsonl").read_bytes()
    old = head(top)
    res = tool(top, "run", "-d", "x")
    assert res.returncode == 3, res.stderr
    assert res.stderr == (
        f"git autoresearch: the disk of {top / '.git'} is full: git could not write there "
        "(running 'git update-index --add'); nothing was changed or recorded; free space on "
        "that disk, then run the command again\n")
    assert list((top / ".git" / "objects").glob("??/tmp_obj_*")) == []
    assert (top / "big.bin").read_bytes() == big
    assert (top / "value.txt").read_text() == "50\n"
    assert (top / ".auto" / "log.jsonl").read_bytes() == ledger
    assert head(top) == old
    assert git(top, "for-each-ref", "refs/autoresearch/s1/scope/") == ""
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()
    filler.unlink()
    record = ar(top, "run", "-d", "x", "--json").json()
    assert (record["run"], record["status"], record["scope_violations"]) == \
        (2, "keep", ["big.bin"])
    assert git(top, "cat-file", "-s", "refs/autoresearch/s1/scope/2:big.bin") == str(len(big))


def test_a_disk_that_fills_during_the_measurement_says_the_state(tmp_path: Path, ar: Tool,
                                                                 mounts: Mounts) -> None:
    """The benchmark fills the disk, so the measurement cannot be written: exit 3 with the
    state (nothing recorded, the experiment intact) and the way out; measuring again once
    there is room works."""
    # Fills the disk once the baseline is measured (value.txt changed).
    top = _repository_on_tmpfs(tmp_path, ar, mounts, BENCH + "[ \"$(cat value.txt)\" = 100 ] "
                               "|| dd if=/dev/zero of=out.bin bs=4096 2>/dev/null\nexit 0\n")
    write(top / "value.txt", "50\n")
    ledger = (top / ".auto" / "log.jsonl").read_bytes()
    res = tool(top, "measure")
    pending = top / ".git" / "autoresearch" / "pending.json"
    assert res.returncode == 3, res.stderr
    # Whichever write meets the full disk first (git refreshing the index while the tree is
    # surveyed, or the measurement's file), the state and the way out are said.
    problem, _, state = res.stderr.partition("; nothing was recorded")
    assert problem in (f"git autoresearch: cannot write {pending}: No space left on device",
                       f"git autoresearch: the disk of {top / '.git'} is full: git could not "
                       "write there (running 'git status --porcelain=v2')"), res.stderr
    assert state == (", and the experiment is intact in the work tree: measure again once "
                     "there is room\n")
    assert (top / "value.txt").read_text() == "50\n"
    assert (top / ".auto" / "log.jsonl").read_bytes() == ledger
    assert not pending.exists()


def test_doctor_names_git_temporary_objects_left_behind(repo: Path, ar: Tool) -> None:
    """A temporary object file of git's an hour old is garbage that keeps a disk full:
    doctor names it with its size; one being written now is not named."""
    ar(repo, *start_args())
    objects = repo / ".git" / "objects"
    old, fresh = objects / "ab" / "tmp_obj_Xy12Zq", objects / "cd" / "tmp_obj_Fresh1"
    write(old, b"\0" * 4096)
    write(fresh, b"\0" * 10)
    three_hours_ago = time.time() - 3 * 3600 - 30
    os.utime(old, (three_hours_ago, three_hours_ago))
    findings = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert [f["problem"] for f in findings] == [
        f"git's temporary object file {old} (4096 bytes) is 3h old: a git process that failed "
        f"(a full disk) or was killed left it; once no git process is running, remove it "
        f"(rm {old})"]
    assert old.exists() and fresh.exists(), "doctor removes nothing of git's"


def test_a_keep_on_a_disk_that_fills_while_git_writes_records_nothing(
        tmp_path: Path, ar: Tool, mounts: Mounts) -> None:
    """git runs out of space staging the kept file: exit 3 naming the disk, nothing
    committed or recorded, the experiment and the index as they were, no garbage left; the
    same keep works once the user's own file is gone."""
    top = _repository_on_tmpfs(tmp_path, ar, mounts)
    kept = os.urandom(500 * 1024)
    write(top / "value.txt", kept)
    staged = git(top, "diff", "--cached", "--name-status")
    filler = fill(top, leave_pages=74)
    old = head(top)
    res = tool(top, "keep", "-d", "k", "--metric", "50")
    assert res.returncode == 3, res.stderr
    assert res.stderr.startswith(f"git autoresearch: the disk of {top / '.git'} is full: git "
                                 "could not write there (running 'git ")
    assert res.stderr.endswith("'); nothing was recorded, and the experiment is still in the "
                               "work tree; free space on that disk, then run the command "
                               "again\n")
    assert head(top) == old
    assert git(top, "diff", "--cached", "--name-status") == staged
    assert (top / "value.txt").read_bytes() == kept
    assert list((top / ".git" / "objects").glob("??/tmp_obj_*")) == []
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()
    assert [r["run"] for r in runs(top)] == [1]
    filler.unlink()
    assert ar(top, "keep", "-d", "k", "--metric", "50", "--json").json()["run"] == 2


def test_a_keep_and_a_discard_fsync_what_a_crash_of_the_machine_must_find(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fsync costs a keep milliseconds: a keep syncs the intent record, the copy of the
    index it may roll back to, the ledger line and the snapshot of the untracked files (which
    the next revert must not delete); a discard the same but the index copy. Scratch files git
    reads at once and removes (a temporary index, the state ref's pieces) and the state ref's
    cache (checked when read) are written whole without one."""
    ar(repo, *start_args())
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        synced.append(name.split(".")[0] if name.endswith(".tmp") else name)
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name the file of a descriptor")
    monkeypatch.setattr(os, "fsync", fsync)
    write(repo / "value.txt", "90\n")
    write(repo / "new.txt", "new\n")
    ar(repo, "keep", "-d", "kept", "--metric", "90")
    assert synced == ["intent", "index-before-keep", "log.jsonl", "untracked"]
    synced.clear()
    write(repo / "value.txt", "95\n")
    write(repo / "other.txt", "new\n")
    ar(repo, "discard", "-d", "not kept")
    assert synced == ["intent", "log.jsonl", "untracked"]


def test_git_that_writes_on_a_full_disk_outside_a_plain_call_is_a_refusal(
        tmp_path: Path, mounts: Mounts) -> None:
    """The git calls that do not go through ``Repo.run`` (the interactive ``mktree`` a keep
    runs to find renames out of its scope, the cherry-picks of finalize and apply in a
    worktree of ours) say a full disk as every other does: :class:`DiskFull`, exit 3, naming
    the git directory, not an internal error (exit 1)."""
    from git_autoresearch.git import Repo
    from git_autoresearch.git.objects import make_tree, write_blob
    from git_autoresearch.git.process import DiskFull
    from git_autoresearch.git.worktrees import add_detached, cherry_pick

    top = tmp_path / "small"
    top.mkdir()
    mounts.tmpfs(top, "2m")
    git(top, "init", "-q")
    write(top / "a.txt", "a\n")
    git(top, "add", "a.txt")
    git(top, "commit", "-qm", "a")
    repo = Repo.discover(top)
    add_detached(repo, top / "picks", "HEAD")
    write(top / "b.txt", "b\n" * 1000)
    git(top, "add", "b.txt")
    git(top, "commit", "-qm", "b")
    blob = write_blob(repo, b"a new blob\n")
    filler = fill(top, leave_pages=0)
    with pytest.raises(DiskFull) as tree:
        make_tree(repo, [("100644", blob, "x/new.txt")])
    with pytest.raises(DiskFull) as picked:
        cherry_pick(top / "picks", head(top))
    for caught in (tree, picked):
        assert caught.value.exit_code == 3
        assert caught.value.message.startswith(f"the disk of {top / '.git'} is full")
    filler.unlink()
    assert make_tree(repo, [("100644", blob, "x/new.txt")])


def test_lost_lines_are_put_back_at_their_places_only_when_lost_alone() -> None:
    """with_lost_entries (doctor --fix): the lines a ledger lost from the state ref's copy,
    runs and others, go back at their places, the lines recorded since stay last. Lines that
    moved, a line edited in place (the last one included: it is no loss, and putting the
    old one back would count an incumbent's sample twice), or nothing lost give None."""
    from git_autoresearch.ledger.repairs import with_lost_entries

    head, one, sample, two, hook = (b'{"type":"config"}', b'{"run":1}', b'{"type":"incumbent"}',
                                    b'{"run":2}', b'{"type":"hook"}')
    saved = b"\n".join([head, one, sample, two, hook]) + b"\n"

    def merged(*lines: bytes) -> tuple[bytes, int] | None:
        return with_lost_entries(b"\n".join(lines) + b"\n\n", saved)

    assert with_lost_entries(saved, saved) is None
    assert merged(head, one, two, b'{"run":3}') == (
        b"\n".join([head, one, sample, two, hook, b'{"run":3}']) + b"\n", 2)
    assert merged(head, two, hook) == (saved, 2), "run 1 and the sample after it"
    assert merged(head, one, hook) == (saved, 2), "run 2 back after the sample, not before"
    assert merged(head, one, hook, two) is None
    assert merged(head, one, two, hook, sample) is None
    assert merged(head, one, sample, two, b'{"type":"hook","edited":1}') is None
    assert merged(head, b'{"run":1,"edited":1}', sample, two, hook) is None
    # Another hook's line after the lost one (another time): no edit in place, a loss.
    later = b'{"type":"hook","timestamp":2}'
    assert merged(head, one, sample, two, later) == (saved + later + b"\n", 1)
    # Lines ended by a carriage return are the same lines; those kept stay as they are now.
    assert merged(head + b"\r", one + b"\r", two + b"\r", hook + b"\r") == (
        b"\n".join([head + b"\r", one + b"\r", sample, two + b"\r", hook + b"\r"]) + b"\n",
        1)
    assert merged(head, b'{"run":1,"edited":1}', sample, hook) == (
        b"\n".join([head, b'{"run":1,"edited":1}', sample, two, hook]) + b"\n", 1)

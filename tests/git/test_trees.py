"""Odd trees and odd places: long path lists, a localized git, a symlink in place of a folder,
submodules, paths given from a subdirectory, and a start that was interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Tool, commit_all, git, runs, start_args, tool, write

if sys.version_info >= (3, 11):
    import tomllib
else:  # the package's own dependency before 3.11
    import tomli as tomllib



def died(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == -signal.SIGKILL, proc.stderr


# --- a path list longer than a command line may be ------------------------------------------


def test_resume_finishes_a_killed_discard_of_more_paths_than_a_command_line_holds(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    # 4,000 paths of about 620 bytes: 2.5 MB, more than ARG_MAX (2 MB) allows on one line.
    folder = repo / ("d" * 200) / ("e" * 200)
    folder.mkdir(parents=True)
    for i in range(4000):
        (folder / f"{i:05d}{'f' * 200}").write_bytes(b"")
    write(repo / "value.txt", "50\n")
    died(tool(repo, "discard", "-d", "many", env={"GIT_AUTORESEARCH_DIE_AT":
                                                  "revert:after-remove"}))
    res = tool(repo, "resume", "--json")
    assert res.returncode == 0, res.stderr
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert runs(repo)[-1]["status"] == "discard"
    assert not (repo / ("d" * 200)).exists()
    assert (repo / "value.txt").read_text() == "100\n"
    listed = git(repo, "ls-tree", "-r", "--name-only", "refs/autoresearch/s1/attempts/2")
    assert len(listed.splitlines()) == 4000 + 4


# --- git speaking another language --------------------------------------------------------


def test_an_interrupted_revert_of_a_staged_new_file_finishes_under_a_german_git(
        repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "src" / "new.py", "x = 1\n")
    git(repo, "add", "src/new.py")
    write(repo / "value.txt", "50\n")
    german = {"LANGUAGE": "de", "LC_ALL": "C.UTF-8"}
    died(tool(repo, "discard", "-d", "k", env={**german,
                                               "GIT_AUTORESEARCH_DIE_AT": "record:before-ledger"}))
    res = tool(repo, "resume", "--json", env=german)
    assert res.returncode == 0, res.stderr
    assert [r["run"] for r in runs(repo)] == [1, 2]
    assert not (repo / "src" / "new.py").exists()
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:src/new.py") == "x = 1"


# --- a symlink in place of a tracked folder --------------------------------------------------


def _folder_to_symlink(top: Path) -> None:
    """The experiment: src/ becomes a symlink to a new folder lib2/ holding a changed lib.py."""
    write(top / "lib2" / "lib.py", "def f():\n    return 2\n")
    for child in (top / "src").iterdir():
        child.unlink()
    (top / "src").rmdir()
    (top / "src").symlink_to("lib2")


def test_a_folder_replaced_by_a_symlink_is_kept(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    _folder_to_symlink(repo)
    record = ar(repo, "keep", "-d", "symlinked", "--metric", "90", "--json").json()
    assert record["committed"] is True
    tree = git(repo, "ls-tree", "-r", "HEAD")
    assert "120000 blob" in tree and "\tsrc\n" in tree + "\n"
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines() == \
        ["README.md", "bench.sh", "lib2/lib.py", "src", "value.txt"]
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("step", [None, "revert:after-attempt", "revert:after-remove"])
def test_a_folder_replaced_by_a_symlink_is_discarded(repo: Path, ar: Tool,
                                                     step: str | None) -> None:
    ar(repo, *start_args())
    _folder_to_symlink(repo)
    if step is None:
        ar(repo, "discard", "-d", "symlinked")
    else:
        died(tool(repo, "discard", "-d", "symlinked", env={"GIT_AUTORESEARCH_DIE_AT": step}))
        assert ar(repo, "resume", "--json").json()["actions"] == [
            "finished the interrupted revert of run 2 (discard)"]
    assert [r["status"] for r in runs(repo)] == ["keep", "discard"]
    assert not (repo / "src").is_symlink()
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert not (repo / "lib2").exists()
    assert git(repo, "status", "--porcelain") == ""
    ref = "refs/autoresearch/s1/attempts/2"
    assert git(repo, "ls-tree", "-r", "--name-only", ref).splitlines() == \
        ["README.md", "bench.sh", "lib2/lib.py", "src", "value.txt"]
    assert git(repo, "cat-file", "-p", f"{ref}:src") == "lib2"
    assert ar(repo, "run", "-d", "carries on", "--json").json()["run"] == 3


def test_an_out_of_scope_symlink_in_place_of_a_folder_is_set_aside(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt", "--scope", "lib2", "--allow-missing"))
    _folder_to_symlink(repo)
    write(repo / "value.txt", "50\n")
    record = ar(repo, "run", "-d", "partly out", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["src", "src/lib.py"]
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == \
        ["lib2/lib.py", "value.txt"]
    assert git(repo, "cat-file", "-p", f"{record['scope_ref']}:src") == "lib2"


# --- paths given from a subdirectory --------------------------------------------------------

FROM_SRC = ["start", "--goal", "g", "--session-id", "s1", "--command", "sh bench.sh",
            "--metric-pattern", r"score: (\S+)", "--protected", "../bench.sh"]


def _untouched(top: Path) -> None:
    """Nothing was changed by a refused start: no session folder, no branch."""
    assert not (top / ".auto").exists()
    assert git(top, "branch", "--list", "autoresearch/*") == ""
    assert git(top, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_scope_from_a_subdirectory_is_read_from_there(repo: Path, ar: Tool) -> None:
    src = repo / "src"
    ar(src, *FROM_SRC, "--scope", "lib.py", "--scope", "../value.txt", "--scope",
       str(repo / "README.md"))
    write(src / "lib.py", "def f():\n    return 2\n")
    write(repo / "value.txt", "90\n")
    record = ar(src, "run", "-d", "both in scope", "--json").json()
    assert record["status"] == "keep" and record["scope_violations"] == []
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == \
        ["src/lib.py", "value.txt"]


def test_scope_read_as_written(repo: Path, ar: Tool) -> None:
    ar(repo / "src", *FROM_SRC, "--scope", "lib.py", "--scope", "../value.txt",
       "--scope", str(repo / "README.md"), "--scope", "*.py", "--no-baseline")
    cfg = tomllib.loads((repo / ".auto" / "config.toml").read_text())
    assert cfg["scope"] == ["src/lib.py", "value.txt", "README.md", "src/*.py"]
    assert cfg["protected"] == ["bench.sh"]


@pytest.mark.parametrize("entry", ["../../outside.txt", "/tmp"])
def test_a_scope_outside_the_repository_is_refused(repo: Path, ar: Tool, entry: str) -> None:
    res = ar(repo / "src", *FROM_SRC, "--scope", entry, expect=2)
    assert res.err == f"git autoresearch: --scope {entry}: the path is outside the repository " \
                      f"{repo}\n"
    _untouched(repo)


@pytest.mark.parametrize(("option", "entry", "shown"), [
    ("--scope", "value.txt", "--scope value.txt (read from the current directory as "
                             "src/value.txt)"),
    ("--protected", "notes/**", "--protected notes/** (read from the current directory as "
                                "src/notes/**)"),
    ("--scope", "*.txt", "--scope *.txt (read from the current directory as src/*.txt)"),
])
def test_a_path_that_matches_nothing_is_refused(repo: Path, ar: Tool, option: str, entry: str,
                                                shown: str) -> None:
    res = ar(repo / "src", *FROM_SRC, option, entry, expect=2)
    assert res.err == (f"git autoresearch: {shown} matches no file in the work tree; fix it, "
                       "or pass --allow-missing to keep it\n")
    _untouched(repo)
    ar(repo / "src", *FROM_SRC, option, entry, "--allow-missing", "--no-baseline")
    assert (repo / ".auto" / "config.toml").exists()


@pytest.mark.parametrize("paths", [["--scope", "bench.sh"],
                                   ["--scope", "src", "--readonly", "src"],
                                   ["--scope", "src", "--readonly", "value.txt"]])
def test_a_scope_that_is_all_readonly_is_warned_of(repo: Path, ar: Tool,
                                                   paths: list[str]) -> None:
    """A scope every path of which is readonly (the benchmark the command runs, or a folder
    also given as readonly) undoes every change before measuring: start said nothing, and
    every run after was a noise probe. It warns now; a scope with room in it says nothing."""
    found = ar(repo, *start_args("--decision", "strict", *paths), "--json").json()
    closed = [w for w in found["warnings"] if "is readonly or protected" in w]
    if paths[-1] == "value.txt":
        assert closed == []
        return
    scope = paths[1]
    assert closed == [f"every path of the scope ({scope}) is readonly or protected: each "
                      "change an experiment makes there is undone before measuring, and every "
                      "run measures the incumbent again; widen --scope or narrow --readonly"]


def test_config_file_paths_stay_relative_to_the_top(repo: Path, ar: Tool, tmp_path: Path) -> None:
    conf = write(tmp_path / "c.toml", 'scope = ["value.txt"]\nprotected = ["bench.sh"]\n')
    args = ["start", "--goal", "g", "--session-id", "s1", "--command", "sh bench.sh",
            "--metric-pattern", r"score: (\S+)", "--config", str(conf), "--no-baseline"]
    bad = write(tmp_path / "bad.toml", 'scope = ["nothing.txt"]\nprotected = ["bench.sh"]\n')
    res = ar(repo / "src", *args[:-3], "--config", str(bad), expect=2)
    assert res.err == (f"git autoresearch: scope entry 'nothing.txt' of {bad} (read from the "
                       "top of the work tree) matches no file in the work tree; fix it, or pass "
                       "--allow-missing to keep it\n")
    _untouched(repo)
    ar(repo / "src", *args)
    cfg = tomllib.loads((repo / ".auto" / "config.toml").read_text())
    assert cfg["scope"] == ["value.txt"] and cfg["protected"] == ["bench.sh"]


def test_new_segment_from_a_subdirectory(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    res = ar(repo / "src", "start", "--new-segment", "--scope", "nope.py", expect=2)
    assert res.err == ("git autoresearch: --scope nope.py (read from the current directory as "
                       "src/nope.py) matches no file in the work tree; fix it, or pass "
                       "--allow-missing to keep it\n")
    assert len(runs(repo)) == 1
    ar(repo / "src", "start", "--new-segment", "--scope", "lib.py")
    cfg = tomllib.loads((repo / ".auto" / "config.toml").read_text())
    assert cfg["scope"] == ["src/lib.py"]


# --- a start that was killed ----------------------------------------------------------------


@pytest.mark.parametrize("step", ["start:after-intent", "start:after-branch",
                                  "start:after-config", "start:after-ledger"])
def test_every_way_out_of_a_killed_start_works(repo: Path, ar: Tool, step: str) -> None:
    died(tool(repo, *start_args(), env={"GIT_AUTORESEARCH_DIE_AT": step}))
    again = ar(repo, *start_args(), expect=3)
    assert again.err == ("git autoresearch: the start of session s1 was interrupted: git "
                         "autoresearch resume finishes it (git autoresearch start --new-segment "
                         "finishes it and measures the baseline)\n")
    for command in (["run", "-d", "x"], ["status"], ["log"], ["doctor"]):
        res = ar(repo, *command, expect=None)
        ways = ("git autoresearch resume", "git autoresearch start --new-segment")
        # a reading command may read what there is; one that refuses names the way out
        assert res.code == 0 and command[0] in ("status", "log") or \
            res.code == 3 and any(way in res.err + res.out for way in ways), (command, res)
    data = ar(repo, "start", "--new-segment", "--json").json()
    assert data["warnings"] == ["finished the interrupted start of session s1"]
    assert data["baseline"]["run"] == 1 and data["baseline"]["status"] == "keep"
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "autoresearch/s1"
    write(repo / "value.txt", "50\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert not (repo / ".git" / "autoresearch" / "start.json").exists()


def test_a_killed_start_whose_head_moved_is_refused_with_a_way_out(repo: Path, ar: Tool) -> None:
    died(tool(repo, *start_args(), env={"GIT_AUTORESEARCH_DIE_AT": "start:after-intent"}))
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "7\n")
    git(repo, "commit", "-qam", "moved on")
    res = ar(repo, "resume", expect=3)
    assert res.err == ("git autoresearch: HEAD moved since the start of session s1 was "
                       f"interrupted; check out autoresearch/s1 (or the commit {head[:7]}) and "
                       "run git autoresearch resume again\n")
    git(repo, "checkout", "-q", head)
    assert "finished the interrupted start" in ar(repo, "resume", "--json").json()["actions"][0]
    assert git(repo, "rev-parse", "autoresearch/s1") == head


# --- submodules -------------------------------------------------------------------------------


# What ``with_submodule`` gives: the repository's top, and the submodule's commits one and two.
Submodule = tuple[Path, str, str]


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Submodule:
    """``repo`` with a submodule ``sub`` at its commit ``one`` (sub/a is "1"); the submodule's
    own history also holds ``two`` (sub/a is "2"), which an experiment can check out."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    write(lib / "a", "1\n")
    git(lib, "add", "a")
    git(lib, "commit", "-qm", "one")
    one = git(lib, "rev-parse", "HEAD")
    write(lib / "a", "2\n")
    git(lib, "commit", "-qam", "two")
    two = git(lib, "rev-parse", "HEAD")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub")
    git(repo / "sub", "checkout", "-q", one)
    git(repo, "add", "sub")
    git(repo, "commit", "-qm", "submodule")
    return repo, one, two


def test_discard_restores_a_submodule_and_its_attempt_records_it(with_submodule: Submodule,
                                                                 ar: Tool) -> None:
    top, one, two = with_submodule
    ar(top, *start_args())
    git(top / "sub", "checkout", "-q", two)
    write(top / "value.txt", "300\n")
    record = ar(top, "run", "-d", "worse", "--json").json()
    assert record["status"] == "discard"
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert (top / "sub" / "a").read_text() == "1\n"
    assert git(top, "status", "--porcelain", "--ignore-submodules=none") == ""
    assert git(top, "rev-parse", f"{record['attempt_ref']}:sub") == two


@pytest.mark.parametrize("step", ["revert:after-attempt", "revert:after-remove"])
def test_a_killed_discard_restores_a_submodule(with_submodule: Submodule, ar: Tool,
                                               step: str) -> None:
    top, one, two = with_submodule
    ar(top, *start_args())
    git(top / "sub", "checkout", "-q", two)
    died(tool(top, "discard", "-d", "killed", env={"GIT_AUTORESEARCH_DIE_AT": step}))
    assert ar(top, "resume", "--json").json()["actions"] == [
        "finished the interrupted revert of run 2 (discard)"]
    assert [r["status"] for r in runs(top)] == ["keep", "discard"]
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert git(top, "status", "--porcelain", "--ignore-submodules=none") == ""
    assert git(top, "rev-parse", "refs/autoresearch/s1/attempts/2:sub") == two


def test_files_the_benchmark_writes_inside_a_submodule_wedge_nothing(with_submodule: Submodule,
                                                                     ar: Tool) -> None:
    """A benchmark that imports from a submodule writes untracked files inside it (Python's
    __pycache__, when the submodule ignores none): start refused its baseline as a submodule
    with changes not committed inside it, then every command called the start interrupted and
    each way out it named refused too. Untracked files inside a submodule are no change of
    the superproject (a keep could not commit them, a revert need not touch them): start,
    keeps and discards go on, and the files stay where the benchmark wrote them."""
    top, one, _ = with_submodule
    write(top / "bench.sh", '#!/bin/sh\nmkdir -p sub/__pycache__\necho built > '
                            'sub/__pycache__/a.pyc\necho "score: $(cat value.txt)"\n', 0o755)
    commit_all(top)
    ar(top, *start_args("--decision", "strict", "--scope", "value.txt"))
    for value, status in (("90", "keep"), ("95", "discard")):
        write(top / "value.txt", f"{value}\n")
        assert ar(top, "run", "-d", status, "--json").json()["status"] == status
    assert (top / "sub" / "__pycache__" / "a.pyc").read_text() == "built\n"
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert git(top, "show", "--name-only", "--format=", "HEAD") == "value.txt"
    assert ar(top, "doctor", "--json").json()["findings"] == []


def test_the_incumbent_measured_beside_has_its_submodules(with_submodule: Submodule,
                                                          ar: Tool) -> None:
    """A benchmark that reads a submodule's files, under the sequential rule: the incumbent's
    worktree had no submodule checked out, gave no metric on every run, and every run was
    decided on the incumbent's earlier samples alone. Each submodule the work tree has is now
    checked out there too, at the commit recorded for it (a worktree of the submodule's own
    repository: nothing fetched), and its record is gone with the worktree."""
    top, one, _ = with_submodule
    write(top / "bench.sh", '#!/bin/sh\nn=$(od -An -N1 -tu1 /dev/urandom | tr -d " ")\n'
                            'a=$(cat sub/a) || exit 1\n'
                            'echo "score: $(( $(cat value.txt) + a * 100 + n % 9 ))"\n', 0o755)
    commit_all(top)
    ar(top, *start_args("--scope", "value.txt"))
    write(top / "value.txt", "50\n")
    record = ar(top, "run", "-d", "half", "--json").json()
    assert not [w for w in record["warnings"] if "gave no metric" in w], record["warnings"]
    assert record["decision"]["incumbent_fresh"]
    assert min(record["decision"]["incumbent_fresh"]) >= 200
    assert git(top / "sub", "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(top / "sub", "rev-parse", "HEAD") == one
    if record["status"] == "keep":  # (audit checks both sides out the same way)
        audited = ar(top, "audit", "--samples", "2", "--json").json()
        assert "crash" not in json.dumps(audited), audited
        assert git(top / "sub", "worktree", "list", "--porcelain").count("worktree ") == 1


@pytest.mark.parametrize("command", ["discard", "keep"])
def test_a_dirty_submodule_is_refused_before_anything_changes(with_submodule: Submodule, ar: Tool,
                                                              command: str) -> None:
    top, _, _ = with_submodule
    ar(top, *start_args())
    write(top / "sub" / "a", "edited inside\n")
    write(top / "value.txt", "50\n")
    head = git(top, "rev-parse", "HEAD")
    args = ["discard", "-d", "x"] if command == "discard" else \
        ["keep", "-d", "x", "--metric", "50"]
    res = ar(top, *args, expect=3)
    assert res.err == ("git autoresearch: the submodule sub of the experiment has changes "
                       "not committed inside it, which git autoresearch cannot record; "
                       f"nothing was {'kept' if command == 'keep' else 'reverted'}: commit "
                       "them inside the submodule, or undo them there (git -C sub "
                       "status shows them)\n")
    assert (top / "sub" / "a").read_text() == "edited inside\n"
    assert (top / "value.txt").read_text() == "50\n"
    assert git(top, "rev-parse", "HEAD") == head
    assert [r["run"] for r in runs(top)] == [1]
    assert git(top, "for-each-ref", "refs/autoresearch/s1/attempts") == ""
    assert not (top / ".git" / "autoresearch" / "intent.json").exists()


def test_an_out_of_scope_submodule_change_is_never_measured_or_kept(with_submodule: Submodule,
                                                                    ar: Tool) -> None:
    top, one, two = with_submodule
    ar(top, *start_args("--decision", "strict", "--scope", "value.txt", "--command",
                        "sh bench.sh; cat sub/a"))
    git(top / "sub", "checkout", "-q", two)
    write(top / "value.txt", "50\n")
    record = ar(top, "run", "-d", "better", "--json").json()
    assert record["status"] == "keep" and record["scope_violations"] == ["sub"]
    assert (top / ".auto" / "run.log").read_text() == "score: 50\n1\n"
    assert git(top, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert git(top, "rev-parse", f"{record['scope_ref']}:sub") == two
    write(top / "sub" / "a", "edited inside\n")
    res = ar(top, "measure", expect=3)
    assert "the submodule sub of the experiment has changes" in res.err
    assert (top / "sub" / "a").read_text() == "edited inside\n"


def test_an_in_scope_submodule_change_is_kept(with_submodule: Submodule, ar: Tool) -> None:
    top, one, two = with_submodule
    ar(top, *start_args())
    git(top / "sub", "checkout", "-q", two)
    record = ar(top, "keep", "-d", "newer lib", "--metric", "90", "--json").json()
    assert record["committed"] is True
    assert git(top, "rev-parse", "HEAD:sub") == two
    assert git(top, "status", "--porcelain", "--ignore-submodules=none") == ""


@pytest.mark.parametrize("command", ["discard", "keep"])
def test_a_tracked_symlink_replaced_by_a_folder(repo: Path, ar: Tool, command: str) -> None:
    (repo / "link").symlink_to("src")
    git(repo, "add", "link")
    git(repo, "commit", "-qm", "link")
    ar(repo, *start_args())
    (repo / "link").unlink()
    write(repo / "link" / "x.py", "x = 1\n")
    if command == "discard":
        ar(repo, "discard", "-d", "folder")
        assert os.readlink(repo / "link") == "src"
        assert git(repo, "cat-file", "-p", "refs/autoresearch/s1/attempts/2:link/x.py") == \
            "x = 1"
    else:
        ar(repo, "keep", "-d", "folder", "--metric", "90")
        assert git(repo, "cat-file", "-p", "HEAD:link/x.py") == "x = 1"
    assert git(repo, "status", "--porcelain") == ""


def test_readonly_paths_from_a_subdirectory_are_read_from_there(repo: Path, ar: Tool) -> None:
    write(repo / "src" / "data.txt", "fixed\n")
    commit_all(repo)
    ar(repo / "src", *FROM_SRC, "--readonly", "data.txt", "--scope", "lib.py",
       "--no-baseline")
    cfg = tomllib.loads((repo / ".auto" / "config.toml").read_text())
    assert cfg["readonly"] == ["src/data.txt"]
    res = ar(repo / "src", "start", "--new-segment", "--readonly", "nothing.txt", "--no-baseline",
             expect=2)
    assert res.err == ("git autoresearch: --readonly nothing.txt (read from the current directory "
                       "as src/nothing.txt) matches no file in the work tree; fix it, or pass "
                       "--allow-missing to keep it\n")


def test_discard_brings_back_a_deleted_submodule(with_submodule: Submodule, ar: Tool) -> None:
    import shutil

    top, one, _ = with_submodule
    ar(top, *start_args())
    shutil.rmtree(top / "sub")
    record = ar(top, "discard", "-d", "no lib", "--json").json()
    assert record["status"] == "discard"
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert (top / "sub" / "a").read_text() == "1\n"
    assert git(top, "status", "--porcelain", "--ignore-submodules=none") == ""


def test_commit_hooks_keep_the_users_locale(repo: Path) -> None:
    from conftest import make_executable

    hook = write(repo / ".git" / "hooks" / "pre-commit",
                 '#!/bin/sh\necho "$LC_ALL $LANGUAGE" > .git/seen-locale\n')
    make_executable(hook)
    assert tool(repo, *start_args()).returncode == 0
    write(repo / "value.txt", "50\n")
    res = tool(repo, "keep", "-d", "k", "--metric", "50",
               env={"LANGUAGE": "de", "LC_ALL": "C.UTF-8"})
    assert res.returncode == 0, res.stderr
    assert (repo / ".git" / "seen-locale").read_text() == "C.UTF-8 de\n"


def test_a_submodule_lacking_the_recorded_commit_is_refused(with_submodule: Submodule, ar: Tool,
                                                           tmp_path: Path) -> None:
    top, one, _ = with_submodule
    lib = tmp_path / "lib"
    write(lib / "a", "3\n")
    git(lib, "commit", "-qam", "three")  # never fetched into the submodule
    three = git(lib, "rev-parse", "HEAD")
    ar(top, *start_args())
    git(top, "update-index", "--cacheinfo", f"160000,{three},sub")
    git(top, "commit", "-qm", "records a commit the submodule lacks")
    head = git(top, "rev-parse", "HEAD")
    res = ar(top, "discard", "-d", "x", expect=3)
    assert res.err == ("git autoresearch: the submodule checkout cannot go back to the commit "
                       f"HEAD records, which it does not have: sub ({three[:7]}); nothing was "
                       "reverted: fetch it inside the submodule (git -C sub fetch)\n")
    assert git(top / "sub", "rev-parse", "HEAD") == one
    assert git(top, "rev-parse", "HEAD") == head
    assert git(top, "for-each-ref", "refs/autoresearch/s1/attempts") == ""
    git(top / "sub", "fetch", "-q", "origin")
    assert ar(top, "discard", "-d", "x", "--json").json()["status"] == "discard"
    assert git(top / "sub", "rev-parse", "HEAD") == three


def test_a_start_git_cannot_make_the_branch_for_leaves_nothing_behind(repo: Path, ar: Tool) -> None:
    git(repo, "branch", "autoresearch")  # no branch autoresearch/s1 can live beside it
    res = ar(repo, *start_args(), expect=3)
    assert res.err.startswith("git autoresearch: git could not create the branch "
                              "autoresearch/s1: ")
    assert not (repo / ".git" / "autoresearch" / "start.json").exists()
    assert not (repo / ".auto").exists()
    git(repo, "branch", "-q", "-m", "autoresearch", "other")
    assert ar(repo, *start_args(), "--json").json()["baseline"]["metric"] == 100


def test_a_glob_given_from_a_subdirectory_stays_where_it_was_given(repo: Path, ar: Tool) -> None:
    """From src/, ``--protected '../notes*'`` names the top's notes files; a pattern without
    ``/`` would match at any depth, so it is anchored at the top (``/notes*``)."""
    write(repo / "notes.txt", "user notes\n")
    commit_all(repo, "notes")
    ar(repo / "src", *FROM_SRC, "--protected", "../notes*", "--no-baseline")
    cfg = tomllib.loads((repo / ".auto" / "config.toml").read_text())
    assert cfg["protected"] == ["bench.sh", "/notes*"]
    write(repo / "notes.txt", "edited notes\n")
    write(repo / "src" / "notes_x.txt", "an experiment's file\n")
    ar(repo, "discard", "-d", "x")
    assert (repo / "notes.txt").read_text() == "edited notes\n"
    assert not (repo / "src" / "notes_x.txt").exists()
    res = ar(repo, "start", "--new-segment", "--protected", "/etc/notes*", "--no-baseline",
             expect=2)
    assert res.err == ("git autoresearch: --protected /etc/notes*: the path is outside the "
                       f"repository {repo}\n")


def test_a_bracket_in_a_path_rule_is_taken_as_git_takes_it(repo: Path, ar: Tool) -> None:
    """A path named with brackets is given as a glob that escapes them (``lib [[]m]``, as
    git's own pathspecs would): it matched, and every command then printed Python's
    FutureWarning ("Possible nested set") on stderr. The rule's characters are taken as
    themselves inside a bracket; nothing else is said."""
    import warnings

    write(repo / "lib [m]" / "x.py", "x = 1\n")
    commit_all(repo, "a folder named with brackets")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        ar(repo, *start_args("--decision", "strict", "--scope", "lib [[]m]", "--readonly",
                             "a[&|~]b"), "--allow-missing")
        write(repo / "lib [m]" / "x.py", "x = 2\n")
        write(repo / "value.txt", "90\n")
        record = ar(repo, "run", "-d", "in the bracketed folder", "--json").json()
    assert record["scope_violations"] == ["value.txt"]


@pytest.mark.parametrize("where", ["option", "config"])
def test_a_backslash_in_a_name_is_named_in_brackets(repo: Path, ar: Tool, tmp_path: Path,
                                                    where: str) -> None:
    """A backslash is read as ``/`` in a path rule, except inside a bracket, where it is a
    backslash (as ``[*]`` is a star): ``a[\\]b.py`` names the file ``a\\b.py``, which git
    takes as any other name, from the command line and from a --config file alike. A rule
    with a backslash that matches nothing says how to name one."""
    write(repo / "a\\b.py", "x = 1\n")
    commit_all(repo, "a name with a backslash")
    said = ar(repo, *start_args("--scope", "a\\b.py"), expect=2).err
    assert "a[\\]b.py" in said, said
    if where == "option":
        ar(repo, *start_args("--decision", "strict", "--scope", "a[\\]b.py", "--scope",
                             "value.txt"))
    else:
        write(tmp_path / "c.toml", 'scope = ["a[\\\\]b.py", "value.txt"]\n')
        ar(repo, *start_args("--decision", "strict", "--config", str(tmp_path / "c.toml")))
    write(repo / "a\\b.py", "x = 2\n")
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "the backslashed file", "--json").json()
    assert (record["status"], record["scope_violations"]) == ("keep", [])
    assert git(repo, "show", "HEAD:a\\b.py") == "x = 2"

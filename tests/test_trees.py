"""Odd trees and odd places: long path lists, a localized git, a symlink in place of a folder,
submodules, paths given from a subdirectory, and a start that was interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, runs, start_args, write

TOOL = [sys.executable, "-m", "git_autoresearch"]


def tool(cwd: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def died(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == -signal.SIGKILL, proc.stderr


# --- a path list longer than a command line may be ------------------------------------------


def test_resume_finishes_a_killed_discard_of_more_paths_than_a_command_line_holds(
        repo: Path, ar) -> None:
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
        repo: Path, ar) -> None:
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


def test_a_folder_replaced_by_a_symlink_is_kept(repo: Path, ar) -> None:
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
def test_a_folder_replaced_by_a_symlink_is_discarded(repo: Path, ar, step: str | None) -> None:
    ar(repo, *start_args())
    _folder_to_symlink(repo)
    if step is None:
        ar(repo, "discard", "-d", "symlinked")
    else:
        died(tool(repo, "discard", "-d", "symlinked", env={"GIT_AUTORESEARCH_DIE_AT": step}))
        ar(repo, "resume")
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


def test_an_out_of_scope_symlink_in_place_of_a_folder_is_set_aside(repo: Path, ar) -> None:
    ar(repo, *start_args("--scope", "value.txt", "--scope", "lib2"))
    _folder_to_symlink(repo)
    write(repo / "value.txt", "50\n")
    record = ar(repo, "run", "-d", "partly out", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["src", "src/lib.py"]
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == \
        ["lib2/lib.py", "value.txt"]
    assert git(repo, "cat-file", "-p", f"{record['scope_ref']}:src") == "lib2"

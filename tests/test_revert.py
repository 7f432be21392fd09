"""Revert never loses anything: user files, ignored files, protected files, modes; and it
restores everything the experiment changed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conftest import git, start_args, write


def snapshot(paths: list[Path]) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode)) for p in paths}


def test_user_files_survive_discard(repo: Path, ar) -> None:
    write(repo / ".gitignore", ".venv/\n.env\n*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    venv = write(repo / ".venv" / "bin" / "python", "#!venv\n", 0o755)
    dotenv = write(repo / ".env", "SECRET=1\n", 0o600)
    notes = write(repo / "notes.txt", "my notes, untracked before the session\n")
    ar(repo, *start_args("--force"))
    # The experiment: edits, a staged edit, ignored output, and a change to the user's notes.
    write(repo / "value.txt", "200\n")
    write(repo / "README.md", "staged edit\n")
    git(repo, "add", "README.md")
    build_log = write(repo / "build.log", "ignored output\n")
    write(notes, "my notes, untracked before the session\nmore notes\n")
    before = snapshot([venv, dotenv, notes, build_log])
    stash_before = git(repo, "stash", "list")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert snapshot([venv, dotenv, notes, build_log]) == before
    assert git(repo, "stash", "list") == stash_before
    assert (repo / "value.txt").read_text() == "100\n"
    assert (repo / "README.md").read_text() == "project\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""
    # The staged edit is not lost: the attempt ref holds it.
    assert git(repo, "show", "refs/autoresearch/s1/attempts/2:README.md") == "staged edit"
    # Files untracked before the experiment are neither committed nor recorded.
    assert "notes.txt" not in git(repo, "ls-tree", "-r", "--name-only",
                                  "refs/autoresearch/s1/attempts/2")


def test_renames_deletions_and_modes_are_reverted(repo: Path, ar) -> None:
    ar(repo, *start_args())
    git(repo, "mv", "src/lib.py", "src/renamed.py")
    os.remove(repo / "README.md")
    (repo / "value.txt").chmod(0o755)
    write(repo / "value.txt", "300\n", 0o755)
    write(repo / "newdir" / "deep" / "file.txt", "new\n")
    assert ar(repo, "run", "-d", "shuffle", "--json").json()["status"] == "discard"
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert not (repo / "src" / "renamed.py").exists()
    assert (repo / "README.md").read_text() == "project\n"
    assert stat.S_IMODE((repo / "value.txt").stat().st_mode) & 0o111 == 0
    assert not (repo / "newdir").exists()
    assert git(repo, "status", "--porcelain") == ""


def test_file_replaced_by_directory_is_reverted(repo: Path, ar) -> None:
    ar(repo, *start_args())
    os.remove(repo / "README.md")
    write(repo / "README.md" / "inside.txt", "dir now\n")
    write(repo / "value.txt", "300\n")
    ar(repo, "run", "-d", "dir for file")
    assert (repo / "README.md").read_text() == "project\n"


def test_protected_files_are_byte_and_mode_identical(repo: Path, ar) -> None:
    write(repo / "eval" / "score.py", "print('tracked evaluator')\n")
    git(repo, "add", "eval")
    git(repo, "commit", "-q", "-m", "evaluator")
    ar(repo, *start_args("--protected", "eval/**"))
    hook = write(repo / ".auto" / "hooks" / "after.sh", "#!/bin/sh\nexit 0\n", 0o755)
    legacy = write(repo / "autoresearch.md", "legacy notes\n", 0o640)
    prompt = repo / ".auto" / "prompt.md"
    write(prompt, "learnings from this run\n")
    evaluator = write(repo / "eval" / "score.py", "print('edited by the agent')\n")
    write(repo / "value.txt", "300\n")
    before = snapshot([hook, legacy, prompt, evaluator])
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert snapshot([hook, legacy, prompt, evaluator]) == before
    write(repo / "value.txt", "10\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert snapshot([hook, legacy, prompt, evaluator]) == before
    files = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert files == ["value.txt"], "a keep never commits protected paths"


def test_keep_reverts_changes_outside_scope(repo: Path, ar) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "out of scope\n")
    write(repo / "src" / "extra.py", "x = 1\n")
    record = ar(repo, "run", "-d", "better", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["README.md", "src/extra.py"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert (repo / "README.md").read_text() == "project\n"
    assert not (repo / "src" / "extra.py").exists()
    assert git(repo, "show", f"{record['attempt_ref']}:README.md") == "out of scope"


def test_scripts_inside_scope_are_refused(repo: Path, ar) -> None:
    args = [a for a in start_args() if a not in ("--protected", "bench.sh")]
    res = ar(repo, *args, expect=3)
    assert "bench.sh" in res.err and "--protected" in res.err
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"


def test_start_refuses_dirty_tree(repo: Path, ar) -> None:
    write(repo / "value.txt", "1\n")
    res = ar(repo, *start_args(), expect=3)
    assert "value.txt" in res.err and "uncommitted" in res.err
    git(repo, "checkout", "-q", "value.txt")
    write(repo / "stray.txt", "x\n")
    res = ar(repo, *start_args(), expect=3)
    assert "stray.txt" in res.err and "--force" in res.err
    ar(repo, *start_args("--force"))
    write(repo / "value.txt", "300\n")
    ar(repo, "run", "-d", "worse")
    assert (repo / "stray.txt").read_text() == "x\n"


def test_paths_with_odd_names(repo: Path, ar) -> None:
    ar(repo, *start_args())
    odd = ["sp ace.txt", "star*.txt", ":(glob)magic.txt", "tab\tname.txt", "ünï.txt", "-dash.txt"]
    for name in odd:
        write(repo / name, "x\n")
    write(repo / "value.txt", "300\n")
    ar(repo, "run", "-d", "odd names")
    for name in odd:
        assert not (repo / name).exists(), name
    write(repo / "value.txt", "1\n")
    for name in odd:
        write(repo / name, "x\n")
    ar(repo, "run", "-d", "odd names kept")
    committed = git(repo, "-c", "core.quotePath=false", "show", "--name-only", "--format=",
                    "HEAD")
    for name in odd:
        if "\t" not in name:
            assert name in committed

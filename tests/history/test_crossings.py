"""Files that cross a line the tool draws: a rename with edits across the scope boundary, and
a case-only rename where the file system does not tell the two names apart."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Tool, git, start_args, write

LIB = "def f():\n    return 1\n"
# The same module, edited as it moved: git's rename detection pairs it with the old one (72%
# similar) under another name.
EDITED = "def f():\n    return 1\n\n# moved\n"
# Edited beyond what git calls a rename (47% similar), kept under its own file name.
REWRITTEN = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


def test_a_rename_with_edits_out_of_the_scope_is_set_aside_whole(repo: Path, ar: Tool) -> None:
    """Measuring: the out-of-scope new path is saved and removed, and the in-scope file it came
    from is put back as HEAD has it, so the tree never lacks a file HEAD has."""
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    (repo / "src" / "lib.py").unlink()
    write(repo / "moved_out.py", EDITED)
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "rename out of scope, edited", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["moved_out.py", "src/lib.py"]
    assert (repo / "src" / "lib.py").read_text() == LIB
    assert not (repo / "moved_out.py").exists()
    assert git(repo, "ls-tree", "--name-only", "HEAD", "src/") == "src/lib.py"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert git(repo, "status", "--porcelain") == ""
    scope_ref = record["scope_ref"]
    assert git(repo, "show", f"{scope_ref}:moved_out.py") + "\n" == EDITED


def test_keep_puts_back_a_file_renamed_with_edits_out_of_the_scope(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    (repo / "src" / "lib.py").unlink()
    write(repo / "lib.py", REWRITTEN)
    write(repo / "value.txt", "10\n")
    record = ar(repo, "keep", "-d", "rename out, edited", "--metric", "10", "--json").json()
    assert record["scope_violations"] == ["lib.py", "src/lib.py"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert (repo / "src" / "lib.py").read_text() == LIB
    assert not (repo / "lib.py").exists()
    assert git(repo, "show", f"{record['attempt_ref']}:lib.py") + "\n" == REWRITTEN


def test_a_rename_with_edits_into_the_scope_keeps_the_new_file_and_restores_the_old(
        repo: Path, ar: Tool) -> None:
    """The out-of-scope side (the deleted README.md) is restored whole; the in-scope side (the
    new file) follows the decision: committed on a keep."""
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    (repo / "README.md").unlink()
    write(repo / "src" / "README.md", "project\nand more\n")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "rename into scope, edited", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["README.md"]
    assert (repo / "README.md").read_text() == "project\n"
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()) == \
        ["src/README.md", "value.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_an_in_scope_deletion_beside_an_unrelated_new_file_outside_is_kept(
        repo: Path, ar: Tool) -> None:
    """Only a rename joins the deletion to the violation: an unrelated file created outside the
    scope leaves the experiment's deletion alone."""
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    (repo / "src" / "lib.py").unlink()
    write(repo / "notes.txt", "nothing like the deleted module\n")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "delete lib", "--json").json()
    assert record["scope_violations"] == ["notes.txt"]
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()) == \
        ["src/lib.py", "value.txt"]
    assert not (repo / "src" / "lib.py").exists()


# --- case-only renames where the file system folds case --------------------------------------
# What a case-insensitive file system (macOS, Windows, exFAT) shows after ``mv Foo.py foo.py``:
# the index holds Foo.py, the folder lists only foo.py, and git, with core.ignorecase set as
# git init sets it there, sees no new file. These tests build exactly that on a case-sensitive
# disk: core.ignorecase=true, and the file renamed on disk.


def case_folding_repo(repo: Path) -> Path:
    """``repo`` with a committed Foo.py and core.ignorecase=true; returns the module."""
    git(repo, "config", "core.ignorecase", "true")
    write(repo / "Foo.py", "VALUE = 1\nNAME = 'foo'\nSIZE = 3\n")
    git(repo, "add", "Foo.py")
    git(repo, "commit", "-q", "-m", "a module")
    return repo / "Foo.py"


def names(top: Path) -> list[str]:
    return sorted(n for n in os.listdir(top) if n.lower() == "foo.py")


def test_discard_undoes_a_case_only_rename_and_saves_it_in_the_attempt(
        repo: Path, ar: Tool) -> None:
    module = case_folding_repo(repo)
    ar(repo, *start_args("--scope", "*.py", "--scope", "value.txt"))
    module.rename(repo / "foo.py")
    write(repo / "value.txt", "200\n")
    record = ar(repo, "discard", "-d", "lower-case module", "--json").json()
    assert names(repo) == ["Foo.py"]
    assert module.read_text() == "VALUE = 1\nNAME = 'foo'\nSIZE = 3\n"
    attempt = record["attempt_ref"]
    assert git(repo, "ls-tree", "--name-only", attempt, "--", "Foo.py", "foo.py") == "foo.py"
    assert git(repo, "show", f"{attempt}:foo.py") == "VALUE = 1\nNAME = 'foo'\nSIZE = 3"
    assert git(repo, "status", "--porcelain") == ""


def test_a_run_that_is_discarded_undoes_a_case_only_rename(repo: Path, ar: Tool) -> None:
    module = case_folding_repo(repo)
    ar(repo, *start_args("--scope", "*.py", "--scope", "value.txt"))
    module.rename(repo / "foo.py")
    write(repo / "value.txt", "200\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert names(repo) == ["Foo.py"]
    assert git(repo, "status", "--porcelain") == ""


def test_keep_commits_a_case_only_rename_as_a_rename(repo: Path, ar: Tool) -> None:
    module = case_folding_repo(repo)
    ar(repo, *start_args("--scope", "*.py", "--scope", "value.txt"))
    module.rename(repo / "foo.py")
    write(repo / "foo.py", "VALUE = 2\nNAME = 'foo'\nSIZE = 3\n")
    write(repo / "value.txt", "10\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert git(repo, "diff-tree", "-M", "--name-status", "-r", "HEAD~1", "HEAD") == \
        "R068\tFoo.py\tfoo.py\nM\tvalue.txt"
    assert git(repo, "ls-tree", "--name-only", "HEAD", "--", "Foo.py", "foo.py") == "foo.py"
    assert names(repo) == ["foo.py"]
    assert git(repo, "status", "--porcelain") == ""


def folding_folder(tmp_path: Path) -> Path:
    """An empty folder on a file system that folds case: ext4's casefold attribute set on an
    empty folder (``chattr +F``, which needs a file system made with the casefold feature and a
    kernel built with CONFIG_UNICODE); else the test is skipped, saying why. (A loop-mounted
    vfat or exFAT image needs root and mkfs tools CI does not have; the tests above build what
    such a file system shows instead.)"""
    folder = tmp_path / "folding"
    folder.mkdir()
    if shutil.which("chattr") is None:
        pytest.skip("no chattr to make a case-folding folder")
    made = subprocess.run(["chattr", "+F", str(folder)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("this file system cannot fold case (chattr +F: "
                    f"{made.stderr.decode(errors='replace').strip()})")
    (folder / "Probe").write_text("")
    if not (folder / "probe").exists():
        pytest.skip("chattr +F did not make the folder fold case")
    (folder / "Probe").unlink()
    return folder


def test_on_a_folding_file_system_discard_undoes_and_keep_commits_a_case_only_rename(
        tmp_path: Path, ar: Tool) -> None:
    """The same as the simulated tests, on a real case-folding folder (git init sets
    core.ignorecase there itself)."""
    top = folding_folder(tmp_path)
    git(top, "init", "-q", "-b", "main")
    assert git(top, "config", "core.ignorecase") == "true"
    write(top / "value.txt", "100\n")
    write(top / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n", 0o755)
    write(top / "Foo.py", "VALUE = 1\nNAME = 'foo'\nSIZE = 3\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "initial")
    ar(top, *start_args("--scope", "*.py", "--scope", "value.txt"))
    (top / "Foo.py").rename(top / "foo.py")
    assert git(top, "status", "--porcelain", "--", "Foo.py", "foo.py") == ""
    write(top / "value.txt", "200\n")
    ar(top, "discard", "-d", "lower-case module")
    assert names(top) == ["Foo.py"]
    (top / "Foo.py").rename(top / "foo.py")
    write(top / "value.txt", "10\n")
    assert ar(top, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert git(top, "ls-tree", "--name-only", "HEAD", "--", "foo.py") == "foo.py"
    assert names(top) == ["foo.py"]
    assert git(top, "status", "--porcelain") == ""


def test_a_case_only_rename_to_a_name_outside_the_scope_is_set_aside(repo: Path,
                                                                       ar: Tool) -> None:
    """The scope names Foo.py alone: foo.py is outside it, so the rename is a violation, saved
    and undone, and the keep commits the rest."""
    module = case_folding_repo(repo)
    ar(repo, *start_args("--scope", "Foo.py", "--scope", "value.txt"))
    module.rename(repo / "foo.py")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "better", "--json").json()
    assert record["status"] == "keep"
    assert record["scope_violations"] == ["Foo.py", "foo.py"]
    assert names(repo) == ["Foo.py"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_a_case_renamed_file_edited_after_measuring_makes_the_measurement_stale(
        repo: Path, ar: Tool) -> None:
    """The pending measurement's fingerprint reads the file under its name on disk: an edit
    of foo.py after measuring is a change, and the keep is refused until it is measured
    again."""
    module = case_folding_repo(repo)
    ar(repo, *start_args("--scope", "*.py", "--scope", "value.txt"))
    module.rename(repo / "foo.py")
    write(repo / "value.txt", "10\n")
    ar(repo, "measure")
    write(repo / "foo.py", "VALUE = 3\n")
    res = ar(repo, "keep", "-d", "stale", expect=3)
    assert "the work tree changed since it was measured (Foo.py)" in res.err

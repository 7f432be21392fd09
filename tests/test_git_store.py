"""The git store called directly, on real repositories: each function's answer written out
(case-only renames, commit hooks, history, ...), for the cases the commands reach rarely."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, write

from git_autoresearch.git import Repo
from git_autoresearch.git.casenames import (
    case_renames,
    ignores_case,
    rename_in_index,
    undo_case_renames,
)


def folded(repo: Path) -> Repo:
    """``repo`` with core.ignorecase set, Mod/Foo.py and Mod/Bar.py committed beside the
    fixture's files, and the folder and both files renamed on disk in another case, as a
    file system that folds case would show ``mv Mod moD`` and the rest (not src: the
    fixture has a src/ already, and a folding disk never shows two such names)."""
    git(repo, "config", "core.ignorecase", "true")
    write(repo / "Mod" / "Foo.py", "FOO = 1\n")
    write(repo / "Mod" / "Bar.py", "BAR = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two modules")
    (repo / "Mod").rename(repo / "moD")
    (repo / "moD" / "Foo.py").rename(repo / "moD" / "foo.py")
    (repo / "moD" / "Bar.py").rename(repo / "moD" / "bar.py")
    return Repo.discover(repo)


def test_ignores_case_reads_the_last_value_of_core_ignorecase(repo: Path) -> None:
    assert ignores_case(Repo.discover(repo)) is False, "unset: false"
    git(repo, "config", "core.ignorecase", "true")
    git(repo, "config", "--add", "core.ignorecase", "false")
    assert ignores_case(Repo.discover(repo)) is False, "the last value counts, as in git"
    git(repo, "config", "--unset-all", "core.ignorecase")
    git(repo, "config", "--add", "core.ignorecase", "false")
    git(repo, "config", "--add", "core.ignorecase", "yes")
    assert ignores_case(Repo.discover(repo)) is True


def test_case_renames_follow_folders_and_leave_out_deletions_and_other_entries(
        repo: Path) -> None:
    top = folded(repo)
    assert case_renames(top) == {"Mod/Foo.py": "moD/foo.py", "Mod/Bar.py": "moD/bar.py"}
    assert case_renames(top, ["Mod/Bar.py", "not/indexed.py", "value.txt"]) == {
        "Mod/Bar.py": "moD/bar.py"}, "only the paths asked for, and only index entries"
    git(repo, "config", "core.ignorecase", "false")
    assert case_renames(Repo.discover(repo)) == {}, "a file system that keeps case: none"


def test_a_disk_name_that_is_another_index_entry_or_none_is_no_rename(repo: Path) -> None:
    """Foo.py and foo.py both in the index, Foo.py deleted: an edit git reports, not a rename;
    Gone.py deleted: nothing on disk matches; two disk names for one entry: no guess."""
    git(repo, "config", "core.ignorecase", "true")
    for name in ("Foo.py", "foo.py", "Gone.py", "Twice.py"):
        write(repo / name, f"{name}\n")
        git(repo, "-c", "core.ignorecase=false", "add", name)
    git(repo, "commit", "-q", "-m", "modules")
    (repo / "Foo.py").unlink()
    (repo / "Gone.py").unlink()
    (repo / "Twice.py").unlink()
    write(repo / "twice.py", "a\n")
    write(repo / "TWICE.py", "b\n")
    assert case_renames(Repo.discover(repo)) == {}


def test_rename_in_index_moves_each_entry_to_its_disk_name(repo: Path) -> None:
    top = folded(repo)
    rename_in_index(top, case_renames(top))
    assert git(repo, "ls-files", "moD", "Mod").splitlines() == ["moD/bar.py", "moD/foo.py"]
    assert git(repo, "diff", "--cached", "-M", "--name-status").splitlines() == [
        "R100\tMod/Bar.py\tmoD/bar.py", "R100\tMod/Foo.py\tmoD/foo.py"]
    rename_in_index(top, {})
    assert git(repo, "ls-files", "moD", "Mod").splitlines() == ["moD/bar.py", "moD/foo.py"]


def test_undo_case_renames_renames_the_folder_once_then_each_file(repo: Path) -> None:
    top = folded(repo)
    assert undo_case_renames(top, ["Mod/Bar.py", "Mod/Foo.py", "value.txt"]) == [
        "Mod/Bar.py", "Mod/Foo.py"]
    assert sorted(os.listdir(repo / "Mod")) == ["Bar.py", "Foo.py"]
    assert not (repo / "moD").exists()
    assert (repo / "Mod" / "Foo.py").read_text() == "FOO = 1\n"
    assert git(repo, "status", "--porcelain") == ""
    assert undo_case_renames(top, ["Mod/Foo.py"]) == [], "nothing left to undo"


def test_hooks_folder_is_the_last_core_hookspath_relative_to_the_top(repo: Path) -> None:
    from git_autoresearch.git.commit_hooks import hooks_folder

    top = Repo.discover(repo)
    assert hooks_folder(top) == repo / ".git" / "hooks"
    git(repo, "config", "core.hooksPath", "first")
    git(repo, "config", "--add", "core.hooksPath", "tools/hooks")
    assert hooks_folder(Repo.discover(repo)) == repo / "tools" / "hooks"
    git(repo, "config", "--add", "core.hooksPath", "~/hooks")
    assert hooks_folder(Repo.discover(repo)) == Path(os.path.expanduser("~/hooks"))
    git(repo, "config", "--add", "core.hooksPath", "")
    assert hooks_folder(Repo.discover(repo)) == Path(os.path.expanduser("~/hooks")), \
        "an empty value is no folder"


def test_staged_paths_name_both_sides_of_a_rename_and_none_before_a_first_commit(
        repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.git.commit_hooks import staged_paths

    git(repo, "mv", "README.md", "NOTES.md")
    write(repo / "value.txt", "90\n")
    write(repo / "new.txt", "new\n")
    git(repo, "add", "new.txt")
    assert staged_paths(Repo.discover(repo)) == ["NOTES.md", "README.md", "new.txt"]
    other = tmp_path / "other.index"
    git(repo, "read-tree", "HEAD", f"--index-output={other}")
    env_free = staged_paths(Repo.discover(repo), str(other))
    assert env_free == [], "the other index holds HEAD"
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    write(fresh / "a.txt", "a\n")
    git(fresh, "add", "a.txt")
    assert staged_paths(Repo.discover(fresh)) == []


def test_visible_paths_are_tracked_or_not_ignored(repo: Path) -> None:
    from git_autoresearch.git.commit_hooks import visible

    write(repo / ".gitignore", "*.log\nbuild/\n")
    write(repo / "kept.log", "tracked though ignored\n")
    git(repo, "add", "-f", "kept.log")
    write(repo / "run.log", "ignored\n")
    write(repo / "notes.txt", "untracked\n")
    top = Repo.discover(repo)
    assert visible(top, ["kept.log", "run.log", "notes.txt", "build/x.o", "gone.txt",
                         "value.txt"]) == ["kept.log", "notes.txt", "gone.txt", "value.txt"]
    assert visible(top, []) == []

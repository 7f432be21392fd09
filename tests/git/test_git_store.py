"""The git store called directly, on real repositories: each function's answer written out
(case-only renames, commit hooks, history, ...), for the cases the commands reach rarely."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import git, write

from git_autoresearch.git import Repo
from git_autoresearch.git.casenames import (
    case_renames,
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
    assert Repo.discover(repo).ignores_case() is False, "unset: false"
    git(repo, "config", "core.ignorecase", "true")
    git(repo, "config", "--add", "core.ignorecase", "false")
    assert Repo.discover(repo).ignores_case() is False, "the last value counts, as in git"
    git(repo, "config", "--unset-all", "core.ignorecase")
    git(repo, "config", "--add", "core.ignorecase", "false")
    git(repo, "config", "--add", "core.ignorecase", "yes")
    assert Repo.discover(repo).ignores_case() is True


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


def commits(repo: Path, *messages: str) -> list[str]:
    """Commit ``messages`` in order on ``repo`` (each edits value.txt); their full ids."""
    made = []
    for n, message in enumerate(messages):
        write(repo / "value.txt", f"{n}\n")
        git(repo, "commit", "-q", "-am", message)
        made.append(git(repo, "rev-parse", "HEAD"))
    return made


def test_log_fields_newest_first_or_reversed_and_none_for_a_bad_range(repo: Path) -> None:
    first, second, third = commits(repo, "one", "two", "three\x1fsplit")
    top = Repo.discover(repo)
    assert top.log_fields(f"{first}..HEAD", ["%H", "%s"]) == [[second, "two"]], \
        "a commit whose fields hold the separator is left out"
    assert top.log_fields(f"{first}~1..HEAD", ["%s", "%H"], reverse=True) == [
        ["one", first], ["two", second]]
    assert top.log_fields(f"{first}~1..HEAD", ["%s"]) == [["two"], ["one"]]
    assert top.log_fields("no-such-branch..HEAD", ["%H"]) is None
    assert top.commit_fields(third, ["%s", "%P"]) == ["three\x1fsplit", second]


def test_date_seconds_reads_dates_as_git_log_does(repo: Path) -> None:
    top = Repo.discover(repo)
    assert top.date_seconds("2020-01-01 00:00:00 +0000") == 1577836800
    assert top.date_seconds("2020-01-01 00:00:00 +0000", until=True) == 1577836800
    assert top.date_seconds("1970-01-01 00:16:40 +0000", until=True) == 1000
    now, garbage = top.date_seconds("now"), top.date_seconds("not a date at all")
    assert now is not None and garbage is not None and abs(garbage - now) <= 2, \
        "git reads it as now"


def test_commit_times_by_the_names_given(repo: Path) -> None:
    first, second = commits(repo, "one", "two")
    top = Repo.discover(repo)
    t1, t2 = (int(git(repo, "log", "-1", "--format=%ct", c)) for c in (first, second))
    blob = git(repo, "rev-parse", "HEAD:value.txt")
    assert top.commit_times([first[:7], second.upper(), "HEAD", "f" * 40, blob, ""]) == {
        first[:7]: t1, second.upper(): t2}
    assert top.commit_times(["HEAD", "main"]) == {}
    loose = repo / ".git" / "objects" / second[:2] / second[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"not a zlib stream")
    assert top.commit_times([first, second]) == {}, "git cannot read them: none is told"


def test_patch_ids_and_how_changes_came_in(repo: Path) -> None:
    """A squash (one commit with the whole change), cherry-picks (each change, oldest first),
    and None when a change is missing or there is nothing to find."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "side")
    write(repo / "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    a = git(repo, "rev-parse", "HEAD")
    write(repo / "b.txt", "b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "b")
    tip = git(repo, "rev-parse", "HEAD")
    top = Repo.discover(repo)
    ids = top.patch_ids(f"{base}..{tip}")
    assert sorted(ids) == sorted([a, tip]) and len(set(ids.values())) == 2
    assert top.patch_ids("nothing..here") == {}
    assert top.patch_ids(f"{tip}..{tip}") == {}
    assert top.diff_patch_id(tip, tip) is None
    assert top.diff_patch_id("nothing", tip) is None
    whole = top.diff_patch_id(base, tip)
    assert whole is not None and whole not in ids.values()

    git(repo, "switch", "-q", "-c", "squashed", base)
    git(repo, "merge", "-q", "--squash", "side")
    git(repo, "commit", "-q", "-m", "squash")
    squash = git(repo, "rev-parse", "HEAD")
    assert top.picked_into(base, tip, "squashed") == ("squash", [squash])
    git(repo, "revert", "--no-edit", "HEAD")
    git(repo, "merge", "-q", "--squash", "side")
    git(repo, "commit", "-q", "-m", "squash again")
    again = git(repo, "rev-parse", "HEAD")
    assert top.picked_into(base, tip, "squashed") == ("squash", [again]), "the newest"

    git(repo, "switch", "-q", "-c", "picked", base)
    write(repo / "c.txt", "c\n")
    git(repo, "add", "c.txt")
    git(repo, "commit", "-q", "-m", "c")
    git(repo, "cherry-pick", a, tip)
    picked = git(repo, "rev-list", "-2", "HEAD").split()
    assert top.picked_into(base, tip, "picked") == ("cherry-pick", picked[::-1])

    git(repo, "switch", "-q", "-c", "half", base)
    git(repo, "cherry-pick", tip)
    assert top.picked_into(base, tip, "half") is None, "a's change is missing"
    assert top.picked_into(base, base, "half") is None, "nothing in base..tip"
    assert top.picked_into(base, tip, base) is None, "nothing in base..into"


def test_ancestry_ranges_and_commits_off_every_branch(repo: Path) -> None:
    first, second = commits(repo, "one", "two")
    top = Repo.discover(repo)
    assert top.is_ancestor(first, second) and top.is_ancestor(second, second)
    assert not top.is_ancestor(second, first)
    assert not top.is_ancestor("nothing", second)
    assert top.rev_list(f"{first}~1..{second}") == [second, first]
    assert top.rev_list("nothing..HEAD") == []
    git(repo, "reset", "-q", "--hard", first)
    assert top.off_branches([second[:10], first, "f" * 40, " x", "a\nb", "", second[:10]]) \
        == {second[:10]: second, "f" * 40: None}
    assert top.off_branches(["", " HEAD"]) == {}


def test_differences_between_two_commits(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "README.md", "NOTES.md")
    write(repo / "value.txt", "90\n")
    git(repo, "commit", "-q", "-am", "moved")
    top = Repo.discover(repo)
    assert top.changed_paths(first, "HEAD") == ["NOTES.md", "README.md", "value.txt"]
    # For people: renames found, as git diff shows them.
    assert top.diff_text(first, "HEAD", name_only=True).splitlines() == [
        "NOTES.md", "value.txt"]
    assert top.diff_text(first, "HEAD", stat=True).splitlines()[-1] == (
        " 2 files changed, 1 insertion(+), 1 deletion(-)")
    assert "-100\n+90\n" in top.diff_text(first, "HEAD")
    shown = top.show_patch("HEAD")
    assert shown.startswith(f"commit {git(repo, 'rev-parse', 'HEAD')}\n\nmoved\n")
    assert " README.md => NOTES.md | 0\n" in shown and "-100\n+90\n" in shown


def test_recording_locks_are_those_a_recording_meets(repo: Path) -> None:
    from git_autoresearch.git.repo import lock_files, recording_locks

    top = Repo.discover(repo)
    gd = repo / ".git"
    assert recording_locks(top, "main", "refs/autoresearch/s1") == []
    for name in ("index.lock", "HEAD.lock", "packed-refs.lock", "config.lock",
                 "refs/heads/main.lock", "refs/heads/other.lock",
                 "refs/autoresearch/s1/scope/3.lock", "refs/autoresearch/s1/attempts/2.lock",
                 "refs/autoresearch/s2/state.lock"):
        write(gd / name, "")
    (gd / "refs" / "autoresearch" / "s1" / "folder.lock").mkdir()
    assert recording_locks(top, "main") == [gd / "index.lock", gd / "HEAD.lock",
                                            gd / "refs/heads/main.lock", gd / "packed-refs.lock"]
    assert recording_locks(top, "main", "refs/autoresearch/s1") == [
        gd / "index.lock", gd / "HEAD.lock", gd / "refs/heads/main.lock",
        gd / "packed-refs.lock", gd / "refs/autoresearch/s1/attempts/2.lock",
        gd / "refs/autoresearch/s1/scope/3.lock"]
    assert recording_locks(top, "other", "refs/autoresearch/none") == [
        gd / "index.lock", gd / "HEAD.lock", gd / "refs/heads/other.lock",
        gd / "packed-refs.lock"]
    git(repo, "worktree", "add", "-q", str(repo.parent / "linked"))
    write(gd / "worktrees" / "linked" / "index.lock", "")
    found = lock_files(top)
    assert [p for p, _ in found] == sorted([
        gd / "index.lock", gd / "HEAD.lock", gd / "packed-refs.lock", gd / "config.lock",
        gd / "refs/heads/main.lock", gd / "refs/heads/other.lock",
        gd / "refs/autoresearch/s1/scope/3.lock", gd / "refs/autoresearch/s1/attempts/2.lock",
        gd / "refs/autoresearch/s2/state.lock", gd / "refs/autoresearch/s1/folder.lock",
        gd / "worktrees/linked/index.lock"], key=str)
    assert all(0 <= age < 60 for _, age in found)
    old = gd / "config.lock"
    os.utime(old, (1000, 1000))
    assert dict(lock_files(top))[old] > 1_000_000
    ahead = gd / "HEAD.lock"
    os.utime(ahead, (4_000_000_000, 4_000_000_000))
    assert dict(lock_files(top))[ahead] == 0.0, "a clock behind the file's: no negative age"
    linked = Repo.discover(repo.parent / "linked")
    assert recording_locks(linked, "linked") == [gd / "worktrees/linked/index.lock",
                                                 gd / "packed-refs.lock"]
    assert [p for p, _ in lock_files(linked)] == [p for p, _ in found]


def test_merge_trees_gives_the_tree_or_the_conflicted_paths(repo: Path) -> None:
    from git_autoresearch.git.merge import merge_trees
    from git_autoresearch.git.process import GitError

    base = git(repo, "rev-parse", "HEAD")
    git(repo, "switch", "-q", "-c", "ours")
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "ours\n")
    git(repo, "commit", "-q", "-am", "ours")
    git(repo, "switch", "-q", "-c", "theirs", base)
    write(repo / "value.txt", "80\n")
    write(repo / "README.md", "theirs\n")
    git(repo, "commit", "-q", "-am", "theirs")
    git(repo, "switch", "-q", "-c", "apart", base)
    write(repo / "new.txt", "new\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-q", "-m", "apart")
    top = Repo.discover(repo)
    clean = merge_trees(top, "ours", "apart")
    assert clean.paths == () and clean.tree is not None
    assert git(repo, "ls-tree", "--name-only", clean.tree).splitlines() == [
        "README.md", "bench.sh", "new.txt", "src", "value.txt"]
    assert git(repo, "show", f"{clean.tree}:value.txt") == "90"
    conflicted = merge_trees(top, "ours", "theirs")
    assert (conflicted.tree, conflicted.paths) == (None, ("README.md", "value.txt"))
    try:
        merge_trees(top, "ours", "no-such-commit")
    except GitError as exc:
        assert exc.returncode == 1 and "no-such-commit - not something we can merge" in str(exc)
    else:
        raise AssertionError("a name of nothing is git's error, not a conflict")


def test_moving_the_index_and_the_work_tree(repo: Path) -> None:
    from git_autoresearch.git.merge import (
        add_on_branch,
        index_to,
        is_ancestor,
        leave_unstaged,
        move_work_tree,
        point_head,
        switch_new,
    )
    from git_autoresearch.git.process import GitError

    base = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "90\n")
    write(repo / "new.txt", "new\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "next")
    new = git(repo, "rev-parse", "HEAD")
    top = Repo.discover(repo)
    assert is_ancestor(top, base, new) and not is_ancestor(top, new, base)
    move_work_tree(top, new, base)
    assert (repo / "value.txt").read_text() == "100\n" and not (repo / "new.txt").exists()
    assert git(repo, "rev-parse", "HEAD") == new, "HEAD is not moved"
    assert git(repo, "diff", "--cached", "--name-only", base) == ""
    leave_unstaged(top, base, new)
    assert (repo / "value.txt").read_text() == "90\n"
    assert git(repo, "diff", "--cached", "--name-only", base) == "", "the index stays"
    assert git(repo, "diff", "--name-only") == "value.txt", "unstaged"
    assert git(repo, "ls-files", "--others", "--exclude-standard") == "new.txt"
    index_to(top, new)
    assert git(repo, "status", "--porcelain") == ""
    write(repo / "value.txt", "70\n")
    try:
        move_work_tree(top, new, base)
    except GitError:
        pass
    else:
        raise AssertionError("a local change in the way is refused")
    assert (repo / "value.txt").read_text() == "70\n", "nothing changed"
    git(repo, "checkout", "-q", "--", "value.txt")
    switch_new(top, "made", base)
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "made"
    assert git(repo, "rev-parse", "HEAD") == base
    switch_new(top, "main", base)
    assert git(repo, "rev-parse", "HEAD") == new, "an existing branch is checked out as is"
    git(repo, "branch", "-q", "other", new)
    point_head(top, "refs/heads/other")
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/other"
    assert git(repo, "status", "--porcelain") == ""
    assert "git-autoresearch: worker branch" in git(repo, "reflog", "-1", "HEAD")
    add_on_branch(top, repo.parent / "side", "side", base)
    assert git(repo.parent / "side", "symbolic-ref", "--short", "HEAD") == "side"
    assert (repo.parent / "side" / "value.txt").read_text() == "100\n"


def test_trees_and_blobs_read_and_written_without_the_index(repo: Path) -> None:
    from git_autoresearch.git.objects import (
        cat_blob,
        cat_blobs,
        ls_tree,
        tree_files,
        write_blob,
        write_blobs,
    )

    top = Repo.discover(repo)
    odd = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # a Latin-1 name: no UTF-8
    (repo / odd).write_bytes(b"latin-1 name\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd name")
    value = git(repo, "rev-parse", "HEAD:value.txt")
    src = git(repo, "rev-parse", "HEAD:src")
    assert ls_tree(top, "HEAD", ["src", "value.txt", "absent.txt"]) == [
        ("040000", "tree", src, "src"), ("100644", "blob", value, "value.txt")]
    assert [entry[3] for entry in ls_tree(top, "HEAD", [odd])] == [odd]
    files = tree_files(top, "HEAD")
    assert [(mode, path) for mode, _, path in files] == [
        ("100644", "README.md"), ("100755", "bench.sh"), ("100644", odd),
        ("100644", "src/lib.py"), ("100644", "value.txt")]
    assert ("100644", value, "value.txt") in files
    assert cat_blob(top, value) == b"100\n"
    lib = git(repo, "rev-parse", "HEAD:src/lib.py")
    assert cat_blobs(top, [value, lib]) == {value: b"100\n", lib: b"def f():\n    return 1\n"}
    assert cat_blobs(top, []) == {}
    git(repo, "config", "core.autocrlf", "true")
    write(repo / "crlf.txt", b"a\r\nb\r\n")
    write(repo / "empty.txt", b"")
    made = write_blobs(top, [str(repo / "crlf.txt"), str(repo / "empty.txt")])
    assert cat_blobs(top, made) == {made[0]: b"a\r\nb\r\n", made[1]: b""}, "no filters"
    assert write_blobs(top, []) == []
    blob = write_blob(top, b"x\r\n\0y")
    assert cat_blob(top, blob) == b"x\r\n\0y"


def test_patches_of_many_commits_on_one_process(repo: Path) -> None:
    from git_autoresearch.git.objects import patches

    root = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "90\n")
    git(repo, "commit", "-q", "-am", "ninety")
    ninety = git(repo, "rev-parse", "HEAD")
    git(repo, "commit", "-q", "--allow-empty", "-m", "nothing")
    empty = git(repo, "rev-parse", "HEAD")
    top = Repo.discover(repo)
    found = patches(top, [ninety, empty, root, ninety, "f" * 40, "HEAD", "not hex"])
    assert sorted(found) == sorted([ninety, empty, root])
    assert found[empty] == ""
    assert found[ninety].startswith(" value.txt | 2 +-\n 1 file changed")
    assert found[ninety].endswith("@@ -1 +1 @@\n-100\n+90\n")
    assert " 4 files changed" in found[root], "a root commit: against nothing"
    assert patches(top, ["HEAD", ""]) == {}


def test_has_objects_and_resolve_many(repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.git.objects import has_objects, resolve_many

    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    blob = git(repo, "rev-parse", "HEAD:value.txt")
    assert has_objects(top)
    assert resolve_many(top, ["HEAD", head[:8], "main", blob, "nothing", "", "a b", "x\nHEAD",
                              "HEAD"]) == {"HEAD": head, head[:8]: head, "main": head}
    assert resolve_many(top, ["x\nHEAD", "main"]) == {"main": head}, "one line per name"
    # git cat-file stops at a name it cannot read (a reflog entry past its end, an upstream
    # that is not configured): the names after it are still found.
    assert resolve_many(top, ["HEAD@{99}", "main", "@{u}", "@{push}", head[:9], "nothing"]) \
        == {"main": head, head[:9]: head}
    assert resolve_many(top, []) == {}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    assert not has_objects(Repo.discover(fresh))
    assert resolve_many(Repo.discover(fresh), ["HEAD"]) == {}
    borrowed = tmp_path / "borrowed"
    git(tmp_path, "clone", "-q", "--shared", str(repo), str(borrowed))
    assert "count: 0" in git(borrowed, "count-objects", "-v").splitlines()
    assert has_objects(Repo.discover(borrowed)), "its objects are in the alternate store"
    packed = tmp_path / "packed"
    git(tmp_path, "clone", "-q", "--no-local", str(repo), str(packed))
    assert git(packed, "count-objects", "-v").splitlines()[0] == "count: 0"
    assert has_objects(Repo.discover(packed))
    assert resolve_many(Repo.discover(packed), [head]) == {head: head}


def test_git_errors_name_the_call_and_gits_last_words(tmp_path: Path) -> None:
    from git_autoresearch.git.process import DiskFull, GitError, free_bytes

    err = GitError(["git", "update-ref", "refs/x", "abc", "def"], 128, b"out",
                   b"warning: first\n\n  fatal: last words  \n\n")
    assert str(err) == ("git failed (exit 128) running 'git update-ref refs/x abc': fatal: "
                        "last words")
    assert (err.argv, err.returncode, err.stdout) == (
        ["git", "update-ref", "refs/x", "abc", "def"], 128, b"out")
    assert str(GitError(["git", "gc"], 1, b"", b" \n")) == \
        "git failed (exit 1) running 'git gc': no message"
    full = DiskFull(err, tmp_path, 12)
    assert str(full) == (f"the disk of {tmp_path} is full: git could not write there "
                         "(running 'git update-ref refs/x')")
    assert (full.exit_code, full.folder, full.free, full.returncode) == (3, tmp_path, 12, 128)
    assert free_bytes(tmp_path / "absent") is None
    free = free_bytes(tmp_path)
    st = os.statvfs(tmp_path)
    root_may, others_may = st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize
    mine, not_mine = (root_may, others_may) if os.geteuid() == 0 else (others_may, root_may)
    assert free is not None and abs(free - mine) <= abs(free - not_mine), \
        "root may use the blocks reserved for it"


def test_temporary_objects_are_gits_unfinished_writes(repo: Path) -> None:
    from git_autoresearch.git.process import temporary_objects

    objects = repo / ".git" / "objects"
    made = [objects / "ab" / "tmp_obj_1", objects / "tmp_obj_2",
            objects / "pack" / "tmp_pack_3", objects / "pack" / "tmp_idx_4"]
    for n, path in enumerate(made):
        write(path, "x" * n)
    write(objects / "ab" / "cdef", "an object")
    os.utime(made[0], (1000, 1000))
    found = temporary_objects(repo / ".git")
    assert [(p, size) for p, _, size in found] == sorted(
        [(p, n) for n, p in enumerate(made)], key=lambda item: str(item[0]))
    assert dict((p, t) for p, t, _ in found)[made[0]] == 1000


def test_temporary_objects_skip_a_file_git_removed_meanwhile(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from git_autoresearch.git.process import temporary_objects

    objects = repo / ".git" / "objects"
    first, second = write(objects / "ab" / "tmp_obj_1", "x"), write(objects / "tmp_obj_2", "yy")
    lstat = Path.lstat

    def racing(self: Path) -> os.stat_result:
        if self == first:  # listed by the glob, then renamed into place by git
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return lstat(self)

    monkeypatch.setattr(Path, "lstat", racing)
    assert [(p, size) for p, _, size in temporary_objects(repo / ".git")] == [(second, 2)]


def test_git_in_a_folder_that_cannot_be_entered_is_named(repo: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from git_autoresearch.git import process
    from git_autoresearch.runtime.errors import Refused

    for bad in (tmp_path / "absent", write(tmp_path / "a-file", "")):
        with pytest.raises(Refused, match=f"^no such folder: {bad}$"):
            process.run_git(["status"], cwd=bad)
        with pytest.raises(Refused, match=f"^no such folder: {bad}$"):
            Repo.discover(bad)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(Refused, match=r"^the current folder no longer exists \(removed "):
        process.current_folder()
    assert not process.inside_repository(Path("relative")), "a removed folder holds nothing"
    monkeypatch.chdir(repo)
    assert process.current_folder() == repo


def test_git_runs_without_locating_variables_and_speaks_c(
        repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> None:
    from git_autoresearch.git import process
    from git_autoresearch.runtime.errors import Refused

    monkeypatch.setenv("GIT_DIR", "/nowhere")
    monkeypatch.setenv("GIT_INDEX_FILE", "/nowhere/index")
    monkeypatch.setenv("LANGUAGE", "de")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Kept")
    env = process.git_environment({"EXTRA": "1", "LC_ALL": "de_DE.UTF-8"})
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env and "LANGUAGE" not in env
    assert (env["GIT_AUTHOR_NAME"], env["EXTRA"], env["LC_ALL"]) == ("Kept", "1", "de_DE.UTF-8")
    assert process.git_environment(None)["LC_ALL"] == "C"
    done = process.run_git(["rev-parse", "--show-toplevel"], cwd=repo)
    assert (done.returncode, done.text) == (0, str(repo))
    empty = process.run_git(["hash-object", "--stdin"], cwd=repo)
    assert empty.text == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "stdin is /dev/null"
    failed = process.run_git(["rev-parse", "--verify", "nothing"], cwd=repo,
                             allow_non_zero=True)
    assert failed.returncode == 128 and failed.stderr.startswith(b"fatal: Needed a single")
    with pytest.raises(process.GitError) as raised:
        process.run_git(["rev-parse", "--verify", "nothing"], cwd=repo)
    assert raised.value.argv == ["git", "rev-parse", "--verify", "nothing"]
    monkeypatch.setattr(process, "TRACE", True)
    process.run_git(["status", "--porcelain", "x" * 300], cwd=repo)
    traced = capsys.readouterr().err.strip()
    assert traced.startswith("git-autoresearch trace: ") and " ms exit 0 git status " in traced
    assert traced.endswith("x" * (197 - len("status --porcelain ")) + "...")
    for width, shown in ((200, "y" * 181), (201, "y" * 178 + "...")):
        process.run_git(["status", "--porcelain", "y" * (width - len("status --porcelain "))],
                        cwd=repo)
        assert capsys.readouterr().err.strip().endswith(f" git status --porcelain {shown}"), \
            "cut above 200 characters only"
    monkeypatch.setattr(process, "TRACE", False)
    monkeypatch.setenv("PATH", str(repo))
    with pytest.raises(Refused, match="^git is not installed or not on PATH$"):
        process.run_git(["status"], cwd=repo)
    write(repo / "git", "#!/bin/sh\n", 0o644)
    with pytest.raises(Refused, match=r"^git cannot be run: Permission denied \(is the git on "
                                      r"PATH executable\?\)$"):
        process.run_git(["status"], cwd=repo)
    monkeypatch.undo()
    with pytest.raises(OSError) as too_long:
        process.run_git(["status", "x" * 300_000], cwd=repo)  # one argument past MAX_ARG_STRLEN
    assert too_long.value.errno == errno.E2BIG


def test_results_status_entries_and_small_readers(repo: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from git_autoresearch.git import process

    assert process.Result(0, b"a\xff\n\n", b"").text == "a\ufffd"
    assert process.Result(0, b"\n a \n", b"").text == "\n a "
    entry = process.StatusEntry("?", "?", "x")
    assert entry.untracked and not entry.ignored
    assert process.StatusEntry("!", "!", "x").ignored
    assert not process.StatusEntry("M", " ", "x").untracked
    assert process.show_prefix(repo / "src") == "src/"
    assert process.show_prefix(repo) == ""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        monkeypatch.delenv(name, raising=False)
    assert process.user_locale() == {"LC_ALL": "C", "LANGUAGE": ""}
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    assert process.user_locale()["LC_ALL"] == "fr_FR.UTF-8"
    monkeypatch.setenv("LC_MESSAGES", "de_DE.UTF-8")
    monkeypatch.setenv("LANGUAGE", "de:en")
    assert process.user_locale() == {"LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de:en"}
    monkeypatch.setenv("LC_ALL", "sv_SE.UTF-8")
    assert process.user_locale()["LC_ALL"] == "sv_SE.UTF-8"
    assert process.said(b"\n  hint: one  \n\t\nfatal: two\n") == ["  hint: one", "fatal: two"]


def test_where_git_would_find_a_repository(repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.git.process import inside_repository

    assert inside_repository(repo / "src" / "not-yet")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    assert inside_repository(bare / "refs" / "heads")
    outside = tmp_path / "plain" / "sub"
    outside.mkdir(parents=True)
    assert not inside_repository(outside)
    (tmp_path / "plain" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "plain" / "objects").mkdir()
    assert not inside_repository(outside), "no refs/: no bare repository"
    (tmp_path / "plain" / "refs").mkdir()
    assert inside_repository(outside)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: /elsewhere\n")
    assert inside_repository(linked)
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    assert not inside_repository(tmp_path / "loop-a" / "x"), "a symlink loop is no error"
    (repo / "loop").symlink_to(repo / "loop")
    assert inside_repository(repo / "loop" / "x"), "the folders above a loop still count"


def test_argument_budget_pathspec_cover_and_booleans() -> None:
    from git_autoresearch.git.process import ARGV_BUDGET, config_bool, covered, fits_argv

    assert fits_argv(["a" * (ARGV_BUDGET - 1)])
    assert not fits_argv(["a" * ARGV_BUDGET])
    assert fits_argv(["ab"] * (ARGV_BUDGET // 3))
    assert not fits_argv(["ab"] * (ARGV_BUDGET // 3 + 1))
    assert fits_argv([])
    wanted = {"src", "docs/api", "top.txt"}
    assert [covered(n, wanted) for n in (
        "src", "src/a/b.py", "docs/api/x.md", "docs/other.md", "top.txt", "top.txt.bak",
        "srcx/a.py", "a/src")] == [True, True, True, False, True, False, False, False]
    assert [config_bool(v) for v in (None, "true", " Yes ", "ON", "1", "-2", "false", "No",
                                     "off", "0", "", "maybe", "1.5")] == [
        True, True, True, True, True, True, False, False, False, False, False, None, None]


def test_compare_and_swap_on_refs_and_note_commits(repo: Path) -> None:
    from git_autoresearch.git.cas import commit_messages, create_ref, note_commit, swap_ref

    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    note = note_commit(top, "a note\n\nwith a body ü\n")
    assert git(repo, "rev-parse", f"{note}^{{tree}}") == \
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "the empty tree"
    assert git(repo, "log", "-1", "--format=%B", note) == "a note\n\nwith a body ü"
    child = note_commit(top, "next", [note, head])
    assert git(repo, "log", "-1", "--format=%P", child) == f"{note} {head}"
    assert create_ref(top, "refs/heads/cas", note, "made")
    assert not create_ref(top, "refs/heads/cas", child, "again"), "it exists: a lost race"
    assert git(repo, "rev-parse", "refs/heads/cas") == note
    assert not swap_ref(top, "refs/heads/cas", child, head, "from the wrong old value")
    assert swap_ref(top, "refs/heads/cas", child, note, "moved")
    assert git(repo, "rev-parse", "refs/heads/cas") == child
    assert git(repo, "reflog", "-1", "--format=%gs", "refs/heads/cas") == "moved"
    blob = git(repo, "hash-object", "-w", "--stdin", input=b"not\n\na commit\n")
    fake = git(repo, "hash-object", "-w", "--stdin", input=b"tree without a blank line\n")
    assert commit_messages(top, [note, child, blob, fake, note, "f" * 40]) == {
        note: "a note\n\nwith a body ü\n", child: "next"}


def test_a_new_project_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from git_autoresearch.git.repo import init_project, oneline_log

    folder = tmp_path / "demo"
    folder.mkdir()
    write(folder / "a.txt", "a\n")
    made = init_project(folder, "the demo", "Demo", "demo@example.invalid")
    assert made.top == folder
    assert git(folder, "log", "--format=%s %an", "--name-only") == "the demo Test Author\n\na.txt"
    assert not [line for line in git(folder, "config", "--local", "--list").splitlines()
                if line.startswith("user.")], "git has an identity: none is set"
    git(folder, "commit", "-q", "--allow-empty", "-m", "other")
    short = git(folder, "rev-parse", "--short", "HEAD~1")
    assert oneline_log(made, "demo") == f"{short} the demo"
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".gitconfig").write_text("[user]\n\tuseConfigOnly = true\n")
    bare = tmp_path / "anonymous"
    bare.mkdir()
    write(bare / "b.txt", "b\n")
    init_project(bare, "no identity", "Demo", "demo@example.invalid")
    assert git(bare, "log", "--format=%an <%ae>") == "Demo <demo@example.invalid>"
    assert git(bare, "config", "--local", "user.name") == "Demo"


def test_linked_worktrees_come_and_go(repo: Path) -> None:
    from git_autoresearch.git.worktrees import add_detached, listed, prune, remove

    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    side = repo.parent / "side"
    add_detached(top, side, head)
    assert git(side, "rev-parse", "HEAD") == head
    assert git(side, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD", "detached"
    assert listed(top) == [repo, side]
    write(side / "value.txt", "changed\n")
    write(side / "new.txt", "untracked\n")
    git(repo, "worktree", "lock", str(side))
    remove(top, side)
    assert not side.exists() and listed(top) == [repo]
    remove(top, side)  # already gone: no error
    gone = repo.parent / "gone"
    add_detached(top, gone, head)
    shutil.rmtree(gone)
    assert listed(top) == [repo, gone]
    prune(top)
    assert listed(top) == [repo]
    assert git(repo, "status", "--porcelain") == ""


def test_a_remotes_refs_listed_fetched_and_pushed_atomically(repo: Path,
                                                              tmp_path: Path) -> None:
    from git_autoresearch.git.remote import (
        failure,
        fetch_objects,
        fetch_refspecs,
        has_commit,
        is_ancestor,
        push_atomic,
        remote_refs,
        remote_refusal,
    )
    from git_autoresearch.runtime.errors import Refused

    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "push", "-q", str(hub), "HEAD:refs/heads/main", "HEAD:refs/heads/mainline",
        "HEAD:refs/x/a", "HEAD:refs/x/b/c", "HEAD:refs/xy/z")
    top = Repo.discover(repo)
    assert remote_refs(top, str(hub), ["refs/heads/main", "refs/x/"]) == {
        "refs/heads/main": base, "refs/x/a": base, "refs/x/b/c": base}
    assert remote_refs(top, str(hub), []) == {}
    with pytest.raises(Refused) as raised:
        remote_refs(top, str(tmp_path / "nothing"), ["refs/"])
    assert str(raised.value) == (f"cannot list the refs of remote {str(tmp_path / 'nothing')!r}: "
                                 f"'{tmp_path / 'nothing'}' does not appear to be a git "
                                 "repository")

    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "-b", "main", str(hub), str(other))
    write(other / "value.txt", "90\n")
    git(other, "commit", "-q", "-am", "elsewhere")
    theirs = git(other, "rev-parse", "HEAD")
    git(other, "push", "-q", "origin", "HEAD:refs/x/a")
    assert not has_commit(top, theirs)
    assert fetch_objects(top, str(hub), [])
    assert fetch_objects(top, str(hub), ["refs/x/a"])
    assert has_commit(top, theirs) and is_ancestor(top, base, theirs)
    assert not is_ancestor(top, theirs, base)
    assert not (repo / ".git" / "FETCH_HEAD").exists()
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/x") == "", "no ref written"
    assert not fetch_objects(top, str(hub), ["refs/x/gone"])
    assert not has_commit(top, "f" * 40)
    assert fetch_refspecs(top, str(hub), ["+refs/x/*:refs/mirror/*"]) is None
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/mirror") == \
        "refs/mirror/a\nrefs/mirror/b/c"
    assert fetch_refspecs(top, str(hub), ["refs/x/gone:refs/mirror/gone"]) == \
        "couldn't find remote ref refs/x/gone"

    write(repo / "value.txt", "80\n")
    git(repo, "commit", "-q", "-am", "here")
    mine = git(repo, "rev-parse", "HEAD")
    refused = push_atomic(top, str(hub), {"refs/x/a": (mine, base),
                                          "refs/x/new": (mine, "")})
    assert refused[0] == 1 and [(p.flag, p.ref) for p in sorted(refused[1],
                                                               key=lambda p: p.ref)] == [
        ("!", "refs/x/a"), ("!", "refs/x/new")], "the lease on refs/x/a broke"
    assert not any(p.refused_there for p in refused[1])  # a lease, not the remote's refusal
    assert remote_refusal(refused[1], refused[2]) is None
    assert remote_refs(top, str(hub), ["refs/x/a", "refs/x/new"]) == {"refs/x/a": theirs}
    code, pushed, _ = push_atomic(top, str(hub), {"refs/x/b/c": (mine, base),
                                                  "refs/x/new": (mine, "")})
    assert (code, [(p.flag, p.ref) for p in sorted(pushed, key=lambda p: p.ref)]) == (
        0, [(" ", "refs/x/b/c"), ("*", "refs/x/new")])
    assert failure(b"", "otherwise") == "otherwise"
    assert failure(b"hint: first\nerror: the error\nfatal: later\n", "x") == "the error"
    assert failure(b"  just words  \nmore\n", "x") == "just words"


def test_local_refs_moved_as_one_transaction_and_the_default_branch(repo: Path,
                                                                     tmp_path: Path) -> None:
    from git_autoresearch.git.remote import default_branch, update_refs

    top = Repo.discover(repo)
    base = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "90\n")
    git(repo, "commit", "-q", "-am", "next")
    new = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "-q", "old", base)
    assert update_refs(top, {}, "nothing")
    assert update_refs(top, {"refs/t/made": (base, None), "refs/heads/old": (new, base)},
                       "one transaction")
    assert git(repo, "rev-parse", "refs/t/made", "refs/heads/old").split() == [base, new]
    assert git(repo, "reflog", "-1", "--format=%gs", "old") == "one transaction"
    assert not update_refs(top, {"refs/t/other": (base, None), "refs/heads/old": (base, base)},
                           "a stale old value")
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/t") == "refs/t/made", \
        "all or nothing"
    assert not update_refs(top, {"refs/t/made": (new, None)}, "exists already")
    assert update_refs(top, {"refs/t/made": (None, base), "refs/heads/old": (None, None)},
                       "deleted")
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/t", "refs/heads/old") == ""

    assert default_branch(top) == "refs/heads/main"
    git(repo, "branch", "-q", "-m", "main", "trunk")
    assert default_branch(top) is None
    git(repo, "branch", "-q", "master")
    assert default_branch(top) == "refs/heads/master"
    git(repo, "config", "init.defaultBranch", "trunk")
    assert default_branch(Repo.discover(repo)) == "refs/heads/trunk"
    git(repo, "config", "--add", "init.defaultBranch", "")
    assert default_branch(Repo.discover(repo)) == "refs/heads/master", "the last value: empty"
    git(repo, "update-ref", "refs/remotes/origin/dev", base)
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/dev")
    assert default_branch(Repo.discover(repo)) == "refs/remotes/origin/dev", "no local dev"
    git(repo, "branch", "-q", "dev", base)
    assert default_branch(Repo.discover(repo)) == "refs/heads/dev"


def test_merge_trees_on_a_git_older_than_2_38_says_what_it_needs(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git before 2.38 knows no ``merge-tree --write-tree`` and answers with its usage and
    exit 129: a ``git`` first on PATH does so for that call and runs the real git otherwise."""
    from git_autoresearch.git.merge import merge_trees
    from git_autoresearch.runtime.errors import Refused

    shim = tmp_path / "old-git"
    write(shim / "git", '#!/bin/sh\ncase "$*" in *"merge-tree --write-tree"*)\n'
          '  echo "usage: git merge-tree <base-tree> <branch1> <branch2>" >&2; exit 129;;\n'
          f'esac\nexec {shutil.which("git")} "$@"\n', 0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(Refused) as raised:
        merge_trees(Repo.discover(repo), "HEAD", "HEAD")
    assert str(raised.value) == (
        "replaying a worker's change onto a moved incumbent needs git 2.38 or newer (git "
        "merge-tree --write-tree); this git is older")


def test_discover_finds_the_work_tree_and_refuses_what_is_none(repo: Path,
                                                               tmp_path: Path) -> None:
    from git_autoresearch.runtime.errors import Refused

    found = Repo.discover(repo / "src")
    assert (found.top, found.git_dir, found.common_dir, found.scratch) == (
        repo, repo / ".git", repo / ".git", repo / ".git" / "autoresearch")
    head = git(repo, "rev-parse", "HEAD")
    assert (found.head_at_discovery, found.head_tree_at_discovery, found.branch_at_discovery) \
        == (head, git(repo, "rev-parse", "HEAD^{tree}"), "main")
    git(repo, "switch", "-q", "--detach")
    detached = Repo.discover(repo)
    assert (detached.head_at_discovery, detached.branch_at_discovery) == (head, None)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    linked = Repo.discover(tmp_path / "linked")
    assert (linked.top, linked.git_dir, linked.common_dir, linked.scratch) == (
        tmp_path / "linked", repo / ".git" / "worktrees" / "linked", repo / ".git",
        repo / ".git" / "worktrees" / "linked" / "autoresearch")
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    fresh = Repo.discover(unborn)
    assert fresh.top == unborn and fresh.head_at_discovery is None
    assert fresh.head_tree_at_discovery is None and fresh.branch_at_discovery is None
    assert fresh.head() is None
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "bare.git"))
    plain = tmp_path / "plain"
    plain.mkdir()
    for where, said in ((tmp_path / "bare.git", "not inside a git work tree"),
                        (repo / ".git", "not inside a git work tree"),
                        (plain, "not a git repository")):
        with pytest.raises(Refused) as raised:
            Repo.discover(where)
        assert str(raised.value) == f"{said}: {where}"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nowhere/at/all\n")
    with pytest.raises(Refused) as raised:
        Repo.discover(broken)
    assert str(raised.value) == (f"git cannot use {broken}: not a git repository: "
                                 "/nowhere/at/all")


def test_which_git_commands_forget_what_was_read(repo: Path) -> None:
    from git_autoresearch.git.repo import reads_only

    assert reads_only(["config", "--get-regexp", "x"]) and not reads_only(["config", "a", "b"])
    assert reads_only(["ls-files"]) and not reads_only(["update-ref", "x", "y"])
    top = Repo.discover(repo)
    ns = "refs/autoresearch/s1/"
    head = git(repo, "rev-parse", "HEAD")
    assert top.for_each_ref(ns + "attempts/", within=ns) == []
    git(repo, "update-ref", ns + "attempts/2", head)  # behind the repository's back
    assert top.for_each_ref(ns + "attempts/", within=ns) == [], "kept"
    top.run("ls-files")
    assert top.for_each_ref(ns + "attempts/", within=ns) == [], "a read keeps them"
    top.run("config", "--get-regexp", "nothing", allow_non_zero=True)
    assert top.for_each_ref(ns + "attempts/", within=ns) == [], "a config read keeps them"
    top.run("update-ref", ns + "scope/2", head)
    assert top.for_each_ref(ns + "attempts/", within=ns) == [ns + "attempts/2"]
    assert top.for_each_ref(ns + "scope/", within=ns) == [ns + "scope/2"]
    assert top.for_each_ref(ns + "scope/", within="refs/other/") == [ns + "scope/2"]
    assert top.for_each_ref(ns + "scope/", within="refs/autoresearch") == [ns + "scope/2"]
    assert top.for_each_ref(ns + "scope", within=ns) == [ns + "scope/2"]
    assert top.for_each_ref(ns + "attempts/") == [ns + "attempts/2"]
    assert top.config_entries(r"^core\.ignorecase$") == []
    top.run("config", "core.ignorecase", "false")
    assert top.config_entries(r"^core\.ignorecase$") == [("core.ignorecase", "false")]


def test_refs_and_branches(repo: Path, tmp_path: Path) -> None:
    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    assert top.head() == head and top.current_branch() == "main"
    assert top.resolve("main") == head and top.resolve("HEAD:value.txt") is None
    assert top.resolve("nothing") is None and top.resolve("-n") is None
    assert top.short(head) == head[:7]
    top.update_ref("refs/t/a", head, "", "made")
    with pytest.raises(Exception, match="git failed"):
        top.update_ref("refs/t/a", head, "", "exists")
    assert not top.delete_ref("refs/t/a", "f" * 40)
    assert top.delete_ref("refs/t/a", head) and top.resolve("refs/t/a") is None
    git(repo, "tag", "-a", "-m", "annotated", "v1")
    git(repo, "tag", "light")
    assert top.ref_kinds("refs/tags/") == {"refs/tags/light": "commit", "refs/tags/v1": "tag"}
    assert top.ref_objects("refs/tags/") == [
        ("refs/tags/light", head), ("refs/tags/v1", git(repo, "rev-parse", "v1"))]
    made = top.switch("new", create=True)
    assert made.returncode == 0 and top.current_branch() == "new"
    refused = top.switch("no-such-branch")
    assert refused.returncode != 0 and b"no-such-branch" in refused.stderr
    assert top.switch("main").returncode == 0
    write(repo / "value.txt", "90\n")
    git(repo, "commit", "-q", "-am", "next")
    assert top.merged(head) and not top.merged("f" * 40)
    git(repo, "switch", "-q", "--detach", head)
    assert top.current_branch() is None and not top.merged(git(repo, "rev-parse", "main"))
    git(repo, "switch", "-q", "main")
    assert top.worktree_of("new") is None
    git(repo, "worktree", "add", "-q", str(tmp_path / "w"), "new")
    assert top.worktree_of("new") == tmp_path / "w"
    assert top.worktree_of("main") is None, "this worktree's own branch"
    assert Repo.discover(tmp_path / "w").worktree_of("main") == repo
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "gone"))
    shutil.rmtree(tmp_path / "gone")
    assert top.worktree_paths() == [repo, tmp_path / "w"]
    assert Repo.discover(tmp_path / "w").worktree_paths() == [tmp_path / "w", repo]
    assert top.remotes() == []
    git(repo, "remote", "add", "zeta", str(tmp_path))
    git(repo, "remote", "add", "alpha", str(tmp_path))
    assert top.remotes() == ["alpha", "zeta"]
    assert top.ref_format_ok("refs/heads/ok") and not top.ref_format_ok("refs/heads/a..b")


def test_operations_in_progress_are_told_by_their_markers(repo: Path) -> None:
    top = Repo.discover(repo)
    assert top.operation_in_progress() is None
    for marker, what in (("BISECT_LOG", "bisect"), ("REVERT_HEAD", "revert"),
                         ("CHERRY_PICK_HEAD", "cherry-pick"), ("rebase-apply", "rebase or am"),
                         ("rebase-merge", "rebase"), ("MERGE_HEAD", "merge")):
        path = repo / ".git" / marker
        if marker.startswith("rebase"):
            path.mkdir()
        else:
            path.write_text("x\n")
        assert top.operation_in_progress() == what


# More bytes of paths than one command line takes (ARGV_BUDGET): the listing is filtered.
MANY = [f"absent/{'x' * 200}{n}.txt" for n in range(400)]


def test_the_work_tree_status_and_its_untracked_and_ignored_files(repo: Path) -> None:
    top = Repo.discover(repo)
    write(repo / ".gitignore", "*.log\nbuild/\n")
    write(repo / "run.log", "x\n")
    write(repo / "build" / "a.o", "x\n")
    write(repo / "new" / "b.txt", "x\n")
    write(repo / "value.txt", "90\n")
    git(repo, "mv", "README.md", "NOTES.md")
    write(repo / "caf\udce9.txt", "x\n")  # a Latin-1 name: no UTF-8
    found = sorted((e.index, e.worktree, e.path) for e in top.status())
    assert found == sorted([
        ("?", "?", ".gitignore"), ("!", "!", "build/"), ("?", "?", "new/b.txt"),
        ("!", "!", "run.log"), ("A", " ", "NOTES.md"), ("D", " ", "README.md"),
        (" ", "M", "value.txt"), ("?", "?", "caf\udce9.txt")])
    assert sorted(top.untracked()) == [".gitignore", "caf\udce9.txt", "new/b.txt"]
    assert sorted(top.ignored()) == ["build/", "run.log"]
    assert top.has_staged_changes()
    git(repo, "reset", "-q")
    assert not top.has_staged_changes()


def test_add_paths_stages_exactly_the_paths_given(repo: Path) -> None:
    top = Repo.discover(repo)
    write(repo / ".gitignore", "*.log\n")
    write(repo / "kept.log", "ignored, named\n")
    write(repo / "other.txt", "not named\n")
    (repo / "README.md").unlink()
    shutil.rmtree(repo / "src")
    write(repo / "src", "a file where a folder was\n")
    (repo / "link").symlink_to("src")
    top.add_paths(["kept.log", "README.md", "src", "src/lib.py", "link", "link/beyond"])
    assert git(repo, "diff", "--cached", "--name-status", "--no-renames").splitlines() == [
        "D\tREADME.md", "A\tkept.log", "A\tlink", "A\tsrc", "D\tsrc/lib.py"]
    assert "other.txt" not in git(repo, "ls-files")
    top.add_paths([])
    assert top.reachable("src") and top.reachable("link")
    assert not top.reachable("src/lib.py"), "beyond a file"
    assert not top.reachable("link/lib.py"), "beyond a symlink"
    assert not top.reachable("README.md") and top.reachable("value.txt")
    write(repo / "deep" / "er" / "x.txt", "x\n")
    assert top.reachable("deep/er/x.txt") and not top.reachable("deep/er/y.txt")


def test_restore_from_head_finishes_what_an_interruption_left(repo: Path) -> None:
    top = Repo.discover(repo)
    write(repo / "value.txt", "90\n")
    write(repo / "added.txt", "added\n")
    write(repo / "orphan.txt", "its index entry already gone\n")
    git(repo, "add", "value.txt", "added.txt")
    top.restore_from_head(["value.txt", "added.txt", "orphan.txt"])
    assert (repo / "value.txt").read_text() == "100\n"
    assert not (repo / "added.txt").exists() and not (repo / "orphan.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
    write(repo / "orphan.txt", "alone\n")
    top.restore_from_head(["orphan.txt", "never-anywhere.txt"])
    assert not (repo / "orphan.txt").exists()
    top.restore_from_head([])


def test_index_entries_and_tree_entries_whatever_the_number_of_paths(repo: Path) -> None:
    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    lib = git(repo, "rev-parse", "HEAD:src/lib.py")
    value = git(repo, "rev-parse", "HEAD:value.txt")
    assert top.indexed(["src", "value.txt", "absent.txt"]) == ["src/lib.py", "value.txt"]
    assert top.indexed(["src", "value.txt", *MANY]) == ["src/lib.py", "value.txt"]
    assert top.indexed([]) == []
    assert top.ls_files() == ["README.md", "bench.sh", "src/lib.py", "value.txt"]
    assert top.blobs(head, ["src", "value.txt", "absent.txt"]) == {
        "src/lib.py": lib, "value.txt": value}
    assert top.blobs(head, ["src", "value.txt", *MANY]) == {"src/lib.py": lib,
                                                            "value.txt": value}
    assert top.tree_entries(head, ["bench.sh"]) == {
        "bench.sh": ("100755", git(repo, "rev-parse", "HEAD:bench.sh"))}
    assert top.tree_entries(head, []) == {}
    write(repo / "value.txt", "90\n")
    write(repo / "src" / "lib.py", "changed\n")
    git(repo, "add", "-A")
    top.unstage(["value.txt", "absent.txt"])
    assert git(repo, "diff", "--cached", "--name-only") == "src/lib.py"
    assert (repo / "value.txt").read_text() == "90\n", "the work tree is left alone"
    top.unstage([])
    tree = top.write_tree()
    assert git(repo, "ls-tree", "--name-only", "-r", tree).splitlines() == top.ls_files()
    assert top.tree_of("HEAD") == git(repo, "rev-parse", "HEAD^{tree}")
    made = top.commit_tree(tree, [head], "plumbing ü\n\nbody\n")
    assert git(repo, "log", "-1", "--format=%P%n%B", made) == f"{head}\nplumbing ü\n\nbody"
    assert top.head() == head, "HEAD does not move"
    root = top.commit_tree(tree, [], "a root")
    assert git(repo, "log", "-1", "--format=%P", root) == ""


def test_commit_runs_git_commit_verbatim_and_tells_its_refusal(repo: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    top = Repo.discover(repo)
    assert top.identity_problem() is None
    write(repo / ".git" / "hooks" / "commit-msg",
          '#!/bin/sh\necho "locale $LC_ALL extra $EXTRA" >&2\n', 0o755)
    write(repo / "value.txt", "90\n")
    git(repo, "add", "value.txt")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    done = top.commit("subject\n\n# not a comment here\n", {"EXTRA": "yes"})
    assert done.returncode == 0
    assert done.stderr.decode().strip() == "locale C.UTF-8 extra yes"
    assert git(repo, "log", "-1", "--format=%B") == "subject\n\n# not a comment here"
    refused = top.commit("nothing staged\n")
    assert refused.returncode == 1
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    git(repo, "config", "user.useConfigOnly", "true")
    assert Repo.discover(repo).identity_problem() == (
        "git has no committer identity: set user.name and user.email (git config)")


def test_submodule_checkouts_and_their_heads(repo: Path, tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    write(inner / "a.txt", "a\n")
    git(inner, "add", "a.txt")
    git(inner, "commit", "-q", "-m", "inner")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    top = Repo.discover(repo)
    assert top.checked_out("sub") and not top.checked_out("src")
    assert top.submodule_head("sub") == git(inner, "rev-parse", "HEAD")
    assert top.submodule_head("src") is None
    unborn = repo / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    assert top.checked_out("unborn") and top.submodule_head("unborn") is None


def with_submodule(repo: Path, tmp_path: Path) -> tuple[str, str]:
    """``repo`` with a submodule at ``sub`` (committed) whose repository has two commits; the
    (first, second) commit ids, the submodule checked out at the second."""
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    ids = []
    for text in ("a\n", "b\n"):
        write(inner / "a.txt", text)
        git(inner, "add", "a.txt")
        git(inner, "commit", "-q", "-m", text.strip())
        ids.append(git(inner, "rev-parse", "HEAD"))
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    git(repo, "commit", "-q", "-m", "a submodule")
    return ids[0], ids[1]


def test_submodules_are_told_dirty_checked_out_and_reinstated(repo: Path,
                                                              tmp_path: Path) -> None:
    from git_autoresearch.git.submodule import (
        checkout,
        config_entries_in,
        has_commit,
        is_dirty,
        reinstate,
    )

    first, second = with_submodule(repo, tmp_path)
    top = Repo.discover(repo)
    submodules = Repo.submodules
    (repo / "link").symlink_to("sub")
    assert submodules(top, ["src", "sub", "value.txt", "link", "absent"]) == ["sub"]
    assert submodules(top, ["sub", *MANY]) == ["sub"]
    assert submodules(top, ["value.txt"]) == []
    inner = tmp_path / "inner2"
    inner.mkdir()
    git(inner, "init", "-q")
    git(inner, "commit", "-q", "--allow-empty", "-m", "x")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "staged")
    assert submodules(top, ["staged", "sub"]) == ["staged", "sub"], "in the index only"
    assert has_commit(top, "sub", first) and not has_commit(top, "sub", "f" * 40)
    assert has_commit(top, "src", "f" * 40), "no checkout: nothing to check out"
    assert not is_dirty(top, "sub") and not is_dirty(top, "src")
    write(repo / "sub" / "new.txt", "untracked\n")
    assert is_dirty(top, "sub")
    (repo / "sub" / "new.txt").unlink()
    checkout(top, "sub", first)
    assert git(repo / "sub", "rev-parse", "HEAD") == first
    assert config_entries_in(top, ".gitmodules", r"^submodule\..*\.path$") == [
        ("submodule.sub.path", "sub"), ("submodule.staged.path", "staged")]
    assert config_entries_in(top, "absent.cfg", r".") == []
    write(repo / "bare.cfg", "[x]\n\tflag\n")
    assert config_entries_in(top, "bare.cfg", r"^x\.") == [("x.flag", None)]
    shutil.rmtree(repo / "sub")
    (repo / "sub").mkdir()
    assert not top.checked_out("sub")
    reinstate(top, "sub")
    assert git(repo / "sub", "rev-parse", "HEAD") == second, "the commit the index records"
    assert (repo / "sub" / "a.txt").read_text() == "b\n"
    shutil.rmtree(repo / ".git" / "modules" / "staged")
    shutil.rmtree(repo / "staged")
    (repo / "staged").mkdir()
    reinstate(top, "staged")
    assert list((repo / "staged").iterdir()) == [], "its history is not here: nothing done"
    reinstate(top, "src")


def test_cherry_picks_in_a_linked_worktree(repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.git.process import GitError
    from git_autoresearch.git.worktrees import (
        APPLIED,
        CONFLICT,
        EMPTY,
        Picked,
        cherry_pick,
        head,
        reset,
        restore_worktree,
    )

    base = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "90\n")
    git(repo, "commit", "-q", "-am", "ninety", "--author", "Someone <s@example.invalid>")
    ninety = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "80\n")
    git(repo, "commit", "-q", "-am", "eighty")
    eighty = git(repo, "rev-parse", "HEAD")
    tree = tmp_path / "pick"
    git(repo, "worktree", "add", "-q", "--detach", str(tree), base)
    picked = cherry_pick(tree, ninety)
    assert picked.outcome == APPLIED and picked.commit == head(tree)
    assert git(tree, "rev-parse", "HEAD^") == base
    assert git(tree, "log", "-1", "--format=%an %s") == "Someone ninety"
    assert cherry_pick(tree, ninety) == Picked(EMPTY), "the change is already there"
    assert head(tree) == picked.commit
    reset(tree, base)
    assert head(tree) == base and (tree / "value.txt").read_text() == "100\n"
    assert cherry_pick(tree, eighty) == Picked(CONFLICT, paths=("value.txt",))
    assert head(tree) == base and git(tree, "status", "--porcelain") == ""
    with pytest.raises(GitError):
        cherry_pick(tree, "f" * 40)
    top = Repo.discover(repo)
    write(repo / "new.txt", "new\n")
    git(repo, "add", "new.txt")
    restore_worktree(top, ninety, ["value.txt", "new.txt"])
    assert (repo / "value.txt").read_text() == "90\n" and not (repo / "new.txt").exists()
    assert git(repo, "rev-parse", "HEAD") == eighty
    assert git(repo, "diff", "--cached", "--name-only") == "new.txt", "the index stays"
    restore_worktree(top, ninety, [])


def test_config_entries_by_pattern_and_the_files_watched(repo: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    top = Repo.discover(repo)
    write(repo / ".git" / "config", (repo / ".git" / "config").read_text()
          + "[x]\n\tbare\n\tvalue = one\n\tvalue = two\n")
    assert top.config_entries(r"^x\.") == [("x.bare", None), ("x.value", "one"),
                                           ("x.value", "two")]
    assert top.config_entries(r"^nothing\.") == []
    stamp = top.config_stamp()
    assert top.config_stamp() == stamp
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.ignorecase'='true'")
    assert top.config_stamp() != stamp, "configuration given in the environment"
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS")
    for name in ("GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME", "GIT_CONFIG_SYSTEM",
                 "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    watched = [str(repo / ".git" / "config"), None, str(home / ".gitconfig"),
               str(home / ".config" / "git" / "config"), "/etc/gitconfig"]

    def files() -> list[str | None]:
        stamp = top.config_stamp()
        assert isinstance(stamp, tuple)
        return [s[0] if isinstance(s, tuple) else s for s in stamp[2:]]

    write(home / ".gitconfig", "")
    write(home / ".config" / "git" / "config", "")
    assert files()[:4] == watched[:4]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    write(tmp_path / "xdg" / "git" / "config", "")
    assert files()[3] == str(tmp_path / "xdg" / "git" / "config")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    write(tmp_path / "global", "")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "system"))
    write(tmp_path / "system", "")
    assert files() == [str(repo / ".git" / "config"), None, str(tmp_path / "global"),
                       str(tmp_path / "system")]
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    assert files() == [str(repo / ".git" / "config"), None, str(tmp_path / "global")]
    before = top.config_stamp()
    write(tmp_path / "global", "[user]\n\tname = X\n")
    assert top.config_stamp() != before, "a watched file changed"


def test_commit_customizations_name_what_git_commit_would_do_more(repo: Path) -> None:
    top = Repo.discover(repo)
    assert top.commit_customizations() == []
    write(repo / ".git" / "hooks" / "post-commit", "#!/bin/sh\n")  # not executable: counted
    write(repo / ".git" / "hooks" / "pre-push", "#!/bin/sh\n", 0o755)  # no commit hook
    assert top.commit_customizations() == ["post-commit hook"]
    git(repo, "config", "hook.lint.event", "pre-commit")
    git(repo, "config", "--add", "hook.other.event", "pre-push")
    assert Repo.discover(repo).commit_customizations() == ["pre-commit hook", "post-commit hook"]
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "--add", "commit.gpgSign", "false")
    assert Repo.discover(repo).commit_customizations() == ["pre-commit hook",
                                                           "post-commit hook"]
    git(repo, "config", "--add", "commit.gpgSign", "maybe")
    assert Repo.discover(repo).commit_customizations()[-1] == "commit.gpgSign", \
        "a value git would refuse"
    git(repo, "config", "--unset-all", "commit.gpgSign")
    git(repo, "config", "--unset-all", "hook.lint.event")
    git(repo, "config", "core.hooksPath", "tools")
    assert Repo.discover(repo).commit_customizations() == [], "the hooks folder moved"
    write(repo / "tools" / "commit-msg", "#!/bin/sh\n", 0o755)
    write(repo / "tools" / "prepare-commit-msg", "#!/bin/sh\n", 0o755)
    assert Repo.discover(repo).commit_customizations() == ["prepare-commit-msg hook",
                                                           "commit-msg hook"]
    write(repo / ".git" / "SQUASH_MSG", "squashed\n")
    assert Repo.discover(repo).commit_customizations()[-1] == "SQUASH_MSG"


def test_automatic_maintenance_unless_switched_off(repo: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """As git commit does: ``git maintenance run --auto``, unless maintenance.auto is false
    (the last value counts); GIT_TRACE names each git command run."""
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    def ran() -> bool:
        said = trace.read_text() if trace.exists() else ""
        trace.unlink(missing_ok=True)
        return "maintenance run --auto --quiet" in said

    Repo.discover(repo).auto_maintenance()
    assert ran(), "unset: on"
    git(repo, "config", "maintenance.auto", "false")
    ran()
    Repo.discover(repo).auto_maintenance()
    assert not ran(), "switched off: nothing run"
    git(repo, "config", "--add", "maintenance.auto", "true")
    ran()
    Repo.discover(repo).auto_maintenance()
    assert ran()


def test_a_temporary_index_is_a_copy_or_empty_and_always_removed(repo: Path) -> None:
    from git_autoresearch.git.objects import temporary_index

    top = Repo.discover(repo)
    head_tree = git(repo, "rev-parse", "HEAD^{tree}")
    with temporary_index(top) as index:
        assert index.copied and index.path.parent == top.scratch
        assert index.path.read_bytes() == (repo / ".git" / "index").read_bytes()
        assert index.write_tree() == head_tree
        write(repo / "value.txt", "90\n")
        write(repo / "new.txt", "new\n")
        index.add_paths(["value.txt", "new.txt"])
        assert git(repo, "diff", "--cached", "--name-only") == "", "the real index untouched"
        built = index.write_tree()
        assert git(repo, "ls-tree", "--name-only", built).splitlines() == [
            "README.md", "bench.sh", "new.txt", "src", "value.txt"]
        index.reset_paths("HEAD", ["value.txt", "new.txt"])
        index.reset_paths("HEAD", [])
        assert index.write_tree() == head_tree
        (index.path.with_name(index.path.name + ".lock")).write_text("left by a kill")
        path = index.path
    assert not path.exists() and not path.with_name(path.name + ".lock").exists()
    with pytest.raises(RuntimeError), temporary_index(top, copy_of_real=False) as empty:
        assert not empty.copied and not empty.path.exists()
        empty.read_tree("HEAD")
        assert empty.write_tree() == head_tree
        raise RuntimeError("whatever happened")
    assert not empty.path.exists()
    (repo / ".git" / "index").unlink()
    with temporary_index(top) as none_to_copy:
        assert not none_to_copy.copied


def test_make_tree_builds_nested_folders_in_one_process(repo: Path) -> None:
    from git_autoresearch.git.objects import make_tree
    from git_autoresearch.git.process import GitError

    top = Repo.discover(repo)
    lib = git(repo, "rev-parse", "HEAD:src/lib.py")
    value = git(repo, "rev-parse", "HEAD:value.txt")
    bench = git(repo, "rev-parse", "HEAD:bench.sh")
    readme = git(repo, "rev-parse", "HEAD:README.md")
    same = make_tree(top, [("100644", value, "value.txt"), ("100644", lib, "src/lib.py"),
                           ("100755", bench, "bench.sh"), ("100644", readme, "README.md")])
    assert same == git(repo, "rev-parse", "HEAD^{tree}")
    deep = make_tree(top, [("100644", value, "a/b/c/d.txt"), ("100644", lib, "a/b/e.txt"),
                           ("100644", value, "a/f.txt"), ("100644", lib, "g/h.txt"),
                           ("120000", value, "top-link")])
    assert git(repo, "ls-tree", "-r", "--format=%(objectmode) %(path)", deep).splitlines() == [
        "100644 a/b/c/d.txt", "100644 a/b/e.txt", "100644 a/f.txt", "100644 g/h.txt",
        "120000 top-link"]
    assert make_tree(top, []) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    with pytest.raises(GitError):
        make_tree(top, [("100644", "f" * 40, "missing.txt")])
    with pytest.raises(GitError):
        make_tree(top, [("100644", "not an id", "x/bad.txt")])


def test_renamed_pairs_files_as_gits_rename_detection_does(repo: Path) -> None:
    from git_autoresearch.git.objects import renamed

    top = Repo.discover(repo)
    text = "".join(f"line {n}\n" for n in range(20))
    blob = git(repo, "hash-object", "-w", "--stdin", input=text.encode())
    edited = git(repo, "hash-object", "-w", "--stdin",
                 input=(text + "one more\n").encode())
    other = git(repo, "hash-object", "-w", "--stdin", input=b"nothing alike\n")
    assert renamed(top, [("100644", blob, "old.txt"), ("100644", other, "gone.txt")],
                   [("100644", edited, "dir/new.txt"), ("100644", blob, "copy.txt")]) \
        == [("old.txt", "copy.txt")], "an exact rename first"
    assert renamed(top, [("100644", blob, "a.txt"), ("100644", other, "b.txt")],
                   [("100644", edited, "c.txt"), ("100644", other, "d.txt")]) == [
        ("a.txt", "c.txt"), ("b.txt", "d.txt")]
    assert renamed(top, [], [("100644", blob, "x")]) == []
    assert renamed(top, [("100644", blob, "x")], []) == []
    assert renamed(top, [("100644", blob, "x")], [("100644", other, "y")]) == []


def test_hash_files_gives_the_ids_git_would_record(repo: Path, tmp_path: Path) -> None:
    from git_autoresearch.git.objects import hash_files

    with_submodule(repo, tmp_path)
    top = Repo.discover(repo)
    (repo / "link").symlink_to("value.txt")
    (repo / "folder-link").symlink_to("src")
    write(repo / "bad\nname.txt", "x\n")
    write(repo / ".gitattributes", "*.crlf text eol=lf\n")
    write(repo / "a.crlf", b"a\r\nb\r\n")
    found = hash_files(top, ["value.txt", "link", "sub", "src", "folder-link/lib.py",
                             "bad\nname.txt", "absent.txt", "a.crlf", "src/lib.py"])
    assert found == {
        "value.txt": git(repo, "rev-parse", "HEAD:value.txt"),
        "link": git(repo, "hash-object", "--stdin", input=b"value.txt"),
        "sub": git(repo / "sub", "rev-parse", "HEAD"),
        "a.crlf": git(repo, "hash-object", "--stdin", input=b"a\nb\n"),
        "src/lib.py": git(repo, "rev-parse", "HEAD:src/lib.py")}
    unwritten = subprocess.run(["git", "cat-file", "-e", found["a.crlf"]], cwd=repo)
    assert unwritten.returncode != 0, "nothing is written"
    assert hash_files(top, []) == {}


def _status_v1(top: Path) -> list[tuple[str, str, str]]:
    """The entries version 1 of ``git status --porcelain`` gives, as (index, worktree, path):
    the reading :meth:`Repo.status` must agree with."""
    out = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--no-renames",
                          "--untracked-files=all", "--ignored=matching",
                          "--ignore-submodules=untracked"], cwd=top, capture_output=True,
                         check=True).stdout
    return [(item[:1].decode(), item[1:2].decode(), item[3:].decode("utf-8", "surrogateescape"))
            for item in out.split(b"\0") if len(item) >= 4]


def test_status_gives_version_1s_entries_and_where_head_was(repo: Path) -> None:
    """Repo.status reads version 2 of ``git status --porcelain``, for the commit and branch
    of HEAD it lists them at: its entries are version 1's (codes and paths alike) for a
    staged edit, an unstaged one, a deletion, a mode change, an intent to add, an unmerged
    path, untracked names with a space, a newline and a byte that is not UTF-8, and an
    ignored folder; ``commit`` and ``branch`` are HEAD's, None on a detached HEAD's branch
    and on an unborn branch's commit."""
    top = repo
    write(top / "conflict.txt", "base\n")
    git(top, "add", "conflict.txt")
    git(top, "commit", "-q", "-m", "base")
    git(top, "switch", "-q", "-c", "side")
    write(top / "conflict.txt", "side\n")
    git(top, "commit", "-q", "-am", "side")
    git(top, "switch", "-q", "main")
    write(top / "conflict.txt", "main\n")
    git(top, "commit", "-q", "-am", "main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=top, capture_output=True)
    write(top / "value.txt", "1\n")
    git(top, "add", "value.txt")
    write(top / "src" / "lib.py", "changed\n")
    (top / "README.md").unlink()
    (top / "bench.sh").chmod(0o644)
    write(top / "new.py", "x\n")
    git(top, "add", "-N", "new.py")
    write(top / "with space.txt", "x\n")
    write(top / "line\nbreak.txt", "x\n")
    (top / os.fsdecode(b"bad\xff.txt")).write_text("x\n")
    write(top / ".gitignore", "build/\n")
    write(top / "build" / "out.o", "x\n")
    status = Repo.discover(top).status()
    assert sorted((e.index, e.worktree, e.path) for e in status) == sorted(_status_v1(top))
    assert {e.path for e in status} >= {"conflict.txt", "line\nbreak.txt", "build/",
                                        os.fsdecode(b"bad\xff.txt"), "new.py"}
    assert (status.commit, status.branch) == (git(top, "rev-parse", "HEAD"), "main")
    git(top, "reset", "-q", "--hard")
    git(top, "checkout", "-q", "--detach")
    status = Repo.discover(top).status()
    assert (status.commit, status.branch) == (git(top, "rev-parse", "HEAD"), None)
    git(top, "switch", "-q", "--orphan", "fresh")
    status = Repo.discover(top).status()
    assert (status.commit, status.branch) == (None, "fresh")

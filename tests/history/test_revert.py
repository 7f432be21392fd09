"""Revert never loses anything: user files, ignored files, protected files, modes; and it
restores everything the experiment changed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import Tool, commit_all, git, runs, start_args, write


def snapshot(paths: list[Path]) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode)) for p in paths}


def ignored_user_files(repo: Path, ignore: str = ".venv/\n.env\n") -> tuple[Path, Path]:
    """A committed .gitignore (``ignore``), and the virtualenv and .env file it ignores."""
    write(repo / ".gitignore", ignore)
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    return (write(repo / ".venv" / "bin" / "python", "#!venv\n", 0o755),
            write(repo / ".env", "SECRET=1\n", 0o600))


def test_user_files_survive_discard(repo: Path, ar: Tool) -> None:
    venv, dotenv = ignored_user_files(repo, ".venv/\n.env\n*.log\n")
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


def test_renames_deletions_and_modes_are_reverted(repo: Path, ar: Tool) -> None:
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


def test_file_replaced_by_directory_is_reverted(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    os.remove(repo / "README.md")
    write(repo / "README.md" / "inside.txt", "dir now\n")
    write(repo / "value.txt", "300\n")
    ar(repo, "run", "-d", "dir for file")
    assert (repo / "README.md").read_text() == "project\n"


def test_protected_files_are_byte_and_mode_identical(repo: Path, ar: Tool) -> None:
    write(repo / "eval" / "score.py", "print('tracked evaluator')\n")
    write(repo / "autoresearch.md", "tracked legacy notes\n")
    git(repo, "add", "eval", "autoresearch.md")
    git(repo, "commit", "-q", "-m", "evaluator")
    ar(repo, *start_args("--protected", "eval/**"))
    hook = write(repo / ".auto" / "hooks" / "after.sh", "#!/bin/sh\nexit 0\n", 0o755)
    legacy = write(repo / "autoresearch.md", "notes edited by the agent\n", 0o640)
    untracked_legacy = write(repo / "autoresearch.ideas.md", "- [ ] idea\n", 0o600)
    prompt = repo / ".auto" / "prompt.md"
    write(prompt, "learnings from this run\n")
    write(repo / "value.txt", "300\n")
    files = [hook, legacy, untracked_legacy, prompt]
    before = snapshot(files)
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    assert snapshot(files) == before
    write(repo / "value.txt", "10\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert snapshot(files) == before
    files_committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert files_committed == ["value.txt"], "a keep never commits protected paths"


def test_changing_what_defines_success_is_undone_and_recorded(repo: Path, ar: Tool) -> None:
    write(repo / "eval" / "score.py", "print('tracked evaluator')\n")
    git(repo, "add", "eval")
    git(repo, "commit", "-q", "-m", "evaluator")
    ar(repo, *start_args("--readonly", "eval/**"))
    write(repo / "eval" / "score.py", "print('edited by the agent')\n")
    write(repo / "value.txt", "1\n")
    record = ar(repo, "run", "-d", "cheat", "--json").json()
    assert record["status"] == "keep" and record["metric"] == 1
    assert record["readonly_violations"] == ["eval/score.py"]
    assert (repo / "eval" / "score.py").read_text() == "print('tracked evaluator')\n"
    assert git(repo, "show", f"{record['scope_ref']}:eval/score.py") == \
        "print('edited by the agent')"
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 0'\n")
    record = ar(repo, "run", "-d", "cheat harder", "--json").json()
    assert record["status"] == "discard" and record["metric"] == 1
    assert record["readonly_violations"] == ["bench.sh"]


def test_out_of_scope_changes_are_reverted_before_measuring(repo: Path, ar: Tool) -> None:
    write(repo / "tests" / "test_value.sh", "test $(cat value.txt) -ge 50\n")
    git(repo, "add", "tests")
    git(repo, "commit", "-q", "-m", "tests")
    ar(repo, *start_args("--scope", "value.txt", "--checks-command", "sh tests/test_value.sh"))
    write(repo / "value.txt", "10\n")
    write(repo / "tests" / "test_value.sh", "true\n")
    write(repo / "README.md", "out of scope\n")
    record = ar(repo, "run", "-d", "fast, and the test neutered", "--json").json()
    assert record["status"] == "checks_failed"
    assert record["scope_violations"] == ["README.md"]
    assert record["readonly_violations"] == ["tests/test_value.sh"]
    assert git(repo, "show", f"{record['scope_ref']}:README.md") == "out of scope"
    assert (repo / "README.md").read_text() == "project\n"
    assert git(repo, "show", f"{record['scope_ref']}:tests/test_value.sh") == "true"
    assert (repo / "tests" / "test_value.sh").read_text() == "test $(cat value.txt) -ge 50\n"


def test_keep_reverts_changes_outside_scope(repo: Path, ar: Tool) -> None:
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
    assert git(repo, "show", f"{record['scope_ref']}:README.md") == "out of scope"


def test_start_refuses_dirty_tree(repo: Path, ar: Tool) -> None:
    write(repo / "value.txt", "1\n")
    write(repo / "scratch.txt", "x\n")
    res = ar(repo, *start_args(), expect=3)
    assert res.err == (
        "git autoresearch: the work tree has uncommitted changes: value.txt (and untracked "
        "files: scratch.txt, which --force would accept); commit or remove them first\n")
    assert not (repo / ".auto").exists()
    (repo / "scratch.txt").unlink()
    git(repo, "checkout", "-q", "value.txt")
    write(repo / "stray.txt", "x\n")
    res = ar(repo, *start_args(), expect=3)
    assert res.err == (
        "git autoresearch: the work tree has untracked files: stray.txt; commit or remove them, "
        "ignore them (.gitignore), or pass --force (they are then never touched)\n")
    ar(repo, *start_args("--force"))
    write(repo / "value.txt", "300\n")
    ar(repo, "run", "-d", "worse")
    assert (repo / "stray.txt").read_text() == "x\n"


def test_paths_with_odd_names(repo: Path, ar: Tool) -> None:
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


def test_ignored_files_survive_gitignore_edits_and_force_adds(repo: Path, ar: Tool) -> None:
    venv, dotenv = ignored_user_files(repo)
    ar(repo, *start_args())
    before = snapshot([venv, dotenv])
    write(repo / ".gitignore", "# nothing ignored any more\n")
    write(repo / "value.txt", "300\n")
    assert ar(repo, "run", "-d", "un-ignore", "--json").json()["status"] == "discard"
    assert snapshot([venv, dotenv]) == before
    assert (repo / ".gitignore").read_text() == ".venv/\n.env\n"
    git(repo, "add", "-f", ".env")
    write(repo / "value.txt", "300\n")
    assert ar(repo, "run", "-d", "force-add", "--json").json()["status"] == "discard"
    assert snapshot([venv, dotenv]) == before
    assert git(repo, "ls-files", ".env") == ""
    git(repo, "add", "-f", ".env")
    write(repo / "value.txt", "1\n")
    assert ar(repo, "run", "-d", "keep without the secret", "--json").json()["status"] == "keep"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert snapshot([venv, dotenv]) == before


def test_commit_refused_by_a_hook_changes_nothing(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    hook = write(repo / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nexit 1\n", 0o755)
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "out of scope\n")
    ar(repo, "measure")
    res = ar(repo, "keep", "-d", "blocked", expect=3)
    assert res.err == (
        "git autoresearch: git commit failed, nothing was recorded and nothing reverted: exit 1\n")
    assert (repo / "value.txt").read_text() == "10\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""
    hook.unlink()
    assert ar(repo, "discard", "-d", "after the hook", "--json").json()["run"] == 2
    assert (repo / "value.txt").read_text() == "100\n"
    hook = write(repo / ".git" / "hooks" / "pre-commit", "#!/bin/sh\nexit 1\n", 0o755)
    write(repo / "value.txt", "10\n")
    assert ar(repo, "run", "-d", "blocked run", expect=3).err == (
        "git autoresearch: git commit failed, nothing was recorded and nothing reverted: exit 1\n")
    assert ar(repo, "status", "--json").json()["pending"]["metric"] == 10
    record = ar(repo, "discard", "-d", "after the blocked run", "--json").json()
    assert record["metric"] == 10 and record["run"] == 3


def test_glob_without_slash_matches_at_any_depth(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "*.py", "--scope", "value.txt"))
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "deep python file", "--json").json()
    assert record["scope_violations"] == []
    assert "src/lib.py" in git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()


def test_a_rename_out_of_scope_is_reverted_whole(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    git(repo, "mv", "src/lib.py", "moved_out.py")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "rename out of scope", "--json").json()
    assert record["scope_violations"] == ["moved_out.py", "src/lib.py"]
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert not (repo / "moved_out.py").exists()
    assert git(repo, "ls-tree", "--name-only", "HEAD", "src/") == "src/lib.py"


def test_keep_never_commits_a_staged_change_outside_the_scope(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "staged, out of scope\n")
    git(repo, "add", "README.md")
    record = ar(repo, "keep", "-d", "staged outside", "--metric", "10", "--json").json()
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert (repo / "README.md").read_text() == "project\n"
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "show", f"{record['attempt_ref']}:README.md") == "staged, out of scope"


def test_a_keep_commit_is_what_git_commit_makes(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    branch = git(repo, "branch", "--show-current")
    write(repo / "value.txt", "10\n")
    ar(repo, "keep", "-d", "smaller value\n\nwhy it helps", "--metric", "10")
    assert git(repo, "status", "--porcelain", "--", "value.txt") == ""
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "reflog", "-1", "--format=%gs", "HEAD") == "commit: smaller value"
    assert git(repo, "reflog", "-1", "--format=%gs", branch) == "commit: smaller value"
    assert git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>") == \
        "Test Author <author@example.invalid>|Test Committer <committer@example.invalid>"
    assert git(repo, "log", "-1", "--format=%B").startswith("smaller value\n\nwhy it helps\n\n")


def test_hooks_under_core_hookspath_run_on_keep(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    git(repo, "config", "core.hooksPath", "my-hooks")
    marker = repo.parent / "post-commit-ran"
    write(repo / "my-hooks" / "post-commit", f"#!/bin/sh\necho ran > '{marker}'\n", 0o755)
    write(repo / "value.txt", "10\n")
    ar(repo, "keep", "-d", "with a hook", "--metric", "10")
    assert marker.read_text() == "ran\n"
    assert "value.txt" in git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()


def test_keep_signs_when_commit_gpgsign_is_set(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    signer = write(repo.parent / "fake-gpg", "#!/bin/sh\ncat >/dev/null\n"
                   "printf '[GNUPG:] BEGIN_SIGNING\\n[GNUPG:] SIG_CREATED D 1 8 00 0 0\\n' >&2\n"
                   "printf -- '-----BEGIN PGP SIGNATURE-----\\nfake\\n"
                   "-----END PGP SIGNATURE-----\\n'\n", 0o755)
    git(repo, "config", "commit.gpgSign", "true")
    git(repo, "config", "gpg.program", str(signer))
    write(repo / "value.txt", "10\n")
    ar(repo, "keep", "-d", "signed", "--metric", "10")
    assert "gpgsig -----BEGIN PGP SIGNATURE-----" in git(repo, "cat-file", "commit", "HEAD")


def test_commit_customizations_name_hooks_and_signing(repo: Path) -> None:
    from git_autoresearch.git import Repo

    r = Repo.discover(repo)
    assert r.commit_customizations() == []
    write(repo / ".git" / "hooks" / "commit-msg", "#!/bin/sh\n")  # not executable: git warns
    git(repo, "config", "hook.lint.event", "pre-commit")
    git(repo, "config", "commit.gpgsign", "yes")
    assert sorted(r.commit_customizations()) == ["commit-msg hook", "commit.gpgSign",
                                                 "pre-commit hook"]
    git(repo, "config", "--add", "commit.gpgsign", "false")
    assert "commit.gpgSign" not in r.commit_customizations()


def test_keep_refuses_when_head_moved_since_it_was_read(repo: Path) -> None:
    from git_autoresearch.git import Repo
    from git_autoresearch.history.experiment import commit_index
    from git_autoresearch.runtime.errors import Refused

    r = Repo.discover(repo)
    stale = git(repo, "rev-parse", "HEAD")
    write(repo / "README.md", "someone else's commit\n")
    git(repo, "commit", "-q", "-am", "meanwhile")
    moved = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "10\n")
    git(repo, "add", "value.txt")
    with pytest.raises(Refused, match="git commit failed"):
        commit_index(r, head=stale, head_tree=None, message="late\n\nResult: {}\n",
                     trailers={"Result": "{}"})
    assert git(repo, "rev-parse", "HEAD") == moved


def test_git_maintenance_runs_during_a_session(repo: Path, ar: Tool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from git_autoresearch.record import transaction

    monkeypatch.setattr(transaction, "MAINTENANCE_EVERY", 1)
    ar(repo, *start_args())
    packs = repo / ".git" / "objects" / "pack"
    for n in range(2):
        write(repo / f"extra{n}.txt", f"{n}\n")
        commit_all(repo, f"extra {n}")
        git(repo, "repack", "-q")
    git(repo, "config", "gc.autoPackLimit", "1")
    git(repo, "config", "gc.autoDetach", "false")
    git(repo, "config", "maintenance.auto", "false")
    write(repo / "value.txt", "200\n")
    ar(repo, "discard", "-d", "maintenance off")
    assert len(list(packs.glob("*.pack"))) == 2
    git(repo, "config", "maintenance.auto", "true")
    write(repo / "value.txt", "200\n")
    ar(repo, "discard", "-d", "maintenance on")
    assert len(list(packs.glob("*.pack"))) == 1


def test_git_maintenance_runs_every_tenth_run(repo: Path, ar: Tool, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every MAINTENANCE_EVERY (10) runs, as git commit would: after run 10 and 20, not
    between (GIT_TRACE names each git command our process runs)."""
    ar(repo, *start_args())  # run 1, the baseline
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    ran_after = []
    for number in range(2, 22):
        write(repo / "value.txt", f"{number}\n")
        ar(repo, "discard", "-d", f"run {number}")
        if "maintenance run --auto" in trace.read_text():
            ran_after.append(number)
        trace.unlink()
    assert ran_after == [10, 20]


def test_keep_reverts_new_files_staged_outside_the_scope(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "10\n")
    write(repo / "staged-new.txt", "new, staged\n")
    write(repo / "intent-new.txt", "new, intent to add\n")
    git(repo, "add", "staged-new.txt")
    git(repo, "add", "-N", "intent-new.txt")
    git(repo, "mv", "README.md", "README.moved")
    record = ar(repo, "keep", "-d", "staged outside", "--metric", "10", "--json").json()
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert record["scope_violations"] == ["README.md", "README.moved", "intent-new.txt",
                                          "staged-new.txt"]
    for name in ("staged-new.txt", "intent-new.txt", "README.moved"):
        assert not (repo / name).exists(), name
    assert (repo / "README.md").read_text() == "project\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", f"{record['attempt_ref']}:staged-new.txt") == "new, staged"
    assert git(repo, "show", f"{record['attempt_ref']}:README.moved") == "project"
    assert ar(repo, "discard", "-d", "next", "--json").json()["run"] == 3


def test_keep_puts_back_a_file_renamed_out_of_the_scope(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt"))
    (repo / "src" / "lib.py").rename(repo / "lib.py")
    write(repo / "value.txt", "10\n")
    record = ar(repo, "keep", "-d", "rename out", "--metric", "10", "--json").json()
    assert record["scope_violations"] == ["lib.py", "src/lib.py"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == ["value.txt"]
    assert (repo / "src" / "lib.py").read_text() == "def f():\n    return 1\n"
    assert not (repo / "lib.py").exists()


def test_intent_to_add_files_from_before_the_session_are_never_committed_or_removed(
        repo: Path, ar: Tool) -> None:
    notes = write(repo / "notes.txt", "my notes\n")
    ar(repo, *start_args("--force"))
    git(repo, "add", "-N", "notes.txt")
    write(repo / "value.txt", "10\n")
    ar(repo, "keep", "-d", "keep", "--metric", "10")
    assert "notes.txt" not in git(repo, "show", "--name-only", "--format=", "HEAD")
    git(repo, "add", "-N", "notes.txt")
    write(repo / "value.txt", "20\n")
    ar(repo, "discard", "-d", "discard")
    assert notes.read_text() == "my notes\n"
    assert git(repo, "ls-files", "notes.txt") == ""


def test_a_refused_keep_leaves_index_and_session_as_they_were(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt", "--scope", "src/"))
    write(repo / ".git" / "hooks" / "pre-commit", "#!/bin/sh\necho 'lint: failed' >&2\n"
          "echo 'fix it' >&2\nexit 1\n", 0o755)
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "staged, out of scope\n")
    write(repo / "src" / "new.py", "x = 1\n")
    git(repo, "add", "README.md", "src/new.py", "value.txt")
    before = git(repo, "status", "--porcelain")
    res = ar(repo, "keep", "-d", "blocked", "--metric", "10", expect=3)
    assert "git commit failed" in res.err and "fix it" in res.err and "lint: failed" in res.err
    assert git(repo, "status", "--porcelain") == before
    assert ar(repo, "doctor").code == 0
    assert "interrupted" not in ar(repo, "status").out


@pytest.mark.parametrize("hook,said", [
    ("printf '\\nReviewed-by: bot <b@example.invalid>\\n' >> \"$1\"", "Result trailer"),
    ("sed -i 's/^Autoresearch-Run: .*/Autoresearch-Run: 99/' \"$1\"",
     "Autoresearch-Run trailer"),
])
def test_a_trailer_changed_by_a_hook_is_refused_and_head_moved_back(repo: Path, ar: Tool, hook: str,
                                                                   said: str) -> None:
    ar(repo, *start_args())
    head = git(repo, "rev-parse", "HEAD")
    write(repo / ".git" / "hooks" / "commit-msg", f"#!/bin/sh\n{hook}\n", 0o755)
    write(repo / "value.txt", "10\n")
    res = ar(repo, "keep", "-d", "reviewed", "--metric", "10", expect=3)
    assert said in res.err and "does not read back" in res.err and "moved back" in res.err
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert (repo / "value.txt").read_text() == "10\n"
    assert [r["run"] for r in runs(repo)] == [1]
    assert ar(repo, "doctor").code == 0


def test_a_description_longer_than_the_argument_limit(repo: Path, ar: Tool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    ar(repo, *start_args())
    write(repo / "value.txt", "10\n")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"W" * 200_000 + b"\n")))
    ar(repo, "keep", "-d", "-", "--metric", "10")
    assert git(repo, "log", "-1", "--format=%s") == "W" * 200_000
    assert len(git(repo, "reflog", "-1", "--format=%gs")) == len("commit: ") + 4000


def test_reflog_action_squash_message_and_bad_signing_value(repo: Path, ar: Tool,
                                                            monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    ar(repo, *start_args())
    monkeypatch.setenv("GIT_REFLOG_ACTION", "loop")
    write(repo / "value.txt", "10\n")
    ar(repo, "keep", "-d", "first", "--metric", "10")
    assert git(repo, "reflog", "-1", "--format=%gs") == "loop: first"
    write(repo / ".git" / "SQUASH_MSG", "Squashed commit of the following:\n")
    write(repo / "value.txt", "9\n")
    ar(repo, "keep", "-d", "second", "--metric", "9")
    assert not (repo / ".git" / "SQUASH_MSG").exists(), "git commit removes it"
    git(repo, "config", "commit.gpgSign", "sometimes")
    write(repo / "value.txt", "8\n")
    res = ar(repo, "keep", "-d", "third", "--metric", "8", expect=3)
    assert "bad boolean config value" in res.err


def test_file_names_that_are_not_utf8(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    bad = os.fsdecode(b"src/bad\xff.txt")
    write(repo / "value.txt", "10\n")
    Path(repo / bad).write_text("x\n")
    record = ar(repo, "keep", "-d", "odd name", "--metric", "10", "--json").json()
    assert record["status"] == "keep"
    Path(repo / os.fsdecode(b"src/worse\xfe.txt")).write_text("y\n")
    write(repo / "value.txt", "20\n")
    ar(repo, "discard", "-d", "odd name again")
    assert not (repo / os.fsdecode(b"src/worse\xfe.txt")).exists()
    hook = repo / ".auto" / "hooks" / "before.d" / os.fsdecode(b"hook\xff.sh")
    write(hook, "#!/bin/sh\n", 0o755)
    write(repo / "value.txt", "30\n")
    res = ar(repo, "discard", "-d", "with an odd hook name")
    assert "not mirrored on the state ref" in res.err
    assert [r["run"] for r in runs(repo)][-1] == 4


def test_a_commit_hook_cannot_sweep_paths_outside_the_scope_into_a_keep(repo: Path, ar: Tool
                                                                       ) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    head = git(repo, "rev-parse", "HEAD")
    write(repo / ".git" / "hooks" / "pre-commit",
          "#!/bin/sh\necho generated > generated.txt\ngit add generated.txt\n", 0o755)
    write(repo / "value.txt", "10\n")
    res = ar(repo, "keep", "-d", "swept", "--metric", "10", expect=3)
    assert "a commit hook added generated.txt" in res.err
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert (repo / "value.txt").read_text() == "10\n"


def test_a_hook_cannot_commit_a_file_from_before_the_session(repo: Path, ar: Tool) -> None:
    write(repo / "src" / "mine.py", "# the user's, untracked\n")
    ar(repo, *start_args("--force", "--scope", "src/", "--scope", "value.txt"))
    write(repo / ".git" / "hooks" / "pre-commit", "#!/bin/sh\ngit add -A src\n", 0o755)
    write(repo / "value.txt", "10\n")
    res = ar(repo, "keep", "-d", "swept", "--metric", "10", expect=3)
    assert "a commit hook added src/mine.py" in res.err
    assert (repo / "src" / "mine.py").read_text() == "# the user's, untracked\n"
    assert git(repo, "ls-files", "src/mine.py") == ""


def test_without_a_committer_identity_nothing_is_reverted(repo: Path, ar: Tool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)
    git(repo, "config", "user.useConfigOnly", "true")
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "out of scope\n")
    res = ar(repo, "discard", "-d", "no identity", expect=3)
    assert "git cannot record the attempt" in res.err
    assert "cannot record the attempt" in ar(repo, "measure", expect=3).err
    assert (repo / "value.txt").read_text() == "10\n"
    assert (repo / "README.md").read_text() == "out of scope\n"
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_out_of_scope_changes_set_aside_by_measurements_stay_named(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "90\n")
    write(repo / "README.md", "first\n")
    data = ar(repo, "measure", "--json").json()
    assert any("reverted changes outside the scope: README.md" in w for w in data["warnings"])
    assert ar(repo, "doctor").code == 0, "scope/2 belongs to the pending run 2"
    write(repo / "README.md", "second\n")
    assert "reverted changes outside the scope" in ar(repo, "run", "--dry-run", "-d", "x").err
    write(repo / "value.txt", "80\n")  # the measurement is stale now
    record = ar(repo, "discard", "-d", "stale", "--json").json()
    assert record["scope_ref"] == "refs/autoresearch/s1/scope/2.2"
    assert record["scope_violations"] == ["README.md"]
    assert git(repo, "show", "refs/autoresearch/s1/scope/2:README.md") == "first"
    assert ar(repo, "doctor").code == 0
    git(repo, "update-ref", "refs/autoresearch/s1/scope/77", "refs/autoresearch/s1/scope/2")
    assert ("scope/77 holds changes set aside (outside the scope or to readonly files) that no "
            "recorded run names") in ar(repo, "doctor", expect=3).out

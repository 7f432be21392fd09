"""The edges of a keep and a discard: a keep with nothing left to commit, a keep without a
committer identity, and the paths an attempt ref never records (protected files, files staged
before the session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Tool, git, runs, start_args, write


def _signer(repo: Path) -> Path:
    """A gpg.program that fails if git ever asks it to sign."""
    return write(repo.parent / "failing-gpg", "#!/bin/sh\necho 'gpg: signing failed' >&2\n"
                 "exit 2\n", 0o755)


@pytest.mark.parametrize("customized", ["none", "pre-commit hook", "signing"])
def test_a_keep_whose_staged_change_was_undone_commits_nothing(repo: Path, ar: Tool,
                                                               customized: str) -> None:
    """A change staged, then undone in the work tree: what a keep stages is HEAD's tree, so
    it makes no commit (no empty commit, no hook run, no signature asked for), records the
    run as kept at HEAD with ``committed`` false, and leaves the index clean."""
    ar(repo, *start_args("--scope", "value.txt"))
    marker = repo.parent / "hook-ran"
    if customized == "pre-commit hook":
        write(repo / ".git" / "hooks" / "pre-commit", f"#!/bin/sh\ntouch '{marker}'\n", 0o755)
    elif customized == "signing":
        git(repo, "config", "commit.gpgSign", "true")
        git(repo, "config", "gpg.program", str(_signer(repo)))
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "10\n")
    git(repo, "add", "value.txt")
    write(repo / "value.txt", "100\n")
    assert git(repo, "diff", "--cached", "--name-only") == "value.txt"
    res = ar(repo, "keep", "-d", "undone", "--metric", "10", "--json")
    record = res.json()
    assert (record["run"], record["status"], record["committed"], record["commit"]) == \
        (2, "keep", False, head[:7])
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "status", "--porcelain") == ""
    assert not marker.exists()
    assert [(r["run"], r["committed"]) for r in runs(repo)] == [(1, False), (2, False)]
    assert ar(repo, "status", "--json").json()["warnings"] == []
    assert res.err == ""


def test_a_keep_without_a_committer_identity_changes_nothing(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """No committer identity: git refuses the commit, and the keep says so with git's own
    reason, records nothing, and leaves HEAD, the index and the work tree (the out-of-scope
    change included) as they were."""
    ar(repo, *start_args("--scope", "value.txt"))
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                 "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)
    git(repo, "config", "user.useConfigOnly", "true")
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "out of scope\n")
    before = git(repo, "status", "--porcelain")
    res = ar(repo, "keep", "-d", "no identity", "--metric", "10", expect=3)
    assert res.err.splitlines()[0] == (
        "git autoresearch: git commit failed, nothing was recorded and nothing reverted: "
        "fatal: no email was given and auto-detection is disabled")
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == before
    assert (repo / "value.txt").read_text() == "10\n"
    assert (repo / "README.md").read_text() == "out of scope\n"
    assert [r["run"] for r in runs(repo)] == [1]
    assert not (repo / ".git" / "autoresearch" / "intent.json").exists()
    assert ar(repo, "status", "--json").json()["warnings"] == []


@pytest.mark.parametrize("command", ["discard", "keep"])
def test_staged_protected_files_and_files_staged_before_the_session_stay_out_of_the_attempt(
        repo: Path, ar: Tool, command: str) -> None:
    """A protected file changed and staged, and a file that was untracked before the session
    and is staged now: the attempt ref records neither (the protected one as HEAD has it, the
    other not at all); both stay on disk byte for byte."""
    write(repo / "secrets.txt", "v1\n")
    git(repo, "add", "secrets.txt")
    git(repo, "commit", "-qm", "secrets")
    write(repo / "notes.txt", "my notes\n")
    ar(repo, *start_args("--force", "--scope", "value.txt", "--protected", "secrets.txt"))
    write(repo / "secrets.txt", "v2, staged\n")
    git(repo, "add", "secrets.txt", "notes.txt")
    write(repo / "value.txt", "10\n")
    write(repo / "README.md", "out of scope\n")
    extra = ["--metric", "10"] if command == "keep" else []
    record = ar(repo, command, "-d", "with staged files", *extra, "--json").json()
    ref = record["attempt_ref"]
    assert ref == "refs/autoresearch/s1/attempts/2"
    files = git(repo, "ls-tree", "-r", "--name-only", ref).splitlines()
    assert files == ["README.md", "bench.sh", "secrets.txt", "src/lib.py", "value.txt"]
    assert git(repo, "show", f"{ref}:secrets.txt") == "v1"
    assert git(repo, "show", f"{ref}:README.md") == "out of scope"
    assert git(repo, "show", f"{ref}:value.txt") == "10"
    assert (repo / "secrets.txt").read_text() == "v2, staged\n"
    assert (repo / "notes.txt").read_text() == "my notes\n"
    assert (repo / "README.md").read_text() == "project\n"
    # A discard leaves the protected file's staging alone; a keep unstages it (its work-tree
    # copy intact), since the commit it makes takes only the scope.
    assert git(repo, "diff", "--cached", "--name-only") == \
        ("" if command == "keep" else "secrets.txt")
    assert git(repo, "ls-files", "notes.txt") == ""
    if command == "keep":
        assert git(repo, "show", "--name-only", "--format=", "HEAD").splitlines() == \
            ["value.txt"]

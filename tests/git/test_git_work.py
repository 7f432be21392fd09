"""A keep and a discard ask git each question once: HEAD from discovery, the session's refs in
one for-each-ref, the configuration in one read, the branch's run trailers only when its tip
moved. The answers stay those git would give now."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Tool, git, runs, start_args, write

from git_autoresearch.git import Repo, process


def traced(ar: Tool, monkeypatch: pytest.MonkeyPatch, cwd: Path, *args: str) -> list[str]:
    """The git argument lists (as one string each) ``git autoresearch <args>`` ran."""
    monkeypatch.setattr(process, "TRACE", True)
    res = ar(cwd, *args)
    monkeypatch.setattr(process, "TRACE", False)
    marker = " git "
    return [line.split(marker, 1)[1] for line in res.err.splitlines()
            if line.startswith("git-autoresearch trace: ")]


def test_keep_and_discard_ask_each_question_once(repo: Path, ar: Tool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    keep = traced(ar, monkeypatch, repo, "keep", "-d", "lower", "--metric", "90")
    write(repo / "value.txt", "95\n")
    discard = traced(ar, monkeypatch, repo, "discard", "-d", "worse")
    assert [r["status"] for r in runs(repo)] == ["keep", "keep", "discard"]
    for calls in (keep, discard):
        # HEAD was read by discovery: never asked again.
        assert not [c for c in calls if c.startswith("rev-parse -q --verify HEAD")]
        # attempts/ and scope/ come from one for-each-ref over the session's namespace.
        refs = [c for c in calls if c.startswith("for-each-ref --format=%(refname) ")]
        assert refs == ["for-each-ref --format=%(refname) refs/autoresearch/s1/"]
        assert len([c for c in calls if c.startswith("config ")]) == 1
    # The keep carried the branch's highest run to its new commit: the discard that follows
    # reads no trailers.
    assert not [c for c in discard if "trailers:key=Autoresearch-Run,valueonly)%x1e" in c]
    head = git(repo, "rev-parse", "HEAD")
    base = git(repo, "rev-parse", "main")
    assert (repo / ".git" / "autoresearch" / "branch-runs").read_text() == \
        f"{base}..autoresearch/s1 {head} 2\n"


def test_run_numbers_never_repeat_whatever_the_cache_holds(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "lower", "--metric", "90")
    cache = repo / ".git" / "autoresearch" / "branch-runs"
    head = git(repo, "rev-parse", "HEAD")
    base = git(repo, "rev-parse", "main")
    # A line for another tip, a torn line, a line for another range: each is ignored, the
    # trailers are read again (the keep's Autoresearch-Run: 2 counts) and the line rewritten.
    for stale in (f"{base}..autoresearch/s1 {base} 0\n", "torn", f"x..y {head} 0\n"):
        cache.write_text(stale)
        ledger = repo / ".auto" / "log.jsonl"
        lines = ledger.read_text().splitlines(keepends=True)
        ledger.write_text("".join(lines[:-1]))  # the keep's ledger line is lost, and the
        git(repo, "update-ref", "-d", "refs/autoresearch/s1/state")  # state ref with it
        write(repo / "value.txt", "95\n")
        res = ar(repo, "discard", "-d", "worse", "--json").json()
        assert res["run"] == 3
        assert cache.read_text() == f"{base}..autoresearch/s1 {head} 2\n"
        # put the ledger back as it was, for the next round
        ledger.write_text("".join(lines))
        git(repo, "update-ref", "-d", "refs/autoresearch/s1/attempts/3")


def test_refs_read_once_are_read_again_after_a_ref_is_written(repo: Path) -> None:
    top = Repo.discover(repo)
    head = git(repo, "rev-parse", "HEAD")
    ns = "refs/autoresearch/x/"
    assert top.for_each_ref(ns + "attempts/", within=ns) == []
    top.update_ref(ns + "attempts/2", head, "", "test")
    assert top.for_each_ref(ns + "attempts/", within=ns) == [ns + "attempts/2"]
    assert top.for_each_ref(ns + "scope/", within=ns) == []
    # Another process writes a ref: read again once a lock is taken (Session.lock, .shared).
    git(repo, "update-ref", ns + "scope/2", head)
    top.forget_refs()
    assert top.for_each_ref(ns + "scope/", within=ns) == [ns + "scope/2"]


def test_configuration_read_once_is_read_again_after_git_config(repo: Path) -> None:
    top = Repo.discover(repo)
    assert top.ignores_case() is False
    top.run("config", "core.ignorecase", "true")
    assert top.ignores_case() is True
    assert top.commit_customizations() == []


def test_named_blobs_are_read_in_one_call_in_order_with_none_for_what_is_no_blob(
        repo: Path) -> None:
    """One ``cat-file --batch`` answers for several ``<rev>:<path>`` names: each blob's bytes
    in the order asked, None for a path the commit lacks, a folder, or a rev that names
    nothing, and the names after those still read right."""
    from git_autoresearch.git.objects import cat_named_blobs

    found = cat_named_blobs(Repo.discover(repo), [
        "HEAD:value.txt", "HEAD:absent.txt", "HEAD:src", "refs/heads/nothing:value.txt",
        "HEAD:src/lib.py"])
    assert found == [b"100\n", None, None, None, b"def f():\n    return 1\n"]
    assert cat_named_blobs(Repo.discover(repo), []) == []

"""The answers kept of one commit (git.facts): read of git once, then of the file, never of a
file that is torn, of another commit or of another writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_autoresearch.git.facts import CommitFacts


def asked(path: Path, commit: str, question: str, value: object) -> tuple[object, int]:
    calls = []

    def read() -> object:
        calls.append(1)
        return value

    return CommitFacts(path, commit, "1.0").answer(question, read), len(calls)


def test_an_answer_is_read_once_then_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "scratch" / "head-facts"
    assert asked(path, "a" * 40, "q", ["x", "y"]) == (["x", "y"], 1)
    assert asked(path, "a" * 40, "q", "other") == (["x", "y"], 0)
    assert asked(path, "a" * 40, "r", None) == (None, 1)
    assert asked(path, "a" * 40, "r", 5) == (None, 0)  # (None is an answer too)
    assert asked(path, "a" * 40, "q", "other") == (["x", "y"], 0)


@pytest.mark.parametrize("text", [
    "{torn", "[]", json.dumps({"commit": "b" * 40, "made_by": "1.0", "facts": {"q": 1}}),
    json.dumps({"commit": "a" * 40, "made_by": "0.9", "facts": {"q": 1}}),
    json.dumps({"commit": "a" * 40, "made_by": "1.0", "facts": [1]})])
def test_a_file_of_another_commit_or_writer_or_torn_answers_nothing(tmp_path: Path,
                                                                     text: str) -> None:
    path = tmp_path / "head-facts"
    path.write_text(text)
    assert asked(path, "a" * 40, "q", 2) == (2, 1)
    assert asked(path, "a" * 40, "q", 3) == (2, 0)


def test_a_file_that_cannot_be_written_leaves_the_answer_read(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    path = blocked / "head-facts"  # (its folder is a file)
    assert asked(path, "a" * 40, "q", 7) == (7, 1)
    assert asked(path, "a" * 40, "q", 8) == (8, 1)

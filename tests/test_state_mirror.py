"""The state ref's copy of the session files: compared by content, and hook files that are
symbolic links kept as links."""

from __future__ import annotations

from pathlib import Path

from conftest import Tool, git, start_args, write


def test_an_edit_that_keeps_the_ledger_length_is_mirrored(repo: Path, ar: Tool) -> None:
    """A hand fix of one character leaves the ledger as long as the state ref's copy: doctor
    sees the difference, --fix mirrors it once and for all, and after .auto/ is lost resume
    brings back the fixed text, not the old one."""
    ar(repo, *start_args())
    write(repo / "value.txt", "200\n")
    ar(repo, "run", "-d", "a wrong guess")
    ledger = repo / ".auto" / "log.jsonl"
    fixed = ledger.read_bytes().replace(b"a wrong guess", b"a wrong guest")
    assert len(fixed) == ledger.stat().st_size
    ledger.write_bytes(fixed)
    assert ar(repo, "doctor", expect=3).out == \
        "- the state ref does not hold the current session files [fixable with --fix]\n"
    assert ar(repo, "doctor", "--fix").out == \
        "- the state ref does not hold the current session files [fixed]\n"
    assert ar(repo, "doctor").out == "no problems found\n"
    git(repo, "clean", "-xfdq")
    ar(repo, "resume")
    assert ledger.read_bytes() == fixed


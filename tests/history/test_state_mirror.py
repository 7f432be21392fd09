"""The state ref's copy of the session files: compared by content, and hook files that are
symbolic links kept as links."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, commit_all, git, start_args, write
from hypothesis import given, settings
from hypothesis import strategies as st

from git_autoresearch.history import state_ref


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



def test_an_edit_in_an_early_piece_of_a_long_ledger_is_mirrored(repo: Path, ar: Tool) -> None:
    """The state ref holds the ledger in pieces of 1,000 lines, and a mirror matches the whole
    pieces it mirrored before at their place instead of splitting the ledger into lines: a
    fix of one character in the first piece, which changes no length, is mirrored all the
    same, and the pieces after it stay as they were."""
    ar(repo, *start_args())
    ledger = repo / ".auto" / "log.jsonl"
    with ledger.open("a") as fh:
        for n in range(2, 2600):
            fh.write(json.dumps({"run": n, "commit": "abc1234", "metric": 100 + n % 7,
                                 "status": "discard", "description": f"idea {n}"}) + "\n")
    ar(repo, "doctor", "--fix")
    ref = "refs/autoresearch/s1/state"
    pieces = [git(repo, "rev-parse", f"{ref}:log/{n:05d}.jsonl") for n in range(3)]
    fixed = ledger.read_bytes().replace(b'"idea 500"', b'"idea 5O0"')
    assert len(fixed) == ledger.stat().st_size
    ledger.write_bytes(fixed)
    assert ar(repo, "status", "--json").json()["warnings"] == []  # (no line lost)
    ar(repo, "doctor", "--fix")
    lines = fixed.splitlines(keepends=True)
    for n in range(3):
        assert git(repo, "cat-file", "blob", f"{ref}:log/{n:05d}.jsonl") + "\n" == \
            b"".join(lines[n * 1000:(n + 1) * 1000]).decode()
    assert git(repo, "rev-parse", f"{ref}:log/00000.jsonl") != pieces[0]
    assert [git(repo, "rev-parse", f"{ref}:log/{n:05d}.jsonl") for n in (1, 2)] == pieces[1:]
    assert ar(repo, "doctor").out == "no problems found\n"


# A ledger's lines for the split into pieces: JSON-ish text ended by each kind of line ending
# bytes.splitlines knows (and a last line with none).
SPLIT_LINE = st.tuples(st.sampled_from([b"{}", b'{"run":1}', b"x", b"", b"  "]),
                       st.sampled_from([b"\n", b"\r\n", b"\r", b"\n"]))
LEDGER = st.lists(SPLIT_LINE, max_size=14).map(lambda ls: b"".join(a + b for a, b in ls))
EDIT = st.one_of(st.tuples(st.just("append"), LEDGER),
                 st.tuples(st.just("byte"), st.floats(0, 1), st.sampled_from(b"x\n\r{")),
                 st.tuples(st.just("cut"), st.floats(0, 1)),
                 st.tuples(st.just("insert"), st.floats(0, 1), LEDGER))


def _edited(data: bytes, edit: tuple[Any, ...]) -> bytes:
    if edit[0] == "append":
        return data + bytes(edit[1])
    at = int(edit[1] * len(data))
    if edit[0] == "byte":
        return data[:at] + bytes([edit[2]]) + data[at + 1:] if data else data
    return data[:at] if edit[0] == "cut" else data[:at] + bytes(edit[2]) + data[at:]


@settings(max_examples=400, deadline=None)
@given(LEDGER, st.lists(EDIT, min_size=1, max_size=5))
def test_the_pieces_matched_at_their_place_are_the_split_of_the_whole_ledger(
        first: bytes, edits: list[tuple[Any, ...]]) -> None:
    """Whatever became of the ledger since the last mirror (lines appended, a byte changed,
    the file cut or lines put in its middle), the pieces a mirror takes from the cache and
    those it splits after them are the pieces of the whole ledger split into lines."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_ref, "LINES_PER_PIECE", 3)
        data, known = first, dict[int, list[Any]]()
        for edit in edits:
            same, rest = state_ref._pieces(data, known)
            whole = state_ref._pieces(data, {})[1]
            assert rest == whole[same:]
            assert [known[n][0] for n in range(same)] == [len(p) for p in whole[:same]]
            assert [known[n][2] for n in range(same)] == \
                [state_ref._digest(p) for p in whole[:same]]
            known = {n: [len(p), "blob", state_ref._digest(p)] for n, p in enumerate(whole)}
            data = _edited(data, edit)


def test_a_cache_entry_of_another_split_is_not_taken() -> None:
    """A cache entry whose size and digest match the ledger at its place but whose piece is
    not one the whole split makes there (fewer lines, or lines a carriage return ends) is
    passed over: the ledger is split from there, as it would be whole."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_ref, "LINES_PER_PIECE", 3)
        data = b"a\nb\nc\nd\ne\nf\ng\n"
        whole = state_ref._pieces(data, {})[1]
        assert whole == [b"a\nb\nc\n", b"d\ne\nf\n", b"g\n"]

        def entry(piece: bytes) -> list[Any]:
            return [len(piece), "blob", state_ref._digest(piece)]

        assert state_ref._pieces(data, {0: entry(whole[0]), 1: entry(whole[1])}) == \
            (1, whole[1:])
        assert state_ref._pieces(data, {0: entry(b"a\nb\n"), 1: entry(b"c\nd\n")}) == \
            (0, whole)
        carriage = b"a\rb\nc\nd\ne\n"
        assert state_ref._pieces(carriage, {0: entry(b"a\rb\nc\nd\n"), 1: entry(b"e\n")}) \
            == (0, state_ref._pieces(carriage, {})[1])


def state_pieces(repo: Path) -> bytes:
    """The ledger as the state ref holds it: its pieces, one after the other."""
    names = git(repo, "ls-tree", "--name-only", "refs/autoresearch/s1/state", "log/").split()
    return b"".join(subprocess.run(["git", "cat-file", "blob", f"refs/autoresearch/s1/state:{n}"],
                                   cwd=repo, check=True, capture_output=True).stdout
                    for n in names)


@pytest.mark.parametrize("cache", ['{"pieces": {"0": 5}}', '{"pieces": {"0": ["12", "b", "c"]}}',
                                   '{"pieces": {"x": [1, "b", "c"]}}', '{"pieces": [1, 2]}',
                                   '{"pieces": {"0": [1, "b", "c"], "2": [1, "b", "c"]}}',
                                   '{"commit": 5}', "[]"])
def test_a_mirror_cache_of_another_shape_is_read_as_none(repo: Path, ar: Tool,
                                                         cache: str) -> None:
    """The mirror's cache in the scratch folder (state-cache.json) edited by hand, by an agent
    or by another version: read as no cache, so the run records and mirrors as ever, where it
    ended in an internal error (and doctor --fix in the same one)."""
    ar(repo, *start_args())
    write(repo / ".git" / "autoresearch" / "state-cache.json", cache)
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "after the cache was edited", "--json").json()
    assert record["status"] == "keep" and record["warnings"] == []
    assert state_pieces(repo) == (repo / ".auto" / "log.jsonl").read_bytes()
    assert ar(repo, "doctor").out == "no problems found\n"


def test_a_mirror_cache_that_claims_more_than_the_state_ref_holds_is_not_believed(
        repo: Path, ar: Tool) -> None:
    """Cache entries for pieces the state ref does not hold (the cache edited by hand, for the
    ref it names at the commit it holds) made every mirror refuse the ledger as shorter than
    the state ref, and doctor --fix could not fix it: the refusal is checked against the
    ref's own pieces, and the cache dropped (a ledger that did lose lines is still refused:
    tests/ledger/test_storage.py)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    path = repo / ".git" / "autoresearch" / "state-cache.json"
    cache = json.loads(path.read_text())
    cache["pieces"]["1"] = [5000, "0" * 40, "crc32:00000000"]
    write(path, json.dumps(cache))
    write(repo / "value.txt", "95\n")
    record = ar(repo, "run", "-d", "worse", "--json").json()
    assert record["status"] == "discard" and record["warnings"] == []
    assert state_pieces(repo) == (repo / ".auto" / "log.jsonl").read_bytes()
    assert ar(repo, "doctor").out == "no problems found\n"


def test_a_ledger_edited_shorter_in_place_is_mirrored_not_refused(repo: Path, ar: Tool) -> None:
    """A ledger edited in place to fewer bytes but no fewer lines (a description shortened by
    hand) lost no line: it is mirrored, where every command warned that it lost lines and
    doctor --fix, with none to restore, could not clear it."""
    ar(repo, *start_args())
    for value in ("90", "95"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"a long description of the change to {value}")
    ledger = repo / ".auto" / "log.jsonl"
    ledger.write_bytes(ledger.read_bytes().replace(b"a long description of the change to 95",
                                                   b"to 95"))
    said = ar(repo, "ideas", "add", "an idea").err
    assert "shorter" not in said
    assert state_pieces(repo) == ledger.read_bytes()
    assert ar(repo, "doctor").out == "no problems found\n"


def test_a_kept_run_the_cache_names_but_the_state_ref_lacks_blocks_nothing(
        repo: Path, ar: Tool) -> None:
    """A run number added by hand to the cache's kept runs (one the state ref holds no kept
    line of) refused every run as a lost keep, and doctor --fix could not fix it: a loss the
    cache claims is checked against the ref's own ledger first. A kept line that is lost is
    still refused (tests/ledger/test_storage.py)."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    path = repo / ".git" / "autoresearch" / "state-cache.json"
    cache = json.loads(path.read_text())
    cache["kept"].append(99)
    write(path, json.dumps(cache))
    assert ar(repo, "doctor").out == "no problems found\n"
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "kept again", "--json").json()
    assert record["status"] == "keep" and record["warnings"] == []
    assert state_pieces(repo) == (repo / ".auto" / "log.jsonl").read_bytes()
    assert 99 not in json.loads(path.read_text())["kept"]


def test_doctor_fix_mirrors_afresh_when_the_cache_names_another_blob(
        repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache whose blob id for a piece is another piece's (edited by hand) makes the mirror
    store the wrong piece: doctor finds it, and doctor --fix, whose mirror through the cache
    changed nothing and said it fixed it, mirrors again without the cache."""
    monkeypatch.setattr(state_ref, "LINES_PER_PIECE", 2)
    ar(repo, *start_args())
    for value in ("90", "95", "80"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"to {value}")
    path = repo / ".git" / "autoresearch" / "state-cache.json"
    cache = json.loads(path.read_text())
    cache["pieces"]["0"][1] = cache["pieces"]["1"][1]
    write(path, json.dumps(cache))
    write(repo / "value.txt", "85\n")
    ar(repo, "run", "-d", "to 85")
    ledger = (repo / ".auto" / "log.jsonl").read_bytes()
    assert state_pieces(repo) != ledger
    assert ar(repo, "doctor", expect=3).out == \
        "- the state ref does not hold the current session files [fixable with --fix]\n"
    assert ar(repo, "doctor", "--fix").out == \
        "- the state ref does not hold the current session files [fixed]\n"
    assert state_pieces(repo) == ledger
    assert ar(repo, "doctor").out == "no problems found\n"


@pytest.mark.parametrize("how", ["a run appended since", "the cache gone"])
def test_a_line_lost_from_the_middle_is_never_mirrored_away(repo: Path, ar: Tool,
                                                            how: str) -> None:
    """A line deleted from the middle of the ledger, then a run recorded (its line longer than
    the one lost), or the mirror's cache lost: the mirror took the ledger for no shorter, or
    knew nothing, and the state ref's tip lost the line without a word. Now the ref itself is
    asked whenever the ledger is not what was last mirrored with lines after it: the mirror
    refuses, and doctor --fix puts the line back."""
    ar(repo, *start_args())
    for value in ("120", "130"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"to {value}")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lost = next(n for n, line in enumerate(lines) if b'"type":"incumbent"' in line)
    ledger.write_bytes(b"".join(lines[:lost] + lines[lost + 1:]))
    if how == "the cache gone":
        (repo / ".git" / "autoresearch" / "state-cache.json").unlink()
        said = ar(repo, "ideas", "add", "an idea").err
    else:
        write(repo / "value.txt", "90\n")
        said = "\n".join(ar(repo, "run", "-d", "to 90", "--json").json()["warnings"])
    assert "lost lines that refs/autoresearch/s1/state holds" in said
    assert lines[lost] in state_pieces(repo).splitlines(keepends=True)
    ar(repo, "doctor", "--fix")
    assert ledger.read_bytes().splitlines(keepends=True)[:len(lines)] == lines
    assert state_pieces(repo) == ledger.read_bytes()
    assert ar(repo, "doctor").out == "no problems found\n"


@pytest.mark.parametrize("how", ["carriage returns", "an event after it", "a repair before"])
def test_a_lost_event_line_is_never_mirrored_away(repo: Path, ar: Tool, how: str) -> None:
    """An event line (an audit's) lost from the ledger: with every line given a carriage
    return, with another event line appended after it (no edit in place: another time), or
    after a repair told the mirror the ledger was rewritten on purpose (that told, it holds
    for the bytes it was told of only). The mirror refuses, where the state ref's tip lost
    the line without a word."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    ledger = repo / ".auto" / "log.jsonl"
    if how == "a repair before":
        from git_autoresearch.git import Repo

        state_ref.forget(Repo.discover(repo), ledger)
        ar(repo, "doctor", "--fix")  # (nothing to mirror: the mark stays)
    ar(repo, "audit", "2", "--samples", "1")
    lines = ledger.read_bytes().splitlines(keepends=True)
    assert b'"type":"audit"' in lines[-1]
    if how == "carriage returns":
        ledger.write_bytes(b"".join(line.rstrip(b"\n") + b"\r\n" for line in lines[:-1]))
        said = ar(repo, "ideas", "add", "an idea").err
    elif how == "an event after it":
        ledger.write_bytes(b"".join(lines[:-1]))
        said = ar(repo, "audit", "2", "--samples", "1").err
    else:
        ledger.write_bytes(b"".join(lines[:-1]))
        said = ar(repo, "ideas", "add", "an idea").err
    assert "lost lines that refs/autoresearch/s1/state holds" in said
    assert lines[-1] in state_pieces(repo).splitlines(keepends=True)


def test_a_state_ref_deleted_and_pruned_is_mirrored_again(repo: Path, ar: Tool) -> None:
    """The state ref deleted by hand and its objects pruned leave the mirror's cache naming
    objects git no longer has: the next run mirrors afresh instead of failing at every run
    (and doctor --fix with it), and resume restores the session from it."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "kept")
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/state")
    git(repo, "gc", "-q", "--prune=now")
    write(repo / "value.txt", "95\n")
    record = ar(repo, "run", "-d", "worse", "--json").json()
    assert record["status"] == "discard" and record["warnings"] == []
    ledger = (repo / ".auto" / "log.jsonl").read_bytes()
    assert state_pieces(repo) == ledger
    assert ar(repo, "doctor").out == "no problems found\n"
    git(repo, "clean", "-xfdq")
    ar(repo, "resume")
    assert (repo / ".auto" / "log.jsonl").read_bytes() == ledger


def linked_hook(repo: Path, tmp_path: Path) -> Path:
    """A committed hook script, scripts/after-hook.sh (it writes ``tmp_path/fired``), and
    .auto/hooks/after.sh, a relative symbolic link to it; the link."""
    write(repo / "scripts" / "after-hook.sh", f"#!/bin/sh\necho fired >> {tmp_path}/fired\n",
          0o755)
    commit_all(repo, "a hook script")
    link = repo / ".auto" / "hooks" / "after.sh"
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("../../scripts/after-hook.sh", link)
    return link


def test_a_symlinked_hook_is_mirrored_as_a_link_and_restored_by_resume(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """git clean -xfd removes .auto/, link and all; resume puts the link back as a link (to the
    same target), and the hook fires again."""
    ar(repo, *start_args("--scope", "value.txt"))
    link = linked_hook(repo, tmp_path)
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    assert (tmp_path / "fired").read_text() == "fired\n"
    tree = git(repo, "ls-tree", "refs/autoresearch/s1/state", "hooks/after.sh")
    assert tree.split()[0] == "120000"
    assert git(repo, "show", "refs/autoresearch/s1/state:hooks/after.sh") == \
        "../../scripts/after-hook.sh"
    git(repo, "clean", "-xfdq")
    assert not link.is_symlink()
    actions = ar(repo, "resume", "--json").json()["actions"]
    assert "restored .auto/hooks/after.sh" in actions
    assert link.is_symlink() and os.readlink(link) == "../../scripts/after-hook.sh"
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "eighty")
    assert (tmp_path / "fired").read_text() == "fired\nfired\n"
    assert ar(repo, "doctor").out == "no problems found\n"


def test_a_symlinked_hook_folder_is_mirrored_as_a_link(repo: Path, ar: Tool,
                                                       tmp_path: Path) -> None:
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "hookdir" / "notify.sh", f"#!/bin/sh\necho fired >> {tmp_path}/fired\n", 0o755)
    commit_all(repo, "hooks kept in the project")
    (repo / ".auto" / "hooks").mkdir()
    os.symlink("../../hookdir", repo / ".auto" / "hooks" / "after.d")
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    assert (tmp_path / "fired").read_text() == "fired\n"
    tree = git(repo, "ls-tree", "refs/autoresearch/s1/state", "hooks/after.d")
    assert tree.split()[0] == "120000"
    git(repo, "clean", "-xfdq")
    ar(repo, "resume")
    assert os.readlink(repo / ".auto" / "hooks" / "after.d") == "../../hookdir"


def test_doctor_sees_a_hook_the_state_ref_does_not_hold(repo: Path, ar: Tool,
                                                        tmp_path: Path) -> None:
    """A hook added by hand since the last mirror is a difference doctor names, and --fix
    mirrors it."""
    ar(repo, *start_args("--scope", "value.txt"))
    linked_hook(repo, tmp_path)
    write(repo / ".auto" / "hooks" / "before.sh", "#!/bin/sh\n:\n", 0o755)
    assert ar(repo, "doctor", expect=3).out == \
        "- the state ref does not hold the current session files [fixable with --fix]\n"
    ar(repo, "doctor", "--fix")
    assert ar(repo, "doctor").out == "no problems found\n"
    assert git(repo, "ls-tree", "--name-only", "refs/autoresearch/s1/state", "hooks/") == \
        "hooks/after.sh\nhooks/before.sh"


def test_a_hook_link_to_nothing_is_named_when_its_stage_fires(repo: Path, ar: Tool) -> None:
    """A link whose target is gone (a script that was never committed, lost to git clean) is
    said, not silently skipped."""
    ar(repo, *start_args("--scope", "value.txt"))
    (repo / ".auto" / "hooks").mkdir()
    os.symlink("../../scripts/gone.sh", repo / ".auto" / "hooks" / "after.sh")
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "ninety", "--json").json()
    assert record["warnings"] == ["hook .auto/hooks/after.sh is a symbolic link to "
                                  "../../scripts/gone.sh, which does not exist: it was not run"]


def test_a_hook_link_to_an_untracked_file_is_told_when_mirrored(repo: Path, ar: Tool) -> None:
    """The state ref keeps the link, not what it points at: a target git does not track
    would be lost to git clean -xfd, and the run says so."""
    write(repo / "scratch" / "hook.sh", "#!/bin/sh\n:\n", 0o755)
    ar(repo, *start_args("--force", "--scope", "value.txt"))
    (repo / ".auto" / "hooks").mkdir()
    os.symlink("../../scratch/hook.sh", repo / ".auto" / "hooks" / "after.sh")
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "ninety", "--json").json()
    assert record["warnings"] == [
        "hook link .auto/hooks/after.sh -> ../../scratch/hook.sh points at a file git does not "
        "track: the state ref keeps the link, not the file (commit it, or make the hook a file)"]
    commit_all(repo, "the hook script")  # (by hand: the next run says HEAD is no keep's)
    write(repo / "value.txt", "80\n")
    warnings = ar(repo, "run", "-d", "eighty", "--json").json()["warnings"]
    assert [w for w in warnings if "hook link" in w] == []


def test_notes_edited_between_runs_are_no_problem_and_resume_mirrors_them(
        repo: Path, ar: Tool) -> None:
    """An agent edits prompt.md and ideas.md between runs: doctor notes that the state ref
    holds them as they were (the next run mirrors them) and exits 0; resume mirrors them."""
    ar(repo, *start_args())
    prompt = repo / ".auto" / "prompt.md"
    write(prompt, prompt.read_text() + "a note of mine\n")
    done = ar(repo, "doctor", "--json").json()
    assert done["findings"] == []
    assert any("prompt.md" in note and "the next recorded run mirrors" in note
               for note in done["notices"]), done
    assert "the state ref holds prompt.md as a command last mirrored it: the next recorded " \
        "run mirrors it" in ar(repo, "doctor").err
    ar(repo, "resume")
    assert git(repo, "show", "refs/autoresearch/s1/state:prompt.md").endswith("a note of mine")
    assert ar(repo, "doctor").out == "no problems found\n"
    assert ar(repo, "doctor").err == ""

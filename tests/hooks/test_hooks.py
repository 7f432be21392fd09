"""The hook contract (README, "Hooks") through real runs, and every example hook."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FIXTURES_DIR,
    Tool,
    assert_dies,
    check_document,
    git,
    ledger_lines,
    runs,
    start_args,
    write,
)

SHELL_DUMP = "#!/bin/sh\ncat > {out}\n"


def hook(top: Path, name: str, body: str, mode: int = 0o755) -> Path:
    return write(top / ".auto" / "hooks" / name, body, mode)


def hook_lines(top: Path) -> list[dict[str, Any]]:
    return [line for line in ledger_lines(top) if line.get("type") == "hook"]


@pytest.fixture
def session(repo: Path, ar: Tool) -> Path:
    ar(repo, *start_args())
    return repo


def test_payloads_have_the_seed_fields_and_values(session: Path, ar: Tool, tmp_path: Path) -> None:
    hook(session, "before.sh", SHELL_DUMP.format(out=tmp_path / "before.json"))
    hook(session, "after.sh", SHELL_DUMP.format(out=tmp_path / "after.json"))
    write(session / "value.txt", "90\n")
    ar(session, "run", "-d", "ninety", "--asi", "hypothesis=smaller")
    write(session / "value.txt", "95\n")
    ar(session, "run", "-d", "ninety-five", "--asi", "rollback_reason=worse")
    before = json.loads((tmp_path / "before.json").read_text())
    after = json.loads((tmp_path / "after.json").read_text())
    assert (tmp_path / "before.json").read_text().count("\n") == 1, "exactly one JSON line"
    shape_before = json.loads((FIXTURES_DIR / "hook-before-payload.json").read_text())
    shape_after = json.loads((FIXTURES_DIR / "hook-after-payload.json").read_text())
    # The seed's fields, and the document's schema (git-autoresearch:hook-before/1).
    assert set(check_document(before)) == {"schema", *shape_before}
    assert set(check_document(after)) == {"schema", *shape_after}
    assert set(shape_before["session"]) <= set(before["session"])
    # Beside the seed's fields, a run carries the sequential rule's decision.
    assert before["last_run"].pop("decision")["verdict"] == "better"
    assert after["run_entry"].pop("decision")["verdict"] == "worse"
    seed_run = ("run", "status", "metric", "description", "asi")
    assert {k: before["last_run"][k] for k in seed_run} == {
        "run": 2, "status": "keep", "metric": 90, "description": "ninety",
        "asi": {"hypothesis": "smaller"}}
    assert (before["event"], before["cwd"], before["next_run"]) == ("before", str(session), 3)
    assert before["session"] == {
        "metric_name": "score", "metric_unit": "", "direction": "lower",
        "baseline_metric": 100, "best_metric": 90, "run_count": 2, "goal": "lower the value",
        "session_id": "s1", "segment_run_count": 2}
    assert after["event"] == "after"
    assert {k: after["run_entry"][k] for k in seed_run} == {
        "run": 3, "status": "discard", "metric": 95, "description": "ninety-five",
        "asi": {"rollback_reason": "worse"}}
    assert after["session"]["run_count"] == 3 and after["session"]["best_metric"] == 90


def test_fresh_session_has_null_fields(repo: Path, ar: Tool, tmp_path: Path) -> None:
    ar(repo, *start_args("--no-baseline"))
    hook(repo, "before.sh", SHELL_DUMP.format(out=tmp_path / "b.json"))
    ar(repo, "measure")
    payload = json.loads((tmp_path / "b.json").read_text())
    assert payload["last_run"] is None and payload["next_run"] == 1
    assert payload["session"]["baseline_metric"] is None
    assert payload["session"]["best_metric"] is None


def test_steer_is_printed_and_returned(session: Path, ar: Tool) -> None:
    hook(session, "after.sh", "#!/bin/sh\necho 'try the other loop'\n")
    res = ar(session, "run", "-d", "x")
    assert "==== steer from after hooks ====\ntry the other loop\n==== end of steer ====" \
        in res.out
    assert ar(session, "run", "-d", "y", "--json").json()["steer"] == "try the other loop"


def test_steer_is_cut_at_8_kib(session: Path, ar: Tool) -> None:
    hook(session, "after.sh", "#!/bin/sh\nyes 'line of output' | head -c 1048576\n")
    record = ar(session, "run", "-d", "x", "--json").json()
    steer = record["steer"]
    body, marker = steer.rsplit("\n[steer truncated", 1)
    assert len(body.encode()) <= 8192
    assert body.endswith("line of output")
    assert "1048576 bytes" in marker
    assert hook_lines(session)[-1]["stdout_bytes"] == 1048576


def test_cut_at_utf8_boundary_without_newlines(session: Path, ar: Tool) -> None:
    hook(session, "after.sh", "#!/usr/bin/env python3\nprint('é' * 10000, end='')\n")
    steer = ar(session, "run", "-d", "x", "--json").json()["steer"]
    body = steer.split("\n[steer truncated")[0]
    assert set(body) == {"é"} and len(body.encode()) <= 8192


def test_failing_hook_gives_error_steer_and_run_is_recorded(session: Path, ar: Tool) -> None:
    hook(session, "before.sh", "#!/bin/sh\necho partial\necho boom >&2\nexit 3\n")
    write(session / "value.txt", "120\n")
    record = ar(session, "run", "-d", "x", "--json").json()
    assert record["status"] == "discard"
    assert "[before hook before.sh failed with exit code 3]" in record["steer"]
    assert "boom" in record["steer"] and "partial" in record["steer"]
    assert (session / "value.txt").read_text() == "100\n"
    line = hook_lines(session)[-1]
    assert {k: line[k] for k in ("stage", "exit_code", "stdout_bytes", "timed_out")} == \
        {"stage": "before", "exit_code": 3, "stdout_bytes": 8, "timed_out": False}
    assert isinstance(line["duration_ms"], int)
    assert record["hooks"] == [{"stage": "before", "hook": "before.sh", "exit_code": 3,
                                "timed_out": False}]


@pytest.mark.parametrize("command", [["run"], ["discard"], ["crash"]])
def test_the_run_document_lists_the_after_hooks_too(session: Path, ar: Tool,
                                                    command: list[str]) -> None:
    """The run document's ``hooks`` is every hook fired around the run: the after hooks,
    which fire once the ledger line is written, were missing from it (a failing one showed
    only in the steer text); the ledger line lists the before hooks, as it was written."""
    hook(session, "before.sh", "#!/bin/sh\nexit 0\n")
    hook(session, "after.sh", "#!/bin/sh\necho boom >&2\nexit 5\n")
    write(session / "value.txt", "120\n")
    record = ar(session, *command, "-d", "x", "--json").json()
    fired = [{"stage": "after", "hook": "after.sh", "exit_code": 5, "timed_out": False}]
    if command == ["run"]:
        fired.insert(0, {"stage": "before", "hook": "before.sh", "exit_code": 0,
                         "timed_out": False})
    assert record["hooks"] == fired
    assert runs(session)[-1].get("hooks", []) == fired[:-1]
    assert "[after hook after.sh failed with exit code 5]" in record["steer"]


def test_hanging_hook_is_killed_at_the_limit(session: Path, ar: Tool,
                                             monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("GIT_AUTORESEARCH_HOOK_TIMEOUT", "1")
    pidfile = tmp_path / "pid"
    hook(session, "after.sh", f"#!/bin/sh\necho $$ > {pidfile}\nsleep 1000\n")
    write(session / "value.txt", "120\n")
    started = time.monotonic()
    record = ar(session, "run", "-d", "x", "--json").json()
    assert time.monotonic() - started < 10
    assert "timed out after 1s" in record["steer"]
    assert hook_lines(session)[-1]["timed_out"] is True
    assert runs(session)[-1]["status"] == "discard"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_background_child_holding_stdout_does_not_block(session: Path, ar: Tool,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setenv("GIT_AUTORESEARCH_HOOK_TIMEOUT", "20")
    hook(session, "after.sh", f"#!/bin/sh\n(sleep 1000; echo late) &\necho $! > {tmp_path}/c\n"
                              "echo quick steer\nexit 0\n")
    started = time.monotonic()
    record = ar(session, "run", "-d", "x", "--json").json()
    assert time.monotonic() - started < 8
    assert record["steer"] == "quick steer"
    assert_dies(int((tmp_path / "c").read_text()), "the hook's background child", seconds=0)


def test_non_executable_hook_warns_and_is_not_run(session: Path, ar: Tool, tmp_path: Path) -> None:
    hook(session, "after.sh", f"#!/bin/sh\ntouch {tmp_path}/ran\n", mode=0o644)
    record = ar(session, "run", "-d", "x", "--json").json()
    assert not (tmp_path / "ran").exists()
    assert record["warnings"] == ["hook .auto/hooks/after.sh is not executable and was not run "
                                  "(chmod +x .auto/hooks/after.sh)"]
    res = ar(session, "run", "-d", "y")
    assert "chmod +x .auto/hooks/after.sh" in res.err
    assert hook_lines(session) == []


def test_a_hooks_folder_that_cannot_be_read_is_said_and_the_keep_stands(
        session: Path, ar: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """.auto/hooks/ that this user cannot read (mode 000, another user's): each stage says
    its hooks were not run, and the keep is recorded and ends with exit 0, where it ended in
    an internal error (exit 1) after it was committed and recorded, leaving doctor an
    interrupted keep. (Root reads every folder: the kernel's EACCES is played in-process.)"""
    hook(session, "after.sh", f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    hooks = session / ".auto" / "hooks"

    def refused(real: Any, listing: bool) -> Any:
        def call(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            where = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
            if where.startswith(f"{hooks}/") or listing and where == str(hooks):
                raise PermissionError(13, "Permission denied", where)
            return real(path, *args, **kwargs)
        return call

    for name, listing in (("stat", False), ("lstat", False), ("scandir", True),
                          ("listdir", True)):
        monkeypatch.setattr(os, name, refused(getattr(os, name), listing))
    write(session / "value.txt", "50\n")
    record = ar(session, "keep", "-d", "kept", "--metric", "50", "--json").json()
    assert record["status"] == "keep" and not (tmp_path / "ran").exists()
    assert f"the after hooks in {hooks} cannot be read (Permission denied): none was run" \
        in record["warnings"]
    monkeypatch.undo()
    assert "interrupted" not in ar(session, "doctor", expect=None).out


def test_crlf_first_line_warns(session: Path, ar: Tool) -> None:
    hook(session, "before.sh", "#!/bin/sh\r\necho hi\r\n")
    record = ar(session, "run", "-d", "x", "--json").json()
    assert any("carriage return" in w for w in record["warnings"])


def test_stage_folders_run_in_name_order_after_main_hook(session: Path, ar: Tool) -> None:
    hook(session, "after.sh", "#!/bin/sh\necho main\n")
    hook(session, "after.d/20-second", "#!/bin/sh\necho second\n")
    hook(session, "after.d/10-first", "#!/bin/sh\necho first\n")
    hook(session, "after.d/30-off", "#!/bin/sh\necho off\n", mode=0o644)
    record = ar(session, "run", "-d", "x", "--json").json()
    assert record["steer"] == "main\nfirst\nsecond"
    assert [h["hook"] for h in hook_lines(session)] == ["after.sh", "after.d/10-first",
                                                         "after.d/20-second"]


def test_hooks_fire_for_measure_keep_discard_crash_and_by_hand(session: Path, ar: Tool,
                                                               tmp_path: Path) -> None:
    log = tmp_path / "fired"
    body = ("#!/bin/sh\npython3 -c 'import json, sys; "
            "print(json.loads(sys.stdin.readline())[\"event\"])' >> " f"{log}\n")
    hook(session, "before.sh", body)
    hook(session, "after.sh", body)
    ar(session, "measure")
    ar(session, "discard", "-d", "d")
    ar(session, "crash", "-d", "c")
    write(session / "value.txt", "1\n")
    ar(session, "keep", "-d", "k", "--metric", "1")
    ar(session, "hook", "before")
    ar(session, "hook", "after")
    assert log.read_text().split() == ["before", "after", "after", "after", "before", "after"]
    ar(session, "measure")
    assert ar(session, "doctor").code == 0, "the state ref holds the hook lines of measure"


def test_a_keep_or_discard_of_a_measurement_lists_the_before_hooks_that_fired_for_it(
        session: Path, ar: Tool) -> None:
    hook(session, "before.sh", "#!/bin/sh\n:\n")
    hook(session, "after.sh", "#!/bin/sh\n:\n")
    write(session / "value.txt", "90\n")
    ar(session, "measure")
    kept = ar(session, "keep", "-d", "k", "--json").json()
    assert [(h["stage"], h["hook"]) for h in kept["hooks"]] == [("before", "before.sh"),
                                                                ("after", "after.sh")]
    assert [h["stage"] for h in runs(session)[-1]["hooks"]] == ["before"]
    write(session / "value.txt", "500\n")
    ar(session, "measure")
    ar(session, "discard", "-d", "d")
    assert [h["stage"] for h in runs(session)[-1]["hooks"]] == ["before"]
    ar(session, "discard", "-d", "nothing measured")
    assert runs(session)[-1]["hooks"] == [], "no measurement: no before hook fired"


def test_hooks_and_modes_survive_reverts(session: Path, ar: Tool) -> None:
    a = hook(session, "before.d/10-x", "#!/bin/sh\n:\n", mode=0o750)
    b = hook(session, "after.sh", "#!/bin/sh\n:\n", mode=0o700)
    for value in ("120", "x"):
        write(session / "value.txt", value + "\n")
        ar(session, "run", "-d", value)
    assert oct(a.stat().st_mode & 0o777) == oct(0o750)
    assert oct(b.stat().st_mode & 0o777) == oct(0o700)
    assert a.read_text() == "#!/bin/sh\n:\n"


# --- the examples -------------------------------------------------------------------------


def install(top: Path, ar: Tool, name: str) -> Path:
    out = ar(top, "hooks", "install", name, "--json").json()
    path: Path = top / out["installed"][0]["path"]
    assert os.access(path, os.X_OK)
    return path


def test_hooks_list_names_every_example(repo: Path, ar: Tool) -> None:
    listed = ar(repo, "hooks", "list", "--json").json()["hooks"]
    assert {(e["stage"], e["name"]) for e in listed} == {
        ("before", "anti-thrash"), ("before", "context-rotation"), ("before", "idea-rotator"),
        ("before", "hypothesis-reflection"), ("before", "external-search"),
        ("before", "qmd-search"), ("after", "auto-tag-winners"),
        ("after", "learnings-journal"), ("after", "notify")}
    assert all(e["summary"] for e in listed)


NEEDS = {"external-search": "AUTORESEARCH_SEARCH_CMD, a search command that takes the query "
                              "as its last argument",
         "hypothesis-reflection": "AUTORESEARCH_LLM_CMD, a command that reads a prompt on stdin "
                                  "and prints an answer",
         "qmd-search": "qmd on PATH, or AUTORESEARCH_QMD_CMD, a search command that takes the "
                       "query last"}


def test_hooks_list_says_which_setting_a_hook_needs(repo: Path, ar: Tool) -> None:
    listed = ar(repo, "hooks", "list", "--json").json()["hooks"]
    assert {e["name"]: e["needs"] for e in listed if e["needs"]} == NEEDS
    text = ar(repo, "hooks", "list").out.splitlines()
    at = next(i for i, line in enumerate(text) if "hypothesis-reflection" in line)
    assert text[at + 1].split() == ["(needs", "AUTORESEARCH_LLM_CMD,", "a", "command", "that",
                                    "reads", "a", "prompt", "on", "stdin", "and", "prints", "an",
                                    "answer;", "until", "then", "it", "does", "nothing)"]


def test_hooks_install_several_and_all(session: Path, ar: Tool) -> None:
    out = ar(session, "hooks", "install", "notify", "hypothesis-reflection", "notify").out
    assert out == ("installed .auto/hooks/after.d/notify.py\n"
                   "installed .auto/hooks/before.d/hypothesis-reflection.py\n"
                   f"  needs {NEEDS['hypothesis-reflection']}; until then it does nothing\n")
    res = ar(session, "hooks", "install", "anti-thrash", "notify", "nope", expect=2)
    assert "no example hook named 'nope'" in res.err
    assert not (session / ".auto" / "hooks" / "before.d" / "anti-thrash.py").exists()
    res = ar(session, "hooks", "install", "--all", expect=3)
    assert "hooks hypothesis-reflection, notify are already installed in " in res.err
    assert res.err.endswith("; pass --force to replace them\n")
    assert not (session / ".auto" / "hooks" / "before.d" / "anti-thrash.py").exists()
    done = ar(session, "hooks", "install", "--all", "--force", "--json").json()["installed"]
    listed = ar(session, "hooks", "list", "--json").json()["hooks"]
    assert [(d["name"], d["path"], d["needs"]) for d in done] == \
        [(e["name"], f".auto/hooks/{e['stage']}.d/{e['name']}.py", e["needs"]) for e in listed]
    assert ar(session, "hooks", "install", "notify", "--all", expect=2).err == \
        "git autoresearch: give hook names or --all, not both\n"
    assert ar(session, "hooks", "install", expect=2).err == (
        "git autoresearch: name the hooks to install (see git autoresearch hooks list), or pass "
        "--all\n")


def test_every_example_installed_is_silent_in_a_plain_run(session: Path, ar: Tool,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A hook without its setting adds no error steer to every run."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    for variable in ("AUTORESEARCH_SEARCH_CMD", "AUTORESEARCH_LLM_CMD", "AUTORESEARCH_QMD_CMD"):
        monkeypatch.delenv(variable, raising=False)
    ar(session, "hooks", "install", "--all")
    write(session / "value.txt", "150\n")
    record = ar(session, "run", "-d", "worse", "--json").json()
    assert (record["steer"], record["warnings"]) == (None, [])


def test_hooks_install_refuses_unknown_and_existing(session: Path, ar: Tool) -> None:
    assert ar(session, "hooks", "install", "nope", expect=2).err == (
        "git autoresearch: no example hook named 'nope' (there are: anti-thrash, "
        "context-rotation, external-search, hypothesis-reflection, idea-rotator, qmd-search, "
        "auto-tag-winners, learnings-journal, notify)\n")
    assert not (session / ".auto" / "hooks" / "after.d").exists()
    install(session, ar, "notify")
    refused = ar(session, "hooks", "install", "notify", expect=3).err
    assert "hook notify is already installed in" in refused
    ar(session, "hooks", "install", "notify", "--force")


def test_anti_thrash(session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORESEARCH_THRASH_LIMIT", "2")
    install(session, ar, "anti-thrash")
    steers = []
    for _ in range(4):
        write(session / "value.txt", "150\n")
        steers.append(ar(session, "run", "-d", "worse", "--json").json()["steer"])
    assert steers[0] is None and steers[1] is None
    assert "the last 2 runs were not kept" in steers[2]
    assert "the last 3 runs were not kept" in steers[3]
    write(session / "value.txt", "50\n")
    ar(session, "run", "-d", "better")
    assert ar(session, "run", "-d", "again", "--json").json()["steer"] is None


def test_context_rotation(session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORESEARCH_PROMPT_MAX_BYTES", "1000")
    monkeypatch.setenv("AUTORESEARCH_PROMPT_KEEP_BYTES", "300")
    install(session, ar, "context-rotation")
    prompt = session / ".auto" / "prompt.md"
    original = prompt.read_text()
    text = original + "".join(f"- learning {i}\n" for i in range(200))
    prompt.write_text(text)
    steer = ar(session, "run", "-d", "x", "--json").json()["steer"]
    kept = prompt.read_text()
    archived = (session / ".auto" / "prompt.archive.md").read_text()
    assert len(kept.encode()) <= 300 and kept.endswith("\n") and text.startswith(kept)
    assert archived.endswith(text[len(kept):]) and "Archived before run 2" in archived
    assert f"its first {len(kept)} bytes stay" in steer
    assert ar(session, "run", "-d", "y", "--json").json()["steer"] is None


def test_idea_rotator(session: Path, ar: Tool) -> None:
    install(session, ar, "idea-rotator")
    ideas = write(session / ".auto" / "ideas.md",
                  "# Ideas\n- [x] tried already\n- [ ] unroll the loop\n- [ ] cache the table\n")
    ar(session, "hook", "before")  # by hand: run 2's idea, offered again by run 2 itself
    first = ar(session, "run", "-d", "x", "--json").json()["steer"]
    second = ar(session, "run", "-d", "y", "--json").json()["steer"]
    third = ar(session, "run", "-d", "z", "--json").json()["steer"]
    assert "unroll the loop" in first and "cache the table" in second and third is None
    assert ideas.read_text() == ("# Ideas\n- [x] tried already\n"
                                 "- [~] unroll the loop (offered before run 2)\n"
                                 "- [~] cache the table (offered before run 3)\n")


def test_hypothesis_reflection(session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    install(session, ar, "hypothesis-reflection")
    unset = ar(session, "run", "-d", "x", "--json").json()
    assert unset["steer"] is None and unset["warnings"] == [], "not set up: silent"
    monkeypatch.setenv("AUTORESEARCH_LLM_CMD", "sed 's/^/LLM> /'")
    steer = ar(session, "run", "-d", "y", "--json").json()["steer"]
    notes = (session / ".auto" / "reflections.md").read_text()
    assert "## Before run 3" in notes and "LLM> Goal: lower the value" in notes
    assert "- run 2: discard" in notes
    assert steer.startswith("Reflection on the last 2 runs")
    monkeypatch.setenv("AUTORESEARCH_LLM_CMD", "no-such-llm-cli")
    assert "exit code 127" in ar(session, "run", "-d", "z", "--json").json()["steer"]


@pytest.mark.parametrize("name,variable,folder", [
    ("external-search", "AUTORESEARCH_SEARCH_CMD", "search"),
    ("qmd-search", "AUTORESEARCH_QMD_CMD", "qmd"),
])
def test_search_hooks(session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch, name: str,
                      variable: str, folder: str) -> None:
    install(session, ar, name)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    unset = ar(session, "run", "-d", "x", "--json").json()  # qmd is not on this PATH either
    assert unset["steer"] is None and unset["warnings"] == [], "not set up: silent"
    monkeypatch.setenv(variable, "no-such-search-cli --flag")
    assert "'no-such-search-cli' was not found" in \
        ar(session, "run", "-d", "y", "--asi", "next_action_hint=branchless compare",
           "--json").json()["steer"]
    monkeypatch.setenv(variable, "echo RESULT:")
    steer = ar(session, "run", "-d", "z", "--json").json()["steer"]
    saved = (session / ".auto" / folder / "run-4.md").read_text()
    assert "RESULT: lower the value branchless compare" in saved
    assert "RESULT: lower the value branchless compare" in steer


def test_auto_tag_winners(session: Path, ar: Tool) -> None:
    install(session, ar, "auto-tag-winners")
    write(session / "value.txt", "80\n")
    ar(session, "run", "-d", "better")
    head = git(session, "rev-parse", "HEAD")
    assert git(session, "rev-parse", "autoresearch/s1/best-run-2^{commit}") == head
    again = ar(session, "hook", "after", "--json").json()  # fired again: the tag is there
    assert "failed" not in json.dumps(again) and not again["steer"], again
    write(session / "value.txt", "79\n")
    ar(session, "keep", "-d", "a tie is no win", "--metric", "80")
    write(session / "value.txt", "90\n")
    ar(session, "keep", "-d", "worse, kept by hand", "--metric", "90")
    assert git(session, "tag", "--list").split() == ["autoresearch/s1/best-run-2"]


def test_learnings_journal(session: Path, ar: Tool) -> None:
    """One line a run; a journal that is missing (installed mid-session, or removed) is
    written from the ledger's runs, so it always holds the whole session."""
    install(session, ar, "learnings-journal")
    write(session / "value.txt", "80\n")
    ar(session, "run", "-d", "better\nwith a second line", "--asi", "hypothesis=h1")
    write(session / "value.txt", "x\n")
    ar(session, "run", "-d", "broken", "--asi", "rollback_reason=typo")
    journal = session / ".auto" / "learnings.md"
    assert journal.read_text() == (
        "# Learnings journal\n\n"
        "- run 1 **keep** 100: baseline\n"
        "- run 2 **keep** 80: better with a second line (hypothesis: h1)\n"
        "- run 3 **crash** -: broken (rollback_reason: typo)\n")
    # git clean -xfd takes .auto/ (the journal is no session file the state ref keeps):
    # resume brings the session back, and the next run writes the journal again whole.
    git(session, "clean", "-xfdq")
    ar(session, "resume")
    write(session / "value.txt", "70\n")
    ar(session, "run", "-d", "lower")
    assert journal.read_text() == (
        "# Learnings journal\n\n"
        "- run 1 **keep** 100: baseline\n"
        "- run 2 **keep** 80: better with a second line (hypothesis: h1)\n"
        "- run 3 **crash** -: broken (rollback_reason: typo)\n"
        "- run 4 **keep** 70: lower\n")


def test_learnings_journal_written_again_says_each_run_once(tmp_path: Path) -> None:
    """Workers record out of order: run 3's line is in the ledger before run 2's, and run 2's
    hook, finding no journal, writes it again with run 3 in it; run 3's own hook, coming after,
    adds no second line for it."""
    import subprocess
    import sys

    hook = Path(__file__).parents[2] / "hooks" / "after" / "learnings-journal.py"
    write(tmp_path / ".auto" / "log.jsonl", "".join(json.dumps(r) + "\n" for r in (
        {"type": "config", "name": "g"},
        {"run": 1, "status": "keep", "metric": 9, "description": "base"},
        {"run": 3, "status": "discard", "metric": 10, "description": "three"},
        {"run": 2, "status": "discard", "metric": 11, "description": "two"})))
    for number, metric, text in ((2, 11, "two"), (3, 10, "three")):
        payload = {"run_entry": {"run": number, "status": "discard", "metric": metric,
                                 "description": text}, "session": {}}
        subprocess.run([sys.executable, str(hook)], input=json.dumps(payload) + "\n",
                       text=True, cwd=tmp_path, check=True)
    assert (tmp_path / ".auto" / "learnings.md").read_text() == (
        "# Learnings journal\n\n- run 1 **keep** 9: base\n- run 3 **discard** 10: three\n"
        "- run 2 **discard** 11: two\n")


def test_notify(session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install(session, ar, "notify")
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "calls"
    write(bin_dir / "notify-send", f"#!/bin/sh\nprintf '%s|' \"$@\" >> {calls}\necho >> {calls}\n",
          0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    write(session / "value.txt", "120\n")
    ar(session, "run", "-d", "worse")
    assert not calls.exists()
    write(session / "value.txt", "70\n")
    ar(session, "run", "-d", "new best")
    assert calls.read_text() == ("autoresearch: new best|score = 70 (run 3, baseline 100): "
                                 "new best|\n")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    write(session / "value.txt", "60\n")
    record = ar(session, "run", "-d", "silent without a notifier", "--json").json()
    assert record["steer"] is None and record["status"] == "keep"


def test_a_firing_gives_its_ledger_line_and_the_run_record_summary(tmp_path: Path) -> None:
    """The two shapes a firing takes outside hooks/user.py come from it: the ledger line (with its
    keys in the order the README's "Hooks" lists them) and the run record's ``hooks`` entry."""
    from git_autoresearch.hooks.user import HookReport, fire_one

    script = hook(tmp_path, "before.sh", "#!/bin/sh\ncat >/dev/null\necho hi\nexit 3\n")
    firing = fire_one(script, "before", {"event": "before"}, cwd=tmp_path)
    line = firing.ledger_line()
    assert list(line) == ["type", "stage", "hook", "exit_code", "duration_ms", "stdout_bytes",
                          "timed_out", "timestamp"]
    assert (line["type"], line["hook"], line["exit_code"], line["stdout_bytes"]) == \
        ("hook", "before.sh", 3, 3)
    report = HookReport("before", [firing, firing])
    assert report.summary() == [{"stage": "before", "hook": "before.sh", "exit_code": 3,
                                 "timed_out": False}] * 2


def test_the_run_payload_of_no_record_has_pis_keys() -> None:
    """pi-autoresearch 1.6.2, index.ts:2436-2441: every key but ``asi`` is there; a run
    without a metric reads 0 (jsonl.ts:118)."""
    from git_autoresearch.hooks.user import run_payload

    assert run_payload({}) == {"run": None, "commit": None, "metric": 0, "metrics": {},
                               "status": None, "description": None, "timestamp": None,
                               "segment": None, "confidence": None}

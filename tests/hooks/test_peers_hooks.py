"""Hooks as pi-autoresearch 1.6.2 runs them and the payloads it gives them, and the ideas
backlog as pi's prompt asks the agent to write it.

The expected values are pi's: read from its source (quoted in each docstring) or computed by
its own functions run under node over the ledger each test writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES_DIR, Tool, ledger_lines, start_args, write

from git_autoresearch.hooks.payload import session_payload

DUMP = "#!/bin/sh\ncat > {out}\n"


def hook(top: Path, name: str, body: str, mode: int = 0o755) -> Path:
    return write(top / ".auto" / "hooks" / name, body, mode)


def hook_lines(top: Path) -> list[dict[str, Any]]:
    return [line for line in ledger_lines(top) if line.get("type") == "hook"]


def payload(path: Path) -> Any:
    text = path.read_text()
    assert text.count("\n") == 1 and text.endswith("\n"), "one JSON line"
    return json.loads(text)


@pytest.fixture
def session(repo: Path, ar: Tool) -> Path:
    ar(repo, *start_args())
    return repo


# --- item 8: a hook without #! ------------------------------------------------------------


def test_a_hook_without_a_shebang_runs_through_bash(session: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/hooks.ts:88: ``spawn("bash",
    [script], ...)``: a hook needs no ``#!`` line. Under node, pi's runHook gives this very
    file's stdout as the steer (hooks.ts:143), exit code 0; it failed here with "Exec format
    error" and was not run."""
    hook(session, "before.sh", 'read -r line\ncase "$line" in *\'"event":"before"\'*) '
                               'echo "bash ${BASH_VERSION:+ran} the before hook";; esac\n')
    out = ar(session, "hook", "before", "--json").json()
    assert out["steer"] == "bash ran the before hook"
    assert out["warnings"] == []
    line = hook_lines(session)[-1]
    assert (line["hook"], line["exit_code"], line["timed_out"]) == ("before.sh", 0, False)


def test_a_hook_with_a_shebang_runs_its_own_interpreter(session: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, hooks.ts:88 runs even a ``#!/usr/bin/env python3`` file through
    bash (a syntax error there, exit 2, under node); we keep running it with the interpreter it
    names, as the shipped Python example hooks need. A sub-hook in ``before.d/`` without ``#!``
    runs through bash too."""
    hook(session, "before.sh", "#!/usr/bin/env python3\nimport sys\n"
                               "print('python read', len(sys.stdin.readline()) > 0)\n")
    hook(session, "before.d/10-plain", 'echo "bash ${BASH_VERSION:+too}"\n')
    out = ar(session, "hook", "before", "--json").json()
    assert out["steer"] == "python read True\nbash too"


def test_a_hook_without_the_execute_bit_is_still_not_run(session: Path, ar: Tool,
                                                         tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, hooks.ts:64-71 and :84: a file without the execute bit is not
    run (``bash script`` could run it, and pi does not); ours says so in a warning."""
    hook(session, "before.sh", f"touch {tmp_path}/ran\n", mode=0o644)
    out = ar(session, "hook", "before", "--json").json()
    assert not (tmp_path / "ran").exists()
    assert out["warnings"] == ["hook .auto/hooks/before.sh is not executable and was not run "
                               "(chmod +x .auto/hooks/before.sh)"]
    assert hook_lines(session) == []


def test_a_hook_that_cannot_start_is_an_error_steer_and_a_ledger_line(
        session: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, hooks.ts:124 and :134-141: when bash cannot be started, pi
    still reports a firing (exit code null, not timed out: under node its steer is
    ``[before hook exited null]\\nspawn bash ENOENT``) and logs it (hooks.ts:146-155). Ours
    gave only a warning. A ``#!`` interpreter that is missing is the same case."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (bin_dir / "git").symlink_to(git_path)
    hook(session, "before.sh", "echo unreachable\n")
    hook(session, "before.d/10-gone", "#!/no/such/interpreter\necho unreachable\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    out = ar(session, "hook", "before", "--json").json()
    assert out["steer"] == (
        "[before hook before.sh could not be started: it has no #! line, so it runs through "
        "bash, and there is no bash on PATH]\n"
        "[before hook before.d/10-gone could not be started: its interpreter "
        "/no/such/interpreter was not found]")
    assert out["warnings"] == []
    assert [(h["hook"], h["exit_code"], h["timed_out"], h["stdout_bytes"])
            for h in hook_lines(session)] == [("before.sh", None, False, 0),
                                              ("before.d/10-gone", None, False, 0)]


def test_a_plain_hook_with_windows_line_endings_warns_about_bash(session: Path,
                                                                 ar: Tool) -> None:
    """A hook without ``#!`` runs through bash (pi-autoresearch 1.6.2, hooks.ts:88), which
    reads a carriage return as part of each command: the warning says so."""
    hook(session, "before.sh", "echo hi\r\n")
    out = ar(session, "hook", "before", "--json").json()
    assert out["warnings"] == ["hook .auto/hooks/before.sh has Windows line endings (its first "
                               "line ends in a carriage return), which bash reads as part of "
                               "each command"]


def test_fire_one_runs_a_plain_file_through_bash(tmp_path: Path) -> None:
    """The library call gives the same: pi-autoresearch 1.6.2, hooks.ts:88."""
    from git_autoresearch.hooks.user import fire_one

    script = write(tmp_path / "after.sh", "cat >/dev/null\necho $0\n", 0o755)
    firing = fire_one(script, "after", {"event": "after"}, cwd=tmp_path)
    assert (firing.exit_code, firing.steer) == (0, f"{script}\n")


# --- item 9: the payload --------------------------------------------------------------------

PI_RUN_KEYS = ["run", "commit", "metric", "metrics", "status", "description", "timestamp",
               "segment", "confidence", "asi"]


def test_payloads_have_pis_keys_in_pis_order(session: Path, ar: Tool, tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2: the before payload is ``{event, cwd, next_run, last_run,
    session}`` and the after payload ``{event, cwd, run_entry, session}``
    (extensions/pi-autoresearch/hooks.ts:38-51, built at index.ts:2450-2476); ``session`` is
    ``{metric_name, metric_unit, direction, baseline_metric, best_metric, run_count, goal}``
    (hooks.ts:28-36, index.ts:1247-1255); a run is the ledger line pi just wrote, ``{run,
    commit, metric, metrics, status, description, timestamp, segment, confidence, asi}``
    (index.ts:2277-2286 and :2436-2440), ``asi`` left out when there is none (index.ts:2441).
    Our extras come after them, under keys of their own."""
    hook(session, "before.sh", DUMP.format(out=tmp_path / "before.json"))
    hook(session, "after.sh", DUMP.format(out=tmp_path / "after.json"))
    write(session / "value.txt", "90\n")
    ar(session, "run", "-d", "ninety", "--asi", "hypothesis=smaller")
    write(session / "value.txt", "95\n")
    ar(session, "run", "-d", "ninety-five")
    before, after = payload(tmp_path / "before.json"), payload(tmp_path / "after.json")
    # pi's computeConfidence (index.ts:426-456) over 100, 90, 95: |90 - 100| / MAD 5.
    assert after["run_entry"]["confidence"] == 2
    fixture_before = json.loads((FIXTURES_DIR / "hook-before-payload.json").read_text())
    fixture_after = json.loads((FIXTURES_DIR / "hook-after-payload.json").read_text())
    # pi's keys in pi's order, after this tool's schema name (hooks read the keys they know).
    assert list(before) == ["schema", *fixture_before]
    assert list(after) == ["schema", *fixture_after]
    assert list(before["session"])[:7] == list(fixture_before["session"])
    assert list(before["session"])[7:] == ["session_id", "segment_run_count"]
    assert list(before["last_run"]) == PI_RUN_KEYS + ["decision"]
    assert list(after["run_entry"]) == [k for k in PI_RUN_KEYS if k != "asi"] + ["decision"]
    records = {line["run"]: line for line in ledger_lines(session)
               if "run" in line and "type" not in line}
    for run in (before["last_run"], after["run_entry"]):
        assert {k: run[k] for k in run if k != "decision"} == \
            {k: records[run["run"]][k] for k in PI_RUN_KEYS if k in run}
        assert run["decision"] == records[run["run"]]["decision"]


def test_session_counts_every_segment_and_a_crash_reads_0(session: Path, ar: Tool,
                                                         tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, index.ts:1253: ``run_count: state.results.length``, every run of
    the session, all segments (jsonl.ts:169-191 keeps them all); index.ts:1251 and :580-584:
    ``baseline_metric`` is the first run of the current segment; index.ts:241: a crash's
    ``metric`` is 0 (and jsonl.ts:118 reads a missing one as 0). pi's reconstruction and
    ``buildSessionSnapshot``, run under node over this test's ledger, give
    ``{"baseline_metric":90,"best_metric":90,"run_count":5}``; we gave run_count 2 and a crash's
    metric null."""
    write(session / "value.txt", "90\n")
    ar(session, "run", "-d", "ninety")
    write(session / "value.txt", "95\n")
    ar(session, "run", "-d", "worse")
    ar(session, "start", "--new-segment")
    hook(session, "before.sh", DUMP.format(out=tmp_path / "before.json"))
    hook(session, "after.sh", DUMP.format(out=tmp_path / "after.json"))
    write(session / "value.txt", "x\n")
    ar(session, "run", "-d", "broken", "--asi", "rollback_reason=typo")
    after = payload(tmp_path / "after.json")
    assert after["run_entry"]["status"] == "crash" and after["run_entry"]["metric"] == 0
    assert after["session"] == {
        "metric_name": "score", "metric_unit": "", "direction": "lower",
        "baseline_metric": 90, "best_metric": 90, "run_count": 5, "goal": "lower the value",
        "session_id": "s1", "segment_run_count": 2}
    ar(session, "hook", "before")
    before = payload(tmp_path / "before.json")
    assert before["next_run"] == 6
    assert before["last_run"]["run"] == 5 and before["last_run"]["metric"] == 0
    assert before["last_run"]["asi"] == {"rollback_reason": "typo"}
    assert before["session"]["run_count"] == 5


def test_baseline_metric_is_the_first_run_of_the_segment_whatever_its_status(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, index.ts:579-584 (``findBaselineMetric``: ``cur[0].metric``) and
    index.ts:1251: the segment's first run, kept or not. Under node over this test's ledger,
    pi's snapshot is ``{"baseline_metric":100,"best_metric":90,"run_count":2}``; we gave the
    first kept run, 90."""
    ar(repo, *start_args("--no-baseline"))
    ar(repo, "measure")
    ar(repo, "discard", "-d", "the unmodified code, set aside")
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    hook(repo, "before.sh", DUMP.format(out=tmp_path / "before.json"))
    ar(repo, "hook", "before")
    got = payload(tmp_path / "before.json")["session"]
    assert (got["baseline_metric"], got["best_metric"], got["run_count"]) == (100, 90, 2)


def test_a_crashed_first_run_is_a_baseline_of_0(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, index.ts:580-584 over jsonl.ts:118 (a missing metric reads 0):
    a segment whose first run crashed has ``baseline_metric`` 0 and, with nothing kept,
    ``best_metric`` null (index.ts:586-596); under node over this test's ledger:
    ``{"baseline_metric":0,"best_metric":null,"run_count":1}``."""
    write(repo / "value.txt", "x\n")
    from conftest import commit_all

    commit_all(repo, "a broken benchmark")
    ar(repo, *start_args(), expect=3)
    hook(repo, "before.sh", DUMP.format(out=tmp_path / "before.json"))
    ar(repo, "hook", "before")
    got = payload(tmp_path / "before.json")
    assert got["last_run"]["status"] == "crash" and got["last_run"]["metric"] == 0
    assert (got["session"]["baseline_metric"], got["session"]["best_metric"],
            got["session"]["run_count"]) == (0, None, 1)


def test_the_run_payload_of_a_record(tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2, index.ts:2436-2441: pi's keys in pi's order, a crash's metric 0
    (index.ts:241), ``asi`` only when there is one; then our ``decision``. Our other fields
    (samples, checks, attempt_ref, ...) stay in the ledger."""
    from git_autoresearch.hooks.user import run_payload

    record = {"run": 4, "commit": "abc1234", "metric": None, "metrics": {}, "status": "crash",
              "description": "x", "timestamp": 1700000000000, "segment": 1,
              "confidence": None, "samples": [], "reason": "no metric",
              "decision": {"rule": "sequential"}}
    assert run_payload(record) == {
        "run": 4, "commit": "abc1234", "metric": 0, "metrics": {}, "status": "crash",
        "description": "x", "timestamp": 1700000000000, "segment": 1, "confidence": None,
        "decision": {"rule": "sequential"}}
    record["asi"] = {"hypothesis": "h"}
    assert list(run_payload(record))[-2:] == ["asi", "decision"]


def test_the_example_hooks_read_the_fixture_payloads(tmp_path: Path) -> None:
    """Every example hook runs on the seed contract's payloads (the fixtures, as pi writes
    them, hooks.ts:127) without failing, in a folder with an empty ``.auto/``."""
    from git_autoresearch.hooks.user import examples, fire_one

    (tmp_path / ".auto").mkdir()
    for example in examples():
        data = json.loads((FIXTURES_DIR / f"hook-{example.stage}-payload.json").read_text())
        script = write(tmp_path / example.path.name, example.path.read_bytes(), 0o755)
        firing = fire_one(script, example.stage, data, cwd=tmp_path)
        if example.name in ("hypothesis-reflection", "external-search", "qmd-search"):
            continue  # these need a command of the user's, and say so in an error steer
        assert firing.exit_code == 0, (example.name, firing.steer)


# --- item 7: ideas as plain bullets ----------------------------------------------------------

# A backlog as pi-autoresearch's agent writes it: "Write promising but deferred optimizations
# as bullet points to .auto/ideas.md" (pi-autoresearch 1.6.2, extensions/pi-autoresearch/
# index.ts:1536 and :2210; skills/autoresearch-create/SKILL.md:154, "append them as bullets"),
# beside the loop seed's checkboxes.
PI_BACKLOG = ("# Ideas\n"
              "\n"
              "Deferred, most promising first.\n"
              "\n"
              "- Lookup table for the escape decoder\n"
              "- [ ] SIMD scan for quotes\n"
              "* Cache the parsed schema\n"
              "  - only pays on large inputs\n"
              "+ Arena for token buffers\n"
              "1. Skip whitespace in 8-byte words\n"
              "- ~~Inline the tokenizer loop~~ (run 2: slower)\n"
              "- [x] ~~unroll the loop~~ → run 4, discard, 41.2\n"
              "---\n")

OPEN_TEXTS = ["Lookup table for the escape decoder", "SIMD scan for quotes",
              "Cache the parsed schema", "Arena for token buffers",
              "Skip whitespace in 8-byte words"]


def test_ideas_list_and_next_read_plain_bullets(session: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, index.ts:1536: the agent writes ideas "as bullet points", and
    pi's compaction summary carries them all (compaction.ts:153-157). ``- idea``, ``* idea``,
    ``+ idea`` and ``1. idea`` are ideas like ``- [ ] idea``; an indented bullet under one is a
    detail of it; a struck-through one (``~~idea~~``) was tried. ``ideas list`` printed nothing
    here, exit 0, no warning."""
    write(session / ".auto" / "ideas.md", PI_BACKLOG)
    listed = ar(session, "ideas", "list", "--json").json()["ideas"]
    assert listed == [{"number": n, "state": "open", "text": t}
                      for n, t in enumerate(OPEN_TEXTS, start=1)]
    assert ar(session, "ideas", "list").out == "".join(
        f"{n:>3} [ ] {t}\n" for n, t in enumerate(OPEN_TEXTS, start=1))
    every = ar(session, "ideas", "list", "--all", "--json").json()["ideas"]
    assert [(i["number"], i["state"]) for i in every[5:]] == [(6, "done"), (7, "done")]
    assert ar(session, "ideas", "next").out == "1: Lookup table for the escape decoder\n"


def test_ideas_done_turns_a_bullet_into_the_seeds_tried_mark(session: Path, ar: Tool) -> None:
    """The seed's mark of a tried idea, ``- [x] ~~idea~~ → note``, on a plain bullet and on an
    ordered item; every other line of the file stays byte for byte."""
    path = write(session / ".auto" / "ideas.md", PI_BACKLOG)
    ar(session, "ideas", "done", "3", "--note", "no gain")
    ar(session, "ideas", "done", "5", "--run", "1")
    assert path.read_text() == PI_BACKLOG.replace(
        "* Cache the parsed schema\n", "* [x] ~~Cache the parsed schema~~ → no gain\n").replace(
        "1. Skip whitespace in 8-byte words\n",
        "1. [x] ~~Skip whitespace in 8-byte words~~ → run 1, keep, 100\n")
    listed = ar(session, "ideas", "list", "--json").json()["ideas"]
    assert [i["number"] for i in listed] == [1, 2, 4]


def test_summary_lists_plain_bullets(session: Path, ar: Tool) -> None:
    """``summary`` is our compaction summary (pi's compaction.ts:153-157 gives the whole
    backlog): its open ideas are the bullets too; it listed none."""
    write(session / ".auto" / "ideas.md", PI_BACKLOG)
    text = ar(session, "summary").out
    assert text.endswith("## Open ideas\n" + "".join(f"- {t}\n" for t in OPEN_TEXTS))


def test_a_backlog_with_no_list_item_warns(session: Path, ar: Tool) -> None:
    """A backlog with text but not one list item gives nothing to list; that is said once on
    stderr, naming the file, instead of printing nothing at all."""
    write(session / ".auto" / "ideas.md", "# Ideas\n\nTry a lookup table. Maybe SIMD.\n")
    for args in (("ideas", "list"), ("ideas", "next"), ("summary",)):
        res = ar(session, *args)
        assert "## Open ideas" not in res.out
        assert res.err.count(".auto/ideas.md has text but no idea") == 1, args
    write(session / ".auto" / "ideas.md", "# Ideas\n\n")
    assert ar(session, "ideas", "list").err == ""


def test_the_idea_rotator_offers_a_plain_bullet(session: Path, ar: Tool) -> None:
    """The idea-rotator example offers the first open idea, bullet or checkbox, and marks it
    offered; pi's own example (skills/autoresearch-hooks/examples/before/idea-rotator.sh:9)
    reads only ``- [ ]``, so it never offered what pi's agent writes."""
    ar(session, "hooks", "install", "idea-rotator")
    path = write(session / ".auto" / "ideas.md", PI_BACKLOG)
    steer = ar(session, "hook", "before", "--json").json()["steer"]
    assert steer == ("Next idea from the backlog (.auto/ideas.md): "
                     "Lookup table for the escape decoder")
    assert path.read_text() == PI_BACKLOG.replace(
        "- Lookup table for the escape decoder\n",
        "- [~] Lookup table for the escape decoder (offered before run 2)\n")
    assert ar(session, "ideas", "next").out == "2: SIMD scan for quotes\n"


def test_a_legacy_pi_session_reads_autoresearch_ideas_md(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2, extensions/pi-autoresearch/paths.ts:21-28 and :71-75: without
    any ``.auto/`` file, a session's ideas are ``autoresearch.ideas.md`` and its notes
    ``autoresearch.md`` (beside ``autoresearch.jsonl``). ``summary`` and ``ideas list`` read
    them there; they read ``.auto/ideas.md``, which is not there."""
    write(repo / "autoresearch.jsonl", (FIXTURES_DIR / "pi-autoresearch-log.jsonl").read_text())
    write(repo / "autoresearch.ideas.md", "- arena allocator\n- [ ] SIMD scan\n")
    write(repo / "autoresearch.md", "# Notes\n\n## Rules\n- never touch the fixtures\n")
    text = ar(repo, "summary").out
    assert "## Rules\n- never touch the fixtures\n" in text
    assert text.endswith("## Open ideas\n- arena allocator\n- SIMD scan\n")
    assert [i["text"] for i in ar(repo, "ideas", "list", "--json").json()["ideas"]] == \
        ["arena allocator", "SIMD scan"]
    write(repo / ".auto" / "prompt.md", "# Notes\n")  # a .auto/ file: pi's layout is .auto/
    assert ar(repo, "ideas", "list", "--json").json()["ideas"] == []


@pytest.mark.parametrize("name,snapshot", [
    ("pi-1.6.2-written-log.jsonl",
     {"metric_name": "throughput", "metric_unit": "", "direction": "higher",
      "baseline_metric": 50, "best_metric": 60, "run_count": 11, "goal": "parser throughput"}),
    ("pi-autoresearch-log.jsonl",
     {"metric_name": "parse_ms", "metric_unit": "ms", "direction": "lower",
      "baseline_metric": 2210, "best_metric": 2210, "run_count": 8,
      "goal": "speed up json parser (large inputs)"}),
])
def test_the_session_object_of_pis_own_ledgers(repo: Path, name: str,
                                               snapshot: dict[str, Any]) -> None:
    """pi-autoresearch 1.6.2's ``buildSessionSnapshot`` (index.ts:1247-1255) over its
    reconstruction (jsonl.ts:169-191), run under node on these ledgers, gives ``snapshot``;
    ours gives the same seven keys, then its own two."""
    from git_autoresearch.session.for_reading import open_for_reading

    write(repo / ".auto" / "log.jsonl", (FIXTURES_DIR / name).read_bytes())
    got = session_payload(open_for_reading(repo))
    assert {k: got[k] for k in snapshot} == snapshot
    assert list(got)[:7] == list(snapshot)


# --- the hooks around the baseline, as pi fires them when a session starts ----------------

STEER_DUMP = "#!/bin/sh\ncat > {out}\necho '{said}'\n"


def test_start_fires_before_then_after_around_the_baseline(repo: Path, ar: Tool,
                                                           tmp_path: Path) -> None:
    """pi-autoresearch 1.6.2 fires ``before`` when a session starts, once ``init_experiment``
    has written the config header (extensions/pi-autoresearch/index.ts:1638-1651:
    ``next_run: state.results.length + 1``, ``last_run: readLastRun(workDir)``), and ``after``
    for every run it logs, the baseline first among them (index.ts:2450-2456, ``run_entry:
    jsonlEntry``); each firing is a ``{"type":"hook",...}`` ledger line (index.ts:1257-1260,
    hooks.ts:146-179). ``start`` measures and records that baseline: the same two firings, in
    that order, with their steer printed as ``run`` prints it."""
    hook(repo, "before.sh", STEER_DUMP.format(out=tmp_path / "before.json", said="look first"))
    hook(repo, "after.sh", STEER_DUMP.format(out=tmp_path / "after.json", said="noted"))
    out = ar(repo, *start_args()).out
    assert out == ("session s1 on branch autoresearch/s1, segment 0\n"
                   "metric score (lower is better)\n"
                   "==== steer from before hooks ====\nlook first\n==== end of steer ====\n"
                   "baseline: score = 100 (run 1)\n"
                   "==== steer from after hooks ====\nnoted\n==== end of steer ====\n")
    before, after = payload(tmp_path / "before.json"), payload(tmp_path / "after.json")
    assert (before["event"], before["next_run"], before["last_run"]) == ("before", 1, None)
    assert before["session"] == {
        "metric_name": "score", "metric_unit": "", "direction": "lower",
        "baseline_metric": None, "best_metric": None, "run_count": 0,
        "goal": "lower the value", "session_id": "s1", "segment_run_count": 0}
    assert after["event"] == "after"
    assert {k: after["run_entry"][k] for k in ("run", "status", "metric", "description")} == \
        {"run": 1, "status": "keep", "metric": 100, "description": "baseline"}
    assert (after["session"]["baseline_metric"], after["session"]["run_count"]) == (100, 1)
    kinds = [(line.get("type"), line.get("stage"), line.get("run"))
             for line in ledger_lines(repo)]
    assert kinds == [("config", None, None), ("hook", "before", None), (None, None, 1),
                     ("hook", "after", None)]
    baseline = ledger_lines(repo)[2]
    assert baseline["hooks"] == [{"stage": "before", "hook": "before.sh", "exit_code": 0,
                                  "timed_out": False}]
    # A new segment's baseline: the same, after the ledger's last run.
    doc = ar(repo, "start", "--new-segment", "--json").json()
    assert doc["steer"] == "look first\nnoted"
    before = payload(tmp_path / "before.json")
    assert (before["next_run"], before["last_run"]["run"]) == (2, 1)
    assert before["session"]["segment_run_count"] == 0
    assert payload(tmp_path / "after.json")["run_entry"]["run"] == 2
    assert [line["stage"] for line in hook_lines(repo)] == ["before", "after"] * 2


def test_start_without_a_baseline_fires_no_hook(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """With no baseline measured, ``start`` fires nothing: the first run fires its own
    ``before`` (next_run 1), so that, as under pi, each run has one ``before``."""
    hook(repo, "before.sh", DUMP.format(out=tmp_path / "before.json"))
    doc = ar(repo, *start_args("--no-baseline", "--json")).json()
    assert doc["steer"] is None and hook_lines(repo) == []
    ar(repo, "run", "-d", "the first run")
    assert payload(tmp_path / "before.json")["next_run"] == 1
    assert [line["stage"] for line in hook_lines(repo)] == ["before"]


def test_a_failed_baseline_fires_after_and_says_its_steer_before_the_refusal(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """pi logs a crashed baseline like any run and fires ``after`` for it
    (index.ts:2450-2456 follows every log_experiment, whatever its status)."""
    from conftest import commit_all

    write(repo / "value.txt", "x\n")
    commit_all(repo, "a broken benchmark")
    hook(repo, "after.sh", STEER_DUMP.format(out=tmp_path / "after.json", said="fix it"))
    res = ar(repo, *start_args(), expect=3)
    assert res.out == "==== steer from after hooks ====\nfix it\n==== end of steer ====\n"
    assert res.err.startswith("git autoresearch: the baseline failed (")
    assert payload(tmp_path / "after.json")["run_entry"]["status"] == "crash"
    doc = ar(repo, "start", "--new-segment", "--json", expect=3).json()
    assert doc == {"schema": "git-autoresearch:error/1", "error": doc["error"], "exit_code": 3,
                   "steer": "fix it"}
    assert doc["error"].startswith("the baseline failed (")

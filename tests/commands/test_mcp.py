"""git autoresearch mcp: the MCP server driven through the SDK's own in-memory client (no model,
no subprocess but the commands the tools run), on the bundled bundle-size example: a whole
session, each tool's result against the command's JSON for the same state, the errors, the
progress, a run collected by a second call; and the real server over stdio, once."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, git, ledger_lines, write

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from mcp import Client
from mcp.types import CallToolResult

from git_autoresearch.mcp_server.tools import build

TOOLS = ["start_session", "run_experiment", "measure", "collect", "record", "status",
         "query_runs", "show_run", "summary", "ideas", "apply_run", "stop", "audit", "finalize"]
COMMENT = "  // Format an amount of money for display.\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def example(tmp_path: Path, ar: Tool) -> Path:
    """The bundle-size example as a repository of its own, no session yet."""
    ar(tmp_path, "demo", "--example", "bundle-size")
    return tmp_path / "bundle-size"


@pytest.fixture
async def client(example: Path) -> AsyncIterator[Client]:
    async with Client(build(example), raise_exceptions=True) as connected:
        yield connected


def document(result: CallToolResult) -> dict[str, Any]:
    """A tool's structured result, which must be its text content too."""
    assert not result.is_error, result.content
    found: dict[str, Any] | None = result.structured_content
    assert found is not None
    assert json.loads(result.content[0].text) == found  # type: ignore[union-attr]
    return found


def error(result: CallToolResult) -> dict[str, Any]:
    """A tool error's text, the command's error document."""
    assert result.is_error
    found: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return found


def cli(ar: Tool, folder: Path, *args: str) -> dict[str, Any]:
    found: dict[str, Any] = ar(folder, *args, "--json").json()
    return found


@pytest.mark.anyio
async def test_a_whole_session_through_the_tools(client: Client, example: Path,
                                                 ar: Tool) -> None:
    """start from the configuration file, a kept run, a discarded run with an out-of-scope
    edit (named, set aside, its attempt saved), the runs queried, shown and summed up, then
    stop: each result is the command's document for the same state."""
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == TOOLS
    assert all(t.output_schema and t.description for t in listed.tools)
    starting = next(t for t in listed.tools if t.name == "start_session")
    assert "command" not in starting.input_schema["properties"]
    started = document(await client.call_tool("start_session", {"config": "config.toml"}))
    assert (started["schema"], started["baseline"]["status"]) == ("git-autoresearch:start/1",
                                                                   "keep")
    session = started["session_id"]

    app = example / "src" / "app.js"
    write(app, app.read_text().replace(COMMENT, ""))
    kept = document(await client.call_tool("run_experiment", {
        "description": "drop a comment", "hypothesis": "comments are bytes"}))
    assert (kept["schema"], kept["status"], kept["committed"]) == \
        ("git-autoresearch:run/1", "keep", True)
    assert kept["asi"] == {"hypothesis": "comments are bytes"}
    assert ledger_lines(example)[-1]["run"] == kept["run"] == 2

    write(app, app.read_text() + "// a longer bundle\n")
    write(example / "README.md", "notes the agent should not have written here\n")
    discarded = document(await client.call_tool("run_experiment", {
        "description": "a longer bundle", "asi": {"next_action_hint": "shrink"}}))
    assert (discarded["status"], discarded["scope_violations"]) == ("discard", ["README.md"])
    assert git(example, "rev-parse", "--verify", "-q",
               f"refs/autoresearch/{session}/attempts/3").strip()
    assert git(example, "status", "--porcelain").strip() == ""

    assert document(await client.call_tool("status", {})) == cli(ar, example, "status")
    kept_runs = document(await client.call_tool("query_runs", {"kept": True}))
    assert [r["run"] for r in kept_runs["runs"]] == [1, 2]
    assert kept_runs == cli(ar, example, "log", "--kept", "--last", "20")
    where = document(await client.call_tool("query_runs", {"where": ["status=discard"]}))
    assert where == cli(ar, example, "log", "--where", "status=discard", "--last", "20")
    shown = document(await client.call_tool("show_run", {"run": 3, "max_diff_chars": 40}))
    whole = cli(ar, example, "show", "3")
    assert (shown["show"], shown["diff_truncated"]) == \
        ({**whole, "diff": whole["diff"][:40]}, True)
    assert "a longer bundle" in whole["diff"] and len(whole["diff"]) > 40
    bare = document(await client.call_tool("show_run", {"run": 3, "include_diff": False}))
    assert (bare["show"]["diff"], bare["show"]["record"]) == ("", whole["record"])
    assert document(await client.call_tool("summary", {})) == \
        ar(example, "summary", "--json").json()
    assert document(await client.call_tool("summary", {"analyze": True})) == \
        cli(ar, example, "analyze")
    read = await client.read_resource("autoresearch://status")
    assert json.loads(read.contents[0].text) == cli(ar, example, "status")  # type: ignore[union-attr]
    run = await client.read_resource("autoresearch://runs/2")
    assert json.loads(run.contents[0].text) == cli(ar, example, "show", "2")  # type: ignore[union-attr]
    with pytest.raises(Exception, match="no run 99 in the ledger") as missing:
        await client.read_resource("autoresearch://runs/99")
    assert '"exit_code": 2' in str(missing.value)

    assert document(await client.call_tool("stop", {}))["schema"] == "git-autoresearch:stop/1"
    write(app, app.read_text() + "// more\n")
    stopped = document(await client.call_tool("run_experiment", {"description": "after stop"}))
    assert (sorted(stopped), stopped["stopped"], stopped["exit_code"]) == \
        (["exit_code", "reason", "stopped"], True, 4)
    assert "STOP" in stopped["reason"]
    assert app.read_text().endswith("// more\n")  # (nothing measured, nothing reverted)


@pytest.mark.anyio
async def test_record_ideas_and_apply_are_the_commands_documents(client: Client,
                                                                  example: Path,
                                                                  ar: Tool) -> None:
    """measure then record keeps the pending measurement; a crash reverts; an idea added is
    listed; a discarded run's change is applied back onto the work tree."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    app = example / "src" / "app.js"
    write(app, app.read_text().replace(COMMENT, ""))
    measured = document(await client.call_tool("measure", {}))
    assert measured["schema"] == "git-autoresearch:measurement/1"
    recorded = document(await client.call_tool("record", {
        "status": "keep", "description": "measured, then kept"}))
    assert (recorded["status"], recorded["run"]) == ("keep", 2)
    write(app, app.read_text() + "// broken\n")
    crashed = document(await client.call_tool("record", {
        "status": "crash", "description": "it broke", "hypothesis": "h"}))
    assert (crashed["status"], crashed["asi"]) == ("crash", {"hypothesis": "h"})
    assert "broken" not in app.read_text()
    added = document(await client.call_tool("ideas", {"op": "add", "text": "minify"}))
    assert added["schema"] == "git-autoresearch:idea/1"
    assert document(await client.call_tool("ideas", {"op": "list"})) == \
        cli(ar, example, "ideas", "list")
    applied = document(await client.call_tool("apply_run", {"run": 3}))
    assert applied["schema"] == "git-autoresearch:apply/1"
    assert "broken" in app.read_text()


@pytest.mark.anyio
async def test_audit_and_finalize_give_the_commands_documents(client: Client, example: Path,
                                                             ar: Tool) -> None:
    """audit measures a keep against its parent again and records its line; finalize makes the
    branch for review: each result is the command's document, the ledger and branch as the
    command line would leave them."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    app = example / "src" / "app.js"
    write(app, app.read_text().replace(COMMENT, ""))
    document(await client.call_tool("run_experiment", {"description": "drop a comment"}))
    audited = document(await client.call_tool("audit", {"runs": [2], "samples": 1}))
    assert audited["schema"] == "git-autoresearch:audit/1"
    assert [(a["audited_run"], a["verdict"]) for a in audited["audits"]] == [(2, "confirmed")]
    assert audited["audits"] == [ledger_lines(example)[-1]]
    final = document(await client.call_tool("finalize", {}))
    assert (final["schema"], final["runs"]) == ("git-autoresearch:finalize/1", [2])
    assert {k: v for k, v in final.items() if k not in ("schema", "notes")} == \
        ledger_lines(example)[-1]
    assert final["notes"] == str(example / ".auto" / "final.md")
    assert git(example, "rev-parse", "--short=7", final["branch"]).strip() == final["commit"]


@pytest.mark.anyio
async def test_query_runs_says_what_the_query_warned_of(client: Client) -> None:
    """A misspelt field in a condition selects nothing: log warns on stderr, and query_runs
    gives the warning beside the (empty) runs, so that a model is not left to take an empty
    answer for one; a query that warns of nothing gives the log document alone."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    misspelt = document(await client.call_tool("query_runs", {"where": ["stauts=keep"]}))
    assert misspelt["runs"] == []
    assert misspelt["warnings"] == ["--where stauts: no run has this field (a field of the run "
                                    "records, a secondary metric, or a dotted path such as "
                                    "asi.hypothesis)"]
    plain = document(await client.call_tool("query_runs", {"where": ["status=keep"]}))
    assert [r["run"] for r in plain["runs"]] == [1] and "warnings" not in plain


@pytest.mark.anyio
async def test_text_beyond_ascii_survives_a_server_whose_locale_is_not_utf8(
        example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server started with a Latin-1 locale (``PYTHONIOENCODING=latin-1``) hands the
    commands it runs UTF-8 standard streams, as it writes their input and reads their output:
    a description with an accent comes back as written, not as U+FFFD."""
    monkeypatch.setenv("PYTHONIOENCODING", "latin-1")
    async with Client(build(example), raise_exceptions=True) as client:
        document(await client.call_tool("start_session", {"config": "config.toml"}))
        app = example / "src" / "app.js"
        write(app, app.read_text().replace(COMMENT, ""))
        ran = document(await client.call_tool("run_experiment", {
            "description": "café: no comment", "hypothesis": "à la carte"}))
        assert ran["description"] == "café: no comment"
        runs = document(await client.call_tool("query_runs", {}))["runs"]
        assert (runs[-1]["description"], runs[-1]["asi"]["hypothesis"]) == \
            ("café: no comment", "à la carte")


@pytest.mark.anyio
async def test_a_name_that_is_not_utf8_reaches_the_model_as_a_replacement_character(
        client: Client, example: Path) -> None:
    """A run that set aside a file whose name is not UTF-8 is a result, not a tool error (the
    run is recorded): in run_experiment, show_run and query_runs the name's odd byte is
    U+FFFD, since MCP's JSON cannot carry the lone surrogate our JSON's escape decodes to."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    app = example / "src" / "app.js"
    write(app, app.read_text().replace(COMMENT, ""))
    (example / os.fsdecode(b"bad\xfdname.txt")).write_text("z\n")
    ran = document(await client.call_tool("run_experiment", {"description": "odd name"}))
    assert ran["scope_violations"] == ["bad\ufffdname.txt"]
    shown = document(await client.call_tool("show_run", {"run": ran["run"]}))
    assert shown["show"]["record"]["scope_violations"] == ["bad\ufffdname.txt"]
    runs = document(await client.call_tool("query_runs", {}))["runs"]
    assert runs[-1]["scope_violations"] == ["bad\ufffdname.txt"]


@pytest.mark.anyio
async def test_errors_the_model_can_fix_are_tool_errors_with_the_commands_document(
        client: Client, example: Path) -> None:
    """A refusal (exit 3), a usage error (exit 2), a shell command given as an argument to a
    server that does not allow it, and an argument of the wrong type are tool errors; the
    first three carry the command's error document."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    refused = error(await client.call_tool("record", {"status": "keep",
                                                      "description": "nothing measured"}))
    assert (refused["schema"], refused["exit_code"]) == ("git-autoresearch:error/1", 3)
    usage = error(await client.call_tool("query_runs", {"where": ["metric<<"]}))
    assert usage["exit_code"] == 2 and "metric<<" in usage["error"]
    write(example / "config.toml", (example / "config.toml").read_text().replace(
        "sh build.sh", "touch ../pwned"))
    write(example.parent / "elsewhere.toml", (example / "config.toml").read_text())
    for config in ("config.toml", "../elsewhere.toml"):
        unsafe = error(await client.call_tool("start_session", {
            "config": config, "new_segment": True}))
        assert (unsafe["schema"], unsafe["exit_code"]) == ("git-autoresearch:error/1", 3)
        assert "committed" in unsafe["error"] and "--allow-commands" in unsafe["error"]
    assert not (example.parent / "pwned").exists()
    unknown = error(await client.call_tool("collect", {"job": "run-9"}))
    assert (unknown["schema"], unknown["exit_code"]) == ("git-autoresearch:error/1", 2)
    for tool_name, arguments in (("run_experiment", {}), ("record", {"status": "discard"})):
        empty = error(await client.call_tool(tool_name, {**arguments, "description": " "}))
        assert empty["exit_code"] == 2 and "stdin" not in empty["error"], empty  # (never seen)
        assert "description is empty" in empty["error"], empty
    wrong = await client.call_tool("show_run", {"run": "three"})
    assert wrong.is_error


@pytest.mark.anyio
async def test_an_argument_a_tool_does_not_take_is_a_tool_error_naming_it(
        client: Client) -> None:
    """A misspelt argument is refused, named, as a command refuses an unknown option (passed
    over, ``wher`` would give every run as if no condition had been asked for); every tool's
    input schema says it takes no other."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    misspelt = await client.call_tool("query_runs", {"wher": ["status=discard"]})
    assert misspelt.is_error
    said = misspelt.content[0].text  # type: ignore[union-attr]
    assert "wher" in said and "Extra inputs are not permitted" in said
    listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == set(TOOLS)
    assert all(t.input_schema.get("additionalProperties") is False for t in listed)


@pytest.mark.anyio
async def test_a_run_reports_progress_and_a_long_one_is_collected_by_a_second_call(
        example: Path) -> None:
    """Each sample and the checks are a progress notification, their count growing; a run still
    measuring after wait_seconds gives its job, which collect waits for."""
    config = example / "config.toml"
    write(config, config.read_text().replace('decision = "strict"', 'decision = "strict"\n'
                                             'runs_per_experiment = 3\n'
                                             'checks_command = "sleep 1; env > ../env"'))
    git(example, "commit", "-qam", "three samples and checks")
    async with Client(build(example), raise_exceptions=True) as client:
        document(await client.call_tool("start_session", {"config": "config.toml"}))
        app = example / "src" / "app.js"
        write(app, app.read_text().replace(COMMENT, ""))
        seen: list[tuple[float, str | None]] = []

        async def heard(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, message))

        running = document(await client.call_tool(
            "run_experiment", {"description": "drop a comment", "wait_seconds": 0},
            progress_callback=heard))
        assert running["running"] is True and running["job"].startswith("run-")
        collected = document(await client.call_tool("collect", {"job": running["job"]},
                                                    progress_callback=heard))
        assert (collected["status"], collected["samples"]) == ("keep", [collected["metric"]] * 3)
        messages = [message for _, message in seen]
        assert messages[-1] is not None and messages[-1].startswith("checks passed in")
        assert [m for m in messages if m and m.startswith("sample ")] == \
            [f"sample {n} of at most 3: {collected['metric']:.1f}" for n in (1, 2, 3)][
                -len([m for m in messages if m and m.startswith("sample ")]):]
        counts = [progress for progress, _ in seen]
        assert counts == sorted(counts)
    # The user's commands never see the descriptor of the progress events.
    assert "GIT_AUTORESEARCH_PROGRESS_FD" not in (example.parent / "env").read_text()
    assert "AUTORESEARCH_RUN=" in (example.parent / "env").read_text()


@pytest.mark.anyio
async def test_text_that_looks_like_an_option_or_is_long_reaches_the_command_as_it_is(
        client: Client, example: Path) -> None:
    """A description or an idea that begins with a dash, or is longer than a command line
    holds, is the run's or the idea's text as given; a NUL is refused as an error document."""
    document(await client.call_tool("start_session", {"config": "config.toml"}))
    app = example / "src" / "app.js"
    long = "- Ünïcödé ✓ 日本語 — " * 8000
    write(app, app.read_text().replace(COMMENT, ""))
    kept = document(await client.call_tool("run_experiment", {"description": long}))
    assert (kept["status"], ledger_lines(example)[-1]["description"]) == ("keep", long)
    write(app, app.read_text() + "// x\n")
    dashed = document(await client.call_tool("record", {"status": "discard",
                                                        "description": "-x --help"}))
    assert dashed["description"] == "-x --help"
    added = document(await client.call_tool("ideas", {"op": "add", "text": "--help"}))
    assert added["schema"] == "git-autoresearch:idea/1"
    assert "--help" in (example / ".auto" / "ideas.md").read_text()
    nul = error(await client.call_tool("query_runs", {"grep": "a\0b"}))
    assert (nul["schema"], nul["exit_code"]) == ("git-autoresearch:error/1", 2)
    negative = error(await client.call_tool("show_run", {"run": -1}))
    assert negative["exit_code"] in (2, 3) and "-1" in negative["error"]


@pytest.mark.anyio
async def test_allow_commands_lets_start_session_take_the_shell_commands(example: Path,
                                                                       ar: Tool) -> None:
    """With --allow-commands, start_session takes command and checks_command (its schema
    lists them), and the session runs them; the configuration need not be committed."""
    outside = write(example.parent / "outside.toml", (example / "config.toml").read_text())
    async with Client(build(example, allow_commands=True), raise_exceptions=True) as client:
        listed = await client.list_tools()
        starting = next(t for t in listed.tools if t.name == "start_session")
        assert {"command", "checks_command"} <= set(starting.input_schema["properties"])
        started = document(await client.call_tool("start_session", {
            "config": str(outside), "checks_command": "touch ../checked", "command":
            "sh build.sh && touch ../measured"}))
    assert started["baseline"]["status"] == "keep"
    assert (example.parent / "measured").exists()
    assert cli(ar, example, "status")["session_id"] == started["session_id"]


def test_print_config_gives_each_harness_its_snippet(tmp_path: Path, ar: Tool) -> None:
    """Each harness's snippet parses as its file's format and starts git autoresearch mcp; Codex
    and Gemini CLI get a generous tool timeout."""
    for harness, where, args in (
            ("claude", "# .mcp.json", []), ("cursor", "# .cursor/mcp.json",
                                            ["--repo", "${workspaceFolder}"]),
            ("gemini", "# .gemini/settings.json", [])):
        printed = ar(tmp_path, "mcp", "--print-config", harness)
        server = json.loads(printed.out)["mcpServers"]["git-autoresearch"]
        assert (server["command"], server["args"]) == ("git", ["autoresearch", "mcp", *args])
        assert printed.err.startswith(where)
    assert server["timeout"] == 1800000
    codex = tomllib.loads(ar(tmp_path, "mcp", "--print-config", "codex").out)
    assert codex["mcp_servers"]["git-autoresearch"] == {
        "command": "git", "args": ["autoresearch", "mcp"], "startup_timeout_sec": 20,
        "tool_timeout_sec": 1800}


def test_without_the_sdk_the_command_says_what_to_install(
        tmp_path: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server", None)
    monkeypatch.delitem(sys.modules, "git_autoresearch.mcp_server.tools", raising=False)
    err = ar(tmp_path, "mcp", expect=3).err
    assert err.strip() == ("git autoresearch: the MCP server needs the MCP SDK, which is not "
                           "installed: pip install 'git-autoresearch[mcp]'")


@pytest.mark.anyio
async def test_the_real_server_over_stdio_lists_its_tools_and_answers(example: Path,
                                                                      ar: Tool) -> None:
    """git autoresearch mcp as a harness starts it: over stdio, through the SDK's stdio
    client (its framing), the tools listed and status answered."""
    from mcp.client.stdio import StdioServerParameters

    ar(example, "start", "--config", "config.toml")
    parameters = StdioServerParameters(command="git", args=["autoresearch", "mcp"],
                                       cwd=example, env=dict(os.environ))
    async with Client(parameters) as session:
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == TOOLS
        answered = await session.call_tool("status", {})
        assert answered.structured_content == cli(ar, example, "status")

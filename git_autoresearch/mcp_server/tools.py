"""The MCP server's tools and resources (``git autoresearch mcp``), each a thin adapter over one
command and its ``--json`` document: a tool's structured result is the document the command
prints, and its output schema that document's JSON Schema (:func:`runtime.schemas.bundled`).

What the model may not do here: set a shell command (the benchmark, the checks) from a tool's
arguments, unless the server was started with ``--allow-commands``; they come from the session's
configuration file. A refusal the model can act on (a dirty work tree, a conflict, a stale
measurement, a bad argument: exit 2 or 3) is a tool error whose text is the command's error
document; exit 4 (STOP, a stop rule) is a result, ``{"stopped": true, ...}``, that says the loop
should end. The protocol and the SDK: the official MCP Python SDK, 2.x (``mcp.server.MCPServer``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field

from .. import __version__
from ..commands.common import WARNING
from ..runtime.errors import AutoresearchError
from ..runtime.schemas import bundled
from .calls import Jobs, Outcome, error_document, run_command

# What a tool gives for exit 4 (STOP, a stop rule): the loop should end.
STOPPED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The loop should stop (exit 4): STOP was asked for, or a stop rule was met.",
    "properties": {"stopped": {"const": True}, "reason": {"type": "string"},
                   "exit_code": {"const": 4}},
    "required": ["stopped", "reason", "exit_code"],
}
# What a measuring tool gives when its command is still running after wait_seconds.
RUNNING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The command is still running: collect gives its result (job: its key).",
    "properties": {"running": {"const": True}, "job": {"type": "string"},
                   "events": {"type": "array", "items": {"type": "object"}},
                   "note": {"type": "string"}},
    "required": ["running", "job"],
}
# The arguments several tools share.
Wait = Annotated[float | None, Field(
    description="Return after this many seconds with {running, job} if the command has not "
                "ended (collect gives its result; leave the work tree alone meanwhile); null: "
                "wait until it ends, however long.", ge=0)]
Goal = Annotated[str | None, Field(description="What the session optimises.")]
NewSegment = Annotated[bool, Field(description="Start a new segment of the existing session "
                                               "under the changed configuration.")]
# The default wait: under the tool timeouts of the harnesses (about a minute for Claude Code).
WAIT_SECONDS = 45.0
Asi = Annotated[dict[str, str] | None, Field(
    description="Annotations for the run (next_action_hint, rollback_reason, ...).")]
INSTRUCTIONS = """\
git-autoresearch keeps or reverts each experiment on one measured number. The loop: change the
code, then call run_experiment with a one-sentence description (and your hypothesis); it measures,
decides, commits a keep or reverts a discard, and records the run. Never commit by hand. A result
{"running": true, "job": ...} means the measurement goes on: call collect with that job, and leave
the work tree as it is until it gives the result. Read status to see the baseline, the best and
whether to stop; query_runs and show_run to look back. A result with "stopped": true means the
loop should end (STOP or a limit)."""


def either(*kinds: str, running: bool = False) -> dict[str, Any]:
    """The output schema of a tool that gives the document of one of ``kinds``, or that the
    loop should stop, or (``running``) that its command still runs."""
    defs: dict[str, Any] = {}
    options = [_part(kind, defs) for kind in kinds] + [STOPPED_SCHEMA] + \
        ([RUNNING_SCHEMA] if running else [])
    return {"type": "object", "anyOf": options, "$defs": defs}


def _part(kind: str, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of ``kind`` as a part of a tool's output schema: its shared definitions
    moved into ``defs`` (the whole schema's), no ``$schema`` of its own."""
    schema = bundled(kind)
    defs.update(schema.pop("$defs", {}))
    schema.pop("$schema", None)
    return schema


def running(key: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """What a measuring tool gives while its command still runs."""
    return {"running": True, "job": key, "events": events,
            "note": "the command goes on: leave the work tree as it is until collect gives "
                    "its result (it measures and records what is there)"}


class Failed(Exception):
    """A tool's call failed in a way the model can act on: ``document`` is its error document,
    ``{"schema": ..., "error": ..., "exit_code": N}``, the command's own when a command
    failed."""

    def __init__(self, document: dict[str, Any]) -> None:
        super().__init__(document.get("error"))
        self.document = document

    def text(self) -> str:
        return json.dumps(self.document)


def answering(method: Callable[..., Awaitable[dict[str, Any]]]
              ) -> Callable[..., Awaitable[dict[str, Any] | CallToolResult]]:
    """``method`` as a tool: a :class:`Failed` it raises becomes the tool's error result, its
    text the error document as it stands (the SDK's own errors say "Error executing tool"
    first)."""
    @functools.wraps(method)
    async def answer(*args: Any, **kwargs: Any) -> dict[str, Any] | CallToolResult:
        try:
            return await method(*args, **kwargs)
        except Failed as failed:
            return CallToolResult(content=[TextContent(type="text", text=failed.text())],
                                  is_error=True)

    return answer


def result(outcome: Outcome) -> dict[str, Any]:
    """The tool result of a command's ``outcome``: its document; ``{"stopped": true, ...}`` for
    exit 4; else :class:`Failed` with its error document."""
    document = outcome.document
    if outcome.exit_code == 0 and document is not None:
        return document
    said = (document or {}).get("error") or outcome.stderr.strip().splitlines()[-1:] or \
        [f"exit {outcome.exit_code}"]
    reason = said if isinstance(said, str) else said[0].removeprefix("git autoresearch: ")
    if outcome.exit_code == 4:
        return {"stopped": True, "reason": reason, "exit_code": 4}
    if outcome.exit_code == 0:  # (no document where one was expected: never so far)
        raise Failed(error_document(f"no JSON document on stdout: {outcome.stdout[:200]}", 1))
    raise Failed(document if document is not None else
                 error_document(reason, outcome.exit_code))


def described(description: str) -> str:
    """A run's ``description``, which the command reads from its stdin (``-d -``); a usage
    error (exit 2) of the server's own when it is empty, as the command's would be but
    without the stdin the model never saw."""
    if not description.strip():
        raise Failed(error_document("the description is empty: say in one sentence what the "
                                    "run tried", 2))
    return description


def annotated(asi: dict[str, str] | None, hypothesis: str | None) -> list[str]:
    """The options that give a run its annotations: ``asi``, with ``hypothesis`` among them."""
    annotations = {**(asi or {}), **({"hypothesis": hypothesis} if hypothesis else {})}
    return ["--asi-json", json.dumps(annotations)] if annotations else []


def uncommitted(folder: Path, config: str) -> str | None:
    """Why the configuration file ``config`` (a path from ``folder``) may not start a session
    on a server that takes no shell command from the model: it is not a file of the
    repository committed as it stands (the commands it names are a person's, not a file the
    model wrote); None when it is."""
    from ..git import GitError, Repo
    from ..git.objects import hash_files

    try:
        repo = Repo.discover(folder)
        rel = (folder / config).resolve().relative_to(repo.top).as_posix()
        committed = repo.blobs("HEAD", [rel]).get(rel)
        if committed is not None and hash_files(repo, [rel]).get(rel) == committed:
            return None
    except (GitError, ValueError, OSError, AutoresearchError):
        pass  # (outside the repository, or none: not committed)
    return (f"{config} is not a file of the repository committed as it stands: this server "
            "takes the session's shell commands only from a committed configuration file "
            "(commit it, or start the server with --allow-commands)")


def progress_of(ctx: Context) -> Any:
    """A listener that reports each progress event of a measurement as the call's progress:
    a count that grows by one an event, and what it was."""
    count = 0

    async def report(event: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        kind = str(event.get("event"))
        if kind == "sample":
            message = f"sample {event.get('sample')} of at most {event.get('of')}: " \
                      f"{event.get('value')}"
        elif kind.endswith("_sample"):  # the incumbent's; an audit's parent's and commit's
            message = f"{kind.replace('_', ' ')} {event.get('sample')}: {event.get('value')}"
        elif kind == "checks":
            message = f"checks {'passed' if event.get('passed') else 'failed'} in " \
                      f"{event.get('duration_s')} s"
        else:
            message = kind
        await ctx.report_progress(count, None, message)

    return report


class Tools:
    """The tools of the server of the session in ``folder`` (a work tree of a repository), as
    its methods: each runs one command there and gives its document (:func:`result`). A
    server that allows shell commands serves :meth:`start_session_with_commands` as its
    ``start_session``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.jobs = Jobs()

    async def call(self, *args: str, stdin: str | None = None) -> dict[str, Any]:
        """The result of the command ``args`` (``stdin``: its input), waited for."""
        return result(await run_command(self.folder, list(args), stdin=stdin))

    async def measured(self, ctx: Context, kind: str, args: list[str],
                       wait_seconds: float | None, stdin: str | None = None) -> dict[str, Any]:
        """The result of the measuring command ``args`` (a job of ``kind``; ``stdin``, its
        input), its progress reported to ``ctx``; ``{running, job}`` once ``wait_seconds``
        have passed."""
        job = self.jobs.start(self.folder, kind, args, stdin)
        outcome = await self.jobs.wait(job, progress_of(ctx), wait_seconds)
        if outcome is None:
            return running(job.key, job.events)
        return result(outcome)

    async def start_session(
            self, ctx: Context,
            config: Annotated[str, Field(description="The configuration file (TOML) of the "
                                         "session, committed in the repository: its command, "
                                         "metric, scope and rules.")],
            goal: Goal = None,
            session_id: str | None = None,
            new_segment: NewSegment = False,
            no_baseline: bool = False,
            wait_seconds: Wait = WAIT_SECONDS,
    ) -> dict[str, Any]:
        """Start a session (git autoresearch start --config FILE): its branch, .auto/, the
        ledger, and the baseline's measurement (progress per sample). Gives the start
        document."""
        problem = uncommitted(self.folder, config)
        if problem is not None:
            raise Failed(error_document(problem, 3))
        return await self.started(ctx, config, goal, session_id, new_segment, no_baseline,
                                  wait_seconds, None, None)

    async def start_session_with_commands(
            self, ctx: Context,
            config: Annotated[str, Field(description="The configuration file (TOML) of the "
                                         "session: its command, metric, scope and rules.")],
            goal: Goal = None,
            session_id: str | None = None,
            new_segment: NewSegment = False,
            no_baseline: bool = False,
            wait_seconds: Wait = WAIT_SECONDS,
            command: Annotated[str | None, Field(description="The experiment command, instead "
                                                 "of the configuration's.")] = None,
            checks_command: Annotated[str | None, Field(description="A command that must pass "
                                                        "for a keep.")] = None,
    ) -> dict[str, Any]:
        """Start a session (git autoresearch start --config FILE), its shell commands given
        here or by the configuration file: its branch, .auto/, the ledger, and the baseline's
        measurement (progress per sample). Gives the start document."""
        return await self.started(ctx, config, goal, session_id, new_segment, no_baseline,
                                  wait_seconds, command, checks_command)

    async def started(self, ctx: Context, config: str, goal: str | None,
                      session_id: str | None, new_segment: bool, no_baseline: bool,
                      wait_seconds: float | None, command: str | None,
                      checks_command: str | None) -> dict[str, Any]:
        """What the two start tools do with their arguments."""
        args = ["start", "--config", config, "--json"]
        for option, value in (("--goal", goal), ("--session-id", session_id),
                              ("--command", command), ("--checks-command", checks_command)):
            if value is not None:
                args += [option, value]
        args += ["--new-segment"] * new_segment + ["--no-baseline"] * no_baseline
        return await self.measured(ctx, "start", args, wait_seconds)

    async def run_experiment(
            self, ctx: Context,
            description: Annotated[str, Field(description="One sentence: what this run tried.")],
            hypothesis: Annotated[str | None, Field(description="Why it should help.")] = None,
            asi: Asi = None,
            dry_run: Annotated[bool, Field(description="Measure and decide; apply nothing.")
                               ] = False,
            wait_seconds: Wait = WAIT_SECONDS,
    ) -> dict[str, Any]:
        """One iteration on the change in the work tree (git autoresearch run): measure it
        against the incumbent, keep (commit) or discard (revert, saved on an attempt ref), and
        record it. Progress per sample and for the checks. Gives the run document: status,
        metric, decision, committed, scope_violations, steer."""
        args = ["run", "-d", "-", "--json"] + ["--dry-run"] * dry_run + \
            annotated(asi, hypothesis)
        return await self.measured(ctx, "run", args, wait_seconds, stdin=described(description))

    async def measure(self, ctx: Context, wait_seconds: Wait = WAIT_SECONDS) -> dict[str, Any]:
        """Measure the work tree and say what the loop would decide, recording nothing (git
        autoresearch measure); record then keeps or discards that measurement."""
        return await self.measured(ctx, "measure", ["measure", "--json"], wait_seconds)

    async def collect(
            self, ctx: Context,
            job: Annotated[str, Field(description="The key a call that was still running gave.")],
            wait_seconds: Wait = WAIT_SECONDS,
    ) -> dict[str, Any]:
        """The result of a command a call left running (start_session, run_experiment,
        measure, audit with wait_seconds): wait for it, with its progress."""
        found = self.jobs.running.get(job)
        if found is None:
            raise Failed(error_document(
                f"no running job {job!r} (running: {', '.join(self.jobs.running) or 'none'})",
                2))
        outcome = await self.jobs.wait(found, progress_of(ctx), wait_seconds)
        if outcome is None:
            return running(found.key, found.events)
        return result(outcome)

    async def record(
            self,
            status: Literal["keep", "discard", "crash"],
            description: Annotated[str, Field(description="One sentence: what this run tried.")],
            metric: Annotated[float | None, Field(description="The metric, when you measured "
                                                  "it yourself; none: the pending measurement "
                                                  "of measure.")] = None,
            hypothesis: str | None = None,
            asi: Asi = None,
            force: Annotated[bool, Field(description="keep: keep a measurement that failed "
                                         "its checks.")] = False,
    ) -> dict[str, Any]:
        """Record the change in the work tree by hand (git autoresearch keep, discard or
        crash): keep commits it, discard reverts it (saved on an attempt ref), crash reverts
        and records a failure. Gives the run document."""
        args = [status, "-d", "-", "--json"] + ["--force"] * force + \
            (["--metric", repr(metric)] if metric is not None else []) + \
            annotated(asi, hypothesis)
        return await self.call(*args, stdin=described(description))

    async def status(self) -> dict[str, Any]:
        """Where the session stands (git autoresearch status): baseline, best, improvement,
        confidence, noise, the pending measurement, whether a stop rule is met."""
        return await self.call("status", "--json")

    async def query_runs(
            self,
            status: Literal["keep", "discard", "crash", "checks_failed"] | None = None,
            kept: bool = False,
            last: Annotated[int | None, Field(description="Only the last N runs of those "
                                              "selected.", ge=0)] = 20,
            where: Annotated[list[str] | None, Field(description="FIELD OP VALUE conditions, "
                                                     "all of which hold (metric<40, "
                                                     "asi.hypothesis~cache).")] = None,
            grep: Annotated[str | None, Field(description="A regular expression the "
                                              "description or asi matches.")] = None,
            sort: Annotated[str | None, Field(description="A field to sort by; -FIELD "
                                              "descending; best.")] = None,
            segment: int | None = None,
            all_sessions: bool = False,
    ) -> dict[str, Any]:
        """The ledger's runs, filtered (git autoresearch log --json): each record as written,
        with its segment, delta_pct against the baseline, touched and audit; and the
        warnings of the query, when there are any (a field no run has: a misspelt name
        selects nothing)."""
        args = ["log", "--json"] + ["--kept"] * kept + ["--all-sessions"] * all_sessions
        for option, value in (("--status", status), ("--last", last), ("--grep", grep),
                              ("--sort", sort), ("--segment", segment)):
            if value is not None:
                args += [option, str(value)]
        for condition in where or []:
            args += ["--where", condition]
        outcome = await run_command(self.folder, args)
        found = result(outcome)
        warned = [line.removeprefix(WARNING) for line in outcome.stderr.splitlines()
                  if line.startswith(WARNING)]
        return {**found, "warnings": warned} if warned and "runs" in found else found

    async def show_run(
            self,
            run: int,
            include_diff: bool = True,
            max_diff_chars: Annotated[int, Field(ge=0)] = 20000,
    ) -> dict[str, Any]:
        """One run (git autoresearch show N --json): its record, audits, what it set aside and
        touched, and its change (git show of its commit) cut to max_diff_chars, or left out
        without include_diff (diff_truncated says whether it was cut)."""
        shown = await self.call("show", "--json", "--", str(run))
        whole = str(shown.get("diff", ""))
        limit = max_diff_chars if include_diff else 0
        return {"show": {**shown, "diff": whole[:limit]}, "diff_truncated": len(whole) > limit}

    async def summary(
            self,
            analyze: Annotated[bool, Field(description="The analysis instead: keep rate, "
                                           "gains, streaks (git autoresearch analyze).")] = False,
    ) -> dict[str, Any]:
        """The session in a few lines, for a fresh context (git autoresearch summary), or with
        analyze its analysis document."""
        if analyze:
            return await self.call("analyze", "--json")
        return await self.call("summary", "--json")

    async def ideas(
            self,
            op: Literal["list", "add", "next", "done"],
            text: Annotated[str | None, Field(description="add: the idea.")] = None,
            number: Annotated[int | None, Field(description="done: the idea's number (as "
                                                "list gives it).")] = None,
            run: Annotated[int | None, Field(description="done: the run that tried it.")
                           ] = None,
    ) -> dict[str, Any]:
        """The ideas backlog (git autoresearch ideas): list, add one, take the next, mark one
        done."""
        args = ["ideas", op, "--json"]
        if op == "done" and run is not None:
            args += ["--run", str(run)]
        if op == "add":
            args += ["--", text or ""]
        if op == "done":
            args += ["--", str(number or 0)]
        return await self.call(*args)

    async def apply_run(self, run: int) -> dict[str, Any]:
        """Bring a run's change (a discarded attempt, say) back onto the work tree (git
        autoresearch apply N); a conflict is refused, naming the paths."""
        return await self.call("apply", "--json", "--", str(run))

    async def stop(self) -> dict[str, Any]:
        """Ask the loop to stop (git autoresearch stop): the next run ends it."""
        return await self.call("stop", "--json")

    async def audit(
            self, ctx: Context,
            runs: Annotated[list[int] | None, Field(description="The kept runs to audit "
                                                    "(none: every keep of the segment).")] = None,
            samples: Annotated[int | None, Field(ge=1)] = None,
            wait_seconds: Wait = WAIT_SECONDS,
    ) -> dict[str, Any]:
        """Measure kept runs against their parents again, interleaved, in temporary worktrees
        (git autoresearch audit): confirmed, within noise or a regression."""
        args = ["audit", "--json"] + \
            (["--samples", str(samples)] if samples is not None else []) + \
            ["--", *map(str, runs or [])]
        return await self.measured(ctx, "audit", args, wait_seconds)

    async def finalize(
            self,
            drop: Annotated[list[int] | None, Field(description="Keeps to leave out.")] = None,
            only: Annotated[list[int] | None, Field(description="Replay only these keeps.")
                            ] = None,
            split: bool = False,
            force: bool = False,
    ) -> dict[str, Any]:
        """Replay the session's keeps onto its base as a branch for review (git autoresearch
        finalize), checked; the session branch and the work tree are left as they are."""
        args = ["finalize", "--json"] + ["--split"] * split + ["--force"] * force
        for run in drop or []:
            args += ["--drop", str(run)]
        for run in only or []:
            args += ["--only", str(run)]
        return await self.call(*args)


def build(folder: Path, *, allow_commands: bool = False) -> MCPServer:
    """The server of the session in ``folder``: the :class:`Tools`, each with its output
    schema and hints, and the session's status, summary and runs as resources."""
    tools = Tools(folder)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writing = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                              open_world_hint=False)
    starting = tools.start_session_with_commands if allow_commands else tools.start_session
    specs: list[tuple[Any, dict[str, Any], ToolAnnotations]] = [
        (starting, either("start", running=True), writing),
        (tools.run_experiment, either("run", "measurement", running=True), writing),
        (tools.measure, either("measurement", running=True), writing),
        (tools.collect, either("start", "run", "measurement", "audit", running=True), writing),
        (tools.record, either("run"), writing),
        (tools.status, either("status"), reading),
        (tools.query_runs, _queried_schema(), reading),
        (tools.show_run, _shown_schema(), reading),
        (tools.summary, _summary_schema(), reading),
        (tools.ideas, either("ideas", "idea", "idea-next"), writing),
        (tools.apply_run, either("apply"), writing),
        (tools.stop, either("stop"), writing),
        (tools.audit, either("audit", running=True), writing),
        (tools.finalize, either("finalize"), writing),
    ]
    registered = []
    for fn, schema, hints in specs:
        tool = Tool.from_function(answering(fn), name=fn.__name__.removesuffix("_with_commands"),
                                  annotations=hints, structured_output=True)
        tool.fn_metadata.output_schema = schema
        _refuse_unknown_arguments(tool)
        registered.append(tool)
    server = MCPServer("git-autoresearch", instructions=INSTRUCTIONS, version=__version__,
                       tools=registered)

    @server.resource("autoresearch://status", mime_type="application/json",
                     description="git autoresearch status --json")
    async def status_resource() -> str:
        return await read(tools.call("status", "--json"))

    @server.resource("autoresearch://summary", mime_type="text/plain",
                     description="git autoresearch summary")
    async def summary_resource() -> str:
        return str(json.loads(await read(tools.summary()))["summary"])

    @server.resource("autoresearch://runs/{run}", mime_type="application/json",
                     description="git autoresearch show RUN --json")
    async def run_resource(run: int) -> str:
        return await read(tools.call("show", "--json", "--", str(run)))

    return server


def _refuse_unknown_arguments(tool: Tool) -> None:
    """``tool`` refusing an argument it does not take, as a command refuses an unknown option:
    a tool error that names it. The SDK passes over one by default, so a misspelt ``wher``
    would give every run as if no condition had been asked for. Its input schema says so too
    (``additionalProperties: false``)."""
    loose = tool.fn_metadata.arg_model
    strict = cast("type[ArgModelBase]", type(loose.__name__, (loose,), {
        "__module__": loose.__module__,
        "model_config": ConfigDict(**{**loose.model_config, "extra": "forbid"})}))
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)


async def read(document: Awaitable[dict[str, Any]]) -> str:
    """A resource's text: ``document`` as JSON; a failed command, a :class:`ResourceError`
    whose message is its error document."""
    try:
        return json.dumps(await document)
    except Failed as failed:
        raise ResourceError(failed.text()) from None


def _shown_schema() -> dict[str, Any]:
    """show_run's output schema: the show document (its diff cut) and whether it was cut."""
    defs: dict[str, Any] = {}
    return {"type": "object", "properties": {
        "show": _part("show", defs), "diff_truncated": {"type": "boolean"}},
        "required": ["show", "diff_truncated"], "$defs": defs}


def _queried_schema() -> dict[str, Any]:
    """query_runs' output schema: the log document, with the query's warnings when there are
    any (what ``log`` says on stderr), or that the loop should stop."""
    schema = either("log")
    log = schema["anyOf"][0]
    log["properties"] = {**log["properties"], "warnings": {
        "type": "array", "items": {"type": "string"},
        "description": "What the query warned of, as log says it on stderr: a field that "
                       "no run has (a misspelt name selects nothing), say."}}
    return schema


def _summary_schema() -> dict[str, Any]:
    """summary's output schema: the summary's text, or the analyze document."""
    defs: dict[str, Any] = {}
    return {"type": "object", "anyOf": [
        {"type": "object", "properties": {"summary": {"type": "string"}},
         "required": ["summary"]}, _part("analyze", defs)], "$defs": defs}

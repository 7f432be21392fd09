"""log: the runs of a session, or of every session, filtered, sorted and written in the format
asked for (the query itself is :mod:`git_autoresearch.review.query`, the formats
:mod:`git_autoresearch.review.query_format`)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from ..runtime.errors import UsageError
from .common import (
    CONTEXT,
    PIPE_BYTES,
    WHOLE,
    WholeRange,
    left_to_exit,
    warn,
    widen_stdout_pipe,
)

if TYPE_CHECKING:
    from ..ledger import Ledger
    from ..review.query import Query, Row

_FORMAT_HELP = ("table, markdown, json, jsonl, csv or tsv; or a template with {field} "
                "placeholders ({run}, {metric}, {asi.hypothesis}, {{ and }} for braces), one "
                "line a run, as git log --format. --json, --csv and --tsv are its aliases.")


@click.command("log", context_settings=CONTEXT, short_help="query the runs: filter, sort, format")
@click.option("--segment", type=WHOLE, help="Only runs of this segment (0 is the first).")
@click.option("--status", type=click.Choice(["keep", "discard", "crash", "checks_failed"]),
              help="Only runs with this status.")
@click.option("--kept", is_flag=True, help="Only kept runs (--status keep).")
@click.option("--run", "run_range", metavar="N|A..B",
              help="Only these runs: N, A..B (both included), A.. or ..B.")
@click.option("--since", metavar="DATE",
              help="Only runs recorded at or after DATE, as git log reads it (2026-11-30, "
                   "midnight, yesterday, '3 hours ago').")
@click.option("--until", metavar="DATE", help="Only runs recorded at or before DATE.")
@click.option("--grep", "greps", multiple=True, metavar="PATTERN",
              help="Only runs whose description or asi text matches PATTERN (a regular "
                   "expression; given again: any of them).")
@click.option("-i", "--regexp-ignore-case", "ignore_case", is_flag=True,
              help="--grep ignores case.")
@click.option("--invert-grep", is_flag=True, help="Only runs that --grep does not match.")
@click.option("--where", "wheres", multiple=True, metavar="EXPR",
              help="Only runs where FIELD OP VALUE holds (OP: < <= = != >= > ~ !~; ~ a regular "
                   "expression): 'mem_mb>2048', 'asi.hypothesis~cache', 'worker=w2'. "
                   "Repeatable: all must hold.")
@click.option("--worker", metavar="NAME", help="Only runs recorded by this worker.")
@click.option("--decision", type=click.Choice(["better", "worse", "inconclusive", "no_change",
                                               "baseline"]),
              help="Only runs whose decision has this verdict.")
@click.option("--touched", type=click.Choice(["readonly", "outside", "any"]),
              help="Only runs whose experiment changed a readonly file (readonly), a file "
                   "outside the scope (outside), or either (any); each was set aside, never "
                   "committed. The table marks them (R, O).")
@click.option("--last", type=WholeRange(min=0), metavar="N",
              help="Only the last N runs (of those the filters keep, in run order).")
@click.option("--sort", "sorts", multiple=True, metavar="FIELD",
              help="Sort by FIELD (-FIELD: descending; best: the metric, best first in its "
                   "direction, each way of measuring ranked apart, the current one first); a "
                   "comma-separated list or repeated, the first the most significant. Runs "
                   "without the field come last.")
@click.option("-n", "--max-count", type=WholeRange(min=0), metavar="N",
              help="At most N runs, after sorting.")
@click.option("--columns", metavar="LIST",
              help="The columns, comma-separated: run,status,metric,mem_mb,asi.hypothesis "
                   "(for every format; --json keeps every field without it).")
@click.option("--format", "fmt", metavar="FORMAT", help=_FORMAT_HELP)
@click.option("--all-sessions", is_flag=True,
              help="Every session of the repository (branches and refs/autoresearch/*, pulled "
                   "ones included), with a session column.")
@click.option("--tsv", is_flag=True,
              help="Write the seed's results.tsv columns: experiment commit metric status "
                   "duration_s description (secondary metrics as a [name=value, ...] suffix, "
                   "stopped rows where the loop stopped); import reads it back. With "
                   "--columns: those columns, tab-separated.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Write CSV: run, segment, status, metric, delta_pct, confidence, commit, "
                   "duration_s, description, then one column per secondary metric.")
@click.option("--json", "as_json", is_flag=True, help="Write JSON: one object a run.")
def log_cmd(segment: int | None, status: str | None, kept: bool, run_range: str | None,
            since: str | None, until: str | None, greps: tuple[str, ...], ignore_case: bool,
            invert_grep: bool, wheres: tuple[str, ...], worker: str | None,
            decision: str | None, touched: str | None, last: int | None, sorts: tuple[str, ...],
            max_count: int | None, columns: str | None, fmt: str | None, all_sessions: bool,
            tsv: bool, as_csv: bool, as_json: bool) -> None:
    """The runs of the ledger, newest last (our session, a pi-autoresearch session read in
    place, or the Result: trailers of the current branch; --all-sessions: every session of the
    repository), filtered, sorted and in the format asked for."""
    from ..ledger import collector_paused
    from ..review import query_format
    from ..review.query import Query, compile_pattern, parse_range, parse_sort, parse_where

    chosen = _chosen_format(fmt, tsv, as_csv, as_json)
    template = query_format.parse_template(chosen) if query_format.is_template(chosen) else None
    names = query_format.parse_columns(columns) if columns is not None else None
    if kept and status not in (None, "keep"):
        raise UsageError(f"--kept and --status {status} ask for two statuses")
    query = Query(status="keep" if kept else status, segment=segment,
                  runs=parse_range(run_range) if run_range is not None else (None, None),
                  grep=[compile_pattern(p, f"--grep {p!r}", ignore_case=ignore_case)
                        for p in greps],
                  invert_grep=invert_grep, where=[parse_where(w) for w in wheres],
                  worker=worker, decision=decision, touched=touched, last=last,
                  sort=parse_sort(sorts),
                  max_count=max_count)
    with collector_paused():  # (every row is read and written: nothing cyclic is made)
        if all_sessions:
            from ..workers.sessions import repository

            repo = repository()
            _dates(query, repo.date_seconds, since, until)
            rows, book = query.select(_every_session(repo, segment)), None
        else:
            # Every run written as its line stands: each read as its line (runs_as_text).
            whole = template is None and chosen in ("json", "jsonl") and names is None \
                and since is None and until is None and query.selects_all()
            book, sid, source = _one_session(query, since, until, segment, as_text=whole)
            if whole:
                widen_stdout_pipe()  # (every run written: megabytes for a long session)
                for piece in query_format.ledger_json_chunks(book, source,
                                                            lines=chosen == "jsonl"):
                    click.echo(piece, nl=False)
                left_to_exit(book)
                return
            from ..review.query import rows_of

            rows = query.select(rows_of(book, sid, source))
        from ..review.query import absent

        fields = [piece[0] for piece in template or [] if isinstance(piece, tuple)]
        _misspelt_where(query, rows, all_sessions, segment)
        for option, asked in (("--sort", [name for name, _ in query.sort]),
                              ("--columns", names or []), ("--format", fields)):
            for name in absent(rows, asked):
                warn(f"{option} {name}: no run shown has this field (a field of the run "
                     "records, a secondary metric, or a dotted path such as asi.hypothesis)")
        _sorted_apart(query.sort, rows, all_sessions)
        if template is not None:
            written = query_format.template_text(rows, template)
        elif chosen in ("json", "jsonl"):
            write = query_format.json_text if chosen == "json" else query_format.jsonl_text
            written = write(rows, names, all_sessions)
        elif chosen == "table":
            width = shutil.get_terminal_size((120, 20)).columns
            if names is None and not all_sessions:
                from ..review.report import retries, table

                audited = rows[0].audited if rows else {}
                written = table([(r.run, r.segment) for r in rows], width, audited,
                                retries(book.runs) if book is not None else None)
            else:
                shown = names or query_format.default_columns(rows, all_sessions)
                written = query_format.table_text(rows, shown, width)
        elif chosen == "markdown":
            shown = names or query_format.default_columns(rows, all_sessions)
            written = query_format.markdown_text(rows, shown)
        else:
            written = _delimited(rows, chosen, names, book, query)
        _write(written)


def _write(written: str) -> None:
    """``written`` on stdout, into a widened pipe (:func:`commands.common.widen_stdout_pipe`)
    when it holds more than a pipe does by default."""
    if len(written) > PIPE_BYTES // 16:
        widen_stdout_pipe()
    click.echo(written, nl=False)


def _ranked_apart(rows: list[Row], all_sessions: bool) -> None:
    """Say on stderr how ``--sort best`` ranked ``rows`` when they were measured in more than
    one way (:func:`review.query.measurements_of`): each way apart, in its order."""
    from ..review.query import measurements_of
    from ..review.report import measured_by, segment_list

    ways = measurements_of(rows)
    if len(ways) < 2:
        return
    said = []
    for _, pairs in ways:
        sessions = list(dict.fromkeys(session for session, _ in pairs))
        where = " and ".join(
            (f"session {session} " if all_sessions else "")
            + segment_list([segment.index for held, segment in pairs if held == session])
            for session in sessions)
        said.append(f"{where} ({measured_by(pairs[-1][1], direction=False)})")
    warn("--sort best: the runs shown were measured in more than one way (another command, "
         "metric or direction); each is ranked apart, the current one first: "
         + ", then ".join(said) + "; --segment N shows one")


def _sorted_apart(sort: list[tuple[str, bool]], rows: list[Row], all_sessions: bool) -> None:
    """What a sort by ``best`` or ``metric`` of runs measured in more than one way says."""
    if any(name == "best" for name, _ in sort):
        _ranked_apart(rows, all_sessions)
    elif any(name == "metric" for name, _ in sort):
        _mixed_metrics(rows)


def _mixed_metrics(rows: list[Row]) -> None:
    """Say on stderr that ``--sort metric`` put together runs measured in more than one way
    (:func:`review.query.measurements_of`), whose metrics are not to be compared."""
    from ..review.query import measurements_of

    if len(measurements_of(rows)) > 1:
        warn("--sort metric: the runs shown were measured in more than one way (another "
             "command, metric or direction): their metrics are sorted together as numbers; "
             "--sort best ranks each way apart, --segment N shows one")


def _chosen_format(fmt: str | None, tsv: bool, as_csv: bool, as_json: bool) -> str:
    """The format asked for: ``--format``, or the flag that is its alias; :class:`UsageError`
    when they disagree or the format is unknown."""
    from ..review.query import shown
    from ..review.query_format import FORMATS, is_template

    flags = [name for name, on in (("json", as_json), ("tsv", tsv), ("csv", as_csv)) if on]
    if fmt is None:
        return flags[0] if flags else "table"
    if not is_template(fmt) and fmt not in FORMATS:
        raise UsageError(f"--format {shown(fmt)!r}: no such format (one of "
                         f"{', '.join(FORMATS)}, or a template with {{field}} placeholders)")
    for flag in flags:
        if flag != fmt:
            raise UsageError(f"--format {shown(fmt)} and --{flag} ask for two formats")
    return fmt


def _dates(query: Query, read: Callable[..., int | None], since: str | None,
           until: str | None) -> None:
    """``--since`` and ``--until`` read by git (``read``: :meth:`Repo.date_seconds`) into
    ``query`` (epoch seconds). A bare day (``2026-12-01``), which git reads at the current
    time of day, means the whole day: from its first second (``--since``) to its last
    (``--until``)."""
    import re
    import time

    from ..review.query import shown

    for option, given, is_until in (("--since", since, False), ("--until", until, True)):
        if given is None:
            continue
        if not given.strip():
            raise UsageError(f"{option}: an empty date")
        day = re.fullmatch(r"\s*(\d{4}-\d{2}-\d{2})\s*", given, re.ASCII)
        if day:
            from datetime import date

            try:
                date.fromisoformat(day.group(1))
            except ValueError:
                raise UsageError(f"{option} {shown(given)!r}: no such day") from None
        seconds = read(f"{day.group(1)} {'23:59:59' if is_until else '00:00:00'}"
                       if day else given, until=is_until)
        if seconds is None:
            raise UsageError(f"{option} {shown(given)!r}: git reads no date in it")
        if not day and abs(seconds - time.time()) < 2 and "now" not in given.lower():
            # git reads a text it does not understand as now: said, since no run matching
            # would otherwise look like an answer.
            warn(f"{option} {shown(given)!r}: git reads it as now (a date it cannot read is "
                 "now, as for git log)")
        if is_until:
            query.until = seconds
        else:
            query.since = seconds


def _misspelt_where(query: Query, rows: list[Row], all_sessions: bool,
                    segment: int | None) -> None:
    """Say each ``--where`` field that no run has (a misspelt one, most often: ``stauts=keep``
    selects nothing, ``stauts!=keep`` everything): among the rows selected, or when none was,
    among every run of the session (or sessions), read again."""
    from ..review.query import absent, rows_of

    asked = [condition.field for condition in query.where]
    if not asked:
        return
    if not rows:
        if all_sessions:
            from ..workers.sessions import every_ledger, repository

            rows = [row for sid, where, book in every_ledger(repository())
                    for row in rows_of(book, sid, where)]
        else:
            from ..session.for_reading import open_for_reading

            session = open_for_reading()
            rows = list(rows_of(session.ledger, session.config.session_id, "ledger"))
        if segment is not None:
            rows = [row for row in rows if row.segment.index == segment]
    for name in absent(rows, asked):
        warn(f"--where {name}: no run has this field (a field of the run records, a "
             "secondary metric, or a dotted path such as asi.hypothesis)")


def _one_session(query: Query, since: str | None, until: str | None,
                 segment: int | None, *, as_text: bool = False) -> tuple[Ledger, str, str]:
    """The ledger of the session here as read for ``query`` (the run lines it cannot select
    unparsed; with ``as_text``, each run held as its line, :func:`ledger.runs_as_text`), the
    session's id and the ledger's source (``ledger`` or ``trailers``; the reader says on
    stderr when it read the ``Result:`` trailers alone)."""
    from contextlib import nullcontext

    from ..ledger import only_runs, runs_as_text
    from ..review.query import line_test
    from ..workers.sessions import repository
    from .status import open_warned, segment_of

    if since is not None or until is not None:
        _dates(query, repository().date_seconds, since, until)
    # The lines the query cannot select are never parsed.
    with only_runs(line_test(query)), runs_as_text() if as_text else nullcontext():
        session = open_warned()
    if segment is not None:
        segment_of(session, segment)
    repair = "left out" if session.read_only else "left out (resume sets it aside)"
    for bad in session.ledger.malformed:
        warn(f"{session.layout.ledger}:{bad.line}: not readable, {repair}: {bad.reason}"
             + (" (an append that was cut short)" if bad.torn else ""))
    source = "trailers" if session.trailer_branch else "ledger"
    return session.ledger, session.config.session_id, source


def _every_session(repo: Any, segment: int | None) -> Iterator[Row]:
    """The rows of every session of the repository (:func:`workers.sessions.every_ledger`), session
    by session; each read from a state ref or from trailers is said on stderr."""
    from ..history.refs import session_branch
    from ..review.query import rows_of
    from ..workers.sessions import every_ledger

    for sid, where, book in every_ledger(repo):
        if where == "state ref":
            warn(f"session {sid}: read from its state ref (refs/autoresearch/{sid}/state)")
        elif where == "trailers":
            warn(f"session {sid}: read from the Result: trailers of {session_branch(sid)} "
                 "alone (kept runs only)")
        if segment is not None and segment >= len(book.segments):
            continue
        yield from rows_of(book, sid, "ledger" if where == ".auto" else where)


def _delimited(rows: list[Row], chosen: str, names: list[str] | None, book: Ledger | None,
               query: Query) -> str:
    """CSV or TSV: the columns asked for; without them, for one session (``book``, its
    ledger), the seed's results.tsv (TSV: with its ``stopped`` rows unless runs were filtered
    or sorted) or the CSV of :func:`review.report.csv_text`; across sessions (``book`` None),
    :func:`review.query_format.csv_columns` with ``session`` first."""
    from ..review import query_format, report

    if names is None and book is not None:
        pairs = [(r.run, r.segment) for r in rows]
        if chosen == "csv":
            return report.csv_text(pairs)
        plain = query.status is None and not (query.where or query.grep or query.sort) and \
            query.runs == (None, None) and query.since is None and query.until is None and \
            query.worker is None and query.decision is None and query.touched is None and \
            query.max_count is None
        stops = report.stops_among(book, pairs) if plain else []
        return report.tsv(pairs, stops)
    if names is None:
        names = query_format.csv_columns(rows, book is None)
        if chosen == "tsv":
            names = [n for n in names if not n.startswith("metrics.")]
    return query_format.delimited_text(rows, names, "\t" if chosen == "tsv" else ",")

"""``git autoresearch import``: other tools' sessions as ledger lines, no field lost.

Sources:
- pi-autoresearch's ``.auto/log.jsonl``, or its older flat ``autoresearch.jsonl``: already our
  format; lines are copied unchanged (unknown fields and line types included).
- karpathy/autoresearch's ``results.tsv`` (``commit``, the metric column such as ``val_bpb``,
  ``memory_gb``, ``status``, ``description``; its ``program.md``): one run per row, every
  column kept, read as its ``analysis.ipynb`` reads it (pandas ``read_csv(sep="\t")``).
- the loop seed's ``.autoresearch/config.json`` with ``.autoresearch/results.tsv``
  (``experiment commit metric status duration_s description``; the seed's SKILL, "Step 9"),
  and what ``git autoresearch log --tsv`` writes: the config becomes the header (goal,
  direction; the whole config kept under ``config``), one run per row, a ``stopped`` row a
  ``{"type": "stopped"}`` line; the ``[name=value, ...]`` suffix of a description is read
  back into ``metrics``.

A row's ``timestamp`` is the committer time of its ``commit`` when that commit exists in the
repository holding the file or in the current one, else None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ledger import dumps
from ..ledger.records import RunRecord, run_record
from ..review.report import split_metrics, text_number
from ..runtime.errors import Refused, UsageError

STATUS_WORDS = {"keep": "keep", "kept": "keep", "discard": "discard", "discarded": "discard",
                "crash": "crash", "crashed": "crash", "checks_failed": "checks_failed",
                "stopped": None}
DIRECTIONS = ("lower", "higher")
KARPATHY = "karpathy/autoresearch"
LOOP_SEED = "autoresearch loop seed"
# How karpathy's analysis.ipynb reads results.tsv, named in the warnings.
PANDAS = "pandas' read_csv, as karpathy's analysis.ipynb calls it,"


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (byte {exc.start})") from None


@dataclass
class Record:
    """One record of a tab-separated file: the 1-based ``line`` it begins on and ``lines`` it
    spans, its ``fields``, whether a field was in double quotes, and whether text followed a
    closing quote (``"fast" path``, read as ``fast path``)."""

    line: int
    lines: int
    fields: list[str]
    quoted: bool
    odd: bool = False


def _records(text: str, path: Path) -> list[Record]:
    """The records of tab-separated ``text`` as pandas' C parser reads them with
    ``sep="\t"`` and its defaults (what karpathy's ``analysis.ipynb`` calls): a field that
    begins with ``"`` is quoted (tabs and newlines inside it belong to it, ``""`` is one
    quote, text after the closing quote is kept), a quote elsewhere is a character, ``\r\n``
    ends a line as ``\n`` does, blank lines are skipped. Raises :class:`UsageError` for a
    quoted field that never closes (pandas refuses the file: "EOF inside string")."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if '"' not in text:
        return [Record(n, 1, raw.split("\t"), False)
                for n, raw in enumerate(text.split("\n"), start=1) if raw]
    out: list[Record] = []
    fields: list[str] = []
    field: list[str] = []
    state, line, first, quoted, odd = "start", 1, 1, False, False

    def end_record() -> None:
        fields.append("".join(field))
        if fields != [""] or quoted:
            out.append(Record(first, line - first + 1, list(fields), quoted, odd))
        fields.clear()

    for ch in text:
        if state == "quoted":
            if ch == '"':
                state = "quote"
            else:
                field.append(ch)
                line += ch == "\n"
            continue
        if state == "quote" and ch == '"':
            field.append(ch)
            state = "quoted"
        elif ch == "\t":
            fields.append("".join(field))
            field.clear()
            state = "start"
        elif ch == "\n":
            end_record()
            field.clear()
            line += 1
            state, first, quoted, odd = "start", line, False, False
        elif state == "start" and ch == '"':
            state, quoted = "quoted", True
        else:
            field.append(ch)
            odd = odd or state == "quote"
            state = "field"
    if state == "quoted":
        raise UsageError(f"{path}:{first}: a double quote opens a field that never closes "
                         "(pandas' read_csv refuses the file too)")
    if field or fields or quoted:
        end_record()
    return out


@dataclass
class Row:
    """A data row: its 1-based ``line`` in the file and its ``cells`` by column name (a
    missing cell is None)."""

    line: int
    cells: dict[str, str | None]


def _rows(path: Path, warnings: list[str]) -> list[Row]:
    """The data rows of the tab-separated file ``path`` under its header row. Fields past the
    header's are a tab inside the last column (the description): joined back into it, with a
    warning, as is a quoted field (see :func:`_records`) that pandas reads otherwise than the
    text shows (text after a closing quote, a quoted field over several lines); a field
    quoted whole, as :func:`review.report.tsv` writes one that begins with a quote, is no
    surprise."""
    records = _records(_text(path), path)
    if not records:
        return []
    header = [name.strip() for name in records[0].fields]
    rows: list[Row] = []
    for index, record in enumerate(records[1:]):
        fields = record.fields
        if not record.quoted and not any(f.strip() for f in fields):
            continue  # blank (pandas skips it, or reads a row of nothing)
        where = f"{path.name}:{record.line}"
        if len(fields) > len(header):
            fields = [*fields[:len(header) - 1], "\t".join(fields[len(header) - 1:])]
            warnings.append(
                f"{where}: {len(record.fields)} fields under {len(header)} columns: the "
                f"tab{'s' if len(record.fields) - len(header) > 1 else ''} in its "
                f"{header[-1]} kept; {PANDAS} "
                + ("takes the first columns of every row as its index and shifts the rest"
                   if index == 0 else f"refuses the whole file: \"Expected {len(header)} "
                   f"fields in line {record.line}, saw {len(record.fields)}\""))
        elif record.odd or record.lines > 1:
            warnings.append(f"{where}: a field begins with a double quote, which {PANDAS} "
                            "takes as quoting: read as it reads it"
                            + (f", over {record.lines} lines" if record.lines > 1 else "")
                            + ": " + " | ".join(f for f in fields if f)[:80])
        cells: dict[str, str | None] = dict.fromkeys(header)
        cells.update(zip(header, fields, strict=False))
        rows.append(Row(record.line, cells))
    return rows


def _cell(row: Row, column: str) -> str:
    return (row.cells.get(column) or "").strip()


class _Times:
    """Committer times, in epoch milliseconds, of the commits rows name, looked up in the
    repository holding the file and in the current one (:meth:`Repo.commit_times`)."""

    def __init__(self, source: Path, rows: list[Row]) -> None:
        from ..git import Repo

        names = [_cell(row, "commit") for row in rows]
        self.found: dict[str, int] = {}
        tops: set[Path] = set()
        for where in (source.parent, None):
            try:
                repo = Repo.discover(where)
            except Refused:
                continue
            if repo.top in tops:
                continue
            tops.add(repo.top)
            missing = [n for n in names if n not in self.found]
            self.found.update({k: v * 1000 for k, v in repo.commit_times(missing).items()})

    def of(self, commit: str) -> int | None:
        return self.found.get(commit)


def _tsv_metric(status: str, metric: float | None) -> float | None:
    """The metric a row's run records: ``0`` for a crash (pi-autoresearch's), none for any
    other run without one (a discard or failed checks recorded with nothing measured, which
    ``log --tsv`` writes as ``-``)."""
    return 0 if status == "crash" else metric


def _tsv_runs(path: Path, rows: list[Row], metric_column: str, source: str, times: _Times,
              numbers: list[int] | None = None,
              warnings: list[str] | None = None) -> list[RunRecord]:
    """One run record a row of ``rows`` (none may be ``stopped``), numbered from 1 or by
    ``numbers``. A status that is none of the known words is kept as written (and read as a
    keep, as pi-autoresearch reads an unknown status), named in ``warnings``: no row is
    dropped. Raises :class:`UsageError` for a metric that is no finite number."""
    runs: list[RunRecord] = []
    for index, row in enumerate(rows):
        word = _cell(row, "status").lower()
        status = STATUS_WORDS.get(word)
        if status is None:
            if warnings is not None:
                warnings.append(f"{path.name}:{row.line}: unknown status {word!r}, kept as "
                                "written (read as a keep, as pi-autoresearch reads it)")
            status = word or "unknown"
        raw = _cell(row, metric_column)
        metric = text_number(raw)
        if metric is None and status != "crash" and raw not in ("", "-"):
            raise UsageError(f"{path}:{row.line}: {metric_column} {raw!r} is not a finite "
                             "number")
        extras = dict(row.cells)
        description = (row.cells.get("description") or "").strip()
        metrics: dict[str, Any] = {
            k: n for k, v in extras.items()
            if k not in (metric_column, "experiment", "duration_s", "commit", "description")
            and (n := text_number((v or "").strip())) is not None}
        if source == LOOP_SEED:
            description, suffix = split_metrics(description)
            metrics.update(suffix)
        commit = _cell(row, "commit")
        if metric is None and status not in ("discard", "checks_failed"):
            # (a keep, or a status read as one, is a number kept: without one, it failed)
            status = "crash"
        record = run_record(numbers[index] if numbers else len(runs) + 1,
                            "" if commit in ("", "-") else commit[:7],
                            _tsv_metric(status, metric), metrics, status,
                            "" if description == "-" else description, times.of(commit), 0,
                            imported_from=source, source_row=extras)
        duration = text_number(_cell(row, "duration_s"))
        if duration is not None:
            record["duration_s"] = duration
        runs.append(record)
    return runs


def _ledger_lines(source: Path, warnings: list[str]) -> list[str]:
    """The lines of a pi-autoresearch ledger, unchanged (carriage returns and blank lines
    dropped), as pi-autoresearch 1.6.2 reads them (``reconstructJsonlState``,
    extensions/pi-autoresearch/jsonl.ts:173): a line that is no JSON object (a torn append)
    is skipped, as pi skips it, with a warning in ``warnings``; so is each record read
    otherwise than it says (:meth:`Ledger.notices`). Raises :class:`UsageError` naming the
    first line the ledger reader cannot read at all (a ``run`` that is no positive whole
    number, a line too long) and when no line is left."""
    from ..ledger import parse

    lines = [ln.rstrip("\r") for ln in _text(source).split("\n")]
    kept, skipped = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            skipped.append(f"{source}:{number}: not JSON")
            continue
        if not isinstance(obj, dict):
            skipped.append(f"{source}:{number}: not a JSON object")
            continue
        kept.append(line)
    if not kept:
        raise UsageError(f"{skipped[0]}; the file holds no ledger line" if skipped
                         else f"{source} holds no ledger line")
    warnings += [f"{what}: skipped, as pi-autoresearch skips it" for what in skipped]
    book = parse("".join(ln + "\n" for ln in kept).encode("utf-8", "surrogateescape"))
    bad = book.malformed
    if bad:
        raise UsageError(f"{source}: ledger record {bad[0].line}: {bad[0].reason}"
                         + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    warnings += book.notices(source)
    return kept


def _whole(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[0-9]{1,9}", text) else None


def _loop_seed_lines(path: Path, rows: list[Row], direction: str | None, times: _Times,
                     warnings: list[str]) -> list[str]:
    """The loop seed's session as ledger lines: its ``config.json`` (when there is one) as
    the header, then one run a row of its ``results.tsv`` and a ``stopped`` event a
    ``stopped`` row. Run numbers follow the ``experiment`` column, in any order (workers
    record runs out of order): experiment N is run N + 1 when one is experiment 0 (the seed's
    baseline, wherever its row is), else run N; a row whose number is missing or an earlier
    row's gets the next number after the previous run's that no row gives itself, with a
    warning."""
    config: dict[str, Any] = {}
    config_file = path.parent / "config.json"
    if config_file.is_file():
        try:
            config = json.loads(_text(config_file))
        except ValueError:
            raise UsageError(f"{config_file} is not valid JSON") from None
        if not isinstance(config, dict):
            raise UsageError(f"{config_file} is not a JSON object")
    told = str(config.get("direction", "minimize")).lower()
    told = "higher" if told in ("maximize", "higher") else "lower"
    if direction is not None and direction != told and "direction" in config:
        warnings.append(f"{config_file} says {config['direction']}; --direction {direction} "
                        "is used")
    header = {"type": "config", "name": config.get("goal") or "loop seed session",
              "metricName": str(config.get("metric_name") or "metric"),
              "metricUnit": str(config.get("metric_unit") or ""),
              "bestDirection": direction or told,
              "imported_from": LOOP_SEED, "config": config}
    experiments = [_whole(_cell(row, "experiment")) for row in rows]
    offset = 1 if 0 in experiments else 0  # (wherever experiment 0 is: no run 0)
    # The number each run row gives itself, for the first row that gives it (workers record
    # runs out of order: run 5 before run 4); another row numbered on steps over these.
    given: dict[int, int] = {}
    for at, (row, experiment) in enumerate(zip(rows, experiments, strict=True)):
        if experiment is not None and _cell(row, "status").lower() != "stopped":
            given.setdefault(experiment + offset, at)
    lines = [dumps(header)]
    last = 0
    taken: set[int] = set()
    shifted: list[str] = []
    for at, (row, experiment) in enumerate(zip(rows, experiments, strict=True)):
        if _cell(row, "status").lower() == "stopped":
            event: dict[str, Any] = {"type": "stopped", "timestamp": None, "next_run": last + 1,
                                     "experiment": experiment}
            description = _cell(row, "description")
            event["description"] = "" if description == "-" else description
            duration = text_number(_cell(row, "duration_s"))
            if duration is not None:
                event["duration_s"] = duration
            event.update(imported_from=LOOP_SEED, source_row=dict(row.cells))
            lines.append(dumps(event))
            continue
        number = (experiment or 0) + offset
        if experiment is None or given.get(number) != at:
            number = last + 1
            while number in taken or number in given:
                number += 1
        taken.add(number)
        if number != (experiment or 0) + offset:
            shifted.append(f"line {row.line} (experiment {_cell(row, 'experiment')!r}) is "
                           f"run {number}")
        (record,) = _tsv_runs(path, [row], "metric", LOOP_SEED, times, [number], warnings)
        record["experiment"] = experiment if experiment is not None \
            else _cell(row, "experiment") or None
        lines.append(dumps(record))
        last = number
    if shifted:
        warnings.append(f"{path.name}: {len(shifted)} row{'s' if len(shifted) > 1 else ''} "
                        "whose experiment number is missing, no whole number or an earlier "
                        "row's, numbered on from the previous run: " + "; ".join(shifted[:3])
                        + ("; ..." if len(shifted) > 3 else ""))
    return lines


def convert(source: Path, *, direction: str | None = None,
            warnings: list[str] | None = None) -> tuple[list[str], str]:
    """Ledger lines for ``source`` (a file or a folder holding one of the known layouts), and
    the name of what was read. ``direction`` (``lower`` or ``higher``) sets the header's
    ``bestDirection`` of a ``results.tsv`` (karpathy's default: lower); rows read otherwise
    than their text shows, or otherwise than the peer reads them, are appended to
    ``warnings``. Raises :class:`UsageError` when nothing known is there, or ``direction``
    is given for a ledger (which carries its own)."""
    warnings = [] if warnings is None else warnings
    if source.is_dir():
        for candidate in (source / ".auto" / "log.jsonl", source / "autoresearch.jsonl",
                          source / ".autoresearch" / "results.tsv", source / "results.tsv"):
            if candidate.is_file():
                return convert(candidate, direction=direction, warnings=warnings)
        raise UsageError(f"{source} holds no .auto/log.jsonl, autoresearch.jsonl, "
                         ".autoresearch/results.tsv or results.tsv")
    if not source.is_file():
        raise UsageError(f"{source} does not exist")
    if source.suffix == ".jsonl":
        if direction is not None:
            raise UsageError(f"{source}: --direction is for a results.tsv; a ledger's config "
                             "lines carry the direction")
        return _ledger_lines(source, warnings), f"pi-autoresearch ledger {source}"
    if source.suffix != ".tsv":
        raise UsageError(f"{source}: import reads .jsonl ledgers and .tsv results")
    if direction is not None and direction not in DIRECTIONS:
        raise UsageError(f"--direction {direction!r}: lower or higher")
    rows = _rows(source, warnings)
    if not rows:
        raise UsageError(f"{source} has no rows")
    columns = list(rows[0].cells)
    times = _Times(source, rows)
    if "experiment" in columns and "metric" in columns:
        # (a session folder when the config is beside the file, else the file alone: what
        # log --tsv wrote)
        return (_loop_seed_lines(source, rows, direction, times, warnings),
                f"loop seed session {source.parent}"
                if (source.parent / "config.json").is_file() else f"loop seed results {source}")
    if "commit" in columns and "status" in columns and len(columns) >= 3:
        metric = next(c for c in columns if c not in ("commit", "status", "description"))
        header = {"type": "config", "name": f"karpathy autoresearch ({source.name})",
                  "metricName": metric, "metricUnit": "", "bestDirection": direction or "lower",
                  "imported_from": "karpathy/autoresearch results.tsv"}
        kept = []
        for row in rows:
            if _cell(row, "status").lower() == "stopped":
                warnings.append(f"{source.name}:{row.line}: a stopped row is no run; left "
                                "out")
            else:
                kept.append(row)
        runs = _tsv_runs(source, kept, metric, KARPATHY, times, warnings=warnings)
        return [dumps(header), *map(dumps, runs)], f"karpathy/autoresearch results {source}"
    raise UsageError(f"{source}: unknown columns {', '.join(columns)}")

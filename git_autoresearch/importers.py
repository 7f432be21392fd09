"""``git autoresearch import``: other tools' sessions as ledger lines, no field lost.

Sources:
- pi-autoresearch's ``.auto/log.jsonl``, or its older flat ``autoresearch.jsonl``: already our
  format; lines are copied unchanged (unknown fields and line types included).
- karpathy/autoresearch's ``results.tsv`` (``commit``, the metric column such as ``val_bpb``,
  ``memory_gb``, ``status``, ``description``): one run per row, every column kept.
- the loop seed's ``.autoresearch/config.json`` with ``.autoresearch/results.tsv``
  (``experiment commit metric status duration_s description``): the config becomes the header
  (goal, direction; the whole config kept under ``config``), one run per row.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from .errors import UsageError
from .ledger import RunRecord, dumps, run_record

STATUS_WORDS = {"keep": "keep", "kept": "keep", "discard": "discard", "discarded": "discard",
                "crash": "crash", "crashed": "crash", "checks_failed": "checks_failed",
                "stopped": None}


def _number(text: str) -> float | int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(value) if value == int(value) and "." not in text and "e" not in text.lower() \
        else value


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (byte {exc.start})") from None


def _rows(path: Path) -> list[dict[str, str]]:
    text = _text(path)
    return [dict(row) for row in csv.DictReader(io.StringIO(text), delimiter="\t")
            if any((v or "").strip() for v in row.values())]


def _tsv_runs(rows: list[dict[str, str]], metric_column: str, source: str
              ) -> list[RunRecord]:
    """One run record a row of ``rows``, numbered from 1; a ``stopped`` row is skipped.
    Raises :class:`UsageError` for an unknown status or a metric that is no finite number."""
    runs: list[RunRecord] = []
    for line, row in enumerate(rows, start=2):
        word = (row.get("status") or "").strip().lower()
        if word not in STATUS_WORDS:
            raise UsageError(f"row {line}: unknown status {word!r}")
        status = STATUS_WORDS[word]
        if status is None:
            continue
        raw = (row.get(metric_column) or "").strip()
        metric = _number(raw)
        if metric is None and status != "crash" and raw not in ("", "-"):
            raise UsageError(f"row {line}: {metric_column} {raw!r} is not a finite number")
        extras = {k: v for k, v in row.items() if k is not None}
        metrics = {k: n for k, v in extras.items()
                   if k not in (metric_column, "experiment", "duration_s", "commit")
                   and (n := _number((v or "").strip())) is not None}
        commit = (row.get("commit") or "").strip()
        record = run_record(len(runs) + 1, "" if commit in ("", "-") else commit[:7],
                            0 if status == "crash" or metric is None else metric, metrics,
                            status if metric is not None or status == "crash" else "crash",
                            (row.get("description") or "").strip(), None, 0,
                            imported_from=source, source_row=extras)
        duration = _number((row.get("duration_s") or "").strip())
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
    from .ledger import parse

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


def _loop_seed_lines(rows: list[dict[str, str]], config_file: Path) -> list[str]:
    """The loop seed's session as ledger lines: its ``config.json`` (when there is one) as
    the header, then one run a row of its ``results.tsv``."""
    config: dict[str, Any] = {}
    if config_file.is_file():
        try:
            config = json.loads(_text(config_file))
        except ValueError:
            raise UsageError(f"{config_file} is not valid JSON") from None
        if not isinstance(config, dict):
            raise UsageError(f"{config_file} is not a JSON object")
    direction = str(config.get("direction", "minimize")).lower()
    header = {"type": "config", "name": config.get("goal") or "loop seed session",
              "metricName": str(config.get("metric_name") or "metric"),
              "metricUnit": str(config.get("metric_unit") or ""),
              "bestDirection": "higher" if direction in ("maximize", "higher") else "lower",
              "imported_from": "autoresearch loop seed", "config": config}
    runs = _tsv_runs(rows, "metric", "autoresearch loop seed")
    for record, row in zip(runs, rows, strict=False):
        record["experiment"] = row.get("experiment")
    return [dumps(header), *map(dumps, runs)]


def convert(source: Path, warnings: list[str] | None = None) -> tuple[list[str], str]:
    """Ledger lines for ``source`` (a file or a folder holding one of the known layouts), and
    the name of what was read; what was read otherwise than it says is added to ``warnings``.
    Raises :class:`UsageError` when nothing known is there."""
    if source.is_dir():
        for candidate in (source / ".auto" / "log.jsonl", source / "autoresearch.jsonl",
                          source / ".autoresearch" / "results.tsv", source / "results.tsv"):
            if candidate.is_file():
                return convert(candidate, warnings)
        raise UsageError(f"{source} holds no .auto/log.jsonl, autoresearch.jsonl, "
                         ".autoresearch/results.tsv or results.tsv")
    if not source.is_file():
        raise UsageError(f"{source} does not exist")
    if source.suffix == ".jsonl":
        return (_ledger_lines(source, [] if warnings is None else warnings),
                f"pi-autoresearch ledger {source}")
    if source.suffix != ".tsv":
        raise UsageError(f"{source}: import reads .jsonl ledgers and .tsv results")
    rows = _rows(source)
    if not rows:
        raise UsageError(f"{source} has no rows")
    columns = list(rows[0])
    config_file = source.parent / "config.json"
    if "experiment" in columns and "metric" in columns:
        return _loop_seed_lines(rows, config_file), f"loop seed session {source.parent}"
    if "commit" in columns and "status" in columns and len(columns) >= 3:
        metric = next(c for c in columns if c not in ("commit", "status", "description"))
        header = {"type": "config", "name": f"karpathy autoresearch ({source.name})",
                  "metricName": metric, "metricUnit": "", "bestDirection": "lower",
                  "imported_from": "karpathy/autoresearch results.tsv"}
        runs = _tsv_runs(rows, metric, "karpathy/autoresearch")
        return [dumps(header), *map(dumps, runs)], f"karpathy/autoresearch results {source}"
    raise UsageError(f"{source}: unknown columns {', '.join(columns)}")

"""The lines a session writes into its ledger, as typed shapes: a run record
(:class:`RunRecord`, pi-autoresearch's run line and ours after it) and a segment's header
(:class:`ConfigHeader`). Reading the ledger is :mod:`git_autoresearch.ledger`'s."""

from __future__ import annotations

from typing import Any, TypedDict, cast

from . import VERSION, now_ms


class _RunFields(TypedDict):
    run: int
    commit: str
    metric: int | float | None
    metrics: dict[str, Any]
    status: str
    description: str
    timestamp: int | None
    segment: int
    confidence: float | None


class RunRecord(_RunFields, total=False):
    """A run line of the ledger (pi-autoresearch's ``log.jsonl`` run record): ``run`` number,
    7-character ``commit`` (HEAD's, or the keep's), primary ``metric`` (0 for a crash) and
    secondary ``metrics``, ``status`` (:data:`STATUSES`), ``description``, ``timestamp``
    (milliseconds since the epoch; None when imported without one), ``segment`` index and
    ``confidence``; then ours, each optional: what the measurement gave, where the attempt or
    the set-aside changes are kept, and, for a rebuilt or imported line, where it came from;
    in a session with workers, the ``worker`` that recorded it and what a ``replayed`` keep
    was replayed from and onto (:mod:`git_autoresearch.workers.replay`); for a retry, the run it
    tried again (``retry_of``)."""

    asi: dict[str, Any]
    duration_s: float | None
    samples: list[int | float]
    checks: dict[str, Any] | None
    attempt_ref: str | None
    scope_violations: list[str]
    readonly_violations: list[str]
    scope_violations_total: int
    readonly_violations_total: int
    hooks: list[dict[str, Any]]
    decision: dict[str, Any]
    scope_ref: str
    scope_refs: list[str]
    nested_repositories: list[str]  # git repositories the experiment created (``dir/``)
    slot: dict[str, Any]
    baseline: bool
    reason: str | None
    tail: str
    committed: bool
    rebuilt_from: str
    imported_from: str
    source_row: dict[str, str | None]
    experiment: int | str | None
    worker: str
    replayed: dict[str, Any]
    retry_of: int  # the run whose attempt this run tried again (``run --retry``)
    # the candidate a measuring host took from the queue: its key and agent (history.queue)
    queued: dict[str, Any]


def run_record(run: int, commit: str, metric: int | float | None, metrics: dict[str, Any],
               status: str, description: str, timestamp: int | None, segment: int,
               **more: Any) -> RunRecord:
    """A :class:`RunRecord` with pi-autoresearch's fields first, in its order (``confidence``
    None: computed when the line is appended), then ``more`` in the order given: the order
    the line is written in."""
    record: dict[str, Any] = {"run": run, "commit": commit, "metric": metric,
                              "metrics": metrics, "status": status,
                              "description": description, "timestamp": timestamp,
                              "segment": segment, "confidence": None}
    record.update(more)
    return cast(RunRecord, record)



class _Header(TypedDict):
    """The keys every segment header has (:class:`ConfigHeader`)."""

    type: str
    name: str
    metricName: str
    metricUnit: str
    bestDirection: str
    config_hash: str
    session_id: str
    version: int
    config: dict[str, Any]
    base_commit: str
    no_baseline: bool
    timestamp: int


class ConfigHeader(_Header, total=False):
    """The ledger line that opens a segment (gitautoresearch-files(5)): pi-autoresearch's ``name``,
    ``metricName``, ``metricUnit`` and ``bestDirection``, then ours; built by
    :func:`config_header`. (A TypedDict, not a dataclass: every command imports this module,
    and defining a dataclass costs start-up time.) ``inputs`` only when the commands name
    files git does not track."""

    inputs: dict[str, str]


def config_header(*, name: str, metric_name: str, metric_unit: str, direction: str,
                  config_hash: str, session_id: str, config: dict[str, Any], base_commit: str,
                  no_baseline: bool, inputs: dict[str, str] | None = None) -> ConfigHeader:
    """A segment's header line, keys in the order every version wrote: the goal (``name``),
    the metric and its ``direction`` (``lower``/``higher``), the SHA-256 of ``config.toml``'s
    bytes (``sha256:<hex>``), the session id, this format's :data:`VERSION`, the
    configuration's keys as written, the commit the segment starts from, whether its baseline
    was skipped, and now (:func:`now_ms`, epoch milliseconds); then, when the commands name
    files git does not track, their ``inputs`` digests (path -> ``sha256:<hex>``)."""
    header: ConfigHeader = {
        "type": "config", "name": name, "metricName": metric_name, "metricUnit": metric_unit,
        "bestDirection": direction, "config_hash": config_hash, "session_id": session_id,
        "version": VERSION, "config": config, "base_commit": base_commit,
        "no_baseline": no_baseline, "timestamp": now_ms()}
    if inputs:
        header["inputs"] = inputs
    return header

"""Measuring the experiment: its samples, their metric read from the log, the checks
(gitautoresearch-config(5)).

The command runs through :mod:`git_autoresearch.measure.runner` (a process group of its own, its
output streamed to ``.auto/run.log``). The log is read back line by line, never whole.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..ledger.stats import median
from ..runtime import events
from ..session.config import DIRECTIONS, Config
from .runner import Outcome, run_shell

TAIL_LINES = 30
TAIL_CHARS = 4000
# A METRIC line names a secondary metric; "status" is the trailer's own key, never a metric.
METRIC_LINE_RE = re.compile(r"^\s*METRIC\s+(?!status=)([\w.µ-]{1,128})=(\S+)\s*$")
# Secondary metrics a run records at most (the first names seen; later values of them still
# win): a log with endless METRIC lines must not make a record no reader can read.
MAX_METRICS = 256
NUMBER_RE = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
THOUSANDS_RE = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
NON_FINITE_RE = re.compile(r"^[+-]?(?:nan|inf|infinity)$", re.I)
CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # UTF-8's bytes after a character's first
ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

Progress = Callable[[float, str], None]


def clean_line(text: str) -> list[str]:
    """The visible pieces of one log line: ANSI codes removed, split at carriage returns (each
    ``\\r`` starts a piece that overwrote the one before), in order."""
    text = ANSI_RE.sub("", text)
    return [piece for piece in text.split("\r")]


def parse_number(text: str) -> tuple[float | None, str | None]:
    """Read a metric value: ``(value, None)`` or ``(None, reason)``.

    Accepts ``-0.35``, ``1.2e-3``, ``4.2E+2``; refuses ``nan``, ``inf``, a thousands separator
    (``14,600``, quoted in the reason) and anything else that is not one plain number.
    """
    stripped = text.strip()
    if NON_FINITE_RE.match(stripped):
        return None, f"metric '{stripped}' is not a finite number"
    if THOUSANDS_RE.match(stripped) or "," in stripped:
        return None, f"metric '{stripped}' has a thousands separator; print it without one"
    if not NUMBER_RE.match(stripped):
        return None, f"metric '{stripped[:60]}' is not a number"
    value = float(stripped)
    if not math.isfinite(value):
        return None, f"metric '{stripped}' is not a finite number"
    return value, None


@dataclass
class LogReading:
    """What a log held: the primary ``metric`` (or the ``problem`` why not) and the ``metrics``
    of its ``METRIC name=value`` lines (last one wins, malformed and non-finite ones ignored)."""

    metric: float | None = None
    problem: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)


def read_log(path: Path, offset: int, pattern: str | None, metric_name: str) -> LogReading:
    """Scan ``path`` from byte ``offset``, one line at a time.

    With ``pattern``, the last match of its capture group is the metric; a capture followed by
    ``,ddd`` is a thousands separator and refused. Without, the primary metric is the last
    ``METRIC <metric_name>=`` line.
    """
    regex = re.compile(pattern) if pattern else None
    reading = LogReading()
    last_capture: str | None = None
    refused: str | None = None  # (why the primary's last METRIC line was not read)
    with open(path, "rb") as fh:
        fh.seek(offset)
        for raw in fh:
            for piece in clean_line(raw.decode("utf-8", "replace").rstrip("\n")):
                m = METRIC_LINE_RE.match(piece)
                if m and (m.group(1) in reading.metrics or len(reading.metrics) < MAX_METRICS):
                    value, why = parse_number(m.group(2))
                    if value is not None:
                        reading.metrics[m.group(1)] = value
                    elif m.group(1) == metric_name:
                        refused = why
                if regex is not None:
                    for match in regex.finditer(piece):
                        capture = match.group(1)
                        if capture is None:
                            continue
                        rest = piece[match.end(1):]
                        if re.match(r",\d{3}\b", rest):
                            capture = capture + rest[:4]
                        last_capture = capture
    if regex is not None:
        if last_capture is None:
            reading.problem = f"metric pattern '{pattern}' matched nothing in the log"
        else:
            reading.metric, reading.problem = parse_number(last_capture)
    elif metric_name in reading.metrics:
        reading.metric = reading.metrics[metric_name]
    else:
        reading.problem = refused or f"no 'METRIC {metric_name}=<number>' line in the log"
    reading.metrics.pop(metric_name, None)
    return reading


def tail(path: Path, lines: int = TAIL_LINES, limit: int = TAIL_CHARS, offset: int = 0) -> str:
    """The last ``lines`` lines (at most ``limit`` characters) of a file from byte ``offset``."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return ""
    with open(path, "rb") as fh:
        start = max(offset, size - (limit + 1) * 4)  # (a character is at most 4 bytes)
        fh.seek(start)
        data = fh.read()
    if start > offset:  # begun inside a character: its continuation bytes are not one
        data = data.lstrip(CONTINUATION_BYTES)
    text = ANSI_RE.sub("", data.decode("utf-8", "replace"))
    out = "\n".join(text.splitlines()[-lines:])
    return out[-limit:]


def last_line(path: Path) -> str:
    """The last non-empty visible line of a log (for the live progress line)."""
    for line in reversed(tail(path, lines=5, limit=400).splitlines()):
        pieces = [p for p in clean_line(line) if p.strip()]
        if pieces:
            return pieces[-1].strip()
    return ""


# The median of an even count and the mean are sums: rounded to 12 significant digits, so that
# 1.925 and 1.93 give 1.9275 and not 1.9275000000000002.
AGGREGATORS: dict[str, Callable[[list[float]], float]] = {
    "median": lambda values: float(f"{median(values):.12g}"), "min": min,
    "mean": lambda values: float(f"{sum(values) / len(values):.12g}")}


@dataclass(frozen=True)
class Measurement:
    """One measured experiment (all samples, then the checks); immutable once taken (a copy
    with changes: ``dataclasses.replace``).

    ``metric`` is the aggregate of ``samples`` (None when the run crashed, with ``reason``);
    ``checks`` is None when no checks ran, else ``passed``, ``exit_code``, ``timed_out``,
    ``duration_s`` and the ``tail`` of their output. ``log_tail`` is the end of the run log
    (at most :data:`TAIL_LINES` lines and :data:`TAIL_CHARS` characters). ``scope_violations``
    and ``readonly_violations`` are the paths put back to HEAD before measuring (saved at
    ``scope_ref``): outside the scope, and defining success.
    """

    metric: float | None
    metrics: dict[str, float]
    samples: list[float]
    duration_s: float | None  # None: not measured here (the metrics the caller gave)
    reason: str | None = None
    exit_code: int | None = None
    checks: dict[str, Any] | None = None
    log_tail: str = ""
    head: str | None = None
    scope_violations: list[str] = field(default_factory=list)
    readonly_violations: list[str] = field(default_factory=list)
    scope_ref: str | None = None
    fingerprint: dict[str, str] | None = None
    # The sequential rule's verdict on the samples (``decision_record``); None under strict.
    decision: dict[str, Any] | None = None
    # The measurement slot it ran in (``slots.Slot.record``); None: the one slot, unpinned.
    slot: dict[str, Any] | None = None
    # What the caller is told about how it was measured (the incumbent could not be measured
    # beside it, say); never recorded.
    warnings: list[str] = field(default_factory=list)
    # The before hooks fired for it (``hooks.user.HookReport.summary``): a keep or discard
    # that records it as the pending measurement lists them in its record's ``hooks``.
    hooks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str | None:
        """``crash`` (no metric, and the ``reason`` why), ``checks_failed``, or None when the
        measurement can be kept, or is only the secondary metrics a caller gave."""
        if self.metric is None:
            return "crash" if self.reason is not None else None
        if self.checks is not None and not self.checks["passed"]:
            return "checks_failed"
        return None

    def reason_for(self, status: str, min_effect: float, direction: str) -> str | None:
        """Why a run recorded as ``status`` from this measurement ended so, its record's
        ``reason``: a crash's cause, then the failed checks' reason (whatever the status),
        then why the rule did not keep a discard (:func:`decide.rules.discard_reason`); None
        for a keep that passed and a discard without a rule's verdict."""
        if status == "crash" and self.reason:
            return self.reason
        if self.checks and not self.checks["passed"]:
            return str(self.checks.get("reason"))
        found = self.decision
        if status == "discard" and found is not None \
                and found.get("verdict") in ("inconclusive", "worse"):
            from ..decide.rules import discard_reason  # (the rule): only for its verdict

            return discard_reason(found, min_effect, direction)
        return None

    @classmethod
    def empty(cls) -> Measurement:
        """Nothing measured: no metric, no samples, not timed (``duration_s`` None), and no
        crash (no ``reason``). What the metrics a caller gives are laid over."""
        return cls(None, {}, [], None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def _describe_exit(outcome: Outcome, timeout: float, what: str) -> str:
    if outcome.timed_out:
        return f"timeout: {what} ran past {timeout:g}s and was killed"
    if outcome.exit_code < 0:
        return f"{what} was killed by signal {-outcome.exit_code}"
    return f"{what} exited with code {outcome.exit_code}"


def measure(
    cfg: Config,
    *,
    top: Path,
    log_path: Path,
    env: Mapping[str, str],
    progress: Progress | None = None,
    samples_at_most: int | None = None,
    enough: Callable[[list[float]], bool] | None = None,
    checks: bool = True,
    first_sample: int = 1,
    event: str = "sample",
) -> Measurement:
    """Run the experiment ``runs_per_experiment`` times, read each sample's metric, aggregate,
    then run the checks if every sample succeeded. Each sample's command has
    ``AUTORESEARCH_SAMPLE`` (``first_sample``, then one more each) in its environment, beside
    ``env``. Never raises for a
    failing command: a failure is a :class:`Measurement` whose ``metric`` is None and whose
    ``reason`` says why. ``samples_at_most`` replaces ``runs_per_experiment``; ``enough``, asked
    after each sample with the samples so far, stops the sampling early when it says so (the
    sequential decision rule). Without ``checks``, the checks command does not run. Each
    sample that gives a metric is a progress ``event`` (:mod:`runtime.events`)."""
    samples: list[float] = []
    count = samples_at_most or cfg.runs_per_experiment
    per_metric: dict[str, list[float]] = {}
    started = time.monotonic()
    fd = _new_log(log_path)
    try:
        for index in range(count):
            if count > 1:
                os.write(fd, f"==== sample {index + 1} of {count} ====\n".encode())
            # Each sample knows its number: a training command can seed from it.
            outcome, reading, failure = _sample(
                cfg, top=top, log_path=log_path, log_fd=fd,
                env={**env, "AUTORESEARCH_SAMPLE": str(first_sample + index)}, progress=progress)
            if failure is not None:
                if count > 1 and samples:  # say which sample: the earlier ones gave a metric
                    failure = f"sample {first_sample + index}: {failure}"
                return Measurement(None, reading.metrics if reading else {}, samples,
                                   round(time.monotonic() - started, 3), reason=failure,
                                   exit_code=outcome.exit_code, log_tail=tail(log_path))
            assert reading is not None and reading.metric is not None
            samples.append(reading.metric)
            events.emit(event, sample=first_sample + index, of=count, value=reading.metric)
            for name, value in reading.metrics.items():
                per_metric.setdefault(name, []).append(value)
            if enough is not None and enough(samples):
                break
    finally:
        os.close(fd)
    aggregate = AGGREGATORS[cfg.aggregate]
    metric = float(aggregate(samples))
    metrics = {name: float(aggregate(values)) for name, values in per_metric.items()}
    duration, log_tail = round(time.monotonic() - started, 3), tail(log_path)
    checked = run_checks(cfg, top=top, log_path=log_path, env=env) \
        if cfg.checks_command and checks else None
    return Measurement(metric, metrics, samples, duration, exit_code=0, checks=checked,
                       log_tail=log_tail)


def _new_log(log_path: Path) -> int:
    """A file descriptor, open for writing, on a new, empty run log at ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # A new file, not a truncated one: a command orphaned by a killed earlier measurement
        # keeps writing to the old inode, never into this measurement's log.
        log_path.unlink()
    except FileNotFoundError:
        pass
    return os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)


def _sample(cfg: Config, *, top: Path, log_path: Path, log_fd: int, env: Mapping[str, str],
            progress: Progress | None) -> tuple[Outcome, LogReading | None, str | None]:
    """Run the command once, its output appended to the run log, and read its metric: how it
    ended, what was read (None when the command failed), and why it is no sample (None: it
    is one). When a JSON metric reads the command's standard output (:func:`_reads_output`),
    stdout is kept apart from stderr (which goes straight to the run log) and follows it
    there once the command has ended."""
    offset = os.lseek(log_fd, 0, os.SEEK_END)
    out_path = log_path.with_name("command.out") if _reads_output(cfg) else None

    def tick(elapsed: float) -> None:
        if progress:
            progress(elapsed, last_line(out_path or log_path))

    before = json_files_state(cfg, top)
    output: str | None = None
    if out_path is None:
        outcome = run_shell(cfg.command, cwd=top, stdout=log_fd, timeout=cfg.timeout_seconds,
                            env=env, on_tick=tick)
    else:
        with open(out_path, "w+b") as out:
            outcome = run_shell(cfg.command, cwd=top, stdout=out.fileno(), stderr=log_fd,
                                timeout=cfg.timeout_seconds, env=env, on_tick=tick)
            out.seek(0)
            while chunk := out.read(1 << 20):
                os.write(log_fd, chunk)
            out.seek(0)
            output = out.read(JSON_OUTPUT_LIMIT).decode("utf-8", "replace")
        os.unlink(out_path)
    if outcome.timed_out or outcome.exit_code != 0:
        return outcome, None, _describe_exit(outcome, cfg.timeout_seconds, "the command")
    if cfg.metric_command:
        reading = _metric_from_command(cfg, top=top, log_fd=log_fd,
                                       out_path=log_path.with_name("metric.out"), env=env)
    else:
        reading = read_log(log_path, offset, cfg.metric_pattern, cfg.metric_name)
    if cfg.metric_json is not None or cfg.metrics_json or cfg.score is not None:
        read_json_and_score(cfg, reading, top=top, before=before, output=output)
    return outcome, reading, reading.problem if reading.metric is None else None


# The most of a command's standard output read as a JSON document (the rest is ignored).
JSON_OUTPUT_LIMIT = 8 << 20
FileState = tuple[int, int, int] | None


def _reads_output(cfg: Config) -> bool:
    """Whether ``metric_json`` or one of ``metrics_json`` reads the command's standard output
    (a bare path, or ``-:PATH``: :func:`measure.jsonmetric.split_spec`)."""
    if not (cfg.metric_json or cfg.metrics_json):
        return False
    from . import jsonmetric  # (json): only where a metric is read from JSON

    default, _ = jsonmetric.split_spec(cfg.metric_json) if cfg.metric_json else (None, "")
    if cfg.metric_json and default is None:
        return True
    return any(jsonmetric.split_spec(spec, default)[0] is None
               for spec in (cfg.metrics_json or {}).values())


def _json_files(cfg: Config) -> list[str]:
    """The files the JSON metrics read (``metric_json``'s, then ``metrics_json``'s), each
    once."""
    if not (cfg.metric_json or cfg.metrics_json):
        return []
    from . import jsonmetric

    default, _ = jsonmetric.split_spec(cfg.metric_json) if cfg.metric_json else (None, "")
    files = [default] if default else []
    for spec in (cfg.metrics_json or {}).values():
        file, _ = jsonmetric.split_spec(spec, default)
        if file and file not in files:
            files.append(file)
    return files


def json_files_state(cfg: Config, top: Path) -> dict[str, FileState]:
    """Each JSON metric file's (inode, mtime in ns, size) before the command ran, None when
    absent: a file the command leaves untouched is a stale result, never read as a new one."""
    states: dict[str, FileState] = {}
    for file in _json_files(cfg):
        try:
            st = os.stat(top / file)
            states[file] = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            states[file] = None
    return states


def read_json_and_score(cfg: Config, reading: LogReading, *, top: Path,
                        before: Mapping[str, FileState], output: str | None) -> None:
    """Complete ``reading`` in place: the JSON metrics (``metric_json``, ``metrics_json``),
    then the ``[score]``, which replaces the metric and keeps the value read under
    :data:`measure.scoring.READ_VALUE`. Any failure leaves ``metric`` None and says why in
    ``problem`` (a crash). ``output``: the command's standard output, kept apart when a
    spec reads it (:func:`_reads_output`; else None); ``before``: the files' states before
    the command (:func:`json_files_state`)."""
    from . import jsonmetric, scoring

    reader = cfg.metric_pattern or cfg.metric_command or cfg.metric_json
    if cfg.metric_json is not None or reader is None:
        # The JSON or the score gives the metric: no METRIC line of its name is needed.
        reading.problem = None
    elif reading.problem is not None:
        return
    docs: dict[str | None, list[Any]] = {}

    def value(spec: str, default: str | None) -> float:
        file, path = jsonmetric.split_spec(spec, default)
        if file not in docs:
            if file is None:  # the command's stdout, kept apart whenever a spec reads it
                assert output is not None, "_reads_output keeps the output of such a spec"
                text = output
            else:
                text = _json_text(file, top, before)
            docs[file] = jsonmetric.documents(text)
        return jsonmetric.read_value(docs[file], path, file or "the command's output")

    try:
        default = None
        if cfg.metric_json is not None:
            default, _ = jsonmetric.split_spec(cfg.metric_json)
            reading.metric = value(cfg.metric_json, None)
        for name, spec in (cfg.metrics_json or {}).items():
            try:
                reading.metrics[name] = value(spec, default)
            except jsonmetric.JsonMetricError as exc:
                raise jsonmetric.JsonMetricError(f"metrics_json '{name}': {exc}") from None
        if cfg.score is not None:
            if reader is not None and reading.metric is not None:
                reading.metrics[scoring.READ_VALUE] = reading.metric
            score = scoring.compute(cfg.score, reading.metrics, cfg.direction, DIRECTIONS)
            reading.metric = score.value
    except (jsonmetric.JsonMetricError, scoring.ScoreError) as exc:
        reading.metric, reading.problem = None, str(exc)


def _json_text(file: str, top: Path, before: Mapping[str, FileState]) -> str:
    """The text of JSON metric file ``file`` (relative to ``top``). Raises
    :class:`measure.jsonmetric.JsonMetricError` for a file the command did not write."""
    from . import jsonmetric

    try:
        st = os.stat(top / file)
        with open(top / file, "rb") as fh:
            data = fh.read(JSON_OUTPUT_LIMIT)
    except OSError:
        raise jsonmetric.JsonMetricError(f"{file} was not written by the command") from None
    if before.get(file) == (st.st_ino, st.st_mtime_ns, st.st_size):
        raise jsonmetric.JsonMetricError(f"{file} was not rewritten by the command (it is "
                                         "left from before)")
    return data.decode("utf-8", "replace")


def _metric_from_command(cfg: Config, *, top: Path, log_fd: int, out_path: Path,
                         env: Mapping[str, str]) -> LogReading:
    """Run ``metric_command`` and read its one number from its stdout alone: its stderr (a
    warning, a progress line) goes straight to the run log (``log_fd``), never into the
    number; its stdout follows it there."""
    assert cfg.metric_command is not None
    os.write(log_fd, f"==== metric_command: {cfg.metric_command} ====\n".encode())
    with open(out_path, "w+b") as out:
        outcome = run_shell(cfg.metric_command, cwd=top, stdout=out.fileno(), stderr=log_fd,
                            timeout=cfg.timeout_seconds, env=env)
        out.seek(0)
        data = out.read(1 << 20)
    os.unlink(out_path)
    os.write(log_fd, data)
    reading = LogReading()
    if outcome.timed_out or outcome.exit_code != 0:
        reading.problem = _describe_exit(outcome, cfg.timeout_seconds, "the metric command")
        return reading
    values = []
    # Lines end at \n alone: a \r starts a piece of the same line (clean_line).
    for line in data.decode("utf-8", "replace").split("\n"):
        pieces = [p for p in clean_line(line) if p.strip()]
        if not pieces:
            continue
        m = METRIC_LINE_RE.match(pieces[-1])
        if m:
            value, _ = parse_number(m.group(2))
            if value is not None:
                reading.metrics[m.group(1)] = value
        else:
            values.append(pieces[-1].strip())
    if len(values) != 1:
        reading.problem = (f"the metric command printed {len(values)} values on stdout; it "
                           "must print exactly one number")
        return reading
    reading.metric, reading.problem = parse_number(values[0])
    reading.metrics.pop(cfg.metric_name, None)
    return reading


def run_checks(cfg: Config, *, top: Path, log_path: Path, env: Mapping[str, str]
               ) -> dict[str, Any]:
    """Run ``checks_command`` after a successful measurement, its output appended to the run
    log; returns ``passed``, ``exit_code``, ``timed_out``, ``duration_s`` and ``tail``."""
    assert cfg.checks_command is not None
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, f"==== checks: {cfg.checks_command} ====\n".encode())
        offset = os.lseek(fd, 0, os.SEEK_END)
        outcome = run_shell(cfg.checks_command, cwd=top, stdout=fd,
                            timeout=cfg.checks_timeout_seconds, env=env)
    finally:
        os.close(fd)
    passed = outcome.exit_code == 0 and not outcome.timed_out
    events.emit("checks", passed=passed, duration_s=outcome.duration_s)
    return {
        "passed": passed,
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "duration_s": outcome.duration_s,
        "tail": "" if passed else tail(log_path, lines=20, limit=2000, offset=offset),
        "reason": None if passed else _describe_exit(outcome, cfg.checks_timeout_seconds,
                                                     "the checks command"),
    }

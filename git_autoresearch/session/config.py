"""The session configuration, ``.auto/config.toml`` (gitautoresearch-config(5)).

Written once with tomli-w and made read-only (mode 0444); its SHA-256 (of the file's bytes) goes
into the ledger's config header, and every command compares the two before it acts.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..runtime.digests import hexdigest
from ..runtime.errors import UsageError
from ..runtime.scope import check_rule, literal_path

# ^[A-Za-z0-9_-]+$ (gitautoresearch-config(5)), with a letter or digit first so that no id
# reads as an option.
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
METRIC_NAME_RE = re.compile(r"^[\w.µ-]+$")
DIRECTIONS = {"lower": "lower", "higher": "higher", "minimize": "lower", "maximize": "higher",
              "min": "lower", "max": "higher"}
AGGREGATES = ("median", "min", "mean")
# How a run is decided (decide/rules.py): "strict", the seeds' rule (the aggregate beats the best),
# or "sequential" (samples one at a time against the incumbent's, robust to noise).
DECISION_RULES = ("sequential", "strict")
# How long a claim on an idea lasts when ``claim_timeout`` is not set.
CLAIM_TIMEOUT_DEFAULT = "2h"
# Keys added after sessions existed: absent and empty mean the same.
OPTIONAL_LISTS = ("readonly", "shared_paths")
# Pairs of incumbent and candidate samples taken side by side, at most, when not set.
INCUMBENT_PAIRS_DEFAULT = 10
# ... at least, when on: the rank test of 3 samples against 3 cannot reach its level (1/20).
MIN_PAIRS = 4


@dataclass
class Config:
    """Every configuration key (gitautoresearch-config(5)); ``None`` means not
    set (and is left out of the TOML file)."""

    goal: str
    command: str
    metric_name: str = "metric"
    metric_unit: str = ""
    direction: str = "lower"
    metric_pattern: str | None = None
    metric_command: str | None = None
    # Metrics read from JSON (measure/jsonmetric.py): the primary's "FILE:PATH" or "PATH" (standard
    # output), and secondaries by name.
    metric_json: str | None = None
    metrics_json: dict[str, str] | None = None
    # Composite scoring (measure/scoring.py): the [score] table; None: the metric as read.
    score: dict[str, Any] | None = None
    scope: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    readonly: list[str] = field(default_factory=list)
    checks_command: str | None = None
    # What finalize runs on the final branch (the full test suite); None: checks_command.
    final_checks_command: str | None = None
    timeout_seconds: float = 600
    checks_timeout_seconds: float = 300
    runs_per_experiment: int = 1
    aggregate: str = "median"
    max_experiments: int | None = None
    # A time budget for a segment ("8h", "90m", "3600s", "1h30m"); None: no budget.
    max_duration: str | None = None
    # Stop rules of a segment (decide/stopping.py): its best reaching this value of the primary
    # metric, this many runs in a row without a keep, this many crashes or failed checks in a
    # row; None: no such rule.
    target_metric: float | None = None
    max_runs_without_keep: int | None = None
    max_failures_in_a_row: int | None = None
    # The decision rule and its settings; None: as before they existed (strict, and the
    # defaults below), so that older files render to the same bytes.
    decision: str | None = None
    min_effect: float | None = None
    max_samples: int | None = None
    baseline_samples: int | None = None
    remeasure_incumbent: bool | None = None
    # The incumbent measured beside the candidate in a worktree of its own: pairs of samples
    # at most (0: never, the pool alone decides), and the ignored paths linked into it.
    incumbent_pairs: int | None = None
    shared_paths: list[str] = field(default_factory=list)
    # Several agents at once (measure/slots.py, workers/claims.py): measurements at a time on this
    # machine (None: 1), each slot's commands pinned to its share of the CPUs, and how long an
    # idea's claim lasts ("2h" when None).
    measure_slots: int | None = None
    pin_cpus: bool | None = None
    claim_timeout: str | None = None
    session_id: str = ""
    created_at: str = ""

    @classmethod
    def keys(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str) -> Config:
        """Build and validate a configuration; raises :class:`UsageError` naming the bad key."""
        unknown = sorted(set(data) - set(cls.keys()))
        if unknown:
            raise UsageError(f"{source}: unknown configuration key '{unknown[0]}'")
        for key in ("goal", "command"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                raise UsageError(f"{source}: '{key}' is required")
        cfg = cls(goal=data["goal"], command=data["command"])
        for key, value in data.items():
            setattr(cfg, key, value)
        cfg.validate(source)
        return cfg

    def validate(self, source: str) -> None:
        """Check types and values; normalise ``direction``, and read a ``max_experiments`` of 0
        as no limit. Raises :class:`UsageError` naming ``source`` and the first bad key."""
        for check in (self._check_nul, self._check_strings, self._check_metric, self._check_paths,
                      self._check_numbers, self._check_stop_rules, self._check_decision,
                      self._check_workers, self._check_session_id):
            problem = check()
            if problem is not None:
                raise UsageError(f"{source}: {problem[0]} {problem[1]}")

    # Each check returns the first bad key and why, or None.

    def _check_nul(self) -> tuple[str, str] | None:
        """A NUL character in any text of the file: no command, path or name can hold one
        (the operating system cuts a command line at it)."""
        for key in self.keys():
            if _holds_nul(getattr(self, key)):
                return key, "holds a NUL character, which no command, path or name can hold"
        return None

    def _check_strings(self) -> tuple[str, str] | None:
        for key in ("goal", "command", "metric_name", "metric_unit", "direction", "aggregate",
                    "session_id", "created_at"):
            if not isinstance(getattr(self, key), str):
                return key, "must be a string"
        for key in ("metric_pattern", "metric_command", "checks_command",
                    "final_checks_command"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                return key, "must be a non-empty string"
        return None

    def _check_metric(self) -> tuple[str, str] | None:
        """The metric's name, direction (normalised here) and how it is read."""
        if self.metric_name == "status":
            return "metric_name", "'status' is taken by the Result trailer's own field"
        if not METRIC_NAME_RE.match(self.metric_name):
            return "metric_name", (f"'{self.metric_name}' may hold only letters, digits, '_', "
                                   "'.', '-' and 'µ'")
        direction = DIRECTIONS.get(self.direction.lower())
        if direction is None:
            return "direction", f"'{self.direction}' is not 'lower' or 'higher'"
        self.direction = direction
        readers = [key for key in ("metric_pattern", "metric_command", "metric_json")
                   if getattr(self, key) is not None]
        if len(readers) > 1:
            return readers[0], f"and {readers[1]} are exclusive: set one"
        if self.metric_pattern is not None:
            try:
                compiled = re.compile(self.metric_pattern)
            except re.error as exc:
                return "metric_pattern", (f"'{self.metric_pattern}' is not a valid regex: "
                                          f"{exc}")
            if compiled.groups != 1:
                return "metric_pattern", (f"'{self.metric_pattern}' must have exactly one "
                                          f"capture group, not {compiled.groups}")
        return self._check_json_and_score()

    def _check_json_and_score(self) -> tuple[str, str] | None:
        """``metric_json``, ``metrics_json`` and the ``[score]`` table."""
        if self.metric_json is None and self.metrics_json is None and self.score is None:
            return None  # (nothing to import for the usual configuration)
        from ..measure import jsonmetric, scoring

        if self.metric_json is not None:
            problem = jsonmetric.check_spec(self.metric_json)
            if problem:
                return "metric_json", problem
        if self.metrics_json is not None:
            if not isinstance(self.metrics_json, dict):
                return "metrics_json", "must be a table of metric names and JSON paths"
            for name, spec in self.metrics_json.items():
                if name in ("status", self.metric_name) or not METRIC_NAME_RE.match(name):
                    return "metrics_json", (f"'{name}' is not a usable secondary metric name")
                problem = jsonmetric.check_spec(spec)
                if problem:
                    return f"metrics_json.{name}", problem
        if self.score is not None:
            problem = scoring.check_table(self.score, DIRECTIONS)
            if problem:
                return "score", problem
            if self.metric_name in scoring.components(self.score):
                return "score", (f"names '{self.metric_name}', the score's own name "
                                 "(metric_name): a component needs a name of its own")
        return None

    def _check_paths(self) -> tuple[str, str] | None:
        for item in self.shared_paths if isinstance(self.shared_paths, list) else []:
            if isinstance(item, str) and (literal_path(item) is None or not item.strip("/")
                                          or item.startswith("/")):
                return "shared_paths", f"'{item}' must be a path inside the repository, not a " \
                    "pattern"
        for key in ("scope", "protected", "readonly", "shared_paths"):
            value = getattr(self, key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return key, "must be a list of paths"
            for item in value:
                # A leading / anchors a glob without / at the top (/notes*); anything else
                # that starts with / is a path outside the repository.
                anchored_glob = "/" not in item[1:] and any(c in item for c in "*?[")
                if item.startswith("/") and not anchored_glob or ".." in item.split("/"):
                    return key, f"'{item}' must be a path inside the repository"
                problem = check_rule(item)
                if problem:
                    return key, f"'{item}' is not a valid path pattern: {problem}"
        return None

    def _check_numbers(self) -> tuple[str, str] | None:
        """Timeouts, runs per experiment, the aggregate, and the limit (0 lifts it)."""
        for key in ("timeout_seconds", "checks_timeout_seconds"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value <= 0:
                return key, "must be a positive number of seconds"
        if isinstance(self.runs_per_experiment, bool) or not isinstance(
                self.runs_per_experiment, int) or self.runs_per_experiment < 1:
            return "runs_per_experiment", "must be a whole number of at least 1"
        if self.aggregate not in AGGREGATES:
            return "aggregate", f"'{self.aggregate}' is not one of {', '.join(AGGREGATES)}"
        if self.max_experiments == 0 and not isinstance(self.max_experiments, bool):
            self.max_experiments = None  # 0 lifts the limit (for a new segment)
        if self.max_experiments is not None and (
                isinstance(self.max_experiments, bool) or not isinstance(self.max_experiments, int)
                or self.max_experiments < 1):
            return "max_experiments", "must be a whole number of at least 1"
        if self.max_duration is not None:
            if not isinstance(self.max_duration, str):
                return "max_duration", "must be a string such as \"8h\", \"90m\" or \"3600s\""
            seconds = duration_seconds(self.max_duration)
            if seconds is None:
                return "max_duration", (f"'{self.max_duration}' is not a duration such as 8h, "
                                        "90m, 3600s or 1h30m")
            if seconds == 0:
                self.max_duration = None  # 0 lifts the budget (for a new segment)
        return None

    def _check_stop_rules(self) -> tuple[str, str] | None:
        """``target_metric`` (a finite number; ``"none"`` lifts it), ``max_runs_without_keep``
        and ``max_failures_in_a_row`` (whole numbers of at least 1; 0 lifts them), each
        optional: a new segment inherits them unless lifted."""
        target = self.target_metric
        if isinstance(target, str):
            if target.strip().lower() != "none":
                return "target_metric", f"'{target}' is not a number (or 'none', which lifts it)"
            self.target_metric = target = None
        if target is not None and (isinstance(target, bool) or not isinstance(
                target, (int, float)) or not math.isfinite(target)):
            return "target_metric", "must be a number"
        for key in ("max_runs_without_keep", "max_failures_in_a_row"):
            value = getattr(self, key)
            if value == 0 and not isinstance(value, bool):
                setattr(self, key, None)  # 0 lifts the rule (for a new segment)
            elif value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                        or value < 1):
                return key, "must be a whole number of at least 1"
        return None

    def _check_decision(self) -> tuple[str, str] | None:
        """The decision rule and its settings (each optional)."""
        if self.decision is not None and self.decision not in DECISION_RULES:
            return "decision", f"'{self.decision}' is not one of {', '.join(DECISION_RULES)}"
        effect = self.min_effect
        if effect is not None and (isinstance(effect, bool) or not isinstance(
                effect, (int, float)) or not math.isfinite(effect) or not 0 <= effect < 1):
            return "min_effect", "must be a relative improvement from 0 to below 1 (0.01: 1%)"
        for key in ("max_samples", "baseline_samples"):
            value = getattr(self, key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 1 <= value <= 100):
                return key, "must be a whole number from 1 to 100"
        if self.max_samples == 1 and self.decision == "sequential":
            return "max_samples", ("must be at least 2 under the sequential rule: one sample "
                                   "of a run cannot be told from noise (decision = \"strict\" "
                                   "takes one)")
        if self.remeasure_incumbent is not None and not isinstance(self.remeasure_incumbent,
                                                                   bool):
            return "remeasure_incumbent", "must be true or false"
        pairs = self.incumbent_pairs
        if pairs is not None and (isinstance(pairs, bool) or not isinstance(pairs, int)
                                  or not (pairs == 0 or MIN_PAIRS <= pairs <= 100)):
            return "incumbent_pairs", (f"must be 0 (off) or a whole number from {MIN_PAIRS} to "
                                       f"100: fewer pairs can never show a difference")
        return None

    def _check_workers(self) -> tuple[str, str] | None:
        """``measure_slots``, ``pin_cpus`` and ``claim_timeout`` (each optional)."""
        slots = self.measure_slots
        if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int)
                                  or not 1 <= slots <= 1024):
            return "measure_slots", "must be a whole number from 1 to 1024"
        if self.pin_cpus is not None and not isinstance(self.pin_cpus, bool):
            return "pin_cpus", "must be true or false"
        timeout = self.claim_timeout
        if timeout is not None and (not isinstance(timeout, str)
                                    or not duration_seconds(timeout)):
            return "claim_timeout", (f"'{timeout}' is not a duration above 0 such as 2h, 90m "
                                     "or 3600s")
        return None

    @property
    def slots(self) -> int:
        """Measurements at a time on this machine (``measure_slots``, default 1)."""
        return self.measure_slots or 1

    @property
    def claim_seconds(self) -> float:
        """How long a claim on an idea lasts, in seconds (``claim_timeout``, default 2h)."""
        return duration_seconds(self.claim_timeout or CLAIM_TIMEOUT_DEFAULT) or 7200.0

    @property
    def duration_budget(self) -> float | None:
        """``max_duration`` in seconds, or None when there is no budget."""
        return None if self.max_duration is None else duration_seconds(self.max_duration)

    @property
    def rule(self) -> str:
        """The decision rule in force: ``decision``, else ``strict`` (the rule of sessions
        begun before there was a choice)."""
        return self.decision or "strict"

    @property
    def samples_at_most(self) -> int:
        """Samples of a candidate under the sequential rule (``max_samples``, default 16)."""
        return self.max_samples or 16

    @property
    def samples_of_baseline(self) -> int:
        """Samples of the baseline under the sequential rule (``baseline_samples``, default 5)."""
        return self.baseline_samples or 5

    @property
    def pairs_at_most(self) -> int:
        """Pairs of incumbent and candidate samples a run takes side by side, at most, under
        the sequential rule (``incumbent_pairs``, default 10; 0: the pool alone decides)."""
        if self.rule != "sequential":
            return 0
        return INCUMBENT_PAIRS_DEFAULT if self.incumbent_pairs is None else self.incumbent_pairs

    @property
    def remeasures(self) -> bool:
        """Whether the incumbent gets a sample after each revert (sequential rule only)."""
        return self.rule == "sequential" and self.remeasure_incumbent is not False

    def _check_session_id(self) -> tuple[str, str] | None:
        if len(self.session_id) > 100:
            return "session_id", "is longer than 100 characters"
        if self.session_id and not SESSION_ID_RE.match(self.session_id):
            return "session_id", (f"'{self.session_id}' may hold only letters, digits, '_' "
                                  "and '-', and must start with a letter or digit")
        return None

    def to_dict(self) -> dict[str, Any]:
        """The keys that are set, in declaration order (the TOML file's content). An empty
        ``readonly`` is left out, so that a configuration written before the key existed
        renders to the same bytes (and the same hash) as it did then."""
        return {k: getattr(self, k) for k in self.keys() if getattr(self, k) is not None
                and not (k in OPTIONAL_LISTS and not getattr(self, k))}

    def scored(self) -> bool:
        """Whether a ``[score]`` table computes the primary metric."""
        return self.score is not None

    def render(self) -> bytes:
        """The exact bytes of ``config.toml``."""
        import tomli_w

        header = "# git-autoresearch session configuration. Read-only: change it with\n" \
                 "# `git autoresearch start --new-segment` and new options.\n"
        return header.encode() + tomli_w.dumps(self.to_dict()).encode("utf-8")


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def duration_seconds(text: str) -> float | None:
    """The seconds of a duration written as numbers with units, largest first: ``"8h"``
    (28800), ``"90m"`` (5400), ``"3600s"``, ``"1h30m"`` (5400), ``"1.5h"``, ``"2d"``,
    ``"0"``; None for anything else (a unit missing, repeated or out of order, an empty text)."""
    text = text.strip().lower()
    if text == "0":
        return 0.0
    parts = _DURATION_RE.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    units = [u for _, u in parts]
    order = list(_UNIT_SECONDS)
    if [order.index(u) for u in units] != sorted({order.index(u) for u in units}):
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """``seconds`` as whole hours, minutes and seconds: ``"7h 59m 5s"``, ``"4m 0s"``,
    ``"12s"`` (rounded down to the second; a negative number reads as ``"0s"``)."""
    left = max(0, int(seconds))
    hours, rest = divmod(left, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


LOCK_WAIT_VARIABLE = "GIT_AUTORESEARCH_LOCK_WAIT"
LOCK_WAIT_DEFAULT = 60.0
HOOK_TIMEOUT_VARIABLE = "GIT_AUTORESEARCH_HOOK_TIMEOUT"
HOOK_TIMEOUT_DEFAULT = 30.0


def lock_wait_seconds() -> float:
    """How long a command waits for the session lock (``$GIT_AUTORESEARCH_LOCK_WAIT``)."""
    return env_seconds(LOCK_WAIT_VARIABLE, LOCK_WAIT_DEFAULT)


def hook_timeout_seconds() -> float:
    """How long a hook may run (``$GIT_AUTORESEARCH_HOOK_TIMEOUT``)."""
    return env_seconds(HOOK_TIMEOUT_VARIABLE, HOOK_TIMEOUT_DEFAULT, allow_zero=False)


def env_seconds(name: str, default: float, *, allow_zero: bool = True) -> float:
    """A number of seconds from environment variable ``name`` (``default`` when unset).
    Raises :class:`UsageError` naming the variable when it is not a finite number of at least
    0 (above 0 unless ``allow_zero``)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise UsageError(f"{name}={raw!r} is not a valid number of seconds")
    return value


def file_hash(data: bytes) -> str:
    """``sha256:<hex>`` of a file's bytes: the form the ledger's config header records."""
    return "sha256:" + sha256_hex(data)


def sha256_hex(data: bytes) -> str:
    """The SHA-256 digest of ``data`` in hex (64 characters), without loading OpenSSL
    (:func:`runtime.digests.hexdigest`)."""
    return hexdigest("sha256", data)


def parse_toml(data: bytes, *, source: str) -> dict[str, Any]:
    """Parse TOML bytes; raises :class:`UsageError` naming ``source`` and the position."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        parsed: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
        return parsed
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{source}: not valid TOML: {exc}") from None


def write_config(path: Path, cfg: Config) -> bytes:
    """Write ``config.toml`` read-only (0444), replacing any earlier one whole; returns its
    bytes. Raises :class:`~git_autoresearch.runtime.atomic.WriteFailed`."""
    from ..runtime.atomic import write_atomic

    data = cfg.render()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, 0o444)
    return data


def describe_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Human lines naming each key whose value differs between two configurations."""
    out = []
    for key in sorted(set(recorded) | set(current)):
        if key in OPTIONAL_LISTS and not recorded.get(key) and not current.get(key):
            continue
        if recorded.get(key) != current.get(key):
            out.append(f"{key}: {recorded.get(key)!r} -> {current.get(key)!r}")
    return out


def command_words(command: str) -> list[str]:
    """The words of a shell command as the shell splits them (``shlex``), or split on white
    space when it does not parse (an unclosed quote)."""
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def missing_scripts(cfg: Config, top: Path) -> list[str]:
    """Script-like words of the configured commands (``x.sh``, ``x.py``, ``./x``, ``dir/x``)
    that name no file, read from ``top`` (the top of the work tree) unless absolute; in the
    commands' order."""
    missing = []
    for command in (cfg.command, cfg.checks_command, cfg.metric_command):
        for word in command_words(command) if command else []:
            looks_like_script = word.endswith((".sh", ".py")) or word.startswith("./")
            if looks_like_script and not word.startswith("-") and "=" not in word:
                path = Path(word) if os.path.isabs(word) else top / word
                if not path.exists():
                    missing.append(word)
    return missing


def _holds_nul(value: Any) -> bool:
    """Whether a configuration value (a string, or a list or table of them, nested) holds a
    NUL character anywhere, its keys included."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    return False

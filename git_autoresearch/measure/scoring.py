"""Composite scoring: the ``[score]`` table of ``config.toml`` turns a run's metrics into its
primary metric.

The three kinds are the autoresearch loop's composite scorers (penalty, weighted and gated;
the manual: gitautoresearch-config(5)), held as configuration that the experiment cannot edit:

``weighted``
    ``[score.terms.NAME]`` with ``weight`` (default 1), ``scale`` (default 1) and ``direction``
    (default the session's): the score is the sum of ``weight * value / scale`` over the terms,
    a term whose direction differs from the session's counted negatively.
``penalty``
    ``primary = "NAME"``, then ``[score.penalties.NAME]`` with ``max`` (or ``min``) and
    ``weight``: each penalty is ``weight`` times how far the value is past the bound, and
    makes the score worse (subtracted when higher is better, added when lower is).
``gated``
    ``primary = "NAME"`` and ``[score.gates.NAME]`` with ``min`` and/or ``max``: the score is
    the primary metric, and a value outside a gate fails the run.

Each kind also takes ``[score.cutoffs.NAME]`` (``min``/``max``): a value outside a cutoff makes
the run a crash with the reason. A metric the score names but the run lacks is a crash naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("weighted", "penalty", "gated")
# The sub-tables each kind reads (besides kind and primary).
TABLES = {"weighted": ("terms", "cutoffs"), "penalty": ("penalties", "cutoffs"),
          "gated": ("gates", "cutoffs")}
ENTRY_KEYS = {"terms": ("weight", "scale", "direction"), "penalties": ("weight", "min", "max"),
              "gates": ("min", "max"), "cutoffs": ("min", "max")}
# The name under which a value read by metric_pattern, metric_json or metric_command joins the
# run's metrics when a score is configured.
READ_VALUE = "value"


class ScoreError(Exception):
    """A run cannot be scored: a missing component, a cutoff or a gate; ``str()`` says which
    and is the run's crash reason."""


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) \
        and math.isfinite(value)


def check_table(table: object, directions: Mapping[str, str]) -> str | None:
    """Why a ``[score]`` table is invalid (a phrase naming the bad key), or None.
    ``directions`` maps the accepted direction words to ``lower``/``higher``."""
    if not isinstance(table, dict):
        return "must be a table"
    kind = table.get("kind")
    if kind not in KINDS:
        return f"kind '{kind}' is not one of {', '.join(KINDS)}"
    allowed = {"kind", *TABLES[kind], *(("primary",) if kind != "weighted" else ())}
    unknown = sorted(set(table) - allowed)
    if unknown:
        return f"key '{unknown[0]}' is not read by kind '{kind}'"
    if kind != "weighted" and (not isinstance(table.get("primary"), str)
                               or not table["primary"].strip()):
        return f"primary is required by kind '{kind}' (the metric it starts from)"
    required = {"weighted": "terms", "gated": "gates"}.get(kind)
    if required and not table.get(required):
        return f"[score.{required}] is required by kind '{kind}'"
    for name in TABLES[kind]:
        problem = _check_entries(name, table.get(name, {}), directions)
        if problem:
            return problem
    return None


def _check_entries(name: str, entries: object, directions: Mapping[str, str]) -> str | None:
    if not isinstance(entries, dict):
        return f"{name} must be a table of metric names"
    for metric, entry in entries.items():
        where = f"{name}.{metric}"
        if not isinstance(entry, dict):
            return f"{where} must be a table"
        unknown = sorted(set(entry) - set(ENTRY_KEYS[name]))
        if unknown:
            return f"{where}: unknown key '{unknown[0]}'"
        for key in ("weight", "scale", "min", "max"):
            if key in entry and not _number(entry[key]):
                return f"{where}.{key} must be a finite number"
        if entry.get("scale") == 0:
            return f"{where}.scale must not be 0"
        if "direction" in entry and (not isinstance(entry["direction"], str)
                                     or entry["direction"].lower() not in directions):
            return f"{where}.direction '{entry['direction']}' is not 'lower' or 'higher'"
        if name != "terms" and "min" not in entry and "max" not in entry:
            return f"{where} needs min or max"
        if name == "penalties" and ("min" in entry) == ("max" in entry):
            return f"{where} needs exactly one of min and max"
    return None


def components(table: Mapping[str, Any]) -> list[str]:
    """Every metric name the score reads, in the table's order, each once."""
    names = [table["primary"]] if table.get("primary") else []
    for sub in TABLES[table["kind"]]:
        names += [n for n in table.get(sub, {}) if n not in names]
    return names


@dataclass
class Score:
    """A computed score: ``value`` (rounded to 12 significant digits) and its ``terms``, each a
    ``(label, contribution)`` pair in the order they were added (the explanation)."""

    value: float
    terms: list[tuple[str, float]] = field(default_factory=list)


def _round(value: float) -> float:
    return float(f"{value:.12g}")


def _outside(value: float, bounds: Mapping[str, Any]) -> str | None:
    if "min" in bounds and value < bounds["min"]:
        return f"below {bounds['min']:g}"
    if "max" in bounds and value > bounds["max"]:
        return f"above {bounds['max']:g}"
    return None


def compute(table: Mapping[str, Any], metrics: Mapping[str, float], direction: str,
            directions: Mapping[str, str]) -> Score:
    """The score of one run's ``metrics`` under a validated ``[score]`` table; ``direction``
    is the session's (``lower``/``higher``). Raises :class:`ScoreError` naming a missing
    component, or the cutoff or gate a value fails (``cutoff: drawdown = 0.6 is above 0.5``)."""
    missing = [n for n in components(table) if n not in metrics]
    if missing:
        return _raise(f"score component '{missing[0]}' is missing from the run's metrics")
    for name, bounds in table.get("cutoffs", {}).items():
        why = _outside(metrics[name], bounds)
        if why:
            raise ScoreError(f"cutoff: {name} = {metrics[name]:g} is {why}")
    for name, bounds in table.get("gates", {}).items():
        why = _outside(metrics[name], bounds)
        if why:
            raise ScoreError(f"gate failed: {name} = {metrics[name]:g} is {why}")
    kind = table["kind"]
    if kind == "weighted":
        terms = []
        for name, entry in table["terms"].items():
            own = directions[entry.get("direction", direction).lower()]
            sign = 1.0 if own == direction else -1.0
            terms.append((f"{name} {metrics[name]:g} x {entry.get('weight', 1):g}"
                          + (f" / {entry['scale']:g}" if "scale" in entry else "")
                          + (" (opposite direction: subtracted)" if sign < 0 else ""),
                          sign * entry.get("weight", 1) * metrics[name] / entry.get("scale", 1)))
        return Score(_round(sum(t[1] for t in terms)), terms)
    primary = table["primary"]
    terms = [(f"{primary} (primary)", metrics[primary])]
    worse = -1.0 if direction == "higher" else 1.0
    for name, entry in table.get("penalties", {}).items():
        value = metrics[name]
        past = value - entry["max"] if "max" in entry else entry["min"] - value
        bound = f"max {entry['max']:g}" if "max" in entry else f"min {entry['min']:g}"
        if past > 0:
            weight = entry.get("weight", 1)
            terms.append((f"penalty {name} {value:g} past {bound}, x {weight:g}",
                          worse * weight * past))
        else:
            terms.append((f"penalty {name} {value:g} within {bound}", 0.0))
    for name, bounds in table.get("gates", {}).items():
        terms.append((f"gate {name} {metrics[name]:g} passed ({_bounds(bounds)})", 0.0))
    return Score(_round(sum(t[1] for t in terms)), terms)


def _bounds(bounds: Mapping[str, Any]) -> str:
    return ", ".join(f"{key} {bounds[key]:g}" for key in ("min", "max") if key in bounds)


def _raise(reason: str) -> Score:
    raise ScoreError(reason)

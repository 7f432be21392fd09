"""Choosing what a recording command records: the pending measurement, or the metrics the
caller measured (``--metric``, ``--metrics``), and the notes a keep that does not beat the best
gets. Read by :mod:`record.transaction` and the
``keep``/``discard`` commands; no git, no files."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ..ledger import Run
from ..ledger.jsontext import number_text
from ..measure.samples import Measurement
from ..runtime.errors import Refused
from ..session.session import Session


@dataclass(frozen=True)
class Choice:
    """What a ``keep``, ``discard`` or ``crash`` records: ``result`` (the measurement, or the
    metrics the caller gave), ``given`` (those metrics alone, for a work tree changed since it
    was measured), notes for the caller, and ``forced``: for a keep the loop would not have
    made, the record's ``reason`` (``kept by hand: ...``), else None."""

    result: Measurement | None
    given: Measurement | None
    notes: list[str]
    forced: str | None = None


def choose_measurement(session: Session, status: str, pending: Measurement | None,
                       metric: float | None, metrics: Mapping[str, float]) -> Choice:
    """The measurement a recording command records: the ``pending`` one, or the primary
    ``metric`` the caller measured (which replaces it: its metrics are the run's, not mixed with
    a pending measurement's samples or checks), with the secondary ``metrics`` laid over it.
    A keep without a metric is :class:`Refused`; a keep is judged as the loop judges
    (:meth:`Session.decide`, the same judgement ``measure`` gave), and one the loop would not
    make gets a note and its decision marked ``forced`` (:func:`_judged_keep`)."""
    name = session.config.metric_name
    given = None
    result = pending
    notes: list[str] = []
    if metric is not None or metrics:
        given = _with_metrics(Measurement.empty(), metric, metrics, name)
        if given.metric is not None:
            if pending is not None:
                notes.append("the pending measurement is not used: the metric you gave is "
                             "recorded")
                given = dataclasses.replace(
                    given, scope_ref=pending.scope_ref,
                    scope_violations=pending.scope_violations,
                    readonly_violations=pending.readonly_violations)
            result = given
        else:  # secondary metrics only: added to the pending measurement
            result = _with_metrics(pending or Measurement.empty(), None, metrics,
                                   name)
    if status != "keep":
        return Choice(result, given, notes)
    if result is None or result.metric is None:
        from .stopping import rule_met

        met = rule_met(session)
        if met is not None:  # (measure would exit 4)
            raise Refused(f"nothing to keep: no pending measurement with a metric, and {met[1]}: "
                          "nothing more is measured (pass --metric VALUE, or git autoresearch "
                          "discard reverts the change)")
        if pending is None:
            from ..measure.worktree import dropped

            why = dropped(session)
            if why is not None:
                raise Refused(f"nothing to keep: {why}; run git autoresearch measure again, or "
                              "pass --metric VALUE")
        raise Refused("nothing to keep: no pending measurement with a metric (run git "
                      "autoresearch measure, or pass --metric VALUE)")
    judged, forced = _judged_keep(session, result)
    if given is result:
        given = judged
    if forced is not None:
        notes.append(f"{forced}; kept because you asked (its decision is recorded as forced)")
    cfg = session.config
    # A keep the rule made on few samples is its own evidence (and an exact metric needs no
    # more); one made by hand, against it or from a metric given, is said to be thin.
    by_hand = forced is not None or given is not None
    exact = (judged.decision or {}).get("evidence") == "exact"
    if by_hand and not exact and cfg.remeasures \
            and len(judged.samples) < min(3, cfg.samples_of_baseline):
        notes.append(f"the new incumbent has {len(judged.samples)} sample(s): a gain is "
                     "hard to prove against so few; run measures it again after the next "
                     f"revert, up to baseline_samples ({cfg.samples_of_baseline})")
    return Choice(judged, given, notes, None if forced is None else f"kept by hand: {forced}")


def _judged_keep(session: Session, result: Measurement) -> tuple[Measurement, str | None]:
    """``result`` about to be kept: as it is when the loop would keep it
    (:meth:`Session.decide`), with None; else with its ``decision`` object marked ``forced`` (a
    metric the caller gave gets :func:`measure.worktree.given_verdict`'s first), and why the loop
    would not keep it."""
    decided = session.decide(result)
    if decided == "keep":
        return result, None
    if result.decision is None:
        from ..measure.worktree import given_verdict

        result = dataclasses.replace(result, decision=given_verdict(session, result))
    found = result.decision or {}
    if decided == "checks_failed":
        why = f"its checks failed ({(result.checks or {}).get('reason')})"
    elif found.get("rule") == "strict":
        best, metric = session.segment.best, result.metric
        assert metric is not None
        shy = best is not None and best.metric is not None \
            and session.segment.better(metric, best.metric)
        why = f"{number_text(metric)} " + (
            f"beats the best so far ({_best_text(best)}) by less than min_effect "
            f"({session.config.min_effect or 0:.2%})" if shy else
            f"does not beat the best so far ({_best_text(best)})")
    else:  # (in the words of a discard's reason, its evidence left out)
        said = result.reason_for("discard", session.config.min_effect or 0.0,
                                 session.config.direction)
        why = f"the {found.get('rule')} rule found this run " + (
            said.split(": ")[0] if said else str(found.get("verdict")))
    return dataclasses.replace(result, decision={**found, "forced": True}), why


def _best_text(best: Run | None) -> str:
    if best is None or best.metric is None:
        return "nothing kept"
    return f"{number_text(best.metric)}, run {best.number}"


def _with_metrics(result: Measurement, metric: float | None, given: Mapping[str, float],
                  metric_name: str) -> Measurement:
    """``result`` with the metrics the caller gave laid over it (the primary one may come
    through ``--metrics NAME=VALUE`` too)."""
    value, samples = result.metric, list(result.samples)
    metrics = {**result.metrics, **given}
    if metric is not None:
        value, samples = metric, [metric]
    if metric_name in metrics:
        value = metrics.pop(metric_name)
        samples = [value]
    return dataclasses.replace(result, metric=value, samples=samples, metrics=metrics)

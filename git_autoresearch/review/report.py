"""Reading a session for people and scripts: the run table and the segment summary, views over a
:class:`Ledger`. Returns data and plain strings; no click, no git (the branch's trailers are read
in :mod:`git_autoresearch.history.trailers`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..ledger import Ledger, Run, Segment, json_metric, json_number
from ..ledger.confidence import confidence, confidence_label
from ..ledger.jsontext import number_text
from ..ledger.stats import mad, median

TSV_COLUMNS = ("experiment", "commit", "metric", "status", "duration_s", "description")
# The secondary metrics a description ends with in a results.tsv (the loop seed's SKILL,
# "Step 5", and what :func:`tsv` writes): `` [name=value, name=value]``; a description of a
# run with none that itself ends so is followed by an empty `` []``, which a reader drops.
METRICS_SUFFIX = re.compile(r"\s*\[([^\[\]]*=[^\[\]]*)\]\s*$")
NO_METRICS = " []"


def fmt(value: float | None) -> str:
    """A metric for people: up to 6 significant digits, ``-`` when there is none."""
    if value is None:
        return "-"
    return f"{value:.6g}"


def delta_pct(value: float | None, baseline: float | None) -> float | None:
    """Change of ``value`` against ``baseline`` in percent (None when undefined)."""
    if value is None or baseline is None or baseline == 0:
        return None
    change = (value - baseline) / abs(baseline) * 100
    return round(change, 2) if math.isfinite(change) else None


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate (the ledger keeps a name that is not
    UTF-8 so, as a ``\\u`` escape it reads back) written as the escape ``\\udcff``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """Tabs, newlines and other control characters (and terminal escapes) folded to single
    spaces, so that stored text cannot break a table or drive a terminal."""
    return " ".join(_CONTROL.sub(" ", text).split())


# What a run's experiment changed that it must not, by the record's field that lists the
# paths (set aside, never committed: gitautoresearch-guarantees(7)): a readonly file, a file
# outside the scope.
TOUCHED = (("readonly", "readonly_violations"), ("outside", "scope_violations"))
# The flag of each in the run table.
TOUCHED_FLAGS = {"readonly": "R", "outside": "O"}


def touched_paths(record: Any) -> dict[str, tuple[list[str], int]] | None:
    """What run ``record`` (a mapping) changed that it must not, by kind (``readonly``,
    ``outside``, in that order; only those it changed): the paths its record lists and how
    many there were (more than listed when the list was cut: ``*_violations_total``). None
    when the record has neither field (another tool's record, or a keep read from its
    trailer): not known, never read as clean."""
    out: dict[str, tuple[list[str], int]] = {}
    known = False
    for kind, name in TOUCHED:
        listed, total = record.get(name), record.get(name + "_total")
        known = known or name in record or name + "_total" in record
        paths = [str(p) for p in listed] if isinstance(listed, list) else []
        count = total if type(total) is int and total > len(paths) else len(paths)
        if count:
            out[kind] = (paths, count)
    return out if known else None


def touched(record: Any) -> list[str] | None:
    """The kinds of :func:`touched_paths` of ``record``: ``[]`` for none, ``["readonly"]``,
    ``["outside"]`` or ``["readonly", "outside"]``; None when not known."""
    if not (record.get("readonly_violations") or record.get("scope_violations")
            or "readonly_violations_total" in record or "scope_violations_total" in record):
        # Nothing listed and no count (most runs): known when it has either list. Asked of
        # each of 100,000 runs by log --json.
        return [] if "readonly_violations" in record or "scope_violations" in record else None
    found = touched_paths(record)
    return None if found is None else list(found)


# An audit's words that leave a keep out of finalize (unless --include-noise).
DROPPED_VERDICTS = ("within noise", "regression")
# An audited keep's mark in the run table, by the latest audit's verdict.
AUDIT_MARKS = {"confirmed": "✓", "within noise": "~", "regression": "✗", "crash": "!",
               "too few samples": "?"}


def audits(book: Ledger) -> dict[int, list[dict[str, Any]]]:
    """The ``{"type": "audit", ...}`` lines of the ledger (``git autoresearch audit``) by the
    run they audited, oldest first."""
    out: dict[int, list[dict[str, Any]]] = {}
    for event in book.events:
        run = event.get("audited_run")
        if event.get("type") == "audit" and isinstance(run, int) and not isinstance(run, bool):
            out.setdefault(run, []).append(event)
    return out


def latest_verdict(audited: Mapping[int, list[dict[str, Any]]], number: int) -> str | None:
    """The verdict of run ``number``'s latest audit (``audited``: :func:`audits`), None when
    it has none."""
    found = audited.get(number)
    verdict = found[-1].get("verdict") if found else None
    return verdict if isinstance(verdict, str) else None


def audit_mark(found: list[dict[str, Any]] | None) -> str:
    """The mark of a run's latest audit (``✓``, ``~``, ``✗``, ``!``), or ``""`` when it has
    none."""
    if not found:
        return ""
    return AUDIT_MARKS.get(str(found[-1].get("verdict")), "?")


def retry_of(run: Run) -> int | None:
    """The run that ``run`` retried (its record's ``retry_of``, written by ``run --retry``),
    or None: none, or a value that is no run number."""
    found = run.data.get("retry_of")
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 \
        else None


def retries(runs: Iterable[Run]) -> dict[int, list[int]]:
    """Run number -> the runs of ``runs`` that retried it (:func:`retry_of`), in run order:
    the other side of each retry's link."""
    out: dict[int, list[int]] = {}
    for run in runs:
        retried = retry_of(run)
        if retried is not None:
            out.setdefault(retried, []).append(run.number)
    return out


def retry_links(run: Run, retried_by: dict[int, list[int]]) -> str:
    """The links of ``run`` to its retries, for people: ``retry of run 12``, ``retried by run
    30`` (``runs 30, 34``), both joined by ``; ``, or ``""``."""
    links = []
    retried = retry_of(run)
    if retried is not None:
        links.append(f"retry of run {retried}")
    later = retried_by.get(run.number)
    if later:
        links.append(f"retried by run{'s' if len(later) > 1 else ''} "
                     + ", ".join(str(n) for n in later))
    return "; ".join(links)


def linked_description(run: Run, retried_by: dict[int, list[int]]) -> str:
    """``run``'s description on one line (:func:`one_line`), headed by its retry links
    (:func:`retry_links`) unless it begins with them already (a retry's own default
    description does)."""
    desc = one_line(run.description)
    links = retry_links(run, retried_by)
    if not links or desc.startswith(links + ":"):
        return desc
    retried = retry_of(run)
    own = f"retry of run {retried}: " if retried is not None else ""
    if own and desc.startswith(own):  # the description names the retry already
        return f"{links}: {desc[len(own):]}"
    return f"{links}: {desc}"


def select_runs(book: Ledger, *, segment: int | None, status: str | None,
                last: int | None) -> list[tuple[Run, Segment]]:
    """Runs of the ledger, oldest first, filtered by segment index, status and count."""
    out = []
    for seg in book.segments:
        if segment is not None and seg.index != segment:
            continue
        for run in seg.runs:
            if status is None or run.status == status:
                out.append((run, seg))
    if last is not None:
        out = out[-last:] if last > 0 else []
    return out


def stops_among(book: Ledger, rows: list[tuple[Run, Segment]]) -> list[dict[str, Any]]:
    """The ``stopped`` events of ``book`` that fall among ``rows`` (their ``next_run`` after
    the first row's run and at most the last's, or one past it when the last row is the
    ledger's last run), for :func:`tsv`."""
    if not rows:
        return []
    first, last = rows[0][0].number, rows[-1][0].number
    final = book.last_run
    limit = last + 1 if final is not None and final.number == last else last
    return [event for event in book.events
            if event.get("type") == "stopped" and isinstance(event.get("next_run"), int)
            and first < event["next_run"] <= limit]


def _tsv_number(value: Any) -> str:
    number = as_number(value)
    return "-" if number is None or not math.isfinite(number) else number_text(number)


def text_number(text: str) -> float | int | None:
    """The finite number ``text`` writes (an int when it has no ``.`` nor exponent), or
    None."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return int(value) if value == int(value) and "." not in text and "e" not in text.lower() \
        else value


def split_metrics(description: str) -> tuple[str, dict[str, int | float]]:
    """A results.tsv description without its ``[name=value, ...]`` suffix
    (:data:`METRICS_SUFFIX`), and the metrics the suffix held; the description unchanged and
    no metrics when it has no such suffix or one of its values is not a finite number. An
    empty ``[]`` at the end (:data:`NO_METRICS`) is dropped when what it follows would be
    read otherwise (:func:`tsv` writes it after such a description of a run with no
    metrics), and that is left whole: so every description :func:`tsv` writes reads back."""
    if description.endswith(NO_METRICS):
        rest = description[:-len(NO_METRICS)]
        if split_metrics(rest) != (rest, {}):
            return rest, {}
    found = METRICS_SUFFIX.search(description)
    if not found:
        return description, {}
    metrics: dict[str, int | float] = {}
    for item in found.group(1).split(","):
        name, sep, value = item.rpartition("=")
        number = text_number(value.strip())
        if not sep or not name.strip() or number is None:
            return description, {}
        metrics[name.strip()] = number
    return description[:found.start()], metrics


def tsv_description(description: str, metrics: list[str]) -> str:
    """A run's one-line ``description`` as :func:`tsv` writes it, its leading and trailing
    spaces gone: with its secondary ``metrics`` (``name=value`` texts) as the suffix, or,
    with none, an empty ``[]`` after it when :func:`split_metrics` would read it otherwise."""
    text = description.strip()
    if metrics:
        return f"{text} [{', '.join(metrics)}]"
    return text + NO_METRICS if split_metrics(text) != (text, {}) else text


def _field(text: str) -> str:
    """``text`` as a field of the tab-separated file: quoted as CSV quotes (``"`` doubled)
    when it begins with a double quote, which pandas' ``read_csv`` (karpathy's
    ``analysis.ipynb``) and ``import`` would otherwise take as quoting."""
    return '"' + text.replace('"', '""') + '"' if text.startswith('"') else text


def _stop_row(event: dict[str, Any]) -> str:
    """A ``stopped`` event as a row: its ``description`` (an imported row's), else the
    ``reason`` of a stop rule, else the STOP sentinel."""
    experiment = event.get("experiment")
    description = event.get("description")
    if not (isinstance(description, str) and description.strip()):
        description = event.get("reason")
    return "\t".join([
        str(experiment) if isinstance(experiment, int) and not isinstance(experiment, bool)
        else "-", "-", "-", "stopped", _tsv_number(event.get("duration_s")),
        _field(one_line(description)) if isinstance(description, str) and description.strip()
        else "STOP sentinel found"])


def tsv(rows: list[tuple[Run, Segment]], stops: list[dict[str, Any]] | None = None) -> str:
    """The seed's ``results.tsv`` (its SKILL, "Step 9"): a header and six tab-separated
    fields per run; the ``experiment`` is the seed's own number of an imported run, else the
    run's (less one in a session that counts from experiment 0, so that import reads it back
    as the same run); ``-`` for the commit of a non-kept run and the metric of a crash; numbers with
    every digit (:func:`ledger.jsontext.number_text`); secondary metrics appended to the description
    as ``[name=value, ...]`` (the numeric ones, as the seed's ``METRIC`` lines are; an empty
    ``[]`` after a description with none that :func:`split_metrics` would read otherwise); a
    field
    that begins with ``"`` quoted (:func:`_field`); each of ``stops`` (``stopped`` events,
    :func:`stops_among`) a ``stopped`` row before the run it stopped ahead of.
    ``git autoresearch import`` reads it back."""
    lines = ["\t".join(TSV_COLUMNS)]
    pending = sorted(stops or [], key=lambda event: int(event["next_run"]))
    # An imported session that counts from experiment 0 (the seed's) is read back with run
    # N + 1 for experiment N: a run without a number of its own is written as its run
    # number less one.
    first = next((run.number - experiment for run, _ in rows
                  if isinstance(experiment := run.data.get("experiment"), int)
                  and not isinstance(experiment, bool)), 0)
    offset = 1 if first == 1 else 0
    for run, _ in rows:
        while pending and int(pending[0]["next_run"]) <= run.number:
            lines.append(_stop_row(pending.pop(0)))
        metrics = run.data.get("metrics") or {}
        numeric = [f"{one_line(str(k))}={_tsv_number(v)}" for k, v in metrics.items()
                   if as_number(v) is not None] if isinstance(metrics, dict) else []
        desc = tsv_description(one_line(run.description), numeric)
        experiment = run.data.get("experiment")
        lines.append("\t".join([
            str(experiment) if isinstance(experiment, int) and not isinstance(experiment, bool)
            else str(run.number - offset),
            one_line(str(run.data.get("commit", "-"))) or "-" if run.status == "keep" else "-",
            "-" if run.metric is None else _tsv_number(run.metric),
            run.status,
            _tsv_number(run.data.get("duration_s")),
            _field(desc) or "-",
        ]))
    lines.extend(_stop_row(event) for event in pending)
    return "\n".join(lines) + "\n"


def csv_text(rows: list[tuple[Run, Segment]]) -> str:
    """The runs as CSV (RFC 4180 quoting): fixed columns, then one per secondary metric."""
    import csv
    import io

    names: list[str] = []
    for run, _ in rows:
        listed = run.data.get("metrics")
        if isinstance(listed, dict):
            names.extend(k for k in listed if k not in names)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "segment", "status", "metric", "delta_pct", "confidence", "commit",
                     "duration_s", "description", *names])
    for run, seg in rows:
        delta = delta_pct(run.metric, seg.baseline.metric if seg.baseline else None)
        found = run.data.get("metrics")
        values: dict[str, Any] = found if isinstance(found, dict) else {}
        writer.writerow([run.number, seg.index, run.status,
                         "" if run.metric is None else json_number(run.metric),
                         "" if delta is None else delta,
                         _cell(run.data.get("confidence")), run.data.get("commit", ""),
                         _cell(run.data.get("duration_s")), run.description,
                         *(_cell(values.get(n)) for n in names)])
    return out.getvalue()


def _cell(value: Any) -> Any:
    """A CSV cell: empty for None and for a number JSON has no text for (infinity)."""
    return "" if value is None or isinstance(value, float) and not math.isfinite(value) \
        else value


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


# The words of a run's decision in the run table, by its verdict.
VERDICT_WORDS = {"better": "better", "worse": "worse", "inconclusive": "noise",
                 "no_change": "probe", "baseline": "baseline"}


# The word of an inconclusive discard, by the start of its reason, and what each means.
REASON_WORDS = (("not shown to be better", "unproven"), ("not better", "no gain"),
                ("within noise", "noise"), ("better, but not shown", "small"))
WORD_MEANINGS = {"noise": "within noise", "no gain": "not better",
                 "unproven": "better by its estimate, but not shown to be",
                 "small": "not shown to be better by min_effect", "probe": "no change"}


def effect_of(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """The effect of an audit or final line as ``{"value", "low", "high", "relative",
    "relative_low", "relative_high", "confidence_level"}``: from its decision-named fields
    (``effect``, ``effect_low``, ...), or its ``effect`` object as lines written by version
    0.1 hold it; None when nothing was measured."""
    found = line.get("effect")
    if isinstance(found, dict):
        return {**found, "confidence_level": interval_level(found)}
    if not isinstance(found, (int, float)) or isinstance(found, bool):
        return None
    return {"value": found, "low": line.get("effect_low"), "high": line.get("effect_high"),
            "relative": line.get("relative"), "relative_low": line.get("relative_low"),
            "relative_high": line.get("relative_high"),
            "confidence_level": interval_level(line)}


def interval_level(effect: Mapping[str, Any]) -> float | None:
    """The level of an effect's interval (0.95 for 95%), a decision's or an audit's:
    ``confidence_level``, or ``confidence`` as records written before it name it."""
    level = effect.get("confidence_level", effect.get("confidence"))
    return float(level) if isinstance(level, (int, float)) and not isinstance(level, bool) \
        else None


def decision_text(run: Run) -> str:
    """A run's decision in a few characters: the verdict's word (for ``inconclusive``, a
    discard's as its reason gives it, :data:`REASON_WORDS`: ``noise``, ``no gain``,
    ``unproven`` or ``small``; else ``noise``, or ``no gain`` for one stopped against the
    incumbent's earlier samples alone; ``probe`` for ``no_change``) and the relative effect
    against the
    incumbent, ``*`` when kept by hand against the rule; ``-`` for a run without one."""
    found = run.data.get("decision")
    if not isinstance(found, dict) or not isinstance(found.get("verdict"), str):
        return "-"
    verdict: str = found["verdict"]
    word = VERDICT_WORDS.get(verdict, verdict)[:8]
    if verdict == "inconclusive":
        # A discard's words, as its reason gives them (decide.rules.discard_reason); else
        # (a keep by hand, an older record) "no gain" for one stopped against the
        # incumbent's earlier samples alone: not noise.
        reason = run.data.get("reason")
        if isinstance(reason, str) and reason.startswith("kept by hand: "):
            # (decide.choice: "kept by hand: the sequential rule found this run <its words>")
            reason = reason.partition(" found this run ")[2]
        said = next((w for start, w in REASON_WORDS
                     if isinstance(reason, str) and reason.startswith(start)), None)
        word = said or ("no gain" if found.get("evidence") == "pool" else word)
    relative = as_number(found.get("relative"))
    pct = None if relative is None else relative * 100
    text = word if pct is None else f"{word} {pct:+.0f}%" if abs(pct) >= 100 else \
        f"{word} {pct:+.1f}%"
    return text + ("*" if found.get("forced") is True else "")


def table(rows: list[tuple[Run, Segment]], width: int = 100,
          audited: dict[int, list[dict[str, Any]]] | None = None,
          retried_by: dict[int, list[int]] | None = None) -> str:
    """The run table for people: run, status, metric, delta vs baseline, the decision
    (:func:`decision_text`), confidence, what the run touched that it must not when one shown
    did (:data:`TOUCHED_FLAGS`), commit, description (headed by its retry links:
    :func:`linked_description`, with ``retried_by`` from :func:`retries`, of the rows when
    not given); a line marks where each segment begins. An audited keep's status carries the
    mark of its latest audit (:data:`AUDIT_MARKS`, from ``audited``); these are explained
    below the table."""
    audited = audited or {}
    retried_by = retried_by if retried_by is not None else retries(run for run, _ in rows)
    out = []
    # Runs recorded by workers (several agents at once): who recorded each.
    workers = any(run.data.get("worker") for run, _ in rows)
    flags = {run.number: "".join(TOUCHED_FLAGS[k] for k in touched(run.data) or [])
             for run, _ in rows}
    marked = any(flags.values())
    header = f"{'run':>5}  {'status':<13} {'metric':>12} {'vs base':>9} {'decision':<15} " \
             f"{'conf':>6}  " + (f"{'touched':<7}  " if marked else "") + f"{'commit':<7}  " \
             + (f"{'worker':<8}  " if workers else "") + "description"
    out.append(header)
    current = None
    for run, seg in rows:
        if seg.index != current:
            current = seg.index
            name = (seg.header or {}).get("name", "")
            out.append(f"-- segment {seg.index}: {one_line(str(name))}")
        base = seg.baseline
        delta = delta_pct(run.metric, base.metric if base else None)
        conf = run.data.get("confidence")
        desc = linked_description(run, retried_by)
        room = max(20, width - len(header) + len("description"))
        if len(desc) > room:
            desc = desc[:room - 1] + "…"
        mark = audit_mark(audited.get(run.number))
        status = f"{run.status} {mark}" if mark else run.status
        out.append(
            f"{run.number:>5}  {status:<13} {fmt(run.metric):>12} "
            f"{(f'{delta:+.1f}%' if delta is not None else '-'):>9} "
            f"{decision_text(run):<15} "
            f"{(f'{conf:.2f}' if isinstance(conf, (int, float)) else '-'):>6}  "
            + (f"{flags[run.number]:<7}  " if marked else "")
            + f"{str(run.data.get('commit', '-'))[:7]:<7}  "
            + (f"{str(run.data.get('worker') or 'main')[:8]:<8}  " if workers else "")
            + desc)
    decided = [decision_text(run) for run, _ in rows]
    if any(text != "-" for text in decided):
        said = [f"{word}: {meaning}" for word, meaning in WORD_MEANINGS.items()
                if any(t.startswith(word) for t in decided)]
        out.append("decision: the rule's verdict against the incumbent and the effect"
                   + (f" ({'; '.join(said)})" if said else "") +
                   ("; * kept by hand against it" if any(t.endswith("*") for t in decided)
                    else ""))
    if marked:
        out.append("touched: R changed a readonly file, O changed a file outside the scope "
                   "(each set aside, never committed); git autoresearch show RUN names them")
    if any(audited.get(run.number) for run, _ in rows):
        out.append("audited (git autoresearch audit): ✓ confirmed, ~ within noise, "
                   "✗ regression, ! crashed"
                   + (", ? too few samples" if any(
                       latest_verdict(audited, run.number) == "too few samples"
                       for run, _ in rows) else ""))
    return "\n".join(out) + "\n"


# The loop seed's bound of a "low" stability (relative MAD): noise at least this large is
# what more samples per experiment are for.
NOISE_LOW = 0.05


def stability(segment: Segment, noise: dict[str, Any] | None = None
              ) -> dict[str, Any] | None:
    """The loop seed's stability label over the last 5 kept metrics (from 3 keeps on):
    relative MAD < 1 % *high*, < 5 % *medium*, else *low* (``label``, ``relative_mad``, and
    ``keeps``, how many it read), as autoresearch-loop.SKILL's confidence scoring computes it.
    Kept runs that improve steadily spread as much as noisy ones, so the advice is computed
    from what measures noise: ``noise`` (``relative_spread`` and the ``source`` it came from;
    :func:`measured_noise` when not given, None when nothing measures it), and ``advice``
    (raise ``runs_per_experiment``, under the strict rule when the noise is at least
    :data:`NOISE_LOW`; None otherwise)."""
    values = [r.metric for r in segment.kept if r.metric is not None][-5:]
    if len(values) < 3:
        return None
    centre = median(values)
    rel = mad(values) / abs(centre) if centre else 0.0
    label = "high" if rel < 0.01 else "medium" if rel < 0.05 else "low"
    noise = noise if noise is not None else measured_noise(segment)
    config = (segment.header or {}).get("config")
    rule = (config.get("decision") if isinstance(config, dict) else None) or "strict"
    advice = ("consider raising runs_per_experiment" if noise is not None and rule == "strict"
              and noise["relative_spread"] >= NOISE_LOW else None)
    return {"label": label, "relative_mad": round(rel, 6), "keeps": len(values),
            "noise": noise, "advice": advice}


def measured_noise(segment: Segment) -> dict[str, Any] | None:
    """The metric's noise as the segment's repeated measurements of one tree show it: the
    samples of each run measured more than once, and each kept run with the no-change runs
    (verdict ``no_change``) that measured it again. Each group of two values or more gives
    its relative MAD (MAD over the median's magnitude); ``relative_spread`` is their median
    (rounded to 6 places), ``source`` says what was read (``repeat samples of 5 runs``,
    ``2 no-change runs``). None when no group has two values (crashes and failed checks are
    not read)."""
    groups: list[list[float]] = []
    repeated = probes = 0
    current: list[float] | None = None
    for run in segment.runs:
        if run.status not in ("keep", "discard"):
            continue
        raw = run.data.get("samples")
        samples = [float(x) for x in raw if isinstance(x, (int, float))
                   and not isinstance(x, bool) and math.isfinite(x)] \
            if isinstance(raw, list) else []
        values = samples or ([run.metric] if run.metric is not None else [])
        repeated += len(samples) > 1
        decided = run.data.get("decision")
        if run.status == "keep":
            current = list(values)
            groups.append(current)
        elif isinstance(decided, dict) and decided.get("verdict") == "no_change" \
                and current is not None:
            current.extend(values)
            probes += 1
        elif len(values) > 1:
            groups.append(values)
    spreads = [mad(g) / abs(median(g)) for g in groups if len(g) > 1 and median(g)]
    spreads += [0.0 for g in groups if len(g) > 1 and not median(g) and not mad(g)]
    if not spreads:
        return None
    said = [f"repeat samples of {repeated} run{'s' if repeated != 1 else ''}"] if repeated \
        else []
    said += [f"{probes} no-change run{'s' if probes != 1 else ''}"] if probes else []
    return {"relative_spread": round(median(spreads), 6), "source": " and ".join(said)}


def segment_list(indices: list[int]) -> str:
    """Segment numbers for people: ``segment 2``, ``segments 0–2`` (a stretch of three or
    more), ``segments 0, 2``."""
    if len(indices) == 1:
        return f"segment {indices[0]}"
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"segments {indices[0]}–{indices[-1]}"
    return "segments " + ", ".join(str(i) for i in indices)


def last_replayed_segment(book: Ledger, final: Mapping[str, Any]) -> int | None:
    """The last segment a keep that ``final`` (a ``{"type": "final"}`` line) replayed was kept
    in: the one its keeps were measured as; None when it names no run of ``book``."""
    kept = {e.get("run") for e in final.get("replayed") or [] if isinstance(e, dict)}
    return max((run.segment for run in book.runs if run.number in kept), default=None)


def metric_of(segment: Segment, name: str, unit: str) -> tuple[str, str]:
    """The name and unit of ``segment``'s metric as its header records them (``metricName``,
    ``metricUnit``); ``name`` and ``unit`` (the configuration's) where it records none."""
    header = segment.header or {}
    found, said = header.get("metricName"), header.get("metricUnit")
    return (found if isinstance(found, str) and found else name,
            said if isinstance(said, str) and isinstance(found, str) and found else unit)


def unit_suffix(segment: Segment, unit: str) -> str:
    """`` <unit>`` of ``segment``'s metric (:func:`metric_of`; ``unit``, the configuration's,
    where its header records none), empty when it has none: for a number in its own unit."""
    said = metric_of(segment, "", unit)[1]
    return f" {said}" if said else ""


def measured_by(segment: Segment, *, direction: bool = True) -> str:
    """How ``segment``'s metric was measured, for people: ``score from `sh bench.sh`
    (lower is better)`` (without the direction unless ``direction``), or ``score (its command
    is not recorded)`` for a segment whose header records no configuration
    (:attr:`Segment.measurement`)."""
    name, _ = metric_of(segment, "metric", "")
    config = (segment.header or {}).get("config")
    command = config.get("command") if isinstance(config, dict) else None
    if not isinstance(command, str):
        return f"{one_line(name)} (its command is not recorded)"
    return f"{one_line(name)} from `{one_line(command)}`" + (
        f" ({segment.direction} is better)" if direction else "")


def segment_summary(segment: Segment) -> dict[str, Any]:
    """Baseline, best, improvement, counts and confidence of one segment; ``incumbent`` is the
    last kept run (the commit the next run is compared with), which is not the best after a
    keep by hand of a worse run."""
    base, best = segment.baseline, segment.best
    kept = [run for run in segment.runs if run.status == "keep"]
    counts: dict[str, int] = {}
    for run in segment.runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    conf = confidence(segment)
    return {
        "index": segment.index,
        "name": (segment.header or {}).get("name"),
        "direction": segment.direction,
        "runs": len(segment.runs),
        "counts": counts,
        "kept": counts.get("keep", 0),
        "baseline": _run_brief(base),
        "best": _run_brief(best),
        "improvement_pct": delta_pct(best.metric if best else None,
                                     base.metric if base else None),
        "confidence": conf,
        "confidence_label": confidence_label(conf),
        "stability": stability(segment),
        "last": _run_brief(segment.runs[-1]) if segment.runs else None,
        "incumbent": _run_brief(kept[-1]) if kept else None,
    }


def _run_brief(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    found = run.data.get("decision")
    return {"run": run.number, "status": run.status, "metric": json_metric(run.metric),
            "commit": run.data.get("commit"), "description": run.description,
            "decision": found if isinstance(found, dict) else None,
            "decision_text": decision_text(run)}

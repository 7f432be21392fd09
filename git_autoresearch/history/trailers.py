"""The commit-message contract: every trailer a session writes, and every reader of them.

A keep commit ends with ``Result``, ``Autoresearch-Run`` and ``Autoresearch-Session``
(pi-autoresearch's ``Result:`` JSON, status first), and ``Autoresearch-Decision`` (how the rule
decided, for people) when the run has a decision; an attempt commit (a run not kept) with
``Autoresearch-Status``, ``-Run``, ``-Session`` and ``-Intent``; a set-aside commit (changes
outside the scope or to readonly paths) with ``Autoresearch-Intent``; a segment commit (the files
that define success, committed by ``start --new-segment``) with ``Autoresearch-Segment`` and
``-Session``, and no ``Result``: it is no keep. Trailers are read back
through git's own trailer parser (``%(trailers:key=...)``), never by splitting a message.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..git import Repo
from ..ledger import Ledger, Run, Segment, dumps, json_number
from ..ledger.jsontext import is_whole, reject_constant
from ..ledger.records import run_record

RESULT = "Result"
STATUS = "Autoresearch-Status"
RUN = "Autoresearch-Run"
SESSION = "Autoresearch-Session"
INTENT = "Autoresearch-Intent"
DECISION = "Autoresearch-Decision"
SEGMENT = "Autoresearch-Segment"


def _values(key: str, *options: str) -> str:
    """The ``--format`` placeholder for the values of trailer ``key``."""
    return f"%(trailers:key={key},{','.join(('valueonly', *options))})"


# --- writers ------------------------------------------------------------------------------------

def result_trailer(metric_name: str, metric: float, metrics: Mapping[str, float]) -> str:
    """The ``Result:`` value: compact JSON, ``status`` first, then the primary metric, then the
    secondary ones, non-ASCII names kept, numbers as JavaScript writes them (``0.000015``,
    ``1e-7``: the ``JSON.stringify`` of pi-autoresearch 1.6.2, extensions/pi-autoresearch/
    index.ts:2383)."""
    body: dict[str, Any] = {"status": "keep", metric_name: json_number(metric)}
    for name, value in metrics.items():
        if name not in body:
            body[name] = json_number(value)
    return dumps(body)


def _figure(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def decision_trailer(found: Mapping[str, Any] | None) -> str | None:
    """The ``Autoresearch-Decision:`` value of a keep, for people reading ``git log``: the
    rule, the verdict, the relative effect against the incumbent with its interval and the
    samples of each side, and ``forced`` for a keep by hand against the rule
    (``sequential better -2.10% [-3.40%, -0.80%], 6 samples against 25``); None without a
    decision, or for a baseline."""
    if not found or found.get("verdict") in (None, "baseline"):
        return None
    text = f"{found.get('rule', 'sequential')} {found['verdict']}"
    rel, low, high = (_figure(found.get(k)) for k in ("relative", "relative_low",
                                                      "relative_high"))
    if rel is not None and low is not None and high is not None:
        text += f" {rel * 100:+.2f}%"
        if low != high:
            text += f" [{low * 100:+.2f}%, {high * 100:+.2f}%]"
    if isinstance(found.get("candidate_samples"), int) and \
            isinstance(found.get("incumbent_samples"), int):
        text += (f", {found['candidate_samples']} sample(s) against "
                 f"{found['incumbent_samples']}")
    return text + (", forced" if found.get("forced") is True else "")


def keep_trailers(trailer: str, run: int, session_id: str,
                  decision: str | None = None) -> dict[str, str]:
    """The trailers :func:`commit_message` writes, key to value, for the read-back."""
    block = {RESULT: trailer, RUN: str(run), SESSION: session_id}
    if decision:
        block[DECISION] = decision
    return block


def commit_message(description: str, trailer: str, run: int, session_id: str,
                   decision: str | None = None) -> str:
    """The keep commit's message: the description, a blank line, then our trailer block last.

    Only the last paragraph of a message holds trailers, so a description's own ``Result:``
    line, ``---`` line, tabs or paragraphs can neither forge nor hide ours.
    """
    text = description.replace("\r\n", "\n").strip("\n") or f"run {run}"
    block = keep_trailers(trailer, run, session_id, decision)
    return f"{text}\n\n" + "".join(f"{key}: {value}\n" for key, value in block.items())


def attempt_message(description: str, status: str, run: int, session_id: str,
                    token: str) -> str:
    """The message of the attempt commit of a run not kept (``status``: discard, crash,
    checks_failed): the description (``run N`` when blank), a blank line, then the
    ``Autoresearch-Status``, ``-Run``, ``-Session`` and ``-Intent`` (``token``) trailers."""
    return (f"{description.strip() or f'run {run}'}\n\n"
            f"{STATUS}: {status}\n{RUN}: {run}\n"
            f"{SESSION}: {session_id}\n"
            f"{INTENT}: {token}\n")


def set_aside_message(run: int, token: str | None, *, kept: bool) -> str:
    """The message of a commit that sets aside changes outside the scope or to readonly paths:
    those found before measuring run ``run``, or (``kept``) those of kept run ``run``; with an
    ``Autoresearch-Intent`` trailer naming ``token`` when there is one."""
    which = f"of kept run {run}" if kept else f"before run {run}"
    text = f"changes outside the scope or to readonly paths {which}\n"
    return text + (f"\n{INTENT}: {token}\n" if token is not None else "")


def segment_trailers(segment: int, session_id: str) -> dict[str, str]:
    """The trailers of a segment commit (:func:`segment_message`), key to value, for the
    read-back."""
    return {SEGMENT: str(segment), SESSION: session_id}


def segment_message(segment: int, session_id: str, paths: list[str]) -> str:
    """The message of the commit ``start --new-segment`` makes of the files that define
    success for segment ``segment`` (``paths``, the first five named in the subject, every one
    in the body), with the ``Autoresearch-Segment`` and ``-Session`` trailers: no ``Result``,
    so no reader takes it for a keep."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    body = "".join(f"{path}\n" for path in paths)
    block = "".join(f"{key}: {value}\n"
                    for key, value in segment_trailers(segment, session_id).items())
    return (f"segment {segment}: the files that define success ({shown})\n\n"
            f"Committed by git autoresearch start --new-segment, so that the segment is "
            f"measured on a commit that holds them:\n{body}\n{block}")


# --- readers ------------------------------------------------------------------------------------

def segment_commits(repo: Repo, branch: str, base: str | None, session_id: str
                    ) -> list[tuple[str, int]]:
    """The segment commits of session ``session_id`` on ``branch`` after ``base``, oldest
    first, as (full commit id, segment index), in one git call: the commits with an
    ``Autoresearch-Segment`` trailer of a whole number, an ``Autoresearch-Session`` of
    ``session_id`` and no ``Result`` (:func:`segment_message`)."""
    spec = f"{base}..{branch}" if base else branch
    log = repo.log_fields(spec, ["%H", _values(SEGMENT), _values(SESSION), _values(RESULT)],
                          reverse=True)
    found = []
    for commit, segment, session, result in log or []:
        words = segment.split()
        if len(words) == 1 and is_whole(words[0]) and len(words[0]) < 10 \
                and session.split() == [session_id] and not result.strip():
            found.append((commit, int(words[0])))
    return found


def read_back(repo: Repo, rev: str, trailers: Mapping[str, str]) -> tuple[str, str | None]:
    """The id of commit ``rev``, and what is wrong with its trailers (None when each of
    ``trailers``, key to value, reads back once and as written)."""
    keys = list(trailers)
    parts = repo.commit_fields(rev, ["%H", *(_values(k, "unfold") for k in keys)])
    commit = parts[0]
    for key, read in zip(keys, parts[1:], strict=True):
        values = [v for v in read.split("\n") if v.strip()]
        if values != [trailers[key]]:
            return commit, (f"the {key} trailer of commit {commit[:7]} does not read back as "
                            f"written (a commit-msg hook changed it?): got {values!r}")
    return commit, None


def intent_tokens(repo: Repo, commit: str) -> list[str]:
    """The ``Autoresearch-Intent`` tokens of ``commit`` (words of its values)."""
    return repo.commit_fields(commit, [_values(INTENT)])[0].split()


def run_trailer(repo: Repo, commit: str) -> str:
    """The ``Autoresearch-Run`` value of ``commit``, blanks stripped (empty: none)."""
    return repo.commit_fields(commit, [_values(RUN)])[0].strip()


def has_result(repo: Repo, commit: str) -> bool:
    """Whether ``commit`` has a ``Result:`` trailer (a keep of any tool made it)."""
    return bool(repo.commit_fields(commit, [_values(RESULT)])[0].strip())


def runs_named(repo: Repo, spec: str) -> list[int]:
    """Every run number an ``Autoresearch-Run`` trailer of the revision range ``spec`` names
    (numbers of fewer than 10 digits); none when git refuses ``spec``."""
    log = repo.log_fields(spec, [_values(RUN)]) or []
    return [int(w) for (value,) in log for w in value.split() if is_whole(w) and len(w) < 10]


@dataclass
class BranchRuns:
    """The highest run number the ``Autoresearch-Run`` trailers of a revision range name, the
    range ending at a known tip, kept in the file ``cache`` (one line: ``<range> <tip>
    <number>``): commits never change, so the same range to the same tip needs no ``git log``
    again. A torn file, or one for another range or tip, is read again from git. ``save``
    writes it (a temporary file renamed over it, not synced: a cache) and ignores a failure
    (a full disk): call it once the run is recorded."""

    cache: Path
    known: tuple[str, str, int] | None = None
    unsaved: bool = False

    def highest(self, repo: Repo, spec: str, tip: str | None) -> int:
        """The highest number of ``spec`` (which ends at commit ``tip``; None: unknown)."""
        try:
            fields = self.cache.read_text("utf-8").split() if tip else []
        except (OSError, UnicodeDecodeError):
            fields = []
        hit = len(fields) == 3 and fields[:2] == [spec, tip] and is_whole(fields[2])
        found = int(fields[2]) if hit else max(runs_named(repo, spec), default=0)
        if tip:
            self.known, self.unsaved = (spec, tip, found), not hit
        return found

    def kept(self, parent: str | None, commit: str, run: int) -> None:
        """Commit ``commit``, child of the tip ``parent``, with ``Autoresearch-Run: <run>``,
        is the tip now."""
        if self.known is not None and self.known[1] == parent:
            self.known, self.unsaved = (self.known[0], commit, max(self.known[2], run)), True

    def save(self) -> None:
        if self.known is None or not self.unsaved or not self.cache.parent.is_dir():
            return
        tmp = self.cache.with_name(f"{self.cache.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(" ".join(map(str, self.known)) + "\n", "utf-8")
            os.replace(tmp, self.cache)
            self.unsaved = False
        except OSError:
            tmp.unlink(missing_ok=True)


def kept_at(repo: Repo, commit: str, session_id: str) -> int | None:
    """The run a keep of session ``session_id`` made ``commit`` for: its ``Autoresearch-Run``
    number when its ``Autoresearch-Session`` is ``session_id`` and it has a ``Result``
    trailer; None otherwise (a commit of another session, or made by hand without them)."""
    run, session, result = repo.commit_fields(commit, [_values(RUN), _values(SESSION),
                                                       _values(RESULT)])
    words = run.split()
    if session.split() != [session_id] or not result.strip() or len(words) != 1 \
            or not is_whole(words[0]) or len(words[0]) > 9:
        return None
    return int(words[0])


def commit_info(repo: Repo, oid: str) -> dict[str, Any]:
    """What a rebuilt ledger line takes from commit ``oid``: ``commit`` (full id), ``time``
    (commit time, seconds since the epoch), ``status`` and ``run`` (its
    ``Autoresearch-Status`` and ``-Run`` values, empty when absent) and ``description`` (the
    message without its trailer block, as git's trailer parser finds the block)."""
    parts = repo.commit_fields(oid, ["%H", "%ct", _values(STATUS), _values(RUN), "%B",
                                     "%(trailers)"])
    # The block is the message's last paragraph; git prints it as the message holds it.
    body, block = parts[4].rstrip("\n"), parts[5].rstrip("\n")
    if block and body.endswith(block):
        body = body[:-len(block)]
    return {"commit": parts[0], "time": int(parts[1] or 0), "status": parts[2].strip(),
            "run": parts[3].strip(), "description": body.strip()}


@dataclass
class TrailerCommit:
    """A commit of the branch with a ``Result:`` trailer: its id, commit time (seconds),
    subject, ``Autoresearch-Run`` (None when absent or not a number), the ``Result`` value
    parsed (None when it is not a JSON object of finite numbers: not to be trusted), and
    ``Autoresearch-Session`` (None when absent)."""

    commit: str
    time: int
    subject: str
    run: int | None
    result: dict[str, Any] | None
    session: str | None = None


def _result(text: str) -> dict[str, Any] | None:
    """A ``Result`` value parsed, or None when it is not a JSON object of finite numbers."""
    try:
        result = json.loads(text.strip().splitlines()[-1], parse_constant=reject_constant)
    except ValueError:
        return None
    if not isinstance(result, dict) or any(
            isinstance(v, float) and not math.isfinite(v) for v in result.values()):
        return None
    return result


def trailer_log(repo: Repo, branch: str, base: str | None = None) -> list[TrailerCommit]:
    """Every commit of ``branch`` (after ``base``) that has a ``Result:`` trailer, oldest
    first, in one git call. Any tool's trailers count: ours, pi-autoresearch's, its ports'."""
    spec = f"{base}..{branch}" if base else branch
    log = repo.log_fields(spec, ["%H", "%ct", "%s", _values(RUN), _values(RESULT),
                                 _values(SESSION)], reverse=True)
    found: list[TrailerCommit] = []
    for commit, time, subject, run, result, session in log or []:
        if not result.strip():
            continue
        run_text = run.strip().splitlines()[0] if run.strip() else ""
        session_text = session.strip().splitlines()[0].strip() if session.strip() else None
        found.append(TrailerCommit(commit, int(time or 0), subject,
                                   int(run_text) if is_whole(run_text) and len(run_text) < 10
                                   else None,
                                   _result(result), session_text))
    return found


def read_trailers(repo: Repo, branch: str, base: str | None,
                  log: list[TrailerCommit] | None = None,
                  recorded: Mapping[int, str] | None = None) -> dict[int, dict[str, Any]]:
    """Kept runs as our trailers record them: run number -> ``{"commit", "result"}``; commits
    without ``Autoresearch-Run`` or with an untrusted ``Result`` are left out. When several
    commits name one run, the newest wins, unless one of them is the commit ``recorded``
    gives for that run (run number -> the ledger's commit id, full or abbreviated): a commit
    made by hand that repeats a keep's trailers does not take its place."""
    found: dict[int, dict[str, Any]] = {}
    for c in entries_of(repo, branch, base, log):
        if c.run is None or c.result is None:
            continue
        known = (recorded or {}).get(c.run, "").strip().lower()
        if c.run in found and known and found[c.run]["commit"].startswith(known):
            continue
        found[c.run] = {"commit": c.commit, "result": c.result, "session": c.session}
    return found


def recorded_keeps(book: Ledger) -> dict[int, str]:
    """The commit the ledger records for each kept run (run number -> id as written), for
    :func:`read_trailers`'s ``recorded``."""
    return {r.number: str(r.data.get("commit") or "") for r in book.runs if r.status == "keep"}


def entries_of(repo: Repo, branch: str, base: str | None,
               log: list[TrailerCommit] | None) -> list[TrailerCommit]:
    """``log``, or :func:`trailer_log` of ``branch`` after ``base`` when it is None."""
    return trailer_log(repo, branch, base) if log is None else log


def ledger_from_trailers(repo: Repo, branch: str) -> Ledger:
    """Kept runs rebuilt from the ``Result:`` trailers on ``branch`` alone, oldest first,
    numbered by their ``Autoresearch-Run`` trailer where it has one (and it comes after the
    previous number), else one after the previous; a trailer whose status is not ``keep`` is
    no kept run. The primary metric is the first key after ``status`` (as pi-autoresearch
    writes it); a commit whose primary metric is another than the previous one's begins a
    segment of its own, so that two metrics are never compared."""
    segments = [Segment(0, None)]
    last = 0
    for entry in trailer_log(repo, branch):
        result = entry.result
        if result is None or result.get("status", "keep") != "keep":
            continue
        name = next((k for k in result if k != "status"), None)
        value = result.get(name) if name else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        segment = segments[-1]
        if segment.header is not None and segment.header["metricName"] != name:
            segment = Segment(segment.index + 1, None)
            segments.append(segment)
        if segment.header is None:
            segment.header = {"type": "config", "name": f"kept runs on {branch}",
                              "metricName": name, "metricUnit": "", "bestDirection": "lower"}
        number = entry.run if entry.run is not None and entry.run > last else last + 1
        last = number
        data = run_record(number, entry.commit[:7], value,
                          {k: v for k, v in result.items() if k not in ("status", name)},
                          "keep", entry.subject, entry.time * 1000, segment.index)
        segment.runs.append(Run(dict(data), number, segment.index))
    return Ledger(segments, [], [], [])


def bad_trailers(log: list[TrailerCommit]) -> list[str]:
    """Short ids of the commits whose ``Result:`` trailer is not to be trusted."""
    return [c.commit[:7] for c in log if c.result is None]


@dataclass(frozen=True)
class Rewritten:
    """A run whose recorded ``commit`` (as the ledger holds it) is on no branch, and the commit
    of the session branch that carries its ``Autoresearch-Run`` and ``Autoresearch-Session``
    trailers now (full id): the same keep after history was rewritten (a rebase, an amend).
    ``of_run`` is the kept run whose commit it was, when this run is not that keep (a run not
    kept records the commit it started from)."""

    run: int
    recorded: str
    commit: str
    of_run: int | None = None

    def problem(self, branch: str, session_id: str) -> str:
        """The finding, in words."""
        if self.of_run is not None:
            return (f"run {self.run} names commit {self.recorded}, which is on no branch; it "
                    f"is run {self.of_run}'s, now {self.commit[:7]}")
        return (f"run {self.run} is recorded as kept at {self.recorded}, which is on no branch; "
                f"commit {self.commit[:7]} on {branch} carries its trailers ({RUN}: {self.run}, "
                f"{SESSION}: {session_id}): history was rewritten (a rebase or an amend); git "
                "autoresearch doctor --fix updates the ledger")


def rewritten(repo: Repo, book: Ledger, branch: str, session_id: str, base: str | None,
              log: list[TrailerCommit] | None = None) -> list[Rewritten]:
    """The runs of ``book`` whose recorded commit is on no branch (or exists no more) while a
    commit of ``branch`` (after ``base``) has their ``Autoresearch-Run`` and an
    ``Autoresearch-Session`` of ``session_id``: kept runs first found by their own trailers, then
    every other run that recorded one of those old commits (it started from that keep), in run
    order. Two git calls besides the trailer log (none when every kept commit is on the branch
    as recorded)."""
    entries = trailer_log(repo, branch, base) if log is None else log
    now = {c.run: c.commit for c in entries
           if c.run is not None and c.result is not None and c.session == session_id}
    names = {seg.index: (seg.header or {}).get("metricName") for seg in book.segments}
    segment_of = {r.number: r.segment for r in book.runs if r.status == "keep"}
    metrics = {c.run: primary_of(c.result, names.get(segment_of.get(c.run, -1)))
               for c in entries if c.run is not None and c.run in now}
    # A commit whose Result says another metric than the ledger is no keep rewritten, but
    # one made by hand (an agent's, with its own figure): reconcile names it.
    moved = {r.number: str(r.data.get("commit") or "") for r in book.runs
             if r.status == "keep" and r.number in now
             and (r.metric is None or metrics.get(r.number) == r.metric)
             and not now[r.number].startswith(str(r.data.get("commit") or "-"))}
    if not moved:
        return []
    gone = repo.off_branches(list(moved.values()))
    old = {commit: number for number, commit in moved.items() if commit in gone}
    found = []
    for run in book.runs:
        recorded = str(run.data.get("commit") or "")
        if run.status == "keep" and old.get(recorded) == run.number:
            found.append(Rewritten(run.number, recorded, now[run.number]))
        elif recorded in old:
            found.append(Rewritten(run.number, recorded, now[old[recorded]], old[recorded]))
    return found


def primary_of(result: Mapping[str, Any] | None, name: Any = None) -> float | None:
    """The primary metric of a parsed ``Result`` value: metric ``name`` (the segment's
    ``metricName``, when known: a trailer may list its metrics in any order, and one written
    by hand or another tool may measure another), else its first key besides ``status`` (the
    order :func:`result_trailer` and pi-autoresearch write); None when it has no number
    there."""
    if not isinstance(name, str) or not name:
        name = next((k for k in result or {} if k != "status"), None)
    return _figure((result or {}).get(name)) if name is not None else None


@dataclass
class Reconciliation:
    """Each disagreement between the ledger's kept runs and the branch's trailers."""

    problems: list[str]


def reconcile(repo: Repo, book: Ledger, branch: str, base: str | None,
              log: list[TrailerCommit] | None = None) -> Reconciliation:
    """Compare the ledger's kept runs with the branch: a trailer run missing from the ledger, a
    ledger keep whose commit is not on the branch, a metric that differs."""
    trailers = read_trailers(repo, branch, base, log)
    problems = []
    on_branch = {v["commit"][:7] for v in trailers.values()}
    if base:
        on_branch.add(base[:7])
    metric_names = {seg.index: (seg.header or {}).get("metricName") for seg in book.segments}
    # The runs of segments another tool opened (a ledger imported, or pi-autoresearch's, before
    # the session's first header) were kept on another history: not asked of this branch.
    ours = {seg.index for seg in book.segments if "config_hash" in (seg.header or {})}
    kept: dict[int, Run] = {}
    for r in book.runs:  # a number another tool wrote too: ours first
        if r.status == "keep" and r.segment in ours \
                and (r.number not in kept or r.ours and not kept[r.number].ours):
            kept[r.number] = r
    for number, info in sorted(trailers.items()):
        run = kept.get(number)
        if run is None:
            problems.append(f"commit {info['commit'][:7]} on {branch} records run {number} as "
                            "kept, but the ledger has no such keep (git autoresearch doctor --fix "
                            "restores its line when a keep of this tool made it)")
            continue
        value = primary_of(info["result"], metric_names.get(run.segment))
        if value is not None and run.metric is not None and value != run.metric:
            problems.append(f"run {number}: the trailer says {json_number(value)}, the ledger "
                            f"{json_number(run.metric)}")
    unsure = {number: str(run.data.get("commit", ""))[:7] for number, run in kept.items()
              if number not in trailers and str(run.data.get("commit", ""))[:7] not in on_branch}
    if unsure:
        # A keep that committed nothing (or a baseline) sits on a commit without a trailer:
        # ask the branch's history itself, once.
        listed = repo.rev_list(f"{base}..{branch}" if base else branch)
        on_branch.update(oid[:7] for oid in listed)
    commits: list[list[str]] | None = None  # (the branch's, with their trees: asked once)
    for number, commit in sorted(unsure.items()):
        if not commit:
            problems.append(f"run {number} is recorded as kept with no commit (a line written "
                            "by hand or by another tool?)")
        elif commit not in on_branch:
            if commits is None:
                commits = repo.log_fields(f"{base}..{branch}" if base else branch,
                                          ["%H", "%T", "%P"]) or []
            problems.append(f"run {number} is recorded as kept at {commit}, which is not on "
                            f"{branch}" + _way_back(repo, commit, branch, commits))
    return Reconciliation(problems)


def _way_back(repo: Repo, commit: str, branch: str, commits: list[list[str]]) -> str:
    """The way back for a keep ``commit`` that is not on ``branch`` (``commits``: the
    branch's since the session's base, each ``[id, tree, parents]``): when a commit there
    holds the same change (its tree, on its parent) without its trailers, reworded by hand
    (``git commit --amend -m``, a rebase's reword), which drops them, and finalize with them;
    when the branch was moved back past it (``git reset``), a fast-forward. Empty
    otherwise."""
    was = repo.log_fields(f"{commit}^!", ["%T", "%P"])
    if not was:
        return ""
    same = next((oid for oid, tree, parents in commits if [tree, parents] == was[0]), None)
    if same is None:
        return (f": the branch was moved back past it by hand (git reset?); git merge "
                f"--ff-only {commit} brings the keep back") \
            if repo.is_ancestor(branch, commit) else ""
    return (f": its commit {same[:7]} there holds the same change without its trailers "
            f"(reworded by hand?); git reset --soft {commit} puts the kept commit back, or "
            f"reword it keeping the trailer lines git show -s --format=%(trailers) {commit} "
            "prints (git autoresearch doctor --fix then records it)")

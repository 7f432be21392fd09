"""The start record and the files a start writes: ``start.json`` in the scratch folder says
what a ``start`` is about to create before anything changes, so that a start killed anywhere
is finished later (by ``resume``, or ``start --new-segment``), each step skipped when done."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from .. import ledger as ledger_mod
from ..git import Repo, said
from ..history.experiment import save_snapshot, take_snapshot
from ..history.refs import session_branch
from ..ledger.records import ConfigHeader, config_header
from ..ledger.repairs import has_our_header
from ..runtime.atomic import write_atomic
from ..runtime.errors import Refused, UsageError
from ..runtime.faults import checkpoint
from ..session.command_files import command_files
from ..session.config import Config, file_hash, parse_toml, write_config
from ..session.layout import Layout, exclude_auto
from ..session.session import Session

# The first notes of ``.auto/prompt.md``, which the agent keeps (gitautoresearch-files(5)).
PROMPT_HEADER = """# Autoresearch session: {goal}

Metric: {metric_name} ({direction} is better{unit})
Command: `{command}`
Scope: {scope}
Readonly: {readonly}
"""
ONE_IDEA = "- One idea per run; describe it in one sentence with `-d`.\n"
PROMPT_TEMPLATE = PROMPT_HEADER + """
## Rules
- Change only files in scope; never the readonly files (the measure, checks or scoring
  scripts, the data): a change there is undone before measuring and recorded.
{one_idea}{pi_rule}
## Learnings

## Dead ends (do not retry)

## Promising directions
"""


def goal_slug(goal: str) -> str:
    """The goal in kebab case, at most 40 characters cut between words (``session`` when no
    letter or digit is left): ``sort-speed``. As pi-autoresearch names a session's branch
    ``autoresearch/<goal>-<date>`` (its autoresearch-create skill), this is the goal it gives
    its finalize.sh, which makes ``autoresearch/<goal>/<NN>-<slug>``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", goal).strip("-").lower()
    if len(slug) > 40:
        cut = slug[:41]
        slug = cut[:cut.rfind("-")] if "-" in cut else slug[:40]
    return slug.strip("-") or "session"


def segment_header(repo: Repo, cfg: Config, data: bytes, head: str,
                   no_baseline: bool) -> ConfigHeader:
    """The ledger line that opens a segment of ``cfg`` (``data``: the bytes of its
    ``config.toml``) from commit ``head``, with the digests of the files its commands name
    that git does not track (:func:`history.checkouts.input_digests`)."""
    from ..history.checkouts import input_digests

    return config_header(name=cfg.goal, metric_name=cfg.metric_name,
                         metric_unit=cfg.metric_unit, direction=cfg.direction,
                         config_hash=file_hash(data), session_id=cfg.session_id,
                         config=cfg.to_dict(), base_commit=head, no_baseline=no_baseline,
                         inputs=input_digests(repo, cfg))


def write_prompt(repo: Repo, layout: Layout, cfg: Config, head: str,
                 scripts: list[str] | None) -> None:
    """Write ``.auto/prompt.md`` unless it exists (the agent's notes are never replaced: only
    its header, the lines from ``# Autoresearch session:`` to ``Readonly:``, is brought up to
    date with ``cfg``, for a new segment, and the rule about pi's finalize.sh added after the
    first rule or dropped as the goal now asks); ``scripts``: the committed files the commands
    name, found here when None."""
    if scripts is None:
        scripts = command_files(repo, cfg, head)
    # Only a session id that is the goal's slug, as pi-autoresearch names a session, meets
    # pi's finalize.sh given it as its goal (its skill reads this file).
    rule = ("- Finishing with pi-autoresearch's finalize.sh: give it a goal other than "
            f"`{cfg.session_id}`\n  (`{cfg.session_id}-pr`): git cannot make its branches "
            "`autoresearch/<goal>/...` beside this\n  session's branch "
            f"`autoresearch/{cfg.session_id}`.\n")
    pi_rule = rule if cfg.session_id == goal_slug(cfg.goal) else ""
    fields = {"goal": cfg.goal, "session_id": cfg.session_id, "pi_rule": pi_rule,
              "one_idea": ONE_IDEA,
              "metric_name": cfg.metric_name, "direction": cfg.direction,
              "unit": f", in {cfg.metric_unit}" if cfg.metric_unit else "",
              "command": cfg.command,
              "scope": ", ".join(cfg.scope) or "any path that is neither protected nor readonly",
              "readonly": ", ".join(dict.fromkeys([*scripts, *cfg.readonly])) or "none"}
    try:
        old = layout.prompt.read_text(encoding="utf-8")
    except FileNotFoundError:
        write_atomic(layout.prompt, PROMPT_TEMPLATE.format(**fields).encode())
        return
    except (OSError, UnicodeDecodeError):
        return  # not ours to mend
    lines = old.splitlines(keepends=True)
    ends = [i for i, line in enumerate(lines[:12]) if line.startswith("Readonly: ")]
    if not lines or not lines[0].startswith("# Autoresearch session: ") or not ends:
        return  # the agent rewrote the header: leave it
    rest = "".join(lines[ends[0] + 1:])
    if pi_rule and rule not in rest:
        rest = rest.replace(ONE_IDEA, ONE_IDEA + rule, 1)
    elif not pi_rule:
        rest = rest.replace(rule, "", 1)
    new = PROMPT_HEADER.format(**fields) + rest
    if new != old:
        write_atomic(layout.prompt, new.encode())


@dataclass(frozen=True)
class StartIntent:
    """The start record, ``start.json`` in the scratch folder: what a ``start`` is about to
    create, written before it changes anything, so that a start killed anywhere can be
    finished (:func:`finish_start`). ``config`` holds the configuration's keys as
    ``config.toml`` will (:meth:`Config.to_dict`); ``head`` is the commit the session starts
    from; ``untracked`` the untracked paths ``--force`` accepted."""

    session_id: str
    head: str
    config: dict[str, Any]
    no_baseline: bool
    untracked: tuple[str, ...] = ()

    @property
    def config_session_id(self) -> Any:
        """The session id the configuration names (what every message about it shows)."""
        return self.config.get("session_id")

    def to_json(self) -> dict[str, Any]:
        """The record as ``start.json`` holds it (the keys of every version, in its order)."""
        return {"session_id": self.session_id, "head": self.head, "config": self.config,
                "no_baseline": self.no_baseline, "untracked": list(self.untracked)}

    @classmethod
    def from_json(cls, data: Any) -> StartIntent | None:
        """The record from its parsed JSON, or None when it is not one (no ``config`` object
        or no ``head``): such a file was torn before anything changed. ``no_baseline`` and
        ``untracked`` may be absent."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict) \
                or not isinstance(data.get("head"), str):
            return None
        return cls(session_id=str(data.get("session_id") or ""), head=data["head"],
                   config=data["config"], no_baseline=bool(data.get("no_baseline")),
                   untracked=tuple(str(p) for p in data.get("untracked") or ()))


def _write_start_intent(layout: Layout, intent: StartIntent) -> None:
    """Write the start record before anything changes (:class:`StartIntent`)."""
    layout.start_intent.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(layout.start_intent, json.dumps(intent.to_json(), allow_nan=False).encode())


def read_start_intent(layout: Layout) -> StartIntent | None:
    """The record of a ``start`` that did not finish, or None (an unreadable one is None too:
    it was torn before anything changed, since it is written before the branch)."""
    try:
        data = json.loads(layout.start_intent.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return StartIntent.from_json(data)


def create_session(repo: Repo, layout: Layout, intent: StartIntent, scripts: list[str]
                   ) -> tuple[Session, list[str]]:
    """Write the start record ``intent``, then make the session it describes
    (:func:`_make_session`); returns the open session and warnings. When that fails before the
    branch exists, the record goes too: nothing was made."""
    _write_start_intent(layout, intent)
    checkpoint("start:after-intent")
    try:
        made = _make_session(repo, layout, intent, scripts)
    except Exception:
        if repo.resolve(f"refs/heads/{session_branch(intent.session_id)}") is None:
            layout.start_intent.unlink(missing_ok=True)  # nothing was made
        raise
    checkpoint("start:before-baseline")
    return made


def _make_session(repo: Repo, layout: Layout, intent: StartIntent,
                    scripts: list[str] | None = None) -> tuple[Session, list[str]]:
    """Create the session that ``intent`` describes: the branch checked out, ``.auto/``
    excluded, the configuration, the ledger header, the notes, the snapshot of untracked files
    and the state ref; then clear the intent. Each step is skipped when already done, so a
    start killed anywhere is finished by running this again; returns the session and the
    warnings of its state-ref mirror. ``scripts``: the committed files
    the commands name, when known. Raises :class:`Refused` when HEAD moved since (nothing is
    changed then)."""
    cfg = Config.from_mapping(intent.config, source="the interrupted start")
    _check_out_new_branch(repo, cfg.session_id, intent.head)
    checkpoint("start:after-branch")
    exclude_auto(repo)
    layout.auto.mkdir(exist_ok=True)
    data = layout.config.read_bytes() if layout.config_exists() else \
        write_config(layout.config, cfg)
    checkpoint("start:after-config")
    # Ours, once: a ledger imported or written by pi-autoresearch has a header of its own,
    # and its runs stay before the session's first segment.
    if not has_our_header(ledger_mod.read_bytes(layout.ledger)):
        header = segment_header(repo, cfg, data, intent.head, intent.no_baseline)
        ledger_mod.append(layout.ledger, [header])
    checkpoint("start:after-ledger")
    write_prompt(repo, layout, cfg, intent.head, scripts)
    layout.pending.unlink(missing_ok=True)
    # Git repositories inside the work tree (``dir/``, which git lists apart) are the user's.
    nested = [p for p in repo.untracked() if p.endswith("/")]
    save_snapshot(layout.untracked, take_snapshot(repo, [*intent.untracked, *nested]))
    session = Session(repo, cfg, data, ledger_mod.read(layout.ledger))
    warnings = session.mirror_state("session started")
    layout.start_intent.unlink()
    return session, warnings


def _check_out_new_branch(repo: Repo, session_id: str, head: str) -> None:
    """Create the session branch at ``head`` and check it out (or only check it out, when an
    interrupted start made it already). Raises :class:`Refused` when HEAD moved since, or git
    cannot."""
    branch = session_branch(session_id)
    if repo.current_branch() == branch:
        return
    at = repo.resolve(f"refs/heads/{branch}")
    if repo.head() != head or at not in (None, head):
        raise Refused(f"HEAD moved since the start of session {session_id} was "
                      f"interrupted; check out {branch} (or the commit {head[:7]}) and run "
                      "git autoresearch resume again")
    switched = repo.switch(branch, create=at is None)
    if switched.returncode != 0:
        lines = said(switched.stderr)
        raise Refused(f"git could not {'create' if at is None else 'check out'} the branch "
                      f"{branch}: " + (lines[-1].strip() if lines else
                                       f"exit {switched.returncode}"))


def finish_start(repo: Repo, layout: Layout, *, baseline_hint: bool = True) -> str | None:
    """Finish a ``start`` that was killed before it had created the session; returns what was
    done (with ``baseline_hint``, how to measure a baseline it did not), or None when there was
    nothing to finish. An intent that a finished session
    contradicts (``config.toml`` of another session) is set aside. Raises :class:`Refused`
    (:func:`_make_session`)."""
    intent = read_start_intent(layout)
    if intent is None:
        layout.start_intent.unlink(missing_ok=True)
        return None
    sid = intent.config_session_id
    if layout.config_exists():
        try:
            current = parse_toml(layout.read_config_bytes(), source=str(layout.config))
        except UsageError:
            current = {}
        if current.get("session_id") != sid:
            os.replace(layout.start_intent,
                       layout.start_intent.with_name(f"start.abandoned.{time.time_ns()}.json"))
            return f"set aside the record of an interrupted start of session {sid}"
    _make_session(repo, layout, intent)
    how = "" if intent.no_baseline or not baseline_hint else (
        "; its baseline was not measured: git autoresearch start --new-segment measures it")
    return f"finished the interrupted start of session {sid}{how}"

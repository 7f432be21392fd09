"""Man pages generated from the CLI, so that ``git autoresearch --help`` (which git turns into
``git help autoresearch``, that is ``man git-autoresearch``) and ``git help autoresearch-keep``
show what the commands really accept.

``python -m git_autoresearch.commands.manpage man/man1`` rewrites the pages; a test fails when the
pages in the repository no longer match the CLI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import __version__
from . import COMMAND_MODULES, cli
from . import command as load_command

EXIT_STATUS = [  # the README's table of exit codes
    ("0", "Done. For the commands that record (run, keep, discard, crash), a run that ended in "
          "discard, crash or checks_failed is done: it was recorded."),
    ("1", "Unexpected internal error (GIT_AUTORESEARCH_DEBUG=1 shows the traceback)."),
    ("2", "Usage error: a bad option or value, an unknown run number, an input over its "
          "limit (description, asi, nesting, idea), a --scope/--protected/--readonly path "
          "outside the repository or matching nothing (without --allow-missing)."),
    ("3", "Refused: not a git repository, no session, an edited configuration, a merge or "
          "rebase in progress, HEAD not on the session branch, the lock held too long by "
          "another command, a lock file of git's (index.lock, HEAD.lock, packed-refs.lock, the "
          "session branch's, or one on the session's own refs) in the way, a full or read-only "
          "disk (naming the file or the disk, and the run's state), a submodule with "
          "uncommitted changes or lacking the commit HEAD records, a start that was "
          "interrupted (resume finishes it), a dirty tree at start, a --session-id that an "
          "earlier session has (refs under refs/autoresearch/<id>/), a baseline that failed, "
          "doctor finding problems it did not fix, a missing optional dependency, a ledger "
          "that lost the line of a kept run (doctor --fix restores it), a file git will not "
          "stage (a clean filter or line-ending rule refused it), a commit hook that rewrote "
          "what a keep commits, a partial clone whose remote cannot send an object a revert "
          "needs, a session folder that is a symbolic link, GIT_DIR or GIT_WORK_TREE naming "
          "another repository, a folder where the session's lock file goes."),
    ("4", "The loop should stop: .auto/STOP found, or a stop rule met: max_experiments "
          "reached, max_duration spent, target_metric reached, max_runs_without_keep or "
          "max_failures_in_a_row runs in a row."),
    ("129, 130, 143", "Hung up (SIGHUP: the terminal or ssh session closed), interrupted "
                      "(SIGINT, Ctrl-C) or terminated (SIGTERM): 128 + the signal's number. The "
                      "experiment's and hooks' processes are ended; git is never killed half-way; "
                      "a run being recorded when the signal came is recorded first."),
]


def _escape(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _paragraphs(text: str) -> str:
    out = []
    for para in click.unstyle(text).strip().split("\n\n"):
        out.append(_escape(" ".join(para.split())))
    return "\n.PP\n".join(out)


def _option_record(option: click.Option) -> tuple[str, str]:
    """``(term, help)`` for an option, built from its attributes alone so that the page does
    not depend on how a click version formats help."""
    names = sorted(option.opts, key=lambda name: (name.startswith("--"), name))
    term = ", ".join([*names, *option.secondary_opts])
    if not option.is_flag:
        if option.metavar:
            metavar = option.metavar
        elif isinstance(option.type, click.Choice):
            metavar = "[" + "|".join(str(c) for c in option.type.choices) + "]"
        else:
            metavar = option.type.name.upper()
        term += f" {metavar}"
    text = option.help or ""
    if option.required:
        text += " (required)"
    return term, text


def render(command: click.Command, name: str, invocation: str) -> str:
    """The roff source of one page: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (and COMMANDS for the
    group), EXIT STATUS, SEE ALSO. Deterministic: no date."""
    ctx = command.make_context(invocation, [], resilient_parsing=True)
    short = command.get_short_help_str(limit=200).rstrip(".")
    lines = [
        f'.TH "{name.upper()}" "1" "" "git-autoresearch {__version__}" "Git Manual"',
        ".SH NAME",
        f"{_escape(name)} \\- {_escape(short)}",
        ".SH SYNOPSIS",
        f".B {_escape(invocation)}",
        _escape(" ".join(command.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
        _paragraphs(command.help or ""),
    ]
    records = [_option_record(p) for p in command.get_params(ctx)
               if isinstance(p, click.Option) and not p.hidden]
    if records:
        lines.append(".SH OPTIONS")
        for term, help_text in records:
            lines += [".TP", f"\\fB{_escape(term)}\\fR", _escape(" ".join(help_text.split()))]
    if isinstance(command, click.Group):
        lines.append(".SH COMMANDS")
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            assert sub is not None
            lines += [".TP", f"\\fB{_escape(invocation)} {_escape(sub_name)}\\fR",
                      _escape(sub.get_short_help_str(limit=200)) + "\\&"]
            if invocation == "git autoresearch":
                lines.append(f"See \\fBgit\\-autoresearch\\-{_escape(sub_name)}\\fR(1).")
    lines += _json_output(invocation)
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", _escape(meaning)]
    lines += [".SH SEE ALSO", "\\fBgit\\-autoresearch\\fR(1), \\fBgit\\fR(1)", ""]
    return "\n".join(lines)


def _field_lines(fields: list[tuple[str, str, str]]) -> list[str]:
    out: list[str] = []
    for field_name, type_text, text in fields:
        out += [".TP", f"\\fB{_escape(field_name)}\\fR ({_escape(type_text)})",
                _escape(" ".join(text.split()))]
    return out


def _json_output(invocation: str) -> list[str]:
    """JSON OUTPUT: the fields of the document each command of the page prints with --json,
    from its schema (:func:`runtime.schemas.fields`); on the hooks page, what a hook reads on stdin;
    on the schema page, the definitions the documents share."""
    from ..runtime.schemas import COMMAND_DOCUMENTS, fields, load, schema_id, shared_fields

    prefix = invocation.removeprefix("git autoresearch").strip()
    kinds: dict[str, list[str]] = {}
    for name, kind in COMMAND_DOCUMENTS.items():
        if prefix and (name == prefix or name.startswith(prefix + " ")):
            kinds.setdefault(kind, []).append(name)
    if prefix == "hooks":
        kinds.update({"hook-before": [], "hook-after": []})
    if not kinds:
        return []
    out = [".SH JSON OUTPUT", "A type named after a shared definition (\\fBdecision\\fR, "
           "\\fBchecks\\fR, \\fBrun_record\\fR, ...) is described in "
           "\\fBgit\\-autoresearch\\-schema\\fR(1) and by \\fBgit autoresearch schema "
           "common\\fR."]
    for kind, names in kinds.items():
        who = " and ".join(f"\\fBgit autoresearch {_escape(n)} \\-\\-json\\fR"
                           for n in names) + " prints" if names else \
            f"A {kind.removeprefix('hook-')} hook reads, as one line on its stdin,"
        out += [".PP", f"{who} one JSON document, \\fB{_escape(schema_id(kind))}\\fR "
                f"(\\fBgit autoresearch schema {_escape(kind)}\\fR prints its JSON Schema). "
                + _escape(" ".join(str(load(kind).get("description", "")).split())), ".PP",
                "Its fields:"]
        out += _field_lines(fields(kind))
    if prefix == "schema":
        common = load("common")["$defs"]
        for name in ("decision", "checks", "run_record"):
            out += [".PP", f"The shared definition \\fB{name}\\fR: "
                    + _escape(" ".join(str(common[name].get("description", "")).split())), ".PP",
                    "Its fields:"]
            out += _field_lines(shared_fields(name))
    elif any(kinds.values()):  # commands print the error document when they fail; hooks not
        out += [".PP", "A command that fails prints instead the error document, "
                "\\fBgit\\-autoresearch:error/1\\fR: \\fBerror\\fR (the message, one line), "
                "\\fBexit_code\\fR (see EXIT STATUS)."]
    return out


def pages() -> dict[str, str]:
    """File name -> page source, for the group and every subcommand."""
    out = {"git-autoresearch.1": render(cli, "git-autoresearch", "git autoresearch")}
    for name in COMMAND_MODULES:
        out[f"git-autoresearch-{name}.1"] = render(load_command(name), f"git-autoresearch-{name}",
                                                   f"git autoresearch {name}")
    return out


def write_pages(folder: Path) -> list[Path]:
    """Write every page into ``folder``, removing stale ``git-autoresearch*.1`` files."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = pages()
    for stale in folder.glob("git-autoresearch*.1"):
        if stale.name not in wanted:
            stale.unlink()
    written = []
    for filename, text in wanted.items():
        path = folder / filename
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_pages(Path(sys.argv[1] if len(sys.argv) > 1 else "man/man1")):
        print(written_path)

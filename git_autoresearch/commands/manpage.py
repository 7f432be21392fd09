"""The manual: one reStructuredText source a page in ``man/``, rendered to roff in
``man/man1``, ``man/man5`` and ``man/man7``, which the package installs where ``man`` and
``git help`` find them.

A page has two kinds of text. What the code knows is generated into it, between the comment
lines ``.. begin generated: PART`` and ``.. end generated: PART``: the title and the synopsis
(``head``), the options and subcommands (``options``), the fields of the JSON documents from
their schemas (``json``), the exit codes from :data:`runtime.errors.EXIT_CODES` (``exit``).
Everything else (the description, the examples, the files, the concepts) is written by hand
and edited in place. ``python -m git_autoresearch.commands.manpage`` rewrites the generated
parts and renders every page (with ``--check``: lists what is stale, changes nothing); a test
fails when a page no longer matches the code.

Pages: ``git-autoresearch(1)`` (``git autoresearch --help``), ``git-autoresearch-<cmd>(1)`` for
each command (``git help autoresearch-<cmd>``), and the concept pages ``gitautoresearch-<topic>``
in sections 5 and 7, named as git names its own (``gitattributes(5)``) because ``git help
autoresearch-<topic>`` opens ``gitautoresearch-<topic>``. Rendering needs docutils (the
``test`` extra); the rest of this module does not.
"""

from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import click

from .. import __version__
from . import COMMAND_MODULES, cli
from . import command as load_command

ROOT = Path(__file__).resolve().parent.parent.parent
MAN = ROOT / "man"

# The concept pages: topic -> (section, the line under the title).
CONCEPTS: dict[str, tuple[int, str]] = {
    "guide": (7, "a first night: from a benchmark to a reviewed branch"),
    "config": (5, "the configuration file, .auto/config.toml"),
    "decisions": (7, "how a run is measured and decided"),
    "guarantees": (7, "what a revert touches, and what is guaranteed when something dies"),
    "files": (5, "the ledger, the trailers, the refs and the session files"),
    "hooks": (5, "the before and after hooks"),
    "workers": (7, "several agents at once, on one machine or through a remote"),
}

_BEGIN = re.compile(r"^\.\. begin generated: (\w+)\n", re.M)


@dataclass(frozen=True)
class Page:
    """One page: ``name`` (``git-autoresearch-log``), its manual ``section``, and the command
    it documents (``None`` for the group's page and the concept pages)."""

    name: str
    section: int
    command: str | None = None

    @property
    def source(self) -> Path:
        return MAN / f"{self.name}.rst"

    @property
    def output(self) -> Path:
        return MAN / f"man{self.section}" / f"{self.name}.{self.section}"


def all_pages() -> list[Page]:
    """Every page of the manual: the group's, each command's, then the concepts'."""
    out = [Page("git-autoresearch", 1)]
    out += [Page(f"git-autoresearch-{name}", 1, name) for name in COMMAND_MODULES]
    out += [Page(f"gitautoresearch-{topic}", section) for topic, (section, _) in
            CONCEPTS.items()]
    return out


# --- reStructuredText from the code ------------------------------------------------------------

def rst_text(text: str) -> str:
    """``text`` (one paragraph of plain text, as click's help and the schemas hold it) as
    reStructuredText that reads back as the same characters: markup characters escaped."""
    text = " ".join(click.unstyle(text).split())
    # `code` (as the schemas write it) becomes a literal; the text between is escaped
    pieces = re.split(r"`([^`]+)`", text)
    return "".join(_literal(piece, pieces, i) if i % 2 else _escaped(piece, i == 0)
                   for i, piece in enumerate(pieces))


def _literal(piece: str, pieces: list[str], i: int) -> str:
    after = pieces[i + 1] if i + 1 < len(pieces) else ""
    glue = "\\ " if after[:1].isalnum() else ""  # a literal must end before a word goes on
    before = "\\ " if pieces[i - 1][-1:].isalnum() else ""
    return f"{before}``{piece}``{glue}"


def _escaped(text: str, first: bool) -> str:
    text = text.replace("\\", "\\\\")
    text = re.sub(r"([*`|])", r"\\\1", text)
    text = re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", text)  # name_ would be a reference
    if first and re.match(r"([-+#]|\d+[.)]|\(\d+\))( |$)", text):
        text = "\\" + text  # not a list item
    return text


def _wrap(text: str, indent: str = "", hanging: str = "") -> list[str]:
    """``text`` as lines of at most 100 columns, each after ``indent`` (and the lines after the
    first after ``hanging`` too: a list item's)."""
    return textwrap.wrap(text, 100, initial_indent=indent, subsequent_indent=indent + hanging,
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _title(name: str, line: str, section: int) -> list[str]:
    bar, under = "=" * len(name), "-" * len(line)
    return [bar, name, bar, "", under, line, under, "",
            f":Manual section: {section}", ":Manual group: Git Manual",
            f":Version: git-autoresearch {__version__}", ""]


def _usage(command: click.Command, invocation: str) -> str:
    ctx = command.make_context(invocation, [], resilient_parsing=True)
    pieces = " ".join(command.collect_usage_pieces(ctx))
    return f"| **{invocation}** {rst_text(pieces)}"


def _option_term(option: click.Option) -> str:
    names = sorted(option.opts, key=lambda name: (name.startswith("--"), name))
    term = ", ".join(f"**{n}**" for n in [*names, *option.secondary_opts])
    if not option.is_flag:
        if option.metavar:
            metavar = option.metavar
        elif isinstance(option.type, click.Choice):
            metavar = "[" + "|".join(str(c) for c in option.type.choices) + "]"
        else:
            metavar = option.type.name.upper()
        term += f" *{rst_text(metavar)}*"
    return term


def _options(command: click.Command, invocation: str, indent: str = "") -> list[str]:
    ctx = command.make_context(invocation, [], resilient_parsing=True)
    out: list[str] = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden or "--help" in param.opts:
            continue
        text = param.help or ""
        if param.required:
            text += " (required)"
        out += [indent + _option_term(param), *_wrap(rst_text(text), indent + "    "), ""]
    return out


def _head(page: Page) -> list[str]:
    if page.command is None and page.name != "git-autoresearch":
        section, line = CONCEPTS[page.name.removeprefix("gitautoresearch-")]
        return _title(page.name, line, section)
    command = cli if page.command is None else load_command(page.command)
    invocation = "git autoresearch" + (f" {page.command}" if page.command else "")
    line = command.short_help or "git plumbing for autoresearch loops"
    out = _title(page.name, line, 1) + ["SYNOPSIS", "========", ""]
    if isinstance(command, click.Group) and page.command:
        ctx = command.make_context(invocation, [], resilient_parsing=True)
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            assert sub is not None
            out.append(_usage(sub, f"{invocation} {sub_name}"))
    else:
        out.append(_usage(command, invocation))
    out += ["", "DESCRIPTION", "===========", ""]
    for paragraph in click.unstyle(command.help or "").split("\n\n"):
        if paragraph.strip():
            out += [*_wrap(rst_text(paragraph)), ""]
    return out


def _options_part(page: Page) -> list[str]:
    if page.command is None:
        if page.name != "git-autoresearch":
            return []
        out = ["COMMANDS", "========", ""]
        ctx = cli.make_context("git autoresearch", [], resilient_parsing=True)
        for sub_name in cli.list_commands(ctx):
            sub = cli.get_command(ctx, sub_name)
            assert sub is not None
            out += [f"**git-autoresearch-{sub_name}**\\ (1)",
                    *_wrap(rst_text(sub.short_help or ""), "    "), ""]
        out += ["CONCEPTS", "========", "", "Open each with **git help autoresearch-**\\ *TOPIC*.",
                ""]
        for topic, (section, line) in CONCEPTS.items():
            out += [f"**gitautoresearch-{topic}**\\ ({section})", *_wrap(rst_text(line), "    "),
                    ""]
        return out
    command = load_command(page.command)
    invocation = f"git autoresearch {page.command}"
    if not isinstance(command, click.Group):
        options = _options(command, invocation)
        return ["OPTIONS", "=======", "", *options] if options else []
    out = ["COMMANDS", "========", ""]
    ctx = command.make_context(invocation, [], resilient_parsing=True)
    for sub_name in command.list_commands(ctx):
        sub = command.get_command(ctx, sub_name)
        assert sub is not None
        out += [f"**{invocation} {sub_name}**",
                *_wrap(rst_text(sub.help or sub.short_help or ""), "    "), ""]
        out += _options(sub, f"{invocation} {sub_name}", indent="    ")
    return out


def _fields(fields: list[tuple[str, str, str]]) -> list[str]:
    out: list[str] = []
    for field_name, type_text, text in fields:
        out += [f"**{rst_text(field_name)}** (*{rst_text(type_text)}*)",
                *_wrap(rst_text(text), "    "), ""]
    return out


def _json_part(page: Page) -> list[str]:
    """JSON OUTPUT: the fields of the document each command of the page prints with --json,
    from its schema (:func:`runtime.schemas.fields`); on the hooks page, what a hook reads on
    stdin; on the schema page, the definitions the documents share."""
    from ..runtime.schemas import (
        COMMAND_DOCUMENTS,
        STREAMED,
        fields,
        load,
        schema_id,
        shared_fields,
    )

    prefix = page.command or ""
    if not prefix and page.name != "gitautoresearch-hooks":
        return []
    kinds: dict[str, list[str]] = {}
    for name, kind in COMMAND_DOCUMENTS.items():
        if prefix and (name == prefix or name.startswith(prefix + " ")):
            kinds.setdefault(kind, []).append(name)
    if page.name == "gitautoresearch-hooks":
        kinds = {"hook-before": [], "hook-after": []}
    if not kinds:
        return []
    out = ["JSON OUTPUT", "===========", "",
           *_wrap("A type named after a shared definition (**decision**, **checks**, "
                  "**run_record**, ...) is described in **git-autoresearch-schema**\\ (1) and by "
                  "**git autoresearch schema common**."), ""]
    for kind, names in kinds.items():
        if names:
            who = " and ".join(f"**git autoresearch {rst_text(n)} --json**" for n in names)
            who += " print" if len(names) > 1 else " prints"
        else:
            stage = kind.removeprefix("hook-")
            article = "An" if stage[0] in "aeiou" else "A"
            who = f"{article} {stage} hook reads, as one line on its stdin,"
        description = rst_text(str(load(kind).get("description", "")))
        what = ("a JSON document on one line for each candidate it answers, as it goes,"
                if kind in STREAMED else "one JSON document,")
        out += [*_wrap(f"{who} {what} **{rst_text(schema_id(kind))}** (**git "
                       f"autoresearch schema {kind}** prints its JSON Schema). {description}"),
                "", "Its fields:", "", *_fields(fields(kind))]
    if prefix == "schema":
        common = load("common")["$defs"]
        for name in ("decision", "checks", "run_record"):
            description = rst_text(str(common[name].get("description", "")))
            out += [*_wrap(f"The shared definition **{name}**: {description}"), "",
                    "Its fields:", "", *_fields(shared_fields(name))]
    elif prefix:  # commands print the error document when they fail; hooks do not
        out += [*_wrap(("When it fails or is stopped by a signal, it prints last, on one line "
                        "too, " if set(kinds) <= STREAMED else
                        "A command that fails prints instead ") + "the error document, "
                       "**git-autoresearch:error/1**: **error** (the message, one line), "
                       "**exit_code** (see EXIT STATUS)."), ""]
    return out


def _exit_part(page: Page) -> list[str]:
    from ..runtime.errors import EXIT_CODES

    if page.command is None and page.name != "git-autoresearch":
        return []
    out = ["EXIT STATUS", "===========", ""]
    for code, meaning, cases in EXIT_CODES:
        out += [f"**{code}**", *_wrap(rst_text(meaning), "    "), ""]
        if cases and page.command is None:
            for case in cases:
                out += _wrap("- " + rst_text(case), "    ", "  ")
            out.append("")
    if page.command is not None:
        out += ["**git-autoresearch**\\ (1) lists the cases each code covers.", ""]
    return out


PARTS = {"head": _head, "options": _options_part, "json": _json_part, "exit": _exit_part}


def generated(page: Page, part: str) -> str:
    """The text between the markers of ``part`` on ``page`` (empty when the page has none)."""
    lines = PARTS[part](page)
    return "\n".join(["", *lines]) if lines else ""


def source(page: Page, text: str | None = None) -> str:
    """The page's source with every generated part made anew from the code. ``text`` is the
    source as it stands (read from the file when not given; a new page gets a skeleton)."""
    if text is None:
        text = page.source.read_text(encoding="utf-8") if page.source.exists() \
            else skeleton(page)
    out, pos = [], 0
    for begin in _BEGIN.finditer(text):
        part = begin.group(1)
        end_marker = f".. end generated: {part}\n"
        end = text.find(end_marker, begin.end())
        if part not in PARTS or end < 0:
            raise click.ClickException(f"{page.source}: a generated part {part!r} without its "
                                       "end marker, or of no known kind")
        made = generated(page, part)
        out += [text[pos:begin.end()], made, "\n" if made else "", end_marker]
        pos = end + len(end_marker)
    out.append(text[pos:])
    return "".join(out)


def skeleton(page: Page) -> str:
    """The source of a page that does not exist yet: every part, and a description to write."""
    parts = [".. begin generated: head", ".. end generated: head", ""]
    for part in ("options", "json", "exit") if page.section == 1 else ():
        parts += [f".. begin generated: {part}", f".. end generated: {part}", ""]
    parts += ["SEE ALSO", "========", "", "**git-autoresearch**\\ (1)", ""]
    return NOTICE + "\n".join(parts)


NOTICE = (".. The parts between \"begin generated\" and \"end generated\" come from the code:\n"
          "   python -m git_autoresearch.commands.manpage writes them. Edit the rest.\n\n")


def render(rst: str, name: str) -> str:
    """The roff of a page from its source (docutils' manpage writer). A warning of docutils
    (a broken markup) is an error naming the page."""
    try:
        from docutils.core import publish_string
        from docutils.utils import SystemMessage
        from docutils.writers import manpage
    except ImportError as exc:  # pragma: no cover: the test extra has it
        raise click.ClickException("rendering the manual needs docutils: "
                                   "pip install -e '.[test]'") from exc
    try:
        out = publish_string(rst, source_path=name, writer=manpage.Writer(), settings_overrides={
            "report_level": 2, "halt_level": 2, "input_encoding": "utf-8",
            "output_encoding": "utf-8", "traceback": True})
    except SystemMessage as exc:
        raise click.ClickException(f"{name}: {exc}") from exc
    roff = out.decode("utf-8") if isinstance(out, bytes) else str(out)
    # as git's own pages: no hyphenation (a page name or a ref split at a line's end reads as
    # another word) and lines left-aligned
    roff = re.sub(r"^(\.TH .*\n)", r"\1.nh\n.ad l\n", roff, count=1, flags=re.M)
    return roff.replace("\n.SH Name\n", "\n.SH NAME\n", 1)  # as every other heading


def expected(pages: list[Page] | None = None) -> dict[Path, str]:
    """Every file of the manual as the code and the hand-written text make it: each page's
    source and its roff."""
    out: dict[Path, str] = {}
    for page in pages or all_pages():
        text = source(page)
        out[page.source] = text
        out[page.output] = render(text, page.source.name)
    return out


def stale(pages: list[Page] | None = None) -> list[Path]:
    """The files of the manual that differ from :func:`expected`, and roff pages no page
    makes."""
    wanted = expected(pages)
    out = [path for path, text in wanted.items()
           if not path.exists() or path.read_text(encoding="utf-8") != text]
    if pages is None:
        out += [path for path in MAN.glob("man[157]/*") if path not in wanted]
    return sorted(out)


def write(pages: list[Page] | None = None) -> list[Path]:
    """Write the files :func:`stale` lists (removing roff pages no page makes)."""
    wanted = expected(pages)
    changed = []
    for path in stale(pages):
        if path in wanted:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted[path], encoding="utf-8")
        else:
            path.unlink()
        changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    """``[--check] [PAGE...]``: write (or, with --check, list) the stale files of the manual,
    or of the pages named (``git-autoresearch-log``, ``gitautoresearch-config``)."""
    check = "--check" in argv
    names = [a for a in argv if a != "--check"]
    known = {page.name: page for page in all_pages()}
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"no such page: {', '.join(unknown)}", file=sys.stderr)
        return 2
    pages = [known[n] for n in names] or None
    try:
        paths = stale(pages) if check else write(pages)
    except click.ClickException as exc:
        print(exc.message, file=sys.stderr)
        return 1
    for path in paths:
        print(path.relative_to(ROOT))
    return 1 if check and paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

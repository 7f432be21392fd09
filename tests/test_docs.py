"""The documentation cannot rot: the manual matches the code and renders with ``man`` without a
warning, every option and configuration key the code has is documented and every one the text
names exists, and the shell examples of the README and the guide run on a scratch repository
(those that cannot are marked in the text, and reported here as skipped, with the reason)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from git_autoresearch.commands import COMMAND_MODULES, command
from git_autoresearch.commands.manpage import MAN, all_pages, stale
from git_autoresearch.session.config import Config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = MAN / "gitautoresearch-guide.rst"
REGENERATE = "python -m git_autoresearch.commands.manpage"


# --- the manual -------------------------------------------------------------------------------

def test_the_manual_matches_the_code() -> None:
    """Every page's generated parts (options, JSON fields, exit codes) are the code's, and its
    roff is its source's."""
    out_of_date = [str(path.relative_to(ROOT)) for path in stale()]
    assert not out_of_date, f"stale: {', '.join(out_of_date)}; run {REGENERATE}"


def test_every_command_has_its_page_and_every_page_a_description() -> None:
    names = {page.name for page in all_pages()}
    assert {f"git-autoresearch-{name}" for name in COMMAND_MODULES} <= names
    for page in all_pages():
        hand = hand_text(page.source.read_text(encoding="utf-8"))
        assert len(hand.split()) >= 30, f"{page.name}: the page says almost nothing by hand"


def test_every_command_page_has_examples_and_files() -> None:
    """A command's page gives, by hand, examples and the files the command reads and writes
    (the options, the JSON output and the exit codes are generated)."""
    for page in all_pages():
        if page.command is None:
            continue
        hand = hand_text(page.source.read_text(encoding="utf-8"))
        for section in ("EXAMPLES", "FILES"):
            assert re.search(rf"^{section}\n=+\n", hand, re.M), f"{page.name}: no {section}"


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_each_page_renders_with_man_without_warnings() -> None:
    for page in all_pages():
        proc = subprocess.run(["man", "--warnings", "-l", str(page.output)],
                              capture_output=True, text=True,
                              env={"MANWIDTH": "80", "MANPAGER": "cat", "PATH": "/usr/bin:/bin",
                                   "LANG": "C.UTF-8"})
        assert proc.returncode == 0 and proc.stderr == "", f"{page.name}: {proc.stderr}"
        assert page.name in proc.stdout


# --- options and configuration keys ---------------------------------------------------------

GENERATED = re.compile(r"^\.\. begin generated: (\w+)\n.*?^\.\. end generated: \1\n", re.M | re.S)


def hand_text(rst: str) -> str:
    """A page's source without its generated parts: what was written by hand."""
    return GENERATED.sub("", rst)


def documents() -> dict[str, str]:
    """Every text a user reads, by name: the README, the contributor's guide and the hand-written
    text of every page."""
    out = {"README.md": README.read_text(encoding="utf-8"),
           "CONTRIBUTING.md": (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")}
    for page in all_pages():
        out[page.source.name] = hand_text(page.source.read_text(encoding="utf-8"))
    return out


def options_of(cmd: click.Command) -> set[str]:
    """Every option name ``cmd`` takes (a group's: its subcommands' too)."""
    out = {name for param in cmd.params if isinstance(param, click.Option)
           for name in [*param.opts, *param.secondary_opts]}
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            out |= options_of(sub)
    return out


@dataclass
class Invocation:
    where: str
    words: list[str]


INVOCATION = re.compile(r"git[ -]autoresearch[ -]([a-z][\w-]*)([^\n`|;&#)]*)")


def invocations() -> Iterator[Invocation]:
    """Each ``git autoresearch CMD ...`` the documents show, up to the end of its line, code span
    or shell pipeline; a line ending in a backslash goes on."""
    for name, text in documents().items():
        joined = re.sub(r"\\\n\s*", " ", text)
        for match in INVOCATION.finditer(joined):
            line = joined.count("\n", 0, match.start()) + 1
            try:  # a quoted argument ("pytest -q") is one word, as the shell reads it
                rest = shlex.split(match.group(2))
            except ValueError:
                rest = match.group(2).split()
            words = [match.group(1), *rest]
            yield Invocation(f"{name} near line {line}", words)


def test_every_option_an_example_gives_exists() -> None:
    """``git autoresearch log --since ...`` in any document names an option ``log`` has (an
    option of a group's subcommand: that subcommand's)."""
    wrong = []
    for inv in invocations():
        name = inv.words[0]
        if name not in COMMAND_MODULES:
            continue
        cmd = command(name)
        if isinstance(cmd, click.Group) and len(inv.words) > 1 and inv.words[1] in cmd.commands:
            cmd = cmd.commands[inv.words[1]]
        known = options_of(cmd) | {"-h", "--help"}
        for word in inv.words[1:]:
            option = word.split("=", 1)[0].strip("'\"[]().,:")
            if re.fullmatch(r"--?[a-zA-Z][\w-]*", option) and option not in known:
                wrong.append(f"{inv.where}: git autoresearch {' '.join(inv.words[:2])}... "
                             f"has no option {option}")
    assert not wrong, "\n".join(wrong)


# Options of other programs that the pages name (git's, pytest's, pip's, ...).
FOREIGN_OPTIONS = {
    "--force-with-lease", "--atomic", "--write-tree", "--stable", "--squash", "--source",
    "--grep", "--oneline", "--format", "--benchmark-json", "--export-json", "--no-verify",
    "--amend", "--global", "--user", "--editable", "--worktree", "--git-path", "--show-toplevel",
    "--local", "--hard", "--seed", "--merge", "--auto", "--filter", "--dependency", "--export",
    "--detach", "--cached", "--soft", "--staged", "--ff-only",
}


def test_every_option_a_page_names_exists() -> None:
    """An option a page names in its text (``--retry``) is one of the tool's commands' (or one
    of another program's the page writes about, listed above)."""
    ours = {name for cmd_name in COMMAND_MODULES for name in options_of(command(cmd_name))}
    ours |= {"--help", "--version"}
    wrong = []
    for name, text in documents().items():
        if not name.endswith(".rst"):
            continue
        for option in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)):
            if option not in ours and option not in FOREIGN_OPTIONS:
                wrong.append(f"{name}: {option}")
    assert not wrong, "options no command has: " + ", ".join(sorted(wrong))


def test_every_configuration_key_is_documented_and_every_documented_key_exists() -> None:
    """gitautoresearch-config(5) gives each key as a term at the start of a line: ``key``."""
    text = hand_text((MAN / "gitautoresearch-config.rst").read_text(encoding="utf-8"))
    documented = set(re.findall(r"^``([a-z_]+)``", text, re.M))
    keys = set(Config.keys())
    assert keys - documented == set(), f"keys without a description: {keys - documented}"
    assert documented - keys == set(), f"documented keys the code lacks: {documented - keys}"


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"the README has {lines} lines: the reference goes in the manual"


# --- the shell examples of the README and the guide --------------------------------------------

@dataclass
class Example:
    """A shell example: where it is, its code, and why it is not run (None: it is)."""

    document: str
    line: int
    code: str
    not_run: str | None

    @property
    def name(self) -> str:
        return f"{self.document}:{self.line}"


def markdown_examples(path: Path) -> list[Example]:
    """The ```sh blocks of a Markdown file; ``<!-- not run: REASON -->`` on the line before one
    says why it is not run."""
    out, lines = [], path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines):
        if line.strip() == "```sh":
            end = lines.index("```", number + 1)
            marker = re.match(r"<!-- not run: (.*) -->", lines[number - 1].strip())
            out.append(Example(path.name, number + 1, "\n".join(lines[number + 1:end]),
                               marker.group(1) if marker else None))
    return out


def rst_examples(path: Path) -> list[Example]:
    """The ``.. code-block:: sh`` blocks of a page; an ``.. not run: REASON`` comment before one
    (a blank line between) says why it is not run."""
    out, lines = [], path.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines):
        if line.strip() == ".. code-block:: sh":
            body = []
            for following in lines[number + 2:]:
                if following and not following.startswith("   "):
                    break
                body.append(following[3:])
            before = next((lines[i] for i in range(number - 1, -1, -1) if lines[i].strip()), "")
            marker = re.match(r"\.\. not run: (.*)", before)
            out.append(Example(path.name, number + 1, "\n".join(body).rstrip() + "\n",
                               marker.group(1) if marker else None))
    return out


EXAMPLES = {"README.md": markdown_examples(README), GUIDE.name: rst_examples(GUIDE)}


@pytest.mark.parametrize("document", sorted(EXAMPLES))
def test_the_shell_examples_run(document: str, tmp_path: Path) -> None:
    """Every example of the document that is not marked, in order, as one shell session in an
    empty folder (a command that fails stops it, naming the example)."""
    runnable = [ex for ex in EXAMPLES[document] if ex.not_run is None]
    assert runnable, f"{document} has no example to run"
    script = ["set -e"]
    for ex in runnable:
        script += [f"echo '>>> example {ex.name}' >&2", ex.code]
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        last = re.findall(r">>> example (\S+)", proc.stderr)
        pytest.fail(f"the example at {last[-1] if last else '?'} failed (exit "
                    f"{proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


@pytest.mark.parametrize("example", [ex for exs in EXAMPLES.values() for ex in exs
                                     if ex.not_run is not None], ids=lambda ex: ex.name)
def test_an_example_not_run(example: Example) -> None:
    """Each example the documents mark as not run is reported, with the reason."""
    assert example.not_run and example.not_run.strip(), f"{example.name}: a mark without a reason"
    pytest.skip(f"{example.name} not run: {example.not_run}")

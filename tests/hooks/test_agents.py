"""The agent skill (``git autoresearch skill``) and the guard in git (``git autoresearch
guard``)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click
import pytest
from conftest import Tool, git, start_args, write

from git_autoresearch import commands
from git_autoresearch.hooks.skill import BEGIN, END, skill_text, text_for
from git_autoresearch.session.config import parse_toml

ROOT = Path(__file__).resolve().parents[2]

# --- the skill --------------------------------------------------------------------------------


def _calls(text: str) -> list[str]:
    """Every ``git autoresearch ...`` call in a Markdown text: each line of a fenced block
    (with its backslash continuations joined, up to a ``#`` comment), and each inline code
    span (whose text may wrap across lines)."""
    found: list[str] = []
    prose: list[str] = []
    fenced = False
    block: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if fenced:
                joined = "\n".join(block).replace("\\\n", " ")
                found += [line.split(" #", 1)[0] for line in joined.splitlines()]
                block = []
            fenced = not fenced
            continue
        (block if fenced else prose).append(line)
    found += re.findall(r"`([^`]+)`", "\n".join(prose).replace("\n", " "))
    return [call[call.index("git autoresearch"):] for call in found
            if "git autoresearch " in call]


def _unknown(call: str) -> list[str]:
    """What a call names that does not exist: the command or subcommand, or an option."""
    words = call.split()[2:]
    if not words or words[0] not in commands.COMMAND_MODULES:
        return [f"command {' '.join(words[:1])!r}"]
    cmd: click.Command = commands.command(words[0])
    rest = words[1:]
    if isinstance(cmd, click.Group):
        if not rest or rest[0] not in cmd.commands:
            return [f"subcommand {words[0]} {' '.join(rest[:1])!r}"]
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    options = {o for p in cmd.params for o in [*p.opts, *p.secondary_opts]}
    return [f"option {word} of {cmd.name}" for word in rest
            if re.fullmatch(r"--?[a-z][a-z-]*", word) and word not in options]


def _named(call: str) -> str:
    words = call.split()[2:]
    sub = words[1] if len(words) > 1 and isinstance(
        commands.command(words[0]), click.Group) else ""
    return f"{words[0]} {sub}".strip()


def test_skill_names_only_commands_and_options_that_exist() -> None:
    """Every ``git autoresearch <command> --option`` the skill text names is a command of
    the click group with that option; the text names the loop's commands.
    The checker finds a bad option and a bad command, so that it cannot pass by reading
    nothing."""
    calls = _calls(skill_text())
    bad = [problem for call in calls for problem in _unknown(call)]
    assert bad == []
    assert {"start", "run", "measure", "keep", "discard", "crash", "status", "log", "summary",
            "show", "resume", "doctor", "stop", "ideas next", "ideas add", "ideas done",
            "guard install", "finalize"} <= {_named(c) for c in calls}
    assert _unknown("git autoresearch run --descripton x") == ["option --descripton of run"]
    assert _unknown("git autoresearch ideas pop") == ["subcommand ideas 'pop'"]
    assert _unknown("git autoresearch commit -m x") == ["command 'commit'"]


def test_skill_text_teaches_the_json_the_exit_codes_and_the_reset() -> None:
    """The skill says which fields of run's JSON to read, what exits 0, 2, 3 and 4 mean, never
    to commit by hand, and to read ``summary`` after a context reset."""
    text = skill_text()
    assert text.startswith("---\nname: git-autoresearch\ndescription: ")
    for field in ("`status`", "`metric`", "`decision`", "`reason`", "`tail`", "`steer`",
                  "`scope_violations`", "`readonly_violations`", "`warnings`"):
        assert field in text
    for code in ("- 0:", "- 2:", "- 3:", "- 4:"):
        assert code in text
    assert "Never commit" in text
    reset = text[text.index("## After a context reset"):]
    assert "git autoresearch summary" in reset.split("\n\n", 2)[1] + reset


def test_skill_prints_without_writing(repo: Path, ar: Tool) -> None:
    """Without ``--install``, and with ``--print``, the text goes to stdout and no file is
    written."""
    assert ar(repo, "skill").out == skill_text()
    res = ar(repo, "skill", "--install", "codex", "--print")
    assert res.out == text_for("codex")
    assert res.out.startswith(BEGIN + "\n# The autoresearch loop") and res.out.endswith(END + "\n")
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize(("harness", "path"), [
    ("claude", ".claude/skills/git-autoresearch/SKILL.md"),
    ("pi", ".pi/skills/git-autoresearch/SKILL.md"),
    ("generic", ".agents/skills/git-autoresearch/SKILL.md"),
])
def test_skill_installs_where_the_harness_reads_it(repo: Path, ar: Tool, harness: str,
                                                    path: str) -> None:
    """``--install`` writes SKILL.md where the harness reads skills (Claude Code
    ``.claude/skills/<name>/SKILL.md``; pi a skills folder, pi-autoresearch 1.6.2 README.md:119
    ``~/.pi/agent/skills/``, and pi's docs/skills.md the project's ``.pi/skills/``, where a
    SKILL.md in a folder named as its ``name`` is found), from a subfolder too; again it says
    unchanged; a SKILL.md not ours is refused (exit 3) unless ``--force``."""
    res = ar(repo / "src", "skill", "--install", harness, "--json").json()
    assert res == {"schema": "git-autoresearch:skill/1", "harness": harness, "path": path,
                   "action": "created"}
    assert (repo / path).read_text() == skill_text()
    assert ar(repo, "skill", "--install", harness).out == f"unchanged {path}\n"
    write(repo / path, "---\nname: mine\n---\nmy own skill\n")
    res2 = ar(repo, "skill", "--install", harness, expect=3)
    assert f"{path} exists and is not git-autoresearch's skill" in res2.err
    assert (repo / path).read_text() == "---\nname: mine\n---\nmy own skill\n"
    assert ar(repo, "skill", "--install", harness, "--force").out == f"updated {path}\n"
    assert (repo / path).read_text() == skill_text()


def test_skill_codex_section_of_agents_md(repo: Path, ar: Tool) -> None:
    """Codex reads AGENTS.md: the skill is appended as a marked section (the user's text kept),
    and installing again replaces that section only."""
    write(repo / "AGENTS.md", "# Project rules\n\nUse tabs.\n")
    assert ar(repo, "skill", "--install", "codex").out == "updated AGENTS.md\n"
    section = text_for("codex")
    assert (repo / "AGENTS.md").read_text() == "# Project rules\n\nUse tabs.\n\n" + section
    assert "name: git-autoresearch" not in section
    old = (repo / "AGENTS.md").read_text().replace("## Rules", "## Old rules")
    write(repo / "AGENTS.md", old + "\n## After\n")
    ar(repo, "skill", "--install", "codex")
    assert (repo / "AGENTS.md").read_text() == \
        "# Project rules\n\nUse tabs.\n\n" + section + "\n## After\n"
    assert ar(repo, "skill", "--install", "codex").out == "unchanged AGENTS.md\n"


def test_skill_is_shipped_in_the_wheel() -> None:
    """The wheel carries share/skill as git_autoresearch/_data/skill, where
    resources.data_path looks first."""
    data = parse_toml((ROOT / "pyproject.toml").read_bytes(), source="pyproject.toml")
    forced = data["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert forced["share/skill"] == "git_autoresearch/_data/skill"
    assert (ROOT / "share" / "skill" / "SKILL.md").is_file()


# --- the guard --------------------------------------------------------------------------------


def commit(top: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git commit`` by hand (hooks and all), not failing the test on a refusal."""
    return subprocess.run(["git", "commit", "-q", *args], cwd=top, capture_output=True,
                          text=True)


FORGED = 'lower value\n\nResult: {"status":"keep","score":1}\nAutoresearch-Run: 9\n'


def test_guard_refuses_a_forged_result_trailer(repo: Path, ar: Tool) -> None:
    """On the session branch, a commit by hand whose message carries Result: (or another
    keep trailer) is refused by the commit-msg hook; HEAD does not move."""
    ar(repo, *start_args())
    ar(repo, "guard", "install")
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "value.txt", "1\n")
    git(repo, "add", "value.txt")
    res = commit(repo, "-m", FORGED)
    assert res.returncode != 0
    assert "guard: this commit message carries Result:, Autoresearch-Run:, which only " \
           "git autoresearch run or keep writes on autoresearch/s1" in res.stderr
    assert git(repo, "rev-parse", "HEAD") == head
    # A commit by hand without those trailers is not the guard's business.
    assert commit(repo, "-m", "plain").returncode == 0


def test_guard_refuses_a_changed_benchmark(repo: Path, ar: Tool) -> None:
    """A commit by hand that changes the benchmark the command names (bench.sh) or a
    --readonly path is refused by the pre-commit hook, also when git commits a temporary
    index (``git commit <path>``, ``git commit -a``)."""
    write(repo / "data" / "input.txt", "x\n")
    git(repo, "add", "data")
    git(repo, "commit", "-q", "-m", "data")
    ar(repo, *start_args("--readonly", "data/"))
    ar(repo, "guard", "install")
    head = git(repo, "rev-parse", "HEAD")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    res = commit(repo, "-m", "faster", "bench.sh")
    assert res.returncode != 0
    assert "guard: this commit changes bench.sh, which define(s) what the session measures" \
        in res.stderr
    assert commit(repo, "-a", "-m", "faster").returncode != 0
    git(repo, "checkout", "bench.sh")
    write(repo / "data" / "input.txt", "y\n")
    git(repo, "add", "data")
    res = commit(repo, "-m", "easier data")
    assert "guard: this commit changes data/input.txt," in res.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_guard_lets_the_loop_keep_and_other_branches_commit(repo: Path, ar: Tool) -> None:
    """With the guard installed, keep commits through ``git commit`` (hooks configured) and
    passes; off the session branch, a Result: trailer and a benchmark change are allowed."""
    ar(repo, *start_args())
    ar(repo, "guard", "install")
    write(repo / "value.txt", "50\n")
    assert ar(repo, "run", "-d", "halve", "--json").json()["status"] == "keep"
    assert git(repo, "log", "-1", "--format=%(trailers:key=Autoresearch-Run,valueonly)") == "2"
    git(repo, "checkout", "-q", "main")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    git(repo, "add", "bench.sh")
    assert commit(repo, "-m", FORGED).returncode == 0


def test_guard_chains_the_users_hooks_and_uninstalls(repo: Path, ar: Tool) -> None:
    """A pre-commit and a commit-msg hook already in .git/hooks are renamed
    <hook>.pre-autoresearch and still run after the guard (with the message file); status
    names them; uninstall puts them back as they were."""
    ar(repo, *start_args())
    hooks = repo / ".git" / "hooks"
    pre = "#!/bin/sh\necho pre >> \"$(git rev-parse --git-dir)/ran\"\n" \
          "grep -q BAD value.txt && exit 1\nexit 0\n"
    msg = "#!/bin/sh\necho \"msg $(head -1 \"$1\")\" >> \"$(git rev-parse --git-dir)/ran\"\n"
    write(hooks / "pre-commit", pre, 0o755)
    write(hooks / "commit-msg", msg, 0o755)
    res = ar(repo, "guard", "install")
    assert res.out == (f"pre-commit: installed ({hooks / 'pre-commit'}), then "
                       "pre-commit.pre-autoresearch\n"
                       f"commit-msg: installed ({hooks / 'commit-msg'}), then "
                       "commit-msg.pre-autoresearch\n")
    assert (hooks / "pre-commit.pre-autoresearch").read_text() == pre
    write(repo / "value.txt", "BAD\n")
    git(repo, "add", "value.txt")
    assert commit(repo, "-m", "refused by the user's hook").returncode == 1
    write(repo / "value.txt", "7\n")
    git(repo, "add", "value.txt")
    assert commit(repo, "-m", "by hand").returncode == 0
    assert (repo / ".git" / "ran").read_text() == "pre\npre\nmsg by hand\n"
    ar(repo, "guard", "install")  # again: the user's hooks stay chained, not overwritten
    assert (hooks / "pre-commit.pre-autoresearch").read_text() == pre
    status = ar(repo, "guard", "status", "--json").json()["hooks"]
    assert [(s["hook"], s["installed"], s["chained"]) for s in status] == [
        ("pre-commit", True, "pre-commit.pre-autoresearch"),
        ("commit-msg", True, "commit-msg.pre-autoresearch")]
    ar(repo, "guard", "uninstall")
    assert (hooks / "pre-commit").read_text() == pre
    assert (hooks / "commit-msg").read_text() == msg
    assert not (hooks / "pre-commit.pre-autoresearch").exists()
    assert ar(repo, "guard", "status").out == (
        f"pre-commit: not installed ({hooks / 'pre-commit'})\n"
        f"commit-msg: not installed ({hooks / 'commit-msg'})\n")


def test_guard_in_core_hooks_path_with_a_framework_hook(repo: Path, ar: Tool,
                                                        tmp_path: Path) -> None:
    """With core.hooksPath set, the guard goes there. A hook in the manner of the pre-commit
    framework's (it finds its folder from $0 and runs ``pre-commit.legacy`` from it) keeps
    working once renamed, and the guard still refuses a forged trailer."""
    folder = tmp_path / "shared-hooks"
    git(repo, "config", "core.hooksPath", str(folder))
    framework = ("#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n"
                 "HERE=\"$(cd \"$(dirname \"$0\")\" && pwd)\"\n"
                 "echo framework >> \"$(git rev-parse --git-dir)/ran\"\n"
                 "if [ -x \"$HERE/pre-commit.legacy\" ]; then\n"
                 "    \"$HERE/pre-commit.legacy\" || exit 1\nfi\n")
    write(folder / "pre-commit", framework, 0o755)
    write(folder / "pre-commit.legacy",
          "#!/bin/sh\necho legacy >> \"$(git rev-parse --git-dir)/ran\"\n", 0o755)
    ar(repo, *start_args())
    ar(repo, "guard", "install")
    assert (folder / "pre-commit.pre-autoresearch").read_text() == framework
    assert (folder / "commit-msg").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    write(repo / "value.txt", "3\n")
    git(repo, "add", "value.txt")
    assert commit(repo, "-m", FORGED).returncode != 0
    assert commit(repo, "-m", "by hand").returncode == 0
    assert (repo / ".git" / "ran").read_text() == "framework\nlegacy\nframework\nlegacy\n"


def test_guard_install_refuses_two_hooks_it_cannot_chain(repo: Path, ar: Tool) -> None:
    """A hook and a <hook>.pre-autoresearch both there, neither the guard's: refused (exit 3),
    nothing changed."""
    hooks = repo / ".git" / "hooks"
    write(hooks / "pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
    write(hooks / "pre-commit.pre-autoresearch", "#!/bin/sh\nexit 0\n", 0o755)
    res = ar(repo, "guard", "install", expect=3)
    assert "pre-commit.pre-autoresearch both exist and neither is the guard's" in res.err
    assert sorted(p.name for p in hooks.iterdir()) == ["pre-commit",
                                                        "pre-commit.pre-autoresearch"]


# A stand-in for the pre-commit framework's hook script (pre-commit 4.7.0,
# pre_commit/resources/hook-tmpl and commands/hook_impl.py): it runs <hook>.legacy from its
# own folder with PRE_COMMIT_RUNNING_LEGACY=1, and fails when it finds that variable already
# set (it was run from its own legacy hook).
FRAMEWORK = """#!/bin/sh
# File generated by pre-commit: https://pre-commit.com
if [ -n "$PRE_COMMIT_RUNNING_LEGACY" ]; then echo "bug: migration mode" >&2; exit 1; fi
echo framework >> "$(git rev-parse --git-dir)/ran"
here="$(cd "$(dirname "$0")" && pwd)"
if [ -x "$here/pre-commit.legacy" ]; then
    PRE_COMMIT_RUNNING_LEGACY=1 "$here/pre-commit.legacy" "$@" || exit 1
fi
"""


def test_guard_under_pre_commit_installed_after_it(repo: Path, ar: Tool) -> None:
    """``pre-commit install`` over the guard moves it to pre-commit.legacy and runs it from
    there: the guard still refuses a changed benchmark, does not run the framework's older
    copy it chained (which would fail), is reported and rewritten there, and uninstall removes
    it and that copy, leaving the framework's hook alone."""
    hooks = repo / ".git" / "hooks"
    write(hooks / "pre-commit", FRAMEWORK, 0o755)
    ar(repo, *start_args())
    ar(repo, "guard", "install")
    assert (hooks / "pre-commit.pre-autoresearch").read_text() == FRAMEWORK
    # What pre-commit install does now: the guard becomes the legacy hook.
    (hooks / "pre-commit").rename(hooks / "pre-commit.legacy")
    write(hooks / "pre-commit", FRAMEWORK, 0o755)
    write(repo / "value.txt", "3\n")
    git(repo, "add", "value.txt")
    assert commit(repo, "-m", "by hand").returncode == 0
    assert (repo / ".git" / "ran").read_text() == "framework\n"
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    git(repo, "add", "bench.sh")
    assert "guard: this commit changes bench.sh" in commit(repo, "-m", "bench").stderr
    state = ar(repo, "guard", "status", "--json").json()["hooks"][0]
    assert state == {"hook": "pre-commit", "path": str(hooks / "pre-commit.legacy"),
                     "installed": True, "chained": "pre-commit.pre-autoresearch"}
    ar(repo, "guard", "install")
    assert (hooks / "pre-commit").read_text() == FRAMEWORK
    assert "git-autoresearch guard" in (hooks / "pre-commit.legacy").read_text()
    ar(repo, "guard", "uninstall")
    assert sorted(p.name for p in hooks.iterdir()) == ["pre-commit"]
    assert (hooks / "pre-commit").read_text() == FRAMEWORK


def test_guard_refuses_a_hooks_folder_of_the_project(repo: Path, ar: Tool) -> None:
    """core.hooksPath inside the work tree with a tracked hook: install is refused (exit 3)
    and nothing changes, since renaming it would be a change of the project that a run sets
    aside; with the guard's files ignored there, it installs."""
    write(repo / ".githooks" / "pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
    git(repo, "add", ".githooks")
    git(repo, "commit", "-q", "-m", "hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    res = ar(repo, "guard", "install", expect=3)
    assert "the hooks folder .githooks (core.hooksPath) is in the work tree and " \
           ".githooks/pre-commit is tracked or not ignored" in res.err
    assert sorted(p.name for p in (repo / ".githooks").iterdir()) == ["pre-commit"]
    git(repo, "config", "core.hooksPath", ".local-hooks")
    write(repo / ".gitignore", ".local-hooks/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    ar(repo, "guard", "install")
    assert (repo / ".local-hooks" / "pre-commit").exists()
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("harness,path", [
    ("claude", ".claude/skills/git-autoresearch/SKILL.md"),
    ("codex", "AGENTS.md"),
])
def test_an_installed_skill_survives_the_loop(repo: Path, ar: Tool, harness: str,
                                              path: str) -> None:
    """The agent's instructions are never an experiment: a run neither reverts nor commits
    them (they are protected like .auto/)."""
    ar(repo, *start_args("--scope", "value.txt"))
    ar(repo, "skill", "--install", harness)
    text = (repo / path).read_text()
    write(repo / "value.txt", "120\n")
    ran = ar(repo, "run", "-d", "worse", "--json").json()
    assert ran["status"] == "discard" and ran["scope_violations"] == []
    write(repo / "value.txt", "90\n")
    assert ar(repo, "run", "-d", "better", "--json").json()["status"] == "keep"
    assert (repo / path).read_text() == text
    assert path not in git(repo, "show", "--name-only", "--format=", "HEAD")

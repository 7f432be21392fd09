"""Shell completion (click's mechanism, wired into git's bash completion) and the bare groups,
through the installed executables in real shells."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import BIN, Tool, start_args, write

GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")


def program(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "git-autoresearch"), *args], cwd=cwd, capture_output=True,
                          text=True)


@pytest.mark.parametrize("args", [(), ("hooks",), ("ideas",)])
def test_a_bare_group_prints_its_help_and_exits_0(tmp_path: Path, args: tuple[str, ...]) -> None:
    proc = program(*args, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.startswith(f"Usage: git autoresearch {' '.join(args)}".rstrip() + " ")
    assert "Commands:" in proc.stdout


@pytest.mark.parametrize(("shell", "registers"), [
    ("bash", "complete -o nosort -F _git_autoresearch_completion git-autoresearch"),
    ("zsh", "compdef _git_autoresearch_completion git-autoresearch"),
    ("fish", "complete --no-files --command git-autoresearch"),
])
def test_completion_prints_clicks_script(tmp_path: Path, shell: str, registers: str) -> None:
    proc = program("completion", shell, cwd=tmp_path)
    assert proc.returncode == 0 and registers in proc.stdout
    assert "_GIT_AUTORESEARCH_COMPLETE=" in proc.stdout
    assert ("_git_autoresearch()" in proc.stdout) == (shell == "bash")
    assert ("_git-autoresearch()" in proc.stdout) == (shell == "zsh")


def test_completion_refuses_an_unknown_shell(tmp_path: Path) -> None:
    proc = program("completion", "tcsh", cwd=tmp_path)
    assert proc.returncode == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in proc.stderr


BASH_DRIVER = r"""
source {git_completion}
eval "$(git autoresearch completion bash)"
complete -p git-autoresearch
complete -p git
comp() {{
    COMP_LINE="$1"; COMP_POINT=${{#COMP_LINE}}
    read -ra COMP_WORDS <<< "$COMP_LINE"
    [[ $COMP_LINE == *' ' ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
    COMPREPLY=()
    "$2" "${{COMP_WORDS[0]}}"
    echo "[$1] ${{COMPREPLY[*]}}"
}}
"""


def bash_completions(cwd: Path, lines: list[str]) -> list[str]:
    """What bash completes for each command line (git's ``__git_wrap__git_main`` for a line that
    starts with ``git ``, click's function for ``git-autoresearch``), after ``complete -p``'s
    two lines."""
    driver = BASH_DRIVER.format(git_completion=GIT_BASH_COMPLETION) + "".join(
        f"comp {shlex.quote(line)} "
        f"{'__git_wrap__git_main' if line.startswith('git ') else '_git_autoresearch_completion'}"
        "\n" for line in lines)
    proc = subprocess.run(["bash", "-c", driver], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.skipif(not GIT_BASH_COMPLETION.exists(), reason="git's bash completion is missing")
def test_bash_completes_git_autoresearch_subcommands_runs_and_sessions(repo: Path,
                                                                        ar: Tool) -> None:
    ar(repo, *start_args())
    for value in ("90", "95"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", f"value {value}")
    out = bash_completions(repo, [
        "git autoresearch ru", "git autoresearch s", "git autoresearch hooks ",
        "git autoresearch show ", "git autoresearch diff 3 ", "git autoresearch gc ",
        "git autoresearch push origin ", "git autoresearch show --j",
        "git autor", "git-autoresearch sta",
    ])
    assert out[0] == "complete -o nosort -F _git_autoresearch_completion git-autoresearch"
    assert out[1].startswith("complete ") and out[1].endswith(" __git_wrap__git_main git")
    assert out[2:] == [
        "[git autoresearch ru] run",
        "[git autoresearch s] start status show score stop summary sessions skill schema",
        "[git autoresearch hooks ] install list",
        "[git autoresearch show ] 3 2 1",
        "[git autoresearch diff 3 ] 3 2 1",
        "[git autoresearch gc ] s1",
        "[git autoresearch push origin ] s1",
        "[git autoresearch show --j] --json",
        # git lists every git-* program on PATH; the per-command executables are left out.
        "[git autor] autoresearch ",
        "[git-autoresearch sta] start status",
    ]


@pytest.mark.skipif(not GIT_BASH_COMPLETION.exists(), reason="git's bash completion is missing")
def test_bash_completion_outside_a_session_offers_no_runs(tmp_path: Path) -> None:
    out = bash_completions(tmp_path, ["git autoresearch show ", "git autoresearch gc "])
    assert out[2:] == ["[git autoresearch show ] ", "[git autoresearch gc ] "]

"""Shell completion through click's own mechanism: ``git autoresearch completion SHELL`` prints
the script; the arguments that name runs or sessions complete them from the session at hand
(``commands.common.complete_runs``). Bash's script also plugs into git's completion (git's
contrib/completion/git-completion.bash calls ``_git_autoresearch`` for ``git autoresearch ...``)
and keeps the per-command executables out of ``git <TAB>``."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from .common import CONTEXT

PROG = "git-autoresearch"
# The variable click reads to answer a completion request (``_<PROG>_COMPLETE``).
COMPLETE_VAR = "_GIT_AUTORESEARCH_COMPLETE"
SHELLS = ("bash", "zsh", "fish")

# For bash: git's completion calls _git_autoresearch for `git [options] autoresearch ...`, with
# its own words, cword and __git_cmd_idx (the index of "autoresearch"); the request click gets
# is the same command line as `git-autoresearch ...`. Then git's list of commands, which holds
# every git-* program on PATH, loses the per-command executables (autoresearch-run, ...).
_BASH_GIT = r"""
_git_autoresearch() {
    local IFS=$'\n' idx=${__git_cmd_idx:-1} response item kind value
    response=$(env COMP_WORDS="git-autoresearch"$'\n'"${words[*]:idx+1}" \
        COMP_CWORD=$((cword - idx)) %(var)s=bash_complete git-autoresearch)
    for item in $response; do
        IFS=',' read -r kind value <<< "$item"
        case $kind in
            plain) COMPREPLY+=("$value") ;;
            dir) COMPREPLY=(); compopt -o dirnames ;;
            file) COMPREPLY=(); compopt -o default ;;
        esac
    done
}

if ! declare -F __git >/dev/null && declare -F _completion_loader >/dev/null; then
    _completion_loader git >/dev/null 2>&1
fi
if declare -F __git >/dev/null && ! declare -F _git_autoresearch_all_commands >/dev/null; then
    eval "_git_autoresearch_all_commands () $(declare -f __git | tail -n +2)"
    __git() {
        if [[ $1 == --list-cmds=* ]]; then
            _git_autoresearch_all_commands "$@" | command grep -v '^autoresearch-'
        else
            _git_autoresearch_all_commands "$@"
        fi
    }
fi
"""

# For zsh: git's completion (_git) calls _git-<command> with the words from the command on.
_ZSH_GIT = """
_git-autoresearch() {
    words[1]=git-autoresearch
    _git_autoresearch_completion "$@"
}
"""


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`SHELLS`): click's script for
    ``git-autoresearch`` (its ``_GIT_AUTORESEARCH_COMPLETE`` request), and for bash the
    adapter to git's completion."""
    from . import cli

    cls = get_completion_class(shell)
    assert cls is not None
    text = cls(cli, {}, PROG, COMPLETE_VAR).source()
    if shell == "bash":
        text += _BASH_GIT % {"var": COMPLETE_VAR}
    elif shell == "zsh":
        text += _ZSH_GIT
    return text


@click.command("completion", context_settings=CONTEXT, short_help="print a shell completion script")
@click.argument("shell", type=click.Choice(SHELLS))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish): subcommands, options,
    run numbers and session ids. Bash: eval "$(git autoresearch completion bash)" in ~/.bashrc,
    which also completes `git autoresearch <TAB>` through git's completion."""
    click.echo(script(shell), nl=False)

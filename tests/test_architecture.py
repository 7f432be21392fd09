"""The package's dependency rules, as README "How it is built" draws them: checked on the
source, so that a change that breaks a rule fails here and not in review.

Each rule names the modules it covers; a module it names must exist (a rename cannot make a
rule pass by leaving it nothing to check).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "git_autoresearch"
MODULES = sorted(PACKAGE.rglob("*.py"))

# The command-line layer: parses options and renders; the only place click is imported.
CLI = {"cli", "manpage", "commands"}
# Views: read a Ledger, return data and text; never run git.
VIEWS = {"report", "insight", "dashboard", "plot", "query", "queryformat"}
# Leaves below the session protocol: formats and paths, no git and no session.
FORMATS = {"ledger", "readscope", "confidence", "jsontext", "config", "paths", "files", "refs",
           "inputs", "errors", "decision", "scoring", "jsonmetric"}
# The session protocol's rooms; the read side (session) never reaches up into them.
PROTOCOL = {"pending", "choosing", "recording", "recovery", "start", "resume", "doctor"}
# A module is as long as its one job needs; a function stays short enough to read whole.
MAX_FUNCTION_LINES = 80
# The layers of README "How it is built", top to bottom: a module imports from its own layer or
# those below, never from one above.
LAYERS = [
    {"__main__", "cli", "manpage", "commands"},
    {"start", "start_record", "resume", "doctor", "status", "demo", "audit", "finalize", "apply",
     "catalog", "sharing", "guard", "runcommits", "parallel", "joining", "swapping"},
    {"recording", "choosing", "recovery", "pending", "replaying", "landing", "incumbent"},
    {"session", "checkouts", "reader", "branches", "journal", "stopping", "hookpayload",
     "baselines", "runnumbers"},
    {"experiment", "trailers", "state", "submodules", "layout", "ideas", "scripts", "lock",
     "measure", "running", "hooks", "importers", "report", "insight", "dashboard", "plot",
     "review", "skill", "workers", "slots", "claims", "query", "queryformat",
     "remoteledger"},
    {"git", "ledger", "readscope", "confidence", "jsontext", "repairs", "config", "refs", "paths",
     "files", "inputs", "errors", "signals", "faults", "resources", "decision", "stats", "scoring",
     "jsonmetric", "records", "budget", "schemas", "__init__"},
]


def name(path: Path) -> str:
    """``git_autoresearch/commands/loop.py`` -> ``commands.loop``."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def room(module: str) -> str:
    """The rule's unit: the top-level module, or ``commands`` for the whole subpackage."""
    return module.split(".")[0]


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every import in ``path`` (module-level and inside functions): the package module it
    names (resolved from relative form, ``""`` for the package itself or an outside library
    by its own name) and the names it takes."""
    out: list[tuple[str, list[str]]] = []
    here = name(path).split(".")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level]
                target = ".".join([*base, *(node.module or "").split(".")]).strip(".")
                out.append(("git_autoresearch." + target if target else "git_autoresearch",
                            [alias.name for alias in node.names]))
            else:
                out.append((node.module or "", [alias.name for alias in node.names]))
    return out


def package_imports(path: Path) -> set[str]:
    """The rooms of the package ``path`` imports (``from . import ledger`` counts as
    ``ledger``)."""
    found = set()
    for module, names in imports(path):
        if module == "git_autoresearch":
            found.update(names)
        elif module.startswith("git_autoresearch."):
            found.add(room(module.removeprefix("git_autoresearch.")))
    return found


def layer(module: str) -> int:
    return next(i for i, rooms in enumerate(LAYERS) if module in rooms)


def test_every_module_has_a_layer() -> None:
    placed = set().union(*LAYERS)
    assert {room(name(p)) for p in MODULES} == placed, "place new modules in LAYERS (and README)"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_imports_point_down_the_layers(path: Path) -> None:
    here = layer(room(name(path)))
    upward = sorted(m for m in package_imports(path) if m in set().union(*LAYERS)
                    and layer(m) < here)
    assert not upward, f"{name(path)} reaches up to {upward}"


def test_every_room_a_rule_names_exists() -> None:
    present = {room(name(p)) for p in MODULES}
    for rule in (CLI, VIEWS, FORMATS, PROTOCOL, {"git", "session", "measure", "hooks",
                                                 "journal", "trailers"}):
        assert rule <= present, f"a rule names a module that is gone: {rule - present}"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_click_is_imported_only_by_the_command_line_layer(path: Path) -> None:
    if room(name(path)) in CLI:
        return
    assert not any(module.split(".")[0] == "click" for module, _ in imports(path))


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_only_the_git_store_builds_git_argv(path: Path) -> None:
    if room(name(path)) == "git":
        return
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\brepo\.run\(|\brun_git\b|\[\s*[\"']git[\"']\s*,", text), \
        f"{name(path)} builds a git command line: add a typed method to git.Repo"


@pytest.mark.parametrize("path", [p for p in MODULES if room(name(p)) == "git"], ids=name)
def test_the_git_store_knows_no_session_concept(path: Path) -> None:
    """After git-machete's prohibit-fork-point-in-git check: no ref name, trailer key or room
    of the session in the git store."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"refs/autoresearch|Autoresearch-|[\"']Result:", text)
    assert package_imports(path) <= {"git", "signals", "errors", "files"}


@pytest.mark.parametrize("path", [p for p in MODULES if room(name(p)) in VIEWS], ids=name)
def test_views_never_run_git(path: Path) -> None:
    assert not package_imports(path) & {"git", "session", "experiment", "trailers", "state"}


@pytest.mark.parametrize("path", [p for p in MODULES if room(name(p)) in FORMATS], ids=name)
def test_formats_and_paths_stay_below_git_and_the_session(path: Path) -> None:
    assert not package_imports(path) & {"git", "session", "experiment", *PROTOCOL}


@pytest.mark.parametrize("path", [p for p in MODULES if room(name(p)) == "commands"], ids=name)
def test_commands_reach_git_only_through_the_core(path: Path) -> None:
    assert "git" not in package_imports(path)


def test_the_open_session_never_reaches_up_into_the_protocol() -> None:
    assert not package_imports(PACKAGE / "session.py") & PROTOCOL


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_no_private_name_is_imported_from_another_module(path: Path) -> None:
    private = [(module, n) for module, names in imports(path) for n in names
               if module.startswith("git_autoresearch") and n.startswith("_")
               and n != "__version__"]
    assert not private, f"make these public where they belong: {private}"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_no_function_outgrows_one_reading(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [(node.name, (node.end_lineno or node.lineno) - node.lineno + 1)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{name(path)}: split these along their steps: {long}"

"""The package's dependency rules, as CONTRIBUTING.md, "How it is built", draws them: checked on the
source, so that a change that breaks a rule fails here and not in review.

A rule's unit is a room: a folder (``ledger``, ``measure``, ``commands``, ``git``) or one of
the entry points at the package's root (``cli``, ``__main__``, ``__init__``). A rule names
rooms, or single modules of a folder (``review.report``, ``ledger.__init__``) where the folder
holds more than the rule covers. Each rule names modules and rooms that must exist (a rename
cannot make a rule pass by leaving it nothing to check).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "git_autoresearch"
MODULES = sorted(PACKAGE.rglob("*.py"))

# The command-line layer: parses options and renders; the only place click is imported.
CLI = {"cli", "commands"}
# Views: read a Ledger, return data and text; never run git.
VIEWS = {"review.dashboard", "review.analysis", "review.plot", "review.query",
         "review.query_format", "review.report"}
# Leaves below the session protocol: formats and paths, no git and no session.
FORMATS = {"decide.rules", "history.refs", "ledger.__init__", "ledger.confidence",
           "ledger.jsontext", "measure.jsonmetric", "measure.scoring",
           "runtime.errors", "runtime.atomic", "runtime.bounds", "runtime.scope", "session.config"}
# The session protocol's rooms; the read side (the open session) never reaches up into them.
PROTOCOL = {"decide.choice", "lifecycle.doctor", "lifecycle.resume", "lifecycle.start",
            "measure.worktree", "record.transaction", "record.recovery"}
# What reaches git or the open session (views and formats never import them).
GIT_AND_SESSION = {"git", "history.experiment", "history.state_ref", "history.trailers",
                   "session.session"}
# The git store imports only itself and these leaves.
BELOW_THE_STORE = {"runtime.errors", "runtime.atomic", "runtime.signals"}
# A module is as long as its one job needs; a function stays short enough to read whole.
MAX_FUNCTION_LINES = 80
# A folder a reader can scan in one look; the package's root holds only the entry points.
MAX_FOLDER_MODULES = 15
ENTRY_POINTS = {"__init__", "__main__", "cli"}
# The layers of CONTRIBUTING.md, "How it is built", top to bottom: a module imports from its
# own layer or those below, never from one above. A folder whose modules all sit at one layer
# is named whole; the others are placed module by module (``measure.worktree``), and such a
# folder's ``__init__`` (its docstring) sits at its lowest module's layer.
LAYERS = [
    {"__main__", "cli", "commands", "mcp_server"},
    {"hooks.guard", "lifecycle.demo", "lifecycle.doctor", "lifecycle.resume", "lifecycle.start",
     "lifecycle.start_intent", "lifecycle.segment_commit", "record.iteration", "review.apply",
     "review.audit", "review.finalize", "review.run_commits", "review.status", "workers.sessions",
     "workers.join", "workers.measurer", "workers.pool", "workers.push_pull"},
    {"decide.choice", "measure.incumbent", "measure.worktree", "record.transaction",
     "record.recovery", "workers.upstream", "workers.replay"},
    {"decide.stopping", "history.checkouts", "hooks.payload", "record.intents",
     "session.branches", "session.for_reading", "session.session"},
    {"history.experiment", "history.queue", "history.remote_ledger", "history.state_ref",
     "history.trailers",
     "hooks.skill", "hooks.user", "lifecycle.importers", "measure.runner",
     "measure.samples", "measure.slots", "review.dashboard", "review.analysis", "review.plot",
     "review.query", "review.query_format", "review.report", "review.pr_body", "session.ideas",
     "session.command_files", "session.layout", "session.lock", "session.shared",
     "workers.claims"},
    {"__init__", "decide.budget", "decide.rules", "git", "history.refs", "ledger",
     "measure.jsonmetric", "measure.scoring", "runtime", "session.config"},
]


def name(path: Path) -> str:
    """``git_autoresearch/commands/loop.py`` -> ``commands.loop``, ``ledger/__init__.py`` ->
    ``ledger.__init__``."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


NAMES = {name(p) for p in MODULES}


def room(module: str) -> str:
    """The rule's unit: the folder, or the root's module (``cli``, ``__main__``,
    ``__init__``)."""
    return module.split(".")[0]


ROOMS = {room(m) for m in NAMES}
FOLDERS = {room(m) for m in NAMES if "." in m}


def covered(module: str, rule: set[str]) -> bool:
    """Whether ``rule`` names ``module`` or its room."""
    return module in rule or room(module) in rule


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every import in ``path`` (module-level and inside functions): the package module it
    names (resolved from relative form, ``""`` for the package itself or an outside library
    by its own name) and the names it takes."""
    out: list[tuple[str, list[str]]] = []
    here = list(path.relative_to(PACKAGE).parent.parts)  # the package of ``path``
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                target = ".".join([*base, *(node.module or "").split(".")]).strip(".")
                out.append(("git_autoresearch." + target if target else "git_autoresearch",
                            [alias.name for alias in node.names]))
            else:
                out.append((node.module or "", [alias.name for alias in node.names]))
    return out


def package_imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, by :func:`name`: ``from ..ledger import records``
    counts as ``ledger.records``, ``from ..ledger import parse`` and ``from .. import ledger``
    as ``ledger.__init__``, ``from .. import __version__`` as ``__init__``."""
    found = set()
    for module, names in imports(path):
        if module != "git_autoresearch" and not module.startswith("git_autoresearch."):
            continue
        target = module.removeprefix("git_autoresearch").removeprefix(".")
        own = f"{target}.__init__" if target else "__init__"
        for imported in names or [""]:
            sub = f"{target}.{imported}".strip(".")
            found.add(next((m for m in (sub, f"{sub}.__init__") if imported and m in NAMES),
                           own if own in NAMES else target))
    return found


def layer(module: str) -> int:
    """The layer of ``module``: its own entry in LAYERS, else its folder's; the ``__init__`` of
    a folder placed module by module, its lowest module's."""
    for key in (module, room(module)):
        found = [i for i, names in enumerate(LAYERS) if key in names]
        if found:
            return found[0]
    return max(i for i, names in enumerate(LAYERS) for n in names if room(n) == room(module))


def layer_paragraph(folder: str) -> str:
    """The paragraph of ``folder``'s docstring that places its modules in LAYERS (counted from
    1) and names those its formats, views and protocol modules, as the rules here define them;
    one line, whitespace collapsed."""
    modules = sorted(n.split(".", 1)[1] for n in NAMES
                     if room(n) == folder and not n.endswith("__init__"))
    by_layer: dict[int, list[str]] = {}
    for module in modules:
        by_layer.setdefault(layer(f"{folder}.{module}") + 1, []).append(module)
    where = 'CONTRIBUTING.md, "How it is built"'
    if len(by_layer) == 1:
        only = next(iter(by_layer))
        text = f"Layer {only} of {where}: it imports only from layer {only} or below;"
    else:
        parts = [f"{n} ({', '.join(ms)})" for n, ms in sorted(by_layer.items())]
        text = (f"Its modules sit at layers {', '.join(parts[:-1])} and {parts[-1]} of {where}: "
                "each imports only from its own layer or below;")
    text += " no click, and no git command line (git.Repo's typed methods)."
    rules = ((FORMATS, "Its formats ({}) import neither git/, the open session nor the session "
                       "protocol."),
             (VIEWS, "Its views ({}) never import git/, the open session or the history that "
                     "runs git."),
             (PROTOCOL, "Its modules of the session protocol ({}) are never imported by the open "
                        "session (session.session)."))
    for rule, sentence in rules:
        named = modules if folder in rule else sorted(
            m.split(".", 1)[1] for m in rule if m.startswith(folder + "."))
        if named:
            text += " " + sentence.format(
                ", ".join("this module" if m == "__init__" else m for m in named))
    return text


def test_each_folder_says_where_its_modules_sit() -> None:
    """A folder's docstring places its modules in the layers above and names its formats,
    views and protocol modules: a module added, moved or renamed without its folder's docstring
    fails here."""
    for folder in sorted(FOLDERS - {"commands", "git"}):
        text = (PACKAGE / folder / "__init__.py").read_text(encoding="utf-8")
        assert layer_paragraph(folder) in " ".join(text.split()), folder


def test_the_root_holds_the_entry_points_and_each_folder_one_job() -> None:
    """Every other module sits in a job's folder (one level, with a docstring saying the
    job), and no folder grows past what a reader scans in one look."""
    assert {n for n in NAMES if "." not in n} == ENTRY_POINTS
    for folder in FOLDERS:
        inside = [n for n in NAMES if room(n) == folder]
        assert all(n.count(".") == 1 for n in inside), f"{folder}/ holds a folder"
        assert len(inside) <= MAX_FOLDER_MODULES, f"{folder}/ holds {len(inside)} modules"
        assert f"{folder}.__init__" in inside and \
            (PACKAGE / folder / "__init__.py").read_text(encoding="utf-8").startswith('"""')


def test_every_module_has_a_layer() -> None:
    placed = set().union(*LAYERS)
    folders = {room(n) for n in placed}  # a folder placed module by module has its __init__
    assert {m for m in NAMES if not covered(m, placed)
            and not (m.endswith(".__init__") and room(m) in folders)} == set(), \
        "place new modules in LAYERS (and CONTRIBUTING.md)"
    assert placed <= NAMES | ROOMS, f"LAYERS names what is gone: {placed - NAMES - ROOMS}"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_imports_point_down_the_layers(path: Path) -> None:
    here = layer(name(path))
    upward = sorted(m for m in package_imports(path) if layer(m) < here)
    assert not upward, f"{name(path)} reaches up to {upward}"


def test_every_room_a_rule_names_exists() -> None:
    for rule in (CLI, VIEWS, FORMATS, PROTOCOL, GIT_AND_SESSION, BELOW_THE_STORE,
                 {"git", "history.trailers", "hooks.user", "measure.samples", "record.intents",
                  "session.session"}):
        assert rule <= NAMES | ROOMS, f"a rule names a module that is gone: {rule - NAMES - ROOMS}"


@pytest.mark.parametrize("path", MODULES, ids=name)
def test_click_is_imported_only_by_the_command_line_layer(path: Path) -> None:
    if covered(name(path), CLI):
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
    assert {m for m in package_imports(path) if not covered(m, {"git", *BELOW_THE_STORE})} \
        == set()


@pytest.mark.parametrize("path", [p for p in MODULES if covered(name(p), VIEWS)], ids=name)
def test_views_never_run_git(path: Path) -> None:
    assert {m for m in package_imports(path) if covered(m, GIT_AND_SESSION)} == set()


@pytest.mark.parametrize("path", [p for p in MODULES if covered(name(p), FORMATS)], ids=name)
def test_formats_and_paths_stay_below_git_and_the_session(path: Path) -> None:
    assert {m for m in package_imports(path)
            if covered(m, {"git", "session.session", "history.experiment", *PROTOCOL})} == set()


@pytest.mark.parametrize("path", [p for p in MODULES if room(name(p)) == "commands"], ids=name)
def test_commands_reach_git_only_through_the_core(path: Path) -> None:
    assert "git" not in {room(m) for m in package_imports(path)}


def test_the_open_session_never_reaches_up_into_the_protocol() -> None:
    session = PACKAGE / "session" / "session.py"
    assert {m for m in package_imports(session) if covered(m, PROTOCOL)} == set()


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


# Import cycles still to break (each listed once, as its modules, sorted): none. A new cycle
# fails the test below; a cycle broken must leave this list.
KNOWN_CYCLES: set[tuple[str, ...]] = set()


def import_cycles() -> set[tuple[str, ...]]:
    """The cycles of the package's imports (:func:`package_imports`: module level, inside
    functions and under ``TYPE_CHECKING`` alike), :func:`cycles_of` its graph."""
    return cycles_of({name(p): package_imports(p) - {name(p)} for p in MODULES})


def cycles_of(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The strongly connected groups of more than one node of ``graph`` (node -> the nodes
    it imports), each as its sorted names (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.add(tuple(sorted(group)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_but_the_known_ones() -> None:
    assert import_cycles() == KNOWN_CYCLES


def test_the_finder_sees_cycles_and_only_them() -> None:
    assert cycles_of({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}) == \
        {("a", "b", "c")}
    assert cycles_of({"a": {"b"}, "b": set()}) == set()
    assert cycles_of({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == {("a", "b"), ("c", "d")}


def test_an_import_inside_a_function_is_an_edge() -> None:
    """The graph counts imports inside functions (where cycles hide): the loop's iteration
    imports the workers' replay only inside the functions a worker runs."""
    iteration = PACKAGE / "record" / "iteration.py"
    top_level = ast.parse(iteration.read_text(encoding="utf-8")).body
    assert not any(isinstance(n, ast.ImportFrom) and n.module == "workers.replay"
                   for n in top_level)
    assert "workers.replay" in package_imports(iteration)


# What one iteration of the loop is made of: the core's, which the command line calls
# (record.iteration) and never does itself.
ITERATION_PARTS = {"record.transaction", "record.recovery", "measure.worktree", "hooks.payload",
                   "decide.stopping", "workers.replay", "workers.upstream"}


def test_the_loop_iteration_is_the_cores() -> None:
    loop = PACKAGE / "commands" / "loop.py"
    assert "record.iteration" in package_imports(loop)
    assert package_imports(loop) & ITERATION_PARTS <= {"hooks.payload", "record.recovery"}, \
        "run, measure, keep and discard call record.iteration"
    assert ITERATION_PARTS <= NAMES


def test_a_run_without_workers_never_loads_them(repo: Path) -> None:
    """A session with no worker goes straight to the recording: one run that keeps loads no
    module of the workers' folder (and nothing for linked worktrees or remotes)."""
    from conftest import start_args, write

    top = repo
    tool = [sys.executable, "-m", "git_autoresearch"]
    subprocess.run([*tool, *start_args()], cwd=top, check=True, capture_output=True)
    write(top / "value.txt", "90\n")
    probe = ("import sys\nfrom git_autoresearch import cli, commands\n"
             "cli.invoke(commands.cli, 'git autoresearch', ['run', '-d', 'ninety'])\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('git_autoresearch'))),"
             " file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=top, capture_output=True,
                          text=True, check=True)
    loaded = done.stderr.split()
    assert "git_autoresearch.record.transaction" in loaded and "keep" in done.stdout
    assert [m for m in loaded if m.startswith("git_autoresearch.workers")
            or m in ("git_autoresearch.git.worktrees", "git_autoresearch.git.remote",
                     "git_autoresearch.history.remote_ledger")] == []

"""Mutation testing: would the suite notice if a line of the product were wrong?

    python bench/mutation.py MODULE... [--sample N] [--seed S] [--json] [--jobs 2]
                             [--timeout S] [--max-tests N] [--prefer TEST_FILE]...
                             [--only MODULE:LINE]...
                             [--refresh] [--root DIR] [--marks FILE]

MODULE is a path relative to the root (``git_autoresearch/ledger/__init__.py``). Each mutant is one
small change of the module's syntax tree:

- a comparison flipped (``<`` -> ``>=``, ``==`` -> ``!=``, ``in`` -> ``not in``, ``is`` ->
  ``is not``) or moved across its boundary (``<`` -> ``<=``, ``>`` -> ``>=`` and back);
- a condition negated (``if``, ``while``, ``assert``, conditional expressions, comprehension
  filters);
- a number one more or one less, ``True`` and ``False`` swapped;
- a statement dropped (expressions, assignments, ``raise``, ``del``, ``break``, ``continue``);
- ``and`` and ``or`` swapped;
- a return value replaced by ``None``.

Each mutant is written into a copy of the tree (one copy per job; the real tree is never
changed) and runs against only the tests that run its lines, fastest first, stopping at the
first failure: a failure kills it, a clean pass means it survived, and a run longer than the
timeout is reported as timed out (counted as caught in the score). The tests and every process
they start import the copy: ``PYTHONPATH`` names it, ahead of the editable install's ``.pth``.
The score is ``(killed + timed out) / (mutants - equivalent)``; a mutant that no test runs
counts as a survivor and is listed as such.

Mutants that no test can tell from the original (a cache size, a message's wording, a bound
that cannot be reached) are listed beside this tool, in ``bench/equivalent_mutants.toml`` under
the root (``--marks FILE`` names another), never in the product's source. Each ``[[equivalent]]``
entry names a ``module``, the ``scope`` (the qualified name of the function or class the line is
in, ``""`` at module level), the ``line``'s text without its indentation, the ``reason``, and
optionally ``only`` (the mutants it covers, in the report's words: ```1` -> `2```, ``statement
dropped``; without it, every mutant of the line) and ``occurrence`` (which of several identical
lines of that scope, from 1). The mutants it covers are reported as equivalent and left out of the
score; an entry that matches no line, or several, is an error (exit 2) naming it.

Which tests run which lines comes from one coverage run of the whole suite in the copy, with one
coverage context per test that reaches the subprocesses the test starts (the plugin
``bench/mutation_plugin.py``; coverage.py, in the ``test`` extra, starts in every Python process
through its ``.pth`` file and ``COVERAGE_PROCESS_START``). Tests that fail in that run are never
used. The map is cached in ``.mutation/coverage-<key>.json`` under the root, the key being a
hash of every file of the copied tree but the test modules and this tool's own files, and of
the measured packages: a change to the product, to ``tests/conftest.py`` or to
the fixtures makes a new map on the next run, and a test module changed, added or removed since
the cached map runs again alone, its part of the map replaced. ``--refresh`` makes the whole map
again regardless (or delete ``.mutation/``).

``--max-tests N`` runs only the N fastest covering tests of each mutant: quicker, and the score
is then a lower bound; ``--prefer tests/record/test_transaction.py`` puts that file's covering
tests first (the tests written for the module at hand; several files in the order given). Exit
status: 0 once the report is printed, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import ast
import copy
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARKS = Path("bench") / "equivalent_mutants.toml"
IGNORED = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".mutation", ".mypy_cache",
                                 ".ruff_cache", ".pytest_cache", ".hypothesis", "*.pyc",
                                 "*.egg-info", "build", "dist")
NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
    ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SYMBOL = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
          ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
# Plugins a mutant's run does without (it starts faster): no test uses their fixtures, and
# hypothesis runs without its pytest plugin. Given as -p options, never inherited by the tests'
# own pytest subprocesses.
FAST = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:xdist", "-p",
        "no:xdist.looponfail")
DROPPABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Raise, ast.Delete,
             ast.Break, ast.Continue)


@dataclass
class Mutant:
    """One change: the bytes ``start``..``end`` of ``path`` (relative to the root) become
    ``replacement``; ``lines`` are the source lines the changed node spans."""

    path: str
    line: int
    lines: tuple[int, int]
    start: int
    end: int
    replacement: str
    description: str
    status: str = "pending"
    reason: str = ""
    tests: int = 0
    seconds: float = 0.0
    killed_by: str = ""

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class _Site:
    source: bytes
    path: str
    offsets: list[int] = field(default_factory=list)
    found: list[Mutant] = field(default_factory=list)

    def __post_init__(self) -> None:
        position = 0
        for line in self.source.splitlines(keepends=True):
            self.offsets.append(position)
            position += len(line)
        self.offsets.append(position)

    def add(self, node: ast.AST, replacement: str, description: str) -> None:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        start = self.offsets[line - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.offsets[end_line - 1] + (node.end_col_offset or 0)  # type: ignore[attr-defined]
        self.found.append(Mutant(self.path, line, (line, end_line), start, end, replacement,
                                 description))

    def text(self, node: ast.AST) -> str:
        start = self.offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = self.offsets[(node.end_lineno or 1) - 1] + (node.end_col_offset or 0)  # type: ignore
        return self.source[start:end].decode("utf-8")


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _mutate(site: _Site, node: ast.AST) -> None:
    if isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            for table in (NEGATED, BOUNDARY):
                other = table.get(type(op))
                if other is None:
                    continue
                changed = copy.deepcopy(node)
                changed.ops[index] = other()
                site.add(node, f"({ast.unparse(changed)})",
                         f"`{SYMBOL[type(op)]}` -> `{SYMBOL[other]}`")
    elif isinstance(node, ast.BoolOp):
        changed = copy.deepcopy(node)
        changed.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        names = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        site.add(node, f"({ast.unparse(changed)})", f"`{names[0]}` -> `{names[1]}`")
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        site.add(node, repr(not node.value), f"`{node.value}` -> `{not node.value}`")
    elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        for delta in (1, -1):
            value = node.value + delta
            site.add(node, f"({value!r})", f"`{node.value!r}` -> `{value!r}`")


def _condition(site: _Site, test: ast.expr) -> None:
    site.add(test, f"not ({site.text(test)})", "condition negated")


def _walk(site: _Site, node: ast.AST) -> None:
    """Collect the mutants of ``node`` and its children, leaving out annotations, f-strings,
    docstrings and ``if TYPE_CHECKING:`` blocks."""
    if isinstance(node, ast.JoinedStr):
        return
    if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
            and node.test.id == "TYPE_CHECKING":
        return
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        _condition(site, node.test)
    if isinstance(node, ast.comprehension):
        for test in node.ifs:
            _condition(site, test)
    if isinstance(node, ast.Return) and node.value is not None \
            and not (isinstance(node.value, ast.Constant) and node.value.value is None):
        site.add(node, "return None", "return value -> `None`")
    if isinstance(node, DROPPABLE) and not _is_docstring(node) \
            and not (isinstance(node, ast.AnnAssign) and node.value is None):
        site.add(node, "pass", "statement dropped")
    _mutate(site, node)
    for name, value in ast.iter_fields(node):
        if name in ("annotation", "returns", "type_comment", "decorator_list"):
            continue
        if isinstance(node, ast.AnnAssign) and name == "target":
            continue
        children = value if isinstance(value, list) else [value]
        for child in children:
            if isinstance(child, ast.AST):
                _walk(site, child)


class MarkError(Exception):
    """An entry of the equivalent mutants' list that matches no line of its module, or several."""


@dataclass(frozen=True)
class Mark:
    """One ``[[equivalent]]`` entry of the marks file (see the module's docstring)."""

    module: str
    scope: str
    line: str
    reason: str
    only: tuple[str, ...] = ()
    occurrence: int = 0

    def covers(self, mutant: Mutant) -> bool:
        return not self.only or mutant.description in self.only


def read_marks(path: Path) -> list[Mark]:
    """The entries of the marks file ``path`` (none if there is no such file)."""
    if not path.is_file():
        return []
    import tomllib

    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("equivalent", [])
    return [Mark(e["module"], e.get("scope", ""), e["line"], e["reason"],
                 tuple(e.get("only", ())), e.get("occurrence", 0)) for e in entries]


def _scopes(tree: ast.AST) -> list[tuple[int, int, str]]:
    """``(first line, last line, qualified name)`` of every function and class of ``tree``."""
    found: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.append((child.lineno, child.end_lineno or child.lineno,
                              prefix + child.name))
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


def place_marks(source: bytes, marks: Sequence[Mark]) -> dict[int, list[Mark]]:
    """The line (from 1) each of ``marks`` stands on in ``source``. Raises :class:`MarkError`
    for a mark that matches no line, or several without an ``occurrence``."""
    scopes = _scopes(ast.parse(source))

    def scope_of(number: int) -> str:
        inside = [name for first, last, name in scopes if first <= number <= last]
        return max(inside, key=len, default="")

    texts = source.decode("utf-8").splitlines()
    placed: dict[int, list[Mark]] = {}
    for mark in marks:
        lines = [n for n, text in enumerate(texts, 1)
                 if text.strip() == mark.line and scope_of(n) == mark.scope]
        if mark.occurrence:
            lines = lines[mark.occurrence - 1:mark.occurrence]
        if len(lines) != 1:
            what = "no line" if not lines else f"{len(lines)} lines (give an occurrence)"
            raise MarkError(f"{mark.module}: the mark of {mark.line!r} in "
                            f"{mark.scope or 'the module'} matches {what}")
        placed.setdefault(lines[0], []).append(mark)
    return placed


def mutants_of(root: Path, path: str, marks: Sequence[Mark] = ()) -> list[Mutant]:
    """Every mutant of the module ``root / path``, in source order; those an entry of
    ``marks`` covers come back with status ``equivalent``. Mutants whose source does not
    compile are left out. Raises :class:`MarkError` for a mark of ``path`` that is stale."""
    source = (root / path).read_bytes()
    site = _Site(source, path)
    _walk(site, ast.parse(source))
    placed = place_marks(source, [m for m in marks if m.module == path])
    kept = []
    for mutant in sorted(site.found, key=lambda m: (m.start, m.end, m.description)):
        try:
            compile(apply(source, mutant), path, "exec", dont_inherit=True)
        except SyntaxError:
            continue
        for number in range(mutant.lines[0], mutant.lines[1] + 1):
            for mark in placed.get(number, ()):
                if mark.covers(mutant):
                    mutant.status, mutant.reason = "equivalent", mark.reason
        kept.append(mutant)
    return kept


def apply(source: bytes, mutant: Mutant) -> bytes:
    return source[:mutant.start] + mutant.replacement.encode("utf-8") + source[mutant.end:]


# --- the copy of the tree and the coverage map ------------------------------------------------

def tree_hashes(root: Path, packages: list[str]) -> tuple[str, dict[str, str]]:
    """``(key, test files)``: a hash of every file of the tree but the test modules and this
    tool's own files and of the measured ``packages``, and the hash of each test module
    (``test_*.py`` under ``tests/``)."""
    digest = hashlib.sha256("\0".join(sorted(packages)).encode())
    modules: dict[str, str] = {}
    for directory, names, files in os.walk(root):
        names[:] = sorted(n for n in names if not IGNORED(directory, [n]))
        for name in sorted(files):
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if IGNORED(directory, [name]) or path == Path(__file__).resolve() \
                    or relative == MARKS.as_posix():
                continue
            data = path.read_bytes()
            if relative.startswith("tests/") and name.startswith("test_") \
                    and name.endswith(".py"):
                modules[relative] = hashlib.sha256(data).hexdigest()
                continue
            digest.update(relative.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:20], modules


def _python_env(tree: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COVERAGE_") and k not in ("PYTHONPATH", "MUTATION_REPORT")}
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(Path(__file__).resolve().parent)])
    env.update(extra)
    return env


def coverage_map(root: Path, tree: Path, packages: list[str], jobs: int,
                 refresh: bool) -> dict[str, Any]:
    """``{"tests": {node id: {"outcome", "duration"}}, "lines": {path: {line: [node id]}},
    "files": {test module: hash}}`` for the tree at ``root``. From the cache when it has the map
    for this content; when only test modules changed (or were added or removed) since the
    cached map, only those modules run again and their part of the map is replaced."""
    key, modules = tree_hashes(root, packages)
    cache = root / ".mutation" / f"coverage-{key}.json"
    old: dict[str, Any] | None = None
    if cache.exists() and not refresh:
        old = json.loads(cache.read_text())
    if old is not None and old.get("files") == modules:
        return old
    changed = sorted(f for f, h in modules.items() if old is None or old["files"].get(f) != h)
    result = _measure(tree, packages, jobs, changed if old is not None else ["tests"], cache)
    if old is not None:
        stale = set(old["files"]) - set(modules) | set(changed)
        mine = {t for t in old["tests"] if t.split("::")[0] in stale}
        result["tests"] = {**{t: v for t, v in old["tests"].items() if t not in mine},
                           **result["tests"]}
        for path, by_line in old["lines"].items():
            into = result["lines"].setdefault(path, {})
            for number, tests in by_line.items():
                kept = [t for t in tests if t not in mine]
                into[number] = sorted(set(into.get(number, [])) | set(kept))
    result["files"] = modules
    result["key"] = key
    cache.parent.mkdir(exist_ok=True)
    cache.write_text(json.dumps(result))
    return result


def _measure(tree: Path, packages: list[str], jobs: int, targets: list[str],
             cache: Path) -> dict[str, Any]:
    """The map of :func:`coverage_map` from one coverage run of the tests ``targets`` (paths
    relative to ``tree``) in ``tree``."""
    work = Path(tempfile.mkdtemp(prefix="mutation-coverage-"))
    try:
        rc = work / "coveragerc"
        rc.write_text("[run]\n"
                      f"data_file = {work / 'data' / '.coverage'}\n"
                      "parallel = true\n"
                      "sigterm = true\n"
                      "context = ${MUTATION_TEST}\n"
                      f"source = {','.join(str(tree / p) for p in packages)}\n")
        (work / "data").mkdir()
        report = work / "outcomes.json"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "mutation_plugin", "-p",
                   "no:cacheprovider", "-o", "addopts=", *(["-n", str(jobs)] if jobs > 1 else []),
                   *targets]
        print(f"coverage run: {' '.join(command[1:])} (in a copy; cached as {cache.name})",
              file=sys.stderr, flush=True)
        began = time.monotonic()
        subprocess.run(command, cwd=tree, stdout=subprocess.DEVNULL,
                       env=_python_env(tree, COVERAGE_PROCESS_START=str(rc),
                                       MUTATION_REPORT=str(report), MUTATION_TEST=""))
        import coverage
        cov = coverage.Coverage(config_file=str(rc), data_file=str(work / "data" / ".coverage"))
        cov.combine(data_paths=[str(work / "data")])
        data = cov.get_data()
        lines: dict[str, dict[str, list[str]]] = {}
        for measured in data.measured_files():
            relative = Path(measured).resolve()
            if not relative.is_relative_to(tree.resolve()):
                raise SystemExit(f"mutation: coverage saw {measured} outside the copy: the tests "
                                 "import the package from elsewhere")
            by_line = data.contexts_by_lineno(measured)
            lines[relative.relative_to(tree.resolve()).as_posix()] = {
                str(n): sorted(set(ctx)) for n, ctx in by_line.items()}
        outcomes = json.loads(report.read_text()) if report.exists() else {}
        return {"tests": outcomes, "lines": lines,
                "seconds": round(time.monotonic() - began, 1)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def import_uses(source: bytes) -> dict[int, set[int]]:
    """For each line of a module-level statement that runs when the module is imported, the
    lines whose running shows what it did: for ``NAME = ...`` the lines that read ``NAME``,
    for a ``def`` or ``class`` header (default values, decorators, bases) its body, for a
    statement of a class body outside its methods (a dataclass field) the lines that name the
    class."""
    tree = ast.parse(source)
    loads: dict[str, set[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, set()).add(node.lineno)
    uses: dict[int, set[int]] = {}
    for stmt in tree.body:
        end = stmt.end_lineno or stmt.lineno
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            used = set().union(*(loads.get(n, set()) for n in names)) - set(
                range(stmt.lineno, end + 1))
            for line in range(stmt.lineno, end + 1):
                uses[line] = used
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            _header_uses(stmt, uses)
            if isinstance(stmt, ast.ClassDef):  # a field or class constant: where it is used
                users = loads.get(stmt.name, set())
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        _header_uses(item, uses)  # a method's defaults: its body
                    else:
                        spans = set(range(item.lineno, (item.end_lineno or item.lineno) + 1))
                        for line in spans:
                            uses[line] = users - spans
    return uses


def _header_uses(stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                 uses: dict[int, set[int]]) -> None:
    """Charge the header lines of a ``def`` or ``class`` (decorators, default values, bases),
    which run when it is defined, to its body's lines."""
    end = stmt.end_lineno or stmt.lineno
    first = min([stmt.body[0].lineno, *(d.lineno for d in stmt.decorator_list)])
    header = range(first, stmt.body[0].lineno)
    for line in range(min(first, stmt.lineno), stmt.body[0].lineno):
        uses[line] = set(range(stmt.body[0].lineno, end + 1)) - set(header)


def _users(line: int, uses: dict[int, set[int]]) -> set[int]:
    """The lines that use import-time line ``line`` (:func:`import_uses`), and the lines that
    use those that run at import too (a constant read by a default value: the function's
    body)."""
    found: set[int] = set()
    todo = [line]
    while todo:
        for user in uses.get(todo.pop(), set()):
            if user not in found:
                found.add(user)
                todo.append(user)
    return found


def covering_tests(mutant: Mutant, cmap: dict[str, Any], uses: dict[int, set[int]] | None = None,
                   prefer: Sequence[str] = (),
                   killers: Mapping[str, int] | None = None) -> list[str]:
    """The passing tests that run one of the mutant's lines: those that killed most mutants of its
    module before first (``killers``: a test's kills), then those of the test files ``prefer``
    (in their order), then fastest first. A line that runs while the module is imported (a
    module constant, a default value, a ``def`` header) is charged to the tests that run the
    lines that use it too (:func:`import_uses`): the import itself is charged only to whichever
    test imported the module first in its process (in the pytest process, to none), so a test
    that reads the constant through its users would be left out; a constant no line of its
    module reads (another module reads it), or that no test reaches so, to every test that runs
    a line of the module."""
    by_line: dict[str, list[str]] = cmap["lines"].get(mutant.path, {})
    tests = cmap["tests"]
    found: set[str] = set()
    for number in range(mutant.lines[0], mutant.lines[1] + 1):
        contexts = {c.split("|")[-1] for c in by_line.get(str(number), [])}
        if number in (uses or {}):
            users = _users(number, uses or {})
            contexts |= {c.split("|")[-1] for line in users for c in by_line.get(str(line), [])}
            if not users or not contexts - {""}:  # read from other modules, or by nothing
                contexts |= {c.split("|")[-1] for ctx in by_line.values() for c in ctx}
        found |= contexts - {""}
    usable = [t for t in found if tests.get(t, {}).get("outcome") == "passed"]
    kills = killers or {}
    rank = {name: n for n, name in enumerate(prefer)}
    return sorted(usable, key=lambda t: (-kills.get(t, 0), rank.get(t.split("::")[0], len(rank)),
                                         tests[t]["duration"], t))


def _killers_file(root: Path, module: str) -> Path:
    return root / ".mutation" / f"killers-{module.replace('/', '.')}.json"


def load_killers(root: Path, module: str) -> dict[str, int]:
    """How many mutants of ``module`` each test killed in earlier runs (``.mutation/``): an
    order for the covering tests that kills a mutant with its first test, most often."""
    try:
        found = json.loads(_killers_file(root, module).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in found.items()} if isinstance(found, dict) else {}


# --- running the mutants ----------------------------------------------------------------------

# Set once the run is interrupted (Ctrl-C, SIGTERM): no mutant starts, the running ones'
# pytest process groups (RUNNING) are killed, and those mutants are not judged.
STOP = threading.Event()
RUNNING: set[int] = set()


def run_mutant(mutant: Mutant, tree: Path, tests: list[str], timeout: float) -> None:
    target = tree / mutant.path
    original = target.read_bytes()
    cached = target.parent / "__pycache__"
    target.write_bytes(apply(original, mutant))
    shutil.rmtree(cached, ignore_errors=True)
    began = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o",
             "addopts=", "--no-header", *FAST, *tests],
            cwd=tree, env=_python_env(tree), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        RUNNING.add(proc.pid)
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            mutant.status = "timeout"
            return
        finally:
            RUNNING.discard(proc.pid)
        code = proc.returncode
        if STOP.is_set():
            return  # killed by the interruption: not judged
        # 1: a test failed; 2: collection failed; 4 with a conftest or a test module that cannot
        # be imported (its tests, named by the map, are not found): the mutant breaks an import.
        if code in (1, 2) or (code == 4 and (b"while loading conftest" in output
                                             or b"found no collectors" in output)):
            mutant.status = "killed"
            failed = re.findall(rb"^(?:FAILED|ERROR) (\S+)", output, re.M)
            mutant.killed_by = failed[0].decode("utf-8", "replace") if failed else ""
        elif code == 0:
            mutant.status = "survived"
        else:
            mutant.status = "error"
            mutant.reason = output.decode("utf-8", "replace")[-400:]
    finally:
        mutant.seconds = round(time.monotonic() - began, 1)
        target.write_bytes(original)
        shutil.rmtree(cached, ignore_errors=True)


def summary(mutants: list[Mutant]) -> dict[str, Any]:
    counts = {s: sum(m.status == s for m in mutants)
              for s in ("killed", "survived", "timeout", "equivalent", "error")}
    judged = len(mutants) - counts["equivalent"] - counts["error"]
    caught = counts["killed"] + counts["timeout"]
    score = round(100.0 * caught / judged, 1) if judged else 100.0
    return {"mutants": len(mutants), **counts, "score": score,
            "uncovered": sum(m.status == "survived" and m.tests == 0 for m in mutants)}


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the run stops and reports what it judged."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="+", metavar="MODULE")
    parser.add_argument("--sample", type=int, help="run N mutants drawn at random per module")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float,
                        help="seconds per mutant (default: 3 x its tests' time + 30)")
    parser.add_argument("--max-tests", type=int, help="run only the N fastest covering tests")
    parser.add_argument("--only", action="append", default=[], metavar="MODULE:LINE",
                        help="run only the mutants on these lines (repeatable)")
    parser.add_argument("--prefer", action="append", default=[], metavar="TEST_FILE",
                        help="run the covering tests of this file first (repeatable)")
    parser.add_argument("--refresh", action="store_true", help="make the coverage map again")
    parser.add_argument("--root", type=Path, default=ROOT, help="the project (default: this one)")
    parser.add_argument("--marks", type=Path, metavar="FILE",
                        help=f"the equivalent mutants (default: {MARKS} under the root)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    marks_file = args.marks or root / MARKS
    if args.marks and not args.marks.is_file():
        parser.error(f"no marks file {args.marks}")
    try:
        marks = read_marks(marks_file)
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"cannot read the marks file {marks_file}: {exc}")
    for module in args.modules:
        if not (root / module).is_file() or not module.endswith(".py"):
            parser.error(f"no module {module} under {root}")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")

    chosen: dict[str, list[Mutant]] = {}
    for module in args.modules:
        try:
            found = mutants_of(root, module, marks)
        except MarkError as exc:
            parser.error(str(exc))
        if args.only:
            found = [m for m in found if m.where() in args.only]
        if args.sample is not None and args.sample < len(found):
            picked = set(random.Random(f"{args.seed}:{module}").sample(range(len(found)),
                                                                     args.sample))
            found = [m for i, m in enumerate(found) if i in picked]
        chosen[module] = found

    base = Path(tempfile.mkdtemp(prefix="mutation-"))
    try:
        trees = []
        for slot in range(args.jobs):
            trees.append(base / f"tree-{slot}")
            shutil.copytree(root, trees[-1], ignore=IGNORED, symlinks=True)
        packages = sorted({Path(m).parts[0] for m in args.modules})
        cmap = coverage_map(root, trees[0], packages, args.jobs, args.refresh)
        pending = [m for ms in chosen.values() for m in ms if m.status == "pending"]
        free = list(trees)
        lock = threading.Lock()
        done = [0]

        uses = {module: import_uses((root / module).read_bytes()) for module in chosen}
        killers = {module: load_killers(root, module) for module in chosen}

        def one(mutant: Mutant) -> None:
            if STOP.is_set():
                return
            with lock:
                kills = dict(killers[mutant.path])
            tests = covering_tests(mutant, cmap, uses[mutant.path], args.prefer,
                                   kills)
            if args.max_tests:
                tests = tests[:args.max_tests]
            mutant.tests = len(tests)
            if not tests:
                mutant.status = "survived"
            else:
                budget = args.timeout or 3 * sum(cmap["tests"][t]["duration"] for t in tests) + 30
                with lock:
                    tree = free.pop()
                try:
                    run_mutant(mutant, tree, tests, budget)
                finally:
                    with lock:
                        free.append(tree)
            if mutant.status == "pending":
                return
            with lock:
                if mutant.status == "killed" and mutant.killed_by:
                    known = killers[mutant.path]
                    known[mutant.killed_by] = known.get(mutant.killed_by, 0) + 1
                done[0] += 1
                note = " (no test runs this line)" if not tests else ""
                print(f"[{done[0]}/{len(pending)}] {mutant.status:<8} {mutant.where()} "
                      f"{mutant.description}{note} ({mutant.tests} tests, {mutant.seconds}s)",
                      file=sys.stderr, flush=True)

        previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                try:
                    list(pool.map(one, pending))
                except KeyboardInterrupt:
                    STOP.set()
                    for group in list(RUNNING):
                        try:
                            os.killpg(group, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    print("interrupted: the report counts the mutants judged so far",
                          file=sys.stderr, flush=True)
        finally:
            signal.signal(signal.SIGTERM, previous)
            for module, known in killers.items():
                _killers_file(root, module).parent.mkdir(exist_ok=True)
                _killers_file(root, module).write_text(json.dumps(known, indent=0))
    finally:
        shutil.rmtree(base, ignore_errors=True)

    # After an interruption, the mutants never judged are left out.
    chosen = {name: [m for m in ms if m.status != "pending"] for name, ms in chosen.items()}
    every = [m for ms in chosen.values() for m in ms]
    report = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "interrupted": STOP.is_set(),
              "modules": {name: summary(ms) for name, ms in chosen.items()},
              "total": summary(every),
              "survivors": [asdict(m) for m in every if m.status == "survived"],
              "timeouts": [asdict(m) for m in every if m.status == "timeout"],
              "errors": [asdict(m) for m in every if m.status == "error"],
              "equivalent": [asdict(m) for m in every if m.status == "equivalent"]}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, counts in [*report["modules"].items(), ("total", report["total"])]:
        print(f"{name}: {counts['mutants']} mutants, {counts['killed']} killed, "
              f"{counts['survived']} survived ({counts['uncovered']} on lines no test runs), "
              f"{counts['timeout']} timed out, {counts['equivalent']} equivalent, "
              f"{counts['error']} errors; score {counts['score']}%")
    for kind in ("survivors", "timeouts", "errors"):
        if report[kind]:
            print(f"{kind}:")
        for m in report[kind]:
            note = ", no test runs this line" if m["tests"] == 0 else ""
            print(f"  {m['path']}:{m['line']}: {m['description']} ({m['tests']} tests{note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""bench/mutation.py on a project of one module and one test: a mutant the test catches is
killed, the mutants of a line no test runs survive and are listed as such, and a line listed in
``bench/equivalent_mutants.toml`` is left out of the score; a test module added later runs alone
to update the cached coverage map. Every entry of this repository's own list stands on one line
of its module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import write

TOOL = Path(__file__).resolve().parent.parent / "bench" / "mutation.py"


def test_the_mutation_tool_kills_a_caught_mutant_and_lists_an_untested_line(
        tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "pkg" / "__init__.py", "")
    write(project / "bench" / "equivalent_mutants.toml",
          '[[equivalent]]\nmodule = "pkg/calc.py"\nline = "LIMIT = 10"\n'
          'reason = "no caller reaches the limit"\n')
    write(project / "pkg" / "calc.py",
          "LIMIT = 10\n"
          "\n"
          "\n"
          "def double(x):\n"
          "    return x * 2\n"
          "\n"
          "\n"
          "def triple(x):\n"
          "    return x * 3\n")
    write(project / "tests" / "test_calc.py",
          "from pkg.calc import double\n"
          "\n"
          "\n"
          "def test_double():\n"
          "    assert double(4) == 8\n")
    proc = mutation(project)
    report = json.loads(proc.stdout)
    assert report["modules"]["pkg/calc.py"] == {
        "mutants": 9, "killed": 3, "survived": 3, "timeout": 0, "equivalent": 3, "error": 0,
        "score": 50.0, "uncovered": 3}
    survivors = {(m["line"], m["description"], m["tests"]) for m in report["survivors"]}
    assert survivors == {(9, "return value -> `None`", 0), (9, "`3` -> `4`", 0),
                         (9, "`3` -> `2`", 0)}
    assert {m["reason"] for m in report["equivalent"]} == {"no caller reaches the limit"}
    assert (project / "pkg" / "calc.py").read_text().startswith("LIMIT = 10\n")

    # A test module added later runs alone under coverage; the map of the first run serves
    # for the rest, and the mutants it catches are now killed.
    write(project / "tests" / "test_triple.py",
          "from pkg.calc import triple\n"
          "\n"
          "\n"
          "def test_triple():\n"
          "    assert triple(2) == 6\n")
    again = mutation(project)
    assert "coverage run:" in again.stderr and " tests/test_triple.py " in again.stderr
    assert " tests (" not in again.stderr
    counts = json.loads(again.stdout)["modules"]["pkg/calc.py"]
    assert (counts["killed"], counts["survived"], counts["score"]) == (6, 0, 100.0)


def _tool() -> Any:
    sys.path.insert(0, str(TOOL.parent))
    try:
        import mutation as tool  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    return tool


def test_a_mark_with_only_leaves_the_lines_other_mutants_to_run(tmp_path: Path) -> None:
    """An entry with ``only`` marks those mutants of its line alone: the line's others are
    run (and here killed); ``scope`` and ``occurrence`` pick one of identical lines."""
    tool = _tool()
    write(tmp_path / "pkg" / "calc.py",
          "def half(x):\n"
          "    return x // 2\n"
          "\n"
          "\n"
          "def halves(x):\n"
          "    x = x // 2\n"
          "    return x // 2\n"
          "    return x // 2\n")
    marks = [tool.Mark("pkg/calc.py", "half", "return x // 2", "a test",
                       ("`2` -> `3`", "`2` -> `1`")),
             tool.Mark("pkg/calc.py", "halves", "return x // 2", "unreachable", occurrence=2)]
    found = {(m.line, m.description, m.status, m.reason)
             for m in tool.mutants_of(tmp_path, "pkg/calc.py", marks) if m.line in (2, 7, 8)}
    assert found == {(2, "`2` -> `3`", "equivalent", "a test"),
                     (2, "`2` -> `1`", "equivalent", "a test"),
                     (2, "return value -> `None`", "pending", ""),
                     *{(7, d, "pending", "") for d in
                       ("`2` -> `3`", "`2` -> `1`", "return value -> `None`")},
                     *{(8, d, "equivalent", "unreachable") for d in
                       ("`2` -> `3`", "`2` -> `1`", "return value -> `None`")}}


def test_a_stale_or_ambiguous_mark_is_refused_by_name(tmp_path: Path) -> None:
    """A mark whose line is gone, or that matches two lines without an occurrence, stops the
    tool (exit 2) with the module and line it names, rather than marking nothing or too much."""
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "calc.py", "def f(x):\n    x += 1\n    x += 1\n    return x\n")
    for line, words in (("x -= 1", "matches no line"), ("x += 1", "matches 2 lines")):
        write(tmp_path / "bench" / "equivalent_mutants.toml",
              f'[[equivalent]]\nmodule = "pkg/calc.py"\nscope = "f"\nline = "{line}"\n'
              'reason = "r"\n')
        proc = subprocess.run([sys.executable, str(TOOL), "pkg/calc.py", "--root", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert f"pkg/calc.py: the mark of '{line}' in f {words}" in proc.stderr


def test_every_mark_of_this_repository_stands_on_one_line_of_its_module() -> None:
    """The product's own list: moving or deleting a marked line without its entry fails here,
    not at the next mutation run."""
    tool = _tool()
    root = TOOL.parent.parent
    marks = tool.read_marks(root / tool.MARKS)
    assert marks
    for module in sorted({m.module for m in marks}):
        placed = tool.place_marks((root / module).read_bytes(),
                                  [m for m in marks if m.module == module])
        assert sum(map(len, placed.values())) == len([m for m in marks if m.module == module])


def test_an_interrupted_run_stops_at_once_and_reports_what_it_judged(tmp_path: Path) -> None:
    """SIGTERM (as Ctrl-C) while a mutant's tests run: that run is killed, no other mutant
    starts, and the report counts none of them, saying it was interrupted."""
    import signal
    import time

    project = tmp_path / "project"
    write(project / "pkg" / "__init__.py", "")
    write(project / "pkg" / "calc.py", "def double(x):\n    return x * 2\n")
    write(project / "tests" / "test_calc.py",
          "import os, time\n"
          "from pkg.calc import double\n"
          "\n"
          "\n"
          "def test_double():\n"
          "    if 'MUTATION_REPORT' not in os.environ:  # a mutant's run, not the map's\n"
          "        open(os.environ['STARTED'], 'w').close()\n"
          "        time.sleep(60)\n"
          "    assert double(4) == 8\n")
    started = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, str(TOOL), "--root", str(project), "--jobs", "1",
                             "--json", "pkg/calc.py"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                                 "STARTED": str(started)})
    deadline = time.monotonic() + 90
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started.exists(), "a mutant's tests began"
    began = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - began < 10, "the sleeping test was not waited for"
    assert proc.returncode == 0, err
    assert "interrupted: the report counts the mutants judged so far" in err
    report = json.loads(out)
    assert report["interrupted"] is True
    assert report["modules"]["pkg/calc.py"]["mutants"] == 0


def mutation(project: Path) -> subprocess.CompletedProcess[str]:
    # Without the installed plugins (xdist, hypothesis, benchmark) each pytest starts faster.
    proc = subprocess.run([sys.executable, str(TOOL), "--root", str(project), "--jobs", "1",
                           "--json", "pkg/calc.py"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_constant_read_through_a_default_value_is_charged_to_the_tests_of_its_users() -> None:
    """A module constant runs once, at import, charged to whichever test imported the module
    first; its mutant is run against the tests that run the lines reading it too, through a
    ``def`` header's default value to the function's body."""
    sys.path.insert(0, str(TOOL.parent))
    try:
        import mutation as tool  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(TOOL.parent))
    source = (b"LEVEL = 0.1\n"
              b"\n"
              b"\n"
              b"def keep(p, level=LEVEL):\n"
              b"    return p <= level\n")
    cmap = {"lines": {"m.py": {"1": ["first"], "4": ["first"], "5": ["first", "later"]}},
            "tests": {"first": {"outcome": "passed", "duration": 2.0},
                      "later": {"outcome": "passed", "duration": 1.0}}}
    mutant = tool.Mutant("m.py", 1, (1, 1), 8, 11, "1.1", "`0.1` -> `1.1`")
    assert tool.covering_tests(mutant, cmap, tool.import_uses(source)) == ["later", "first"]
    assert tool.covering_tests(mutant, cmap) == ["first"]
    # A test that killed mutants of the module before runs first, whatever its time.
    assert tool.covering_tests(mutant, cmap, tool.import_uses(source),
                               killers={"first": 2, "gone": 5}) == ["first", "later"]
    # Then the tests of the --prefer files, in the order the files were given.
    files = {"lines": {"m.py": {"5": ["a.py::t", "b.py::t", "c.py::t"]}},
             "tests": {name: {"outcome": "passed", "duration": d}
                       for name, d in (("a.py::t", 1.0), ("b.py::t", 2.0), ("c.py::t", 3.0))}}
    body = tool.Mutant("m.py", 5, (5, 5), 0, 1, "x", "`<=` -> `<`")
    assert tool.covering_tests(body, files, prefer=["c.py", "b.py"]) == [
        "c.py::t", "b.py::t", "a.py::t"]
    assert tool.covering_tests(body, files, prefer=["b.py", "c.py"]) == [
        "b.py::t", "c.py::t", "a.py::t"]
    # A constant that only other modules read: every test that runs a line of the module.
    other = tool.Mutant("m.py", 1, (1, 1), 8, 11, "1.1", "`0.1` -> `1.1`")
    alone = (b"LEVEL = 0.1\n"
             b"\n"
             b"\n"
             b"def keep(p, level=0.1):\n"
             b"    return p <= level\n")
    assert tool.covering_tests(other, cmap, tool.import_uses(alone)) == ["later", "first"]
    # A dataclass field: the tests that run the lines naming the class.
    fields = (b"class Bad:\n"
              b"    line: int\n"
              b"    run: int = 0\n"
              b"\n"
              b"\n"
              b"def make():\n"
              b"    return Bad(1, 2)\n")
    field_map = {"lines": {"m.py": {"3": ["first"], "7": ["first", "later"]}},
                 "tests": cmap["tests"]}
    dropped = tool.Mutant("m.py", 3, (3, 3), 0, 0, "pass", "statement dropped")
    assert tool.covering_tests(dropped, field_map, tool.import_uses(fields)) == ["later", "first"]
    # A method's default value: the tests that run the method's body.
    method = (b"class Book:\n"
              b"    def find(self, ours=False):\n"
              b"        return ours\n")
    method_map = {"lines": {"m.py": {"2": ["first"], "3": ["first", "later"]}},
                  "tests": cmap["tests"]}
    default = tool.Mutant("m.py", 2, (2, 2), 24, 29, "True", "`False` -> `True`")
    assert tool.covering_tests(default, method_map, tool.import_uses(method)) == \
        ["later", "first"]

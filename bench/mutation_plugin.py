"""The pytest plugin ``bench/mutation.py`` loads (``-p mutation_plugin``) for its coverage run.

Before each test it names the coverage context after the test's node id, in this process (a
dynamic context, :meth:`coverage.Coverage.switch_context`) and in every subprocess the test
starts (the environment variable ``MUTATION_TEST``, which the run's coverage rc file reads as
``context = ${MUTATION_TEST}``; coverage starts in those processes through its ``.pth`` file and
``COVERAGE_PROCESS_START``). When ``MUTATION_REPORT`` names a file, the controlling process
writes there, at the end, one JSON object: node id -> ``{"outcome": "passed" | "failed" |
"skipped", "duration": seconds}`` (setup, call and teardown summed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

_OUTCOMES: dict[str, dict[str, Any]] = {}


def _switch(name: str) -> None:
    os.environ["MUTATION_TEST"] = name
    try:
        import coverage
    except ImportError:
        return
    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(name)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _switch(item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    yield
    _switch("")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _OUTCOMES.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0})
    entry["duration"] += report.duration
    if report.failed:
        entry["outcome"] = "failed"
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("MUTATION_REPORT")
    if target and not hasattr(session.config, "workerinput"):
        with open(target, "w", encoding="utf-8") as out:
            json.dump(_OUTCOMES, out)

"""The examples of ``share/examples/``: each one, copied into a new git repository, starts a
session from its ``config.toml`` and records a run with a metric after a small edit."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import Tool, git, runs

from git_autoresearch.runtime.resources import data_path

EXAMPLES = data_path("examples")

# name -> (file edited, text replaced, replacement, the run's status when it is certain)
EDITS: dict[str, tuple[str, str, str, str | None]] = {
    "pytest-benchmark": ("sortlib.py", "    result = list(items)\n",
                         "    return sorted(items)\n    result = list(items)\n", None),
    "hyperfine": ("wordcount.py", "    counts = {}\n",
                  "    counts: dict = {}\n", None),
    # Seeded samples: a learning rate of 0.5 beats 0.01 on every seed.
    "ml-training": ("train.py", "LEARNING_RATE = 0.01", "LEARNING_RATE = 0.5", "keep"),
    # Comments gone: fewer bytes, decided in one sample.
    "bundle-size": ("src/app.js", "  // Format an amount of money for display.\n", "", "keep"),
    "compile-time": ("pkg/__init__.py", '"""A package', '"""The package', None),
    "composite": ("model.py", "range(20)", "range(2)", None),
}


def _needs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if name == "pytest-benchmark":
        if importlib.util.find_spec("pytest_benchmark") is None:
            pytest.skip("pytest-benchmark is not installed")
        # The example's own pytest is not an xdist worker of this one (pytest-benchmark
        # disables itself in a worker).
        for variable in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                         "PYTEST_XDIST_TESTRUNUID"):
            monkeypatch.delenv(variable, raising=False)
        # Only the plugin the example needs: this environment's others take seconds to load.
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        monkeypatch.setenv("PYTEST_PLUGINS", "pytest_benchmark.plugin")
    if name == "hyperfine" and shutil.which("hyperfine") is None:
        pytest.skip("hyperfine is not installed")


def test_every_example_has_a_config_a_readme_and_a_test() -> None:
    names = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert names == sorted(EDITS)
    for name in names:
        assert (EXAMPLES / name / "config.toml").is_file(), name
        assert (EXAMPLES / name / "README.md").is_file(), name


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_example_starts_from_its_config_and_records_a_run(
        name: str, tmp_path: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> None:
    _needs(name, monkeypatch)
    top = tmp_path / name
    out = ar(tmp_path, "demo", "--example", name, str(top)).out
    assert out.splitlines()[-1] == (f"next: cd {top} && git autoresearch start --config "
                                    "config.toml (see its README.md)")
    assert git(top, "status", "--porcelain") == ""
    assert git(top, "log", "--format=%s") == f"Example project: {name}"
    # The external tools' examples take a second a sample: fewer samples here.
    fewer = ["--baseline-samples", "2", "--max-samples", "2"] \
        if name in ("pytest-benchmark", "hyperfine") else []
    data = ar(top, "start", "--config", "config.toml", *fewer, "--json").json()
    assert data["baseline"]["status"] == "keep"
    assert isinstance(data["baseline"]["metric"], (int, float)) and data["baseline"]["metric"] > 0

    path, old, new, status = EDITS[name]
    text = (top / path).read_text()
    assert old in text
    (top / path).write_text(text.replace(old, new, 1))
    ar(top, "run", "-d", f"edit {path}", expect=None)
    last = runs(top)[-1]
    assert last["run"] == 2 and last["description"] == f"edit {path}"
    assert last["status"] in ("keep", "discard"), last.get("reason")
    assert isinstance(last["metric"], (int, float)) and last["metric"] > 0
    # The edit was measured, not undone as a change to a readonly file.
    assert last["decision"]["verdict"] != "no_change" and not last.get("readonly_violations")
    if status is not None:
        assert last["status"] == status
    if name == "composite":
        assert set(last["metrics"]) >= {"accuracy", "latency_ms"}


def test_demo_lists_the_examples_and_refuses_an_unknown_one(tmp_path: Path, ar: Tool) -> None:
    assert ar(tmp_path, "demo", "--list-examples").out.splitlines() == sorted(EDITS)
    err = ar(tmp_path, "demo", "--example", "nope", expect=2).err
    assert err.strip() == ("git autoresearch: no example 'nope'; the examples are: "
                           + ", ".join(sorted(EDITS)))
    assert not (tmp_path / "nope").exists()


def test_demo_example_goes_to_its_name_and_refuses_a_folder_in_use(tmp_path: Path,
                                                                   ar: Tool) -> None:
    ar(tmp_path, "demo", "--example", "bundle-size")
    assert (tmp_path / "bundle-size" / "config.toml").read_bytes() == (
        EXAMPLES / "bundle-size" / "config.toml").read_bytes()
    err = ar(tmp_path, "demo", "--example", "bundle-size", expect=3).err
    assert err.strip() == (f"git autoresearch: {tmp_path / 'bundle-size'} is not empty; name a "
                           "new or empty folder for the example")

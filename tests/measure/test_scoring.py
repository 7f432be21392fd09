"""Composite scoring (the [score] table) and metrics read from JSON (metric_json, metrics_json).

The three kinds are the loop seed's scorer templates (autoresearch-loop.SKILL.txt, "Composite
Scoring": penalty_scorer.py, weighted_scorer.py, gated_scorer.py); the expected values are worked
out by hand in each test. The JSON shapes are hyperfine's ``--export-json`` (sharkdp/hyperfine,
src/export/json.rs: results[].command/mean/stddev/median/user/system/min/max/times/exit_codes)
and pytest-benchmark's ``--benchmark-json`` (ionelmc/pytest-benchmark: machine_info,
commit_info, benchmarks[].name/fullname/stats.{min,max,mean,stddev,median,ops,...}, datetime,
version).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, commit_all, git, runs, write

from git_autoresearch.measure.jsonmetric import JsonMetricError, documents, read_value
from git_autoresearch.measure.scoring import ScoreError, compute
from git_autoresearch.runtime.errors import UsageError
from git_autoresearch.session.config import DIRECTIONS, Config, parse_toml

WEIGHTED = {"kind": "weighted", "terms": {
    "accuracy": {"weight": 0.7},
    "latency": {"weight": 0.3, "scale": 100, "direction": "lower"}}}
PENALTY = {"kind": "penalty", "primary": "sharpe",
           "penalties": {"drawdown": {"max": 0.2, "weight": 2}},
           "cutoffs": {"drawdown": {"max": 0.5}}}
GATED = {"kind": "gated", "primary": "latency", "gates": {"accuracy": {"min": 0.95}}}


def test_weighted_is_the_sum_of_signed_normalised_terms() -> None:
    """0.7 x 0.9 - 0.3 x 50 / 100 = 0.63 - 0.15 = 0.48 (higher is better; latency lower)."""
    score = compute(WEIGHTED, {"accuracy": 0.9, "latency": 50}, "higher", DIRECTIONS)
    assert score.value == 0.48
    assert [round(part, 12) for _, part in score.terms] == [0.63, -0.15]


def test_penalty_subtracts_when_higher_is_better_and_adds_when_lower_is() -> None:
    """1.5 - 2 x (0.3 - 0.2) = 1.3; lower: 100 + 0.1 x (612 - 512) = 110."""
    assert compute(PENALTY, {"sharpe": 1.5, "drawdown": 0.3}, "higher", DIRECTIONS).value == 1.3
    assert compute(PENALTY, {"sharpe": 1.5, "drawdown": 0.1}, "higher", DIRECTIONS).value == 1.5
    lower = {"kind": "penalty", "primary": "latency",
             "penalties": {"memory": {"max": 512, "weight": 0.1}}}
    assert compute(lower, {"latency": 100, "memory": 612}, "lower", DIRECTIONS).value == 110


def test_cutoff_gate_and_missing_component_fail_with_the_reason() -> None:
    with pytest.raises(ScoreError, match=r"^cutoff: drawdown = 0.6 is above 0.5$"):
        compute(PENALTY, {"sharpe": 1.5, "drawdown": 0.6}, "higher", DIRECTIONS)
    with pytest.raises(ScoreError, match=r"^gate failed: accuracy = 0.9 is below 0.95$"):
        compute(GATED, {"latency": 42, "accuracy": 0.9}, "lower", DIRECTIONS)
    assert compute(GATED, {"latency": 42, "accuracy": 0.97}, "lower", DIRECTIONS).value == 42
    with pytest.raises(ScoreError, match="^score component 'drawdown' is missing"):
        compute(PENALTY, {"sharpe": 1.5}, "higher", DIRECTIONS)


@pytest.mark.parametrize("table,problem", [
    ({"kind": "sum"}, "kind 'sum' is not one of weighted, penalty, gated"),
    ({"kind": "penalty"}, "primary is required by kind 'penalty'"),
    ({"kind": "gated", "primary": "x"}, r"\[score.gates\] is required"),
    ({"kind": "weighted", "terms": {"a": {"weight": "1"}}}, "terms.a.weight must be a finite"),
    ({"kind": "weighted", "terms": {"a": {"scale": 0}}}, "terms.a.scale must not be 0"),
    ({"kind": "penalty", "primary": "x", "penalties": {"m": {"weight": 1}}},
     "penalties.m needs min or max"),
    ({"kind": "weighted", "terms": {"a": {}}, "primary": "a"}, "key 'primary' is not read"),
])
def test_a_bad_score_table_is_refused_naming_the_key(table: dict[str, Any], problem: str
                                                     ) -> None:
    with pytest.raises(UsageError, match=problem):
        Config.from_mapping({"goal": "g", "command": "c", "score": table}, source="x")


def test_a_config_with_tables_renders_the_same_bytes_after_a_round_trip() -> None:
    """The [score] and [metrics_json] tables are written by tomli-w after the plain keys; read
    back, the configuration renders byte for byte the same (so its hash is stable)."""
    cfg = Config.from_mapping({"goal": "g", "command": "c", "metric_name": "score",
                               "metric_json": "bench.json:results[0].mean",
                               "metrics_json": {"sd": "results[0].stddev"},
                               "score": PENALTY}, source="x")
    data = cfg.render()
    assert b"\n[score]\nkind = \"penalty\"\nprimary = \"sharpe\"\n" in data
    assert b"\n[score.penalties.drawdown]\nmax = 0.2\nweight = 2\n" in data
    again = Config.from_mapping(parse_toml(data, source="x"), source="x")
    assert again.render() == data
    plain = Config.from_mapping({"goal": "g", "command": "c"}, source="x").render()
    assert b"score" not in plain and b"json" not in plain


HYPERFINE = {"results": [{
    "command": "sleep 0.1", "mean": 0.10512, "stddev": 0.0011, "median": 0.1049,
    "user": 0.0008, "system": 0.0012, "min": 0.1037, "max": 0.1071,
    "times": [0.1037, 0.1049, 0.1071], "exit_codes": [0, 0, 0]}]}
PYTEST_BENCHMARK = {
    "machine_info": {"node": "host", "python_implementation": "CPython"},
    "commit_info": {"id": "abc", "dirty": False},
    "benchmarks": [
        {"group": None, "name": "test_parse", "fullname": "tests/test_b.py::test_parse",
         "params": None, "param": None, "extra_info": {}, "options": {"timer": "perf_counter"},
         "stats": {"min": 0.0011, "max": 0.0019, "mean": 0.00125, "stddev": 0.0001,
                   "rounds": 700, "median": 0.0012, "iqr": 0.0001, "q1": 0.00115,
                   "q3": 0.00125, "iqr_outliers": 3, "stddev_outliers": 40,
                   "outliers": "40;3", "ld15iqr": 0.0011, "hd15iqr": 0.0014, "ops": 800.0,
                   "total": 0.875, "iterations": 1}},
        {"group": None, "name": "test_sort", "fullname": "tests/test_b.py::test_sort",
         "params": None, "param": None, "extra_info": {}, "options": {"timer": "perf_counter"},
         "stats": {"min": 0.02, "max": 0.031, "mean": 0.0225, "stddev": 0.002, "rounds": 40,
                   "median": 0.022, "iqr": 0.002, "q1": 0.021, "q3": 0.023,
                   "iqr_outliers": 1, "stddev_outliers": 5, "outliers": "5;1",
                   "ld15iqr": 0.02, "hd15iqr": 0.026, "ops": 44.4, "total": 0.9,
                   "iterations": 1}}],
    "datetime": "2026-11-29T12:00:00.000000", "version": "4.0.0"}


@pytest.mark.parametrize("doc,path,value", [
    (HYPERFINE, "results[0].mean", 0.10512),
    (HYPERFINE, "results[-1].times[2]", 0.1071),
    (PYTEST_BENCHMARK, "benchmarks[1].stats.median", 0.022),
    (PYTEST_BENCHMARK, "benchmarks[name=test_parse].stats.ops", 800.0),
    (PYTEST_BENCHMARK, 'machine_info["node"]', None),
    ({"a.b": {"c": "2.5"}}, '["a.b"].c', 2.5),
])
def test_paths_read_hyperfine_and_pytest_benchmark_documents(doc: Any, path: str,
                                                             value: float | None) -> None:
    docs = documents(json.dumps(doc, indent=2))
    if value is None:
        with pytest.raises(JsonMetricError, match="is the string 'host', not a number"):
            read_value(docs, path, "b.json")
    else:
        assert read_value(docs, path, "b.json") == value


def test_json_lines_take_the_last_line_where_the_path_leads() -> None:
    text = 'step 1\n{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.1}\n{"done": true}\n'
    assert read_value(documents(text), "loss", "out") == 2.1
    with pytest.raises(JsonMetricError, match="^JSON path 'acc' leads nowhere in out$"):
        read_value(documents(text), "acc", "out")


def _json_repo(repo: Path, script: str) -> None:
    write(repo / "bench.sh", script, 0o755)
    write(repo / ".gitignore", "bench.json\n")
    commit_all(repo)


HYPERFINE_SCRIPT = """#!/bin/sh
v=$(cat value.txt)
printf '{"results": [{"command": "x", "mean": %s, "stddev": 0.25, "median": 1,
  "user": 0, "system": 0, "min": 1, "max": 2, "times": [1, 2], "exit_codes": [0, 0]}]}\\n' \
  "$v" > bench.json
"""


def test_metric_json_reads_a_file_and_its_secondaries(repo: Path, ar: Tool) -> None:
    _json_repo(repo, HYPERFINE_SCRIPT)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
              "--metric-json", "bench.json:results[0].mean", "--metrics-json",
              "stddev=results[0].stddev", "--metrics-json", "runs=bench.json:results[0].times[-1]",
              "--json").json()
    assert data["baseline"]["metric"] == 100
    assert data["baseline"]["metrics"] == {"stddev": 0.25, "runs": 2}
    assert data["config"]["metrics_json"] == {"stddev": "results[0].stddev",
                                              "runs": "bench.json:results[0].times[-1]"}


def test_metric_json_from_the_command_output(repo: Path, ar: Tool) -> None:
    write(repo / "bench.sh", "#!/bin/sh\necho starting\n"
          "printf '{\\n  \"stats\": {\"median\": %s}\\n}\\n' \"$(cat value.txt)\"\n", 0o755)
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
              "--metric-json", "stats.median", "--json").json()
    assert data["baseline"]["metric"] == 100


def test_a_json_file_the_command_did_not_rewrite_is_a_crash(repo: Path, ar: Tool) -> None:
    _json_repo(repo, HYPERFINE_SCRIPT)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
       "--metric-json", "bench.json:results[0].mean", "--metrics-json", "sd=results[9].stddev",
       expect=None)
    assert runs(repo)[-1]["status"] == "crash"
    assert runs(repo)[-1]["reason"] == ("metrics_json 'sd': JSON path 'results[9].stddev' "
                                        "leads nowhere in bench.json")


SCORE_TOML = """
[score]
kind = "penalty"
primary = "value"

[score.penalties.drawdown]
max = 0.2
weight = 2

[score.cutoffs.drawdown]
max = 0.5
"""


def _score_repo(repo: Path) -> None:
    write(repo / "bench.sh", "#!/bin/sh\necho \"sharpe: $(cat value.txt)\"\n"
          "echo \"METRIC drawdown=$(cat drawdown.txt)\"\n", 0o755)
    write(repo / "drawdown.txt", "0.3\n")
    write(repo / "score.toml", SCORE_TOML)
    commit_all(repo)


def test_a_penalty_score_is_the_metric_and_explained_term_by_term(repo: Path, ar: Tool
                                                                   ) -> None:
    """The pattern's value (100) is the component 'value': 100 - 2 x (0.3 - 0.2) = 99.8."""
    _score_repo(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
              "--metric-name", "score", "--direction", "higher", "--metric-pattern",
              r"sharpe: (\S+)", "--config", "score.toml", "--json").json()
    assert data["baseline"]["metric"] == 99.8
    assert data["baseline"]["metrics"] == {"drawdown": 0.3, "value": 100}
    out = ar(repo, "score", "1").out
    assert out.splitlines() == [
        "run 1: penalty score, higher is better",
        "  value (primary)                         +100",
        "  penalty drawdown 0.3 past max 0.2, x 2  -0.2",
        "  = score                                 99.8"]
    explained = ar(repo, "score", "1", "--json").json()
    assert explained["score"] == 99.8 and explained["recorded"] == 99.8
    assert [t["value"] for t in explained["terms"]] == [100, pytest.approx(-0.2)]


def test_a_cutoff_makes_the_run_a_crash_with_the_reason(repo: Path, ar: Tool) -> None:
    _score_repo(repo)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
       "--metric-name", "score", "--direction", "higher", "--metric-pattern",
       r"sharpe: (\S+)", "--config", "score.toml")
    write(repo / "drawdown.txt", "0.6\n")
    ar(repo, "run", "-d", "more risk", expect=None)
    assert runs(repo)[-1]["status"] == "crash"
    assert runs(repo)[-1]["reason"] == "cutoff: drawdown = 0.6 is above 0.5"
    assert ar(repo, "score", "2").out.splitlines()[-1] == (
        "  not scored: cutoff: drawdown = 0.6 is above 0.5")


def test_a_missing_component_is_a_crash_naming_it(repo: Path, ar: Tool) -> None:
    _score_repo(repo)
    write(repo / "bench.sh", "#!/bin/sh\necho \"sharpe: $(cat value.txt)\"\n", 0o755)
    commit_all(repo)
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
       "--metric-name", "score", "--direction", "higher", "--metric-pattern",
       r"sharpe: (\S+)", "--config", "score.toml", expect=None)
    assert runs(repo)[-1]["status"] == "crash"
    assert runs(repo)[-1]["reason"] == ("score component 'drawdown' is missing from the run's "
                                        "metrics")


def test_score_of_a_session_without_a_score_table_is_refused(repo: Path, ar: Tool) -> None:
    from conftest import start_args
    ar(repo, *start_args())
    err = ar(repo, "score", "1", expect=3).err
    assert err.strip().endswith("run 1 has no composite score: its segment's configuration "
                                "has no [score] table")
    assert ar(repo, "score", "7", expect=2).err == \
        "git autoresearch: no run 7 in the ledger (runs are 1 to 1)\n"
    assert git(repo, "status", "--porcelain") == ""


def test_a_json_file_left_from_before_is_never_read_as_a_new_result(repo: Path, ar: Tool
                                                                    ) -> None:
    """The benchmark writes bench.json unless value.txt holds 90: that run must not read the
    baseline's file (100) as its own result."""
    _json_repo(repo, HYPERFINE_SCRIPT.replace("v=$(cat value.txt)\n",
                                              "v=$(cat value.txt)\n[ \"$v\" = 90 ] && exit 0\n"))
    ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
       "--metric-json", "bench.json:results[0].mean")
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety", expect=None)
    assert runs(repo)[-1]["status"] == "crash"
    assert runs(repo)[-1]["reason"] == ("bench.json was not rewritten by the command (it is "
                                        "left from before)")
    (repo / "bench.json").unlink()
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety again", expect=None)
    assert runs(repo)[-1]["reason"] == "bench.json was not written by the command"


@pytest.mark.parametrize("args,problem", [
    (["--metrics-json", "sd"], "--metrics-json 'sd' is not NAME=[FILE:]PATH"),
    (["--metric-json", "b.json:results[0]..mean"], "metric_json 'b.json:results[0]..mean': "
     "path 'results[0]..mean' is not keys and [indexes] at character 11"),
    (["--metric-json", "../b.json:mean"], "the file must be a path inside the repository"),
    (["--metric-json", "mean", "--metric-pattern", "x(1)"],
     "metric_pattern and metric_json are exclusive: set one"),
])
def test_bad_json_options_are_refused_naming_them(repo: Path, ar: Tool, args: list[str],
                                                  problem: str) -> None:
    err = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "true", *args,
             expect=2).err
    assert problem in err and len(err.strip().splitlines()) == 1
    assert not (repo / ".auto").exists()


def test_a_new_segment_may_read_the_metric_another_way(repo: Path, ar: Tool) -> None:
    """A session read by a pattern takes --metric-command (or --metric-json) for its next
    segment: the reader given replaces the earlier one instead of clashing with it."""
    from conftest import start_args
    ar(repo, *start_args())
    write(repo / "score.sh", "#!/bin/sh\necho 7.5\n")
    commit_all(repo)
    data = ar(repo, "start", "--new-segment", "--metric-command", "sh score.sh",
              "--json").json()
    assert data["baseline"]["metric"] == 7.5
    assert "metric_pattern" not in data["config"]


def test_a_gated_score_from_an_inline_table(repo: Path, ar: Tool) -> None:
    """Gated: the metric is the pattern's value (100) while accuracy passes its gate (0.97 is
    at least 0.95); 0.9 fails the gate and the run is a crash."""
    write(repo / "bench.sh", "#!/bin/sh\necho \"ms: $(cat value.txt)\"\n"
          "echo \"METRIC accuracy=$(cat acc.txt)\"\n", 0o755)
    write(repo / "acc.txt", "0.97\n")
    commit_all(repo)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s", "--command", "sh bench.sh",
              "--metric-name", "latency", "--metric-pattern", r"ms: (\S+)", "--score",
              '{kind = "gated", primary = "value", gates = {accuracy = {min = 0.95}}}',
              "--json").json()
    assert data["baseline"]["metric"] == 100
    assert data["config"]["score"] == {"kind": "gated", "primary": "value",
                                       "gates": {"accuracy": {"min": 0.95}}}
    write(repo / "acc.txt", "0.9\n")
    ar(repo, "run", "-d", "less accurate", expect=None)
    assert runs(repo)[-1]["reason"] == "gate failed: accuracy = 0.9 is below 0.95"
    err = ar(repo, "start", "--new-segment", "--score", "gated", expect=2).err
    assert "--score: not valid TOML" in err

"""Other tools' sessions read as the tools themselves read them: karpathy/autoresearch's
``results.tsv`` (as its ``analysis.ipynb`` reads it), the loop seed's ``.autoresearch/``
session, and what our own ``log --tsv`` writes, which ``import`` reads back (round trip).

The expected values come from the peers: karpathy/autoresearch's ``program.md`` and
``analysis.ipynb``, the loop seed's ``autoresearch-loop`` SKILL (its results.tsv columns), and
pandas 3.1's ``read_csv(sep="\\t")``, which that notebook calls, run on the same bytes.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES_DIR, Tool, git, ledger_lines, start_args, write
from hypothesis import given, settings
from hypothesis import strategies as st

KARPATHY = FIXTURES_DIR / "karpathy-results.tsv"
LOOP_SEED = FIXTURES_DIR / "loop-seed-session"
PI_WRITTEN = FIXTURES_DIR / "pi-1.6.2-written-log.jsonl"
HEADER = "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"


def _stopped(top: Path) -> list[dict[str, Any]]:
    return [line for line in ledger_lines(top) if line.get("type") == "stopped"]


# --- the loop seed's results.tsv ------------------------------------------------------------------


def test_loop_seed_stopped_row_is_kept_and_numbers_stay_right(repo: Path, ar: Tool) -> None:
    """The loop seed's SKILL: the baseline is "experiment 0" (autoresearch-loop.SKILL.txt:52),
    a STOP sentinel appends a "stopped" entry to results.tsv (:99), and each row is
    ``<experiment_number> <commit_hash_or_dash> <metric_or_dash> <keep|discard|crash>
    <duration_seconds> <description>`` (:177). The fixture's experiment 4 is the stopped row:
    experiments 5 and 6 keep their numbers, as runs 6 and 7 (experiment N is run N + 1), and
    the stopped row is a ``stopped`` event, not lost."""
    ar(repo, "import", str(LOOP_SEED))
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["run"], r["experiment"], r["status"]) for r in rows] == [
        (1, 0, "keep"), (2, 1, "keep"), (3, 2, "discard"), (4, 3, "crash"),
        (6, 5, "keep"), (7, 6, "discard")]
    assert [r["description"] for r in rows][4:] == ["Drop moment locales", "Inline small svgs"]
    (stop,) = _stopped(repo)
    assert {k: stop[k] for k in ("experiment", "next_run", "description", "duration_s")} == {
        "experiment": 4, "next_run": 5, "description": "STOP sentinel found", "duration_s": 0}
    assert stop["source_row"]["status"] == "stopped"


def test_loop_seed_repeated_experiment_number_is_numbered_on(repo: Path, ar: Tool,
                                                             tmp_path: Path) -> None:
    """A run number is given once: a row whose experiment number repeats an earlier one, or
    is no number, is numbered on from the previous run, and one warning names the rows; the
    row's own ``experiment`` is kept as written (autoresearch-loop.SKILL.txt:177)."""
    folder = tmp_path / "s" / ".autoresearch"
    write(folder / "results.tsv", "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
          "0\ta1b2c3d\t10\tkeep\t1\tBaseline\n1\t-\t11\tdiscard\t1\ta\n"
          "1\t-\t12\tdiscard\t1\tb\nx\t-\t13\tdiscard\t1\tc\n5\t-\t14\tdiscard\t1\td\n")
    res = ar(repo, "import", str(tmp_path / "s"))
    assert "results.tsv: 2 rows whose experiment number is missing, no whole number or an " \
        "earlier row's, numbered on from the previous run: line 4 (experiment '1') is run " \
        "3; line 5 (experiment 'x') is run 4" in res.err
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["run"], r["experiment"]) for r in rows] == [
        (1, 0), (2, 1), (3, 1), (4, "x"), (6, 5)]
    # log --tsv writes a row whose own number is no whole number with the number that brings
    # it back as the same run (the session counts from experiment 0): where it wrote the run
    # number, which a second import read as the next run
    write(tmp_path / "again.tsv", ar(repo, "log", "--tsv").out)
    assert [line.split("\t")[0] for line in
            (tmp_path / "again.tsv").read_text().splitlines()[1:]] == ["0", "1", "1", "3", "5"]
    back = tmp_path / "back"
    back.mkdir()
    git(back, "init", "-q")
    said = ar(back, "import", str(tmp_path / "again.tsv")).out
    assert said.startswith(f"imported loop seed results {tmp_path / 'again.tsv'}: ")
    assert [r["run"] for r in ar(back, "log", "--json").json()["runs"]] == [1, 2, 3, 4, 6]


def test_runs_workers_recorded_out_of_order_keep_their_numbers(repo: Path, ar: Tool,
                                                                tmp_path: Path) -> None:
    """Workers finish runs out of order (run 5 recorded before run 4): ``log --tsv`` writes
    the rows in the ledger's order, and ``import`` gives each row its own number back, with no
    warning; only a number that repeats is numbered on (past the numbers other rows give
    themselves). It used to renumber every row whose number was not above the previous
    row's."""
    write(tmp_path / "s" / ".autoresearch" / "results.tsv",
          "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
          "0\ta1b2c3d\t10\tkeep\t1\tBaseline\n1\t-\t11\tdiscard\t1\ta\n"
          "3\t-\t12\tdiscard\t1\tb\n2\t-\t13\tdiscard\t1\tc\n2\t-\t14\tdiscard\t1\td\n"
          "4\t-\t15\tdiscard\t1\te\n")
    res = ar(repo, "import", str(tmp_path / "s"))
    assert "results.tsv: 1 row whose experiment number is missing, no whole number or an " \
        "earlier row's, numbered on from the previous run: line 6 (experiment '2') is " \
        "run 6" in res.err
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["run"], r["experiment"]) for r in rows] == [
        (1, 0), (2, 1), (4, 3), (3, 2), (6, 2), (5, 4)]
    # and through log --tsv again: the same numbers, no warning
    write(tmp_path / "again.tsv", ar(repo, "log", "--tsv").out)
    back = tmp_path / "back"
    back.mkdir()
    git(back, "init", "-q")
    ar(back, "import", str(tmp_path / "again.tsv"), "--direction", "lower")
    assert [r["run"] for r in ar(back, "log", "--json").json()["runs"]] == [1, 2, 4, 3, 6, 5]
    # a ledger of workers' runs (no experiment numbers of its own), through log --tsv
    header = {"type": "config", "name": "w", "metricName": "ms", "bestDirection": "lower"}
    write(tmp_path / "w" / "log.jsonl", "".join(json.dumps(line) + "\n" for line in [
        header, *({"run": n, "metric": 10 - n, "status": "discard" if n > 1 else "keep",
                   "description": f"r{n}", "timestamp": 1000 * at}
                  for at, n in enumerate([1, 2, 3, 5, 4, 7, 6]))]))
    workers = tmp_path / "workers"
    workers.mkdir()
    git(workers, "init", "-q")
    ar(workers, "import", str(tmp_path / "w" / "log.jsonl"))
    write(tmp_path / "w.tsv", ar(workers, "log", "--tsv").out)
    quiet = ar(workers, "import", str(tmp_path / "w.tsv"), "--output", str(tmp_path / "w2.jsonl"))
    assert "numbered on" not in quiet.err
    assert [json.loads(line).get("run") for line in
            (tmp_path / "w2.jsonl").read_text().splitlines()[1:]] == [1, 2, 3, 5, 4, 7, 6]


def test_an_experiment_0_after_others_is_run_1_not_run_0(repo: Path, ar: Tool,
                                                         tmp_path: Path) -> None:
    """Experiment 0 counts the session from 0 wherever its row is: experiment 1 before it
    is run 2 and experiment 0 run 1, where it became run 0, a line every reader drops; and
    through log --tsv and import again the numbers stay."""
    write(tmp_path / "r.tsv", "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
          "1\t-\t9\tkeep\t1\tfirst\n0\t-\t10\tkeep\t1\tbaseline late\n\t-\t8\tkeep\t1\tnone\n")
    ar(repo, "import", str(tmp_path / "r.tsv"))
    shown = ar(repo, "log", "--json")
    assert shown.err == ""
    assert [r["run"] for r in shown.json()["runs"]] == [2, 1, 3]
    write(tmp_path / "again.tsv", ar(repo, "log", "--tsv").out)
    back = tmp_path / "back"
    back.mkdir()
    git(back, "init", "-q")
    ar(back, "import", str(tmp_path / "again.tsv"))
    assert [r["run"] for r in ar(back, "log", "--json").json()["runs"]] == [2, 1, 3]


def test_loop_seed_metric_suffix_read_into_metrics(repo: Path, ar: Tool) -> None:
    """The seed appends secondary metrics to the description as ``Reduced dependencies
    [loss=0.5, vram_mb=4200]`` (autoresearch-loop.SKILL.txt:139-141), and has no suffix when
    there are none (:143): the suffix becomes ``metrics`` and leaves the description; the
    source row keeps the text as written."""
    ar(repo, "import", str(LOOP_SEED))
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["description"], r["metrics"]) for r in rows[1:3]] == [
        ("Tree-shake lodash", {"gzip_kb": 140.2, "chunks": 7}),
        ("Split vendor chunk", {"gzip_kb": 141.0, "chunks": 8})]
    assert rows[0]["metrics"] == {} and rows[0]["description"] == "Baseline"
    assert rows[1]["source_row"]["description"] == "Tree-shake lodash [gzip_kb=140.2, chunks=7]"


def test_loop_seed_session_written_back_as_its_own_results_tsv(repo: Path, ar: Tool) -> None:
    """``log --tsv`` of an imported seed session is the seed's file again (its numbers, its
    stopped row, its metric suffixes; autoresearch-loop.SKILL.txt:99, :141, :177), the same
    numbers with JSON's spelling (``505`` for ``505.0``)."""
    ar(repo, "import", str(LOOP_SEED))
    written = ar(repo, "log", "--tsv").out
    assert written == (
        "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
        "0\ta1b2c3d\t512.4\tkeep\t45\tBaseline\n"
        "1\tb2c3d4e\t498.1\tkeep\t44\tTree-shake lodash [gzip_kb=140.2, chunks=7]\n"
        "2\t-\t505\tdiscard\t46\tSplit vendor chunk [gzip_kb=141, chunks=8]\n"
        "3\t-\t-\tcrash\t12\tSwitch to esbuild loader\n"
        "4\t-\t-\tstopped\t0\tSTOP sentinel found\n"
        "5\tc3d4e5f\t480\tkeep\t43\tDrop moment locales [gzip_kb=133.9, chunks=7]\n"
        "6\t-\t490\tdiscard\t44\tInline small svgs\n")
    assert ar(repo, "log", "--tsv", "--status", "keep").out.count("stopped") == 0
    assert "stopped" not in ar(repo, "log", "--tsv", "--last", "2").out


def test_runs_without_a_metric_come_back_with_their_status(repo: Path, ar: Tool,
                                                          tmp_path: Path) -> None:
    """A discard, and failed checks, recorded without a metric (``discard -d`` with nothing
    measured; a crash) are written by ``log --tsv`` with ``-`` for the
    metric, and ``import`` reads each back with its status and no metric, where it read every
    such row as a crash. A keep without a metric cannot be one: it is read as a crash."""
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "120\n")
    ar(repo, "discard", "-d", "discarded by hand")
    ar(repo, "crash", "-d", "it fell over")
    write(tmp_path / "runs.tsv", ar(repo, "log", "--tsv").out)
    assert "\t-\tdiscard\t" in (tmp_path / "runs.tsv").read_text()
    back = tmp_path / "back"
    back.mkdir()
    git(back, "init", "-q")
    ar(back, "import", str(tmp_path / "runs.tsv"))
    assert [(r["status"], r["metric"]) for r in ar(back, "log", "--json").json()["runs"]] == [
        ("keep", 100), ("discard", None), ("crash", None)]
    write(tmp_path / "kept.tsv", "experiment\tcommit\tmetric\tstatus\tduration_s\t"
          "description\n1\t-\t-\tkeep\t1\tno number\n2\t-\t-\tchecks_failed\t1\tred\n")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    ar(other, "import", str(tmp_path / "kept.tsv"))
    assert [(r["status"], r["metric"]) for r in ar(other, "log", "--json").json()["runs"]] == [
        ("crash", None), ("checks_failed", None)]


def test_our_stopped_event_is_a_stopped_row(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """Our own STOP sentinel (a ``{"type":"stopped"}`` ledger line) is the seed's "stopped"
    entry in ``log --tsv`` (autoresearch-loop.SKILL.txt:99), at the place the loop stopped,
    and reads back as a stopped event."""
    from conftest import start_args

    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "ninety")
    ar(repo, "stop")
    write(repo / "value.txt", "80\n")
    assert ar(repo, "run", "-d", "eighty", expect=4).err == (
        "git autoresearch: STOP sentinel found: the loop stops here (the sentinel was removed); "
        "the work tree has unrecorded changes (value.txt): record them with git autoresearch "
        "discard or keep\n")
    ar(repo, "run", "-d", "eighty")
    lines = ar(repo, "log", "--tsv").out.splitlines()
    assert [line.split("\t")[0::3] for line in lines] == [
        ["experiment", "status"], ["1", "keep"], ["2", "keep"], ["-", "stopped"],
        ["3", "keep"]]
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(tmp_path / "ours.tsv", "\n".join(lines) + "\n")
    ar(other, "import", str(tmp_path / "ours.tsv"))
    assert [r["run"] for r in ar(other, "log", "--json").json()["runs"]] == [1, 2, 3]
    assert [s["next_run"] for s in _stopped(other)] == [3]


def test_log_tsv_keeps_every_digit(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A metric, a secondary metric and a duration keep every digit through ``log --tsv``
    and ``import`` (six significant digits lost ``1234567.25`` as ``1.23457e+06``); the
    suffix holds numbers only, as the seed's ``METRIC name=value`` lines do
    (autoresearch-loop.SKILL.txt:136), so a text value is left out rather than written as
    ``-``, which would make the whole suffix unreadable."""
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"g","metricName":"m","metricUnit":"","bestDirection":"lower"}\n'
          '{"run":1,"commit":"abcdef0","metric":1234567.25,'
          '"metrics":{"rss_kb":0.000123456789,"host":"ci-7"},'
          '"status":"keep","description":"base","timestamp":1,"segment":0,"confidence":null,'
          '"duration_s":12.3456789}\n')
    out = ar(repo, "log", "--tsv").out
    assert out.splitlines()[1] == \
        "1\tabcdef0\t1234567.25\tkeep\t12.3456789\tbase [rss_kb=0.000123456789]"
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(tmp_path / "r.tsv", out)
    ar(other, "import", str(tmp_path / "r.tsv"))
    (row,) = ar(other, "log", "--json").json()["runs"]
    assert (row["metric"], row["metrics"], row["duration_s"]) == (
        1234567.25, {"rss_kb": 0.000123456789}, 12.3456789)


def test_a_description_that_ends_like_a_metrics_suffix_round_trips(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A description that itself ends in ``[name=number]`` on a run with no secondary
    metrics (where ``import`` would read that ending as the run's metrics, the seed's
    convention, autoresearch-loop.SKILL.txt:136) is written by ``log --tsv`` with an empty
    ``[]`` suffix after it, which ``import`` drops: the description and the metrics come back
    as they were, as they do on a run with metrics, whose own suffix comes last."""
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"g","metricName":"m","metricUnit":"","bestDirection":"lower"}\n'
          '{"run":1,"commit":"abcdef0","metric":3,"metrics":{},"status":"keep",'
          '"description":"cache [size=64]","timestamp":1,"segment":0,"confidence":null}\n'
          '{"run":2,"commit":"abcdef1","metric":4,"metrics":{"rss":5},"status":"discard",'
          '"description":"cache [size=128]","timestamp":2,"segment":0,"confidence":null}\n'
          '{"run":3,"commit":"abcdef2","metric":4,"metrics":{},"status":"discard",'
          '"description":"empty list []","timestamp":3,"segment":0,"confidence":null}\n'
          '{"run":4,"commit":"abcdef3","metric":4,"metrics":{},"status":"discard",'
          '"description":"a [n=1] []","timestamp":4,"segment":0,"confidence":null}\n'
          '{"run":5,"commit":"abcdef4","metric":4,"metrics":{"rss":6},"status":"discard",'
          '"description":"b [n=1] [] []","timestamp":5,"segment":0,"confidence":null}\n')
    out = ar(repo, "log", "--tsv").out
    assert [line.split("\t")[5] for line in out.splitlines()[1:]] == [
        "cache [size=64] []", "cache [size=128] [rss=5]", "empty list []", "a [n=1] [] []",
        "b [n=1] [] [] [rss=6]"]
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(tmp_path / "r.tsv", out)
    ar(other, "import", str(tmp_path / "r.tsv"))
    assert [(r["description"], r["metrics"]) for r in ar(other, "log", "--json").json()["runs"]
            ] == [("cache [size=64]", {}), ("cache [size=128]", {"rss": 5}),
                  ("empty list []", {}), ("a [n=1] []", {}), ("b [n=1] [] []", {"rss": 6})]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" []=,n1xé.", max_size=16),
       st.lists(st.sampled_from(["rss=5", "n=1", "t=0.5"]), max_size=2))
def test_every_description_log_tsv_writes_reads_back(description: str, metrics: list[str]
                                                     ) -> None:
    """Whatever a description ends with (brackets, ``name=value`` texts, empty ``[]``), the
    text ``log --tsv`` writes for it reads back as it was, its spaces at either end aside, with
    the metrics written, and with none when none were."""
    from git_autoresearch.review.report import split_metrics, text_number, tsv_description

    back = split_metrics(tsv_description(description, metrics))
    assert back == (description.strip(), {m.split("=")[0]: text_number(m.split("=")[1])
                                          for m in metrics})


def test_log_tsv_quotes_a_description_that_begins_with_a_quote(repo: Path, ar: Tool,
                                                               tmp_path: Path) -> None:
    """pandas' ``read_csv(sep="\\t")`` (karpathy's analysis.ipynb:25) reads a field that
    begins with ``"`` as quoted: pandas 3.1 reads ``"fast" path`` as ``fast path``, and the
    field quoted whole with its quotes doubled as ``"fast" path``. ``log --tsv`` writes the
    latter, and ``import`` reads it back whole, without a warning."""
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"g","metricName":"m","metricUnit":"","bestDirection":"lower"}\n'
          '{"run":1,"commit":"abcdef0","metric":3,"metrics":{},"status":"keep",'
          '"description":"\\"fast\\" path","timestamp":1,"segment":0,"confidence":null}\n')
    out = ar(repo, "log", "--tsv").out
    assert out.splitlines()[1].split("\t")[5] == '"""fast"" path"'
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(tmp_path / "r.tsv", out)
    res = ar(other, "import", str(tmp_path / "r.tsv"))
    assert res.err == ""
    assert ar(other, "log", "--json").json()["runs"][0]["description"] == '"fast" path'


# --- round trip: the demo session through log --json, log --tsv and import ---------------------


CARRIED = ("run", "status", "metric", "duration_s", "description", "metrics")


def test_demo_session_round_trips_through_log_tsv_and_import(ar: Tool, tmp_path: Path) -> None:
    """``git autoresearch demo DIR``'s session through ``log --json``, ``log --tsv`` and
    ``import``: every run field the seed's results.tsv carries (autoresearch-loop.SKILL.txt
    :177 and :141: number, the commit of a keep, metric, status, duration, description and
    the secondary metrics) comes back equal, and so do the analysis' figures."""
    demo = tmp_path / "demo"
    ar(tmp_path, "demo", str(demo))
    original = ar(demo, "log", "--json").json()["runs"]
    assert len(original) >= 5 and any(r["metrics"] for r in original)
    write(tmp_path / "demo.tsv", ar(demo, "log", "--tsv").out)
    back = tmp_path / "back"
    back.mkdir()
    git(back, "init", "-q")
    ar(back, "import", str(tmp_path / "demo.tsv"), "--direction", "lower")
    again = ar(back, "log", "--json").json()["runs"]
    assert [{k: r.get(k) for k in CARRIED} for r in again] == \
        [{k: r.get(k) for k in CARRIED} for r in original]
    assert [r["commit"] for r in again if r["status"] == "keep"] == \
        [r["commit"] for r in original if r["status"] == "keep"]
    figures = ("runs", "counts", "keep_rate", "baseline", "best", "improvement", "gains")
    first, second = ar(demo, "analyze", "--json").json(), ar(back, "analyze", "--json").json()
    assert {k: second[k] for k in figures} == {k: first[k] for k in figures}
    # the demo's commits exist in the demo's repository: each keep gets its commit's time
    write(demo / "copy.tsv", (tmp_path / "demo.tsv").read_text())
    ar(demo, "import", str(demo / "copy.tsv"), "--output", str(tmp_path / "timed.jsonl"))
    timed = [json.loads(line) for line in (tmp_path / "timed.jsonl").read_text().splitlines()]
    assert all(isinstance(r["timestamp"], int) for r in timed if r.get("status") == "keep")
    assert all(r["timestamp"] is None for r in timed if r.get("status") == "discard")


# --- karpathy/autoresearch's results.tsv ----------------------------------------------------------


def test_karpathy_timestamp_is_the_commits_time(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """karpathy's program.md: the agent runs ``git commit`` before each experiment (program.md
    :98) and records the short hash in results.tsv (:74), which stays untracked (:102). The
    commit's time is the run's ``timestamp`` (epoch ms; the committer date here is fixed by
    the test, 2026-11-29T12:00:00Z); a hash no repository holds gets null."""
    git(repo, "commit", "-q", "--allow-empty", "-m", "tune lr")
    short = git(repo, "rev-parse", "--short=7", "HEAD")
    write(repo / "results.tsv", HEADER + f"{short}\t0.99\t44.0\tkeep\tbaseline\n"
                                         "0badc0d\t0.98\t44.0\tdiscard\tlost commit\n")
    git(repo, "init", "-q", str(tmp_path / "elsewhere"))
    ar(tmp_path / "elsewhere", "import", str(repo / "results.tsv"))
    rows = ar(tmp_path / "elsewhere", "log", "--json").json()["runs"]
    assert [r["timestamp"] for r in rows] == [1795953600000, None]


def test_karpathy_direction_option(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """karpathy's val_bpb is lower-is-better (program.md:103, "If val_bpb improved (lower)"),
    the default; ``--direction higher`` reads a results.tsv whose metric grows, so the best
    kept run is the highest. ``--direction`` is refused for a ledger, which names its own."""
    source = write(tmp_path / "results.tsv", HEADER + "a1b2c3d\t10\t1\tkeep\tbaseline\n"
                                                       "b2c3d4e\t12\t1\tkeep\tmore\n")
    ar(repo, "import", str(source), "--direction", "higher")
    status = ar(repo, "status", "--json").json()
    assert status["direction"] == "higher" and status["segment"]["best"]["metric"] == 12
    res = ar(repo, "import", str(PI_WRITTEN), "--direction", "higher", "--output",
             str(tmp_path / "x.jsonl"), expect=2)
    assert "--direction is for a results.tsv" in res.err and "Traceback" not in res.err
    res = ar(repo, "import", str(source), "--direction", "up", expect=2)
    assert "'up'" in res.err and not (tmp_path / "x.jsonl").exists()


def test_karpathy_tab_in_description_is_kept_with_a_warning(repo: Path, ar: Tool,
                                                            tmp_path: Path) -> None:
    """karpathy's analysis.ipynb reads the file with ``pd.read_csv("results.tsv", sep="\\t")``
    (analysis.ipynb:25). On a row with a tab in its description (6 fields under 5 columns),
    pandas 3.1 raises ``ParserError: Error tokenizing data. C error: Expected 5 fields in line
    3, saw 6``; we keep the whole description, tab included, and say so."""
    source = write(tmp_path / "results.tsv", HEADER + "a1b2c3d\t0.99\t44.0\tkeep\tbaseline\n"
                                                       "b2c3d4e\t0.98\t44.0\tkeep\tlr\t0.04\n")
    res = ar(repo, "import", str(source))
    assert "results.tsv:3: 6 fields under 5 columns" in res.err
    assert "Expected 5 fields in line 3, saw 6" in res.err
    rows = ar(repo, "log", "--json").json()["runs"]
    assert rows[1]["description"] == "lr\t0.04"
    assert rows[1]["source_row"]["description"] == "lr\t0.04"


def test_karpathy_quoted_field_read_as_pandas_reads_it(repo: Path, ar: Tool,
                                                       tmp_path: Path) -> None:
    """pandas' ``read_csv(sep="\\t")`` (analysis.ipynb:25) takes a field that begins with a
    double quote as quoted: pandas 3.1 reads ``"a\\tb"`` as ``a<TAB>b`` (one field),
    ``"quoted" then`` as ``quoted then``, and a quote inside a field as itself (the
    fixture's ``add "value embeddings" (ResFormer-style)``). We read the same, and warn where
    the text shows otherwise (text after the closing quote); a quote that never closes is
    refused, as pandas refuses the file ("EOF inside string")."""
    source = write(tmp_path / "results.tsv", HEADER
                   + 'a1b2c3d\t0.99\t44.0\tkeep\t"a\tb"\n'
                   + 'b2c3d4e\t0.98\t44.0\tkeep\t"quoted" then\n'
                   + 'c3d4e5f\t0.97\t44.0\tkeep\tmid "q" x\n')
    res = ar(repo, "import", str(source))
    assert res.err.count("begins with a double quote") == 1
    assert "results.tsv:3:" in res.err and "quoted then" in res.err
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [r["description"] for r in rows] == ["a\tb", "quoted then", 'mid "q" x']
    broken = write(tmp_path / "broken.tsv", HEADER + 'a1b2c3d\t0.99\t44.0\tkeep\t"open\n'
                                                     "b2c3d4e\t0.98\t44.0\tkeep\tnext\n")
    res = ar(repo, "import", str(broken), "--output", str(tmp_path / "b.jsonl"), expect=2)
    assert "broken.tsv:2: a double quote opens a field that never closes" in res.err
    assert not (tmp_path / "b.jsonl").exists()


# --- every reading command gives the peer's figures on its fixture -----------------------------


def _figures(top: Path, ar: Tool) -> dict[str, Any]:
    status = ar(top, "status", "--json").json()["segment"]
    analysis = ar(top, "analyze", "--json").json()
    summary = ar(top, "summary").out
    ar(top, "dashboard", "-o", str(top / "d.html"))
    page = html.unescape((top / "d.html").read_text())
    return {"status": status, "analysis": analysis, "summary": summary, "page": page,
            "log": ar(top, "log", "--json").json()["runs"]}


def test_karpathy_fixture_figures(repo: Path, ar: Tool) -> None:
    """karpathy's analysis.ipynb on the fixture: statuses upper-cased (:28, so ``KEEP``
    counts), ``Keep rate: 5/8 = 62.5%`` (n_keep / (n_keep + n_discard), :49-51), baseline the
    first row's val_bpb 0.997900 (:164), best the lowest kept 0.989700 (:165), "Total
    improvement: 0.008200 (0.82%)", and the top hits by delta against the previous keep
    (+0.0047, +0.0017, +0.0014, +0.0004)."""
    ar(repo, "import", str(KARPATHY))
    got = _figures(repo, ar)
    analysis = got["analysis"]
    assert analysis["counts"] == {"keep": 5, "discard": 3, "crash": 2, "checks_failed": 0}
    assert analysis["keep_rate_decided"] == 0.625
    assert (analysis["baseline"]["metric"], analysis["best"]["metric"]) == (0.9979, 0.9897)
    assert analysis["improvement"] == -0.0082 and analysis["improvement_pct"] == -0.82
    assert [g["gain"] for g in analysis["gains"]] == [0.0047, 0.0017, 0.0014, 0.0004]
    assert "keep rate 50.0% (62.5% of the 8 that did not crash)" in \
        ar(repo, "analyze").out
    status = got["status"]
    assert (status["baseline"]["metric"], status["best"]["metric"], status["kept"],
            status["counts"]) == (0.9979, 0.9897, 5, {"keep": 5, "discard": 3, "crash": 2})
    assert "baseline: 0.9979 (run 1)" in got["summary"]
    assert "best: 0.9897 (run 10, commit 06dad2a, -0.82%)" in got["summary"]
    assert "0.9979 → 0.9897" in got["page"] and ">-0.82%<" in got["page"]
    assert [r["status"] for r in got["log"]].count("keep") == 5
    assert got["log"][9]["source_row"]["status"] == "KEEP"


def test_loop_seed_fixture_figures(repo: Path, ar: Tool) -> None:
    """The loop seed derives its state from results.tsv: the baseline is experiment 0
    (autoresearch-loop.SKILL.txt:52), the best the lowest kept metric for "minimize"
    (:109, :151), crashes carry no metric (:179, :208) and a stopped row is no experiment
    result: baseline 512.4, best 480.0 (experiment 5), 3 kept, 2 discarded, 1 crash."""
    shutil.copytree(LOOP_SEED / ".autoresearch", repo / ".autoresearch")
    ar(repo, "import", str(repo))
    got = _figures(repo, ar)
    analysis = got["analysis"]
    assert analysis["counts"] == {"keep": 3, "discard": 2, "crash": 1, "checks_failed": 0}
    assert (analysis["baseline"]["metric"], analysis["best"]["metric"]) == (512.4, 480.0)
    assert analysis["best"]["run"] == 6 and analysis["keep_rate_decided"] == 0.6
    status = got["status"]
    assert (status["baseline"]["metric"], status["best"]["metric"], status["runs"]) == \
        (512.4, 480.0, 6)
    assert "baseline: 512.4 (run 1)" in got["summary"]
    assert "best: 480 (run 6" in got["summary"]
    assert "512.4 → 480" in got["page"]
    assert ar(repo, "status", "--json").json()["direction"] == "lower"


def test_pi_written_fixture_figures(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A ledger written by pi-autoresearch 1.6.2's own code, read in place and imported
    unchanged. pi's figures for the current segment (extensions/pi-autoresearch/index.ts:580
    "Baseline = first experiment in current segment", :586-596 best = max of the kept for
    higher, :782-785 the counts of the current segment): baseline 50, best 60, 2 kept and 2
    discarded of 11 runs; segment 0 (total_µs, lower): baseline 1500, best 900, 4 kept."""
    write(repo / ".auto" / "log.jsonl", PI_WRITTEN.read_text())
    got = _figures(repo, ar)
    status = got["status"]
    assert (status["baseline"]["metric"], status["best"]["metric"], status["counts"]) == \
        (50, 60, {"keep": 2, "discard": 2})
    first = ar(repo, "analyze", "--segment", "0", "--json").json()
    assert (first["baseline"]["metric"], first["best"]["metric"], first["counts"]) == \
        (1500, 900, {"keep": 4, "discard": 1, "crash": 1, "checks_failed": 1})
    assert "baseline: 50 (run 8)" in got["summary"] and "best: 60 (run 9" in got["summary"]
    assert "50 → 60" in got["page"] and "4 / 11" in got["page"]
    assert len(got["log"]) == 11
    out = tmp_path / "copy.jsonl"
    ar(repo, "import", str(PI_WRITTEN), "--output", str(out))
    assert out.read_text() == PI_WRITTEN.read_text()


@pytest.mark.parametrize("fixture", ["karpathy-results.tsv", "loop-seed-session"])
def test_fixture_imports_without_warnings(repo: Path, ar: Tool, fixture: str) -> None:
    """The peers' own sample files import cleanly: no warning, every row a run or an
    event."""
    res = ar(repo, "import", str(FIXTURES_DIR / fixture), "--json")
    assert res.err == "" and res.json()["warnings"] == []


def test_an_unknown_status_in_a_results_tsv_is_kept_not_refused(repo: Path, ar: Tool) -> None:
    """pi-autoresearch 1.6.2 reads a status it does not know as a keep
    (extensions/pi-autoresearch/jsonl.ts:74, ``statusFrom``), and karpathy's analysis.ipynb
    counts every row (its cell at line 42: ``df["status"].value_counts()``): no row is dropped,
    and the import says which it kept as written."""
    write(repo / "results.tsv", HEADER + "a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n"
          "b2c3d4e\t0.993200\t44.2\tskipped\tweird status\n")
    res = ar(repo, "import", "results.tsv", "--json")
    assert res.json()["warnings"] == ["results.tsv:3: unknown status 'skipped', kept as "
                                      "written (read as a keep, as pi-autoresearch reads it)"]
    runs = [line for line in ledger_lines(repo) if "run" in line]
    assert [(r["run"], r["status"]) for r in runs] == [(1, "keep"), (2, "skipped")]
    status = ar(repo, "status", "--json").json()
    assert status["segment"]["runs"] == 2
    assert sum("run 2 ('skipped')" in w for w in status["warnings"]) == 1  # said once


def test_recording_commands_and_doctor_on_an_imported_ledger_name_start(repo: Path,
                                                                      ar: Tool) -> None:
    """An imported ledger is read (status) but is no session of ours yet: doctor and the
    recording commands say so and name start, which makes it one, where they said that
    .auto/config.toml does not exist and to start one, as if no runs were there."""
    ar(repo, "import", str(KARPATHY))
    before = (repo / ".auto" / "log.jsonl").read_bytes()
    for command in (["doctor"], ["run", "-d", "x"], ["keep", "--metric", "1", "-d", "x"],
                    ["hooks", "install", "--all"], ["resume"]):
        refused = ar(repo, *command, expect=3)
        assert refused.err.count("\n") == 1 and (
            ".auto/log.jsonl holds runs read without a session of ours (imported, or another "
            "tool's): log, status and analyze read it; git autoresearch start makes it a "
            "session, its runs kept") in refused.err, command
    assert (repo / ".auto" / "log.jsonl").read_bytes() == before


@pytest.mark.parametrize("source", [KARPATHY, PI_WRITTEN])
def test_a_session_starts_on_an_imported_ledger(repo: Path, ar: Tool, source: Path) -> None:
    """start in a work tree whose .auto/log.jsonl another tool's session was imported into
    (or pi-autoresearch wrote): the session's own header opens a segment after the imported
    runs and the loop runs, where start stopped half-way (the branch, config.toml and the
    state ref made, exit 3) over a ledger with a header that is not ours; the imported keeps,
    commits of another history, are not asked to be on the session branch."""
    from conftest import start_args

    if source == PI_WRITTEN:
        write(repo / ".auto" / "log.jsonl", source.read_text())
    else:
        ar(repo, "import", str(source))
    imported = len(ledger_lines(repo))
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "after the import", "--json").json()
    assert record["status"] == "keep" and record["segment"] >= 1
    assert len(ledger_lines(repo)) > imported
    status = ar(repo, "status")
    assert status.err == "" and ar(repo, "doctor").out == "no problems found\n"

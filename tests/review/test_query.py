"""log as a query: filters (--where, --grep, --since/--until, --run, --kept, --worker,
--decision), --sort, --columns, the formats (markdown, jsonl, csv, tsv, templates), every
session at once, and the same on the Result: trailers alone.

The options follow ``git log`` (git-log(1): ``--since``/``--until`` read by git's approxidate,
``--grep`` with ``-i`` and ``--invert-grep``, ``-n``/``--max-count``, ``--format`` with
placeholders) and DVC's ``exp show`` (``--sort-by``/``--sort-order``, choosing columns)."""

from __future__ import annotations

import calendar
import json
import math
import random
import string
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Tool, git, start_args, write
from hypothesis import given
from hypothesis import strategies as st

from git_autoresearch.ledger import finite
from git_autoresearch.review.report import delta_pct

MEMORY_BENCH = ("#!/bin/sh\necho \"score: $(cat value.txt)\"\n"
                "echo \"METRIC mem_mb=$(cat mem.txt)\"\n")


def night(repo: Path, ar: Tool) -> None:
    """Session s1 (lower is better): run 1 the baseline (100, 1000 MB), 2 kept (90, 3000 MB,
    "cache the parsed config"), 3 discarded (110, 2500 MB, "unroll the loop"), 4 kept (85,
    1500 MB, "a bigger Cache"), 5 a crash ("mmap the cache", no metrics)."""
    write(repo / "bench.sh", MEMORY_BENCH, 0o755)
    write(repo / "mem.txt", "1000\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bench with memory")
    ar(repo, *start_args())
    for value, mem, hypothesis, description in (
            ("90", "3000", "cache the parsed config", "cache config"),
            ("110", "2500", "unroll the loop", "unroll"),
            ("85", "1500", "a bigger Cache", "bigger cache")):
        write(repo / "value.txt", value + "\n")
        write(repo / "mem.txt", mem + "\n")
        ar(repo, "run", "-d", description, "--asi", f"hypothesis={hypothesis}")
    write(repo / "value.txt", "80\n")
    ar(repo, "crash", "-d", "segfault in the cache", "--asi", "hypothesis=mmap the cache")


def numbers(ar: Tool, cwd: Path, *args: str) -> list[int]:
    """The run numbers ``log --json`` prints for ``args``, in its order."""
    return [row["run"] for row in ar(cwd, "log", "--json", *args).json()["runs"]]


def written(path: Path, records: list[dict[str, Any]]) -> Path:
    """A pi-autoresearch ledger at ``path`` (read in place: no config.toml)."""
    write(path, "".join(json.dumps(r) + "\n" for r in records))
    return path


def epoch_ms(stamp: str) -> int:
    """``2026-11-29T12:00:00`` (UTC) in milliseconds since the epoch."""
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")) * 1000


HEADER = {"type": "config", "name": "crafted", "metricName": "ms", "metricUnit": "ms",
          "bestDirection": "lower"}


def crafted(repo: Path) -> None:
    """Four runs with fixed timestamps, workers and decisions (an issue-15 ``worker`` field,
    an ``inconclusive`` verdict)."""
    records = [HEADER]
    for n, (status, metric, stamp, worker, verdict) in enumerate([
            ("keep", 10, "2026-11-29T11:00:00", None, "baseline"),
            ("discard", 11, "2026-11-29T12:00:00", "w1", "inconclusive"),
            ("keep", 8, "2026-11-29T13:00:00", "w2", "better"),
            ("discard", 12, "2026-11-29T14:00:00", "w2", "inconclusive")], start=1):
        record: dict[str, Any] = {"run": n, "commit": f"{n:07x}", "metric": metric,
                                  "metrics": {}, "status": status,
                                  "description": f"try {n}", "timestamp": epoch_ms(stamp),
                                  "segment": 0, "confidence": None,
                                  "decision": {"rule": "sequential", "verdict": verdict}}
        if worker:
            record["worker"] = worker
        records.append(record)
    written(repo / ".auto" / "log.jsonl", records)


# --- filters ----------------------------------------------------------------------------------


def test_where_compares_the_metric_secondary_metrics_asi_and_record_fields(
        repo: Path, ar: Tool) -> None:
    night(repo, ar)
    assert numbers(ar, repo, "--where", "mem_mb>2048") == [2, 3]
    assert numbers(ar, repo, "--where", "metrics.mem_mb<=1500") == [1, 4]
    assert numbers(ar, repo, "--where", "asi.hypothesis~cache") == [2, 5]
    assert numbers(ar, repo, "--where", "asi.hypothesis~(?i)cache") == [2, 4, 5]
    assert numbers(ar, repo, "--where", "asi.hypothesis!~cache") == [1, 3, 4]
    assert numbers(ar, repo, "--where", "metric<=90", "--where", "mem_mb >= 2000") == [2]
    assert numbers(ar, repo, "--where", "score<95") == [2, 4]  # the metric by its own name
    assert numbers(ar, repo, "--where", "status=crash") == [5]
    assert numbers(ar, repo, "--where", "decision=better") == [2, 4]
    assert numbers(ar, repo, "--where", "decision.relative<-0.06") == [2]
    assert numbers(ar, repo, "--where", "mem_mb!=3000") == [1, 3, 4, 5]  # 5 has none
    assert numbers(ar, repo, "--where", "asi.hypothesis='unroll the loop'") == [3]
    assert numbers(ar, repo, "--where", "run==4") == [4]
    assert numbers(ar, repo, "--where", "nothing>1") == []


@pytest.mark.parametrize(("expression", "message"), [
    ("mem_mb>lots", "--where 'mem_mb>lots': > compares numbers, and 'lots' is not a number"),
    ("metric<1e400", "--where 'metric<1e400': < compares numbers, and '1e400' is too large "
                     "for one (no metric is)"),
    ("mem_mb", "--where 'mem_mb': no comparison (one of <= >= != !~ == = < > ~)"),
    (">3", "--where '>3': no field before >"),
    ("mem_mb!3", "--where 'mem_mb!3': '!3' is no comparison (one of <= >= != !~ == = < > ~)"),
    ("asi.hypothesis~(cache", "--where 'asi.hypothesis~(cache': bad regular expression "
                              "'(cache': missing ), unterminated subpattern at position 0"),
    ("asi..x=1", "--where 'asi..x=1': bad field name 'asi..x' (a name such as status, mem_mb "
                 "or asi.hypothesis)"),
    ("status='keep", "--where \"status='keep\": the quote ' before 'keep' is never closed"),
])
def test_a_bad_where_is_a_usage_error_naming_the_bad_part(repo: Path, ar: Tool,
                                                           expression: str,
                                                           message: str) -> None:
    crafted(repo)
    res = ar(repo, "log", "--where", expression, expect=2)
    assert res.err == f"git autoresearch: {message}\n"
    assert res.out == ""


def test_kept_run_ranges_and_grep(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    assert numbers(ar, repo, "--kept") == [1, 2, 4]
    assert numbers(ar, repo, "--status", "discard") == [3]
    assert numbers(ar, repo, "--run", "2..4") == [2, 3, 4]
    assert numbers(ar, repo, "--run", "4..") == [4, 5]
    assert numbers(ar, repo, "--run", "..2") == [1, 2]
    assert numbers(ar, repo, "--run", "3") == [3]
    assert numbers(ar, repo, "--grep", "cache") == [2, 4, 5]  # descriptions
    assert numbers(ar, repo, "--grep", "parsed") == [2]  # asi text
    assert numbers(ar, repo, "--grep", "CACHE") == []
    assert numbers(ar, repo, "--grep", "CACHE", "-i") == [2, 4, 5]
    assert numbers(ar, repo, "--grep", "unroll", "--grep", "baseline") == [1, 3]
    assert numbers(ar, repo, "--grep", "cache", "--invert-grep") == [1, 3]
    assert numbers(ar, repo, "--kept", "--last", "2") == [2, 4]
    for args, message in ((["--kept", "--status", "crash"],
                           "--kept and --status crash ask for two statuses"),
                          (["--run", "4..2"], "--run '4..2': the range is empty (4 is after 2)"),
                          (["--run", "two"], "--run 'two': a run number or a range (N, A..B, "
                                             "A.. or ..B)"),
                          (["--grep", "("], "--grep '(': bad regular expression '(': missing ), "
                                            "unterminated subpattern at position 0")):
        res = ar(repo, "log", *args, expect=2)
        assert res.err == f"git autoresearch: {message}\n"


def test_a_run_number_is_ascii_digits_in_every_command(repo: Path, ar: Tool) -> None:
    """A run number (``show``, ``diff``, ``log --run``, ``--segment``) is written in the digits
    0 to 9, as git takes a number: ``+3``, ``3_0`` and a full-width ``３`` are refused with
    exit 2, naming the value, where int() would take them."""
    night(repo, ar)
    assert ar(repo, "show", "3", "--json").json()["record"]["run"] == 3
    for args in (["show", "+3"], ["show", "３"], ["show", "3_0"], ["diff", "2", "３"],
                 ["log", "--segment", "０"], ["log", "--last", "abc"], ["log", "-n", "+2"],
                 ["summary", "--last", "x"], ["finalize", "--samples", "3_0"],
                 ["audit", "--samples", "five"], ["status", "--times", "-1"]):
        res = ar(repo, *args, expect=2)
        assert "is not a whole number (the digits 0 to 9)" in res.err, args
        assert repr(args[-1]) in res.err and res.out == ""
    assert ar(repo, "log", "--run", "３", expect=2).err == (
        "git autoresearch: --run '３': a run number or a range (N, A..B, A.. or ..B)\n")
    assert numbers(ar, repo, "--run", " 2..3 ") == [2, 3]


def test_worker_decision_since_and_until(repo: Path, ar: Tool) -> None:
    crafted(repo)
    assert numbers(ar, repo, "--worker", "w2") == [3, 4]
    assert numbers(ar, repo, "--worker", "main") == []
    assert numbers(ar, repo, "--decision", "inconclusive") == [2, 4]
    assert numbers(ar, repo, "--decision", "inconclusive", "--worker", "w1") == [2]
    assert numbers(ar, repo, "--since", "2026-11-29 12:00:00 +0000") == [2, 3, 4]
    assert numbers(ar, repo, "--until", "2026-11-29T13:00:00Z") == [1, 2, 3]
    assert numbers(ar, repo, "--since", "2026-11-29 11:30 +0000",
                   "--until", "2026-11-29 13:30 +0000") == [2, 3]
    assert ar(repo, "log", "--since", "2026-13-45", expect=2).err == \
        "git autoresearch: --since '2026-13-45': no such day\n"
    # A text git cannot read is now, as for git log: said, since "no runs" looks like an answer.
    unread = ar(repo, "log", "--since", "garbage-date", "--format", "{run}")
    assert (unread.out, unread.err) == ("", "warning: --since 'garbage-date': git reads it as "
                                        "now (a date it cannot read is now, as for git log)\n")
    assert ar(repo, "log", "--until", "now", "--format", "{run}").err == ""
    assert ar(repo, "log", "--since", " ", expect=2).err == \
        "git autoresearch: --since: an empty date\n"


def test_a_bare_day_means_the_whole_day(repo: Path, ar: Tool) -> None:
    """git reads ``2026-11-29`` at the current time of day; --since and --until read a bare
    day as the whole of it (the crafted runs are between 11:00 and 14:00 UTC that day)."""
    crafted(repo)
    assert numbers(ar, repo, "--since", "2026-11-29") == [1, 2, 3, 4]
    assert numbers(ar, repo, "--until", "2026-11-29") == [1, 2, 3, 4]
    assert numbers(ar, repo, "--since", "2026-11-29", "--until", "2026-11-29") == [1, 2, 3, 4]
    assert numbers(ar, repo, "--since", "2026-11-30") == []
    assert numbers(ar, repo, "--until", "2026-11-28") == []


def test_since_reads_git_s_relative_dates(repo: Path, ar: Tool) -> None:
    now = int(time.time() * 1000)
    written(repo / ".auto" / "log.jsonl", [HEADER] + [
        {"run": n, "metric": 10 - n, "status": "keep", "description": f"run {n}",
         "timestamp": now - age} for n, age in enumerate(
            [30 * 86_400_000, 3 * 86_400_000, 2 * 3_600_000], start=1)])
    assert numbers(ar, repo, "--since", "1.week.ago") == [2, 3]
    assert numbers(ar, repo, "--since", "5 hours ago") == [3]
    assert numbers(ar, repo, "--until", "yesterday") == [1, 2]
    assert numbers(ar, repo, "--since", "2 months ago", "--until", "2.weeks.ago") == [1]


# --- sorting and columns ----------------------------------------------------------------------


def test_sort_understands_the_direction_and_puts_missing_values_last(repo: Path,
                                                                     ar: Tool) -> None:
    night(repo, ar)
    assert numbers(ar, repo, "--sort", "best") == [4, 2, 1, 3, 5]
    assert numbers(ar, repo, "--sort=-best") == [3, 1, 2, 4, 5]
    assert numbers(ar, repo, "--sort", "-mem_mb") == [2, 3, 4, 1, 5]
    assert numbers(ar, repo, "--sort", "mem_mb") == [1, 4, 3, 2, 5]
    assert numbers(ar, repo, "--sort", "status,-run") == [5, 3, 4, 2, 1]
    assert numbers(ar, repo, "--sort", "status", "--sort", "-run") == [5, 3, 4, 2, 1]
    assert numbers(ar, repo, "--kept", "--sort", "best", "-n", "1") == [4]
    assert numbers(ar, repo, "--where", "asi.hypothesis~(?i)cache", "--kept",
                   "--sort", "best") == [4, 2]


def test_sort_best_of_a_higher_is_better_segment(repo: Path, ar: Tool) -> None:
    written(repo / ".auto" / "log.jsonl", [{**HEADER, "bestDirection": "higher"}] + [
        {"run": n, "metric": m, "status": "keep", "description": "x"}
        for n, m in enumerate([5, 9, 7], start=1)])
    assert numbers(ar, repo, "--sort", "best") == [2, 3, 1]
    assert numbers(ar, repo, "--sort", "-best") == [1, 3, 2]


def test_a_field_no_run_has_is_warned_about(repo: Path, ar: Tool) -> None:
    """A misspelt --sort or --columns name is said on stderr, once; a field some run has, even
    as null, is not; the output is made all the same."""
    crafted(repo)
    res = ar(repo, "log", "--sort", "metirc", "--columns", "run,metirc,asi.nope,worker,commit")
    hint = ("no run shown has this field (a field of the run records, a secondary metric, or "
            "a dotted path such as asi.hypothesis)")
    assert res.err.splitlines() == [f"warning: --sort metirc: {hint}",
                                    f"warning: --columns metirc: {hint}",
                                    f"warning: --columns asi.nope: {hint}"]
    assert res.out.splitlines()[0].split() == ["run", "metirc", "asi.nope", "worker", "commit"]
    assert ar(repo, "log", "--sort", "-best", "--columns", "run,worker").err == ""


def test_a_where_field_no_run_has_is_warned_about(repo: Path, ar: Tool) -> None:
    """A misspelt --where field selects nothing (or, with != and !~, everything): stderr says
    that no run has it, whether some run was selected or none; a field some run has, with no
    run matching, is not warned about, nor one a single run has (worker)."""
    crafted(repo)
    hint = ("no run has this field (a field of the run records, a secondary metric, or a "
            "dotted path such as asi.hypothesis)")
    none = ar(repo, "log", "--json", "--where", "stauts=keep")
    assert none.json()["runs"] == [] and none.err == f"warning: --where stauts: {hint}\n"
    every = ar(repo, "log", "--json", "--where", "stauts!=keep", "--where", "worker!=w9")
    assert len(every.json()["runs"]) == 4 and every.err == f"warning: --where stauts: {hint}\n"
    assert ar(repo, "log", "--json", "--where", "status=crash").err == ""
    assert ar(repo, "log", "--json", "--where", "worker=w1", "--where", "metric>100").err == ""
    assert ar(repo, "log", "--json", "--where", "decision.verdict~^better$").err == ""
    assert ar(repo, "log", "--json", "--where", "decision.verdcit~x").err.count("warning") == 1
    assert ar(repo, "log", "--where", "status=kept", expect=2).err == (
        "git autoresearch: --where 'status=kept': 'kept' is no status (one of keep, discard, "
        "crash, checks_failed)\n")


def test_columns_for_json_jsonl_csv_tsv_markdown_table(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    cols = ["--columns", "run,status,metric,mem_mb,asi.hypothesis"]
    assert ar(repo, "log", "--json", *cols, "--run", "4..").json()["runs"] == [
        {"run": 4, "status": "keep", "metric": 85, "mem_mb": 1500,
         "asi.hypothesis": "a bigger Cache"},
        {"run": 5, "status": "crash", "metric": None, "mem_mb": None,
         "asi.hypothesis": "mmap the cache"}]
    assert ar(repo, "log", "--format", "jsonl", "--columns", "run,mem_mb", "--kept").out == (
        '{"run":1,"mem_mb":1000}\n{"run":2,"mem_mb":3000}\n{"run":4,"mem_mb":1500}\n')
    assert ar(repo, "log", "--format", "csv", *cols, "--run", "3..").out == (
        "run,status,metric,mem_mb,asi.hypothesis\n3,discard,110,2500,unroll the loop\n"
        "4,keep,85,1500,a bigger Cache\n5,crash,,,mmap the cache\n")
    assert ar(repo, "log", "--csv", "--columns", "run,description", "--run", "2").out == (
        "run,description\n2,cache config\n")
    assert ar(repo, "log", "--tsv", *cols, "--run", "4..").out == (
        "run\tstatus\tmetric\tmem_mb\tasi.hypothesis\n4\tkeep\t85\t1500\ta bigger Cache\n"
        "5\tcrash\t\t\tmmap the cache\n")
    assert ar(repo, "log", "--format", "markdown", *cols, "--kept", "--sort", "best").out == (
        "| run | status | metric | mem_mb | asi.hypothesis |\n"
        "|---:|---|---:|---:|---|\n"
        "| 4 | keep | 85 | 1500 | a bigger Cache |\n"
        "| 2 | keep | 90 | 3000 | cache the parsed config |\n"
        "| 1 | keep | 100 | 1000 | - |\n")
    assert ar(repo, "log", "--format", "table", *cols, "--run", "3..").out == (
        "run  status   metric  mem_mb  asi.hypothesis\n"
        "  3  discard     110    2500  unroll the loop\n"
        "  4  keep         85    1500  a bigger Cache\n"
        "  5  crash         -       -  mmap the cache\n")


def test_json_keeps_every_field_and_says_the_source(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    rows = ar(repo, "log", "--json", "--run", "2").json()["runs"]
    assert len(rows) == 1
    assert rows[0]["source"] == "ledger"
    assert rows[0]["asi"] == {"hypothesis": "cache the parsed config"}
    assert rows[0]["decision"]["verdict"] == "better"
    assert (rows[0]["metrics"], rows[0]["delta_pct"], rows[0]["segment"]) == \
        ({"mem_mb": 3000}, -10.0, 0)


def test_markdown_default_columns_and_escaped_pipes(repo: Path, ar: Tool) -> None:
    written(repo / ".auto" / "log.jsonl", [HEADER] + [
        {"run": 1, "commit": "abc1234", "metric": 10, "status": "keep",
         "description": "a | b"},
        {"run": 2, "commit": "abc1235", "metric": 8, "status": "keep",
         "description": "faster",
         "decision": {"rule": "sequential", "verdict": "better", "relative": -0.2}}])
    assert ar(repo, "log", "--format", "markdown").out == (
        "| run | status | metric | delta_pct | decision | commit | description |\n"
        "|---:|---|---:|---:|---|---|---|\n"
        "| 1 | keep | 10 | 0 | - | abc1234 | a \\| b |\n"
        "| 2 | keep | 8 | -20 | better -20.0% | abc1235 | faster |\n")


def test_format_templates_as_git_log_takes_them(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    assert ar(repo, "log", "--kept", "--format", "{run}\t{metric}\t{asi.hypothesis}").out == (
        "1\t100\t\n2\t90\tcache the parsed config\n4\t85\ta bigger Cache\n")
    braces = ar(repo, "log", "--run", "3", "--format", "{{{status}}} {mem_mb}MB {nothing}|")
    assert braces.out == "{discard} 2500MB |\n"
    # A field no run has is said, as for --columns and --sort (a misspelt name, most often).
    assert braces.err == ("warning: --format nothing: no run shown has this field (a field of "
                          "the run records, a secondary metric, or a dotted path such as "
                          "asi.hypothesis)\n")
    for fmt, message in (("{run", "--format '{run': an unmatched brace (write {{ or }} for a "
                                  "literal one)"),
                         ("run}", "--format 'run}': an unmatched brace (write {{ or }} for a "
                                  "literal one)"),
                         ("{}", "--format '{}': an empty field name"),
                         ("xml", "--format 'xml': no such format (one of table, markdown, json, "
                                 "jsonl, csv, tsv, or a template with {field} placeholders)")):
        assert ar(repo, "log", "--format", fmt, expect=2).err == \
            f"git autoresearch: {message}\n"
    assert ar(repo, "log", "--format", "csv", "--json", expect=2).err == \
        "git autoresearch: --format csv and --json ask for two formats\n"
    assert ar(repo, "log", "--format", "json", "--json", "--run", "1").json()["runs"][0]["run"] == 1


# --- every session; the trailers alone ------------------------------------------------------


def two_sessions(repo: Path, ar: Tool, tmp_path: Path) -> Path:
    """s1 here (``night``), s2 in another worktree (read here from its state ref): its
    baseline (100) and a keep (95, "lower it to 95")."""
    night(repo, ar)
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "side", str(other), "main")
    ar(other, *start_args("--session-id", "s2"))
    write(other / "value.txt", "95\n")
    ar(other, "run", "-d", "lower it to 95")
    return other


def test_all_sessions_reads_every_session_with_a_session_column(repo: Path, ar: Tool,
                                                                 tmp_path: Path) -> None:
    two_sessions(repo, ar, tmp_path)
    res = ar(repo, "log", "--all-sessions", "--kept", "--sort", "best",
             "--format", "csv", "--columns", "session,run,metric,description")
    assert res.out == ("session,run,metric,description\ns1,4,85,bigger cache\n"
                       "s1,2,90,cache config\ns2,2,95,lower it to 95\ns1,1,100,baseline\n"
                       "s2,1,100,baseline\n")
    assert "session s2: read from its state ref (refs/autoresearch/s2/state)" in res.err
    rows = ar(repo, "log", "--all-sessions", "--json", "--where", "run=2").json()["runs"]
    assert [(r["session"], r["source"], r["description"]) for r in rows] == [
        ("s1", "ledger", "cache config"), ("s2", "state ref", "lower it to 95")]
    table = ar(repo, "log", "--all-sessions", "--run", "2").out.splitlines()
    assert table[0].split() == ["session", "run", "status", "metric", "delta_pct", "decision",
                                "commit", "description"]
    assert [line.split()[:4] for line in table[1:]] == [["s1", "2", "keep", "90"],
                                                        ["s2", "2", "keep", "95"]]


def test_all_sessions_reads_a_session_known_by_its_branch_from_its_trailers(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    two_sessions(repo, ar, tmp_path)
    git(repo, "update-ref", "-d", "refs/autoresearch/s2/state")
    res = ar(repo, "log", "--all-sessions", "--format", "{session} {run} {metric} {source}",
             "--where", "session=s2")
    assert res.out == "s2 2 95 trailers\n"  # the baseline committed nothing: no trailer
    assert "session s2: read from the Result: trailers of autoresearch/s2 alone (kept runs " \
           "only)" in res.err


def test_all_sessions_includes_a_session_pulled_from_a_remote(repo: Path, ar: Tool,
                                                               tmp_path: Path) -> None:
    night(repo, ar)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    ar(repo, "push")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    ar(clone, "pull")
    assert ar(clone, "log", "--all-sessions", "--kept", "--sort", "best",
              "--format", "{session} {run} {metric} {asi.hypothesis}").out == (
        "s1 4 85 a bigger Cache\ns1 2 90 cache the parsed config\ns1 1 100 \n")


def test_all_sessions_without_a_session_is_refused(repo: Path, ar: Tool) -> None:
    res = ar(repo, "log", "--all-sessions", expect=3)
    assert "no session in this repository" in res.err


def test_the_same_queries_on_the_trailers_alone(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """A clone that fetched only branches, on the session branch: no .auto/, so log answers
    from the Result: trailers (the kept runs that committed: 2 and 4) and says so."""
    night(repo, ar)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "autoresearch/s1", str(repo), str(clone))
    res = ar(clone, "log", "--json", "--where", "mem_mb>2000")
    assert [(r["run"], r["metric"], r["metrics"], r["source"]) for r in res.json()["runs"]] == [
        (2, 90, {"mem_mb": 3000}, "trailers")]
    assert "read from the Result: trailers on autoresearch/s1 alone" in res.err
    assert ar(clone, "log", "--sort", "best", "--format", "csv",
              "--columns", "run,metric,mem_mb,description").out == (
        "run,metric,mem_mb,description\n4,85,1500,bigger cache\n2,90,3000,cache config\n")
    assert numbers(ar, clone, "--grep", "^cache") == [2]
    assert numbers(ar, clone, "--kept", "--since", "2026-11-29 11:00 +0000") == [2, 4]
    assert numbers(ar, clone, "--until", "2026-11-29 11:00 +0000") == []
    assert numbers(ar, clone, "--status", "crash") == []
    assert ar(clone, "log", "--format", "{run}:{source}", "-n", "1").out == "2:trailers\n"


# --- fuzz -------------------------------------------------------------------------------------


def test_random_expressions_give_results_or_a_usage_error(repo: Path, ar: Tool) -> None:
    """Seeded random strings and random well-formed-ish expressions for --where (and random
    --sort, --columns, --run and templates): each answers (exit 0, JSON) or is a one-line
    usage error (exit 2), never a traceback."""
    crafted(repo)
    rng = random.Random(18)
    fields = ["run", "metric", "status", "worker", "decision", "decision.verdict", "asi.x",
              "timestamp", "mem_mb", "", "a..b", "métrique", "x y"]
    ops = ["<", "<=", "=", "==", "!=", ">=", ">", "~", "!~", "!", "=<", "<>", "~~", ""]
    values = ["1", "-2.5", "1e3", "1e999", "nan", "keep", "'keep'", "\"w 2\"", "(", "[a-",
              "*", "", "'", "0x10", ".5", "inf", "\\", "{run}", "\x00", "\udcff"]
    alphabet = string.printable + "éλ\u202e"
    answered = refused = 0
    for _ in range(250):
        if rng.random() < 0.4:
            expression = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        else:
            expression = rng.choice(fields) + rng.choice([" ", ""]) + rng.choice(ops) + \
                rng.choice([" ", ""]) + rng.choice(values)
        extra: list[str] = rng.choice([
            [], ["--sort", rng.choice(fields + ["-best", "best,-run", ","])],
            ["--columns", rng.choice(fields + ["run,", "run,metric"])],
            ["--run", rng.choice(["1..", "..", "3", "a..b", "9999999999", " 2 .. 3 "])],
            ["--format", rng.choice(["{run", "{run} {x}", "}{", "{{}}", "{a..b}", "csv"])]])
        as_json = rng.random() < 0.5
        res = ar(repo, "log", *(["--json"] if as_json else []), "--where", expression, *extra,
                 expect=None)
        assert res.code in (0, 2), (expression, extra, res.err)
        assert "Traceback" not in res.err
        if res.code == 2 and as_json:  # the error is the one JSON document on stdout
            refused += 1
            error = res.json()
            assert error["exit_code"] == 2 and "\n" not in error["error"], error
        elif res.code == 2:
            refused += 1
            assert res.out == ""
            assert res.err.startswith("git autoresearch: ") and res.err.count("\n") == 1
        else:
            answered += 1
            if as_json and "--format" not in extra:
                assert isinstance(res.json()["runs"], list)
    assert answered > 30 and refused > 30


# --- the quick test of ledger lines -----------------------------------------------------------


def test_the_quick_line_test_never_changes_an_answer() -> None:
    """A query reads only the ledger lines its quick test cannot rule out
    (ledger.only_runs); on a ledger of awkward lines (a nested status, a record without
    status, an escaped key, a duplicate key, the metric's own name as a field, crashes before
    the baseline, a second segment) every query selects the same rows, with the same
    baseline, as a full read."""
    from git_autoresearch import ledger
    from git_autoresearch.review.query import Query, line_test, parse_where, rows_of
    from git_autoresearch.review.query_format import run_text

    def shown(row: Any) -> Any:
        base = row.segment.baseline
        return json.loads(run_text(row.run, row.segment.index,
                                   base.metric if base else None, None, row.source))

    lines = [
        {"type": "config", "name": "a", "metricName": "ms", "bestDirection": "lower"},
        {"run": 1, "commit": "a", "metric": 0, "metrics": {}, "status": "crash"},
        {"run": 2, "commit": "b", "metric": 50, "metrics": {"mem": 10}, "status": "keep",
         "timestamp": 1000},
        {"run": 3, "commit": "c", "metric": 40, "metrics": {"mem": 30}, "status": "discard",
         "asi": {"status": "keep"}, "timestamp": 2000, "readonly_violations": ["bench.sh"]},
        {"run": 4, "commit": "d", "metric": 45, "metrics": {}, "asi": {"status": "crash"}},
        {"run": 5, "commit": "e", "metric": 30, "metrics": {"ms": 99}, "status": "keep",
         "timestamp": 3000},
        {"run": 6, "metric": 20, "status": "crash", "asi": {"mem": 5}},
        {"type": "config", "name": "b", "metricName": "mem", "bestDirection": "higher"},
        {"run": 7, "commit": "f", "metric": 0, "metrics": {}, "status": "discard"},
        {"run": 8, "commit": "g", "metric": 7, "metrics": {}, "status": "keep",
         "scope_violations": ["notes.txt"], "readonly_violations": []},
        {"run": 9, "commit": "h", "metric": 9, "metrics": {"mem": 1}, "status": "discard",
         "timestamp": 2500, "readonly_violations_total": 2, "readonly_violations": []},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines)
    data += '{"run": 10, "commit": "i", "metric": 3, "metrics": {}, "\\u0073tatus": "keep"}\n'
    data += '{"run":11,"commit":"j","metric":8,"metrics":{},"status":"crash","status":"keep"}\n'
    raw = data.encode()
    queries = [Query(status=s) for s in ("keep", "discard", "crash", "checks_failed")]
    queries += [Query(where=[parse_where(w)]) for w in (
        "mem>5", "mem<=10", "mem=30", "metric<46", "metric>=45", "ms>50", "ms<60",
        "timestamp>1500")]
    queries += [Query(runs=(3, 8)), Query(runs=(None, 4)), Query(since=2, until=2),
                Query(status="keep", where=[parse_where("metric<46")]),
                Query(status="crash", runs=(2, None))]
    queries += [Query(touched=kind) for kind in ("readonly", "outside", "any")]
    for query in queries:
        full = ledger.parse(raw)
        with ledger.only_runs(line_test(query)):
            quick = ledger.parse(raw)
        want = [shown(r) for r in query.select(rows_of(full, "s", "ledger"))]
        got = [shown(r) for r in query.select(rows_of(quick, "s", "ledger"))]
        assert got == want, query
    assert line_test(Query(where=[parse_where("mem!=1")])) is None  # != keeps a missing field
    with ledger.only_runs(line_test(Query(status="crash"))):
        skipped = ledger.parse(raw)
    assert [r.number for r in skipped.runs] == [1, 2, 4, 6, 7, 8, 10, 11]  # 3, 5, 9 unread
    with ledger.only_runs(line_test(Query(where=[parse_where("metric>=45")]))):
        skipped = ledger.parse(raw)
    assert [r.number for r in skipped.runs] == [1, 2, 4, 7, 8, 10]
    with ledger.only_runs(line_test(Query(touched="any"))):
        skipped = ledger.parse(raw)
    assert [r.number for r in skipped.runs] == [1, 2, 3, 7, 8, 9, 10]  # 4, 5, 6, 11 unread


def test_numbers_come_out_as_the_ledger_writes_them(repo: Path, ar: Tool) -> None:
    """A whole metric is 100 in every format, as in the ledger, never 100.0."""
    ar(repo, *start_args())
    assert ar(repo, "log", "--json", "--columns", "run,metric").json()["runs"] == [
        {"run": 1, "metric": 100}]
    assert ar(repo, "log", "--format", "jsonl", "--columns", "run,metric").out == \
        '{"run":1,"metric":100}\n'
    assert ar(repo, "log", "--csv").out.splitlines()[1].split(",")[3] == "100"


def test_json_is_one_document_with_a_run_a_line(repo: Path, ar: Tool) -> None:
    """``log --json`` writes one JSON array, a run a line (``[``, one object a line, commas
    between, ``]``), so that 100,000 runs are written by json's C encoder in well under a
    second; the values are those the earlier, indented layout held: the same as ``jsonl``'s,
    a non-finite number of a hostile line as null, text with newlines and non-ASCII as is.
    No run: ``[]``."""
    night(repo, ar)
    ledger = repo / ".auto" / "log.jsonl"
    with ledger.open("a") as fh:  # a line by another hand: an infinite duration, odd text
        fh.write('{"run": 6, "commit": "abc1234", "metric": 70, "metrics": {}, '
                 '"status": "discard", "description": "line one\\nzwei – ✓", '
                 '"timestamp": 1764400000000, "segment": 0, "duration_s": 1e999}\n')
    out = ar(repo, "log", "--json").out
    lines = out.split("\n")
    assert (lines[0], lines[-2:]) == ('{"schema":"git-autoresearch:log/1","runs":[', ["]}", ""])
    body = lines[1:-2]
    assert [json.loads(line.removesuffix(",")) for line in body] == json.loads(out)["runs"]
    assert [line.endswith(",") for line in body] == [True] * 5 + [False]
    jsonl = ar(repo, "log", "--format", "jsonl").out.splitlines()
    assert json.loads(out)["runs"] == [json.loads(line) for line in jsonl]
    last = json.loads(out)["runs"][-1]
    assert (last["run"], last["duration_s"], last["description"], last["delta_pct"]) == \
        (6, None, "line one\nzwei – ✓", -30.0)
    assert [r["run"] for r in json.loads(out)["runs"]] == [1, 2, 3, 4, 5, 6]
    empty = ar(repo, "log", "--json", "--status", "checks_failed").out
    assert (empty, json.loads(empty)["runs"]) == (
        '{"schema":"git-autoresearch:log/1","runs":[]}\n', [])


def test_json_writes_each_record_as_the_ledger_holds_it(repo: Path, ar: Tool) -> None:
    """A run record read from the ledger comes out of ``log --json`` and ``--format jsonl`` as
    its ledger line, byte for byte (JSON.stringify's numbers: ``0.000015``), the added fields
    after its last; one that must change to be shown is written anew by json's encoder: a
    number that reads as infinity (null), text that is not UTF-8 (``\\udcff``, as read); a
    line that only looks so (``1e400`` inside a string) is written anew with the same values;
    a record with no ``segment`` gets it after its last field; ``--all-sessions`` puts
    ``session`` first."""
    night(repo, ar)
    ledger = repo / ".auto" / "log.jsonl"
    with ledger.open("ab") as fh:
        fh.write(b'{"run": 6, "metric": 0.000015, "status": "discard", "segment": 0}\n'
                 b'{"run":7,"metric":1e400,"status":"discard","segment":0}\n'
                 b'{"run":8,"metric":99,"status":"discard","description":"x\xed\xb3\xbf"}\n'
                 b'{"run":9,"metric":99,"status":"discard","description":"try 1e400"}\n')
    ledger_lines = ledger.read_text("utf-8", "surrogateescape").splitlines()
    out = ar(repo, "log", "--format", "jsonl").out.splitlines()
    runs = [line for line in ledger_lines if line.startswith('{"run":')]
    assert out[:4] == [line[:-1] + f',"delta_pct":{delta},"touched":[],"audit":null,'
                       '"source":"ledger"}'
                       for line, delta in zip(runs[:4], ("0.0", "-10.0", "10.0", "-15.0"),
                                              strict=True)]
    # A crash's metric shows as null, not the ledger's 0 (pi-autoresearch's placeholder).
    assert out[4] == runs[4].replace('"metric":0,', '"metric":null,')[:-1] \
        + ',"delta_pct":null,"touched":[],"audit":null,"source":"ledger"}'
    assert '"metric":0,' in runs[4]
    assert out[5:] == [
        '{"run": 6, "metric": 0.000015, "status": "discard", "segment": 0,"delta_pct":-100.0,'
        '"touched":null,"audit":null,"source":"ledger"}',
        '{"run":7,"metric":null,"status":"discard","segment":0,"delta_pct":null,'
        '"touched":null,"audit":null,"source":"ledger"}',
        '{"run":8,"metric":99,"status":"discard","description":"x\\udcff","segment":0,'
        '"delta_pct":-1.0,"touched":null,"audit":null,"source":"ledger"}',
        '{"run":9,"metric":99,"status":"discard","description":"try 1e400","segment":0,'
        '"delta_pct":-1.0,"touched":null,"audit":null,"source":"ledger"}']
    assert ar(repo, "log", "--json").out == \
        '{"schema":"git-autoresearch:log/1","runs":[\n' + ",\n".join(out) + "\n]}\n"
    every = ar(repo, "log", "--all-sessions", "--format", "jsonl", "--run", "1").out
    assert every == '{"session":"s1",' + out[0][1:] + "\n"


@pytest.mark.parametrize("line", [
    b'{"run":6,"metric":0,"status":"crash","segment":0}',
    b'{"run":6,"status":"crash","metric":0}',
    b'{"run":6,"metric":0,"status":"crash","asi":{"metric":0}}',
    b'{"run":6,"asi":{"metric":0},"metric":0,"status":"crash"}',
    b'{"run":6,"asi":{"note":"\\"metric\\":0,"},"metric":0,"status":"crash"}',
    b'{"run":6,"metric": 0,"status":"crash"}',
    b'{"run":6,"metric":0.0,"status":"crash"}',
    b'{"run":6,"metric":5,"status":"crash"}',
    b'{"run":6,"metric":null,"status":"crash"}',
    b'{"run":6,"status":"crash","metrics":{"metric":0}}',
    b'{"run":6,"metric":0,"metrics":{"rss":0},"status":"crash","scope_violations":[]}',
])
def test_a_crash_shows_its_metric_as_null_however_its_line_is_written(
        repo: Path, ar: Tool, line: bytes) -> None:
    """A crash's recorded metric (pi-autoresearch's 0) is null in ``log --json`` and ``--format
    jsonl``, every other field as recorded, whatever else in the line says ``"metric":0``;
    a crash without a metric gets none."""
    night(repo, ar)
    with (repo / ".auto" / "log.jsonl").open("ab") as fh:
        fh.write(line + b"\n")
    record = json.loads(line)
    expected = {**record, "segment": 0, "delta_pct": None, "touched": [] if
                "scope_violations" in record else None, "audit": None, "source": "ledger"}
    if "metric" in record:
        expected["metric"] = None
    for fmt in ("json", "jsonl"):
        out = ar(repo, "log", "--format", fmt, "--run", "6").out
        shown = json.loads(out)["runs"][0] if fmt == "json" else json.loads(out)
        assert (shown, list(shown)) == (expected, list(expected))


def test_json_of_every_run_is_the_filtered_paths_text_byte_for_byte(repo: Path,
                                                                    ar: Tool) -> None:
    """``log --json`` and ``--format jsonl`` with no filter write every run in one loop over
    the records as read (no row object per run); the text is byte for byte that of the
    general path, which a filter that keeps every run (``--where run>0``) takes, on a ledger
    with every kind of line: two segments' configuration headers, a hook line, an audit, a
    line that is not JSON, a torn last line, a copy of a line, run numbers 0 and ``true``, a
    metric that is a string (set aside as malformed),
    odd statuses (missing, unknown, a number), a run number held twice, fields named as the
    output's own (``delta_pct``, ``audit``, ``source``, a wrong ``segment``), non-ASCII text
    written raw and as ``\\u`` escapes, and big, tiny, negative-zero and infinite numbers."""
    night(repo, ar)
    ledger = repo / ".auto" / "log.jsonl"
    header = json.loads(ledger.read_text().splitlines()[0])
    second = {**header, "name": "second", "metricName": "ms", "bestDirection": "higher"}
    run2 = ledger.read_text().splitlines()[2]
    lines = [
        '{"type":"hook","hook":"before","run":5,"exit_code":0}',
        '{"type":"audit","audited_run":2,"verdict":"confirmed","samples":[90,91]}',
        'not JSON at all {',
        run2,  # a byte-for-byte copy: set aside
        '{"run":0,"metric":1,"status":"keep"}',
        '{"run":true,"metric":1,"status":"keep"}',
        '{"run":6,"commit":"abc1234","metric":95,"metrics":{},"description":"no status"}',
        '{"run":7,"commit":"abc1234","metric":1e-7,"metrics":{"tiny":0.000015,"big":1.5e+21,'
        '"huge":12345678901234567890,"neg":-0.0},"status":"weird","description":'
        '"caf\\u00e9 – ✓ 日本 \\ud83d\\ude00","segment":9,"delta_pct":"mine","audit":1,'
        '"source":"elsewhere"}',
        '{"run":3,"commit":"def5678","metric":88,"status":7,"description":"pi numbered it 3"}',
        json.dumps(second, ensure_ascii=False, separators=(",", ":")),
        '{"run":8,"commit":"abc1234","metric":50,"metrics":{},"status":"keep",'
        '"description":"the second baseline","asi":{"hypothesis":"line one\\nline\\ttwo"}}',
        '{"run":9,"commit":"abc1234","metric":75.5,"metrics":{},"status":"keep",'
        '"duration_s":1e999}',
        '{"run":10,"commit":"abc1234","metric":0,"metrics":{},"status":"crash"}',
        '{"run":11,"commit":"abc1234","metric":"fast","status":"discard"}',  # set aside
        '{"run":12,"commit":"abc1',  # torn: the last line, without its newline
    ]
    with ledger.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    for fmt in ("json", "jsonl"):
        quick = ar(repo, "log", "--format", fmt)
        general = ar(repo, "log", "--format", fmt, "--where", "run>0")
        assert (quick.out, quick.err) == (general.out, general.err)
    out = ar(repo, "log", "--json").out
    assert out.splitlines()[1:-1] == [line + ("," if i < 10 else "") for i, line in
                                      enumerate(ar(repo, "log", "--format", "jsonl")
                                                .out.splitlines())]
    rows = {(r["run"], r["segment"]): r for r in json.loads(out)["runs"]}
    assert [(r["run"], r["segment"], r["status"], r.get("recorded_status", "-"),
             r["delta_pct"]) for r in json.loads(out)["runs"]] == [
        (1, 0, "keep", "-", 0.0), (2, 0, "keep", "-", -10.0), (3, 0, "discard", "-", 10.0),
        (4, 0, "keep", "-", -15.0), (5, 0, "crash", "-", None), (6, 0, "keep", None, -5.0),
        (7, 0, "keep", "weird", -100.0), (3, 0, "keep", 7, -12.0), (8, 1, "keep", "-", 0.0),
        (9, 1, "keep", "-", 51.0), (10, 1, "crash", "-", None)]
    seven = rows[7, 0]
    assert (seven["metric"], seven["metrics"], seven["description"], seven["audit"],
            seven["source"]) == (1e-7, {"tiny": 0.000015, "big": 1.5e21,
                                        "huge": 12345678901234567890, "neg": -0.0},
                                 "café – ✓ 日本 😀", None, "ledger")
    # Run 7 is written anew (an odd status, fields named as the output's): json's numbers.
    assert '"metrics":{"tiny":1.5e-05,"big":1.5e+21,"huge":12345678901234567890,' \
        '"neg":-0.0}' in out
    assert rows[2, 0]["audit"] == {"type": "audit", "audited_run": 2, "verdict": "confirmed",
                                   "samples": [90, 91]}
    assert rows[9, 1]["duration_s"] is None


def test_every_run_in_pieces_is_the_general_paths_text_at_each_piece_boundary() -> None:
    """``log --json`` of every run is written a piece of runs at a time
    (queryformat.ledger_json_chunks) from runs held as their lines (ledger.runs_as_text):
    joined, the pieces are byte for byte the general path's text for no run, one, a piece
    less one, a whole piece, one more and two pieces and a half, JSON and JSON Lines; on a
    ledger whose commits read as exponents (``6e75195``) and with a line holding ``1e400``
    (written anew, as null) and an audit."""
    from git_autoresearch import ledger
    from git_autoresearch.review.query import rows_of
    from git_autoresearch.review.query_format import json_text, jsonl_text, ledger_json_chunks

    def record(n: int) -> str:
        metric = "1e400" if n == 4 else str(100 + n % 7)
        return (f'{{"run":{n},"commit":"{6 + n}e75195","metric":{metric},"metrics":{{"m":'
                f'{n / 8}}},"status":"{("keep", "discard", "crash")[n % 3]}","description":'
                f'"idea {n}"}}')
    header = '{"type":"config","name":"n","metricName":"ms","bestDirection":"lower"}'
    audit = '{"type":"audit","audited_run":3,"verdict":"confirmed"}'
    for count in (0, 1, 3, 4, 5, 11):
        data = "\n".join([header, *map(record, range(1, count + 1)), audit]).encode() + b"\n"
        whole = ledger.parse(data)
        rows = list(rows_of(whole, "s", "ledger"))
        with ledger.runs_as_text():
            as_text = ledger.parse(data)
        assert len(as_text.runs) == count
        for lines, general in ((False, json_text), (True, jsonl_text)):
            expected = general(rows, None, False)
            pieces = list(ledger_json_chunks(as_text, "ledger", lines=lines, size=4))
            assert "".join(pieces) == expected, (count, lines)
            assert len(pieces) == -(-count // 4) + (not lines)
            assert "".join(ledger_json_chunks(whole, "ledger", lines=lines)) == expected
        if count >= 5:
            shown = json.loads(json_text(rows, None, False))["runs"]
            assert shown[3]["metric"] is None and shown[2]["audit"]["verdict"] == "confirmed"
            assert json.loads(jsonl_text(rows, None, False).splitlines()[4])["commit"] \
                == "11e75195"


@pytest.mark.parametrize(("text", "flags"), [
    (b'{"commit":"6e75195","metric":1}', (True, True)),  # a commit, in a string
    (b'{"a":"x6e7519"}', (True, True)),
    (b'{"metric":1e400}', (True, False)),  # a number: could read as infinity
    (b'{"metric":1E+308}', (True, False)),
    (b'{"metric":-2.5e100}', (True, False)),  # (finite, but said as could be: written anew)
    (b'[1e300]', (True, False)),
    (b'1e400', (True, False)),  # at the very start
    (b'{"d":"run 1e400"}', (True, False)),  # text in a string after a space: said so too
    (b'{"metric":1e-400}', (True, True)),  # reads as 0: never infinity
    (b'{"metric":1e99,"name":"some000"}', (True, True)),  # e000 after no digit
    (b'{"metric":' + b"9" * 309 + b"}", (False, False)),
    (b'{"metric":' + b"9" * 308 + b"}", (True, True)),
])
def test_number_flags_tell_a_number_that_could_read_as_infinity(
        text: bytes, flags: tuple[bool, bool]) -> None:
    """jsontext.number_flags: (no integer too large for a float, and no number whose text
    could read as infinity either), the whole ledger looked at once: an exponent of three
    digits outside a string or after a space, or 309 digits, are such; a commit's hex is not."""
    from git_autoresearch.ledger.jsontext import number_flags

    assert number_flags(text) == flags
    assert number_flags(b"\n".join([b'{"commit":"1e000"}', text, b"{}"])) == flags


def test_an_object_read_as_its_text_gives_the_values_of_the_decoded_object() -> None:
    """jsontext.ObjectText: the fields at hand without decoding again, every other field,
    the keys in their order, the length and ``in`` as the decoded object, and None or the
    default for a field it lacks, whether one of those at hand or not."""
    from git_autoresearch.ledger.jsontext import ObjectText, loads

    text = b'{"run":3,"status":"keep","metrics":{"m":1},"note":null,"metric":2.5}'
    value = loads(text)
    found = ObjectText(text, value, frozenset({"run", "metric", "segment"}))
    assert found.at_hand == {"run": 3, "metric": 2.5}
    assert (found["run"], found.get("metric"), found.get("segment"), found.get("segment", 0),
            "segment" in found, "run" in found) == (3, 2.5, None, 0, False, True)
    assert (found["metrics"], found.get("note", 1), found.get("gone", 1), "note" in found,
            "gone" in found) == ({"m": 1}, None, 1, True, False)
    assert found.whole() is found.whole() and found.whole() == value
    assert (list(found), len(found), dict(found)) == (list(value), 5, value)
    for key in ("segment", "gone"):
        with pytest.raises(KeyError):
            found[key]


_JSON_NUMBERS = st.one_of(st.integers(-2**70, 2**70),
                          st.floats(allow_nan=False, allow_infinity=False),
                          st.sampled_from(["1e400", "-1E+308", "1e-400", "0.000015", "9" * 310]))


@given(metric=_JSON_NUMBERS, base=st.one_of(st.none(), st.floats(allow_nan=False,
                                                                allow_infinity=False)),
       status=st.sampled_from(["keep", "discard", "crash", "checks_failed", "odd"]),
       segment=st.sampled_from(["", ',"segment":0', ',"segment":1', ',"segment":0.0']),
       extra=st.sampled_from(["", ',"audit":3', ',"description":"caf\\u00e9 1e999"',
                              ',"description":"\\udcff"', ' ']))
def test_a_record_as_written_reads_as_the_record_written_anew(
        metric: Any, base: float | None, status: str, segment: str, extra: str) -> None:
    """What ``log --json`` writes of a ledger line as it holds it (:attr:`Run.text`) reads
    back as the same object as the record written anew by json's encoder: the same fields,
    ``delta_pct`` as report.delta_pct gives it, non-finite numbers as null, a lone surrogate
    escaped; always JSON a strict reader takes (no infinity)."""
    from git_autoresearch.ledger import parse
    from git_autoresearch.review.query_format import run_text

    number = metric if isinstance(metric, str) else json.dumps(metric)
    line = f'{{"run":2,"metric":{number},"status":"{status}"{segment}{extra}}}'.encode()
    runs = parse(b'{"run":1,"metric":5,"status":"keep"}\n' + line + b"\n").segments[0].runs
    run = runs[-1]
    assert run.text == line.strip()
    as_written = run_text(run, 0, base, None, "ledger")
    anew = run_text(type(run)(run.data, run.line, run.segment), 0, base, None, "ledger")

    def finite_float(text: str) -> float:
        assert math.isfinite(float(text)), text
        return float(text)

    def strict(text: str) -> Any:
        return json.loads(text, parse_float=finite_float, parse_constant=pytest.fail)

    assert strict(as_written) == strict(anew)
    assert strict(as_written)["delta_pct"] == (None if status == "crash" or base is None else
                                               delta_pct(finite(run.data["metric"]), base))


def test_readers_take_a_huge_integer_and_a_name_that_is_not_utf8(repo: Path, ar: Tool) -> None:
    """A ledger line with a metric of 310 nines (too large for a float: read as JavaScript's
    JSON.parse reads it, infinity, so no metric, and written as null) and
    a description holding a lone surrogate (bytes that are not UTF-8, as the ledger keeps
    them) is read by every reader: ``log`` in each format, ``status``, ``summary`` and the
    dashboard, the surrogate shown as the escape ``\\udcff``, never an internal error."""
    night(repo, ar)
    huge = "9" * 310
    with (repo / ".auto" / "log.jsonl").open("ab") as fh:
        fh.write(b'{"run":6,"metric":%s,"status":"discard","description":"x\xed\xb3\xbf"}\n'
                 % huge.encode())
        fh.write(b'{"run":7,"metric":5,"metrics":{"count":-1e400,"mem_mb":3},"duration_s":1e999,'
                 b'"status":"discard","description":"seven"}\n')
    rows = ar(repo, "log", "--json").json()["runs"]
    assert (rows[-2]["metric"], rows[-2]["delta_pct"], rows[-2]["description"]) == \
        (None, None, "x\udcff")
    assert (rows[-1]["metrics"]["count"], rows[-1]["duration_s"]) == (None, None)
    assert ar(repo, "log", "--format", "{run} {description}", "--run", "6").out == "6 x\\udcff\n"
    csv_lines = ar(repo, "log", "--csv").out.splitlines()
    assert csv_lines[-2].startswith("6,0,discard,")
    # No reader writes a number JSON has no text for: null, or an empty CSV cell.
    header = csv_lines[0].split(",")
    seven = dict(zip(header, csv_lines[-1].split(","), strict=True))
    assert (seven["run"], seven["duration_s"], seven["count"], seven["mem_mb"]) == \
        ("7", "", "", "3")
    shown = ar(repo, "show", "7").out
    assert "Infinity" not in shown and '"count": null' in shown and '"duration_s": null' in shown
    assert ar(repo, "status", "--json").json()["segment"]["runs"] == 7
    assert ar(repo, "show", "6", "--json").json()["record"]["description"] == "x\udcff"
    assert "x\\udcff" in ar(repo, "summary").out
    ar(repo, "dashboard", "-o", str(repo / "page.html"))
    assert "x\\udcff" in (repo / "page.html").read_text(encoding="utf-8")


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"), reason="Linux pipes")
def test_log_json_widens_the_pipe_it_writes_into(repo: Path, ar: Tool) -> None:
    """``log --json`` into a pipe asks for a 1 MiB buffer (16 times Linux's 64 KiB), so that
    the megabytes of a long ledger are written in fewer wakeups of writer and reader; what
    is written is the same as into a file."""
    import fcntl
    import os
    import subprocess
    import sys

    night(repo, ar)
    for args in (["--json"], ["--json", "--run", "2.."]):  # every run as it stands; rows
        read, written = os.pipe()
        with subprocess.Popen([sys.executable, "-m", "git_autoresearch", "log", *args],
                              cwd=repo, stdout=written) as proc:
            os.close(written)
            with os.fdopen(read, "rb") as pipe:
                out = pipe.read()
                assert proc.wait() == 0
                size = fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ)
        assert size == (1 << 20 if args == ["--json"] else 1 << 16), args
        assert out.decode() == ar(repo, "log", *args).out


def test_status_summary_and_log_give_a_metric_alike(repo: Path, ar: Tool) -> None:
    """A whole metric is ``85`` in every document, as the ledger writes it, not ``85.0`` in
    status and analyze."""
    night(repo, ar)
    logged = {r["run"]: r["metric"] for r in ar(repo, "log", "--json").json()["runs"]}
    status = ar(repo, "status", "--json").json()
    for key in ("baseline", "best", "incumbent"):
        run = status["segment"][key]
        assert repr(run["metric"]) == repr(logged[run["run"]]), (key, run)
    gains = ar(repo, "analyze", "--json").json()
    assert "85.0" not in json.dumps(gains) and "90.0" not in json.dumps(gains)


def test_a_keep_line_without_metric_or_commit_is_shown_not_fatal(repo: Path, ar: Tool) -> None:
    """A keep line another tool (or a hand) appended with neither metric nor commit: status
    shows that incumbent with "-" for both (it died on the missing metric), and doctor says
    the keep names no commit (it said "kept at , which is not on ...")."""
    ar(repo, *start_args("--decision", "strict"))
    with (repo / ".auto" / "log.jsonl").open("a") as ledger:
        ledger.write('{"run": 99, "status": "keep"}\n')
    out = ar(repo, "status").out
    assert "incumbent   - (run 99, commit -): the last keep" in out, out
    said = ar(repo, "doctor", expect=None).out
    assert "run 99 is recorded as kept with no commit" in said, said
    assert "kept at ," not in said

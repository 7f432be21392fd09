"""The morning review of a session of several segments: figures are compared only across the
segments that measure alike (the same command, metric and direction, as each segment's header
records its configuration). The dashboard's headline, its table of segments and its charts,
``log --sort best``, and ``analyze`` each keep two measurements apart."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import Tool, commit_all, start_args, write

TENFOLD = "#!/bin/sh\necho \"score: $(( $(cat value.txt) * 10 ))\"\n"


def two_measurements(repo: Path, ar: Tool) -> None:
    """Segment 0 measures value.txt in cs (sh bench.sh): run 1 the baseline 100, run 2 kept
    90, run 3 discarded 95. Segment 1 measures the same in ms (sh tenfold.sh, ten times the
    number): run 4 the baseline 900, run 5 kept 800, run 6 discarded 840. Segment 2, a new
    goal under the same command: run 7 the baseline 800, run 8 kept 720. (The second
    benchmark is committed before the session: no commit by hand between the segments, so
    finalize replays every keep onto segment 0's baseline.)"""
    write(repo / "tenfold.sh", TENFOLD, 0o755)
    commit_all(repo, "measure in ms too")
    ar(repo, *start_args("--metric-unit", "cs"))
    for value, what in (("90", "lower"), ("95", "worse")):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", what)
    ar(repo, "start", "--new-segment", "--command", "sh tenfold.sh", "--metric-unit", "ms")
    for value, what in (("80", "lower again"), ("84", "worse again")):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", what)
    ar(repo, "start", "--new-segment", "--goal", "lower it further")
    write(repo / "value.txt", "72\n")
    ar(repo, "run", "-d", "lower still")


def text_of(html: str) -> str:
    """The text of an HTML fragment, tags dropped."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_the_dashboard_compares_only_segments_measured_alike(repo: Path, ar: Tool) -> None:
    two_measurements(repo, ar)
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    cards = text_of(page.split('<div class="cards">', 1)[1].split('<div class="legend">')[0])
    # The current segment's own figures, named as its; then segments 1 and 2 together (one
    # command), never segment 0's baseline of 100 cs against run 8's 720 ms.
    assert "segment 2: baseline → best 800 → 720 ms" in cards
    assert "segment 2: improvement -10.00%" in cards
    assert "segments 1, 2, measured alike: first baseline → best 900 → 720 (run 8), -20.00%" \
        in cards
    assert "The headline is segment 2's: segment 0 measured otherwise (another command, " \
        "metric or direction), so their figures are not compared with it" in cards
    table = page.split('<table class="segments">', 1)[1].split("</table>")[0]
    rows = [text_of(row) for row in re.findall(r"<tr data-segment.*?</tr>", table)]
    assert rows == [
        "0 lower the value score from `sh bench.sh` (lower is better) - 3 2 100 → 90 cs (run 2) "
        "-10.00%",
        "1 lower the value score from `sh tenfold.sh` (lower is better) segment 2 3 2 "
        "900 → 800 ms (run 5) -11.11%",
        "2 lower it further score from `sh tenfold.sh` (lower is better) segment 1 2 2 "
        "800 → 720 ms (run 8) -10.00%"]
    # A chart for each way of measuring, so that no axis holds both.
    titles = re.findall(r'<h2 class="chart-title">(.*?)</h2>', page)
    assert titles == ["segment 0: score from `sh bench.sh` (lower is better)",
                      "segments 1, 2: score from `sh tenfold.sh` (lower is better)"]
    charts = page.split('<h2 class="chart-title">')[1:]
    assert [re.findall(r'data-run="(\d+)"', chart.split("</svg>")[0]) for chart in charts] == \
        [["1", "2", "3"], ["4", "5", "6", "7", "8"]]
    assert "(cs)" in charts[0].split("</svg>")[0] and "(ms)" in charts[1].split("</svg>")[0]


def test_one_measurement_throughout_is_one_session_figure(repo: Path, ar: Tool) -> None:
    """Segments that all measure alike: the whole session's figure, one chart, no note."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    ar(repo, "start", "--new-segment", "--goal", "more")  # baseline 90 again
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "better still")
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    assert "whole session (segments 0, 1, measured alike)" in page
    assert "100 → 80 (run 4), -20.00%" in page
    assert 'class="note"' not in page and 'class="chart-title"' not in page
    assert page.count("<svg") == 1


def test_sort_best_ranks_each_measurement_apart_the_current_first(repo: Path, ar: Tool) -> None:
    two_measurements(repo, ar)
    # --sort metric sorts the numbers together, and says that they were measured apart.
    raw = ar(repo, "log", "--kept", "--sort", "metric", "--json")
    assert [r["metric"] for r in raw.json()["runs"]][:2] == [90, 100]
    assert raw.err.startswith("warning: --sort metric: the runs shown were measured in more "
                              "than one way")
    assert ar(repo, "log", "--kept", "--sort", "metric", "--segment", "0").err == ""
    said = ar(repo, "log", "--kept", "--sort", "best", "--json")
    assert [r["run"] for r in said.json()["runs"]] == [8, 5, 7, 4, 2, 1]
    assert said.err == (
        "warning: --sort best: the runs shown were measured in more than one way (another "
        "command, metric or direction); each is ranked apart, the current one first: "
        "segments 1, 2 (score from `sh tenfold.sh`), then segment 0 (score from `sh bench.sh`); "
        "--segment N shows one\n")
    worst = ar(repo, "log", "--kept", "--sort=-best", "--json").json()["runs"]
    assert [r["run"] for r in worst] == [4, 5, 7, 8, 1, 2]
    top = ar(repo, "log", "--kept", "--sort", "best", "-n", "1", "--json").json()["runs"]
    assert [(r["run"], r["metric"]) for r in top] == [(8, 720)]
    alone = ar(repo, "log", "--kept", "--segment", "0", "--sort", "best", "--json")
    assert [r["run"] for r in alone.json()["runs"]] == [2, 1] and alone.err == ""
    # The table says where each segment begins.
    table = ar(repo, "log", "--kept", "--sort", "best").out.splitlines()
    assert [line.split(":")[0] for line in table if line.startswith("--")] == [
        "-- segment 2", "-- segment 1", "-- segment 2", "-- segment 1", "-- segment 0"]


def test_analyze_speaks_of_a_segment_in_its_own_unit_and_plots_its_measurement(
        repo: Path, ar: Tool) -> None:
    two_measurements(repo, ar)
    text = ar(repo, "analyze", "--segment", "0", "--plot", ".auto/zero.svg").out
    assert "baseline 100 cs (run 1) -> best 90 cs (run 2): -10 cs, -10.00%" in text
    drawn = (repo / ".auto" / "zero.svg").read_text(encoding="utf-8")
    assert re.findall(r'data-run="(\d+)"', drawn) == ["1", "2", "3"]
    assert "score (cs)" in drawn
    ar(repo, "analyze", "--plot", ".auto/now.svg")
    drawn = (repo / ".auto" / "now.svg").read_text(encoding="utf-8")
    assert re.findall(r'data-run="(\d+)"', drawn) == ["4", "5", "6", "7", "8"]
    assert "run 7 (segment 2): keep 800 ms" in drawn


def test_the_pull_request_body_compares_a_keep_only_with_one_measured_alike(
        repo: Path, ar: Tool) -> None:
    """finalize's .auto/final.md gives each kept change against the keep before it, except
    across a change of measurement (run 5, the first keep of segment 1, after run 2's in
    cs)."""
    two_measurements(repo, ar)
    ar(repo, "finalize", "--samples", "0")
    body = (repo / ".auto" / "final.md").read_text(encoding="utf-8")
    table = body.split("## Kept changes\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(" | ")[:4] for line in table[2:]] == [
        ["| 2", table[2].split(" | ")[1], "90 cs", "-"],
        ["| 5", table[3].split(" | ")[1], "800 ms", "- (another measurement)"],
        ["| 8", table[4].split(" | ")[1], "720 ms", "-10.00%"]]


def test_a_new_segment_without_runs_yet_is_the_headline_and_says_so(
        repo: Path, ar: Tool) -> None:
    """Just after start --new-segment --no-baseline under another command: the cards are the
    new segment's (nothing yet), segment 0 is not compared with it, and the table of segments
    gives both."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "lower")
    write(repo / "tenfold.sh", TENFOLD, 0o755)
    commit_all(repo, "measure in ms")
    ar(repo, "start", "--new-segment", "--command", "sh tenfold.sh", "--no-baseline")
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    cards = text_of(page.split('<div class="cards">', 1)[1].split('<div class="legend">')[0])
    assert "segment 1: baseline → best - → -" in cards and "whole session" not in cards
    assert "The headline is segment 1's: segment 0 measured otherwise" in cards
    table = page.split('<table class="segments">', 1)[1].split("</table>")[0]
    assert [text_of(row) for row in re.findall(r"<tr data-segment.*?</tr>", table)] == [
        "0 lower the value score from `sh bench.sh` (lower is better) - 2 2 100 → 90 (run 2) "
        "-10.00%",
        "1 lower the value score from `sh tenfold.sh` (lower is better) - 0 0 - → - -"]

"""Seeing the results: confidence, analyze, summary, ideas, import, exports and the dashboard
(rendered in a real headless Chromium when one is installed)."""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES_DIR, Tool, git, runs, start_args, write

from git_autoresearch import ledger
from git_autoresearch.ledger import version as ledger_version
from git_autoresearch.review.dashboard import render, serve
from git_autoresearch.review.report import stability

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def generated_ledger(path: Path, count: int, seed: int = 7) -> list[dict[str, Any]]:
    """A pi-format ledger of ``count`` runs (lower is better) with a known story."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = [{"type": "config", "name": "generated", "metricName": "ms",
                                      "metricUnit": "ms", "bestDirection": "lower"}]
    best = 1000.0
    for n in range(1, count + 1):
        roll = rng.random()
        if n == 1:
            status, metric = "keep", best
        elif roll < 0.1:
            status, metric = "crash", 0
        elif roll < 0.2:
            status, metric = "checks_failed", round(best * 0.9, 3)
        elif roll < 0.35:
            metric = round(best * rng.uniform(0.9, 0.999), 3)
            status, best = "keep", metric
        else:
            status, metric = "discard", round(best * rng.uniform(1.0, 1.2), 3)
        records.append({"run": n, "commit": f"{n:07x}", "metric": metric, "metrics": {},
                        "status": status, "description": f"idea {n}\twith a tab",
                        "timestamp": 1764400000000 + n, "segment": 0, "confidence": None,
                        "asi": {"hypothesis": f"h{n}"}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records[1:]


def test_stability_label() -> None:
    seg = ledger.parse(b'{"type":"config","bestDirection":"lower"}\n' + b"".join(
        json.dumps({"run": i, "metric": m, "status": "keep"}).encode() + b"\n"
        for i, m in enumerate([100, 100.5, 99.8, 100.2], start=1))).current
    steady = stability(seg)
    assert steady is not None and steady["label"] == "high"
    noisy = ledger.parse(b"".join(
        json.dumps({"run": i, "metric": m, "status": "keep"}).encode() + b"\n"
        for i, m in enumerate([100, 80, 120, 60], start=1))).current
    unsteady = stability(noisy)
    assert unsteady is not None and unsteady["label"] == "low"


def _steady_progress(repo: Path, ar: Tool, script: str, *extra: str) -> dict[str, Any]:
    """A strict session whose keeps go 100, 90, 80, 70, 60 (the seed's relative MAD over the
    last five: 12.5 %, "low"), measured by ``script``; returns status --json's stability."""
    write(repo / "bench.sh", script, 0o755)
    git(repo, "commit", "-q", "--allow-empty", "-am", "bench")
    ar(repo, *start_args("--decision", "strict", *extra))
    for value in (90, 80, 70, 60):
        write(repo / "value.txt", f"{value}\n")
        assert ar(repo, "run", "-d", str(value), "--json").json()["status"] == "keep"
    found: dict[str, Any] = ar(repo, "status", "--json").json()["segment"]["stability"]
    return found


STEADY = "#!/bin/sh\necho \"score: $(cat value.txt)\"\n"


def test_steady_progress_is_not_read_as_noise(repo: Path, ar: Tool) -> None:
    """The seed's label over the last five keeps reads steady progress as
    "low" and advised raising runs_per_experiment; nothing here measures the noise, so the
    label stays (the seed's format) and no advice is given, saying why."""
    found = _steady_progress(repo, ar, STEADY)
    assert found == {"label": "low", "relative_mad": 0.125, "keeps": 5, "noise": None,
                     "advice": None}
    line = next(ln for ln in ar(repo, "status").out.splitlines() if ln.startswith("stability"))
    assert line == ("stability   low (the last 5 keeps spread 12.5%, by their gains as by "
                    "noise; nothing measures the noise yet: no repeat samples, no no-change runs)")


def test_repeat_samples_measure_the_noise(repo: Path, ar: Tool) -> None:
    """Repeat samples that agree say the spread of the keeps is progress."""
    found = _steady_progress(repo, ar, STEADY, "--runs-per-experiment", "3")
    assert found == {"label": "low", "relative_mad": 0.125, "keeps": 5,
                     "noise": {"relative_spread": 0.0, "source": "repeat samples of 5 runs"},
                     "advice": None}
    line = next(ln for ln in ar(repo, "status").out.splitlines() if ln.startswith("stability"))
    assert line == ("stability   low (the last 5 keeps spread 12.5%, by their gains as by "
                    "noise; the noise, from repeat samples of 5 runs, is 0.0%)")


def test_noisy_repeat_samples_advise_more_runs(repo: Path, ar: Tool) -> None:
    """Repeat samples 10 apart (sample 1, 2, 3: -10, 0, +10) are noise of
    12.5 % by their median run: the seed's advice stands, saying what it read."""
    noisy = ("#!/bin/sh\necho \"score: $(( $(cat value.txt) + (AUTORESEARCH_SAMPLE - 2) * 10 "
             "))\"\n")
    found = _steady_progress(repo, ar, noisy, "--runs-per-experiment", "3")
    assert found == {"label": "low", "relative_mad": 0.125, "keeps": 5,
                     "noise": {"relative_spread": 0.125, "source": "repeat samples of 5 runs"},
                     "advice": "consider raising runs_per_experiment"}
    line = next(ln for ln in ar(repo, "status").out.splitlines() if ln.startswith("stability"))
    assert line == ("stability   low (the last 5 keeps spread 12.5%, by their gains as by "
                    "noise; the noise, from repeat samples of 5 runs, is 12.5%: consider raising "
                    "runs_per_experiment)")


def test_the_sequential_rules_noise_estimate_is_the_one_read(repo: Path, ar: Tool) -> None:
    """Under the sequential rule, the noise is the rule's own estimate (the
    spread of the incumbent's pool, as status's noise line shows it), named as such; the rule
    samples by itself, so runs_per_experiment is not advised."""
    ar(repo, *start_args())
    for value in (90, 80, 70, 60):
        write(repo / "value.txt", f"{value}\n")
        assert ar(repo, "run", "-d", str(value), "--json").json()["status"] == "keep"
    found = ar(repo, "status", "--json").json()
    pool = found["noise"]["incumbent_samples"]
    assert found["segment"]["stability"] == {
        "label": "low", "relative_mad": 0.125, "keeps": 5,
        "noise": {"relative_spread": 0.0, "source": f"the sequential rule's pool of {pool} "
                  "samples of the incumbent"}, "advice": None}


def test_status_reads_the_same_noise_off_the_session_branch(repo: Path, ar: Tool) -> None:
    """Off the session branch (on main, whose HEAD is the baseline's commit), status read the
    baseline's samples as the incumbent's, a noise figure of other samples than on the
    branch; the incumbent is the session branch's tip wherever the work tree is."""
    ar(repo, *start_args())
    for value in ("90", "95", "97"):
        write(repo / "value.txt", f"{value}\n")
        ar(repo, "run", "-d", value)
    on_branch = ar(repo, "status", "--json").json()["noise"]
    git(repo, "switch", "-q", "main")
    assert ar(repo, "status", "--json").json()["noise"] == on_branch
    # once workers are added, the main work tree is worker main: the same off its branch
    git(repo, "switch", "-q", "autoresearch/s1")
    ar(repo, "worker", "add", "1")
    git(repo, "switch", "-q", "main")
    assert ar(repo, "status", "--json").json()["noise"] == on_branch


def test_confidence_is_written_into_records(repo: Path, ar: Tool) -> None:
    """Each record's ``confidence`` is pi's for the runs up to it: pi-autoresearch 1.6.2,
    extensions/pi-autoresearch/index.ts:426 (computeConfidence) under node over these metrics
    and statuses gives null, null, 2, 4, 6.666666666666667 (label: likely real, index.ts:2360).
    """
    ar(repo, *start_args())
    for value in ("90", "95", "92", "80"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", value)
    assert [(r["metric"], r["status"], r["confidence"]) for r in runs(repo)] == [
        (100, "keep", None), (90, "keep", None), (95, "discard", 2), (92, "discard", 4),
        (80, "keep", 6.666666666666667)]
    status = ar(repo, "status", "--json").json()["segment"]
    assert (status["confidence"], status["confidence_label"]) == (6.666666666666667,
                                                                  "likely real")


def test_analyze_matches_an_independent_count(tmp_path: Path, repo: Path, ar: Tool) -> None:
    records = generated_ledger(repo / ".auto" / "log.jsonl", 300)
    data = ar(repo, "analyze", "--json").json()
    statuses = [r["status"] for r in records]
    assert data["counts"] == {s: statuses.count(s) for s in
                              ("keep", "discard", "crash", "checks_failed")}
    assert data["keep_rate"] == round(statuses.count("keep") / 300, 4)
    kept = [r for r in records if r["status"] == "keep"]
    expected = []
    for before, after in zip(kept, kept[1:], strict=False):
        expected.append((after["run"], round(before["metric"] - after["metric"], 12)))
    expected.sort(key=lambda g: g[1], reverse=True)
    assert [(g["run"], g["gain"]) for g in data["gains"]] == expected
    assert data["baseline"]["metric"] == 1000 and data["best"]["metric"] == kept[-1]["metric"]
    streak = longest = 0
    for s in statuses:
        streak = 0 if s == "keep" else streak + 1
        longest = max(longest, streak)
    assert data["longest_streak_without_keep"] == longest
    positions = [i for i, r in enumerate(records) if r["status"] == "keep"]
    assert [s["runs"] for s in data["runs_per_improvement"]] == [
        b - a for a, b in zip(positions, positions[1:], strict=False)]


def test_analyze_plot_svg_and_png(repo: Path, ar: Tool, tmp_path: Path) -> None:
    generated_ledger(repo / ".auto" / "log.jsonl", 40)
    ar(repo, "analyze", "--plot", str(tmp_path / "p.svg"))
    text = (tmp_path / "p.svg").read_text()
    assert text.count('<g class="mark') == 40 and 'class="best"' in text
    res = ar(repo, "analyze", "--plot", str(tmp_path / "p.png"), expect=None)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert res.code == 3 and "git-autoresearch[plot]" in res.err
    else:
        assert res.code == 0 and (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_summary_is_bounded_and_keeps_best_and_last(repo: Path, ar: Tool) -> None:
    records = generated_ledger(repo / ".auto" / "log.jsonl", 10000)
    write(repo / ".auto" / "prompt.md", "# s\n\n## Rules\n- only src/\n\n## Learnings\n- x\n")
    write(repo / ".auto" / "ideas.md", "- [ ] unroll\n- [x] tried\n")
    text = ar(repo, "summary", "--max-bytes", "4000").out
    assert len(text.encode()) <= 4000
    best = min((r for r in records if r["status"] == "keep"), key=lambda r: r["metric"])
    assert f"- run {best['run']} keep" in text
    assert f"- run {records[-1]['run']} " in text
    assert "## Rules\n- only src/" in text and "- unroll" in text
    assert "## Learnings\n- x" in text  # the agent's learnings, after a context reset too
    assert ar(repo, "summary", "--max-bytes", "4000").out == text, "deterministic"
    # --json (an agent harness reads every command's document): the same text, and its size
    document = ar(repo, "summary", "--max-bytes", "4000", "--json").json()
    assert document == {"schema": "git-autoresearch:summary/1", "summary": text,
                        "bytes": len(text.encode())}


def test_ideas_backlog(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    ar(repo, "ideas", "add", "unroll", "the", "loop")
    ar(repo, "ideas", "add", "cache the table")
    assert ar(repo, "ideas", "next", "--json").json()["idea"]["text"] == "unroll the loop"
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "unrolled")
    ar(repo, "ideas", "done", "1", "--run", "2")
    assert (repo / ".auto" / "ideas.md").read_text() == (
        "# Ideas backlog\n\n- [x] ~~unroll the loop~~ → run 2, keep, 90\n"
        "- [ ] cache the table\n")
    listed = ar(repo, "ideas", "list", "--json").json()["ideas"]
    assert [i["text"] for i in listed] == ["cache the table"]
    before = (repo / ".auto" / "ideas.md").read_bytes()
    assert ar(repo, "ideas", "done", "9", expect=2).err == \
        "git autoresearch: no idea 9 (there are 2)\n"
    assert (repo / ".auto" / "ideas.md").read_bytes() == before


def test_pi_session_read_in_place_and_imported(repo: Path, ar: Tool, tmp_path: Path) -> None:
    write(repo / ".auto" / "log.jsonl", (FIXTURES_DIR / "pi-autoresearch-log.jsonl").read_text())
    status = ar(repo, "status", "--json").json()
    assert status["segment"]["baseline"]["metric"] == 2210.0
    assert status["segment"]["best"]["metric"] == 2210.0
    first = ar(repo, "log", "--json", "--segment", "0").json()["runs"]
    assert [r["run"] for r in first] == [1, 2, 3, 4, 5, 6]
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    out = ar(other, "import", str(repo / ".auto" / "log.jsonl"), "--json").json()
    assert out["lines"] == 12
    imported = (other / ".auto" / "log.jsonl").read_text().splitlines()
    original = (FIXTURES_DIR / "pi-autoresearch-log.jsonl").read_text().splitlines()
    assert imported == original, "no field lost"
    seg0 = ar(other, "analyze", "--segment", "0", "--json").json()
    assert seg0["baseline"]["metric"] == 412.5 and seg0["best"]["metric"] == 365.3


def test_kept_runs_read_from_trailers_alone_keep_their_numbers(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    for value in ("90", "95", "80"):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", f"value {value}")
    shutil.rmtree(repo / ".auto")
    res = ar(repo, "log", "--json")
    assert [r["run"] for r in res.json()["runs"]] == [2, 4]
    assert "Result: trailers" in res.err
    assert "value 80" in ar(repo, "show", "4").out


def test_flat_pi_ledger_read_in_place(repo: Path, ar: Tool) -> None:
    write(repo / "autoresearch.jsonl", (FIXTURES_DIR / "pi-autoresearch-log.jsonl").read_text())
    assert ar(repo, "status", "--json").json()["total_runs"] == 8


def test_import_karpathy_results_tsv(repo: Path, ar: Tool, tmp_path: Path) -> None:
    tsv = write(tmp_path / "results.tsv",
                "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"
                "a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n"
                "b2c3d4e\t0.993200\t44.2\tkeep\tincrease LR to 0.04\n"
                "c3d4e5f\t1.005000\t44.0\tdiscard\tswitch to GeLU activation\n"
                "d4e5f6g\t0.000000\t0.0\tcrash\tdouble model width (OOM)\n")
    ar(repo, "import", str(tsv))
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [r["status"] for r in rows] == ["keep", "keep", "discard", "crash"]
    assert rows[1]["metric"] == 0.9932 and rows[1]["metrics"] == {"memory_gb": 44.2}
    assert rows[2]["source_row"]["description"] == "switch to GeLU activation"
    status = ar(repo, "status", "--json").json()
    assert status["metric_name"] == "val_bpb" and status["segment"]["best"]["metric"] == 0.9932


def test_import_loop_seed_session(repo: Path, ar: Tool, tmp_path: Path) -> None:
    folder = tmp_path / "seeded" / ".autoresearch"
    write(folder / "config.json", json.dumps({
        "goal": "maximize throughput", "command": "make bench", "direction": "maximize",
        "session_id": "tp", "metric_pattern": "ops: (\\d+)"}))
    write(folder / "results.tsv",
          "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
          "0\tabc1234\t100\tkeep\t12\tBaseline\n"
          "1\t-\t90\tdiscard\t11\tsmaller buffer [loss=0.5]\n"
          "2\tdef5678\t130\tkeep\t12\tbatch writes\n"
          "3\t-\t-\tcrash\t3\tsyntax error\n")
    ar(repo, "import", str(tmp_path / "seeded"))
    status = ar(repo, "status", "--json").json()
    assert status["goal"] == "maximize throughput" and status["direction"] == "higher"
    assert status["segment"]["best"]["metric"] == 130
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [r["experiment"] for r in rows] == [0, 1, 2, 3]
    assert rows[3]["status"] == "crash" and rows[0]["duration_s"] == 12


def test_result_trailers_alone(repo: Path, ar: Tool) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m",
        'faster\n\nResult: {"status":"keep","total_µs":14600,"compile_µs":4100}')
    git(repo, "commit", "-q", "--allow-empty", "-m",
        'even faster\n\nResult: {"status":"keep","total_µs":12000}')
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["metric"], r["description"]) for r in rows] == [(14600, "faster"),
                                                             (12000, "even faster")]
    status = ar(repo, "status", "--json").json()
    assert status["segment"]["best"]["metric"] == 12000
    assert any("Result: trailers" in w for w in status["warnings"])


def test_log_csv(repo: Path, ar: Tool) -> None:
    generated_ledger(repo / ".auto" / "log.jsonl", 5)
    rows = list(csv.reader(io.StringIO(ar(repo, "log", "--csv").out)))
    assert rows[0][:4] == ["run", "segment", "status", "metric"]
    assert len(rows) == 6 and all(len(r) == len(rows[0]) for r in rows)
    assert rows[1][8] == "idea 1\twith a tab"


def test_dashboard_file_is_self_contained(repo: Path, ar: Tool, tmp_path: Path) -> None:
    generated_ledger(repo / ".auto" / "log.jsonl", 50)
    ar(repo, "dashboard", "-o", str(tmp_path / "d.html"))
    page = (tmp_path / "d.html").read_text()
    assert page.count('<g class="mark') == 50
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "src=" not in page
    assert "Content-Security-Policy" in page


def test_dashboard_to_stdout_with_a_dash(repo: Path, ar: Tool) -> None:
    """``-o -`` writes the page to stdout, as - means for git and most tools, not to a file
    named - in the work tree."""
    generated_ledger(repo / ".auto" / "log.jsonl", 5)
    page = ar(repo, "dashboard", "-o", "-").out
    assert page.startswith("<!DOCTYPE html>") and page.count('<g class="mark') == 5
    assert not (repo / "-").exists()


def test_dashboard_serve_refreshes_on_ledger_change(repo: Path, tmp_path: Path) -> None:
    path = repo / ".auto" / "log.jsonl"
    generated_ledger(path, 5)
    stop = threading.Event()
    urls: list[str] = []

    def build() -> str:
        return render(ledger.read(path), goal="g", metric_name="ms", unit="ms",
                      session_id="s")

    thread = threading.Thread(target=serve, kwargs={
        "build": build, "version": lambda: ledger_version(path), "port": 0,
        "ready": urls.append, "stop": stop}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not urls and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        first = urllib.request.urlopen(urls[0] + "version").read()
        page = urllib.request.urlopen(urls[0]).read().decode()
        assert page.count('<g class="mark') == 5 and urls[0].startswith("http://127.0.0.1:")
        generated_ledger(path, 7)
        assert urllib.request.urlopen(urls[0] + "version").read() != first
        assert urllib.request.urlopen(urls[0]).read().decode().count('<g class="mark') == 7
    finally:
        stop.set()
        thread.join(timeout=5)


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")
def test_dashboard_in_a_real_browser(repo: Path, ar: Tool, tmp_path: Path) -> None:
    records = generated_ledger(repo / ".auto" / "log.jsonl", 400)
    page = tmp_path / "dashboard.html"
    ar(repo, "dashboard", "-o", str(page))
    assert CHROMIUM is not None  # for mypy: the test is skipped without Chromium
    flags = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    body = dom.split("<body", 1)[1].split(">", 1)[0]
    assert 'data-errors="0"' in body, body
    assert 'data-requests="0"' in body, body
    assert f'data-marks="{len(records)}"' in body, body
    shot = tmp_path / "dashboard.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1280,1400", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 10000


# --- found by trying to break it ----------------------------------------------------------


def test_trailers_of_non_kept_runs_are_not_kept_runs(repo: Path, ar: Tool, tmp_path: Path) -> None:
    git(repo, "commit", "-q", "--allow-empty", "-m", 'a\n\nResult: {"status":"keep","ms":30}')
    git(repo, "commit", "-q", "--allow-empty", "-m", 'b\n\nResult: {"status":"discard","ms":20}')
    git(repo, "commit", "-q", "--allow-empty", "-m", 'c\n\nResult: {"status":"keep","ms":25}')
    assert [r["metric"] for r in ar(repo, "log", "--json").json()["runs"]] == [30, 25]
    ar(repo, "dashboard", "-o", str(tmp_path / "d.html"))
    assert (tmp_path / "d.html").read_text().count('<g class="mark') == 2
    status = ar(repo, "status", "--json").json()
    assert status["branch"] == "main"


def test_huge_metrics_never_break_json(repo: Path, ar: Tool) -> None:
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"x","metricName":"m","bestDirection":"lower"}\n'
          '{"run":1,"metric":1e308,"status":"keep"}\n'
          '{"run":2,"metric":-1e308,"status":"keep"}\n'
          '{"run":3,"metric":5,"status":"discard"}\n')
    for args in (["log", "--json"], ["status", "--json"], ["analyze", "--json"]):
        json.loads(ar(repo, *args).out)
    assert "inf" not in ar(repo, "analyze").out


@pytest.mark.parametrize("name,content,message", [
    ("bad.jsonl", "not json at all\n", "bad.jsonl:1: not JSON"),
    ("results.tsv", "commit\tval_bpb\tstatus\tdescription\na\tabc\tkeep\tx\n",
     "val_bpb 'abc' is not a finite number"),
])
def test_import_refuses_bad_input(repo: Path, ar: Tool, tmp_path: Path, name: str, content: str,
                                  message: str) -> None:
    source = write(tmp_path / name, content)
    res = ar(repo, "import", str(source), expect=2)
    assert message in res.err and "Traceback" not in res.err
    assert not (repo / ".auto" / "log.jsonl").exists()


def test_import_refuses_non_utf8_and_odd_configs(repo: Path, ar: Tool, tmp_path: Path) -> None:
    latin = write(tmp_path / "results.tsv", b"commit\tval_bpb\tstatus\tdescription\n"
                  + b"a\t1.0\tkeep\tcaf\xe9\n")
    assert ar(repo, "import", str(latin), expect=2).err == \
        f"git autoresearch: {latin} is not UTF-8 text (byte 48)\n"
    folder = tmp_path / "seed" / ".autoresearch"
    write(folder / "config.json", "[1, 2]")
    write(folder / "results.tsv", "experiment\tcommit\tmetric\tstatus\tduration_s\tdescription\n"
                                  "0\ta\t1\tkeep\t1\tb\n")
    assert ar(repo, "import", str(tmp_path / "seed"), expect=2).err == \
        f"git autoresearch: {folder / 'config.json'} is not a JSON object\n"
    assert not (repo / ".auto").exists()
    write(folder / "config.json", json.dumps({"goal": "g", "metric_name": "size_kb",
                                              "metric_unit": "KB"}))
    ar(repo, "import", str(tmp_path / "seed"))
    status = ar(repo, "status", "--json").json()
    assert status["metric_name"] == "size_kb" and status["metric_unit"] == "KB"


def test_plot_errors(repo: Path, ar: Tool, tmp_path: Path) -> None:
    generated_ledger(repo / ".auto" / "log.jsonl", 5)
    assert ar(repo, "analyze", "--plot", str(tmp_path / "x.jpg"), expect=2).err == \
        f"git autoresearch: --plot {tmp_path / 'x.jpg'}: write .svg or .png\n"
    assert not (tmp_path / "x.jpg").exists()
    assert "does not exist" in ar(repo, "analyze", "--plot", str(tmp_path / "no" / "x.svg"),
                                  expect=3).err


def test_summary_at_its_smallest_keeps_whole_lines(repo: Path, ar: Tool) -> None:
    records = generated_ledger(repo / ".auto" / "log.jsonl", 500)
    text = ar(repo, "summary", "--max-bytes", "1500").out
    assert len(text.encode()) <= 1500 and text.endswith("\n")
    best = min((r for r in records if r["status"] == "keep"), key=lambda r: r["metric"])
    assert f"- run {best['run']} keep" in text and f"- run {records[-1]['run']} " in text
    assert ar(repo, "summary", "--max-bytes", "200", expect=2).err == (
        "git autoresearch: Invalid value for '--max-bytes': 200 is not in the range x>=1500. "
        "(see git autoresearch summary -h)\n")


def test_dashboard_serve_on_a_busy_port(repo: Path, ar: Tool) -> None:
    import socket

    generated_ledger(repo / ".auto" / "log.jsonl", 3)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = ar(repo, "dashboard", "--serve", "--port", str(port), expect=3)
    assert "cannot serve" in res.err


def test_dashboard_serve_answers_only_its_own_host_names(repo: Path) -> None:
    """DNS rebinding: a web page whose name resolves to 127.0.0.1 sends its own Host header, and
    must not read the session; only 127.0.0.1, localhost and [::1] on the served port are served."""
    import http.client

    path = repo / ".auto" / "log.jsonl"
    generated_ledger(path, 3)
    stop = threading.Event()
    urls: list[str] = []
    thread = threading.Thread(target=serve, kwargs={
        "build": lambda: "page", "version": lambda: "1", "port": 0, "ready": urls.append,
        "stop": stop}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not urls and time.monotonic() < deadline:
        time.sleep(0.05)
    port = int(urls[0].rstrip("/").rsplit(":", 1)[1])

    def status(host: str | None, target: str = "/") -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.putrequest("GET", target, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        code = conn.getresponse().status
        conn.close()
        return code

    host: str | None
    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}",
                     f"LOCALHOST:{port}"):
            assert status(host) == 200, host
            assert status(host, "/version") == 200, host
        for host in (f"attacker.example:{port}", "attacker.example", f"127.0.0.1:{port + 1}",
                     "localhost", f"127.0.0.1.attacker.example:{port}", None):
            assert status(host) == 403, host
            assert status(host, "/version") == 403, host
    finally:
        stop.set()
        thread.join(timeout=5)


def test_the_value_axis_names_the_unit_once() -> None:
    from git_autoresearch.review.plot import axis_label

    assert axis_label("total_ms", "ms") == "total_ms"
    assert axis_label("total_µs", "µs") == "total_µs"
    assert axis_label("val_bpb", "") == "val_bpb"
    assert axis_label("latency", "ms") == "latency (ms)"


def test_the_svg_legend_sits_above_the_plot_clear_of_the_data() -> None:
    import re

    from git_autoresearch.ledger import parse
    from git_autoresearch.review.plot import TOP, svg

    book = parse((FIXTURES_DIR / "pi-autoresearch-log.jsonl").read_bytes())
    text = svg(book.segments, "parse_ms", "ms", legend=True)
    legend = re.findall(r'<circle cx="[\d.]+" cy="([\d.]+)" r="4" fill="#[0-9a-f]+"/><text', text)
    assert len(legend) == 4 and all(float(cy) < TOP for cy in legend)


def test_the_dashboard_shows_the_whole_session_across_segments(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    ar(repo, "start", "--new-segment")  # baseline 90 again
    write(repo / "value.txt", "80\n")
    ar(repo, "run", "-d", "better still")
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text()
    assert "whole session (segments 0, 1, measured alike)" in page
    assert "100 → 80 (run 4), -20.00%" in page


def test_status_names_a_metric_named_by_its_unit_once(repo: Path, ar: Tool) -> None:
    """A pi session whose metric is named by its unit (metricName and metricUnit both ms)
    reads "metric ms", not "metric ms in ms"; another unit is still named."""
    ledger = repo / ".auto" / "log.jsonl"
    header = {"type": "config", "name": "speed", "metricName": "ms", "metricUnit": "ms",
              "bestDirection": "lower"}
    run = {"run": 1, "commit": "abc1234", "metric": 12, "metrics": {}, "status": "keep",
           "description": "baseline", "timestamp": 1_764_417_600_000, "segment": 0}
    write(ledger, json.dumps(header) + "\n" + json.dumps(run) + "\n")
    lines = ar(repo, "status").out.splitlines()
    assert "metric      ms, lower is better" in lines
    write(ledger, json.dumps({**header, "metricUnit": "s"}) + "\n" + json.dumps(run) + "\n")
    assert "metric      ms in s, lower is better" in ar(repo, "status").out.splitlines()


def test_the_summary_cuts_a_long_reason_at_a_word_and_marks_it() -> None:
    from git_autoresearch.ledger import Run
    from git_autoresearch.review.analysis import _run_line

    reason = ("not shown to be better (-15.7%): 16 sample(s) against the incumbent's earlier "
              "samples and one of it taken now (10.088); stopped early")
    line = _run_line(Run({"run": 5, "status": "discard", "metric": 13.2, "description": "d",
                          "reason": reason}, 5, 0))
    shown = line[line.index("[") + 1:line.index("]")]
    assert shown.endswith(" …") and reason.startswith(shown.removesuffix(" …"))
    assert len(shown) <= 120 and reason[len(shown) - 2] == " "  # (cut between words)

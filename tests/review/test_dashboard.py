"""Reviewing in the dashboard: each run's patch embedded in the page (escaped, no network), the
keeps a ``finalize`` replayed marked, the keeps it left out with why, and a card with the final
branch, its checks and the A/B result. Real repositories."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Tool, commit_all, git, runs, write

from git_autoresearch.ledger import parse
from git_autoresearch.review import run_commits
from git_autoresearch.review.dashboard import render

# The score is value.txt plus other.txt: keeps of either file improve it.
BENCH = '#!/bin/sh\necho "score: $(( $(cat value.txt) + $(cat other.txt) ))"\n'
START = ["start", "--goal", "lower the value", "--session-id", "s1", "--command", "sh bench.sh",
         "--metric-name", "score", "--metric-pattern", r"score: (\S+)", "--direction", "lower"]


def night(repo: Path, ar: Tool) -> None:
    """Runs: 1 baseline, keeps 2 (value.txt), 3 (other.txt, with markup), 4 (value.txt again),
    a discard 5 that adds a huge file, and a discard 6."""
    write(repo / "bench.sh", BENCH, 0o755)
    write(repo / "other.txt", "10\n")
    commit_all(repo)
    ar(repo, *START)
    steps = (("90", "10", "lower the value", None),
             ("90", "5", "lower the other", "<b>tag</b> & more\n"),
             ("80", "5", "lower the value again", None),
             ("85", "5", "worse, and huge", "".join(f"line {i}\n" for i in range(20000))),
             ("95", "5", "worse still", None))
    for value, other, what, extra in steps:
        write(repo / "value.txt", f"{value}\n")
        write(repo / "other.txt", f"{other}\n")
        if extra is not None:
            write(repo / ("notes.html" if "<b>" in extra else "huge.txt"), extra)
        ar(repo, "run", "-d", what)


def row(page: str, run: int) -> str:
    """The table row of ``run`` (its diff included)."""
    found = re.search(rf'<tr data-run="{run}">.*?</tr>', page, re.S)
    assert found, f"no row for run {run}"
    return found.group(0)


def test_each_run_diff_the_final_marks_and_card_are_in_the_page(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    assert [r["status"] for r in runs(repo)] == \
        ["keep", "keep", "keep", "keep", "discard", "discard"]
    done = ar(repo, "finalize", "--drop", "4", "--checks-command", "test -f value.txt",
              "--samples", "2", "--json", expect=None).json()
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    keep = git(repo, "log", "-1", "--format=%H", "--grep=Autoresearch-Run: 2", "autoresearch/s1")
    assert f"<summary>diff</summary><pre>commit {keep}\n\n value.txt | 2 +-\n" in row(page, 2)
    assert "\n-100\n+90\n" in row(page, 2)
    assert "+&lt;b&gt;tag&lt;/b&gt; &amp; more" in row(page, 3)  # escaped, not markup
    assert "<b>tag</b>" not in page
    assert "\n-90\n+80\n" in row(page, 4)
    assert "\n-80\n+95\n" in row(page, 6)
    huge = row(page, 5)
    assert "+line 0\n" in huge and "+line 19999" not in huge
    cut = re.search(r"… cut, (\d+) more lines", huge)
    assert cut and 10000 < int(cut.group(1)) < 20000
    assert "no diff: the baseline kept no change" in row(page, 1)
    final = git(repo, "rev-parse", "--short=7", "autoresearch/s1-final")
    assert done["runs"] == [2, 3] and done["commit"] == final
    for run in (2, 3):
        assert '<span class="final" title="replayed as ' in row(page, run)
    assert "⇢ final" not in row(page, 4) and "left out of the final branch: --drop" in \
        row(page, 4)
    card = re.search(r'<div class="final-card">.*?</div></div>', page, re.S)
    assert card, "no final card"
    text = re.sub(r"<[^>]+>", "", card.group(0))
    assert "autoresearch/s1-final" in text and final in text
    assert "checks passed: test -f value.txt" in text
    assert f"verdict: {done['verdict']}" in text and "samples: 2 base, 2 final" in text
    relative = done["relative"] * 100
    assert f"effect {relative:+.2f}% [" in text
    assert f"final minus base {done['effect']}" in text
    # Still offline: the Content-Security-Policy is kept and nothing names a URL to fetch.
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", page)
    assert not re.search(r"url\(", page)


def test_runs_without_a_commit_say_why(repo: Path, ar: Tool) -> None:
    night(repo, ar)
    ar(repo, "gc", "--force")
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    assert "no diff: its attempt ref was deleted by gc" in row(page, 5)
    assert "<summary>diff</summary>" in row(page, 2)  # keeps stay on the session branch


def test_a_ledger_from_another_tool_without_commits(repo: Path, ar: Tool) -> None:
    """A ledger as pi-autoresearch 1.6.2 writes it (extensions/pi-autoresearch/jsonl.ts): runs
    whose ``commit`` names nothing in this repository get no diff, and say so."""
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"x","metricName":"ms","metricUnit":"ms",'
          '"bestDirection":"lower"}\n'
          '{"run":1,"commit":"abcdef1","metric":10,"metrics":{},"status":"keep",'
          '"description":"base","timestamp":1,"segment":0,"confidence":null}\n'
          '{"run":2,"metric":9,"metrics":{},"status":"discard",'
          '"description":"other","timestamp":2,"segment":0,"confidence":null}\n')
    ar(repo, "dashboard", "-o", "page.html", expect=None)
    page = (repo / "page.html").read_text(encoding="utf-8")
    assert "no diff: commit abcdef1 is not in this repository" in row(page, 1)
    assert "no diff: recorded without a commit" in row(page, 2)


def test_render_without_diffs_keeps_the_page_as_it_was() -> None:
    """``render`` with no ``diffs`` (a view never runs git): no diff element at all."""
    book = parse(b'{"type":"config","name":"x","metricName":"ms","metricUnit":"ms",'
                 b'"bestDirection":"lower"}\n{"run":1,"commit":"abc1234","metric":1,'
                 b'"metrics":{},"status":"keep","description":"d","timestamp":1,"segment":0,'
                 b'"confidence":null}\n')
    page = render(book, goal="g", metric_name="ms", unit="ms", session_id="s")
    assert '<details class="diff">' not in page and 'class="final-card"' not in page
    assert "no diff" not in page
    page = render(book, goal="g", metric_name="ms", unit="ms", session_id="s",
                  diffs={1: ("+<i>\n", "")})
    assert '<details class="diff"><summary>diff</summary><pre>+&lt;i&gt;\n</pre></details>' in page


def test_past_the_total_the_oldest_runs_go_without(repo: Path, ar: Tool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    night(repo, ar)
    monkeypatch.setattr(run_commits, "DIFF_TOTAL_BYTES", 2000)
    ar(repo, "dashboard", "-o", "page.html")
    page = (repo / "page.html").read_text(encoding="utf-8")
    assert "<summary>diff</summary>" in row(page, 6)  # the newest fits
    for run in (5, 4, 3, 2):
        assert "no diff: left out: the page holds at most 1.95312 KiB of diffs, spent on newer " \
            "runs" in row(page, run)


def test_all_runs_at_once_find_what_one_run_finds(repo: Path, ar: Tool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_commits.run_commits`` (every run, a few git calls) agrees with ``status.run_commit``
    (the one ``show`` uses) on our session, after gc, and on a ledger as pi-autoresearch 1.6.2
    writes it: a discard records HEAD (extensions/pi-autoresearch/index.ts:2277), a keep that
    committed nothing records HEAD too (index.ts:2393)."""
    from git_autoresearch.session.for_reading import open_for_reading

    night(repo, ar)
    ar(repo, "gc", "--force")
    monkeypatch.chdir(repo)
    session = open_for_reading()
    assert run_commits.run_commits(session) == {
        n: run_commits.run_commit(session, n) for n in range(1, 7)}
    assert run_commits.run_commits(session)[5].collected is True

    pi = repo.parent / "pi"
    pi.mkdir()
    git(pi, "init", "-q", "-b", "main")
    oids = []
    for text in ("1\n", "2\n", "3\n"):
        write(pi / "value.txt", text)
        commit_all(pi)
        oids.append(git(pi, "rev-parse", "--short=7", "HEAD"))
    records = [(1, oids[0], "keep"), (2, oids[1], "keep"), (3, oids[1], "discard"),
               (4, oids[1], "keep"), (5, oids[2], "keep"), (6, "0badbad", "crash"),
               (7, "", "discard")]
    write(pi / ".auto" / "log.jsonl",
          '{"type":"config","name":"x","metricName":"ms","metricUnit":"ms",'
          '"bestDirection":"lower"}\n' + "".join(
              f'{{"run":{n},"commit":"{c}","metric":{10 - n},"metrics":{{}},"status":"{s}",'
              f'"description":"r{n}","timestamp":{n},"segment":0,"confidence":null}}\n'
              for n, c, s in records))
    monkeypatch.chdir(pi)
    session = open_for_reading()
    found = run_commits.run_commits(session)
    assert found == {n: run_commits.run_commit(session, n) for n in range(1, 8)}
    assert [(n, w.source, w.measured) for n, w in sorted(found.items())] == [
        (1, None, oids[0]), (2, "record", None), (3, None, oids[1]), (4, None, oids[1]),
        (5, "record", None), (6, None, None), (7, None, None)]


def test_commits_are_found_in_an_empty_store_only_through_its_alternates(tmp_path: Path) -> None:
    """A repository with no objects of its own resolves nothing without asking git name by
    name; a ``clone --shared`` (objects borrowed from an alternate store) still resolves."""
    from git_autoresearch.git.objects import has_objects, patches, resolve_many
    from git_autoresearch.git.repo import Repo

    git(tmp_path, "init", "-q", "-b", "main", "a")
    git(tmp_path / "a", "commit", "-q", "--allow-empty", "-m", "x")
    head = git(tmp_path / "a", "rev-parse", "HEAD")
    git(tmp_path, "clone", "-q", "--shared", "a", "b")
    git(tmp_path, "init", "-q", "c")
    assert resolve_many(Repo.discover(tmp_path / "b"), [head[:7], "refs/heads/main", "0bad"]) \
        == {head[:7]: head, "refs/heads/main": head}
    assert has_objects(Repo.discover(tmp_path / "c")) is False
    assert resolve_many(Repo.discover(tmp_path / "c"), [head]) == {}
    assert patches(Repo.discover(tmp_path / "a"), [head]) == {head: ""}


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                    reason="needs Chromium (apt-get install chromium)")
def test_the_review_marks_render_in_a_real_browser(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """The page of a real session (decisions, a probe, a keep by hand, diffs, a finalize) as a
    browser shows it: no error, no request, and every new mark in the rendered DOM."""
    night(repo, ar)
    ar(repo, "run", "-d", "no change at all")  # a noise probe
    write(repo / "value.txt", "130\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "kept by hand")
    ar(repo, "finalize", "--samples", "2", "--force", "--include-noise", expect=None)
    page = tmp_path / "page.html"
    ar(repo, "dashboard", "-o", str(page))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    flags = [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    body = dom.split("<body", 1)[1].split(">", 1)[0]
    assert 'data-errors="0"' in body and 'data-requests="0"' in body, body
    assert dom.count('class="whisker"') >= 1 and 'class="noise"' in dom
    assert "(no change: a noise probe)</title>" in dom and "(kept by hand)</title>" in dom
    assert "<summary>diff</summary>" in dom and 'class="final-card"' in dom
    assert "⇢ final" in dom

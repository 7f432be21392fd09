"""What the reading commands print for a recorded session, byte for byte: the human text and
the JSON documents of log, status, show, analyze, summary and sessions, and the dashboard.

A session is made by real runs (exact metrics, fixed commit dates: the same commits each
time), then its ledger's clock fields (timestamps, durations) are set to fixed values and the
state ref mirrored again, so that every output is the same on every machine. The expected
outputs are ``tests/fixtures/golden/<name>``; ``GOLDEN_UPDATE=1 python -m pytest
tests/review/test_golden.py`` writes them again after a change of output that is meant (review the
diff). A change of structure that moves no behaviour leaves them as they are."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR, Tool, git, start_args, write

GOLDEN = FIXTURES_DIR / "golden"

# The commands whose output is compared, by the name of its file.
READINGS = {
    "log.txt": ["log"],
    "log.json": ["log", "--json"],
    "log-kept-best.txt": ["log", "--kept", "--sort", "best"],
    "log.tsv": ["log", "--tsv"],
    "log-touched.txt": ["log", "--touched", "any"],
    "status.txt": ["status"],
    "status.json": ["status", "--json"],
    "show-2.txt": ["show", "2"],
    "show-6.json": ["show", "6", "--json"],
    "analyze.txt": ["analyze"],
    "analyze.json": ["analyze", "--json", "--segment", "0"],
    "summary.txt": ["summary"],
    "sessions.json": ["sessions", "--json"],
}


def night(repo: Path, ar: Tool) -> None:
    """Two segments: a keep, a discard, a crash, failed checks, a change outside the scope, a
    keep by hand against the rule, a retry of a discard, a change to a readonly file, and a
    new segment measured by another command."""
    write(repo / "tenfold.sh", "#!/bin/sh\necho \"score: $(( $(cat value.txt) * 10 ))\"\n",
          0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a second benchmark")
    ar(repo, *start_args("--scope", "value.txt", "--scope", "src",
                         "--checks-command", 'test "$(cat value.txt)" != 13'))
    for value, description, extra in (
            ("90", "ninety", ["--asi", "hypothesis=smaller is faster"]),
            ("95", "ninety-five", ["--asi", "rollback_reason=worse"]),
            ("oops", "broken", []),
            ("13", "unlucky", []),
    ):
        write(repo / "value.txt", value + "\n")
        ar(repo, "run", "-d", description, *extra)
    write(repo / "src" / "lib.py", "def f():\n    return 3\n")
    ar(repo, "run", "-d", "an idea that changed nothing yet")
    write(repo / "value.txt", "85\n")
    write(repo / "README.md", "project, and more\n")
    ar(repo, "run", "-d", "eighty-five and a readme")
    write(repo / "value.txt", "86\n")
    ar(repo, "measure")
    ar(repo, "keep", "-d", "kept by hand")
    write(repo / "src" / "lib.py", "def f():\n    return 2\n")
    ar(repo, "run", "-d", "a neutral edit")
    ar(repo, "run", "--retry", "6")
    write(repo / "bench.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)  # readonly: put back
    write(repo / "value.txt", "84\n")
    ar(repo, "run", "-d", "eighty-four, and a kinder benchmark")
    ar(repo, "start", "--new-segment", "--command", "sh tenfold.sh")
    write(repo / "value.txt", "70\n")
    ar(repo, "run", "-d", "seventy, in tens")


def fixed_clock(top: Path) -> None:
    """Set every clock field of the ledger to a fixed value, in line order."""
    ledger = top / ".auto" / "log.jsonl"
    lines = []
    for i, line in enumerate(ledger.read_text(encoding="utf-8").splitlines()):
        data = json.loads(line)
        if "timestamp" in data:
            data["timestamp"] = 1796000000000 + i * 60000
        if data.get("duration_s") is not None:
            data["duration_s"] = 1.5
        if isinstance(data.get("checks"), dict):
            data["checks"]["duration_s"] = 0.25
        if "duration_ms" in data:
            data["duration_ms"] = 10
        if "created_at" in (data.get("config") or {}):
            data["config"]["created_at"] = "2026-11-29T12:00:00+00:00"
        lines.append(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    ledger.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def recorded(repo: Path, ar: Tool, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "120")  # the width of the tables
    monkeypatch.setenv("LINES", "40")
    night(repo, ar)
    fixed_clock(repo)
    # The state ref mirrors the ledger as it now is (a mirror is never shortened: made anew).
    git(repo, "update-ref", "-d", "refs/autoresearch/s1/state")
    ar(repo, "doctor", "--fix")
    return repo


def outputs(top: Path, ar: Tool) -> dict[str, str]:
    """Each reading of :data:`READINGS` (stdout, then stderr when there is any), and the
    dashboard's page; the repository's folder as ``<top>``, and the commits the session keeps
    under its own refs (an attempt's or a set-aside's, whose message holds a random intent
    id) as ``<ref>``."""
    found = {}
    for name, args in READINGS.items():
        res = ar(top, *args)
        found[name] = res.out + (f"---- stderr\n{res.err}" if res.err else "")
    ar(top, "dashboard", "-o", str(top / "page.html"))
    found["dashboard.html"] = (top / "page.html").read_text(encoding="utf-8")
    ours = [line.split() for line in git(top, "for-each-ref", "--format=%(objectname) "
                                         "%(refname)", "refs/autoresearch/s1/").splitlines()]
    names = {oid: f"<{ref.removeprefix('refs/autoresearch/s1/')}>" for oid, ref in ours}

    def fixed(text: str) -> str:
        text = re.sub(r"Autoresearch-Intent: [0-9a-f]+", "Autoresearch-Intent: <intent>",
                      text.replace(str(top), "<top>"))
        for oid, name in names.items():
            text = text.replace(oid, name).replace(oid[:7], name)
        return text

    return {name: fixed(text) for name, text in found.items()}


def test_the_reading_commands_print_what_they_printed(recorded: Path, ar: Tool) -> None:
    found = outputs(recorded, ar)
    if os.environ.get("GOLDEN_UPDATE"):
        GOLDEN.mkdir(exist_ok=True)
        for stale in GOLDEN.iterdir():
            if stale.name not in found:
                stale.unlink()
        for name, text in found.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(found)
    changed = [name for name, text in found.items()
               if (GOLDEN / name).read_text(encoding="utf-8") != text]
    assert not changed, (f"output changed: {changed}; after a change meant, rewrite with "
                         "GOLDEN_UPDATE=1 and review the diff")

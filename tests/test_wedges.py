"""What real repositories contain must not wedge the tool: trailers written by other tools or
by hand with odd numbers, ledger lines of the wrong types, a folder where a lock file goes,
NUL bytes in configured commands. Each is recorded, refused with a one-line error naming
the cause, or warned about; never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Tool, git, start_args, write


@pytest.mark.parametrize("number", ["²", "1²", "٣", "①", "12345678901234567890"])
def test_a_result_commit_with_an_odd_run_number_is_read(repo: Path, ar: Tool,
                                                        number: str) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    git(repo, "add", "value.txt")
    git(repo, "commit", "-q", "-m", f"by hand\n\nResult: {{\"status\":\"keep\",\"score\":90}}\n"
        f"Autoresearch-Run: {number}\n")
    for command in (["status", "--json"], ["doctor", "--json"], ["log", "--json"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 3), res.err  # answered, or refused with a reason: never 1
        assert "internal error" not in res.err
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "after the hand commit", "--json", expect=None)
    assert done.code in (0, 3) and "internal error" not in done.err, done.err


def test_refs_and_files_named_with_odd_digits_are_passed_over(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    head = git(repo, "rev-parse", "HEAD")
    for name in ("attempts/²", "attempts/1²", "runs/①", "scope/1.²", "finals/²"):
        git(repo, "update-ref", f"refs/autoresearch/s1/{name}", head)
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "with odd refs about", "--json").json()
    assert done["run"] == 2 and done["status"] == "keep"
    write(repo / "value.txt", "85\n")
    assert ar(repo, "run", "-d", "worse", "--json").json()["status"] == "discard"
    for command in (["status", "--json"], ["doctor", "--json"], ["log", "--json"],
                    ["show", "3", "--json"], ["gc", "--json"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 3) and "internal error" not in res.err, (command, res.err)


def test_a_process_id_in_odd_digits_is_refused_by_name(repo: Path, ar: Tool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ar(repo, *start_args())
    monkeypatch.setenv("AUTORESEARCH_WORKER_PID", "²")
    res = ar(repo, "ideas", "claim", "--text", "an idea", "--json", expect=2)
    assert "AUTORESEARCH_WORKER_PID='²' is not a process id" in res.err


@pytest.mark.parametrize("field,value", [("metric", "12"), ("metric", [1]), ("metric", True),
                                          ("samples", "1,2"), ("samples", ["a"]),
                                          ("decision", "better"), ("run", "3"),
                                          ("timestamp", "now"), ("segment", "0"),
                                          ("metrics", [1, 2]), ("confidence", "high")])
def test_a_ledger_line_with_a_field_of_the_wrong_type_is_no_internal_error(
        repo: Path, ar: Tool, field: str, value: object) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "a gain")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_text().splitlines()
    record = json.loads(lines[-1])
    record[field] = value
    lines[-1] = json.dumps(record)
    ledger.write_text("\n".join(lines) + "\n")
    for command in (["status", "--json"], ["log", "--json"], ["doctor", "--json"],
                    ["show", "2", "--json"], ["analyze", "--json"], ["summary"],
                    ["dashboard", "-o", str(repo.parent / "page.html")], ["status"], ["log"]):
        res = ar(repo, *command, expect=None)
        assert res.code in (0, 2, 3) and "internal error" not in res.err, (command, res.err)
    write(repo / "value.txt", "80\n")
    res = ar(repo, "run", "-d", "after the edit", "--json", expect=None)
    assert res.code in (0, 3) and "internal error" not in res.err, res.err


def test_a_run_record_whose_metric_is_a_string_is_set_aside_by_doctor(repo: Path,
                                                                       ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "a gain")
    ledger = repo / ".auto" / "log.jsonl"
    lines = ledger.read_text().splitlines()
    record = json.loads(lines[-1])
    record["metric"] = "90"
    lines[-1] = json.dumps(record)
    ledger.write_text("\n".join(lines) + "\n")
    said = ar(repo, "status").err
    assert "'metric' is not a number or null" in said
    found = ar(repo, "doctor", "--json", expect=3).json()["findings"]
    assert any("'metric' is not a number or null" in str(f) for f in found), found
    ar(repo, "doctor", "--fix", expect=None)
    rejected = (repo / ".auto" / "log.rejected.jsonl").read_text()
    assert json.loads(rejected.splitlines()[0])["reason"] == "'metric' is not a number or null"

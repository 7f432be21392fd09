"""The JSON documents' contract: a schema file for every document, installed and named by the
document itself, every command with --json covered, and one shape for a run's decision.

Every document a test gets through the ``ar`` fixture is also checked against its schema
(conftest's ``check_document``), so the whole suite validates what the commands print."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import click
import pytest
from conftest import SCHEMAS_DIR, Tool, check_document, start_args, write
from jsonschema import Draft202012Validator

from git_autoresearch import commands
from git_autoresearch.runtime.schemas import COMMAND_DOCUMENTS, VERSIONS, bundled, fields, schema_id

PACKAGE = Path(__file__).resolve().parents[2] / "git_autoresearch"


def test_every_schema_file_is_a_valid_schema_named_as_its_documents() -> None:
    files = {p.stem: json.loads(p.read_text()) for p in SCHEMAS_DIR.glob("*.json")}
    assert set(files) == set(VERSIONS)
    for kind, schema in files.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$id"] == schema_id(kind)
        if kind != "common":
            assert schema["properties"]["schema"] == {
                "const": schema_id(kind), "description": "This document's kind and version."}
            assert "schema" in schema["required"]


def _emitted_kinds() -> set[str]:
    """The kinds the source passes to ``emit_json`` (a literal first argument each)."""
    kinds = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "emit_json":
                first = node.args[0]
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
                    f"{path}: emit_json's kind is a literal"
                kinds.add(first.value)
    return kinds


def test_a_bundled_schema_stands_alone_and_judges_as_its_file_does(repo: Path,
                                                                  ar: Tool) -> None:
    """A schema bundled for a reader that fetches no other file (an MCP client) names no other
    document, and judges a document as the file and its references do: a run's record passes,
    the same record without its status fails."""
    for kind in VERSIONS:
        whole = bundled(kind)
        Draft202012Validator.check_schema(whole)
        assert "git-autoresearch:" not in json.dumps({k: v for k, v in whole.items()
                                                      if k != "properties"}), kind
        assert "git-autoresearch:common" not in json.dumps(whole), kind
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "lower", "--json").json()
    validator = Draft202012Validator(bundled("run"))
    assert validator.is_valid(record)
    assert not validator.is_valid({k: v for k, v in record.items() if k != "status"})


def test_every_document_printed_has_a_schema_and_every_schema_a_writer() -> None:
    emitted = _emitted_kinds()
    assert emitted <= set(VERSIONS)
    # Besides: the shared definitions, the hooks' stdin and log's (written in pieces).
    assert set(VERSIONS) - emitted == {"common", "hook-before", "hook-after", "log"}
    assert 'schema_id(f"hook-{stage}")' in (PACKAGE / "hooks/payload.py").read_text()
    assert 'schema_id("log")' in (PACKAGE / "review/query_format.py").read_text()


def _json_commands() -> set[str]:
    ctx = click.Context(commands.cli)
    found: set[str] = set()

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(sub, [*path, name])
        elif any(p.name == "as_json" for p in cmd.params):
            found.add(" ".join(path))

    walk(commands.cli, [])
    return found


def test_every_command_with_json_names_its_document() -> None:
    assert _json_commands() == set(COMMAND_DOCUMENTS)


def test_the_schema_command_lists_and_prints_the_installed_schemas(repo: Path,
                                                                    ar: Tool) -> None:
    listed = ar(repo, "schema", "--json").json()["documents"]
    by_name = {d["name"]: d for d in listed}
    assert by_name["run"]["commands"] == ["run", "collect", "keep", "discard", "crash"]
    assert by_name["measurement"]["schema"] == "git-autoresearch:measurement/1"
    # The installed files alone resolve every $ref: a reader validates from the listing.
    from referencing import Registry, Resource

    found = [json.loads(Path(d["path"]).read_text()) for d in listed]
    registry: Registry[object] = Registry().with_resources(
        (f["$id"], Resource.from_contents(f)) for f in found)
    ar(repo, *start_args())
    document = ar(repo, "status", "--json").json()
    Draft202012Validator(by_schema(found, document["schema"]),
                         registry=registry).validate(document)
    assert Path(by_name["run"]["path"]).read_text() == (SCHEMAS_DIR / "run.json").read_text()
    assert "git-autoresearch:hook-after/1" in ar(repo, "schema").out
    # By a document's name, or by a command's (a group's too).
    assert ar(repo, "schema", "keep").out == (SCHEMAS_DIR / "run.json").read_text()
    assert ar(repo, "schema", "worker list").out == (SCHEMAS_DIR / "workers.json").read_text()
    err = ar(repo, "schema", "nothing", expect=2).err
    assert err == ("git autoresearch: no JSON document or command named 'nothing' "
                   "(git autoresearch schema lists them)\n")


def by_schema(found: list[dict[str, object]], name: object) -> dict[str, object]:
    return next(f for f in found if f["$id"] == name)


def test_measure_and_run_give_a_decision_in_one_shape(repo: Path, ar: Tool) -> None:
    """``status`` is what the loop records (or would); ``decision`` is the rule's object,
    the same in measure, run --dry-run, run, status's pending measurement and log."""
    ar(repo, *start_args())
    write(repo / "value.txt", "80\n")
    measured = ar(repo, "measure", "--json").json()
    dry = ar(repo, "run", "-d", "eighty", "--dry-run", "--json").json()
    pending = ar(repo, "status", "--json").json()["pending"]
    ran = ar(repo, "run", "-d", "eighty", "--json").json()
    logged = ar(repo, "log", "--json").json()["runs"][-1]
    for doc in (measured, dry, pending, ran, logged):
        assert doc["status"] == "keep"
        assert doc["decision"]["rule"] == "sequential"
        assert doc["decision"]["verdict"] == "better"
        assert "confidence" not in doc["decision"], "pi's name, for pi's meaning only"
    assert 0 < ran["decision"]["confidence_level"] <= 1
    assert "verdict" not in measured and "verdict" not in dry


def test_a_crash_is_null_in_every_document(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "not a number\n")
    assert ar(repo, "measure", "--json").json()["metric"] is None
    ran = ar(repo, "run", "-d", "broken", "--json").json()
    assert (ran["status"], ran["metric"]) == ("crash", None)
    assert ar(repo, "log", "--json").json()["runs"][-1]["metric"] is None
    assert ar(repo, "log", "--format", "jsonl").out.splitlines()[-1].count('"metric":null') == 1
    assert ar(repo, "show", "2", "--json").json()["record"]["metric"] is None
    assert ar(repo, "status", "--json").json()["segment"]["last"]["metric"] is None


def test_a_document_that_breaks_its_schema_is_caught() -> None:
    """The suite's check fails on a document that lacks a field, has an unknown one or the
    wrong type: the check can fail."""
    good = {"schema": "git-autoresearch:stop/1", "stop": ".auto/STOP"}
    check_document(good)
    for bad in ({"schema": "git-autoresearch:stop/1"},
                {**good, "extra": 1},
                {**good, "stop": 3},
                {"stop": ".auto/STOP"},
                [good]):
        with pytest.raises(AssertionError):
            check_document(bad)


def test_the_manual_pages_list_each_documents_fields() -> None:
    page = (PACKAGE.parent / "man" / "git-autoresearch-measure.rst").read_text()
    assert "**git-autoresearch:measurement/1**" in page
    for name, _, _ in fields("measurement"):
        assert f"**{name.replace('_', chr(92) + '_') if name.endswith('_') else name}** (" \
            in page, name
    hooks_page = (PACKAGE.parent / "man" / "gitautoresearch-hooks.rst").read_text()
    assert "**git-autoresearch:hook-after/1**" in hooks_page


def test_measure_names_what_it_found_as_the_run_would_record_it(repo: Path, ar: Tool) -> None:
    """A worse candidate: measure's reason, tail and commit are the ones the discard records
    (its commit is HEAD's, 7 digits); the measured command's exit code is not called the
    tool's; a crash's decision is null in both documents."""
    ar(repo, *start_args())
    head = ar(repo, "status", "--json").json()["segment"]["baseline"]["commit"]
    write(repo / "value.txt", "120\n")
    measured = ar(repo, "measure", "--json").json()
    recorded = ar(repo, "run", "-d", "worse", "--json").json()
    assert (measured["status"], measured["commit"], measured["command_exit_code"]) == (
        "discard", head, 0)
    assert measured["reason"] == recorded["reason"] and measured["reason"].startswith("worse")
    assert "exit_code" not in measured and "head" not in measured
    write(repo / "value.txt", "not a number\n")
    crashed = ar(repo, "measure", "--json").json()
    assert (crashed["status"], crashed["decision"]) == ("crash", None)
    assert crashed["reason"] == "metric 'not' is not a number"
    assert crashed["tail"].endswith("score: not a number")
    ran = ar(repo, "run", "-d", "broken", "--json").json()
    assert (ran["decision"], ran["reason"], ran["tail"]) == (
        None, crashed["reason"], crashed["tail"])

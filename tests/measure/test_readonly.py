"""What defines success is readonly: the benchmark, the checks, the data, the scorer. A change
there is saved on a ref, undone before measuring, and recorded as a violation; the agent's notes
(protected) are never touched. And a crash keeps the tail of its output in its record."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import TAKEN_AGAIN, Tool, commit_all, git, runs, start_args, write

BENCH = "#!/bin/sh\necho \"score: $(cat value.txt)\"\n"
CHEAT = "#!/bin/sh\necho 'score: 0'\n"


def files_of(repo: Path, rev: str) -> list[str]:
    return git(repo, "show", "--name-only", "--format=", rev).splitlines()


def test_start_needs_no_protected_benchmark(repo: Path, ar: Tool) -> None:
    args = [a for a in start_args() if a not in ("--protected", "bench.sh", "--readonly")]
    data = ar(repo, *args, "--json").json()
    assert data["baseline"]["metric"] == 100
    assert data["config"]["protected"] == [] and "readonly" not in data["config"]
    assert b"readonly" not in (repo / ".auto" / "config.toml").read_bytes()


def test_benchmark_change_is_undone_measured_and_recorded(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "value.txt", "50\n")
    write(repo / "bench.sh", CHEAT, 0o755)
    res = ar(repo, "run", "-d", "faster, and a friendlier benchmark", "--json")
    record = res.json()
    assert record["status"] == "keep"
    assert record["metric"] == 50, "measured with the benchmark of HEAD"
    assert record["readonly_violations"] == ["bench.sh"]
    assert record["scope_violations"] == []
    assert (repo / "bench.sh").read_text() == BENCH
    assert git(repo, "show", f"{record['scope_ref']}:bench.sh") == CHEAT.strip()
    assert files_of(repo, "HEAD") == ["value.txt"]
    assert record["warnings"] == [
        f"undid changes to readonly files, which define success: bench.sh (saved at "
        f"{record['scope_ref']}; git restore --source={record['scope_ref']} -- "
        f"':(top,literal)<path>' brings one back {TAKEN_AGAIN})"]
    assert runs(repo)[-1]["readonly_violations"] == ["bench.sh"]
    assert git(repo, "status", "--porcelain") == ""


def test_readonly_change_in_human_output_of_measure_and_run(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "bench.sh", CHEAT, 0o755)
    res = ar(repo, "measure")
    assert "score = 100" in res.out
    assert "undid changes to readonly files, which define success: bench.sh (saved at " \
           "refs/autoresearch/s1/scope/2; git restore --source=refs/autoresearch/s1/scope/2 " \
           f"-- ':(top,literal)<path>' brings one back {TAKEN_AGAIN})" in res.err
    write(repo / "bench.sh", CHEAT, 0o755)
    write(repo / "value.txt", "120\n")
    res = ar(repo, "run", "-d", "worse")
    assert "run 2: discard" in res.out
    assert "  undid changes to readonly files: bench.sh" in res.out
    assert (repo / "bench.sh").read_text() == BENCH


def test_deleted_readonly_file_is_restored(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    os.remove(repo / "bench.sh")
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "no benchmark, no problem", "--json").json()
    assert record["status"] == "keep" and record["metric"] == 90
    assert record["readonly_violations"] == ["bench.sh"]
    assert (repo / "bench.sh").read_text() == BENCH
    assert os.stat(repo / "bench.sh").st_mode & 0o777 == 0o755
    assert files_of(repo, "HEAD") == ["value.txt"]
    git(repo, "rm", "-q", "bench.sh")  # staged this time
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "staged deletion", "--json").json()
    assert record["status"] == "keep" and record["metric"] == 80
    assert record["readonly_violations"] == ["bench.sh"]
    assert (repo / "bench.sh").read_text() == BENCH
    assert files_of(repo, "HEAD") == ["value.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_readonly_wins_over_scope(repo: Path, ar: Tool) -> None:
    write(repo / "data" / "input.txt", "fixed input\n")
    commit_all(repo)
    ar(repo, *start_args("--scope", "data", "--scope", "value.txt", "--scope", "bench.sh",
                         "--readonly", "data/input.txt"))
    write(repo / "data" / "input.txt", "easier input\n")
    write(repo / "data" / "cache.txt", "new in scope\n")
    write(repo / "bench.sh", CHEAT, 0o755)
    write(repo / "value.txt", "10\n")
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert record["status"] == "keep" and record["metric"] == 10
    assert record["readonly_violations"] == ["bench.sh", "data/input.txt"]
    assert files_of(repo, "HEAD") == ["data/cache.txt", "value.txt"]
    assert (repo / "data" / "input.txt").read_text() == "fixed input\n"
    assert (repo / "bench.sh").read_text() == BENCH


def test_a_protected_benchmark_is_readonly_all_the_same(repo: Path, ar: Tool) -> None:
    """Sessions started with the old advice (--protected bench.sh) get their benchmark back."""
    ar(repo, *start_args("--protected", "bench.sh"))
    write(repo / "bench.sh", CHEAT, 0o755)
    record = ar(repo, "run", "-d", "cheat", "--json").json()
    assert record["status"] == "discard" and record["metric"] == 100
    assert record["readonly_violations"] == ["bench.sh"]
    assert (repo / "bench.sh").read_text() == BENCH


def test_protected_notes_are_not_readonly(repo: Path, ar: Tool) -> None:
    write(repo / "notes" / "log.md", "tracked notes\n")
    commit_all(repo)
    ar(repo, *start_args("--protected", "notes/**"))
    write(repo / "notes" / "log.md", "learnings\n")
    write(repo / "value.txt", "150\n")
    record = ar(repo, "run", "-d", "worse", "--json").json()
    assert record["status"] == "discard"
    assert record["readonly_violations"] == [] and record["scope_violations"] == []
    assert (repo / "notes" / "log.md").read_text() == "learnings\n"


def test_discard_and_keep_without_measuring_record_readonly_changes(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "bench.sh", CHEAT, 0o755)
    record = ar(repo, "discard", "-d", "tried a new benchmark", "--json").json()
    assert record["readonly_violations"] == ["bench.sh"]
    assert record["warnings"] == ["undid changes to readonly files, which define success: "
                                  "bench.sh (saved at refs/autoresearch/s1/attempts/2; git "
                                  "restore --source=refs/autoresearch/s1/attempts/2 -- "
                                  f"':(top,literal)<path>' brings one back {TAKEN_AGAIN})"]
    assert (repo / "bench.sh").read_text() == BENCH
    write(repo / "bench.sh", CHEAT, 0o755)
    write(repo / "value.txt", "7\n")
    record = ar(repo, "keep", "-d", "measured by hand", "--metric", "7", "--json").json()
    assert record["status"] == "keep" and record["readonly_violations"] == ["bench.sh"]
    assert files_of(repo, "HEAD") == ["value.txt"]
    assert (repo / "bench.sh").read_text() == BENCH
    assert git(repo, "show", f"{record['attempt_ref']}:bench.sh") == CHEAT.strip()


def test_readonly_option_config_file_and_validation(repo: Path, ar: Tool, tmp_path: Path) -> None:
    res = ar(repo, *start_args("--readonly", "/etc/passwd"), expect=2)
    assert res.err.strip().splitlines()[-1] == \
        f"git autoresearch: --readonly /etc/passwd: the path is outside the repository {repo}"
    conf = write(tmp_path / "ar.toml", 'readonly = "data"\n')
    res = ar(repo, *start_args("--config", str(conf)), expect=2)
    assert "readonly must be a list of paths" in res.err
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main"
    write(repo / "data" / "input.txt", "fixed\n")
    commit_all(repo)
    write(conf, 'readonly = ["data/**"]\n')
    data = ar(repo, *start_args("--config", str(conf)), "--json").json()
    assert data["config"]["readonly"] == ["data/**"]
    assert 'readonly = [\n    "data/**",\n]' in (repo / ".auto" / "config.toml").read_text()
    write(repo / "data" / "input.txt", "changed\n")
    assert ar(repo, "run", "-d", "x", "--json").json()["readonly_violations"] == \
        ["data/input.txt"]


def test_a_session_without_readonly_keeps_its_hash_and_segment(repo: Path, ar: Tool) -> None:
    """A configuration written before readonly existed has no such key: it opens, resumes and
    records in the same segment."""
    ar(repo, *start_args())
    header = json.loads((repo / ".auto" / "log.jsonl").read_text().splitlines()[0])
    assert "readonly" not in header["config"]
    resumed = ar(repo, "resume", "--json").json()
    assert (resumed["actions"], resumed["warnings"], resumed["next_run"]) == ([], [], 2)
    write(repo / "value.txt", "80\n")
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert record["segment"] == header.get("segment", record["segment"])
    assert [r["segment"] for r in runs(repo)] == [record["segment"]] * 2
    assert ar(repo, "status", "--json").json()["warnings"] == []


def test_status_warns_when_a_readonly_file_differs(repo: Path, ar: Tool) -> None:
    ar(repo, *start_args())
    write(repo / "bench.sh", CHEAT, 0o755)
    data = ar(repo, "status", "--json").json()
    warning = ("readonly file bench.sh differs from HEAD: the next measurement undoes the "
               "change (it is saved on a ref first)")
    assert data["readonly_changed"] == ["bench.sh"]
    assert data["warnings"] == [warning]
    assert f"warning: {warning}" in ar(repo, "status").err
    # Staged, with the work tree back to HEAD's content: the index differs all the same.
    git(repo, "add", "bench.sh")
    write(repo / "bench.sh", BENCH, 0o755)
    assert ar(repo, "status", "--json").json()["readonly_changed"] == ["bench.sh"]
    git(repo, "reset", "-q", "bench.sh")
    data = ar(repo, "status", "--json").json()
    assert data["readonly_changed"] == [] and data["warnings"] == []


def test_status_names_a_new_file_in_a_readonly_folder(repo: Path, ar: Tool) -> None:
    write(repo / "data" / "input.txt", "fixed\n")
    commit_all(repo)
    ar(repo, *start_args("--readonly", "data"))
    write(repo / "data" / "extra.txt", "planted\n")
    assert ar(repo, "status", "--json").json()["readonly_changed"] == ["data/extra.txt"]
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert record["readonly_violations"] == ["data/extra.txt"]
    assert not (repo / "data" / "extra.txt").exists()
    assert git(repo, "show", f"{record['scope_ref']}:data/extra.txt") == "planted"


# --- a crash keeps the tail of its output ------------------------------------------------------


def crashing_bench(repo: Path, lines: int) -> None:
    write(repo / "bench.sh", "#!/bin/sh\nv=$(cat value.txt)\nif [ \"$v\" = boom ]; then\n"
                             f"  i=1; while [ $i -le {lines} ]; do echo \"line $i\"; "
                             "i=$((i+1)); done\n  exit 1\nfi\necho \"score: $v\"\n", 0o755)
    commit_all(repo, "crashing bench")


def test_a_crash_record_keeps_the_tail_of_the_output(repo: Path, ar: Tool) -> None:
    crashing_bench(repo, 100)
    ar(repo, *start_args())
    write(repo / "value.txt", "boom\n")
    record = ar(repo, "run", "-d", "explode", "--json").json()
    expected = "\n".join(f"line {i}" for i in range(71, 101))
    assert record["status"] == "crash"
    assert record["tail"] == expected
    assert runs(repo)[-1]["tail"] == expected
    ar(repo, "run", "-d", "overwrites run.log")  # the next run writes run.log again
    shown = ar(repo, "show", "2").out
    assert f"---- tail of the output ----\n{expected}\n----\n" in shown
    assert ar(repo, "show", "2", "--json").json()["record"]["tail"] == expected


def test_crash_and_discard_of_a_crashed_measurement_keep_the_tail(repo: Path, ar: Tool) -> None:
    crashing_bench(repo, 3)
    ar(repo, *start_args("--decision", "strict"))
    write(repo / "value.txt", "boom\n")
    ar(repo, "measure")
    record = ar(repo, "crash", "-d", "explode", "--json").json()
    assert record["status"] == "crash" and record["tail"] == "line 1\nline 2\nline 3"
    write(repo / "value.txt", "boom\n")
    ar(repo, "measure")
    record = ar(repo, "discard", "-d", "explode again", "--json").json()
    assert record["status"] == "crash" and record["tail"] == "line 1\nline 2\nline 3"
    write(repo / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "fine", "--json").json()
    assert record["status"] == "keep" and "tail" not in record


def test_a_long_crash_tail_is_bounded(repo: Path, ar: Tool) -> None:
    write(repo / "bench.sh", "#!/bin/sh\nif [ \"$(cat value.txt)\" = boom ]; then\n"
                             "  i=1; while [ $i -le 20 ]; do printf '%0500d\\n' $i; "
                             "i=$((i+1)); done\n  exit 1\nfi\necho \"score: $(cat value.txt)\"\n",
          0o755)
    commit_all(repo)
    ar(repo, *start_args())
    write(repo / "value.txt", "boom\n")
    record = ar(repo, "run", "-d", "explode", "--json").json()
    assert len(record["tail"]) == 4000
    assert record["tail"].endswith("0" * 498 + "20")


def test_an_absent_readonly_key_is_no_configuration_change() -> None:
    from git_autoresearch.session.config import Config, describe_changes

    cfg = Config.from_mapping({"goal": "g", "command": "sh bench.sh"}, source="old")
    old = cfg.to_dict()
    assert cfg.readonly == [] and "readonly" not in old
    assert describe_changes(old, {**old, "readonly": []}) == []
    assert describe_changes(old, {**old, "readonly": ["data"]}) == \
        ["readonly: None -> ['data']"]


def test_a_new_segment_adds_readonly_paths(repo: Path, ar: Tool) -> None:
    write(repo / "data" / "input.txt", "fixed\n")
    commit_all(repo)
    ar(repo, *start_args())
    data = ar(repo, "start", "--new-segment", "--readonly", "data", "--json").json()
    assert data["segment"] == 1 and data["config"]["readonly"] == ["data"]
    write(repo / "data" / "input.txt", "changed\n")
    measured = ar(repo, "measure", "--json").json()
    assert measured["readonly_violations"] == ["data/input.txt"]
    assert measured["scope_violations"] == []
    assert measured["warnings"] == ["undid changes to readonly files, which define success: "
                                    "data/input.txt (saved at refs/autoresearch/s1/scope/3; git "
                                    "restore --source=refs/autoresearch/s1/scope/3 -- "
                                    f"':(top,literal)<path>' brings one back {TAKEN_AGAIN})"]
    assert (repo / "data" / "input.txt").read_text() == "fixed\n"


def test_a_symlinked_benchmark_and_its_target_are_readonly(repo: Path, ar: Tool) -> None:
    write(repo / "scripts" / "bench.sh", BENCH, 0o755)
    os.symlink("scripts/bench.sh", repo / "link.sh")
    commit_all(repo)
    ar(repo, *start_args("--command", "sh ./link.sh"))
    write(repo / "scripts" / "bench.sh", CHEAT, 0o755)
    os.remove(repo / "link.sh")
    write(repo / "link.sh", CHEAT, 0o755)
    record = ar(repo, "run", "-d", "x", "--json").json()
    assert record["metric"] == 100
    assert record["readonly_violations"] == ["link.sh", "scripts/bench.sh"]
    assert os.readlink(repo / "link.sh") == "scripts/bench.sh"
    assert (repo / "scripts" / "bench.sh").read_text() == BENCH


def test_a_benchmark_named_through_a_symlinked_folder_is_readonly(repo: Path, ar: Tool
                                                                   ) -> None:
    """``sh tools/bench.sh`` where ``tools`` is a committed link to ``scripts``: the script it
    runs (scripts/bench.sh) and the link itself are readonly, as for a linked file; start
    says nothing is uncommitted, and a run that edits the script or points the folder link
    elsewhere has both put back."""
    write(repo / "scripts" / "bench.sh", BENCH, 0o755)
    write(repo / "other" / "bench.sh", CHEAT, 0o755)
    os.symlink("scripts", repo / "tools")
    commit_all(repo)
    started = ar(repo, *start_args("--command", "sh tools/bench.sh"), "--json").json()
    assert started["warnings"] == []
    write(repo / "scripts" / "bench.sh", CHEAT, 0o755)
    record = ar(repo, "run", "-d", "edit the script", "--json").json()
    assert (record["metric"], record["readonly_violations"]) == (100, ["scripts/bench.sh"])
    assert (repo / "scripts" / "bench.sh").read_text() == BENCH
    os.remove(repo / "tools")
    os.symlink("other", repo / "tools")
    record = ar(repo, "run", "-d", "point the folder elsewhere", "--json").json()
    assert (record["metric"], record["readonly_violations"]) == (100, ["tools"])
    assert os.readlink(repo / "tools") == "scripts"


def test_readonly_and_protected_paths_through_a_linked_folder_are_where_they_lead(
        repo: Path, ar: Tool) -> None:
    """``--readonly tools/data.txt`` and ``--protected tools/notes.md`` with ``tools`` a
    committed link to ``scripts``: git names a change by the path it reaches
    (scripts/data.txt), so that is the path made readonly or protected: the data edited is put
    back and named, the notes edited stay as the agent left them through a discard."""
    write(repo / "scripts" / "data.txt", "fixed\n")
    write(repo / "scripts" / "notes.md", "notes\n")
    os.symlink("scripts", repo / "tools")
    commit_all(repo)
    ar(repo, *start_args("--decision", "strict", "--readonly", "tools/data.txt",
                         "--protected", "tools/notes.md"))
    write(repo / "scripts" / "data.txt", "changed\n")
    write(repo / "scripts" / "notes.md", "my notes\n")
    write(repo / "value.txt", "120\n")
    record = ar(repo, "run", "-d", "worse", "--json").json()
    assert (record["status"], record["readonly_violations"]) == ("discard", ["scripts/data.txt"])
    assert (repo / "scripts" / "data.txt").read_text() == "fixed\n"
    assert (repo / "scripts" / "notes.md").read_text() == "my notes\n"


def test_a_scope_through_a_linked_folder_is_where_it_leads(repo: Path, ar: Tool) -> None:
    """``--scope tools/value.txt`` with ``tools`` a committed link to ``scripts``: an edit of
    scripts/value.txt is in the scope (it was set aside as outside it, for ever), and the link
    itself is not: pointed elsewhere, it is set aside."""
    write(repo / "scripts" / "value.txt", "100\n")
    write(repo / "bench2.sh", "#!/bin/sh\necho \"score: $(cat scripts/value.txt)\"\n", 0o755)
    os.symlink("scripts", repo / "tools")
    commit_all(repo)
    ar(repo, *start_args("--decision", "strict", "--command", "sh bench2.sh",
                         "--scope", "tools/value.txt"))
    write(repo / "scripts" / "value.txt", "90\n")
    record = ar(repo, "run", "-d", "lower", "--json").json()
    assert (record["status"], record["scope_violations"]) == ("keep", [])
    assert git(repo, "show", "HEAD:scripts/value.txt") == "90"
    os.remove(repo / "tools")
    os.symlink("other", repo / "tools")
    record = ar(repo, "run", "-d", "the link", "--json").json()
    assert record["scope_violations"] == ["tools"]
    assert os.readlink(repo / "tools") == "scripts"


def test_start_warns_when_the_benchmark_is_not_committed(repo: Path, ar: Tool) -> None:
    """Only HEAD can restore a readonly file, so an uncommitted benchmark is said at start."""
    write(repo / "bench2.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n", 0o755)
    data = ar(repo, "start", "--goal", "g", "--session-id", "s1", "--command", "sh bench2.sh",
              "--metric-pattern", r"score: (\S+)", "--force", "--json").json()
    assert data["warnings"] == [
        "the configured commands run bench2.sh, which is not committed: an experiment could "
        "change it unseen (only committed files are readonly): commit it"]
    assert data["baseline"]["metric"] == 100
    git(repo, "add", "bench2.sh")
    git(repo, "commit", "-q", "-m", "the benchmark")
    ar(repo, "doctor")
    write(repo / "bench2.sh", "#!/bin/sh\necho 'score: 1'\n", 0o755)
    record = ar(repo, "run", "-d", "tampered", "--json").json()
    assert record["readonly_violations"] == ["bench2.sh"] and record["metric"] == 100


# --- what a reviewer reads of it: log and show ---------------------------------------------


def tampering_night(repo: Path, ar: Tool) -> None:
    """Scope value.txt; run 1 the baseline (100); run 2 kept (90) and changed the benchmark
    (readonly); run 3 discarded (95) and changed README.md (outside the scope); run 4 kept
    (80) and changed both; run 5 kept (70), clean."""
    ar(repo, *start_args("--scope", "value.txt"))
    for value, bench, readme, what in (("90", True, False, "faster, new benchmark"),
                                       ("95", False, True, "slower, readme"),
                                       ("80", True, True, "faster, both"),
                                       ("70", False, False, "faster, clean")):
        write(repo / "value.txt", f"{value}\n")
        if bench:
            write(repo / "bench.sh", CHEAT, 0o755)
        if readme:
            write(repo / "README.md", "project, and a note\n")
        ar(repo, "run", "-d", what)


def test_log_marks_filters_and_gives_the_runs_that_touched_what_they_must_not(
        repo: Path, ar: Tool) -> None:
    tampering_night(repo, ar)
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [(r["run"], r["status"], r["touched"]) for r in rows] == [
        (1, "keep", []), (2, "keep", ["readonly"]), (3, "discard", ["outside"]),
        (4, "keep", ["readonly", "outside"]), (5, "keep", [])]
    assert [r["touched"] for r in ar(repo, "log", "--json", "--where", "run>0").json()["runs"]] == \
        [r["touched"] for r in rows]  # the quick path and the general one agree

    def numbers(*args: str) -> list[int]:
        return [r["run"] for r in ar(repo, "log", "--json", *args).json()["runs"]]

    assert numbers("--touched", "readonly") == [2, 4]
    assert numbers("--touched", "outside") == [3, 4]
    assert numbers("--touched", "any") == [2, 3, 4]
    assert numbers("--touched", "any", "--kept") == [2, 4]
    assert numbers("--where", "touched=readonly") == [2]
    assert numbers("--where", "touched~outside") == [3, 4]
    assert ar(repo, "log", "--touched", "all", expect=2).err == (
        "git autoresearch: Invalid value for '--touched': 'all' is not one of 'readonly', "
        "'outside', 'any'. (see git autoresearch log -h)\n")
    table = ar(repo, "log").out.splitlines()
    assert table[0].split() == ["run", "status", "metric", "vs", "base", "decision", "conf",
                                "touched", "commit", "description"]
    flags = {int(line.split()[0]): line[table[0].index("touched"):][:7].strip()
             for line in table[2:7]}
    assert flags == {1: "", 2: "R", 3: "O", 4: "RO", 5: ""}
    assert table[-1] == ("touched: R changed a readonly file, O changed a file outside the "
                         "scope (each set aside, never committed); git autoresearch show RUN "
                         "names them")
    assert "touched" not in ar(repo, "log", "--run", "5").out  # nothing to mark
    csv = ar(repo, "log", "--columns", "run,touched", "--format", "csv").out
    assert csv == "run,touched\n1,\n2,readonly\n3,outside\n4,\"readonly,outside\"\n5,\n"
    markdown = ar(repo, "log", "--format", "markdown", "--touched", "any").out.splitlines()
    assert markdown[0] == ("| run | status | metric | delta_pct | decision | touched | commit "
                           "| description |")
    assert markdown[4].startswith("| 4 | keep | 80 | -20 | ") and \
        "| readonly,outside |" in markdown[4]


def test_show_says_what_a_run_touched(repo: Path, ar: Tool) -> None:
    tampering_night(repo, ar)
    out = ar(repo, "show", "4").out
    assert "touched     readonly files bench.sh: undone before measuring, so neither " \
        "measured nor committed\n" in out
    assert "touched     outside the scope README.md: set aside before measuring, so neither " \
        "measured nor committed\n" in out
    assert "touched" not in ar(repo, "show", "5").out.split("\n}\n", 1)[1]
    assert [ar(repo, "show", str(n), "--json").json()["touched"] for n in (1, 2, 3, 4)] == [
        [], ["readonly"], ["outside"], ["readonly", "outside"]]
    ar(repo, "dashboard", "-o", ".auto/page.html")
    page = (repo / ".auto" / "page.html").read_text(encoding="utf-8")
    assert ('<span class="touched" title="changed readonly files: bench.sh; changed outside '
            'the scope: README.md (set aside, never committed)">⚑ readonly + outside</span>') \
        in page.split('<tr data-run="4">')[1].split("</tr>")[0]
    assert page.count('<span class="touched"') == 3


def test_show_says_when_a_change_outside_the_scope_was_set_aside(repo: Path, ar: Tool) -> None:
    """Before measuring (measured without it), or when the run was recorded: a file the
    benchmark rewrote while measured, or a change of a run not measured (keep --metric)."""
    write(repo / "bench.sh", '#!/bin/sh\n[ "$(cat value.txt)" = 90 ] && echo rewritten > '
          'README.md\necho "score: $(cat value.txt)"\n', 0o755)
    commit_all(repo, "a benchmark that rewrites README.md")
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "the benchmark rewrites README.md")
    write(repo / "value.txt", "80\n")
    write(repo / "README.md", "a note\n")
    ar(repo, "run", "-d", "README.md edited before")
    write(repo / "value.txt", "70\n")
    write(repo / "README.md", "a note\n")
    ar(repo, "keep", "--metric", "70", "-d", "not measured")
    after = ("touched     outside the scope README.md: reverted when the run was recorded, so "
             "not committed (saved at its attempt ref)\n")
    before = ("touched     outside the scope README.md: set aside before measuring, so neither "
              "measured nor committed\n")
    shown = {n: ar(repo, "show", str(n)).out for n in (2, 3, 4)}
    assert after in shown[2] and before not in shown[2]
    assert before in shown[3] and after not in shown[3]
    assert after in shown[4] and before not in shown[4]
    assert (repo / "README.md").read_text() == "project\n"


def test_a_record_from_another_tool_touched_nothing_known(repo: Path, ar: Tool) -> None:
    """pi-autoresearch records no violations: not known (null), never read as clean."""
    write(repo / ".auto" / "log.jsonl",
          '{"type":"config","name":"x","metricName":"ms","metricUnit":"ms",'
          '"bestDirection":"lower"}\n'
          '{"run":1,"commit":"abcdef1","metric":10,"metrics":{},"status":"keep",'
          '"description":"base","timestamp":1,"segment":0,"confidence":null}\n'
          '{"run":2,"commit":"abcdef1","metric":9,"metrics":{},"status":"keep",'
          '"description":"cut","timestamp":2,"segment":0,"confidence":null,'
          '"readonly_violations_total":3,"readonly_violations":[]}\n')
    rows = ar(repo, "log", "--json").json()["runs"]
    assert [r["touched"] for r in rows] == [None, ["readonly"]]
    assert [r["run"] for r in ar(repo, "log", "--json", "--touched", "any").json()["runs"]] == [2]

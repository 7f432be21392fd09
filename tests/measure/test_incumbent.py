"""The incumbent measured beside the candidate through the commands: its worktree (made,
given the shared paths, kept between runs and moved to each new incumbent as a new checkout
would have it, made anew when git cannot move it, one of the measurement's own when another
holds it, removed by finalize, left usable after a signal and a kill, and refused clearly when
it cannot be made, the pool then deciding alone), the decision's JSON fields, and a machine
that keeps getting faster, drawn from a counter outside the repository."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import (
    Tool,
    check_document,
    commit_all,
    git,
    launch,
    ledger_lines,
    runs,
    start_args,
    wait_for_file,
    write,
)

# A benchmark on a machine that gets 0.2 % faster with every measurement, whichever worktree
# it runs in: the count of measurements is kept outside the repository. Its noise (2 %) is a
# Gaussian draw seeded by the count.
DRIFTING = """#!/bin/sh
n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}
[ "$AUTORESEARCH_INCUMBENT" = 1 ] && echo "$n" >> {counter}.incumbent
awk -v v="$(cat value.txt)" -v n="$n" 'BEGIN {{ srand(n); u = rand(); w = rand();
  if (u < 1e-9) u = 1e-9; g = sqrt(-2 * log(u)) * cos(6.283185307 * w);
  printf "score: %.6f\\n", v * exp(-({rate}) * n) * (1 + 0.02 * g) }}'
"""


def drifting(repo: Path, ar: Tool, tmp_path: Path, *extra: str, rate: float = 0.002) -> Path:
    """A sequential session on the DRIFTING benchmark; returns its counter file."""
    counter = tmp_path / "machine"
    write(repo / "bench.sh", DRIFTING.format(counter=counter, rate=rate), 0o755)
    commit_all(repo, "a drifting benchmark")
    ar(repo, *start_args("--scope", "src/", "--scope", "value.txt", *extra))
    return counter


def cycling(repo: Path, first: str = "", scale: str = "1") -> None:
    """A benchmark whose noise cycles with a count kept beside the repository (+-2 %), after
    the shell line ``first``, its value times ``scale`` (a shell word), committed."""
    write(repo / "bench.sh", "#!/bin/sh\n" + first +
          "n=$(cat ../n 2>/dev/null || echo 0); n=$((n+1)); echo $n > ../n\n"
          f"awk -v v=\"$(cat value.txt)\" -v n=$n -v s={scale} "
          "'BEGIN { printf \"score: %.4f\\n\", v * s * (1 + 0.01 * ((n * 7) % 5 - 2)) }'\n",
          0o755)
    commit_all(repo, "a benchmark")


def a_kept_gain(repo: Path, ar: Tool) -> None:
    """A session on the ``cycling`` benchmark whose first run, a gain, is kept after the
    incumbent was measured beside it: the kept worktree is made."""
    cycling(repo)
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "a gain", "--json").json()
    assert done["status"] == "keep" and done["decision"]["incumbent_fresh"], done


def with_data(repo: Path) -> None:
    """The ``cycling`` benchmark reading an ignored data folder, which a checkout lacks."""
    write(repo / ".gitignore", "data/\n")
    write(repo / "data" / "scale", "1\n")
    cycling(repo, "s=$(cat data/scale) || exit 3\n", "$s")


def scratch(repo: Path) -> Path:
    return repo / git(repo, "rev-parse", "--git-path", "autoresearch")


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def kept(repo: Path) -> Path:
    """The incumbent's worktree kept between runs."""
    return scratch(repo) / "incumbent" / "tree"


def with_kept(repo: Path) -> list[str]:
    """The worktrees git should list: the work tree's, then the kept one."""
    return [f"worktree {repo}", f"worktree {kept(repo)}"]


@contextmanager
def kept_held(repo: Path) -> Iterator[None]:
    """The kept worktree's lock held, as another measurement of the work tree holds it."""
    (scratch(repo) / "incumbent").mkdir(parents=True, exist_ok=True)
    fd = os.open(scratch(repo) / "incumbent" / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def free(repo: Path) -> bool:
    """Whether the kept worktree's lock can be taken now."""
    fd = os.open(scratch(repo) / "incumbent" / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def neutral(repo: Path, ar: Tool, count: int) -> list[dict[str, object]]:
    """``count`` edits that change the tree but not the value, each through ``run``."""
    done = []
    for i in range(count):
        write(repo / "src" / "lib.py", f"def f():\n    return 1  # edit {i}\n")
        done.append(ar(repo, "run", "-d", f"neutral edit {i}", "--json").json())
    return done


def test_neutral_edits_on_a_machine_getting_faster_are_discarded(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    drifting(repo, ar, tmp_path)
    done = neutral(repo, ar, 12)
    kept = [d for d in done if d["status"] == "keep"]
    assert len(kept) <= 1, [d["decision"] for d in kept]
    # Every verdict that came from more than the pool took the incumbent beside the
    # candidate, in the one worktree kept between runs.
    beside = [d for d in done if d["decision"]["evidence"] in ("fresh", "pool+fresh")]  # type: ignore[index]
    assert beside, "the machine's trend sends runs to fresh samples"
    assert all(d["decision"]["incumbent_fresh"] for d in beside)  # type: ignore[index]
    assert worktrees(repo) == with_kept(repo) and free(repo)
    assert not list(scratch(repo).glob("incumbent-*"))
    # The trend is said, in the run's warnings.
    assert any("getting better" in w and "the machine got faster?" in w
               for d in done for w in d["warnings"])  # type: ignore[attr-defined]


def test_the_pool_alone_keeps_them(repo: Path, ar: Tool, tmp_path: Path) -> None:
    # The fault that the incumbent measured beside the candidate fixes: incumbent_pairs = 0.
    drifting(repo, ar, tmp_path, "--incumbent-pairs", "0")
    done = neutral(repo, ar, 12)
    assert sum(d["status"] == "keep" for d in done) >= 6
    assert all(d["decision"]["evidence"] == "pool" for d in done)  # type: ignore[index]
    assert worktrees(repo) == [f"worktree {repo}"]


def test_a_real_gain_is_kept_on_samples_of_both_and_the_json_says_how(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    counter = drifting(repo, ar, tmp_path, rate=0.0)
    write(repo / "value.txt", "80\n")
    kept = ar(repo, "run", "-d", "a real gain", "--json").json()
    found = kept["decision"]
    assert kept["status"] == "keep" and found["verdict"] == "better"
    assert found["evidence"] in ("pool+fresh", "fresh")
    assert found["incumbent_fresh"] and all(95 < v < 105 for v in found["incumbent_fresh"])
    # The samples the verdict rests on: those of the pool and the candidate's, or, on fresh
    # samples alone, those taken side by side.
    if found["evidence"] == "fresh":
        assert found["incumbent_samples"] == len(found["incumbent_fresh"])
        assert found["candidate_samples"] <= len(kept["samples"])
    else:
        assert found["candidate_samples"] == len(kept["samples"])
    assert isinstance(found["stopped_early"], bool)
    # The incumbent's samples ran with AUTORESEARCH_INCUMBENT=1, between the candidate's.
    marked = [int(n) for n in (tmp_path / "machine.incumbent").read_text().split()]
    assert len(marked) == len(found["incumbent_fresh"])
    total = int(counter.read_text())
    assert max(marked) < total or marked[-1] == total  # (interleaved, not all at the end)
    # The record in the ledger says the same.
    assert runs(repo)[-1]["decision"] == found


def test_a_discard_hands_the_fresh_samples_to_the_pool_without_measuring_again(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    # A machine 1 % faster a measurement: the baseline's 8 samples trend, so the run is
    # measured side by side from its first sample. (The noise is seeded by the count of
    # measurements: the same every time.)
    counter = drifting(repo, ar, tmp_path, "--baseline-samples", "8", rate=0.01)
    before = int(counter.read_text())
    done = neutral(repo, ar, 1)[0]
    assert done["status"] == "discard"
    found = done["decision"]
    assert isinstance(found, dict) and found["evidence"] == "fresh" and found["trend"]
    fresh = found["incumbent_fresh"]
    taken = int(counter.read_text()) - before
    assert taken == len(done["samples"]) + len(fresh)  # type: ignore[arg-type]
    line = [e for e in ledger_lines(repo) if e.get("type") == "incumbent"][-1]
    assert (line["after_run"], line["samples"]) == (done["run"], fresh)
    assert done["reason"].startswith(("within noise (", "not better (", "worse ("))  # type: ignore[attr-defined]
    assert "of the incumbent measured beside them" in done["reason"]  # type: ignore[operator]


def test_shared_paths_are_linked_into_the_incumbents_worktree(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    with_data(repo)
    ar(repo, *start_args("--scope", "value.txt", "--shared-paths", "data"))
    write(repo / "value.txt", "80\n")
    first = ar(repo, "run", "-d", "a gain", "--json").json()
    assert first["status"] == "keep"
    assert first["decision"]["incumbent_fresh"] and not first["warnings"]
    assert worktrees(repo) == with_kept(repo)
    assert (kept(repo) / "data").is_symlink()
    # Moving the kept worktree to the next incumbent removes the link, never what it links.
    write(repo / "value.txt", "60\n")
    second = ar(repo, "run", "-d", "another gain", "--json").json()
    assert second["decision"]["incumbent_fresh"] and not second["warnings"]
    assert (repo / "data" / "scale").read_text() == "1\n"
    # The audit's worktrees (the keep and its parent) have them too.
    audited = ar(repo, "audit", "--samples", "3", "--json").json()["audits"]
    assert [a["verdict"] for a in audited] == ["confirmed", "confirmed"]
    assert worktrees(repo) == with_kept(repo)
    assert (repo / "data" / "scale").read_text() == "1\n"


def test_a_shared_path_whose_name_holds_a_backslash_is_named_in_brackets(
        repo: Path, ar: Tool) -> None:
    """A shared path is a path, not a pattern, but one whose name holds a backslash (read as
    ``/`` elsewhere) is named as in the other path keys, ``da[\\]ta`` for ``da\\ta``: it is
    linked into the incumbent's worktree under its own name (it was refused as a pattern)."""
    write(repo / ".gitignore", "da\\\\ta/\n")  # (gitignore(5) escapes a backslash)
    write(repo / "da\\ta" / "scale", "1\n")
    cycling(repo, "s=$(cat 'da\\ta/scale') || exit 3\n", "$s")
    ar(repo, *start_args("--scope", "value.txt", "--shared-paths", "da[\\]ta"))
    write(repo / "value.txt", "80\n")
    first = ar(repo, "run", "-d", "a gain", "--json").json()
    assert first["decision"]["incumbent_fresh"] and not first["warnings"], first["warnings"]
    assert (kept(repo) / "da\\ta").is_symlink()


def test_a_benchmark_that_reads_the_work_tree_by_its_path_is_warned_of(
        repo: Path, ar: Tool) -> None:
    """A benchmark that runs the work tree's code wherever it is started (an absolute path,
    as an editable install's import path is) measures the candidate's code in the
    incumbent's worktree too: the incumbent taken now lands far from its earlier samples and
    beside the run's. The run says so, naming both causes (the machine's speed, or the
    benchmark not running the folder it is started in); the decision stays the rule's."""
    cycling(repo)  # (noisy: the rule measures the incumbent beside the run)
    bench = (repo / "bench.sh").read_text()
    write(repo / "bench.sh", bench.replace("$(cat value.txt)", f"$(cat '{repo}/value.txt')"))
    commit_all(repo, "a benchmark that reads the work tree by its path")
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "20\n")
    done = ar(repo, "run", "-d", "five times less", "--json").json()
    said = [w for w in done["warnings"] if "far from its" in w]
    assert len(said) == 1, done["warnings"]
    assert "does the benchmark run the code of the folder it is started in" in said[0]
    assert "pip install -e" in said[0]


def test_an_incumbent_kept_with_a_number_given_by_hand_is_not_blamed_on_the_benchmark(
        repo: Path, ar: Tool) -> None:
    """An incumbent kept by hand with ``keep --metric`` (as a stop rule's message suggests)
    has for its only sample the number given, not a measurement: the incumbent measured
    beside the next run is far from it by nature, which is no sign that the benchmark runs
    the work tree's code. No such warning; a measured pool still warns
    (:func:`test_a_benchmark_that_reads_the_work_tree_by_its_path_is_warned_of`)."""
    cycling(repo)
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "90\n")
    ar(repo, "keep", "-d", "given by hand", "--metric", "17.5")
    write(repo / "value.txt", "85\n")
    done = ar(repo, "run", "-d", "a small gain", "--json").json()
    assert done["decision"]["incumbent_fresh"], done
    assert not [w for w in done["warnings"] if "far from its" in w], done["warnings"]


def test_an_incumbent_that_cannot_be_measured_beside_falls_back_to_the_pool_and_says_so(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    # Without the shared data folder, the benchmark fails in the incumbent's worktree.
    with_data(repo)
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "a gain", "--json").json()
    said = [w for w in done["warnings"] if "the incumbent gave no metric in its worktree" in w]
    assert len(said) == 1 and "exited with code 3" in said[0]
    assert "decided on the incumbent's earlier samples alone" in said[0]
    assert "named in shared_paths (git autoresearch start --new-segment" in said[0]
    assert done["decision"]["evidence"] == "pool"
    assert worktrees(repo) == with_kept(repo) and free(repo)


def test_a_worktree_git_refuses_is_named_and_the_pool_decides(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    drifting(repo, ar, tmp_path, rate=0.0)
    # A file where git keeps its linked worktrees' records: git worktree add fails.
    (repo / ".git" / "worktrees").write_text("not a folder\n")
    write(repo / "value.txt", "80\n")
    done = ar(repo, "run", "-d", "a gain", "--json").json()
    said = [w for w in done["warnings"] if "could not be checked out in a worktree" in w]
    assert len(said) == 1, done["warnings"]
    assert done["decision"]["evidence"] == "pool"
    assert not list(scratch(repo).glob("incumbent-*")) and not kept(repo).exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("held", [False, True], ids=["kept", "own"])
def test_a_signal_while_the_incumbent_is_measured_leaves_no_worktree_of_its_own(
        repo: Path, ar: Tool, tmp_path: Path, sig: signal.Signals, held: bool) -> None:
    # The kept worktree stays, released; a measurement's own (the kept one held by another
    # measurement) is removed.
    started = tmp_path / "incumbent-started"
    cycling(repo, f"if [ \"$AUTORESEARCH_INCUMBENT\" = 1 ] && [ ! -e {started} ]; then "
            f"touch {started}; sleep 30; fi\n")
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "80\n")
    with kept_held(repo) if held else contextmanager(lambda: iter([None]))():
        proc = launch(repo, "run", "-d", "a gain", "--json")
        wait_for_file(started)
        assert list(scratch(repo).glob("incumbent-*/tree")) if held else kept(repo).is_dir()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode in (130, 143), err
    assert worktrees(repo) == ([f"worktree {repo}"] if held else with_kept(repo))
    assert not list(scratch(repo).glob("incumbent-*"))
    assert [r["run"] for r in runs(repo)] == [1]  # nothing recorded
    assert check_document(json.loads(out))["exit_code"] == proc.returncode
    done = ar(repo, "run", "-d", "a gain", "--json").json()
    assert done["decision"]["incumbent_fresh"] and not done["warnings"]


@pytest.mark.parametrize("held", [False, True], ids=["kept", "own"])
def test_a_worktree_left_by_a_killed_run_is_used_or_swept_by_the_next(
        repo: Path, ar: Tool, tmp_path: Path, held: bool) -> None:
    started = tmp_path / "incumbent-started"
    # (its pid first: a SIGKILL of the run leaves the benchmark's own process group running;
    # it leaves a file behind in the worktree, and a tracked file changed)
    cycling(repo, f"if [ \"$AUTORESEARCH_INCUMBENT\" = 1 ] && [ ! -e {started} ]; then "
            f"echo $$ > {started}.pid; touch {started} left; echo 1 > value.txt; "
            "exec sleep 30; fi\n[ -e left ] && exit 3\n")
    ar(repo, *start_args("--scope", "value.txt"))
    write(repo / "value.txt", "80\n")
    with kept_held(repo) if held else contextmanager(lambda: iter([None]))():
        proc = launch(repo, "run", "-d", "a gain", "--json", new_group=True)
        wait_for_file(started)
        os.killpg(proc.pid, signal.SIGKILL)
        os.kill(int(Path(f"{started}.pid").read_text()), signal.SIGKILL)
        proc.communicate(timeout=30)
        left = list(scratch(repo).glob("incumbent-*/tree")) if held else [kept(repo)]
        assert left and (left[0] / "left").exists()  # left behind
        ar(repo, "resume")
        done = ar(repo, "run", "-d", "a gain", "--json").json()
    assert done["status"] == "keep" and done["decision"]["incumbent_fresh"], done
    assert all(95 < v < 105 for v in done["decision"]["incumbent_fresh"])
    assert not done["warnings"]
    assert worktrees(repo) == ([f"worktree {repo}"] if held else with_kept(repo))
    assert not list(scratch(repo).glob("incumbent-*"))


def test_the_kept_worktree_is_moved_to_each_incumbent_as_a_new_checkout(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    # The incumbent's samples say what they measured, and fail on anything an earlier run's
    # benchmark left there: an ignored file, a changed tracked one, a file of its own, a
    # file beside the worktree (an out-of-tree build's ../build).
    seen = tmp_path / "seen"
    write(repo / ".gitignore", "build/\n")
    cycling(repo, f"if [ \"$AUTORESEARCH_INCUMBENT\" = 1 ]; then\n"
            "  for f in build/* run-*; do [ ! -e \"$f\" ] || [ \"${f#*/}\" = "
            "\"$AUTORESEARCH_RUN\" ] || [ \"$f\" = \"run-$AUTORESEARCH_RUN\" ] || exit 3; "
            "done\n"
            "  for f in ../beside-*; do [ ! -e \"$f\" ] || [ \"$f\" = "
            "\"../beside-$AUTORESEARCH_RUN\" ] || exit 3; done; touch ../beside-$AUTORESEARCH_RUN\n"
            "  grep dirty README.md | grep -qv \"dirty $AUTORESEARCH_RUN\" && exit 3\n"
            f"  cat value.txt >> {seen}; mkdir -p build; touch build/$AUTORESEARCH_RUN "
            "run-$AUTORESEARCH_RUN\n"
            "  echo \"dirty $AUTORESEARCH_RUN\" >> README.md\nfi\n")
    ar(repo, *start_args("--scope", "value.txt"))
    traced = {**os.environ, "GIT_AUTORESEARCH_TRACE": "1"}
    said = []
    for value in ("80", "60", "90"):
        write(repo / "value.txt", value + "\n")
        done = subprocess.run([sys.executable, "-m", "git_autoresearch", "run", "-d", value,
                               "--json"], cwd=repo, capture_output=True, text=True,
                              env=traced)
        said.append(done.stderr)
        record = json.loads(done.stdout)
        assert record["decision"]["incumbent_fresh"] and not record["warnings"], record
        (repo / "value.txt").write_text({"80": "80", "60": "60", "90": "60"}[value] + "\n")
    assert [r["status"] for r in runs(repo)] == ["keep", "keep", "keep", "discard"]
    # Each run measured the incumbent of its time: HEAD, the kept worktree moved to it.
    assert seen.read_text().split() == sorted(seen.read_text().split(), key=lambda v: -int(v))
    assert set(seen.read_text().split()) == {"100", "80", "60"}
    adds = [sum(" git worktree add " in ln for ln in e.splitlines()) for e in said]
    assert adds == [1, 0, 0]
    assert all(" reset --hard --quiet " in e for e in said[1:])
    assert worktrees(repo) == with_kept(repo) and free(repo)
    assert git(kept(repo), "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    # The work tree's own files are as the runs left them.
    assert (repo / "README.md").read_text() == "project\n"
    assert not (repo / "build").exists()


@pytest.mark.parametrize("broken", ["index.lock", "folder deleted", "moved repository"])
def test_a_kept_worktree_git_cannot_move_is_made_anew(
        repo: Path, ar: Tool, tmp_path: Path, broken: str) -> None:
    a_kept_gain(repo, ar)
    admin = Path(git(kept(repo), "rev-parse", "--path-format=absolute", "--git-dir"))
    if broken == "index.lock":  # (a git killed while it moved it)
        (admin / "index.lock").write_text("")
    elif broken == "folder deleted":
        import shutil

        shutil.rmtree(kept(repo))
    else:  # its .git file names another repository's records
        (kept(repo) / ".git").write_text(f"gitdir: {tmp_path / 'elsewhere'}\n")
    write(repo / "value.txt", "60\n")
    done = ar(repo, "run", "-d", "another gain", "--json").json()
    assert done["decision"]["incumbent_fresh"] and not done["warnings"], done
    assert all(75 < v < 85 for v in done["decision"]["incumbent_fresh"])
    assert worktrees(repo) == with_kept(repo)
    assert not (tmp_path / "elsewhere").exists()


def test_a_kept_worktree_that_cannot_be_made_anew_gives_way_to_one_of_the_runs_own(
        repo: Path, ar: Tool) -> None:
    # What stands where the kept worktree goes cannot be removed (here a file): the run
    # measures in a worktree of its own, removed after it.
    import shutil

    a_kept_gain(repo, ar)
    shutil.rmtree(kept(repo))
    kept(repo).write_text("in the way\n")
    write(repo / "value.txt", "60\n")
    done = ar(repo, "run", "-d", "another gain", "--json").json()
    assert done["decision"]["incumbent_fresh"] and not done["warnings"], done
    assert all(75 < v < 85 for v in done["decision"]["incumbent_fresh"])
    assert worktrees(repo) == [f"worktree {repo}"] and free(repo)
    assert not list(scratch(repo).glob("incumbent-*"))


@pytest.mark.parametrize("command", [["finalize", "--samples", "0"], ["gc", "--force", "s1"]])
def test_finalize_and_gc_remove_the_kept_worktree(repo: Path, ar: Tool,
                                                  command: list[str]) -> None:
    a_kept_gain(repo, ar)
    if command[0] == "gc":
        ar(repo, *command, "--dry-run")
    assert worktrees(repo) == with_kept(repo)
    ar(repo, *command)
    assert worktrees(repo) == [f"worktree {repo}"]
    assert [p.name for p in (scratch(repo) / "incumbent").iterdir()] == ["lock"]


def test_finalize_says_when_a_measurement_holds_the_kept_worktree(repo: Path, ar: Tool) -> None:
    a_kept_gain(repo, ar)
    with kept_held(repo):
        done = ar(repo, "finalize", "--samples", "0")
    assert f"the incumbent's worktree {kept(repo)} was left: a measurement is using it" \
        in done.err
    assert worktrees(repo) == with_kept(repo)


def test_a_copied_repository_makes_its_own_and_forgets_the_originals(
        repo: Path, ar: Tool, tmp_path: Path) -> None:
    import shutil

    a_kept_gain(repo, ar)
    original = git(kept(repo), "rev-parse", "HEAD")
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    write(copy / "value.txt", "60\n")
    done = ar(copy, "run", "-d", "in the copy", "--json").json()
    assert done["decision"]["incumbent_fresh"] and not done["warnings"], done
    assert worktrees(copy) == with_kept(copy)
    # The original's is as it was, and still its own.
    assert worktrees(repo) == with_kept(repo)
    assert git(kept(repo), "rev-parse", "HEAD") == original
    assert Path(git(kept(repo), "rev-parse", "--path-format=absolute", "--git-common-dir")) \
        == repo / ".git"


def test_bad_settings_are_refused_by_name(repo: Path, ar: Tool) -> None:
    for bad in ("101", "3", "-1"):
        res = ar(repo, *start_args("--incumbent-pairs", bad), expect=2)
        assert "incumbent-pairs" in res.err or "incumbent_pairs" in res.err, res.err
    write(repo / "cfg.toml", 'goal = "g"\ncommand = "sh bench.sh"\n'
          'metric_pattern = "score: (\\\\S+)"\nshared_paths = ["data/*"]\n')
    res = ar(repo, "start", "--config", "cfg.toml", expect=2)
    assert "shared_paths" in res.err and "not a pattern" in res.err


@pytest.mark.parametrize("rate,machine", [(-0.01, "slower"), (0.01, "faster")])
def test_status_names_a_machine_moving_either_way(repo: Path, ar: Tool, tmp_path: Path,
                                                  rate: float, machine: str) -> None:
    # DRIFTING's speed-up is exp(-rate * n): a negative rate is a machine getting slower.
    drifting(repo, ar, tmp_path, "--baseline-samples", "10", rate=rate)
    noise = ar(repo, "status", "--json").json()["noise"]
    assert noise["trend"]["machine"] == machine and noise["trend"]["p"] < 0.05
    assert (noise["trend"]["relative"] > 0) == (machine == "slower")  # lower is better
    text = ar(repo, "status").out
    assert f"machine     getting {machine}? the incumbent's samples moved (" in text
    assert "runs measure it beside the candidate" in text
    done = neutral(repo, ar, 1)[0]
    assert any(f"the machine got {machine}?" in w for w in done["warnings"])  # type: ignore[attr-defined]


def test_the_work_trees_searched_for_sessions_leave_out_the_kept_worktree_alone(
        repo: Path, ar: Tool) -> None:
    # A worktree a user keeps inside the git directory (as beside a bare repository's
    # records) is still one of the work trees; the tool's own are not.
    from git_autoresearch.git import Repo

    a_kept_gain(repo, ar)
    git(repo, "worktree", "add", "-q", "--detach", str(repo / ".git" / "mine"))
    assert Repo.discover(repo).worktree_paths() == [repo, repo / ".git" / "mine"]
    assert [s["id"] for s in ar(repo, "sessions", "--json").json()["sessions"]] == ["s1"]

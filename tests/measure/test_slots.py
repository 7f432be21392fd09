"""Measurement slots: measurements take one of ``measure_slots`` slots, a
``flock`` in the session's shared folder of the common git directory, so that parallel
workers on one machine measure one (or N) at a time; a killed holder's slot is free at once;
a signal while waiting ends the command as any signal does; with ``pin_cpus`` each slot's
commands run on a share of the CPUs. No timed assertions: the processes hand over through
files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TOOL, Tool, check_document, git, runs, start_args, write

from git_autoresearch.git import Repo
from git_autoresearch.measure.slots import cpu_share, held, slots_dir
from git_autoresearch.session.config import Config

# A process that takes a slot of session s1 (``measure_slots`` from argv) for a measurement
# whose command appends its start and end times to a file, and, when asked, holds the slot
# until a file appears: it prints the slot it took.
HOLDER = r"""
import os, sys, time
from pathlib import Path
from git_autoresearch.runtime import signals
from git_autoresearch.session.config import Config
from git_autoresearch.git import Repo
from git_autoresearch.measure.samples import measure
from git_autoresearch.measure.slots import measuring

signals.install()
top, slots, times, release = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
command = ('echo "start $(date +%s%N)" >> ' + times + '; sleep 0.2; '
           'echo "end $(date +%s%N)" >> ' + times + '; echo "score: 1"')
cfg = Config(goal="g", command=command, metric_pattern=r"score: (\S+)", session_id="s1",
             measure_slots=slots)
repo = Repo.discover(top)
with measuring(repo, cfg, f"test {os.getpid()}") as slot:
    print(slot.index, flush=True)
    result = measure(cfg, top=top, log_path=Path(times + f".{os.getpid()}.log"), env=os.environ)
    assert result.metric == 1.0, result.reason
    while release != "-" and not Path(release).exists():
        time.sleep(0.02)
"""


def holder(tmp_path: Path, top: Path, slots: int, release: str = "-"
           ) -> subprocess.Popen[str]:
    script = tmp_path / "holder.py"
    if not script.exists():
        write(script, HOLDER)
    return subprocess.Popen([sys.executable, str(script), str(top), str(slots),
                             str(tmp_path / "times"), release], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def first_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.communicate(timeout=30)[1]
    return line.strip()


def stderr_until(proc: subprocess.Popen[str], text: str) -> str:
    """What ``proc`` says on stderr, read until a line holds ``text``."""
    assert proc.stderr is not None
    said = ""
    while True:
        line = proc.stderr.readline()
        said += line
        if not line or text in line:
            break
    assert text in said, said
    return said


def intervals(path: Path) -> list[tuple[int, int]]:
    """The (start, end) of each measured command, in nanoseconds, from its lines."""
    starts: list[int] = []
    ends: list[int] = []
    for line in path.read_text().splitlines():
        kind, value = line.split()
        (starts if kind == "start" else ends).append(int(value))
    assert len(starts) == len(ends)
    return sorted(zip(sorted(starts), sorted(ends), strict=True))


def test_two_measurements_with_one_slot_never_overlap(repo: Path, tmp_path: Path) -> None:
    """Two measurements started at once from two processes, ``measure_slots = 1``: each
    command's start comes after the other's end (they ran one after the other)."""
    procs = [holder(tmp_path, repo, 1) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.strip() == "1"
    (a_start, a_end), (b_start, b_end) = intervals(tmp_path / "times")
    assert a_end <= b_start


def test_a_second_slot_measures_while_the_first_is_held(repo: Path, tmp_path: Path) -> None:
    """With ``measure_slots = 2`` a measurement takes the second slot while the first is
    held, without waiting; with 1 it waits, says so once naming the holder's pid and worker,
    and takes the slot once it is released."""
    release = tmp_path / "release"
    first = holder(tmp_path, repo, 2, str(release))
    assert first_line(first) == "1"
    second = holder(tmp_path, repo, 2)
    out, err = second.communicate(timeout=60)
    assert (second.returncode, out, "waiting" in err) == (0, "2\n", False), err
    assert sorted(held(Repo.discover(repo), "s1")) == [1]
    release.touch()
    assert first.communicate(timeout=60)[0] == ""

    release.unlink()
    first = holder(tmp_path, repo, 1, str(release))
    assert first_line(first) == "1"
    second = holder(tmp_path, repo, 1)
    said = stderr_until(second, "waiting for a measurement slot")
    assert said == (f"waiting for a measurement slot for test {second.pid} (1 in use: slot 1: "
                    f"pid {first.pid} (worker main): test {first.pid})\n")
    release.touch()
    out, err = second.communicate(timeout=60)
    assert (second.returncode, out, err) == (0, "1\n", "")
    first.communicate(timeout=60)


def test_a_holder_killed_frees_its_slot(repo: Path, tmp_path: Path) -> None:
    """A process killed outright (SIGKILL: no cleanup runs) while it holds the only slot:
    the kernel drops its lock, and the next measurement takes the slot."""
    first = holder(tmp_path, repo, 1, str(tmp_path / "never"))
    assert first_line(first) == "1"
    assert list(held(Repo.discover(repo), "s1")) == [1]
    first.kill()
    first.communicate(timeout=30)
    assert held(Repo.discover(repo), "s1") == {}
    second = holder(tmp_path, repo, 1)
    out, err = second.communicate(timeout=60)
    assert (second.returncode, out, "waiting" in err) == (0, "1\n", False), err


def test_the_slots_live_in_the_common_git_dir(repo: Path, tmp_path: Path) -> None:
    """A linked worktree's measurement and the main work tree's share the slots: they are
    in ``<common git dir>/autoresearch-sessions/<id>/slots``, not in either worktree's own
    git dir."""
    other = tmp_path / "w1"
    git(repo, "worktree", "add", "-q", "--detach", str(other))
    release = tmp_path / "release"
    first = holder(tmp_path, other, 1, str(release))
    assert first_line(first) == "1"
    assert slots_dir(Repo.discover(other), "s1") == repo / ".git" / \
        "autoresearch-sessions" / "s1" / "slots"
    found = held(Repo.discover(repo), "s1")
    assert (found[1]["pid"], found[1]["worker"]) == (first.pid, "main")
    release.touch()
    first.communicate(timeout=60)


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_waiting_for_a_slot_ends_the_command(
        repo: Path, ar: Tool, tmp_path: Path, sig: signal.Signals, code: int) -> None:
    """``git autoresearch run`` waiting for the slot another process holds: it says so on
    stderr, and a signal ends it like any other (128 + N, the JSON error document, nothing
    recorded, no measurement pending). Once the slot is free, the run measures."""
    ar(repo, *start_args())
    release = tmp_path / "release"
    first = holder(tmp_path, repo, 1, str(release))
    assert first_line(first) == "1"
    write(repo / "value.txt", "90\n")
    proc = subprocess.Popen([*TOOL, "run", "-d", "lower", "--json"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = stderr_until(proc, "waiting for a measurement slot")
    assert said.endswith(f"waiting for a measurement slot for run 2 (1 in use: slot 1: pid "
                         f"{first.pid} (worker main): test {first.pid})\n")
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert check_document(json.loads(out))["exit_code"] == code
    assert [r["run"] for r in runs(repo)] == [1]
    assert not (repo / ".git" / "autoresearch" / "pending.json").exists()
    release.touch()
    first.communicate(timeout=60)
    assert ar(repo, "run", "-d", "lower", "--json").json()["status"] == "keep"


def test_the_record_names_the_slot_and_its_cpus(repo: Path, ar: Tool) -> None:
    """With more than one slot, or pinned, a run's record (and ``pending.json``) names its
    slot: ``{"slot": k, "of": n}``, and with ``pin_cpus`` the CPUs it ran on, which its
    command sees as its affinity. With the one slot unpinned, a record is as before."""
    ar(repo, *start_args())
    assert "slot" not in runs(repo)[0]
    assert "slot" not in ar(repo, "measure", "--json").json()
    ar(repo, "start", "--new-segment", "--no-baseline", "--measure-slots", "2")
    write(repo / "value.txt", "90\n")
    assert ar(repo, "measure", "--json").json()["slot"] == {"slot": 1, "of": 2}
    pending = json.loads((repo / ".git" / "autoresearch" / "pending.json").read_text())
    assert pending["slot"] == {"slot": 1, "of": 2}
    ar(repo, "keep", "-d", "lower")
    assert runs(repo)[-1]["slot"] == {"slot": 1, "of": 2}
    if not hasattr(os, "sched_getaffinity"):
        return
    ar(repo, "start", "--new-segment", "--no-baseline", "--pin-cpus", "--command",
       "python3 -c 'import os; print(\"score:\", len(os.sched_getaffinity(0)))'")
    ar(repo, "run", "-d", "pinned")
    cpus = cpu_share(sorted(os.sched_getaffinity(0)), 1, 2)
    assert runs(repo)[-1]["slot"] == {"slot": 1, "of": 2, "cpus": list(cpus)}
    assert runs(repo)[-1]["metric"] == len(cpus)


def test_cpu_share_cuts_the_cpus_evenly() -> None:
    assert [cpu_share([0, 1, 2, 3], k, 2) for k in (1, 2)] == [(0, 1), (2, 3)]
    assert [cpu_share([0, 1, 2, 3, 4], k, 2) for k in (1, 2)] == [(0, 1), (2, 3, 4)]
    assert [cpu_share([4, 6], k, 3) for k in (1, 2, 3)] == [(4,), (6,), (4,)]
    assert cpu_share([0, 1], 1, 1) == (0, 1)


@pytest.mark.parametrize("key,value,message", [
    ("measure_slots", 0, "measure_slots must be a whole number from 1 to 1024"),
    ("measure_slots", True, "measure_slots must be a whole number from 1 to 1024"),
    ("pin_cpus", "yes", "pin_cpus must be true or false"),
    ("claim_timeout", "soon", "claim_timeout 'soon' is not a duration above 0 such as 2h, "
                              "90m or 3600s"),
    ("claim_timeout", "0", "claim_timeout '0' is not a duration above 0 such as 2h, 90m or "
                           "3600s"),
])
def test_bad_worker_keys_are_refused(key: str, value: object, message: str) -> None:
    from git_autoresearch.runtime.errors import UsageError

    with pytest.raises(UsageError) as found:
        Config.from_mapping({"goal": "g", "command": "c", key: value}, source="config.toml")
    assert found.value.message == f"config.toml: {message}"


def test_a_configuration_without_the_keys_renders_as_before() -> None:
    """An optional key absent from an older file leaves its bytes as they were; the defaults
    are one slot, unpinned, and claims lasting two hours."""
    cfg = Config.from_mapping({"goal": "g", "command": "c"}, source="x")
    assert b"slots" not in cfg.render() and b"claim" not in cfg.render()
    assert (cfg.slots, cfg.pin_cpus, cfg.claim_seconds) == (1, None, 7200.0)
    cfg = Config.from_mapping({"goal": "g", "command": "c", "measure_slots": 4,
                               "claim_timeout": "90m"}, source="x")
    assert b"measure_slots = 4\nclaim_timeout = \"90m\"\n" in cfg.render()
    assert (cfg.slots, cfg.claim_seconds) == (4, 5400.0)


def test_status_names_the_worker_that_measures(repo: Path, ar: Tool, tmp_path: Path) -> None:
    """While a measurement holds a slot, ``status`` says which worker measures what."""
    ar(repo, *start_args())
    release = tmp_path / "release"
    first = holder(tmp_path, repo, 1, str(release))
    assert first_line(first) == "1"
    [doing] = ar(repo, "status", "--json").json()["workers"]
    assert (doing["worker"], doing["slot"]["slot"], doing["slot"]["pid"],
            doing["slot"]["what"]) == ("main", 1, first.pid, f"test {first.pid}")
    assert f"worker      main: measuring (test {first.pid}, slot 1); last run 1 keep\n" in \
        ar(repo, "status").out
    release.touch()
    first.communicate(timeout=60)
    assert "workers" not in ar(repo, "status", "--json").json()


def test_pinning_where_the_platform_cannot_warns_once(repo: Path, ar: Tool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``pin_cpus`` on a platform without ``sched_setaffinity``: one warning a command, no
    pinning, and a record with no CPUs (the one slot, unpinned: no slot at all)."""
    from git_autoresearch.measure import slots

    ar(repo, *start_args("--pin-cpus"))
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    monkeypatch.setattr(slots, "_pin_warned", False)
    write(repo / "value.txt", "90\n")
    first = ar(repo, "run", "-d", "lower")
    write(repo / "value.txt", "80\n")
    second = ar(repo, "run", "-d", "lower again")
    warning = ("warning: pin_cpus: this platform cannot pin a process to CPUs; measuring "
               "unpinned\n")
    assert (first.err.count(warning), second.err.count(warning)) == (1, 0)
    assert "slot" not in runs(repo)[-1]


def test_a_killed_run_holds_its_slot_until_its_command_ends(repo: Path, ar: Tool,
                                                           tmp_path: Path) -> None:
    """The measured command inherits the slot's lock: when the run is killed outright, its
    orphaned benchmark still holds the slot, so no other measurement runs beside it; the slot
    is free once the benchmark ends."""
    import signal
    import time

    flag, started = tmp_path / "go", tmp_path / "started"
    write(repo / "bench.sh", f"#!/bin/sh\ntouch {started}\n"
          f"[ -e {started}.once ] && while [ ! -e {flag} ]; do sleep 0.05; done\n"
          "echo \"score: $(cat value.txt)\"\n", 0o755)
    git(repo, "commit", "-qam", "a bench that waits")
    ar(repo, *start_args())
    (tmp_path / "started.once").touch()
    started.unlink()
    run = subprocess.Popen([*TOOL, "measure"], cwd=repo, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not started.exists():
        assert time.monotonic() < deadline and run.poll() is None, run.communicate()
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=30)
    assert list(held(Repo.discover(repo), "s1")) == [1], "the orphaned benchmark holds it"
    flag.touch()
    while held(Repo.discover(repo), "s1"):
        assert time.monotonic() < deadline, "the slot was never freed"
        time.sleep(0.05)


def test_finalize_waiting_for_a_slot_names_what_it_measures(repo: Path, ar: Tool,
                                                            tmp_path: Path) -> None:
    """finalize measures the final branch against its base in a slot like any measurement:
    waiting for one, it says that is what it measures (it said 'audit of run 0')."""
    ar(repo, *start_args())
    write(repo / "value.txt", "90\n")
    ar(repo, "run", "-d", "better")
    release = tmp_path / "release"
    first = holder(tmp_path, repo, 1, str(release))
    assert first_line(first) == "1"
    final = subprocess.Popen([*TOOL, "finalize", "--samples", "1"], cwd=repo,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = stderr_until(final, "waiting for a measurement slot")
    assert said.splitlines()[-1].startswith(
        "waiting for a measurement slot for the final branch against its base (1 in use")
    release.touch()
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    first.communicate(timeout=60)

"""The hermetic seal and the helpers every test uses.

No test reads or writes the real home or git configuration: HOME and XDG_CONFIG_HOME point into
the test's temporary folder, system config is off, identities and dates are fixed, the editor
fails, and new repositories get an empty template folder. Every repository is a real one.
"""

from __future__ import annotations

import compileall
import functools
import itertools
import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import git_autoresearch
from git_autoresearch import cli, commands
from git_autoresearch.runtime.schemas import COMMAND_DOCUMENTS, STREAMED

# The package compiled once, as an installed one is (pip compiles a package it installs; an
# editable install is not, and with PYTHONDONTWRITEBYTECODE set, as on the CI machines, each
# of the thousands of tool processes the tests start would compile it again: 60 ms each, a
# third of the suite's time). Up-to-date bytecode is left as it is.
compileall.compile_dir(Path(git_autoresearch.__file__).parent, quiet=1)

PYTHON = shlex.quote(sys.executable)
FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"
BIN = Path(sys.executable).parent
# The tool as ``python -m``: for tests that start it themselves (signals, kills, pauses).
TOOL = [sys.executable, "-m", "git_autoresearch"]
# The named steps a worker's keep or replay can be killed at, and a joined clone's; each is
# killed in a test of tests/workers/, and tests/record/test_recovery.py checks every step the
# product names is among them or its own.
WORKER_STEPS = ["keep:before-advance", "replay:saved", "replay:reverted", "replay:moved"]
REMOTE_STEPS = ["keep:before-push", "keep:after-push", "land:undone-branch",
                "join:before-claim"]
# The steps a measuring host dies at in its own tests (test_remote_workers.py): after recording
# a candidate's run, before sending the verdict; and just after sending it.
HOST_STEPS = ["measurer:before-verdict", "measurer:after-verdict"]

# Where the tests' temporary folders go when nothing else is asked (--basetemp,
# PYTEST_DEBUG_TEMPROOT): a file system in memory, when there is one with room. A session's
# commands replace git's index and refs and our own files by renaming over them, which ext4
# flushes to disk each time, and fsync several: on a disk the suite spends a third of its time
# waiting for it. No test depends on the disk itself (the fsync test counts the calls; the
# storage tests mount their own small file systems).
MEMORY_TEMPROOT = Path("/dev/shm")
MEMORY_TEMPROOT_ROOM = 2 << 30


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """What ``-n auto`` starts: one worker more than the cores this process may run on. A test
    spends much of its time waiting for the git and shell processes it starts, or for a signal
    or a lock to arrive; with one worker a core, the cores stood idle a fifth of the time (2
    cores: 1.6 busy on average; with a third worker, 1.9, and the suite a fifth faster).
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set (None: xdist's own reading)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return cores + 1


def pytest_configure(config: pytest.Config) -> None:
    if (config.option.basetemp is None and "PYTEST_DEBUG_TEMPROOT" not in os.environ
            and MEMORY_TEMPROOT.is_dir() and os.access(MEMORY_TEMPROOT, os.W_OK | os.X_OK)):
        room = os.statvfs(MEMORY_TEMPROOT)
        if room.f_bavail * room.f_frsize >= MEMORY_TEMPROOT_ROOM:
            os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY_TEMPROOT)


# A background job of a non-interactive shell starts with SIGINT ignored, and the tool keeps an
# ignored signal ignored (as it must): give the tests' children the default, so that the suite
# tests the tool's own handling however it was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    template = tmp_path_factory.mktemp("template")
    for name in list(os.environ):
        if name.startswith("GIT_") or name.startswith("AUTORESEARCH_"):
            monkeypatch.delenv(name)
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_AUTHOR_DATE": "2026-11-29T12:00:00+00:00",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.invalid",
        "GIT_COMMITTER_DATE": "2026-11-29T12:00:00+00:00",
        "GIT_EDITOR": "false",
        "GIT_TEMPLATE_DIR": str(template),
        "GIT_AUTORESEARCH_LOCK_WAIT": "20",
        "LC_ALL": "C.UTF-8",
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    """Run real git; return stdout (text, stripped). Fails the test on a non-zero exit."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr.decode()}"
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


SCHEMAS_DIR = Path(__file__).resolve().parent.parent / "share" / "schemas"


@functools.cache
def _validators() -> dict[str, Any]:
    """A validator for each JSON document the tool prints, by its ``schema`` value (the
    schema file's ``$id``), with every schema file in one registry for their ``$ref``s."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = [json.loads(p.read_text()) for p in sorted(SCHEMAS_DIR.glob("*.json"))]
    registry: Registry[Any] = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas)
    return {s["$id"]: Draft202012Validator(s, registry=registry) for s in schemas}


def check_document(document: Any, what: str = "the document") -> Any:
    """Fail the test unless ``document`` is a JSON document of this tool: an object whose
    ``schema`` names a schema of ``share/schemas`` that it is valid against. Returns it."""
    assert isinstance(document, dict), f"{what} is no JSON object: {document!r:.200}"
    name = document.get("schema")
    validator = _validators().get(name)  # type: ignore[arg-type]
    assert validator is not None, f"{what} names no known schema: {name!r}"
    problems = [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message:.300}"
                for e in validator.iter_errors(document)]
    assert not problems, f"{what} does not follow {name}:\n" + "\n".join(problems[:10])
    return document


def wants_document(args: list[str] | tuple[str, ...]) -> bool:
    """Whether a command line asks for one JSON document on stdout (``--json``, or log's
    ``--format json``)."""
    return "--json" in args or "--format=json" in args or any(
        a == "--format" and b == "json" for a, b in zip(args, args[1:], strict=False))


@dataclass
class Result:
    """One in-process call of the tool: its exit code and its captured stdout and stderr."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        """stdout read as the JSON document a ``--json`` command prints (a JSON value, hence
        ``Any``); raises ``json.JSONDecodeError`` when stdout is not one."""
        return json.loads(self.out)


class Tool:
    """Calls ``git autoresearch`` in-process, from a given directory, with output captured.

    The type of the ``ar`` fixture: ``ar(cwd, *args, expect=0) -> Result`` fails the test unless
    the exit code is ``expect`` (``expect=None`` accepts any code)."""

    def __init__(self, capsys: pytest.CaptureFixture[str],
                 monkeypatch: pytest.MonkeyPatch) -> None:
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def __call__(self, cwd: Path, *args: str, expect: int | None = 0) -> Result:
        self.capsys.readouterr()
        self.monkeypatch.chdir(cwd)
        code = cli.invoke(commands.cli, "git autoresearch", list(args))
        captured = self.capsys.readouterr()
        result = Result(code, captured.out, captured.err)
        if wants_document(args) and captured.out.strip():
            # (a long-lived command prints a document a line as it goes)
            documents = [json.loads(line) for line in captured.out.splitlines()] \
                if COMMAND_DOCUMENTS.get(args[0]) in STREAMED else [json.loads(captured.out)]
            for document in documents:
                check_document(document, f"the output of {' '.join(args)}")
        if expect is not None:
            assert code == expect, \
                f"exit {code}, wanted {expect}\nout: {result.out}\nerr: {result.err}"
        return result


@pytest.fixture
def ar(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Tool:
    return Tool(capsys, monkeypatch)


def write(path: Path, text: str | bytes, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def make_executable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit: a program whose 'speed' is the number in value.txt."""
    top = tmp_path / "project"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    write(top / "value.txt", "100\n")
    write(top / "src" / "lib.py", "def f():\n    return 1\n")
    write(top / "README.md", "project\n")
    write(top / "bench.sh", "#!/bin/sh\necho \"score: $(cat value.txt)\"\n", 0o755)
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "initial")
    return top


# What a run's note of a set-aside file adds to the command that brings it back.
TAKEN_AGAIN = ("(the next run takes it again unless it is committed on its own, or kept in "
               ".auto/ or .gitignore)")


def start_args(*extra: str) -> list[str]:
    """A start command line for the ``repo`` fixture: metric = the number in value.txt; the
    benchmark, bench.sh, is readonly because the command names it."""
    return ["start", "--goal", "lower the value", "--session-id", "s1",
            "--command", "sh bench.sh", "--metric-name", "score",
            "--metric-pattern", r"score: (\S+)", "--direction", "lower", *extra]


def ledger_lines(top: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (top / ".auto" / "log.jsonl").read_text().splitlines()
            if line.strip()]


def runs(top: Path) -> list[dict[str, Any]]:
    return [line for line in ledger_lines(top) if "run" in line and "type" not in line]


def left_behind(top: Path) -> list[str]:
    """What a recovered command must not leave in the scratch folder (``git rev-parse
    --git-path autoresearch``): the intent record, the index a keep saved, and the temporary
    files of killed commands."""
    scratch = top / git(top, "rev-parse", "--git-path", "autoresearch")
    return sorted(p.name for p in scratch.iterdir()
                  if p.name in ("intent.json", "index-before-keep") or p.name.endswith(".tmp")
                  or p.name.startswith(("attempt-index.", "state-piece.")))


def commit_all(top: Path, message: str = "more") -> None:
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", message)


def assert_dies(pid: int, what: str, seconds: float = 5) -> None:
    """Fail unless process ``pid`` is gone within ``seconds``: no such process, or a zombie
    (dead, waiting for its new parent, which in a container may reap it late or never)."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return
        if state == b"Z":
            return
        if time.monotonic() >= deadline:
            pytest.fail(f"{what} (pid {pid}) is still alive")
        time.sleep(0.05)


def tool(cwd: Path, *args: str, env: dict[str, str] | None = None,
         input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The tool run to its end in ``cwd`` as ``python -m`` (no exit code asserted)."""
    return subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, text=True, input=input,
                          env={**os.environ, **(env or {})})


def launch(cwd: Path, *args: str, env: dict[str, str] | None = None, argv: Sequence[str] = TOOL,
           ignore: Sequence[int] = (), new_group: bool = False) -> subprocess.Popen[bytes]:
    """The tool as a subprocess, with ``ignore``d signals ignored from its start (as a shell's
    background job or nohup leaves them)."""

    def prepare() -> None:
        for signum in ignore:
            signal.signal(signum, signal.SIG_IGN)

    return subprocess.Popen([*argv, *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                            preexec_fn=prepare, start_new_session=new_group)


def wait_for_file(path: Path, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def paused_at(step: str, go: Path, cwd: Path, *args: str) -> subprocess.Popen[str]:
    """The tool started with ``args`` in ``cwd``, once it says it paused at ``step``; it goes
    on when the file ``go`` exists."""
    paused = subprocess.Popen(
        [*TOOL, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "GIT_AUTORESEARCH_PAUSE_AT": step,
             "GIT_AUTORESEARCH_GO_FILE": str(go)})
    assert paused.stderr is not None
    assert paused.stderr.readline().strip() == f"paused at {step}"
    return paused


def make_crew(repo: Path, ar: Tool, *start: str) -> tuple[Path, Path, Path]:
    """A session whose score is value.txt + extra.txt (both in scope), under the strict rule
    (and the ``start`` options), with workers w1 and w2: (main, w1, w2)."""
    write(repo / "extra.txt", "100\n")
    write(repo / "bench.sh", "#!/bin/sh\necho \"score: $(( $(cat value.txt) + "
          "$(cat extra.txt) ))\"\n", 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two numbers")
    ar(repo, *start_args("--decision", "strict", "--scope", "value.txt", "--scope",
                         "extra.txt", *start))
    made = ar(repo, "worker", "add", "2", "--json").json()["workers"]
    folder = repo.parent / "project.workers"
    assert [(w["worker"], w["path"], w["branch"]) for w in made] == [
        ("w1", str(folder / "w1"), "autoresearch-workers/s1/w1"),
        ("w2", str(folder / "w2"), "autoresearch-workers/s1/w2")]
    return repo, folder / "w1", folder / "w2"


# The Mann-Whitney reference, from first principles: the decision rules' tests and the audit's
# compare the rule's p-values with these.

@functools.cache
def enumerated_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, n) placements of n candidate samples among m pool samples (no
    ties) give each Mann-Whitney count U: by enumerating them all."""
    counts = [0] * (m * n + 1)
    for places in itertools.combinations(range(m + n), n):
        counts[sum(p - i for i, p in enumerate(places))] += 1
    return tuple(counts)


def tail(u: float, m: int, n: int) -> float:
    """P(U <= u) for samples of m and n with no ties, from :func:`enumerated_counts`."""
    counts = enumerated_counts(m, n)
    return sum(counts[:int(u) + 1]) / sum(counts)


def count_u(pool: list[float], candidate: list[float]) -> float:
    return sum((c > p) + 0.5 * (c == p) for c in candidate for p in pool)

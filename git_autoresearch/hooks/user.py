"""Firing the user's hooks (gitautoresearch-hooks(5)).

``.auto/hooks/before.sh`` fires before each run and ``.auto/hooks/after.sh`` after each recorded
run, then every executable file in ``.auto/hooks/before.d/`` or ``after.d/`` in name order. Each
gets one JSON line on stdin (then EOF); its stdout, capped at 8 KiB, is a steer message for the
agent. A non-zero exit, a timeout or a hook that cannot be started gives an error steer. A hook
never stops a run from being recorded.

A hook runs as pi-autoresearch 1.6.2 runs it (``extensions/pi-autoresearch/hooks.ts``) where
that is safe: only with the execute bit, and a file without a ``#!`` line through ``bash``
(pi runs every hook with ``bash script``). A file with a ``#!`` line runs with the interpreter
it names (pi would hand a Python hook to bash); the payload line ends in a newline (pi writes
none, which makes a shell's ``read`` fail); a timeout ends the hook's whole process group (pi's
ends bash alone).
"""

from __future__ import annotations

import errno
import os
import select
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ..ledger import dumps, now_ms
from ..measure.runner import command_environment, process_group
from ..runtime import signals
from ..session.config import hook_timeout_seconds

STEER_LIMIT = 8 * 1024
STDERR_LIMIT = 4 * 1024
TRUNCATION_MARKER = ("\n[steer truncated: the hook printed {total} bytes; "
                     "the first {kept} are shown]")
STAGES = ("before", "after")


def cut(data: bytes, limit: int = STEER_LIMIT) -> tuple[str, bool]:
    """``data`` as text of at most ``limit`` bytes: cut at the last newline within the limit, or
    else at a UTF-8 character boundary. Returns the text and whether it was cut."""
    if len(data) <= limit:
        return data.decode("utf-8", "replace"), False
    head = data[:limit]
    newline = head.rfind(b"\n")
    if newline > 0:
        head = head[:newline + 1]
    else:
        end = len(head)
        while end > 0 and (head[end - 1] & 0xC0) == 0x80:
            end -= 1
        if end > 0 and head[end - 1] >= 0xC0:
            end -= 1
        head = head[:end]
    return head.decode("utf-8", "replace"), True


class HookLine(TypedDict):
    """The ledger line of one firing (gitautoresearch-hooks(5)): ``type`` is ``"hook"``;
    ``exit_code`` None when it was killed on timeout or could not be started (as
    pi-autoresearch logs both, ``hooks.ts:146``); ``duration_ms`` its wall time in
    milliseconds; ``stdout_bytes`` all it printed, before the 8 KiB cut; ``timestamp`` in epoch
    milliseconds, when the line is made."""

    type: str
    stage: str
    hook: str
    exit_code: int | None
    duration_ms: int
    stdout_bytes: int
    timed_out: bool
    timestamp: int


class HookSummary(TypedDict):
    """A hook fired around a run, as the run record's ``hooks`` field lists it."""

    stage: str
    hook: str
    exit_code: int | None
    timed_out: bool


@dataclass
class Firing:
    """One hook firing: which file, its exit code (None when killed on timeout or never
    started), the steer text (stdout, cut to 8 KiB; an error steer after a failure, a timeout
    or a failed start), and the ledger fields."""

    stage: str
    hook: str
    exit_code: int | None
    duration_ms: int
    stdout_bytes: int
    timed_out: bool
    steer: str

    def ledger_line(self) -> HookLine:
        """The firing's line in the ledger (and in ``hook --json``), stamped now."""
        return HookLine(type="hook", stage=self.stage, hook=self.hook,
                        exit_code=self.exit_code, duration_ms=self.duration_ms,
                        stdout_bytes=self.stdout_bytes, timed_out=self.timed_out,
                        timestamp=now_ms())

    def summary(self) -> HookSummary:
        """The firing as the run record's ``hooks`` field lists it."""
        return HookSummary(stage=self.stage, hook=self.hook, exit_code=self.exit_code,
                           timed_out=self.timed_out)


@dataclass
class HookReport:
    """All firings of one stage, plus the warnings (hooks not run, and why)."""

    stage: str
    firings: list[Firing] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def steer(self) -> str:
        """The steer messages of every firing, joined in firing order."""
        return "\n".join(f.steer.rstrip("\n") for f in self.firings if f.steer.strip())

    def summary(self) -> list[HookSummary]:
        """Every firing, in order, as the run record's ``hooks`` field lists them."""
        return [f.summary() for f in self.firings]


# The run record as pi-autoresearch 1.6.2 hands it to a hook: the ledger line it just wrote
# (``index.ts:2277-2286`` and ``:2436-2441``), these keys in this order.
PI_RUN_KEYS = ("run", "commit", "metric", "metrics", "status", "description", "timestamp",
               "segment", "confidence", "asi")


def run_payload(data: Mapping[str, Any]) -> dict[str, Any]:
    """A run record (a ledger line, or ``{}``) as a hook sees it, ``run_entry`` or
    ``last_run``: pi-autoresearch's keys in its order (:data:`PI_RUN_KEYS`), as its ledger line
    has them; ``metric`` a number, 0 for a crash or a run without one (pi's ``index.ts:241``:
    "0 for crashes"; ``jsonl.ts:118`` reads a missing one as 0); ``asi`` only when the run has
    one (``index.ts:2441``). Then ours: the ``decision`` object when the run has one. Our other
    fields (samples, checks, refs) stay in the ledger."""
    metric = data.get("metric")
    payload: dict[str, Any] = {key: data.get(key) for key in PI_RUN_KEYS if key != "asi"}
    payload["metric"] = metric if isinstance(metric, (int, float)) \
        and not isinstance(metric, bool) else 0
    payload["metrics"] = data.get("metrics") if isinstance(data.get("metrics"), dict) else {}
    if isinstance(data.get("asi"), dict) and data["asi"]:
        payload["asi"] = data["asi"]
    if isinstance(data.get("decision"), dict):
        payload["decision"] = data["decision"]
    return payload


def hook_files(hooks_dir: Path, stage: str) -> tuple[list[Path], list[str]]:
    """The hook files of ``stage`` in firing order, and warnings for files that will not run
    (a symbolic link to nothing among them: its target was lost, say, to ``git clean``; a
    file or folder that cannot be read, which is said and skipped, never an error: a hook
    fires after a run was recorded)."""
    candidates: list[Path] = []
    main = hooks_dir / f"{stage}.sh"
    folder = hooks_dir / f"{stage}.d"
    try:
        if main.is_file() or main.is_symlink():
            candidates.append(main)
        if folder.is_dir():
            candidates.extend(sorted((p for p in folder.iterdir()
                                      if (p.is_file() or p.is_symlink())
                                      and not p.name.startswith(".")), key=lambda p: p.name))
    except OSError as exc:
        return [], [f"the {stage} hooks in {hooks_dir} cannot be read ({exc.strerror}): none "
                    "was run"]
    runnable, warnings = [], []
    for path in candidates:
        rel = path.relative_to(hooks_dir.parent.parent) if hooks_dir.parent.parent in \
            path.parents else path
        if not path.exists():
            warnings.append(f"hook {rel} is a symbolic link to {os.readlink(path)}, which "
                            "does not exist: it was not run")
            continue
        if not path.is_file():
            continue  # a link to a folder
        if not os.access(path, os.X_OK):
            warnings.append(f"hook {rel} is not executable and was not run "
                            f"(chmod +x {rel})")
            continue
        try:
            with open(path, "rb") as fh:
                first = fh.readline(4096)
        except OSError as exc:
            warnings.append(f"hook {rel} cannot be read ({exc.strerror}) and was not run")
            continue
        if first.endswith(b"\r\n"):
            effect = ("so its interpreter may not be found" if first.startswith(b"#!")
                      else "which bash reads as part of each command")
            warnings.append(f"hook {rel} has Windows line endings (its first line ends in a "
                            f"carriage return), {effect}")
        runnable.append(path)
    return runnable, warnings


def fire_one(path: Path, stage: str, payload: Mapping[str, Any], *, cwd: Path,
             timeout: float | None = None, label: str | None = None) -> Firing:
    """Run one hook with ``payload`` as one JSON line on stdin, in its own process group: the
    file itself, or ``bash FILE`` when the system cannot run it (no ``#!`` line), as
    pi-autoresearch runs hooks (``hooks.ts:88``). One that cannot be started at all gives a
    firing with no exit code and an error steer that says why.

    Waits at most ``timeout`` seconds (default ``$GIT_AUTORESEARCH_HOOK_TIMEOUT``, 30), then
    ends the whole group (:func:`measure.runner.process_group`), as it does when a signal ends us.
    A background process that keeps the hook's stdout open does not make us wait past the
    moment the hook itself exits (plus a short drain).
    """
    limit = hook_timeout_seconds() if timeout is None else timeout
    name = label or path.name
    env = command_environment()
    started = time.monotonic()
    argv = [str(path)]
    while True:
        try:
            # The group is ended when the block exits: after the hook, on timeout, or on a
            # signal.
            with process_group(argv, grace=0.5, cwd=cwd, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env) as proc:
                _feed(proc, payload)
                output = _collect(proc, started + limit)
            break
        except OSError as exc:
            if exc.errno == errno.ENOEXEC and len(argv) == 1:
                # No #! line: bash runs it, as pi runs every hook (hooks.ts:88).
                import shutil  # (bz2, lzma, ...): only where needed

                bash = shutil.which("bash", path=env.get("PATH", os.defpath))
                if bash is not None:
                    argv = [bash, str(path)]
                    continue
            return _not_started(stage, name, _start_failure(path, argv, exc),
                                int((time.monotonic() - started) * 1000))
    return _firing(stage, name, proc.returncode, limit, output,
                   int((time.monotonic() - started) * 1000))


def _start_failure(path: Path, argv: list[str], exc: OSError) -> str:
    """Why the hook at ``path`` could not be started, in words: no bash for a file without a
    ``#!`` line, a ``#!`` interpreter that is missing, or the system's reason."""
    if exc.errno == errno.ENOEXEC:
        return "it has no #! line, so it runs through bash, and there is no bash on PATH"
    if exc.errno == errno.ENOENT and len(argv) == 1:
        try:
            with open(path, "rb") as fh:
                first = fh.readline(4096)
        except OSError:
            first = b""
        if first.startswith(b"#!"):
            words = first[2:].decode("utf-8", "replace").split()
            if words:
                return f"its interpreter {words[0]} was not found"
    return exc.strerror or str(exc)


def _not_started(stage: str, name: str, why: str, duration_ms: int) -> Firing:
    """The firing of a hook that could not be started: no exit code, not timed out, an error
    steer (pi-autoresearch reports a bash it cannot spawn the same way, ``hooks.ts:124``)."""
    return Firing(stage, name, None, duration_ms, 0, False,
                  f"[{stage} hook {name} could not be started: {why}]")


@dataclass
class _Printed:
    """What a hook printed: ``out`` (stdout, kept to one byte past :data:`STEER_LIMIT`, so a
    cut shows), ``err`` (stderr, kept to :data:`STDERR_LIMIT`), ``total`` stdout bytes, and
    whether it was still running at its deadline (``timed_out``)."""

    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    total: int = 0
    timed_out: bool = False

    def take(self, stream: str, chunk: bytes) -> None:
        if stream == "out":
            self.total += len(chunk)
            if len(self.out) <= STEER_LIMIT:
                self.out.extend(chunk[:STEER_LIMIT + 1 - len(self.out)])
        elif len(self.err) < STDERR_LIMIT:
            self.err.extend(chunk[:STDERR_LIMIT - len(self.err)])


def _feed(proc: subprocess.Popen[bytes], payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as one JSON line on the hook's stdin, then EOF; a hook that does not
    read it (its stdin closed) is no error."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(dumps(payload).encode("utf-8") + b"\n")
    except BrokenPipeError:
        pass
    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass


def _collect(proc: subprocess.Popen[bytes], deadline: float) -> _Printed:
    """Read the hook's stdout and stderr until both close, the ``deadline`` (a
    ``time.monotonic`` value) passes, or half a second after the hook itself exited."""
    assert proc.stdout and proc.stderr
    output = _Printed()
    streams = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    exited_at: float | None = None
    while streams:
        signals.check()  # one that came in a finalizer is raised here, not after the hook
        now = time.monotonic()
        if now >= deadline:
            output.timed_out = proc.poll() is None
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.5:
            break
        ready, _, _ = select.select(list(streams), [], [], min(0.1, deadline - now))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                output.take(streams[fd], chunk)
            else:
                del streams[fd]
    return output


def _firing(stage: str, name: str, code: int | None, limit: float, output: _Printed,
            duration_ms: int) -> Firing:
    """The :class:`Firing` of a hook that exited with ``code`` (or was killed at its
    ``limit`` in seconds): its steer cut to 8 KiB, or an error steer with its stderr."""
    steer, truncated = cut(bytes(output.out))
    if truncated:
        steer = steer.rstrip("\n") + TRUNCATION_MARKER.format(total=output.total,
                                                              kept=len(steer.encode()))
    timed_out = output.timed_out
    if timed_out:
        steer = (f"[{stage} hook {name} timed out after {limit:g}s and was killed]\n"
                 + _both(output.err, steer))
    elif code != 0:
        steer = f"[{stage} hook {name} failed with exit code {code}]\n" + _both(output.err, steer)
    return Firing(stage, name, None if timed_out else code, duration_ms, output.total,
                  timed_out, steer)


def _both(err: bytearray, steer: str) -> str:
    parts = []
    if err.strip():
        parts.append("stderr:\n" + cut(bytes(err), STDERR_LIMIT)[0].rstrip("\n"))
    if steer.strip():
        parts.append("stdout:\n" + steer.rstrip("\n"))
    return "\n".join(parts)


def fire(hooks_dir: Path, stage: str, payload: Mapping[str, Any], *, cwd: Path) -> HookReport:
    """Fire every hook of ``stage``; never raises for a failing hook (one that cannot be
    started is a firing with an error steer)."""
    report = HookReport(stage)
    files, report.warnings = hook_files(hooks_dir, stage)
    for path in files:
        label = path.name if path.parent == hooks_dir else f"{path.parent.name}/{path.name}"
        report.firings.append(fire_one(path, stage, payload, cwd=cwd, label=label))
    return report


@dataclass
class Example:
    """An example hook shipped with the package: ``name`` (file name without ``.py``), its
    ``stage``, a one-line ``summary`` (from its second line), its ``path``, and the setting it
    ``needs`` to do anything (from a ``# needs: ...`` line of its header; None: none). A hook
    whose setting is unset does nothing, silently."""

    name: str
    stage: str
    summary: str
    path: Path
    needs: str | None = None


def examples() -> list[Example]:
    """The example hooks in ``hooks/before/`` and ``hooks/after/``, by stage and name."""
    from ..runtime.resources import data_path

    root = data_path("hooks")
    found = []
    for stage in STAGES:
        for path in sorted((root / stage).glob("*.py")):
            with open(path, encoding="utf-8") as fh:
                head = [fh.readline() for _ in range(4)]
            second = head[1].lstrip("# ").strip()
            name = path.stem
            summary = second[len(name) + 1:].strip() if second.startswith(name + ":") else second
            needs = next((line.split(":", 1)[1].strip() for line in head
                          if line.startswith(NEEDS)), None)
            found.append(Example(name, stage, summary, path, needs))
    return found


NEEDS = "# needs:"


def pick(names: list[str], *, every: bool = False) -> list[Example]:
    """The examples named by ``names`` (``name``, ``name.py`` or ``stage/name``), in the order
    given and each once; every example with ``every``. Raises :class:`UsageError` naming the
    first unknown name, before anything is installed."""
    from ..runtime.errors import UsageError

    known = examples()
    if every:
        return known
    picked: list[Example] = []
    for name in names:
        wanted = name.removesuffix(".py")
        match = [e for e in known if e.name == wanted or f"{e.stage}/{e.name}" == wanted]
        if not match:
            raise UsageError(f"no example hook named '{name}' (there are: "
                             f"{', '.join(e.name for e in known)})")
        if match[0] not in picked:
            picked.append(match[0])
    return picked


def install_all(picked: list[Example], hooks_dir: Path, *, force: bool = False) -> list[Path]:
    """Copy each of ``picked`` into ``hooks_dir/<stage>.d/`` with the execute bit; returns the
    new files. Raises :class:`Refused` naming every one that exists (unless ``force``),
    before any is copied."""
    from ..runtime.atomic import write_atomic
    from ..runtime.errors import Refused

    targets = [hooks_dir / f"{e.stage}.d" / f"{e.name}.py" for e in picked]
    present = [e.name for e, t in zip(picked, targets, strict=True) if t.exists()]
    if present and not force:
        one = len(present) == 1
        raise Refused(f"{'hook' if one else 'hooks'} {', '.join(present)} "
                      f"{'is' if one else 'are'} already installed in {hooks_dir}; pass --force "
                      f"to replace {'it' if one else 'them'}")
    for example, target in zip(picked, targets, strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, example.path.read_bytes(), 0o755)  # never a half-copied hook
    return targets

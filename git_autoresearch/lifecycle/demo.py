"""``git autoresearch demo``: a whole session on the bundled example project.

It copies the project, commits it, starts a session, then applies each candidate change of
``candidates/plan.toml`` as an agent would and calls ``git autoresearch run`` for it, showing every
outcome: keep, discard, crash, checks_failed and a timeout.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..git.repo import init_project, oneline_log
from ..runtime import signals
from ..runtime.errors import Refused, UsageError
from ..runtime.resources import data_path
from ..session.config import parse_toml

DEMO_TIMEOUT_SECONDS = 2


def _tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "git_autoresearch", *args]


def run_demo(directory: Path | None, *, echo: Callable[[str], None]) -> Path:
    """Run the demo in ``directory`` (a new temporary folder when None); returns the folder.

    Raises :class:`Refused` when ``directory`` exists and is not empty.
    """
    source = data_path("demo")
    if directory is None:
        target = Path(tempfile.mkdtemp(prefix="autoresearch-demo-"))
    else:
        target = directory.resolve()
        if target.exists() and any(target.iterdir()):
            raise Refused(f"{target} is not empty; name a new or empty folder for the demo")
        target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source / "project", target, dirs_exist_ok=True)
    plan = parse_toml((source / "candidates" / "plan.toml").read_bytes(), source="plan.toml")

    repo = init_project(target, "Example project: a slow sort, its benchmark and its checks",
                        "Autoresearch Demo", "demo@example.invalid")
    python = shlex.quote(sys.executable)
    echo(f"demo project: {target}\n")
    start = [
        "start", "--goal", "make the sort faster", "--session-id", "sort-demo",
        "--command", f"{python} -B bench.py", "--metric-name", "total_ms",
        "--metric-unit", "ms", "--metric-pattern", r"total_ms: ([0-9.]+)",
        "--direction", "lower", "--scope", "sortlib.py",
        "--checks-command", f"{python} -B check.py",
        "--timeout-seconds", str(DEMO_TIMEOUT_SECONDS),
    ]
    _step(start, target, echo)
    surprises = []
    for candidate in plan["candidate"]:
        shutil.copyfile(source / "candidates" / candidate["file"], target / "sortlib.py")
        echo(f"# the agent edits sortlib.py: {candidate['description']}")
        args = ["run", "-d", candidate["description"], "--asi",
                f"hypothesis={candidate['hypothesis']}"]
        out = _step(args, target, echo)
        if f": {candidate['expect']}" not in out:
            surprises.append(f"{candidate['file']}: expected {candidate['expect']}")
    _step(["log"], target, echo)
    _step(["status"], target, echo)
    _step(["dashboard"], target, echo)
    echo("$ git log --oneline --grep Result:")
    echo(oneline_log(repo, "Result:") + "\n")
    for surprise in surprises:
        echo(f"note: {surprise} (timings vary between machines)")
    echo(f"The session is in {target}: open .auto/dashboard.html in a browser, or try "
         "`git autoresearch show 4` or `git autoresearch analyze` there.")
    return target


def example_names() -> list[str]:
    """The bundled examples (``share/examples/<name>/``), sorted."""
    return sorted(p.name for p in data_path("examples").iterdir() if p.is_dir())


def copy_example(name: str, directory: Path | None) -> Path:
    """Copy the bundled example ``name`` into ``directory`` (``./<name>`` when None) and commit
    it in a new git repository there; returns the folder. Raises :class:`UsageError` for an
    unknown name (naming the known ones) and :class:`Refused` when the folder exists and is
    not empty."""
    names = example_names()
    if name not in names:
        raise UsageError(f"no example '{name}'; the examples are: {', '.join(names)}")
    target = (directory if directory is not None else Path(name)).resolve()
    if target.exists() and any(target.iterdir()):
        raise Refused(f"{target} is not empty; name a new or empty folder for the example")
    shutil.copytree(data_path("examples") / name, target, dirs_exist_ok=True)
    init_project(target, f"Example project: {name}", "Autoresearch Example",
                 "example@example.invalid")
    return target


def _step(args: list[str], cwd: Path, echo: Callable[[str], None]) -> str:
    echo("$ git autoresearch " + " ".join(shlex.quote(a) for a in args))
    with subprocess.Popen(_tool(*args), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL) as proc:
        try:
            data, _ = proc.communicate()
        except signals.Interrupted as exc:
            # The step ends as we do, cleanly (subprocess.run would SIGKILL it, and with it
            # its git's lock files and its experiment's process group would stay behind).
            proc.send_signal(exc.signum)
            proc.communicate()
            raise
    out = data.decode("utf-8", "replace")
    echo(out.rstrip("\n") + "\n")
    if proc.returncode not in (0, 4) and args[0] == "start":
        raise Refused(f"the demo could not start its session (exit {proc.returncode})")
    return out

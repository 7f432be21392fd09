"""How many of the package's modules one ``git autoresearch run`` that keeps enters.

A scratch repository with a session (one baseline), a change that lowers the metric, then one
``run`` in this process under a ``sys.setprofile`` tracer: every module of the package whose
code is called (a module's own body too, when it is imported) counts once, from the import of
the entry point on; a folder's ``__init__`` too (told apart in the report). By
default the count stops when the keep's commit is written (the first call into
``git.repo.Repo.commit`` or ``commit_tree``); ``--whole`` counts the whole command, after
hooks and output included.

    python bench/bench_modules.py [--whole] [--list]

Run by hand (not a test): the figure goes in the contributors' notes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGE = "git_autoresearch"


def session(top: Path) -> None:
    """A repository at ``top`` with a session whose metric is the number in value.txt, and a
    change that lowers it, ready to be kept."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    os.environ.update({k: env[k] for k in env if k.startswith("GIT_")})
    subprocess.run(["git", "init", "-q", "-b", "main", str(top)], check=True)
    (top / "value.txt").write_text("100\n")
    (top / "bench.sh").write_text('#!/bin/sh\necho "score: $(cat value.txt)"\n')
    subprocess.run(["git", "add", "-A"], cwd=top, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "initial"], cwd=top, check=True)
    subprocess.run([sys.executable, "-m", PACKAGE, "start", "--goal", "lower",
                    "--session-id", "b1", "--command", "sh bench.sh", "--metric-name",
                    "score", "--metric-pattern", r"score: (\S+)", "--direction", "lower"],
                   cwd=top, check=True, capture_output=True)
    (top / "value.txt").write_text("90\n")


def traced_run(top: Path, whole: bool) -> list[str]:
    """The package's modules (paths below the package folder) that one ``run`` enters."""
    seen: dict[str, None] = {}
    done = [False]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or done[0]:
            return
        path = frame.f_code.co_filename
        marker = f"/{PACKAGE}/"
        if marker in path:
            name = path.split(marker, 1)[1]
            seen.setdefault(name, None)
            if not whole and name == "git/repo.py" \
                    and frame.f_code.co_name in ("commit", "commit_tree"):
                done[0] = True

    os.chdir(top)
    sys.argv = ["git-autoresearch", "run", "-d", "ninety"]
    sys.setprofile(profile)  # from before the entry point is imported: its imports count too
    try:
        from git_autoresearch import cli

        cli.main()
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    return list(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--whole", action="store_true", help="count the whole command")
    parser.add_argument("--list", action="store_true", help="list the modules")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        top = Path(scratch) / "project"
        session(top)
        found = traced_run(top, args.whole)
    plain = [m for m in found if not m.endswith("__init__.py")]
    print(f"modules entered ({'the whole run' if args.whole else 'up to the keep commit'}): "
          f"{len(found)} ({len(plain)} besides folders' __init__)", file=sys.stderr)
    if args.list:
        for name in sorted(found):
            print(name, file=sys.stderr)


if __name__ == "__main__":
    main()

"""Installed data: the demo project, the agent skill, the example hooks, the JSON schemas and
the measuring host's scripts. ``python -m git_autoresearch.runtime.resources NAME`` prints where
one is (a CI job finds drain.sh so).

In a wheel they live in ``git_autoresearch/_data/``; in a source checkout (an editable install),
in the repository's ``share/`` and ``hooks/`` folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
_SOURCE = _PACKAGE.parent


def data_path(name: str) -> Path:
    """The folder of installed data ``name`` (``demo``, ``examples``, ``skill``, ``hooks``,
    ``schemas`` or ``measuring-host``)."""
    packaged = _PACKAGE / "_data" / name
    if packaged.is_dir():
        return packaged
    source = _SOURCE / ("hooks" if name == "hooks" else f"share/{name}")
    if source.is_dir():
        return source
    raise FileNotFoundError(f"installed data '{name}' is missing from {packaged}")


if __name__ == "__main__":
    import sys

    print(data_path(sys.argv[1] if len(sys.argv) > 1 else "measuring-host"))

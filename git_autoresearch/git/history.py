"""The history of a repository: commits, their fields and patches, the differences between
two commits, and which commits are on no branch; mixed into :class:`~.repo.Repo`, whose
``run`` every method calls (git-log(1), git-rev-list(1), git-diff-tree(1) machine formats)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from .process import Result, split_z

# An object id, whole or abbreviated as git prints it (4 to 64 hexadecimal digits).
HEX_NAME = re.compile(r"[0-9a-fA-F]{4,64}")


class History:
    """The history questions of :class:`~.repo.Repo` (which provides :meth:`run`)."""

    def run(self, *args: str, input: bytes | None = None,
            # mutation: equivalent a declaration for the type checker: Repo.run replaces it
            env: Mapping[str, str] | None = None, allow_non_zero: bool = False) -> Result:
        raise NotImplementedError  # mutation: equivalent Repo.run replaces it

    def show_patch(self, rev: str) -> str:
        """Commit ``rev`` for people: ``commit <id>``, its message, a diffstat and the patch
        (``git show --no-color --no-ext-diff --stat --patch``), decoded (invalid bytes
        replaced)."""
        return self.run("show", "--no-color", "--no-ext-diff", "--stat", "--patch",
                        "--format=commit %H%n%n%B", rev).stdout.decode("utf-8", "replace")

    def commit_fields(self, rev: str, fields: Sequence[str]) -> list[str]:
        """The ``--format`` placeholders ``fields`` (``%H``, ``%(trailers:...)``, ...) of commit
        ``rev``, in order, as text (invalid bytes replaced; the last without its trailing
        newline). Raises :class:`GitError` when ``rev`` names no commit."""
        fmt = "%x00".join(fields)
        return self.run("log", "-1", f"--format={fmt}", rev, "--").text.split("\0")

    def log_fields(self, spec: str, fields: Sequence[str], *, reverse: bool = False
                   ) -> list[list[str]] | None:
        """The ``--format`` placeholders ``fields`` of every commit of the revision range
        ``spec`` (newest first; oldest first with ``reverse``), in one ``git log`` (fields
        ended by ``%x1f``, commits by ``%x1e``, newlines around a commit removed); a commit
        whose fields hold such a separator is left out. None when git refuses ``spec``."""
        fmt = "%x1f".join(fields) + "%x1e"
        res = self.run("log", *(["--reverse"] if reverse else []), f"--format={fmt}", spec,
                       "--", allow_non_zero=True)
        if res.returncode != 0:
            return None
        found = []
        # Every commit ends with the separator: what follows the last one is no commit.
        for item in res.stdout.decode("utf-8", "replace").split("\x1e")[:-1]:
            parts = item.strip("\n").split("\x1f")
            if len(parts) == len(fields):
                found.append(parts)
        return found

    def blob_versions(self, rev: str, prefix: str) -> list[str]:
        """Every blob a file under the folder ``prefix`` held in the history of ``rev``, each
        once, newest first: the blobs each commit wrote there (``git log --raw
        --no-abbrev``, whose lines read ``:<mode> <mode> <old> <new> <status>\t<path>``).
        Empty when git refuses ``rev``."""
        res = self.run("log", "--raw", "--no-abbrev", "--no-renames", "--format=", rev, "--",
                       prefix, allow_non_zero=True)
        found: dict[str, None] = {}
        for line in res.text.splitlines() if res.returncode == 0 else []:
            fields = line.split("\t")[0].split()
            if line.startswith(":") and len(fields) == 5 and set(fields[3]) != {"0"}:
                found.setdefault(fields[3])
        return list(found)

    # mutation: equivalent only `False` -> `True`: git 2.39 reads both dates alike
    def date_seconds(self, when: str, *, until: bool = False) -> int | None:
        """``when`` as seconds since the epoch, read as ``git log --since`` (``--until`` with
        ``until``) reads a date: ISO dates, ``yesterday``, ``midnight``, ``2.hours.ago``...
        (git's approxidate, through ``git rev-parse --since=``, which prints
        ``--max-age=<seconds>``; ``--until=`` prints ``--min-age=``). git reads a text it does
        not understand as now, as ``git log`` does. None when git prints no date."""
        # mutation: equivalent only condition negated: git 2.39 reads both dates alike
        flag, printed = ("--until", "--min-age=") if until else ("--since", "--max-age=")
        # mutation: equivalent only `True` -> `False`: rev-parse --since never fails
        res = self.run("rev-parse", f"{flag}={when}", allow_non_zero=True)
        out = res.text.strip() if res.returncode == 0 else ""
        # mutation: equivalent only `or` -> `and`: git 2.39 prints a number for any text
        if not out.startswith(printed) or not out[len(printed):].lstrip("-").isdigit():
            return None  # mutation: equivalent (the line above)
        return int(out[len(printed):])

    def commit_times(self, names: Sequence[str]) -> dict[str, int]:
        """The committer time (seconds since the epoch) of each commit that ``names`` (object
        ids, full or abbreviated, hexadecimal) names, in one ``git log --no-walk``; a name that
        is no hexadecimal id, names no object here or no commit is left out. Keys are the
        names as given."""
        wanted = sorted({n for n in names if HEX_NAME.fullmatch(n)})
        if not wanted:
            return {}
        res = self.run("log", "--no-walk", "--ignore-missing", "--format=%H %ct", *wanted,
                       "--", allow_non_zero=True)
        if res.returncode != 0:
            return {}
        found: dict[str, int] = {}
        for line in res.text.splitlines():
            oid, _, seconds = line.partition(" ")
            if not seconds.isdigit():
                continue  # mutation: equivalent git prints %ct as digits
            for name in wanted:
                if oid.startswith(name.lower()):
                    found[name] = int(seconds)
        return found

    def patch_ids(self, spec: str) -> dict[str, str]:
        """The stable patch id (git-patch-id(1) ``--stable``) of each commit of the revision
        range ``spec`` that changes something, by full commit id: the same change has the same
        id whatever commit carries it (a cherry-pick, a rebase). Renames are read as a deletion
        and an addition, as :meth:`diff_patch_id` reads them. Empty when git refuses ``spec``.
        Two git calls."""
        res = self.run("log", "-p", "--no-color", "--no-ext-diff", "--no-renames",
                       "--no-merges", "--format=commit %H", spec, "--", allow_non_zero=True)
        # mutation: equivalent only `or` -> `and`: a refusal prints nothing, and no patch has no id
        if res.returncode != 0 or not res.stdout.strip():
            return {}
        found: dict[str, str] = {}
        for line in self.run("patch-id", "--stable", input=res.stdout).text.splitlines():
            pid, _, commit = line.partition(" ")
            if pid and commit:  # mutation: equivalent only `and` -> `or`: patch-id prints both
                found[commit] = pid
        return found

    def diff_patch_id(self, old: str, new: str) -> str | None:
        """The stable patch id of the whole difference from commit ``old`` to commit ``new``
        (the one commit a ``git merge --squash`` of ``new`` onto ``old`` makes has it); None
        when they do not differ or git refuses them."""
        res = self.run("diff", "--no-color", "--no-ext-diff", "--no-renames", old, new, "--",
                       allow_non_zero=True)
        # mutation: equivalent only `or` -> `and`: a refusal prints nothing, and no patch has no id
        if res.returncode != 0 or not res.stdout.strip():
            return None
        out = self.run("patch-id", "--stable", input=res.stdout).text.split()
        return out[0] if out else None

    def picked_into(self, base: str, tip: str, into: str = "HEAD"
                    ) -> tuple[str, list[str]] | None:
        """How the changes of ``base..tip`` came into ``into`` without those commits, by patch
        id: (``squash``, [the commit]) when a commit of ``base..into`` has the whole difference
        from ``base`` to ``tip`` (a ``git merge --squash``), (``cherry-pick``, [the commits,
        oldest first]) when every commit of ``base..tip`` has its change in one of
        ``base..into``; None otherwise (nothing in ``base..tip``, or a change missing). Four
        git calls at most; ``git log -p`` of ``base..into`` costs what that history costs."""
        kept = self.patch_ids(f"{base}..{tip}")
        here = self.patch_ids(f"{base}..{into}") if kept else {}
        if not here:
            return None
        whole = self.diff_patch_id(base, tip)
        squash = [c for c, pid in here.items() if pid == whole]
        if squash:
            return "squash", squash[:1]
        by_id = {pid: c for c, pid in here.items()}
        if not all(pid in by_id for pid in kept.values()):
            return None
        wanted = {by_id[pid] for pid in kept.values()}
        return "cherry-pick", [c for c in reversed(list(here)) if c in wanted]

    def is_ancestor(self, old: str, new: str) -> bool:
        """Whether commit ``old`` is ``new`` or an ancestor of it (``merge-base
        --is-ancestor``); False when either names no commit."""
        return self.run("merge-base", "--is-ancestor", old, new,
                        allow_non_zero=True).returncode == 0

    def rev_list(self, spec: str) -> list[str]:
        """The commits of the revision range ``spec`` (``git rev-list``), newest first; none
        when git refuses it."""
        return self.run("rev-list", spec, "--", allow_non_zero=True).text.split()

    def off_branches(self, names: Sequence[str]) -> dict[str, str | None]:
        """Of the commit ids ``names`` (full or abbreviated), those that no local branch
        reaches: each name -> its full id, or None when it names no commit at all (pruned, or
        never in this repository). Two git calls whatever the number of names
        (``cat-file --batch-check``, then ``rev-list <ids> --not --branches``)."""
        wanted = [n for n in dict.fromkeys(names) if n and n.strip() == n and "\n" not in n]
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)",
                       input="".join(f"{n}^{{commit}}\n" for n in wanted).encode()).text
        full: dict[str, str | None] = {}
        # mutation: equivalent cat-file --batch-check prints one line for each name
        for name, line in zip(wanted, out.splitlines(), strict=False):
            oid, _, kind = line.partition(" ")
            full[name] = oid if kind == "commit" else None
        ids = sorted({oid for oid in full.values() if oid})
        unreached = set(self.run("rev-list", *ids, "--not", "--branches", "--",
                                 ).text.split()) if ids else set()
        return {name: oid for name, oid in full.items() if oid is None or oid in unreached}

    def diff_text(self, old: str, new: str, *, stat: bool = False,
                  name_only: bool = False) -> str:
        """The difference from commit ``old`` to commit ``new`` for people (``git diff
        --no-color --no-ext-diff``, with ``--stat`` or ``--name-only``), decoded (invalid bytes
        replaced)."""
        args = ["diff", "--no-color", "--no-ext-diff"]
        args += ["--stat"] if stat else ["--name-only"] if name_only else []
        return self.run(*args, old, new, "--").stdout.decode("utf-8", "replace")

    def changed_paths(self, old: str, new: str) -> list[str]:
        """The paths that differ between commits ``old`` and ``new`` (renames as a deletion
        and an addition)."""
        return split_z(self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", old,
                                new).stdout)

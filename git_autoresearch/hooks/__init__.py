"""Hooks, of two kinds, and the agent skill:

- ``user``: the user's hooks (``.auto/hooks/before.sh``, ``after.sh``) fired;
- ``payload``: what they are given on stdin, and the ledger lines of their firings;
- ``guard``: the git commit hooks that refuse a commit made by hand around the loop (what git
  asks of such a hook is :mod:`git_autoresearch.git.commit_hooks`);
- ``skill``: the text that teaches a coding agent the loop.

Its modules sit at layers 2 (guard), 4 (payload) and 5 (skill, user) of CONTRIBUTING.md, "How it is
built": each imports only from its own layer or below; no click, and no git command line (git.Repo's
typed methods)."""

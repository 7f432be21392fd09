"""The session as git holds it:

- ``refs``: every ref name a session writes;
- ``trailers``: every trailer of its commits, written and read (``Result:`` and the others);
- ``experiment``: the git operations of one experiment: what it changed, keep (commit), revert
  (the attempt saved under its ref), submodules;
- ``state_ref``: the session's files mirrored on ``refs/autoresearch/<id>/state``;
- ``remote_ledger``: the ledgers of clones joined through a remote, as refs;
- ``queue``: candidates queued on the remote for a measuring host, and their verdicts;
- ``checkouts``: detached worktrees of session commits, measured beside the work tree.

Its modules sit at layers 4 (checkouts), 5 (experiment, queue, remote_ledger, state_ref, trailers)
and 6 (refs) of CONTRIBUTING.md, "How it is built": each imports only from its own layer or below;
no click, and no git command line (git.Repo's typed methods). Its formats (refs) import neither
git/, the open session nor the session protocol."""

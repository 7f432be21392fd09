"""Recording a run:

- ``iteration``: one iteration of the loop as ``run`` makes it, read as its steps, and
  ``measure``'s and ``keep``/``discard``'s by hand;
- ``transaction``: keep (commit) or revert the work tree and append the run, journaled;
- ``intents``: the write-ahead intent record, written before anything changes;
- ``recovery``: the session lock of a recording command, and what a killed one left,
  finished.

Its modules sit at layers 2 (iteration), 3 (recovery, transaction) and 4 (intents) of
CONTRIBUTING.md, "How it is built": each imports only from its own layer or below; no click, and no
git command line (git.Repo's typed methods). Its modules of the session protocol (recovery,
transaction) are never imported by the open session (session.session)."""

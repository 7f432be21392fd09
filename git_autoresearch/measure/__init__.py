"""Measuring a candidate:

- ``runner``: the user's commands run through plumbum, each in a process group of its own,
  with the timeout and the kill;
- ``samples``: the samples, the metric read from the log, the checks;
- ``worktree``: the work tree measured as it is: changes outside the scope and to readonly files
  set aside first, the result kept in ``pending.json`` until a run is recorded;
- ``incumbent``: the incumbent measured beside the candidate, in a linked worktree;
- ``slots``: how many measurements run at once on a machine;
- ``jsonmetric`` and ``scoring``: metrics read from JSON, and a score made of several.

Its modules sit at layers 3 (incumbent, worktree), 5 (runner, samples, slots) and 6 (jsonmetric,
scoring) of CONTRIBUTING.md, "How it is built": each imports only from its own layer or below; no
click, and no git command line (git.Repo's typed methods). Its formats (jsonmetric, scoring) import
neither git/, the open session nor the session protocol. Its modules of the session protocol
(worktree) are never imported by the open session (session.session)."""

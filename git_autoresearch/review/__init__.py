"""Reading a session, and its ends:

- ``status``: where a session stands; ``run_commits``: where each run's change is in git;
- ``query`` and ``query_format``: ``log``'s queries and the formats it writes;
- ``report``, ``analysis``, ``dashboard``, ``plot``: the run table, ``analyze`` and ``summary``,
  the dashboard and its chart;
- ``audit``: keeps measured again against their parents;
- ``finalize`` (its pull-request body is ``pr_body``): the keeps as a branch to review;
- ``apply``: a run that was not kept, brought back onto the work tree (``apply``, and
  ``run --retry``'s first step).

Its modules sit at layers 2 (apply, audit, finalize, run_commits, status) and 5 (analysis,
dashboard, plot, pr_body, query, query_format, report) of CONTRIBUTING.md, "How it is built": each
imports only from its own layer or below; no click, and no git command line (git.Repo's typed
methods). Its views (analysis, dashboard, plot, query, query_format, report) never import git/, the
open session or the history that runs git."""

"""Reading a session: status, log's queries and formats, reports, the dashboard and its plot,
analyze and summary, and the session's ends: audit, finalize (with its pull-request text) and
apply.

Its modules sit at layers 2 (apply, audit, finalize, runcommits, status) and 5 (dashboard,
insight, plot, query, queryformat, report, review) of README "How it is built": each imports
only from its own layer or below; no click, and no git command line (git.Repo's typed methods).
Its views (dashboard, insight, plot, query, queryformat, report) never import git/, the open
session or the history that runs git.
"""

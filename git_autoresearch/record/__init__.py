"""Recording a run: keep (commit) or revert and append it, the intent journal written before
anything changes, finishing what a killed command left, and the record of run's iteration,
replayed onto an incumbent that moved.

Its modules sit at layers 2 (iteration), 3 (recording, recovery) and 4 (journal) of README
"How it is built": each imports only from its own layer or below; no click, and no git command line
(git.Repo's typed methods). Its modules of the session protocol (recording, recovery) are never
imported by the open session (session.session).
"""

"""Recording a run: keep (commit) or revert and append it, the intent journal written before
anything changes, and finishing what a killed command left.

Its modules sit at layers 3 (recording, recovery) and 4 (journal) of README "How it
is built": each imports only from its own layer or below; no click, and no git command line
(git.Repo's typed methods). Its modules of the session protocol (recording, recovery) are never
imported by the open session (session.session).
"""

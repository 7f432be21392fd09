"""Measuring: running the user's commands in a process group of their own, the samples and checks,
metrics read from JSON, the score, the measurement slots, the pending measurement of the work
tree and the incumbent measured beside it.

Its modules sit at layers 3 (incumbent, pending), 5 (running, samples, slots) and 6 (jsonmetric,
scoring) of README "How it is built": each imports only from its own layer or below; no click,
and no git command line (git.Repo's typed methods). Its formats (jsonmetric, scoring) import
neither git/, the open session nor the session protocol. Its modules of the session protocol
(pending) are never imported by the open session (session.session).
"""

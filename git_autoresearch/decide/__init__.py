"""Keep or discard: the rules on samples, what a keep or discard records, when the loop stops, and
what the stop rules count.

Its modules sit at layers 3 (choice), 4 (stopping) and 6 (budget, rules) of README "How it is
built": each imports only from its own layer or below; no click, and no git command line
(git.Repo's typed methods). Its formats (rules) import neither git/, the open session nor the
session protocol. Its modules of the session protocol (choice) are never imported by the open
session (session.session).
"""

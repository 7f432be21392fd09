"""Keep or discard, and when to stop:

- ``rules``: the decision rules on samples (strict and sequential) and the words of a verdict;
- ``choice``: what ``keep``, ``discard`` and ``crash`` by hand record (the pending measurement
  or the metrics given);
- ``stopping``: when the loop stops (STOP, the stop rules of the configuration);
- ``budget``: what the stop rules count: a segment's time budget, the runs since the last keep,
  the failures in a row, the target reached.

Its modules sit at layers 3 (choice), 4 (stopping) and 6 (budget, rules) of CONTRIBUTING.md, "How it
is built": each imports only from its own layer or below; no click, and no git command line
(git.Repo's typed methods). Its formats (rules) import neither git/, the open session nor the
session protocol. Its modules of the session protocol (choice) are never imported by the open
session (session.session)."""

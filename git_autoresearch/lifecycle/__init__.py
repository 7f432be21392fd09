"""A session's life outside the loop:

- ``start``: ``start`` in its steps; ``start_intent``: its write-ahead record (``start.json``)
  and the files it writes, so that ``resume`` finishes a start that was killed;
- ``segment_commit``: the commit of the files that define a new segment's success;
- ``resume`` and ``doctor``: repairs and checks before a loop carries on (lost session files
  and ledger lines taken back from the state ref; the repaired bytes are
  :mod:`git_autoresearch.ledger.repairs`');
- ``importers``: other tools' sessions read as ledger lines;
- ``demo``: the demo session on the bundled example project.

Its modules sit at layers 2 (demo, doctor, resume, segment_commit, start, start_intent) and 5
(importers) of CONTRIBUTING.md, "How it is built": each imports only from its own layer or below; no
click, and no git command line (git.Repo's typed methods). Its modules of the session protocol
(doctor, resume, start) are never imported by the open session (session.session)."""

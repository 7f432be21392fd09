"""What every layer runs on:

- ``errors``: the errors that carry an exit code; ``signals``: INT, TERM and HUP deferred while
  a run is recorded; ``faults``: the tests' kill points;
- ``atomic``: files written whole or not at all; ``scope``: the ``scope``, ``protected`` and
  ``readonly`` path rules; ``bounds``: bounds on what a caller passes;
- ``resources`` and ``schemas``: installed data, and the JSON documents' names and versions.

Layer 6 of CONTRIBUTING.md, "How it is built": it imports only from layer 6 or below; no click, and
no git command line (git.Repo's typed methods). Its formats (atomic, bounds, errors, scope) import
neither git/, the open session nor the session protocol."""

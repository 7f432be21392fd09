"""git-autoresearch: git plumbing for autonomous optimisation loops.

Kept results live in ``Result:`` commit trailers on ``autoresearch/<session-id>``, every run in the
JSONL ledger ``.auto/log.jsonl``, and discarded attempts under ``refs/autoresearch/<session-id>/``.
"""

__version__ = "0.1.0"

"""Digests of small inputs (a path, a configuration file, a file the commands name) without
loading OpenSSL: :mod:`hashlib` loads it at import, about 3 to 5 ms of a command's start,
which a digest of a few kilobytes never repays. Python's own implementations (``_sha1``;
``_sha2`` from 3.12, ``_sha256`` before) are used where this Python has them, else hashlib.
Large inputs (a ledger's megabytes) are digested by hashlib, whose OpenSSL is quicker there.
"""

from __future__ import annotations

import importlib
from typing import Any

# Each algorithm's own-implementation modules, in the order they are tried.
_BUILTIN = {"sha1": ("_sha1",), "sha256": ("_sha2", "_sha256")}


def hexdigest(algorithm: str, data: bytes) -> str:
    """The ``algorithm`` (``sha1`` or ``sha256``) digest of ``data`` in lower-case hex (40 or
    64 characters), the same as hashlib's. Raises KeyError for another algorithm."""
    for name in _BUILTIN[algorithm]:
        try:
            module: Any = importlib.import_module(name)
        except ImportError:
            continue
        return str(getattr(module, algorithm)(data).hexdigest())
    import hashlib

    return hashlib.new(algorithm, data).hexdigest()

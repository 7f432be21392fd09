"""Digests without OpenSSL give hashlib's answers."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from git_autoresearch.runtime.digests import hexdigest


@given(st.sampled_from(["sha1", "sha256"]), st.binary(max_size=5000))
def test_a_digest_is_hashlibs(algorithm: str, data: bytes) -> None:
    assert hexdigest(algorithm, data) == hashlib.new(algorithm, data).hexdigest()


def test_another_algorithm_is_refused() -> None:
    with pytest.raises(KeyError):
        hexdigest("md5", b"")

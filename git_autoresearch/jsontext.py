"""JSON text as JavaScript's ``JSON.stringify`` writes it, the text of pi-autoresearch's ledger
and ``Result:`` trailers (pi-autoresearch 1.6.2, extensions/pi-autoresearch/index.ts:2383 and
:2426), so that a line or a trailer reads and greps the same whichever tool wrote it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def number_text(value: float) -> str:
    """A number as the ledger and the ``Result:`` trailer write it: JavaScript's number text,
    the text ``JSON.stringify`` gives (ECMAScript's Number::toString, which pi-autoresearch's
    ledger and trailers hold): the shortest digits that read back as ``value``, in positional
    notation from 1e-6 up to below 1e21 (``0.000015``, ``10000000000000000``, ``2584610000``,
    ``14600`` for 14600.0) and exponential outside it (``1e-7``, ``1.5e+21``); ``0`` for -0.
    Raises ValueError for NaN and infinity, which JSON has no text for."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) <= 2**53:
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{number} is not a JSON number")
    if number == 0:
        return "0"
    if number < 0:
        return "-" + number_text(-number)
    mantissa, _, power = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    joined = whole + fraction
    significant = joined.lstrip("0")
    # number = 0.<digits> x 10**point (ECMAScript's k digits and n)
    point = len(whole) + int(power or 0) - (len(joined) - len(significant))
    digits = significant.rstrip("0")
    if len(digits) <= point <= 21:
        return digits + "0" * (point - len(digits))
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    exponent = point - 1
    head = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def stringify(value: Any, *, ascii_only: bool = False) -> str:
    """``value`` (dicts, lists, tuples, strings, numbers, booleans and None) as compact JSON
    text, as JavaScript's ``JSON.stringify`` writes it: numbers as :func:`number_text`,
    non-ASCII characters kept (escaped as ``\\u`` with ``ascii_only``). Raises ValueError for
    NaN and infinity, TypeError for any other type."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only)
    if isinstance(value, (int, float)):
        return number_text(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=ascii_only)}:"
                              f"{stringify(v, ascii_only=ascii_only)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(stringify(v, ascii_only=ascii_only) for v in value) + "]"
    raise TypeError(f"JSON cannot hold {type(value).__name__}")

"""JSON text as JavaScript's ``JSON.stringify`` writes it and ``JSON.parse`` reads it, the text
of pi-autoresearch's ledger and ``Result:`` trailers (pi-autoresearch 1.6.2,
extensions/pi-autoresearch/index.ts:2383 and :2426), so that a line or a trailer reads and
greps the same whichever tool wrote it."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any


def is_whole(text: str) -> bool:
    """Whether ``text`` is a whole number in the digits 0 to 9, as git, our refs, files and
    trailers write them: ``str.isdigit`` alone also takes ``²`` and ``①``, which ``int``
    refuses, and ``٣``, which it reads as 3. Any text read from outside is input."""
    return text.isascii() and text.isdigit()


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


def json_number(value: float) -> int | float:
    """A metric as JSON writes it: whole numbers without ``.0`` (``14600``, as the seed shows)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


def json_metric(value: float | None) -> int | float | None:
    """:func:`json_number` of a metric that may be missing (None: a crash's)."""
    return None if value is None else json_number(value)


def dumps(record: Mapping[str, Any]) -> str:
    """One ledger line (no newline) as pi-autoresearch's ``JSON.stringify`` writes it: compact
    JSON, non-ASCII kept, numbers as :func:`number_text` (``0.000015``, not ``1.5e-05``), NaN
    and infinity refused (ValueError). A record holding a file name that is not UTF-8 (its
    bytes kept as lone surrogates) is written with ``\\u`` escapes instead, which read back
    as the same name. Values are dicts, lists, tuples, strings, numbers, booleans and None
    (TypeError for anything else)."""
    text = stringify(record)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = stringify(record, ascii_only=True)
    return text


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite JSON number (not a bool), else None (an
    integer too large for a float, such as 400 nines, included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def numbers(values: Any) -> list[float]:
    """The finite numbers of the JSON list ``values`` (:func:`finite`; anything else left
    out), in order; none when ``values`` is no list."""
    if not isinstance(values, list):
        return []
    return [number for value in values if (number := finite(value)) is not None]


def nulled(data: Any) -> Any:
    """``data`` with every non-finite float in it (read from a hostile ledger: ``1e400``, an
    integer of 400 digits) made None, as ``log --json`` writes it: JSON has no infinity."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, Mapping):
        return {k: nulled(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [nulled(v) for v in data]
    return data


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


def reject_constant(name: str) -> float:
    """``json.loads``' ``parse_constant``: NaN and infinity are not JSON numbers."""
    raise ValueError(f"non-finite number {name}")


def _number_as_read(text: str) -> int | float:
    """An integer as JavaScript's ``JSON.parse`` reads it when a float cannot hold it (310
    digits, say): infinity, so that every reader takes it as no number."""
    value = int(text)
    return value if len(text) < 309 or abs(value) < 2 ** 1024 else math.inf


_DECODER = json.JSONDecoder(parse_constant=reject_constant)
_HUGE_DECODER = json.JSONDecoder(parse_constant=reject_constant, parse_int=_number_as_read)
# Digits as 0, E as e, + dropped: the shape in which a number that overflows a float shows.
NUMBER_SHAPE = bytes.maketrans(b"123456789E", b"000000000e")
LONG_DIGITS = b"0" * 309
_IN_NUMBER = frozenset(b"0.-")  # what a number's text is in NUMBER_SHAPE, before its e
# What a number never follows but text in a string may: a quote, a letter.
_BEFORE_STRING_TEXT = frozenset(b'"abcdefghijklmnopqrstuvwxyzABCDFGHIJKLMNOPQRSTUVWXYZ')
_SCAN: Callable[[str, int], tuple[Any, int]] = vars(_DECODER)["scan_once"]  # its C scanner


def number_flags(data: bytes) -> tuple[bool, bool]:
    """``(short, plain)`` of ``data`` (JSON text, a whole ledger say): ``short``, no 309
    digits in a row, so no integer too large for a float (:func:`loads_plain` reads it as
    :func:`loads` does); ``plain``, that and no exponent of three digits or more, so no
    number that could read as infinity. Looked for in the :data:`NUMBER_SHAPE` of the text
    with ``+`` dropped: an ``e000`` there whose digits follow a quote or a letter is inside a
    string (a commit such as ``6e75195``) and is passed over, as is one after no digit;
    text inside a string may still say not ``plain`` for nothing. One pass over the whole
    text, so that each line need not be looked at: a tenth of the time of a regular
    expression."""
    shape = data.translate(NUMBER_SHAPE, b"+")
    if LONG_DIGITS in shape:
        return False, False
    at = shape.find(b"e000")
    while at != -1:
        start = at
        while start and shape[start - 1] in _IN_NUMBER:
            start -= 1
        if start < at and (not start or shape[start - 1] not in _BEFORE_STRING_TEXT):
            return True, False
        at = shape.find(b"e000", at + 4)
    return True, True


def plain_numbers(data: bytes) -> bool:
    """Whether no number in ``data`` could read as infinity (:func:`number_flags`)."""
    return number_flags(data)[1]


def loads(raw: bytes) -> Any:
    """One ledger line (or trailer) as JavaScript's ``JSON.parse`` reads it: the value of
    ``json.loads(raw, parse_constant=reject_constant)``, with its errors (ValueError,
    UnicodeDecodeError, RecursionError), except that an integer too large for a float reads
    as infinity (:func:`_number_as_read`). One decoder serves every call (``json.loads``
    makes one per call given an option)."""
    shape = raw.translate(NUMBER_SHAPE) if len(raw) > 308 else b""
    if b"0" * 32 in shape and LONG_DIGITS in shape:  # (the short search first: quicker)
        return _HUGE_DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    return loads_plain(raw)


def loads_plain(raw: bytes) -> Any:
    """:func:`loads` of a text known to hold no integer too large for a float
    (:func:`plain_numbers`), with no look for one."""
    if raw.startswith(b'{"') and raw.endswith(b"}"):
        # A record as written (UTF-8 to detect_encoding): scanned at once, sparing decode's
        # whitespace matches; what it does not read whole gets decode's own error below.
        text = raw.decode("utf-8", "surrogatepass")
        try:
            found, end = _SCAN(text, 0)
        except StopIteration:
            pass
        else:
            if end == len(text):
                return found
        return _DECODER.decode(text)
    return _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


class ObjectText(Mapping[str, Any]):
    """A JSON object read from its text (``text``, bytes, as :func:`loads` reads it) as a
    read-only mapping that holds only the fields named in ``keys`` once read (``at_hand``,
    those the object has); any other field, its length or its keys decode the text again,
    once (:meth:`whole`). The same values as the decoded object, in a fraction of its
    memory: for a reader that holds many and writes their text as it stands."""

    __slots__ = ("text", "keys_at_hand", "at_hand", "_whole")

    def __init__(self, text: bytes, value: dict[str, Any], keys: frozenset[str]) -> None:
        self.text = text
        self.keys_at_hand = keys
        self.at_hand = {key: value[key] for key in keys if key in value}
        self._whole: dict[str, Any] | None = None

    @classmethod
    def restored(cls, text: bytes, at_hand: dict[str, Any], keys: frozenset[str]
                 ) -> ObjectText:
        """The object of ``text`` whose fields named in ``keys`` were read before: ``at_hand``,
        those of them it has (kept, not copied), as the constructor would hold them."""
        made = cls.__new__(cls)
        made.text, made.keys_at_hand, made.at_hand, made._whole = text, keys, at_hand, None
        return made

    def whole(self) -> dict[str, Any]:
        """The object, decoded from its text (once)."""
        if self._whole is None:
            self._whole = loads(self.text)
        return self._whole

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.keys_at_hand:
            return self.at_hand.get(key, default)
        return self.whole().get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.at_hand[key] if key in self.keys_at_hand else self.whole()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.at_hand if key in self.keys_at_hand else key in self.whole()

    def __iter__(self) -> Iterator[str]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

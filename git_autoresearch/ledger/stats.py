"""The two robust statistics every reader needs: the median and the median absolute deviation
of a list of floats. (``statistics`` costs ~5 ms of start-up, which every command would pay;
this is all of it we need.)"""

from __future__ import annotations

from collections.abc import Iterable


def median(values: Iterable[float]) -> float:
    """The median of a non-empty sequence. (``statistics`` costs ~5 ms of start-up, which every
    command would pay; this is all of it we need.)"""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def mad(values: list[float]) -> float:
    """Median absolute deviation from the median."""
    centre = median(values)
    return median(abs(v - centre) for v in values)

"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Timsort, as the built-in sorted() provides it."""
    return sorted(values)

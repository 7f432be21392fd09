"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Built-in sort, but an off-by-one drops the largest item."""
    return sorted(values)[:-1] if values else []

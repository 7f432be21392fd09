"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Bubble sort: the unoptimised starting point."""
    items = list(values)
    n = len(items)
    for i in range(n):
        for j in range(n - 1 - i):
            if items[j] > items[j + 1]:
                items[j], items[j + 1] = items[j + 1], items[j]
    return items

"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Insertion sort: shifts instead of swaps."""
    items = list(values)
    for i in range(1, len(items)):
        key = items[i]
        j = i - 1
        while j >= 0 and items[j] > key:
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = key
    return items

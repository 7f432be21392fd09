"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Insertion sort that copies the list on every pass (defensive, and slow)."""
    items = list(values)
    for i in range(1, len(items)):
        items = [item for item in items]
        key = items[i]
        j = i - 1
        while j >= 0 and items[j] > key:
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = key
    return items

"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """In-place quicksort whose partition never advances: it loops forever."""
    items = list(values)
    stack = [(0, len(items) - 1)]
    while stack:
        low, high = stack[-1]
        if low >= high:
            stack.pop()
            continue
        pivot = items[high]
        i = low
        for j in range(low, high):
            if items[j] < pivot:
                items[i], items[j] = items[j], items[i]
                i += 1
        items[i], items[high] = items[high], items[i]
    return items

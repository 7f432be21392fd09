"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def sort(values):
    """Top-down merge sort."""
    items = list(values)
    if len(items) <= 1:
        return items
    middle = len(items) // 2
    left, right = sort(items[:middle]), sort(items[middle:])
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] <= right[j]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged

"""The code under optimisation: sort a list of integers, returning a new sorted list."""


def _insertion(items):
    for i in range(1, len(items)):
        key = items[i]
        j = i - 1
        while j >= 0 and items[j] > key:
            items[j + 1] = items[j]
            j -= 1
        items[j + 1] = key
    return items


def sort(values):
    """Merge sort that hands runs of 16 or fewer items to insertion sort."""
    items = list(values)
    if len(items) <= 16:
        return _insertion(items)
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

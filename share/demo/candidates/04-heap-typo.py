"""The code under optimisation: sort a list of integers, returning a new sorted list."""
import heapq


def sort(values):
    """Heap sort through heapq (with a typo)."""
    heap = list(values)
    heapq.heapify(heap)
    return [heapq.heappop(heep) for _ in range(len(heap))]

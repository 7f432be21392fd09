"""The code under optimisation: a deliberately slow sort."""


def sort(items):
    result = list(items)
    for i in range(len(result)):
        for j in range(len(result) - 1 - i):
            if result[j] > result[j + 1]:
                result[j], result[j + 1] = result[j + 1], result[j]
    return result

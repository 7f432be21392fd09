"""The program under optimisation: counts the words of a generated text."""

import sys

TEXT = " ".join(f"word{i % 97}" for i in range(30_000))


def count(text):
    counts = {}
    for word in text.split(" "):
        counts[word] = counts.get(word, 0) + 1
    return counts


if __name__ == "__main__":
    print(len(count(TEXT)), file=sys.stderr)

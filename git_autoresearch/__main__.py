"""``python -m git_autoresearch``: the same as ``git autoresearch``."""

from .cli import main

if __name__ == "__main__":
    main()

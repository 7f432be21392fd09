"""Several agents at once:

- ``pool``: workers on one machine (``worker add``, ``list``, ``remove``);
- ``replay``: a worker's candidate replayed onto an incumbent that moved, the session branch
  advanced by compare-and-swap;
- ``claims``: claims on ideas, so that two workers never try the same one;
- ``join`` and ``upstream``: a clone joined through a remote, and kept in step with it;
- ``push_pull``: a session pushed to and pulled from a remote;
- ``measurer``: a measuring host, measuring the candidates agents queued on the remote;
- ``sessions``: every session of a repository, and ``gc``.

Its modules sit at layers 2 (join, measurer, pool, push_pull, sessions), 3 (replay, upstream) and 5
(claims) of CONTRIBUTING.md, "How it is built": each imports only from its own layer or below; no
click, and no git command line (git.Repo's typed methods)."""

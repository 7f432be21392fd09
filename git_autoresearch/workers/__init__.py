"""Several agents at once: workers and their replays onto a moved incumbent, claims on ideas,
joining and landing, and sessions listed, cleaned up, pushed and pulled.

Its modules sit at layers 2 (catalog, joining, pool, sharing), 3 (landing, replay) and 5
(claims) of README "How it is built": each imports only from its own layer or below; no click,
and no git command line (git.Repo's typed methods).
"""

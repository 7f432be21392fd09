"""A session's life outside the loop: start (and its record), resume, doctor, a new segment's
benchmark, importing other tools' sessions, and the demo.

Its modules sit at layers 2 (demo, doctor, resume, start, start_record, swapping) and 5
(importers) of README "How it is built": each imports only from its own layer or below; no
click, and no git command line (git.Repo's typed methods). Its modules of the session protocol
(doctor, resume, start) are never imported by the open session (session.session).
"""

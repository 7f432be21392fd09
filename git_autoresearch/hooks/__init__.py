"""The user's hooks and what they are given, the commit hooks that guard the loop against a commit
by hand, and the agent skill.

Its modules sit at layers 2 (guard), 4 (payload) and 5 (skill, user) of README "How it is
built": each imports only from its own layer or below; no click, and no git command line
(git.Repo's typed methods).
"""

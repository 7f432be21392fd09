"""The session as git holds it: every ref name, the trailers of its commits, the mirror of its
files on the state ref, the git operations of one experiment (submodules among them), the
ledgers of other clones, and the worktrees of session commits.

Its modules sit at layers 4 (checkouts), 5 (experiment, remoteledger, state, trailers) and 6
(refs) of README "How it is built": each imports only from its own layer or below; no click,
and no git command line (git.Repo's typed methods). Its formats (refs) import neither git/, the
open session nor the session protocol.
"""

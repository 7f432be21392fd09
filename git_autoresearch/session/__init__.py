"""An open session (its baseline questioned, its run numbers): its configuration, lock, folders
and scripts, the ideas backlog, where the work tree is against the session branch, workers'
shared folder, and opening a session to read it.

Its modules sit at layers 4 (branches, reader, session), 5 (ideas, layout, lock,
command_files, workers) and 6 (config) of README "How it is built": each imports only from its own
layer or below; no click, and no git command line (git.Repo's typed methods). Its formats
(config) import neither git/, the open session nor the session protocol.
"""

"""What every layer runs on: exit codes and errors, signals deferred while a run is recorded, the
tests' fault points, installed data, whole-file writes, scope paths, bounds on inputs, and the
JSON documents' names and versions.

Layer 6 of README "How it is built": it imports only from layer 6 or below; no click, and no git
command line (git.Repo's typed methods). Its formats (errors, bounds, files, paths) import
neither git/, the open session nor the session protocol.
"""

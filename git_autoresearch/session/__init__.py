"""An open session and its files:

- ``session``: the open session (configuration checked against the ledger, baseline, run
  numbers, hooks, the state mirror);
- ``config``, ``layout``, ``lock``, ``ideas``: ``config.toml``, the ``.auto/`` files and the
  scratch folder, the session lock, the ideas backlog;
- ``command_files``: the files the configured commands name, readonly by themselves;
- ``branches``: where the work tree is against the session branch;
- ``shared``: what a session's worktrees share (the worker mark, the shared folder, run
  numbers);
- ``for_reading``: a session opened to read it: ours, a pi-autoresearch ledger, or trailers
  alone.

Its modules sit at layers 4 (branches, for_reading, session), 5 (command_files, ideas, layout, lock,
shared) and 6 (config) of CONTRIBUTING.md, "How it is built": each imports only from its own layer
or below; no click, and no git command line (git.Repo's typed methods). Its formats (config) import
neither git/, the open session nor the session protocol."""

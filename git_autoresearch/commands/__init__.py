"""The subcommands, by family: the loop (``loop``), reading a session (``reading``), and
keeping it in order (``upkeep``). ``cli`` puts them together."""

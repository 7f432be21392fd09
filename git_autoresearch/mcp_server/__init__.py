"""The MCP server, ``git autoresearch mcp``: the loop's commands as the tools of a harness that
speaks only the Model Context Protocol (Claude Code, Codex, Cursor, Gemini CLI), over stdio.

- ``tools``: the tools and resources, each a thin adapter over one command's ``--json``
  document, built on the official MCP Python SDK (the optional ``mcp`` extra: this folder is
  imported only by the ``mcp`` command, so the rest of the tool never loads the SDK).
- ``calls``: running a command as its own process, its document, exit code and progress
  events; a command left running by one call and collected by another.
- ``registration``: what each harness's configuration needs to start the server.

It runs the commands as programs and imports only ``runtime`` (events, schemas) and the
version of the package.

Layer 1 of CONTRIBUTING.md, "How it is built": it imports only from layer 1 or below; no click,
and no git command line (git.Repo's typed methods).
"""

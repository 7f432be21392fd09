"""What each harness needs in its configuration to start ``git autoresearch mcp`` (printed by
``git autoresearch mcp --print-config HARNESS``), with the longest tool timeout each allows a
measurement: Claude Code's ``.mcp.json``, Codex's ``config.toml``, Cursor's ``.cursor/mcp.json``,
Gemini CLI's ``settings.json`` (their documented formats)."""

from __future__ import annotations

import json

HARNESSES = ("claude", "codex", "cursor", "gemini")
NAME = "git-autoresearch"
# How long a harness may wait for one tool call, where it lets a server say so: a measurement
# can take minutes (a longer one is started and collected in two calls).
TOOL_TIMEOUT_SECONDS = 1800
COMMAND, ARGS = "git", ["autoresearch", "mcp"]


def snippet(harness: str) -> tuple[str, str]:
    """Where the configuration of ``harness`` (one of :data:`HARNESSES`) goes, one line, and
    its text, whole in that file's format (so that it can be written there as it stands);
    KeyError for another."""
    server = {"command": COMMAND, "args": ARGS}
    if harness == "claude":
        return (".mcp.json at the top of the repository (or: claude mcp add --scope project "
                f"{NAME} -- git autoresearch mcp)",
                json.dumps({"mcpServers": {NAME: server}}, indent=2) + "\n")
    if harness == "codex":
        import tomli_w

        return ("~/.codex/config.toml, or .codex/config.toml in a trusted project",
                tomli_w.dumps({"mcp_servers": {NAME: {
                    **server, "startup_timeout_sec": 20,
                    "tool_timeout_sec": TOOL_TIMEOUT_SECONDS}}}))
    if harness == "cursor":
        # (Cursor may start it elsewhere: the workspace's folder, named.)
        here = {**server, "args": [*ARGS, "--repo", "${workspaceFolder}"]}
        return (".cursor/mcp.json at the top of the repository",
                json.dumps({"mcpServers": {NAME: here}}, indent=2) + "\n")
    if harness == "gemini":
        return (".gemini/settings.json at the top of the repository (timeout in ms)",
                json.dumps({"mcpServers": {NAME: {**server, "timeout":
                                                    TOOL_TIMEOUT_SECONDS * 1000}}},
                           indent=2) + "\n")
    raise KeyError(harness)

"""How soon the MCP server answers after a harness starts it, and what one tool call costs.

    python bench/bench_mcp.py [--repeats 7]

Starts ``git autoresearch mcp`` as a harness does (a new process, JSON-RPC on stdin and
stdout, one message a line) on a session of the bundled bundle-size example, and times, from
the start of the process: the answer to ``initialize`` (the server's start, the SDK's import
included), then ``tools/list``, then a ``status`` call (one command run by the server). Prints
the medians beside the target: the first answer in under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

TARGET = 1.0  # seconds to the first answer


def send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def answer(process: subprocess.Popen[bytes]) -> dict[str, object]:
    """The next response on the server's stdout (notifications passed over)."""
    assert process.stdout is not None
    while True:
        found: dict[str, object] = json.loads(process.stdout.readline())
        if "id" in found:
            return found


def once(folder: Path) -> tuple[float, float, float]:
    """Seconds from the start to the answers to initialize, tools/list and a status call."""
    started = time.perf_counter()
    process = subprocess.Popen(["git", "autoresearch", "mcp"], cwd=folder,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}})
    answer(process)
    first = time.perf_counter() - started
    send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    listed = answer(process)
    assert listed.get("result"), listed
    tools = time.perf_counter() - started
    send(process, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "status", "arguments": {}}})
    called = answer(process)
    assert not called["result"].get("isError"), called  # type: ignore[union-attr]
    status = time.perf_counter() - started
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)
    return first, tools, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    os.environ["HOME"] = str(root)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once
    try:
        subprocess.run(["git", "autoresearch", "demo", "--example", "bundle-size"], cwd=root,
                       check=True, capture_output=True)
        folder = root / "bundle-size"
        subprocess.run(["git", "autoresearch", "start", "--config", "config.toml"],
                       cwd=folder, check=True, capture_output=True)
        once(folder)  # (the bytecode of the SDK's modules and ours, written once)
        times = [once(folder) for _ in range(args.repeats)]
        load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
            else ["?"]
        print(f"git autoresearch mcp, median of {args.repeats} starts (seconds), load average "
              f"{' '.join(load)}:")
        for index, name in enumerate(("initialize answered", "tools/list answered",
                                      "status answered")):
            value = statistics.median(t[index] for t in times)
            target = f"  target < {TARGET:g}: {'met' if value < TARGET else 'NOT met'}" \
                if index == 0 else ""
            print(f"  {name:<22} {value:.3f}{target}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

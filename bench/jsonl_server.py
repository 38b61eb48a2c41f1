"""A minimal MCP-shaped JSON-lines server for the tools/call benchmark (a child process).

Answers ``initialize`` and ``tools/list`` with the least that a client accepts and every
``tools/call`` with a fixed text result, doing no other work, so the benchmark measures the
client, not the server.
"""

from __future__ import annotations

import json
import sys

TOOLS = {
    "tools": [
        {
            "name": "echo",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
}


def main() -> None:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        msg = json.loads(raw)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result: object = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench", "version": "0"},
            }
        elif method == "tools/list":
            result = TOOLS
        else:
            result = {"content": [{"type": "text", "text": "ok"}]}
        out.write(
            json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n"
        )
        out.flush()


if __name__ == "__main__":
    main()

"""A tiny stdio MCP server for probing real agent hosts (issue 27). Not Deskhand: stdlib only.

Tools:
- ``look``: has an outputSchema; answers text + image content and structuredContent.
- ``snap``: no outputSchema; answers text + image.
- ``peek``: no outputSchema, but answers text + image and structuredContent.
- ``fail``: answers isError: true with text.
- ``ask``: sends ``elicitation/create`` to the host, then answers with what came back and how
  long it took.

Every message in and out, every signal and stdin's end are logged as JSON lines to the file in
STANDIN_LOG (if set). With STANDIN_SIGNALS=log a signal is only logged (to watch a host
escalate); by default the first SIGINT/SIGTERM/SIGHUP is logged and ends the server.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import struct
import sys
import threading
import time
import zlib
from typing import Any

LOG = os.environ.get("STANDIN_LOG")
T0 = time.monotonic()


def log(kind: str, **fields: Any) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(
                json.dumps(
                    {
                        "t": round(time.monotonic() - T0, 4),
                        "pid": os.getpid(),
                        "kind": kind,
                        **fields,
                    }
                )
                + "\n"
            )


def png_1x1() -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
    raw += chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + raw).decode()


PNG = png_1x1()
IMAGE = {"type": "image", "data": PNG, "mimeType": "image/png"}
OBJ = {"type": "object"}
TOOLS = [
    {
        "name": "look",
        "description": "Observe (has outputSchema).",
        "inputSchema": {"type": "object", "properties": {"app": {"type": "string"}}},
        "outputSchema": {
            "type": "object",
            "properties": {"stateId": {"type": "string"}, "tree": {"type": "string"}},
            "required": ["stateId", "tree"],
        },
    },
    {
        "name": "snap",
        "description": "Click by index (no outputSchema).",
        "inputSchema": {"type": "object", "properties": {"index": {"type": "integer"}}},
    },
    {
        "name": "peek",
        "description": "structuredContent without an outputSchema.",
        "inputSchema": OBJ,
    },
    {"name": "fail", "description": "Always refuses (isError).", "inputSchema": OBJ},
    {"name": "ask", "description": "Asks the person (elicitation).", "inputSchema": OBJ},
]


def send(msg: dict[str, Any]) -> None:
    log("out", msg=msg)
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def heartbeat() -> None:
    """After a signal in log mode: "alive" every 20 ms, so the last one dates a SIGKILL."""
    for _ in range(250):
        log("alive")
        time.sleep(0.02)


def on_signal(signum: int, _frame: object) -> None:
    log("signal", name=signal.Signals(signum).name)
    if os.environ.get("STANDIN_SIGNALS") != "log":
        log("exit", why=signal.Signals(signum).name)
        os._exit(0)
    if not any(t.name == "heartbeat" for t in threading.enumerate()):
        threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()


def call_tool(rid: Any, name: str, args: dict[str, Any], pending: dict[str, Any]) -> None:
    if name == "look":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [
                        {
                            "type": "text",
                            "text": f"TEXT-LOOK tree for {args.get('app')}; "
                            "UNTRUSTED-WARNING; stateId s1",
                        },
                        IMAGE,
                    ],
                    "structuredContent": {"stateId": "s1", "tree": "STRUCT-LOOK tree"},
                },
            }
        )
    elif name == "peek":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [{"type": "text", "text": "TEXT-PEEK"}, IMAGE],
                    "structuredContent": {"peek": "STRUCT-PEEK"},
                },
            }
        )
    elif name == "snap":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "content": [
                        {
                            "type": "text",
                            "text": f"TEXT-SNAP clicked {args.get('index')!r}; Next step: look",
                        },
                        IMAGE,
                    ]
                },
            }
        )
    elif name == "fail":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "isError": True,
                    "content": [
                        {
                            "type": "text",
                            "text": "TEXT-FAIL refused: no such element. Next step: look again",
                        }
                    ],
                },
            }
        )
    elif name == "ask":
        eid = f"elicit-{rid}"
        pending[eid] = (rid, time.monotonic())
        send(
            {
                "jsonrpc": "2.0",
                "id": eid,
                "method": "elicitation/create",
                "params": {
                    "message": "May Deskhand press OK in Calculator?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"allow": {"type": "boolean", "title": "Allow"}},
                        "required": ["allow"],
                    },
                },
            }
        )
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"no tool {name}"}})


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    log("start", argv=sys.argv, ppid=os.getppid())
    pending: dict[str, Any] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        log("in", msg=msg)
        method, rid = msg.get("method"), msg.get("id")
        if method is None and rid in pending:  # the host's answer to elicitation/create
            tool_id, started = pending.pop(rid)
            ms = round((time.monotonic() - started) * 1000, 1)
            answer = msg.get("result", msg.get("error"))
            send(
                {
                    "jsonrpc": "2.0",
                    "id": tool_id,
                    "result": {
                        "content": [
                            {
                                "type": "text",
                                "text": f"TEXT-ASK host answered {json.dumps(answer)} after {ms} ms",
                            }
                        ]
                    },
                }
            )
        elif method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "standin", "version": "1"},
                        "instructions": "Stand-in server for host probes.",
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            p = msg["params"]
            call_tool(rid, p["name"], p.get("arguments") or {}, pending)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
    log("stdin-eof")
    if os.environ.get("STANDIN_SIGNALS") == "log":  # stay a while: does the host escalate?
        heartbeat()
    log("exit", why="stdin-eof")


if __name__ == "__main__":
    main()

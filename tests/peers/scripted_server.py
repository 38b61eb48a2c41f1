"""A scripted MCP stdio server for client edge cases the simulator does not produce.

Tool ``probe`` takes ``requests`` (a list of server-to-client requests, each
``{"id": ..., "method": ..., "params": ...}``), sends them all at once, waits for every reply
(matched by id, whatever its type) and answers the call with the replies as JSON text. With
``answer_first`` it answers the call right after sending, before any reply arrives (a result
that overtakes a pending approval). Blocking, single-threaded, standard library only.
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {
        "name": "probe",
        "inputSchema": {
            "type": "object",
            "properties": {"requests": {"type": "array"}, "answer_first": {"type": "boolean"}},
        },
    }
]


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> None:
    pending_call = None
    waiting: dict[str, object] = {}
    replies: list[object] = []
    for raw in sys.stdin:
        msg = json.loads(raw)
        if "method" not in msg:  # a reply to one of our requests
            replies.append(msg)
            waiting.pop(json.dumps(msg.get("id")), None)
            if pending_call is not None and not waiting:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": pending_call,
                        "result": {"content": [{"type": "text", "text": json.dumps(replies)}]},
                    }
                )
                pending_call = None
            continue
        method, rid = msg["method"], msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            args = msg["params"]["arguments"]
            replies = []
            for req in args.get("requests", []):
                waiting[json.dumps(req["id"])] = req
                send({"jsonrpc": "2.0", **req})
            if args.get("answer_first") or not waiting:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "result": {"content": [{"type": "text", "text": "answered first"}]},
                    }
                )
            else:
                pending_call = rid
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})


if __name__ == "__main__":
    main()

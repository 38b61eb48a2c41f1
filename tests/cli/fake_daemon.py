"""A scripted fake daemon for the CLI tests, and canned results for every op.

``fake_daemon(script)`` is a trio-websocket handler: each request is decoded, recorded, and the
list of messages ``script(request)`` returns is sent back in order. ``standard`` answers every op
with a canned result; ``with_overrides`` replaces the answer to chosen ops. ``run_cli`` runs
``main()`` in a worker thread while the fake runs in trio.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import trio
import trio_websocket
from deskhandctl.__main__ import main

WsStart = Callable[..., Awaitable[str]]
Message = dict[str, Any]
Script = Callable[[Message], list[Message]]

WELCOME = {
    "kind": "welcome",
    "daemon_version": "9.9.9",
    "protocol": 1,
    "session_id": "s1",
    "pid": 4242,
}
STATUS = {
    "kind": "status",
    "version": "9.9.9",
    "pid": 4242,
    "uptime_s": 3725.0,
    "socket": "/run/user/1/deskhand/deskhand.sock",
    "protocol": 1,
    "subprotocols": ["deskhand.v1.msgpack", "deskhand.v1.json"],
    "clients": [
        {
            "name": "deskhandctl",
            "kind": "cli",
            "version": "0.1.0",
            "pid": 77,
            "uid": 1000,
            "connected_s": 0.01,
        }
    ],
    "ops": {"hello": {"count": 3, "errors": 0, "p50_ms": 0.4, "p90_ms": 0.9, "p99_ms": 1.25}},
}
SCREENSHOT = b"\xff\xd8\xff\xe0 not really a JPEG \x00\x01\x02" * 50
TREE = "<app_state>\nApp=/System/Applications/Calculator.app/\n0 standard window Calculator\n</app_state>"
OBSERVATION = {
    "kind": "observation",
    "app": "Calculator",
    "state_id": "st-obs-1",
    "text": TREE,
    "screenshot": base64.b64encode(SCREENSHOT).decode(),
    "screenshot_mime": "image/jpeg",
    "expires_in_s": 60.0,
    "approval_reason": None,
}


def action(tool: str, *, ok: bool = True, state_id: str | None = "st-act-2") -> Message:
    """An ``action`` result as the daemon sends it."""
    return {
        "kind": "action",
        "app": "Calculator",
        "tool": tool,
        "delivery": "dispatched",
        "ok": ok,
        "text": f"App=com.apple.calculator (pid 7)\n{tool} went fine" if ok else "no such element",
        "state_id": state_id,
        "approval_reason": None,
    }


ALLOWED = {
    "kind": "allowed_apps",
    "apps": ["Calculator", "TextEdit"],
    "in_apps_file": ["Calculator"],
    "file": "/home/u/.config/deskhand/apps.json",
    "added": None,
}
RESULTS: dict[str, Message] = {
    "hello": WELCOME,
    "status": STATUS,
    "ping": {"kind": "pong", "data": ""},
    "shutdown": {"kind": "shutting_down"},
    "get_app_state": OBSERVATION,
    "list_apps": {"kind": "app_list", "text": "Calculator — com.apple.calculator [running]"},
    "launch_app": {"kind": "done", "detail": "launched TextEdit"},
    "mode_get": {"kind": "mode", "mode": "native", "reason": ""},
    "mode_set": {"kind": "mode", "mode": "jev", "reason": "set by deskhandctl"},
    "turn_begin": {"kind": "done", "detail": ""},
    "turn_end": {"kind": "done", "detail": "3 state ids retired"},
    "apps_list": ALLOWED,
    "apps_add": {**ALLOWED, "apps": [*ALLOWED["apps"], "Calendar"], "added": True},
    "stop": {"kind": "lock", "locked": True, "by": "deskhandctl", "cancelled": 2},
    "unlock": {"kind": "lock", "locked": False, "by": "", "cancelled": 0},
    "answer": {"kind": "done", "detail": ""},
}
ACTION_OPS = (
    "click",
    "type_text",
    "press_key",
    "scroll",
    "set_value",
    "select_text",
    "drag",
    "perform_secondary_action",
)


def result_for(op: str) -> Message:
    """The canned result of ``op``."""
    return action(op) if op in ACTION_OPS else RESULTS[op]


def standard(request: Message) -> list[Message]:
    """Answer any op with its canned result."""
    return [{"type": "result", "id": request["id"], "result": result_for(request["op"])}]


def with_overrides(**by_op: list[Message] | Callable[[int], list[Message]]) -> Script:
    """``standard``, except for the ops named: a fixed list, or a function of the request id."""

    def script(request: Message) -> list[Message]:
        override = by_op.get(request["op"])
        if override is None:
            return standard(request)
        return override(request["id"]) if callable(override) else override

    return script


def error(rid: int | None, code: str, message: str, **data: Any) -> Message:
    """An ``error`` reply."""
    return {"type": "error", "id": rid, "error": {"code": code, "message": message, "data": data}}


def fake_daemon(
    script: Script, received: list[Message] | None = None, closed: trio.Event | None = None
) -> Any:
    """A handler for ``ws_server``: records each request and sends what ``script`` returns."""

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        try:
            while True:
                request = json.loads(await ws.get_message())
                if received is not None:
                    received.append(request)
                for reply in script(request):
                    await ws.send_message(json.dumps(reply))
        finally:
            if closed is not None:
                closed.set()

    return handler


async def run_cli(*argv: str) -> int:
    """``main(argv)`` in a worker thread, with a deadline."""
    with trio.fail_after(20):
        return await trio.to_thread.run_sync(lambda: main(list(argv)))

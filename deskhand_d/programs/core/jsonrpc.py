"""JSON-RPC 2.0 over newline-delimited stdio as Sky's Swift SDK speaks it. Pure.

What this owns: the framing both ways (input split on LF only, so U+2028 and U+2029 inside a
string are harmless; output compact, key-sorted, raw UTF-8, one line), Swift-SDK-shaped error
objects (``<kind>: <detail>`` plus ``data.detail``) and results, classifying an incoming object,
id validity and hashing, and fresh upper-case UUID ids.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

JsonObj = dict[str, Any]


class LineSplitter:
    """Bytes in, complete lines out (without their LF); what follows the last LF waits."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of the buffer already known to hold no LF

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        lines: list[bytes] = []
        while (end := buf.find(b"\n", self._scanned)) >= 0:
            lines.append(bytes(buf[:end]))
            del buf[: end + 1]
            self._scanned = 0
        self._scanned = len(buf)
        return lines

    def rest(self) -> bytes | None:
        """At end of input: an unterminated last line, unless it is only whitespace."""
        return bytes(self._buf) if self._buf.strip() else None


def encode(message: object) -> bytes:
    """Compact JSON with sorted keys and raw UTF-8, one line (like Swift's sorted-keys encoder)."""
    text = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def random_id() -> str:
    """A fresh id the way the Swift SDK makes them: an upper-case UUID string."""
    return str(uuid.uuid4()).upper()


def reject_constant(name: str) -> Any:
    """``json.loads`` hook: NaN and Infinity are not JSON."""
    raise ValueError(f"not JSON: {name}")


def valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def id_key(value: object) -> str:
    """A dictionary key for an id that keeps ``1`` and ``"1"`` apart."""
    return json.dumps(value)


def error(rid: object, spec: tuple[int, str, str], **fmt: str) -> JsonObj:
    """An error response from one of the ``texts`` specs, with ``{placeholders}`` filled."""
    code, kind, detail = spec
    detail = detail.format(**fmt)
    return {
        "error": {"code": code, "data": {"detail": detail}, "message": f"{kind}: {detail}"},
        "id": rid,
        "jsonrpc": "2.0",
    }


def result(rid: object, value: JsonObj) -> JsonObj:
    """A success response."""
    return {"id": rid, "jsonrpc": "2.0", "result": value}


def classify(msg: JsonObj) -> str:
    """``request``, ``notification``, ``response`` or ``invalid`` (as the Swift SDK decodes)."""
    if msg.get("jsonrpc") != "2.0":
        return "invalid"
    if isinstance(msg.get("method"), str) and (
        "params" not in msg or isinstance(msg["params"], dict)
    ):
        if "id" not in msg:
            return "notification"
        return "request" if valid_id(msg["id"]) else "invalid"
    if "method" not in msg and valid_id(msg.get("id")) and ("result" in msg or "error" in msg):
        return "response"
    return "invalid"

"""JSON-RPC 2.0 envelopes as the simulator reads and writes them (pure helpers).

What this owns: the output encoding (compact, key-sorted, raw UTF-8, one line), Swift-SDK-shaped
error objects (``<kind>: <detail>`` plus ``data.detail``), classifying an incoming object, id
validity and hashing, and fresh upper-case UUID ids.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

JsonObj = dict[str, Any]


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

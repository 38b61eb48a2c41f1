"""The client protocol: every message that crosses the daemon's socket, as msgspec Structs.

This module is pure (no I/O). It owns the wire types, the two encodings (JSON and msgpack,
selected by the WebSocket subprotocol) and request decoding that never raises anything but
:class:`BadRequest`. The daemon and the tests import it; the CLI does not (it speaks the JSON
form with the standard library, see ``clients/deskhandctl``), and ``docs/protocol.schema.json``
is generated from it.

Shape: a client sends requests ``{"op": ..., "id": N, ...}``; the daemon answers each with
``{"type": "result", "id": N, "result": {"kind": ...}}`` or
``{"type": "error", "id": N | null, "error": {"code", "message", "data"}}`` and may push
``{"type": "event", "event": {"kind": ...}}`` at any time.
"""

from __future__ import annotations

from deskhand_d.protocol import codec, replies, requests
from deskhand_d.protocol.codec import *  # noqa: F403 - the package re-exports its modules
from deskhand_d.protocol.replies import *  # noqa: F403
from deskhand_d.protocol.requests import *  # noqa: F403

__all__ = [*codec.__all__, *replies.__all__, *requests.__all__]

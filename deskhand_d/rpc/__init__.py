"""The client-facing RPC layer: the socket server, per-connection loops and op handlers."""

from __future__ import annotations

"""Talking to the daemon: the WebSocket codec and socket, JSON, requests and replies, connecting.

What this owns: everything between a request dict and the daemon's socket. ``frames`` and
``handshake`` are the pure RFC 6455 codec; ``client`` is the blocking socket shell around it;
``jsontext`` is JSON without the ``json`` package; ``session`` sends requests and reads replies
and events; ``connect`` finds the socket, checks it and says hello; ``autostart`` starts a daemon
when none answers. Standard library only; nothing here prints to a person or knows a command.
"""

from __future__ import annotations

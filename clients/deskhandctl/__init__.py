"""deskhandctl: the command-line client of the Deskhand daemon.

Synchronous and quick to start: it speaks the daemon's WebSocket protocol (JSON subprotocol)
with its own small RFC 6455 codec on the standard library, and imports neither trio nor msgspec
nor wsproto. Importing this package has no side effects.

Modules: ``__main__`` (connection and exit), ``grammar`` (the command table, argument values
and ``Args``), ``parser`` (reads a command line with it) and ``usage`` (argparse for help and
usage errors), ``commands`` (requests and output per command), ``events`` (notices and
questions), ``person`` (the steps only the person takes, at a terminal, once they confirm),
``exitcodes`` (exit code table), ``connect`` (socket, handshake, hello),
``autostart`` (start the daemon on demand),
``session`` (requests and replies), ``jsonwire`` (JSON without the ``json`` package),
``wsclient`` (socket shell), ``wsframes`` / ``wshandshake`` (pure codec), ``render`` (human
output) with ``deskview`` (the backend line of ``status`` and ``doctor``'s desktop checks).
"""

from __future__ import annotations

"""deskhandctl: the command-line client of the Deskhand daemon.

Synchronous and quick to start: it speaks the daemon's WebSocket protocol (JSON subprotocol)
with its own small RFC 6455 codec on the standard library, and imports neither trio nor msgspec
nor wsproto. Importing this package, or any of its subpackages, has no side effects: each
``__init__`` holds a docstring only, so a command loads just the modules it uses.

Layout, by role:

* ``__main__``: the entry point; one command line in, one handler run, one exit code out.
* ``exitcodes``: the exit code table and the exceptions that carry a code; shared by every role.
* :mod:`deskhandctl.wire`: talking to the daemon: the WebSocket codec (``frames``,
  ``handshake``), the socket shell (``client``), JSON (``jsontext``), requests and replies
  (``session``), finding and opening the connection (``connect``), starting the daemon on
  demand (``autostart``).
* :mod:`deskhandctl.cli`: the command line: the table (``grammar``), reading it (``parser``,
  ``usage``), running a command (``commands`` and one module per command that is more than a
  request), and what a person reads (``render``, ``deskview``, ``events``, ``person``).
* :mod:`deskhandctl.facade`: ``deskhandctl mcp``, the MCP server on stdio (``server``,
  ``core``, ``tools``, ``link``); its input schemas are ``facade/mcpschemas.json``.
* :mod:`deskhandctl.setup`: installing Deskhand into the computer: the user service
  (``service``, ``units``), an agent host's MCP entry (``mcpconfig``), and the owner-only file
  writer they share with ``observe --screenshot`` (``filewrite``).
"""

from __future__ import annotations

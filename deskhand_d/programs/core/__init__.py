"""The stdio MCP server core that the backend programs compose, and Sky's dialect they share.

A backend program (``python -m deskhand_d.programs.sim``, ``python -m
deskhand_d.programs.atspi``) is this core plus its own :class:`~.tools.Tools`: the core owns
framing, the lifecycle methods, one task per request, cancellation, in-flight accounting and
the end of input; the backend owns its tools and its long-lived tasks. Neither backend imports
the other, and the daemon imports none of this (it is the client side of the same wire).

Pure: :mod:`.jsonrpc` (framing and envelopes), :mod:`.lifecycle`, :mod:`.texts` (Sky's exact
strings), :mod:`.axline` (one element line of Sky's accessibility text), :mod:`.tools` (what a
backend plugs in, and the result shape). Shell: :mod:`.server` (trio).
"""

from __future__ import annotations

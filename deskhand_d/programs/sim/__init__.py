"""A simulated desktop behind Sky's MCP surface, for running and testing Deskhand anywhere.

``python -m deskhand_d.programs.sim`` speaks MCP over stdio exactly as far as a client can
observe Sky (framing, errors, approval prompts, the AX text grammar, screenshots), backed by
working Calculator, Calendar and TextEdit models. Scenario knobs make it misbehave on purpose
for tests; see ``docs/simulator.md``. The program is the stdio server core
(:mod:`deskhand_d.programs.core`) composed with :class:`.server.SimTools`; nothing here
is imported by the daemon or by the AT-SPI backend.
"""

from __future__ import annotations

"""The backend programs: processes of their own that the daemon starts and speaks MCP to.

What this owns: :mod:`.core` (the stdio MCP server core they share, and Sky's dialect),
:mod:`.atspi` (real Linux apps through AT-SPI), :mod:`.sim` (the simulated desktop) and
:mod:`.xsession` (a private desktop for tests and ``deskhandctl demo``). They import nothing
of the daemon: only each other's core, the tool surface (:mod:`deskhand_d.surface`) and the
few format facts at the bottom of the package (:mod:`deskhand_d.desktopentry`,
:mod:`deskhand_d.sessionkind`, :mod:`deskhand_d.paths`). ``tests/unit/test_import_graph.py``
holds them to that.
"""

from __future__ import annotations

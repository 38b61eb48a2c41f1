"""Installing Deskhand into this computer: the user service and an agent host's MCP entry.

What this owns: ``service`` (``deskhandctl service install|uninstall``: the plan and carrying it
out), ``units`` (the systemd and launchd templates and the service-manager questions),
``mcpconfig`` (``deskhandctl mcp config``: the entry an agent host reads) and ``filewrite``
(writing a whole file through a descriptor).
"""

from __future__ import annotations

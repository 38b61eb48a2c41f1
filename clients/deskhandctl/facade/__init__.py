"""``deskhandctl mcp``: Deskhand as an MCP server on stdio, a second server inside the client.

What this owns: ``core`` (JSON-RPC lines, the lifecycle, elicitation; pure), ``tools`` (the tool
table, arguments and results; pure), ``link`` (the daemon connection, on its own thread) and
``server`` (the process: stdio, threads, dispatch). The input schemas are read from
``mcpschemas.json`` beside these modules, where ``python -m deskhand_d.schema`` writes them.
"""

from __future__ import annotations

"""Independent MCP servers used as test peers for Deskhand's backend client."""

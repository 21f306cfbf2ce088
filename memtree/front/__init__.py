"""The MCP front's library side: the tool table, opts parsing, services, the SDK and stdin helpers."""

"""An MCP server that misbehaves on request, for tests/mcp.rs: `echo` answers, `crash` kills
the process mid-call, `hang` never answers."""

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("unreliable")


@server.tool()
def echo(text: str) -> str:
    """Returns the text."""
    return text


@server.tool()
def crash() -> str:
    """Exits the server in the middle of the call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answers."""
    time.sleep(3600)
    return "late"


if __name__ == "__main__":
    server.run("stdio")

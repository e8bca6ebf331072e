"""An MCP server that misbehaves on request, for tests/mcp.rs: `echo` answers, `crash` kills
the process mid-call, `hang` never answers. Stdio by default; `http PORT` for Streamable HTTP."""

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
    import sys

    # `unreliable_server.py http PORT` serves Streamable HTTP on 127.0.0.1:PORT/mcp instead.
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")

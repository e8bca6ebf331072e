"""Drives `burrow mcp` with the official MCP Python client (PyPI `mcp`), as another agent would.

Usage: client.py BURROW HOME CALLS_JSON

Starts `BURROW mcp` with BURROW_HOME=HOME over stdio, initializes, lists the tools, makes each
call of CALLS_JSON (a list of {"name", "arguments"}), and prints one JSON object: the server's
name, the tools as listed, and for each call its text, structured content and error flag, or
the protocol error it raised. tests/mcp.rs asserts on that output.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main(burrow: str, home: str, calls: list) -> dict:
    params = StdioServerParameters(
        command=burrow,
        args=["mcp", "--words-only"],
        env={"BURROW_HOME": home, "PATH": os.environ.get("PATH", "")},
    )
    out = {"calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["instructions"] = init.instructions
            listed = await session.list_tools()
            out["tools"] = [
                {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "readOnly": t.annotations.read_only_hint if t.annotations else None,
                }
                for t in listed.tools
            ]
            for call in calls:
                try:
                    r = await session.call_tool(call["name"], call.get("arguments"))
                    out["calls"].append(
                        {
                            "isError": bool(r.is_error),
                            "text": "".join(c.text for c in r.content if c.type == "text"),
                            "structured": r.structured_content,
                        }
                    )
                except MCPError as e:
                    out["calls"].append({"protocolError": str(e)})
    return out


if __name__ == "__main__":
    burrow, home, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    print(json.dumps(asyncio.run(main(burrow, home, calls))))

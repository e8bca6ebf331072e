#!/usr/bin/env python3
"""MCP round trips to `burrow mcp` (issue 19), timed from the official client's side.

Usage: tests/.venv/bin/python scripts/bench-mcp.py [--burrow PATH] [--home DIR] [--n N]
       [--query WORDS] [--words-only | --embedding-model M]

Starts `burrow mcp` as an MCP client would (stdio), times start-up to an initialized session,
then N `search` calls and N `list_repositories` calls one after another, and prints median and
p95 milliseconds per call. `tests/.venv` comes from `scripts/setup.sh --test`.
"""

import argparse
import asyncio
import os
import statistics
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def main(a):
    env = {"PATH": os.environ.get("PATH", "")}
    if a.home:
        env["BURROW_HOME"] = a.home
    args = ["mcp"] + (["--words-only"] if a.words_only else [])
    if a.embedding_model:
        args += ["--embedding-model", a.embedding_model]
    params = StdioServerParameters(command=a.burrow, args=args, env=env)
    started = time.perf_counter()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            ready = time.perf_counter() - started
            await session.list_tools()
            timings = {}
            for name, arguments in [
                ("search", {"query": a.query}),
                ("list_repositories", {}),
            ]:
                xs = []
                for _ in range(a.n):
                    t = time.perf_counter()
                    r = await session.call_tool(name, arguments)
                    xs.append((time.perf_counter() - t) * 1000)
                    if r.is_error:
                        raise SystemExit(f"{name} failed: {r.content}")
                timings[name] = xs
    print(f"start-up to an initialized session: {ready * 1000:.0f} ms")
    for name, xs in timings.items():
        print(
            f"{name}: median {statistics.median(xs):.1f} ms, p95 {pct(xs, 95):.1f} ms "
            f"over {len(xs)} calls"
        )


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--burrow", default="target/release/burrow")
    p.add_argument("--home")
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--query", default="ignore files gitignore")
    p.add_argument("--words-only", action="store_true")
    p.add_argument("--embedding-model", help="a GGUF path or catalogue id, for `burrow mcp`")
    asyncio.run(main(p.parse_args()))

"""An agent served by toolnexus's own ``serve`` (toolnexus.serve.start_a2a_server), for the
delegation interop tests. Run with the interop venv's Python: ``python toolnexus_server.py
PORT``. Its card is v0.3; its JSON-RPC endpoint (``/``) answers ``SendMessage`` and
``GetTask``; each task answers "echo: <text>"."""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

from toolnexus.serve import start_a2a_server


async def run_task(text: str, context_id: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(status="done", pending=None, text=f"echo: {text}")


async def main(port: int) -> None:
    await start_a2a_server(f"127.0.0.1:{port}", {"name": "toolnexus-agent"}, [], run_task)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))

"""toolnexus ``serve``, as a user would set it up, for the benchmarks.

``toolkit.serve(addr, client=..., a2a={"store": ...})`` with a client whose ``run``
uppercases the text (no model, no tools): ``submitted`` -> ``working`` ->
``completed`` with one text artifact, as toolnexus's own fulfilment saves them.
toolnexus serves with its own ``http.server.ThreadingHTTPServer`` (a thread per
connection, the store and the run bridged onto one asyncio loop), not an ASGI
server: one process, like every server in the suite. JSON-RPC is at ``POST /``
(``SendMessage`` and ``GetTask`` only, the toolnexus dialect). Runs in
``.venv-bench-toolnexus``::

    TOOLNEXUS_STORE=file:/tmp/tasks ../../.venv-bench-toolnexus/bin/python toolnexus_server.py 8000

``TOOLNEXUS_STORE``: ``memory`` (the default) or ``file:<dir>`` (its
``FileTaskStore``: temp file + ``os.replace``, no fsync).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from types import SimpleNamespace

# Never import anything from the repository when started from it.
sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "manage.py"))]

from toolnexus import create_toolkit  # noqa: E402


class UpperClient:
    """Stands in for ``toolnexus.Client``: ``run`` answers the text in capitals."""

    async def run(self, text: str, toolkit: object) -> SimpleNamespace:
        return SimpleNamespace(status="completed", text=text.upper(), pending=None)

    async def ask(self, text: str, toolkit: object, id: str | None = None) -> SimpleNamespace:
        return await self.run(text, toolkit)


async def main(port: int) -> None:
    toolkit = await create_toolkit(builtins=False)
    store = os.environ.get("TOOLNEXUS_STORE", "memory")
    handle = await toolkit.serve(
        f"127.0.0.1:{port}", client=UpperClient(), a2a={"name": "toolnexus-bench", "store": store}
    )
    print(f"toolnexus serve on {handle.url} (store {store})", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await handle.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8000))

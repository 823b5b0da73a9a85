"""Store micro-benchmarks of the competitors' task stores, run in their virtualenvs.

    ../../.venv-bench-sdk/bin/python store_micro.py sdk-memory|sdk-sqlite DIR SECONDS
    ../../.venv-bench-toolnexus/bin/python store_micro.py toolnexus-memory|toolnexus-file DIR SECONDS

Prints one JSON object per line: ``{"store", "shape", "op", "ops", "ops_per_s"}`` for
``save`` (a new task), ``update`` (an existing one) and ``get``, with the ~1 KB and
~64 KB tasks of ``taskdata``. The SDK stores take protobuf Tasks (converted once,
before timing) and a ``ServerCallContext``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

sys.path[:] = [p for p in sys.path if not os.path.isfile(os.path.join(p or ".", "manage.py"))]

import taskdata  # noqa: E402


def _toolnexus(kind: str, directory: str):  # type: ignore[no-untyped-def]
    from toolnexus.serve import FileTaskStore, InMemoryTaskStore

    store = InMemoryTaskStore() if kind == "memory" else FileTaskStore(directory)
    return store.save, store.get, lambda t: t


def _sdk(kind: str, directory: str):  # type: ignore[no-untyped-def]
    from a2a.compat.v0_3 import conversions
    from a2a.compat.v0_3 import types as v03
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import InMemoryTaskStore

    if kind == "memory":
        store = InMemoryTaskStore()
    else:
        from a2a.server.tasks import DatabaseTaskStore
        from sqlalchemy.ext.asyncio import create_async_engine

        store = DatabaseTaskStore(create_async_engine(f"sqlite+aiosqlite:///{directory}/sdk.sqlite3"))
    context = ServerCallContext()

    def convert(task: dict):  # type: ignore[no-untyped-def]
        plain = {k: v for k, v in task.items() if not k.startswith("_")}
        return conversions.to_core_task(v03.Task.model_validate(plain))

    return (lambda t: store.save(t, context)), (lambda i: store.get(i, context)), convert


async def bench(store_name: str, directory: str, seconds: float) -> None:
    server, kind = store_name.split("-", 1)
    save, get, convert = (_sdk if server == "sdk" else _toolnexus)(kind, directory)
    warm = convert(taskdata.task("warm-up"))
    await save(warm)  # the SDK's database store creates its table on first use
    await get("warm-up")
    for shape in taskdata.SHAPES:
        tasks = [
            convert(taskdata.task(f"{shape}-{i:07d}", shape)) for i in range(20_000 if shape == "small" else 2_000)
        ]
        done = {}
        for op in ("save", "update", "get"):
            n, started = 0, time.perf_counter()
            deadline = started + seconds
            limit = len(tasks) if op == "save" else max(done.get("save", 1), 1)
            while n < limit and time.perf_counter() < deadline:
                t = tasks[n]
                if op == "get":
                    got = await get(t["id"] if isinstance(t, dict) else t.id)
                    assert got is not None
                else:
                    await save(t)
                n += 1
            elapsed = time.perf_counter() - started
            done[op] = n
            print(json.dumps({"store": store_name, "shape": shape, "op": op, "ops": n, "ops_per_s": n / elapsed}))


if __name__ == "__main__":
    asyncio.run(bench(sys.argv[1], sys.argv[2], float(sys.argv[3])))

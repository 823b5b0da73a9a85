"""The servers the suite measures, each started in its own process and virtualenv.

- ``ours/<store>``: this project's site as the README serves it (its ``MIDDLEWARE`` on
  the A2A routes: the default path) under uvicorn (``tests.server.running_server``),
  the ``a2a.handlers.upper`` handler, on the memory, file, ORM-on-SQLite or
  ORM-on-PostgreSQL store;
- ``direct/<store>``: the same with ``A2A_DIRECT_ASGI = True`` (the fast path, no
  ``MIDDLEWARE``: what the other servers have);
- ``sdk/<store>``: the official a2a-sdk's JSON-RPC app (``bench/servers/sdk_server.py``)
  under the same uvicorn, in ``.venv-bench-sdk``; its in-memory or database store;
- ``toolnexus/<store>``: ``toolkit.serve`` (``bench/servers/toolnexus_server.py``), its
  own threading HTTP server, in ``.venv-bench-toolnexus``; memory or file store;
- ``null``: ``bench/servers/null_server.py``, the ceiling;
- ``before/<store>``: ``ours/<store>`` from another checkout of this project (the
  directory in ``A2A_BENCH_BEFORE``, e.g. ``git worktree add /tmp/before <commit>``), in
  this virtualenv: before and after in one run; ``before-direct/<store>``: its
  ``direct/<store>``.

Every server is one process (uvicorn ``--workers 1``; the memory stores could not be
shared by more), loopback only.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server import ServerURL, free_port, manage, running_process, running_server, site_env  # noqa: E402

SERVERS = ROOT / "bench" / "servers"
SDK_PYTHON = ROOT / ".venv-bench-sdk" / "bin" / "python"
TOOLNEXUS_PYTHON = ROOT / ".venv-bench-toolnexus" / "bin" / "python"
POSTGRES_URL = os.environ.get("A2A_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
BENCH_DATABASE = "a2a_bench"
UVICORN = ["-m", "uvicorn", "--host", "127.0.0.1", "--workers", "1", "--no-access-log"]
UVICORN_FAST = ["--loop", "uvloop", "--http", "httptools"]
#: A checkout of an earlier commit, for the ``before/<store>`` targets.
BEFORE = Path(os.environ["A2A_BENCH_BEFORE"]).resolve() if os.environ.get("A2A_BENCH_BEFORE") else None


@dataclass(frozen=True)
class Target:
    name: str
    server: str  # ours | direct | before | before-direct | sdk | toolnexus | null
    store: str
    dialects: tuple[str, ...]
    path: str
    #: What a saved task survives (the store's crash guarantee).
    durability: str

    def missing(self) -> str | None:
        """Why this target cannot run here (a missing venv or database), or None."""
        if self.server == "sdk" and not SDK_PYTHON.exists():
            return "no .venv-bench-sdk (run bench/setup-venvs.sh)"
        if self.server == "toolnexus" and not TOOLNEXUS_PYTHON.exists():
            return "no .venv-bench-toolnexus (run bench/setup-venvs.sh)"
        if self.server.startswith("before") and not (BEFORE and (BEFORE / "manage.py").exists()):
            return "A2A_BENCH_BEFORE is not a checkout of this project"
        if self.store == "orm-postgres":
            try:
                import psycopg

                psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
            except Exception as exc:
                return f"PostgreSQL unavailable: {exc}"
        return None

    @contextlib.contextmanager
    def running(self, tmp: Path, **env: str) -> Iterator[ServerURL]:
        """Start the server on a fresh store under ``tmp``; yield its base URL."""
        log = tmp / f"{self.name.replace('/', '-')}.log"
        if self.server in ("ours", "direct"):
            # ours/: the site as the README serves it (its MIDDLEWARE on the A2A routes);
            # direct/: the opt-in fast path (A2A_DIRECT_ASGI), which skips it.
            site = site_env(
                A2A_HANDLER="a2a.handlers.upper",
                A2A_LOG_LEVEL="WARNING",
                A2A_DIRECT_ASGI="true" if self.server == "direct" else "false",
                # As `make run` serves it: the frameworks are dev dependencies here, not
                # the README's install (their agents would load three frameworks at start-up).
                FRAMEWORK_AGENTS="false",
                **our_store_env(self.store, tmp),
            )
            site.update(env)
            manage("migrate", "--noinput", env=site)
            with running_server(site, log=log) as base:
                yield base
            return
        port = free_port()
        if self.server.startswith("before") and BEFORE:
            site = site_env(
                A2A_HANDLER="a2a.handlers.upper",
                A2A_LOG_LEVEL="WARNING",
                A2A_DIRECT_ASGI="true" if self.server == "before-direct" else "false",  # as ours/ or direct/
                **our_store_env(self.store, tmp),
            )
            site["PYTHONPATH"] = str(BEFORE)
            site.update(env)
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput"],
                env=site,
                cwd=BEFORE,
                check=True,
                capture_output=True,
            )
            # its own protocol class may not exist there: uvicorn's httptools, as it was
            command = [sys.executable, *UVICORN, "--port", str(port), *UVICORN_FAST, "toolnexus_site.asgi:application"]
            with running_process(command, port, env=site, cwd=BEFORE, log=log) as base:
                yield base
            return
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
        if self.server == "sdk":
            store = "memory" if self.store == "memory" else f"sqlite:{tmp / 'sdk.sqlite3'}"
            clean.update(SDK_STORE=store, SDK_BASE_URL=f"http://127.0.0.1:{port}")
            command = [str(SDK_PYTHON), *UVICORN, "--port", str(port), *UVICORN_FAST, "sdk_server:app"]
        elif self.server == "toolnexus":
            clean.update(TOOLNEXUS_STORE="memory" if self.store == "memory" else f"file:{tmp / 'toolnexus-tasks'}")
            command = [str(TOOLNEXUS_PYTHON), "toolnexus_server.py", str(port)]
        else:
            command = [sys.executable, "null_server.py", str(port)]
        clean.update(env)
        with running_process(command, port, env=clean, cwd=SERVERS, log=log) as base:
            yield base


ALL_DIALECTS = ("toolnexus", "v0.3", "v1.0")
#: Our stores and what a task saved in each survives.
OUR_STORES = {
    "memory": "none (process memory)",
    "file": "power loss (fsync file + directory)",
    # The file store with ``fsync: False``: toolnexus's file store's guarantee, for a
    # like-for-like ratio against it (what the fsyncs cost, apart from the rest).
    "file-atomic": "process crash only (os.replace, no fsync)",
    "orm-sqlite": "process crash (SQLite WAL, synchronous=NORMAL)",
    "orm-postgres": "power loss (PostgreSQL commit, fsync)",
}
TARGETS = {
    t.name: t
    for t in [
        *(
            Target(f"{path}/{store}", path, store, ALL_DIALECTS, "/a2a/", durability)
            for path in ("ours", "direct")
            for store, durability in OUR_STORES.items()
        ),
        Target("sdk/memory", "sdk", "memory", ("v0.3", "v1.0"), "/a2a/", "none (process memory)"),
        Target(
            "sdk/sqlite", "sdk", "sqlite", ("v0.3", "v1.0"), "/a2a/", "power loss (rollback journal, synchronous=FULL)"
        ),
        Target("toolnexus/memory", "toolnexus", "memory", ("toolnexus",), "/", "none (process memory)"),
        Target("toolnexus/file", "toolnexus", "file", ("toolnexus",), "/", "process crash only (os.replace, no fsync)"),
        Target("null", "null", "none", ALL_DIALECTS, "/a2a/", "n/a (stores nothing)"),
        *(
            Target(f"{path}/{store}", path, store, ALL_DIALECTS, "/a2a/", f"as {mine}/{store}, an earlier commit")
            for path, mine in (("before", "ours"), ("before-direct", "direct"))
            for store in ("memory", "file", "orm-sqlite", "orm-postgres")
        ),
    ]
}


def bench_database_url() -> str:
    """A fresh, empty PostgreSQL database for the suite (``a2a_bench``, recreated)."""
    import psycopg

    admin = POSTGRES_URL
    parts = urlsplit(admin)
    with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{BENCH_DATABASE}"')
    return urlunsplit(parts._replace(path=f"/{BENCH_DATABASE}"))


def our_store_env(store: str, tmp: Path) -> dict[str, str]:
    db = f"sqlite:///{tmp / 'db.sqlite3'}"
    if store == "memory":
        return {"TASK_STORE": "memory", "DATABASE_URL": db}
    if store == "file":
        return {"TASK_STORE": f"file:{tmp / 'tasks'}", "DATABASE_URL": db}
    if store == "file-atomic":
        store_setting = {
            "BACKEND": "stores.file.FileTaskStore",
            "OPTIONS": {"directory": str(tmp / "tasks"), "fsync": False},
        }
        return {"TASK_STORE": json.dumps(store_setting), "DATABASE_URL": db}
    if store == "orm-sqlite":
        return {"TASK_STORE": "orm", "DATABASE_URL": db}
    if store == "orm-postgres":
        return {"TASK_STORE": "orm", "DATABASE_URL": bench_database_url()}
    raise ValueError(f"unknown store {store!r}")

"""A distributed deployment on this machine: web processes, queue workers, PostgreSQL
and Redis, all on loopback (docs/deployment.md).

    python -m deploy.cluster            # or: make cluster   (Ctrl-C stops it all)

starts PostgreSQL and Redis if they are down, creates and migrates the database, then
runs ``--web`` uvicorn processes (ports ``--port``, ``--port``+1, ...) and ``--workers``
queue workers, and restarts a worker that exits (as systemd's ``Restart=always`` would:
a worker stops on a database error it cannot ride out). ``--engine`` picks the queue
(:data:`ENGINES`), each worker started as its own docs say: ``db`` (the default,
django-tasks-db: ``manage.py db_worker``), ``rq`` (django-tasks-rq:
``manage.py rqworker --job-class django_tasks_rq.Job default``, RQ's forking worker) or
``celery`` (django-tasks-fennel: ``celery -A django_tasks_fennel.app worker``, its
prefork pool of ``--concurrency`` children), the last two with Redis as the broker.
Every process gets the same settings, from the environment:

    TASK_STORE=orm  A2A_EXECUTOR=tasks  A2A_EVENTS=<redis URL>  DATABASE_URL=<postgres URL>
    TASKS_BACKEND=<the engine's>  TASKS_BROKER_URL=<redis URL>

and anything else set in the environment (``A2A_HANDLER``, ``A2A_WORKERS``, ...).
:class:`Cluster` is the same thing as a context manager, for tests and benchmarks.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/a2a_cluster"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

#: The queue engines: the Tasks backend (TASKS_BACKEND of toolnexus_site/settings.py).
ENGINES = {
    "db": "django_tasks_db.DatabaseBackend",
    "rq": "django_tasks_rq.RQBackend",
    "celery": "django_tasks_fennel.CeleryBackend",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_postgres(url: str) -> None:
    """Start the machine's PostgreSQL cluster when nothing answers at ``url``'s host."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", str(parts.port or 5432)
    if subprocess.run(["pg_isready", "-q", "-h", host, "-p", port], check=False).returncode == 0:
        return
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    if not versions:
        raise RuntimeError(f"no PostgreSQL answers at {host}:{port} and none is installed here")
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", versions[-1], "main", "start"], check=True)
    for _ in range(30):
        if subprocess.run(["pg_isready", "-q", "-h", host, "-p", port], check=False).returncode == 0:
            return
        time.sleep(1)
    raise RuntimeError(f"PostgreSQL did not start at {host}:{port}")


def ensure_redis(url: str) -> None:
    """Start a Redis (no persistence) when nothing answers at ``url``'s host."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", str(parts.port or 6379)
    ping = ["redis-cli", "-h", host, "-p", port, "ping"]
    if subprocess.run(ping, capture_output=True, check=False).stdout.strip() == b"PONG":
        return
    subprocess.run(
        ["redis-server", "--daemonize", "yes", "--bind", host, "--port", port, "--save", "", "--appendonly", "no"],
        check=True,
        capture_output=True,
    )
    for _ in range(50):
        if subprocess.run(ping, capture_output=True, check=False).stdout.strip() == b"PONG":
            return
        time.sleep(0.1)
    raise RuntimeError(f"Redis did not start at {host}:{port}")


def create_database(url: str, *, fresh: bool = False) -> None:
    """Create the database of ``url`` (dropped first when ``fresh``)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and fresh:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            exists = None
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


@dataclass
class Process:
    """One process of the cluster (a web server or a worker) and its log."""

    name: str
    command: list[str]
    log: Path
    restart: bool = False
    popen: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen is not None else None

    def start(self, env: dict[str, str]) -> None:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(
                self.command, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.starts += 1

    def stop(self, timeout: float) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
        # what it started and left behind (an RQ work-horse, a Celery pool child): its session
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)


@dataclass
class Cluster:
    """``web`` uvicorn processes and ``workers`` queue workers on one store and queue."""

    directory: Path
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str = DEFAULT_REDIS_URL
    web: int = 2
    workers: int = 2
    engine: str = "db"  # the queue: a key of ENGINES
    broker_url: str = ""  # the Redis of the "rq" and "celery" queues (default: redis_url)
    concurrency: int = 2  # a Celery worker's pool children (-c)
    worker_args: tuple[str, ...] = ()  # more options for each worker's command
    port: int = 8100  # web process i listens on port + i; 0: free ports
    settings: dict[str, str] = field(default_factory=dict)
    fresh: bool = False
    processes: list[Process] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _supervisor: threading.Thread | None = None

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
        env.update(
            DJANGO_SETTINGS_MODULE="toolnexus_site.settings",
            PYTHONPATH=str(ROOT),
            DATABASE_URL=self.database_url,
            TASK_STORE="orm",
            A2A_EXECUTOR="tasks",
            A2A_EVENTS=self.redis_url,
            A2A_EXPECT_WORKERS=str(self.web),
            CONN_MAX_AGE="60",
            TASKS_BACKEND=ENGINES[self.engine],
            TASKS_BROKER_URL=self.broker_url or self.redis_url,
        )
        env.update(self.settings)
        return env

    def __post_init__(self) -> None:
        # port 0: a free port for each web process (tests, benchmarks)
        self.ports = [free_port() if self.port == 0 else self.port + i for i in range(self.web)]

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    @property
    def worker_processes(self) -> list[Process]:
        return [p for p in self.processes if p.restart]

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        ensure_postgres(self.database_url)
        ensure_redis(self.redis_url)
        create_database(self.database_url, fresh=self.fresh)
        env = self.env
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput", "-v0"], env=env, cwd=ROOT, check=True)
        for i, url in enumerate(self.urls):
            port = urlsplit(url).port
            command = [sys.executable, "-m", "uvicorn", "toolnexus_site.asgi:application", "--host", "127.0.0.1"]
            command += ["--port", str(port), "--no-access-log", "--loop", "uvloop"]
            command += ["--http", "a2a.http.protocol:HttpToolsProtocol"]  # slow-client limits
            self.processes.append(Process(f"web{i + 1}", command, self.directory / f"web{i + 1}.log"))
        for i in range(self.workers):
            command = [*self.worker_command(f"worker{i + 1}-{os.getpid()}"), *self.worker_args]
            self.processes.append(Process(f"worker{i + 1}", command, self.directory / f"worker{i + 1}.log", True))
        for process in self.processes:
            process.start(env)
        self._wait_ready()
        self._supervisor = threading.Thread(target=self._supervise, name="cluster-supervisor", daemon=True)
        self._supervisor.start()

    def worker_command(self, name: str) -> list[str]:
        """The command of a queue worker named ``name``, as its engine's docs start it."""
        manage = [sys.executable, str(ROOT / "manage.py")]
        if self.engine == "rq":  # RQ's default worker: a forked work-horse per job
            return [*manage, "rqworker", "--job-class", "django_tasks_rq.Job", "default"]
        if self.engine == "celery":  # the prefork pool: -c children, each one job at a time
            celery = [sys.executable, "-m", "celery", "-A", "django_tasks_fennel.app", "worker", "-l", "INFO"]
            return [*celery, "-c", str(self.concurrency), "-O", "fair", "-n", f"{name}@%h"]
        return [*manage, "db_worker", "--interval", "0.05", "--no-startup-delay", "--no-reload", "--worker-id", name]

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for url, process in zip(self.urls, self.processes, strict=False):
            while True:
                assert process.popen is not None
                if process.popen.poll() is not None:
                    raise RuntimeError(f"{process.name} exited with {process.popen.returncode} (log: {process.log})")
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{url}/.well-known/agent-card.json", timeout=1).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{process.name} did not start (log: {process.log})")
                time.sleep(0.1)

    def _supervise(self) -> None:
        """Restart a worker that exited (one second later: a database that is down)."""
        env = self.env
        while not self._stopping.wait(0.2):
            for process in self.worker_processes:
                if process.popen is not None and process.popen.poll() is not None and not self._stopping.is_set():
                    time.sleep(1)
                    if not self._stopping.is_set():
                        process.start(env)

    def stop(self, timeout: float = 20) -> None:
        self._stopping.set()
        if self._supervisor is not None:
            self._supervisor.join(5)
        threads = [threading.Thread(target=p.stop, args=(timeout,)) for p in self.processes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def running(directory: Path, **options: object) -> Iterator[Cluster]:
    with Cluster(directory, **options) as cluster:  # type: ignore[arg-type]
        yield cluster


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web", type=int, default=2, help="uvicorn processes (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="queue worker processes (default 2)")
    parser.add_argument("--engine", choices=sorted(ENGINES), default="db", help="the queue (default db)")
    parser.add_argument("--concurrency", type=int, default=2, help="a Celery worker's children (default 2)")
    parser.add_argument("--port", type=int, default=8100, help="the first web process's port (default 8100)")
    parser.add_argument("--database-url", default=os.environ.get("A2A_CLUSTER_DATABASE_URL", DEFAULT_DATABASE_URL))
    parser.add_argument("--redis-url", default=os.environ.get("A2A_CLUSTER_REDIS_URL", DEFAULT_REDIS_URL))
    parser.add_argument("--dir", type=Path, default=ROOT / ".cluster", help="logs (default ./.cluster)")
    parser.add_argument("--fresh", action="store_true", help="drop and recreate the database first")
    args = parser.parse_args(argv)
    if args.fresh and args.dir.exists():
        shutil.rmtree(args.dir)
    cluster = Cluster(
        args.dir,
        database_url=args.database_url,
        redis_url=args.redis_url,
        web=args.web,
        workers=args.workers,
        engine=args.engine,
        concurrency=args.concurrency,
        port=args.port,
        fresh=args.fresh,
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # SIGINT too: a background job ignores it otherwise
        signal.signal(signum, lambda *_: stop.set())
    with cluster:
        for process in cluster.processes:
            print(f"{process.name:8} pid {process.pid:<7} log {process.log}")
        print("web: " + "  ".join(cluster.urls) + "   (Ctrl-C stops the cluster)", flush=True)
        stop.wait()
    print("stopped")


if __name__ == "__main__":
    main()

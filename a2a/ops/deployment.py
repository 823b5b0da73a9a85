"""How the agent is deployed: several server processes need a store they can share.

The memory store lives inside one process: behind a server with several worker
processes (``uvicorn --workers 4``, ``WEB_CONCURRENCY=4``) a task submitted to one
worker is unknown to the others, so GetTask, CancelTask and ListTasks answer at
random. This is flagged twice:

- the system check ``a2a.W001`` (``manage.py check``, ``runserver``, ``migrate``)
  when the store is not shared and ``A2A_EXPECT_WORKERS`` or ``WEB_CONCURRENCY``
  says there are several workers;
- a warning logged by each worker at start-up (ASGI lifespan) when the process looks
  like one of several workers, and an info line naming the store otherwise.

It also checks the lease settings (``a2a.E050``), and raises the process's soft file
limit to its hard limit at start-up (:func:`raise_file_limit`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from a2a.conf import a2a_settings
from a2a.core.events import get_event_backend
from stores.backends import get_task_store
from stores.base import TaskStore

logger = logging.getLogger("a2a")


def _count(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def expected_workers() -> tuple[int, str]:
    """How many server processes the settings or the environment announce, and which said so."""
    setting = a2a_settings.EXPECT_WORKERS
    env = _count(os.environ.get("WEB_CONCURRENCY"))
    if env > setting:
        return env, f"WEB_CONCURRENCY={env}"
    return setting, f"A2A_EXPECT_WORKERS={setting}"


def _parent_arguments() -> list[str] | None:
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def several_workers() -> str | None:
    """Why this process looks like one of several server workers, or None."""
    count, source = expected_workers()
    if count > 1:
        return source
    if multiprocessing.parent_process() is not None and "uvicorn" in sys.modules:
        args = _parent_arguments()
        if args is None:
            return "this process is a uvicorn worker"
        if "--reload" in args:
            return None  # the reloader runs one worker
        for i, arg in enumerate(args):
            value = arg.split("=", 1)[1] if arg.startswith("--workers=") else None
            if arg == "--workers" and i + 1 < len(args):
                value = args[i + 1]
            if value is not None and _count(value) > 1:
                return f"uvicorn runs {_count(value)} workers"
    return None


def configured_store() -> TaskStore | None:
    try:
        return get_task_store()
    except Exception:  # stores.E001 reports it
        return None


def unshared_message(store: Any, reason: str) -> str:
    return (
        f"TASK_STORE is {store!r}, which lives inside one process, but {reason}: a task submitted to one "
        "worker is unknown to the others (GetTask, CancelTask and ListTasks answer at random)."
    )


UNSHARED_HINT = 'Use a store the workers share (TASK_STORE = "file:<dir>" or "orm"), or run one worker.'


def log_startup() -> None:
    """At server start (ASGI lifespan): say which store and event backend this process
    uses, and warn when either keeps to this process while it seems to have siblings."""
    store = configured_store()
    if store is None:
        return
    reason = several_workers()
    if reason is not None and not store.shared:
        logger.warning("%s %s", unshared_message(store, reason), UNSHARED_HINT)
        return
    try:
        events: Any = get_event_backend()
    except Exception as exc:  # a2a.E060 reports it
        events = f"<A2A_EVENTS unusable: {exc}>"
    logger.info(
        "A2A worker %d serving with task store %r and events %r (leases of %ss%s)",
        os.getpid(),
        store,
        events,
        a2a_settings.LEASE_SECONDS,
        f"; {reason}" if reason else "",
    )
    if reason is not None and not getattr(events, "remote", False):
        logger.warning(
            "A2A_EVENTS keeps each task's events in the process that saves them, but %s: a client "
            'streaming from one worker hears nothing of a task another one runs. Use A2A_EVENTS = "redis://..." '
            'or "postgres".',
            reason,
        )


def file_limit() -> int:
    """This process's soft limit on open files (0 when unknown or unlimited)."""
    if resource is None:
        return 0
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 0 if soft == resource.RLIM_INFINITY else int(soft)


def raise_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit (every connection, stream and
    store file takes a descriptor; distributions often default the soft one to 1024).
    Returns the limit now in force (0 when unknown or unlimited)."""
    if resource is None:
        return 0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            logger.warning("could not raise the open-file limit from %d to %d: %s", soft, hard, exc)
        else:
            logger.info("raised the open-file limit from %d to %d", soft, hard)
    return file_limit()

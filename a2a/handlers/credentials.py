"""The caller's own credentials, for delegation to a remote agent whose settings say
``FORWARD_CALLER_CREDENTIALS`` (docs/delegation.md).

Kept only when some remote agent opts in: a binding reads the credential headers
(:func:`credential_headers`) into the call's context, the operation holds them in this
process's memory for the task (:func:`hold_credentials`), and the runner hands them to
the handler's request once (:func:`take_credentials`). They are never saved with the
task, so a task run by another process (the queue executor) delegates without them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from a2a.conf import a2a_settings

#: The credentials kept for tasks about to run in this process: never saved with the task.
#: Oldest first (insertion order), so the stale ones are dropped from the front.
_held: OrderedDict[str, tuple[float, dict[str, str]]] = OrderedDict()
_held_lock = threading.Lock()
#: Seconds a credential waits for its task's handler before it is dropped.
_HOLD_SECONDS = 600.0


def forwarding_wanted() -> bool:
    """Whether some remote agent's settings say ``FORWARD_CALLER_CREDENTIALS``: only
    then are a caller's credentials kept (in memory) for its task's delegations."""
    agents = a2a_settings.REMOTE_AGENTS or {}
    return any(isinstance(e, dict) and e.get("FORWARD_CALLER_CREDENTIALS") for e in agents.values())


def credential_headers(header: Callable[[str], str | None]) -> dict[str, str]:
    """The caller's credential headers of a request (``Authorization`` and the
    ``A2A_API_KEY_HEADER``), read with ``header(name)``; empty unless
    :func:`forwarding_wanted`."""
    if not forwarding_wanted():
        return {}
    names = ("Authorization", a2a_settings.API_KEY_HEADER)
    return {name: value for name in names if (value := header(name))}


def hold_credentials(task_id: str, headers: dict[str, str]) -> None:
    """Keep ``headers`` for the next run of ``task_id``'s handler in this process
    (:func:`take_credentials`); they are never saved with the task."""
    if not headers:
        return
    now = time.monotonic()
    with _held_lock:
        while _held and now - next(iter(_held.values()))[0] > _HOLD_SECONDS:
            _held.popitem(last=False)
        _held.pop(task_id, None)  # a later turn's credentials: at the end, as the newest
        _held[task_id] = (now, dict(headers))


def take_credentials(task_id: str) -> dict[str, str]:
    """The credentials held for ``task_id`` (removed: they serve one run); empty when none
    (no agent opts in, the caller sent none, or the task runs in another process)."""
    if not _held:  # (nothing held: no lock taken on each task's run)
        return {}
    with _held_lock:
        held = _held.pop(task_id, None)
    return held[1] if held else {}

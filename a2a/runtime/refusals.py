"""A value the store will never take: told apart from an outage, and failed honestly.

A save that raises because the database is restarting is tried again (the runner's
``_persist``); one that raises because the store refuses the value itself (the data, a
constraint, a task that cannot be serialized) would fail the same way however often it
is tried, so the task fails at once, its status message saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import DataError, IntegrityError, NotSupportedError

from a2a.core import lifecycle
from a2a.protocol.model import text_part

UNSAVABLE_MESSAGE = "The agent's result could not be saved"

#: What a store raises for a value it will never take, however often asked (as opposed
#: to an outage: a lost connection, a database restarting): the database refused the
#: data or a constraint, or the task cannot be serialized (TypeError, ValueError, which
#: UnicodeError and the JSON encoders' errors are).
REFUSED = (DataError, IntegrityError, NotSupportedError, TypeError, ValueError)


@dataclass(frozen=True)
class Unsavable:
    """What a sync handler's call returns when the store refused its outcome (:func:`refused_by_store`)."""

    reason: BaseException


def unsavable(refused: BaseException) -> lifecycle.Change:
    """The change that fails a task whose outcome the store refused, saying why."""
    return lifecycle.settle("failed", parts=[text_part(f"{UNSAVABLE_MESSAGE}: {reason(refused)}")])


def refused_by_store(exc: BaseException) -> BaseException | None:
    """The error in ``exc``'s chain of causes saying the store refuses the value itself
    (see :data:`REFUSED`); None for anything else (an outage, presumably)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        if isinstance(seen, REFUSED):
            return seen
        seen = seen.__cause__
    return None


def reason(exc: BaseException) -> str:
    """``exc`` for a client: its type and the first line of its message (a database's
    next lines quote the SQL and the data), at most 300 characters."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 300 else f"{text[:300]}..."

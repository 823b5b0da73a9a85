"""Whether a save must be durable before it returns: every save is, but those made
inside :func:`not_an_acknowledgement` (a lease renewal). See docs/stores.md, "What is
durable when"."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_NOT_AN_ACKNOWLEDGEMENT: contextvars.ContextVar[bool] = contextvars.ContextVar("not_an_acknowledgement", default=False)


@contextlib.contextmanager
def not_an_acknowledgement() -> Iterator[None]:
    """The saves made inside are answers to no one (a lease renewal: nothing a client can
    see changes, and losing it only makes the lease look older). A store may then commit
    them lazily (the ORM store on PostgreSQL: ``synchronous_commit`` off for that
    transaction) where a later durable commit makes them durable too; every other save
    stays durable before it returns."""
    token = _NOT_AN_ACKNOWLEDGEMENT.set(True)
    try:
        yield
    finally:
        _NOT_AN_ACKNOWLEDGEMENT.reset(token)


def acknowledged() -> bool:
    """False inside :func:`not_an_acknowledgement`: whether a save must be durable before
    it returns (as every save is, but a lease renewal's)."""
    return not _NOT_AN_ACKNOWLEDGEMENT.get()

"""What a client of any binding is told when the task store fails."""

from __future__ import annotations

import logging

from a2a.protocol.errors import InternalError, UnavailableError
from stores.base import StoreError, StoreUnavailable

logger = logging.getLogger(__name__)


def store_failure(exc: StoreError) -> InternalError:
    """What a client is told when the task store failed: "cannot read now, try again"
    (:class:`~stores.base.StoreUnavailable`: -32603, HTTP 503, gRPC UNAVAILABLE), never
    "task not found"; any other store error as an internal error with its (client-fit)
    message."""
    logger.warning("the task store failed: %s", exc, exc_info=exc.__cause__ is not None)
    if isinstance(exc, StoreUnavailable):
        return UnavailableError(str(exc))
    return InternalError(str(exc))

"""What a client of any binding is told about an exception an operation raised.

One mapping for every binding (JSON-RPC, HTTP+JSON, SSE, gRPC): each renders the
mapped :class:`~a2a.protocol.errors.A2AError` in its own shape, so an exception means
the same to a client whichever way it called.
"""

from __future__ import annotations

import logging

from a2a.protocol.errors import A2AError, InternalError, UnavailableError
from stores.base import StoreError, StoreUnavailable

logger = logging.getLogger(__name__)


def client_error(exc: Exception, what: str) -> A2AError:
    """The error a client is answered with for ``exc``.

    An :class:`A2AError` is its own answer. A task store's failure is never "task not
    found": :class:`~stores.base.StoreUnavailable` says "cannot read now, try again"
    (-32603, HTTP 503, gRPC UNAVAILABLE), any other store error is an internal error
    with its (client-fit) message. Anything else is a bug the client cannot act on: an
    internal error, the details logged as ``what`` (``JSON-RPC SendMessage``) failing."""
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, StoreError):
        logger.warning("the task store failed: %s", exc, exc_info=exc.__cause__ is not None)
        if isinstance(exc, StoreUnavailable):
            return UnavailableError(str(exc))
        return InternalError(str(exc))
    logger.exception("%s failed", what, exc_info=exc)
    return InternalError("Internal error; the server logged the details")

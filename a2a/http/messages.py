"""Django's message storage, built when a message is first read or added.

``MessageMiddleware`` makes a storage for every request. Its default,
``FallbackStorage``, builds a cookie storage (with its signer) and a session storage
at once, though most requests (every A2A call) never read or add a message: on the
A2A routes that was the costliest of the startproject middleware's hooks.
:class:`LazyFallbackStorage` is the same storage with its two backends built on first
use; a request that touches no message builds nothing, and one that does behaves as
with ``FallbackStorage`` (cookie first, the session for what does not fit)::

    MESSAGE_STORAGE = "a2a.http.messages.LazyFallbackStorage"

It keeps the A2A routes' middleware on the event loop, as Django's own storages do
(docs/deployment.md, "Middleware and the fast path"). One difference: a missing
``SessionMiddleware`` is reported when a message is first used, not at the request's
start.
"""

from __future__ import annotations

from typing import Any

from django.contrib.messages.storage.base import BaseStorage
from django.contrib.messages.storage.fallback import FallbackStorage
from django.http import HttpRequest
from django.utils.functional import cached_property


class LazyFallbackStorage(FallbackStorage):
    """``FallbackStorage`` whose cookie and session storages are made on first use."""

    def __init__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> None:
        BaseStorage.__init__(self, request, *args, **kwargs)  # not FallbackStorage's: it builds both
        self._arguments = ((request, *args), kwargs)
        self._used_storages: set[BaseStorage] = set()

    @cached_property
    def storages(self) -> list[BaseStorage]:
        args, kwargs = self._arguments
        return [storage_class(*args, **kwargs) for storage_class in self.storage_classes]

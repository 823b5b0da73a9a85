"""A project's own middleware, as the tests add it to ``MIDDLEWARE``: async only (as CORS
or request-id middleware are), it writes the path it saw into the response's
``X-Project-Middleware`` header, so that a test can tell whether it ran, and on what."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

#: Its dotted path, for ``settings.MIDDLEWARE``.
PROJECT_MIDDLEWARE = "tests.middleware.project_middleware"


def project_middleware(get_response: Callable[[Any], Awaitable[Any]]) -> Any:
    """The middleware (Django's async chain hands it an async ``get_response``)."""

    async def middleware(request: Any) -> Any:
        response = await get_response(request)
        response["X-Project-Middleware"] = request.path
        return response

    assert iscoroutinefunction(get_response)
    return markcoroutinefunction(middleware)


project_middleware.async_capable = True  # type: ignore[attr-defined]
project_middleware.sync_capable = False  # type: ignore[attr-defined]

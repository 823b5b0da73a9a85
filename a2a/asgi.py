"""The ASGI application, with lifespan: on shutdown the runner drains its tasks.

``toolnexus_site/asgi.py`` (or your project's) does::

    from a2a.asgi import get_asgi_application
    application = get_asgi_application()
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.core.asgi import get_asgi_application as django_asgi_application


def get_asgi_application() -> Any:
    django_app = django_asgi_application()

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            return await django_app(scope, receive, send)
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                from .runner import get_runner

                await asyncio.to_thread(get_runner().shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return

    return application

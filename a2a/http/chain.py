"""The project's ``MIDDLEWARE`` around an A2A view, in one thread hop per request.

Under ASGI Django runs the middleware chain in async mode: every hook of a sync
middleware (``MiddlewareMixin``'s ``process_request``, ``process_view``,
``process_response``, ...) is its own ``sync_to_async`` hop to a thread made for the
request (``ThreadSensitiveContext``), and the request signals hop too. For the seven
middlewares of a default project that is a dozen hops and a thread per request, most of
a small A2A request's cost.

:class:`OneHopChain` runs the same chain the way WSGI does, in **sync mode, on one
worker thread**: ``request_started``, every middleware (in the project's order, with
the same hooks, seeing the same request and response), the view's response, and for a
response that is not streamed ``request_finished`` too, all in one hop. The A2A view is
``async`` and keeps running on the event loop (its store work goes to threads as
everywhere else): the worker thread hands it to the loop and waits for its response.
A streamed response (SSE) leaves the thread as soon as the middleware has seen it; its
body streams on the loop and ``request_finished`` follows it (a second hop).

It is used when a middleware of the project is not known not to block (else the chain
runs on the event loop: :mod:`a2a.http.loop_chain`), or the request carries a session
cookie, and every middleware can run sync (Django's own and ``MiddlewareMixin``
subclasses can); a chain with an async-only middleware goes through Django's own async
handler instead, where such a middleware costs no hop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.handlers.asgi import get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import HttpRequest, HttpResponseBase
from django.urls import set_script_prefix
from django.utils.module_loading import import_string

#: The loop the A2A view runs on, and the futures of the views running for this request
#: (cancelled when its client goes away), as seen from the worker thread.
_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop] = contextvars.ContextVar("a2a_chain_loop")
_VIEWS: contextvars.ContextVar[list[concurrent.futures.Future[Any]]] = contextvars.ContextVar("a2a_chain_views")


def all_sync_capable() -> bool:
    """Whether every middleware of ``MIDDLEWARE`` can run sync (Django's default: yes)."""
    return all(getattr(import_string(path), "sync_capable", True) for path in settings.MIDDLEWARE)


def _on_the_loop(view: Callable[..., Any]) -> Callable[..., Any]:
    """A sync callable running the async ``view`` on the request's event loop and
    waiting for its response (the worker thread's part of the hop)."""

    @functools.wraps(view)
    def run(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        future = asyncio.run_coroutine_threadsafe(view(request, *args, **kwargs), _LOOP.get())
        _VIEWS.get().append(future)
        return future.result()

    return run


class OneHopChain(BaseHandler):
    """``MIDDLEWARE`` loaded in sync mode around the A2A views (see the module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.load_middleware(is_async=False)

    def make_view_atomic(self, view: Callable[..., Any]) -> Callable[..., Any]:
        """The view as Django would call it, an async one run on the request's loop."""
        view = super().make_view_atomic(view)
        if asyncio.iscoroutinefunction(view) or getattr(view, "_is_coroutine", None) is not None:
            return _on_the_loop(view)
        return view

    def respond(self, handler: Any, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """On the worker thread: the request signals, the chain and the view; a response
        that is not streamed is closed here (``request_finished``: this thread's database
        connections are the ones the middleware used)."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=type(handler), scope=scope)
        request, error_response = handler.create_request(scope, body_file)
        response = error_response if request is None else self.get_response(request)
        if not response.streaming:
            response.close()
        return response


class ChainRunner:
    """The worker threads the chains run on: a pool of their own (a request's thread
    waits for its view, which may wait for the store's threads: never the same pool)."""

    def __init__(self, workers: int) -> None:
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="a2a-middleware")

    async def run(self, chain: OneHopChain, handler: Any, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """The response of ``chain`` for the request; cancelled (the client went away),
        the view running for it is cancelled too."""
        ctx = contextvars.copy_context()
        views: list[concurrent.futures.Future[Any]] = []
        ctx.run(_LOOP.set, asyncio.get_running_loop())
        ctx.run(_VIEWS.set, views)
        call = functools.partial(ctx.run, chain.respond, handler, scope, body_file)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, call)
        except asyncio.CancelledError:
            for view in views:
                view.cancel()
            raise

    async def close(self, response: HttpResponseBase) -> None:
        """Close a response once it was sent (``request_finished``) on a worker thread,
        unless :meth:`OneHopChain.respond` closed it (one not streamed); shielded, so a
        client that leaves as the stream ends still has it closed."""
        if not response.closed:
            await asyncio.shield(asyncio.get_running_loop().run_in_executor(self.pool, response.close))

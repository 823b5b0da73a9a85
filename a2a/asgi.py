"""The ASGI application: Django's, A2A-aware. ``myproject/asgi.py`` is::

    import os

    from a2a.asgi import get_asgi_application

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
    application = get_asgi_application()

What it adds to Django's own ``get_asgi_application()``:

- **Start-up checks** (ASGI lifespan): the server does not start when a system check
  reports an error (a wrong ``TASK_STORE``, an unimportable ``A2A_HANDLER``, the ORM
  store's migrations not applied, ...): uvicorn exits with the check's message instead
  of serving ``-32603`` to every client (:func:`a2a.ops.checks.startup.startup_errors`). Then
  the runner starts (tasks a dead process left in flight are found at once); on
  shutdown it drains its tasks.
- **Static files under** ``DEBUG``, as ``runserver`` serves them: with
  ``django.contrib.staticfiles`` installed and ``DEBUG = True``, ``STATIC_URL`` is served
  from the finders (the admin has its CSS under ``uvicorn``). With ``DEBUG = False``
  serve them as in any Django deployment: WhiteNoise or the web server (docs/deployment.md).
- **Body limit**: an A2A request's body is read only up to ``A2A_MAX_BODY_BYTES``
  (:class:`LimitedBody`): Django's handler would otherwise spool a body of any size to
  memory or a temporary file before the view could refuse it.
- **MIDDLEWARE without Django's hops**: by default the A2A endpoints go through the
  project's ``MIDDLEWARE`` like every other view (CORS, security headers, request ids,
  error reporting see them), but where Django under ASGI would run each
  ``MiddlewareMixin`` hook through a ``sync_to_async`` thread hop of its own (and a thread
  per request), the chain runs on the event loop with no hop when every middleware is
  known not to block (:mod:`a2a.http.loop_chain`: Django's own, or ``loop_safe = True``),
  else, and for a request with a session cookie, in one hop on a worker thread with the
  request signals (:mod:`a2a.http.chain`), the async view on the loop either way.
- **A fast path, opt-in** (``A2A_DIRECT_ASGI = True``): the A2A endpoints' exact paths are
  served by the async view straight away, skipping ``MIDDLEWARE`` and the request
  signals: a real ``ASGIRequest`` in, the view's ``HttpResponse`` out, ``ALLOWED_HOSTS``
  still enforced; the routes of the other agents (``a2a.urls.agents``) too (measured
  against the default in docs/deployment.md, "Middleware and the fast path").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import logging
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import Any

import django
from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.apps import apps
from django.conf import settings
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import DisallowedHost, RequestAborted
from django.core.handlers.asgi import ASGIHandler, ASGIRequest, get_script_prefix
from django.db import connections
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseBase
from django.urls import Resolver404, resolve, set_script_prefix

from a2a.agents import AGENTS_NAMESPACE
from a2a.conf import a2a_settings
from a2a.core.events import close_event_backend
from a2a.http.chain import ChainRunner, OneHopChain, all_sync_capable
from a2a.http.common import checked_host
from a2a.http.loop_chain import LoopChain, why_not_on_the_loop
from a2a.ops.checks.startup import describe, startup_errors
from a2a.ops.deployment import log_startup, raise_file_limit
from a2a.protocol.limits import BODY_OVER_LIMIT, max_body_bytes
from a2a.runtime.runner import get_runner

logger = logging.getLogger(__name__)

View = Callable[[HttpRequest], Awaitable[HttpResponse]]
#: The worker threads of the A2A routes' middleware chains (a2a.http.chain): made as requests
#: need them, one per request in flight on the chain (a blocking SendMessage holds its
#: thread while it waits); past this many such requests at once, the next ones wait.
CHAINS = ChainRunner(workers=1024)


class LimitedBody:
    """An A2A request's ``receive`` and ``send``, with its body cut off at
    ``A2A_MAX_BODY_BYTES``.

    A declared Content-Length over the limit ends the body before any of it is read; a
    chunked body (or one longer than it declared) ends as soon as the bytes received
    pass the limit. Either way the app sees an empty or partial body and ``scope``
    carries :data:`~a2a.protocol.limits.BODY_OVER_LIMIT`, so the binding's ``limits.read_body``
    answers 413 in its own error shape. The answer then says ``Connection: close``: the
    server stops taking the rest of the body instead of draining it.
    """

    def __init__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope = dict(scope)  # the marker goes on this request's copy only
        self._receive = receive
        self._send = send
        self.limit = max_body_bytes()
        self.received = 0
        self.over = False  # the body is longer than the limit
        self.ended = False  # the app was told the body ended (when over)
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                with contextlib.suppress(ValueError):  # unreadable: read_body answers 400
                    if int(value) > self.limit:
                        self._cut_off()
                break

    def _cut_off(self) -> None:
        self.over = True
        self.scope[BODY_OVER_LIMIT] = True

    async def receive(self) -> dict[str, Any]:
        if self.over:
            if not self.ended:
                self.ended = True
                return {"type": "http.request", "body": b"", "more_body": False}
            # Django's disconnect listener: wait (until the answer is sent and the
            # listener cancelled) without reading, so the server takes no more of the body.
            await asyncio.get_running_loop().create_future()
        message = await self._receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                self._cut_off()
                return await self.receive()
        return message

    async def send(self, message: Mapping[str, Any]) -> None:
        if self.over and message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
        await self._send(message)


class A2AASGIHandler(ASGIHandler):
    """Django's ASGI handler with the A2A endpoints' bodies limited, and served directly
    with ``A2A_DIRECT_ASGI`` (see module doc)."""

    def __init__(self) -> None:
        super().__init__()
        self.direct_view = functools.lru_cache(maxsize=4096)(self._direct_view)
        # The A2A routes' MIDDLEWARE on the event loop (a2a.http.loop_chain) when it does not
        # block, else (and for a request with a session cookie) in one thread hop
        # (a2a.http.chain) when it can run sync, else in Django's own async chain.
        off_loop = why_not_on_the_loop()
        self.loop_chain = LoopChain() if off_loop is None else None
        self.chain = OneHopChain() if all_sync_capable() else None
        if off_loop is None:
            logger.info("A2A routes: MIDDLEWARE on the event loop")
        else:
            logger.info("A2A routes: MIDDLEWARE in a thread hop (%s may block: docs/deployment.md)", off_loop)

    async def read_body(self, receive: Any) -> Any:
        """Django's, with a body of at most ``FILE_UPLOAD_MAX_MEMORY_SIZE`` held in a
        ``BytesIO`` (where Django's ``SpooledTemporaryFile`` would hold it, in memory, but
        with less to make per request); a larger one is spooled by Django's own."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise RequestAborted()  # early client disconnect, as Django's
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if size > settings.FILE_UPLOAD_MAX_MEMORY_SIZE:
                read = {"type": "http.request", "body": b"".join(chunks), "more_body": message.get("more_body", False)}
                return await super().read_body(_replay(read, receive))
            if not message.get("more_body", False):
                return io.BytesIO(b"".join(chunks))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # Django enters a ThreadSensitiveContext for every request (a thread of its own for
        # the request's sync hops); the A2A routes enter one only where they may hop.
        if (
            scope["type"] == "http"
            and (a2a_settings.DIRECT_ASGI or self.loop_chain is not None or self.chain is not None)
            and self.direct_view(scope["path"]) is not None
        ):
            return await self.handle(scope, receive, send)
        return await super().__call__(scope, receive, send)

    def _direct_view(self, path: str) -> tuple[View, dict[str, Any]] | None:
        """The A2A view (and its URL kwargs) that serves ``path``, or None."""
        try:
            match = resolve(path)
        except Resolver404:
            return None
        if match.app_name not in ("a2a", AGENTS_NAMESPACE):  # the browsable page's "a2a:browse" is neither
            return None
        view = match.func
        if not iscoroutinefunction(view):
            view = sync_to_async(view, thread_sensitive=False)
        return view, match.kwargs

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        found = self.direct_view(scope["path"])
        if found is None:
            await super().handle(scope, receive, send)
            return
        limited = LimitedBody(scope, receive, send)
        direct = a2a_settings.DIRECT_ASGI
        loop_chain = None if direct or self.loop_chain is None or not self.loop_chain.takes(scope) else self.loop_chain
        if not direct and loop_chain is None and self.chain is None:
            async with ThreadSensitiveContext():  # a no-op inside Django's own (__call__)
                await super().handle(limited.scope, limited.receive, limited.send)
            return
        try:
            body_file = await self.read_body(limited.receive)
        except RequestAborted:
            return  # the client went away
        if limited.over:
            send = limited.send  # Connection: close
        serve = functools.partial(
            self._serve, path=scope["path"], receive=limited.receive, send=send, body_file=body_file
        )
        if loop_chain is not None:
            async with ThreadSensitiveContext() as context:
                respond = functools.partial(loop_chain.respond, self, limited.scope, body_file)
                await serve(respond, close=functools.partial(loop_chain.close, context))
        elif not direct:
            assert self.chain is not None
            await serve(functools.partial(CHAINS.run, self.chain, self, limited.scope, body_file), close=CHAINS.close)
        elif (view := await self._direct(found, limited.scope, body_file, send)) is not None:
            await serve(view, close=None)

    async def _direct(
        self, found: tuple[View, dict[str, Any]], scope: dict[str, Any], body_file: Any, send: Any
    ) -> Callable[[], Awaitable[HttpResponseBase]] | None:
        """The direct path's view call for the request (None: refused, answered here)."""
        view, kwargs = found
        set_script_prefix(get_script_prefix(scope))
        try:
            request = ASGIRequest(scope, body_file)
            checked_host(request)  # ALLOWED_HOSTS, as CommonMiddleware would check it
        except DisallowedHost as exc:
            body_file.close()
            await self.send_response(HttpResponseBadRequest(str(exc)), send)
            return None
        return functools.partial(view, request, **kwargs)

    async def _serve(
        self,
        respond: Callable[[], Awaitable[Any]],
        *,
        path: str,
        receive: Any,
        send: Any,
        body_file: Any,
        close: Callable[[HttpResponseBase], Awaitable[None]] | None,
    ) -> None:
        """``respond()`` and send its response, cancelled when the client goes away; then
        ``close`` it (a chain's ``request_finished``)."""
        answer = self._answer(respond, path=path, send=send, close=close)
        try:
            waits_for = answer.send(None)
        except StopIteration:  # answered without waiting: the client's leaving could not be seen
            body_file.close()
            return
        except BaseException:
            body_file.close()
            raise
        await self._watched(answer, waits_for, receive, body_file)

    async def _watched(self, answer: Coroutine[Any, Any, None], waits_for: Any, receive: Any, body_file: Any) -> None:
        """The rest of ``answer``, cancelled when the client goes away (as Django does, a
        listener task of its own waits for the disconnect: made only now, as the answer
        first waits, since until then it could not have run)."""
        current = asyncio.current_task()
        assert current is not None
        gone = False

        def on_disconnect(listener: asyncio.Task[None]) -> None:
            nonlocal gone
            if not listener.cancelled() and isinstance(listener.exception(), RequestAborted):
                gone = True
                current.cancel()

        listener = asyncio.ensure_future(self.listen_for_disconnect(receive))
        listener.add_done_callback(on_disconnect)
        try:
            await _resumed(answer, waits_for)
        except asyncio.CancelledError:
            if not gone:
                raise  # cancelled from outside (the server shutting down)
            current.uncancel()  # the client went away: nothing more to do
        finally:
            listener.remove_done_callback(on_disconnect)
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, RequestAborted, AssertionError):
                await listener
            body_file.close()

    async def _answer(
        self,
        respond: Callable[[], Awaitable[Any]],
        *,
        path: str,
        send: Any,
        close: Callable[[HttpResponseBase], Awaitable[None]] | None,
    ) -> None:
        try:
            response = await respond()
        except Exception:
            logger.exception("A2A endpoint %s failed", path)
            response = HttpResponse(b'{"error": "internal error"}', status=500, content_type="application/json")
        try:
            await self.send_response(response, send)
        finally:
            if close is not None:
                await close(response)


@types.coroutine
def _resumed(coroutine: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """The rest of ``coroutine``, whose first step yielded ``yielded``, awaited: each value
    the task sends and each exception it throws (a cancellation) goes on to it, as
    ``await`` would hand them."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            step = functools.partial(coroutine.throw, exc)
        else:
            step = functools.partial(coroutine.send, sent)
        try:
            yielded = step()
        except StopIteration as done:
            return done.value


def _replay(message: dict[str, Any], receive: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    """``receive``, its first answer ``message`` (what was read of a body already)."""
    pending = [message]

    async def replayed() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replayed


def _start_up() -> None:
    """Say which store this worker serves from (warning when it cannot be shared), and
    start the runner: tasks a dead process left in flight are found at once (a2a.core.leases)."""
    try:
        log_startup()
        get_runner().start()
    except Exception:
        logger.exception("starting the A2A runner failed; it starts with the first task")


async def _start_grpc() -> Any:
    """``A2A_GRPC_IN_ASGI``: the gRPC binding on ``A2A_GRPC_ADDRESS``, in this event loop."""
    from a2a.grpc.server import start  # the `grpc` extra: imported only when asked for

    server, _ = await start(a2a_settings.GRPC_ADDRESS)
    return server


def _startup_problem() -> str | None:
    """What stops the server from starting (:func:`a2a.ops.checks.startup.startup_errors`), or None."""
    try:
        errors = startup_errors()
    finally:
        connections.close_all()  # this thread's, opened by the migration check
    # The server logs the message (uvicorn: "ERROR: <message>", then exits with status 3).
    return describe(errors) if errors else None


def _serves_static_files() -> bool:
    """Whether to serve ``STATIC_URL`` as ``runserver`` does: ``DEBUG`` on, staticfiles
    installed, a local ``STATIC_URL`` (not ``https://cdn...``)."""
    static_url = getattr(settings, "STATIC_URL", None) or ""
    return bool(settings.DEBUG) and apps.is_installed("django.contrib.staticfiles") and static_url.startswith("/")


def get_asgi_application() -> Callable[..., Awaitable[None]]:
    """The project's ASGI application, A2A-aware (see module doc). Raises the process's
    soft open-file limit to the hard one: each connection takes a descriptor."""
    django.setup(set_prefix=False)
    raise_file_limit()
    handler: Callable[..., Awaitable[None]] = A2AASGIHandler()
    if _serves_static_files():
        handler = ASGIStaticFilesHandler(handler)  # type: ignore[arg-type]  # any ASGI app will do

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            return await handler(scope, receive, send)
        grpc_server = None
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                problem = await asyncio.to_thread(_startup_problem)
                if problem is not None:
                    await send({"type": "lifespan.startup.failed", "message": problem})
                    return
                await asyncio.to_thread(_start_up)
                if a2a_settings.GRPC_IN_ASGI:
                    try:
                        grpc_server = await _start_grpc()
                    except Exception as exc:  # e.g. the grpc extra missing, the port taken
                        logger.exception("starting the A2A gRPC binding failed")
                        await send({"type": "lifespan.startup.failed", "message": f"A2A gRPC binding: {exc}"})
                        return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if grpc_server is not None:  # calls in progress end first (they may be streams)
                    await grpc_server.stop(a2a_settings.SHUTDOWN_GRACE)
                await asyncio.to_thread(get_runner().shutdown)
                await asyncio.to_thread(close_event_backend)  # the last transitions' events go out
                await send({"type": "lifespan.shutdown.complete"})
                return

    return application

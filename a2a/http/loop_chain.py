"""The project's ``MIDDLEWARE`` around an A2A view on the event loop, with no thread hop.

Django under ASGI runs a sync middleware's every hook in a ``sync_to_async`` hop, because
a hook may block (a database query, a file, a socket). Most middleware does not: a header
added, a cookie read, a redirect decided. When every middleware of the project is one
known not to block, :class:`LoopChain` calls the hooks **on the event loop**, inline, in
Django's order and with Django's own machinery around them (``convert_exception_to_response``
at each level, the view middleware, ``get_response_async``), the async view awaited in the
same task: the same hooks, the same request and response objects, no thread. The
route is resolved once per path (each request gets a copy of the match of its own).

Known not to block (:func:`why_not_on_the_loop`): Django's own middleware listed in
:data:`DJANGO_MIDDLEWARE`, decided from its code (a setting can take one off the list),
and any class that declares it with ``loop_safe = True`` (docs/deployment.md, "Middleware
and the fast path": its hooks do no I/O and wait for nothing). Anything else keeps the
one-hop chain (:mod:`a2a.http.chain`), decided once, at start-up.

Where Django's own "safe" middleware can still reach the database, that piece leaves the
loop and nothing else does, so Django's guard (``SynchronousOnlyOperation``) never trips:

- **a request with a session cookie** takes the one-hop chain (:meth:`LoopChain.takes`):
  its session, and the user it names, may be read from the store by anyone (DRF's
  ``SessionAuthentication``, a middleware). Without one, both are pure: an empty session
  loads nothing, the lazy user is anonymous without a query;
- a session to save (modified, or ``SESSION_SAVE_EVERY_REQUEST``), messages to store:
  that ``process_response`` runs off the loop (:data:`OFF_LOOP_RESPONSE`);
- the request signals run on the loop when each receiver is known not to block (Django's
  own), else off it; ``request_finished`` follows the request's thread when a piece made one;
- errors, and answers of 400 and above, are logged off the loop, as Django does.

The off-loop pieces of a request share one thread (the request's ``ThreadSensitiveContext``,
as in Django's handler), so ``request_finished`` closes the connections they used.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from asgiref.sync import SyncToAsync, ThreadSensitiveContext, iscoroutinefunction, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.cache import close_caches
from django.core.exceptions import MiddlewareNotUsed
from django.core.handlers.asgi import get_script_prefix
from django.core.handlers.base import BaseHandler, reset_urlconf
from django.core.handlers.exception import convert_exception_to_response
from django.db import close_old_connections, reset_queries
from django.dispatch import Signal
from django.http import HttpRequest, HttpResponseBase
from django.urls import ResolverMatch, get_resolver, set_script_prefix
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string

#: The class flag by which a middleware (or a request signal's receiver) declares that it
#: can run on the event loop: no database, file or network I/O, no waiting.
FLAG = "loop_safe"


_SESSION_ENGINES = tuple(
    f"django.contrib.sessions.backends.{name}" for name in ("db", "cache", "cached_db", "file", "signed_cookies")
)
_MESSAGE_STORAGES = (
    *(
        f"django.contrib.messages.storage.{name}"
        for name in ("fallback.FallbackStorage", "session.SessionStorage", "cookie.CookieStorage")
    ),
    "a2a.http.messages.LazyFallbackStorage",  # Django's FallbackStorage, built on first use
)


def _setting_in(name: str, allowed: tuple[str, ...]) -> Callable[[], str | None]:
    return lambda: None if getattr(settings, name) in allowed else name


def _unless(name: str) -> Callable[[], str | None]:
    return lambda: name if getattr(settings, name) else None


#: Django's middleware that does no I/O of its own, each with the check of the settings
#: that would make it (None: none does). Sessions and authentication are lazy; the
#: messages' storage touches the session only to store messages (see OFF_LOOP_RESPONSE).
DJANGO_MIDDLEWARE: dict[str, Callable[[], str | None] | None] = {
    "django.middleware.security.SecurityMiddleware": None,
    "django.middleware.common.CommonMiddleware": None,
    "django.middleware.csrf.CsrfViewMiddleware": _unless("CSRF_USE_SESSIONS"),
    "django.middleware.clickjacking.XFrameOptionsMiddleware": None,
    "django.middleware.gzip.GZipMiddleware": None,
    "django.middleware.http.ConditionalGetMiddleware": None,
    "django.middleware.locale.LocaleMiddleware": None,
    "django.contrib.sessions.middleware.SessionMiddleware": _setting_in("SESSION_ENGINE", _SESSION_ENGINES),
    "django.contrib.auth.middleware.AuthenticationMiddleware": None,
    "django.contrib.messages.middleware.MessageMiddleware": _setting_in("MESSAGE_STORAGE", _MESSAGE_STORAGES),
}


def _saves_session(request: HttpRequest) -> bool:
    session = getattr(request, "session", None)
    return (
        session is not None
        and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)
        and not session.is_empty()  # the only branch of process_response with I/O
    )


def _stores_messages(request: HttpRequest) -> bool:
    storage = getattr(request, "_messages", None)
    return storage is not None and (storage.used or storage.added_new)


#: The Django middleware whose ``process_response`` may write to a store, and when.
OFF_LOOP_RESPONSE: dict[str, Callable[[HttpRequest], bool]] = {
    "django.contrib.sessions.middleware.SessionMiddleware": _saves_session,
    "django.contrib.messages.middleware.MessageMiddleware": _stores_messages,
}

#: Django's request-signal receivers that do no I/O on the loop. ``close_old_connections``
#: there sees the connections of the loop's own context (asgiref's ``Local``), which Django
#: never opens (it refuses to connect on the loop): none to check or close.
DJANGO_RECEIVERS = frozenset({reset_queries, close_old_connections, reset_urlconf, close_caches})


def _name(middleware: Any) -> str:
    return f"{middleware.__module__}.{middleware.__qualname__}"


def _hooks(middleware: Any) -> bool:
    """Whether ``middleware`` is MiddlewareMixin's hooks (its ``__call__`` is the mixin's)."""
    return (
        isinstance(middleware, type)
        and issubclass(middleware, MiddlewareMixin)
        and middleware.__call__ is MiddlewareMixin.__call__
        and middleware.__acall__ is MiddlewareMixin.__acall__
    )


def _declared(middleware: Any) -> bool:
    """Whether ``middleware`` declares it does not block, and can be called on the loop:
    MiddlewareMixin's hooks, or a middleware of its own async mode."""
    return getattr(middleware, FLAG, False) and (_hooks(middleware) or getattr(middleware, "async_capable", False))


def why_not_on_the_loop() -> str | None:
    """What keeps the A2A routes' ``MIDDLEWARE`` off the event loop (a middleware, or one
    with the setting that makes it block), or None: it can run there."""
    for path in settings.MIDDLEWARE:
        middleware = import_string(path)
        name = _name(middleware)
        if name in DJANGO_MIDDLEWARE:
            check = DJANGO_MIDDLEWARE[name]
            setting = check() if check is not None else None
            if setting is not None:
                return f"{path} with {setting}"
        elif not _declared(middleware):
            return path
    return None


def _loop_receivers(signal: Signal, sender: Any) -> list[Callable[..., Any]] | None:
    """The receivers ``signal.send`` would call, in its order, when it can run on the loop
    (no async receiver, each sync one known), else None."""
    sync_receivers, async_receivers = signal._live_receivers(sender)  # what send() calls
    if async_receivers or not all(r in DJANGO_RECEIVERS or getattr(r, FLAG, False) for r in sync_receivers):
        return None
    return sync_receivers


async def _hooks_on_the_loop(
    process_request: Callable[[HttpRequest], Any] | None,
    get_response: Callable[[HttpRequest], Any],
    process_response: Callable[[HttpRequest, Any], Any] | None,
    off_loop: Callable[[HttpRequest], bool] | None,
    request: HttpRequest,
) -> HttpResponseBase:
    """MiddlewareMixin's ``__call__`` with the hooks called inline (``process_response``
    off the loop when ``off_loop`` says it would write to a store)."""
    response = process_request(request) if process_request is not None else None
    response = response or await get_response(request)
    if process_response is not None:
        if off_loop is not None and off_loop(request):
            return await sync_to_async(process_response)(request, response)
        response = process_response(request, response)
    return response


def _awaitable(hook: Callable[..., Any]) -> Callable[..., Any]:
    if iscoroutinefunction(hook):
        return hook

    @functools.wraps(hook)
    async def inline(*args: Any) -> Any:
        return hook(*args)

    return inline


class LoopChain(BaseHandler):
    """``MIDDLEWARE`` loaded around the A2A views to run on the event loop (see the module
    doc); build it only when :func:`why_not_on_the_loop` says None."""

    def __init__(self) -> None:
        super().__init__()
        self.session_cookie = settings.SESSION_COOKIE_NAME.encode("latin-1")
        self._view_middleware: list[Callable[..., Any]] = []
        self._template_response_middleware: list[Callable[..., Any]] = []
        self._exception_middleware: list[Callable[..., Any]] = []
        handler = convert_exception_to_response(self._get_response_async)  # type: ignore[attr-defined]
        for path in reversed(settings.MIDDLEWARE):  # as BaseHandler.load_middleware, async
            middleware = import_string(path)
            try:
                instance = middleware(handler)
            except MiddlewareNotUsed:
                continue
            if _hooks(middleware):  # MiddlewareMixin.__call__ returns self.__acall__(request)
                instance.__acall__ = functools.partial(
                    _hooks_on_the_loop,
                    getattr(instance, "process_request", None),
                    instance.get_response,
                    getattr(instance, "process_response", None),
                    OFF_LOOP_RESPONSE.get(_name(middleware)),
                )
            if hasattr(instance, "process_view"):
                self._view_middleware.insert(0, _awaitable(instance.process_view))
            if hasattr(instance, "process_template_response"):
                self._template_response_middleware.append(_awaitable(instance.process_template_response))
            if hasattr(instance, "process_exception"):  # called off the loop, as in Django
                self._exception_middleware.append(self.adapt_method_mode(False, instance.process_exception))
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler
        self._match = functools.lru_cache(maxsize=4096)(lambda urlconf, path: get_resolver(urlconf).resolve(path))

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """Django's, with each path resolved once: a copy of its match per request (the
        view's kwargs a dict of their own, as ``process_view`` may change them)."""
        if hasattr(request, "urlconf"):  # set by a middleware: Django's way
            return super().resolve_request(request)
        found = self._match(settings.ROOT_URLCONF, request.path_info)
        match = ResolverMatch.__new__(ResolverMatch)  # a shallow copy (it refuses copy.copy)
        match.__dict__.update(found.__dict__, kwargs=dict(found.kwargs))
        request.resolver_match = match
        return match

    def takes(self, scope: dict[str, Any]) -> bool:
        """Whether this request's chain runs on the loop: not when it carries a session
        cookie (or anything that contains its name: a false alarm costs one hop)."""
        return not any(name == b"cookie" and self.session_cookie in value for name, value in scope["headers"])

    async def respond(self, handler: Any, scope: dict[str, Any], body_file: Any) -> HttpResponseBase:
        """``request_started``, the request, the chain and the view's response (not closed:
        :meth:`close` it once it is sent), in the request's ``ThreadSensitiveContext``."""
        set_script_prefix(get_script_prefix(scope))
        sender = type(handler)
        receivers = _loop_receivers(signals.request_started, sender)
        if receivers is None:
            await sync_to_async(signals.request_started.send)(sender=sender, scope=scope)
        for receiver in receivers or ():  # as send() calls them: it would look them up again
            receiver(signal=signals.request_started, sender=sender, scope=scope)
        request, error_response = handler.create_request(scope, body_file)
        response = error_response if request is None else await self.get_response_async(request)
        response._handler_class = sender  # type: ignore[union-attr]  # as Django's handlers set it
        return response

    @staticmethod
    async def close(context: ThreadSensitiveContext, response: HttpResponseBase) -> None:
        """Close ``response`` once sent (``request_finished``): on the loop when its
        receivers can run there and no piece of the request went to a thread, else on it."""
        if (
            context not in SyncToAsync.context_to_thread_executor
            and _loop_receivers(signals.request_finished, response._handler_class) is not None  # type: ignore[attr-defined]
        ):
            response.close()
        else:  # shielded: a client that leaves as a stream ends still has it closed
            await asyncio.shield(sync_to_async(response.close)())

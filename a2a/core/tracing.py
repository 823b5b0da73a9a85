"""OpenTelemetry spans for the A2A operations, the handler run, store calls and push
delivery (``A2A_TRACING``; the ``otel`` extra installs ``opentelemetry-api``).

Only the API is used: the project installs and configures the SDK and an exporter
(``TracerProvider``, ``BatchSpanProcessor``, OTLP...) as for any other library. With
tracing off (the default) or without ``opentelemetry`` installed, every helper here
returns one shared no-op context manager or None: no span, no attribute dict, no
context is built.

Spans (attributes ``a2a.task_id``, ``a2a.context_id``; the operation's also
``a2a.method``, ``a2a.binding``, ``a2a.version`` and ``a2a.tenant``):

- ``a2a <Operation>`` (SERVER), one per operation, the child of the remote span of
  an incoming W3C ``traceparent`` header (either HTTP binding);
- ``a2a.store <op>`` (INTERNAL), each task-store call of the lifecycle and the
  service layer, children of what runs them;
- ``a2a.handler`` (INTERNAL), the handler's run: its parent is the span that created
  (or continued) the task, read from the task's private ``_trace`` (the W3C
  ``traceparent`` saved with it), so the run joins the request's trace on the
  runner's thread or a queue worker, however much later;
- ``a2a.push`` (CLIENT), one webhook delivery, in the task's trace too.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, cast

from asgiref.sync import markcoroutinefunction
from django.core.signals import setting_changed

from a2a import __version__
from a2a.conf import a2a_settings
from stores.base import Task
from stores.fields import TRACE

try:
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the "otel" extra is not installed: tracing is off whatever the setting
    otel_trace = None  # type: ignore[assignment]
    TraceContextTextMapPropagator = None  # type: ignore[assignment,misc]

#: What every helper returns when tracing is off: one object, reused (nullcontext is reentrant).
OFF: AbstractContextManager[Any] = contextlib.nullcontext()

#: The task's private key holding the W3C trace context of the span that created it.
TRACE_KEY = TRACE


class Call(Protocol):
    """What an operation span reads from the call context (a2a.service.context.CallContext)."""

    @property
    def method(self) -> str: ...
    @property
    def binding(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def tenant(self) -> str: ...
    @property
    def trace(self) -> Any: ...


#: Whether spans are made, read once (a settings lookup costs more than the rest of the
#: no-op path) and read again when a test overrides a setting.
_enabled: bool | None = None


def enabled() -> bool:
    """Whether spans are made: ``A2A_TRACING`` is on and ``opentelemetry`` is installed."""
    on = _enabled
    if on is None:
        on = _read_setting()
    return on


def _read_setting() -> bool:
    global _enabled
    _enabled = otel_trace is not None and a2a_settings.TRACING
    return _enabled


def _setting_changed(**kwargs: Any) -> None:
    global _enabled
    _enabled = None


setting_changed.connect(_setting_changed, dispatch_uid="a2a.core.tracing")


@functools.cache
def _tracer() -> Any:
    return otel_trace.get_tracer("a2a", __version__)


@functools.cache
def _propagator() -> Any:
    return TraceContextTextMapPropagator()


def incoming(traceparent: str | None, tracestate: str | None = None) -> Any:
    """The OpenTelemetry context of an incoming request's W3C headers (None when
    tracing is off, or there is no ``traceparent``; an invalid one is ignored)."""
    if not traceparent or not enabled():
        return None
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    return _propagator().extract(carrier)


def operation(name: str, ctx: Call, task_id: str | None = None) -> AbstractContextManager[Any]:
    """The span of one A2A operation (``name``: ``SendMessage``, ``GetTask``...),
    current while it runs, the child of the request's incoming ``traceparent``."""
    if not enabled():
        return OFF
    attributes = {"a2a.operation": name, "a2a.method": ctx.method or name, "a2a.binding": ctx.binding}
    attributes["a2a.version"] = ctx.version
    if ctx.tenant:
        attributes["a2a.tenant"] = ctx.tenant
    if task_id:
        attributes["a2a.task_id"] = task_id
    return _tracer().start_as_current_span(
        f"a2a {name}", context=ctx.trace, kind=otel_trace.SpanKind.SERVER, attributes=attributes
    )


Function = TypeVar("Function", bound=Callable[..., Any])


def traced(name: str, *, task_id: str = "") -> Callable[[Function], Function]:
    """Decorator: each call of the operation function runs in its span (:func:`operation`).

    The function takes the call context as its parameter ``ctx``; ``task_id`` names the
    attribute of its parameter ``params`` that holds the task the span names. An
    ``async def`` runs whole in the span; an async generator (a stream) has its setup
    in it, up to its first item, since a span cannot stay current across the yields of
    a stream its caller reads. With tracing off a call is the function's own coroutine
    (or generator): one flag read, no span, no argument binding, no extra layer."""

    def decorate(function: Function) -> Function:
        if inspect.isasyncgenfunction(function):
            in_span: Callable[[AbstractContextManager[Any], Any], Any] = _stream_in_span
        elif inspect.iscoroutinefunction(function):
            in_span = _awaited_in_span
        else:
            raise TypeError(f"@traced wraps an async def or an async generator, not {function!r}")
        signature = inspect.signature(function)

        @functools.wraps(function)
        def traced_call(*args: Any, **kwargs: Any) -> Any:
            if _enabled is False or not enabled():  # (the flag first: off, that is all it costs)
                return function(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            params = bound.arguments.get("params")
            span = operation(name, bound.arguments["ctx"], getattr(params, task_id) if task_id else None)
            return in_span(span, function(*args, **kwargs))

        if in_span is _awaited_in_span:
            markcoroutinefunction(traced_call)  # still an async function to whoever asks
        return cast(Function, traced_call)

    return decorate


async def _awaited_in_span(span: AbstractContextManager[Any], call: Awaitable[Any]) -> Any:
    with span:
        return await call


async def _stream_in_span(span: AbstractContextManager[Any], items: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """``items``, the first of them made in ``span``; closed however the reader leaves."""
    with span:
        try:
            first = await anext(items)
        except StopAsyncIteration:  # an empty stream is no error
            return
    try:
        yield first
        async for item in items:
            yield item
    finally:
        await items.aclose()  # type: ignore[attr-defined]


def annotate(task: Task | None) -> None:
    """Set the task's id and context id on the current span (nothing when off)."""
    if task is None or not enabled():
        return
    span = otel_trace.get_current_span()
    if span.is_recording():
        span.set_attribute("a2a.task_id", task.get("id") or "")
        span.set_attribute("a2a.context_id", task.get("contextId") or "")


def store(op: str, task_id: str | None = None) -> AbstractContextManager[Any]:
    """The span of one task-store call (``op``: get, save, list, ...)."""
    if not enabled():
        return OFF
    attributes = {"a2a.store.operation": op}
    if task_id:
        attributes["a2a.task_id"] = task_id
    return _tracer().start_as_current_span(f"a2a.store {op}", attributes=attributes)


def carrier() -> dict[str, str] | None:
    """The current span's W3C trace context (``{"traceparent": ...}``), for a task's
    ``_trace``; None when tracing is off or no span is recording."""
    if not enabled():
        return None
    headers: dict[str, str] = {}
    _propagator().inject(headers)
    return headers or None


def inject(headers: dict[str, str]) -> None:
    """Add the current span's ``traceparent`` to an outgoing request's headers (nothing when off)."""
    if enabled():
        _propagator().inject(headers)


def _parent(task: Task) -> Any:
    saved = task.get(TRACE_KEY)
    return _propagator().extract(saved) if isinstance(saved, Mapping) else None


def _task_attributes(task: Task) -> dict[str, Any]:
    return {"a2a.task_id": task.get("id") or "", "a2a.context_id": task.get("contextId") or ""}


def handler(task: Task) -> AbstractContextManager[Any]:
    """The span of a handler run, the child of the span that created (or continued)
    the task (its ``_trace``), wherever and whenever it runs."""
    if not enabled():
        return OFF
    return _tracer().start_as_current_span("a2a.handler", context=_parent(task), attributes=_task_attributes(task))


def push(task: Task, url: str) -> AbstractContextManager[Any]:
    """The span of one webhook delivery of a task version, in the task's trace."""
    if not enabled():
        return OFF
    attributes = _task_attributes(task)
    attributes["a2a.push.state"] = (task.get("status") or {}).get("state", "")
    attributes["server.address"] = urllib.parse.urlsplit(url).hostname or ""  # not the URL: it may carry a secret
    return _tracer().start_as_current_span(
        "a2a.push", context=_parent(task), kind=otel_trace.SpanKind.CLIENT, attributes=attributes
    )

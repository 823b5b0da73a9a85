"""Event backends: how a Task's saved transitions reach streams in other processes.

Chosen by the ``A2A_EVENTS`` setting, resolved once per process (like ``CACHES``)::

    "memory"                         in-process only (the default)
    "redis://host:6379/0"            Redis pub/sub ("rediss://" and "unix://" too)
    "postgres" / "postgres:<alias>"  PostgreSQL LISTEN/NOTIFY on database "default" / <alias>
    "postgresql://user@host/db"      PostgreSQL LISTEN/NOTIFY on that database
    "pkg.module.Class"               an EventBackend subclass, built with the channel
    an EventBackend instance         used as it is

``A2A_EVENTS_CHANNEL`` names the Redis channel / PostgreSQL LISTEN channel that the
processes of one deployment share.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from a2a.conf import a2a_settings
from a2a.core.eventbackends.base import BrokerBackend, EventBackend
from a2a.core.eventbackends.memory import MemoryEventBackend

__all__ = [
    "BrokerBackend",
    "EventBackend",
    "MemoryEventBackend",
    "close_event_backend",
    "flush_events",
    "get_event_backend",
    "resolve_event_backend",
]

ACCEPTED = (
    'A2A_EVENTS must be one of: "memory"; a "redis://", "rediss://" or "unix://" URL; "postgres" or '
    '"postgres:<database alias>"; a "postgresql://" URL; a dotted path to an EventBackend class; '
    "or an EventBackend instance"
)


def _channel(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value.encode()) > 63 or "\x00" in value:
        raise ImproperlyConfigured(
            f"A2A_EVENTS_CHANNEL must be a non-empty string of at most 63 bytes (a PostgreSQL "
            f"identifier's limit), not {value!r}."
        )
    return value


def resolve_event_backend(spec: Any, channel: Any = "a2a_events") -> EventBackend:
    """Build the backend ``spec`` (an ``A2A_EVENTS`` value) names, on ``channel``.

    Raises ImproperlyConfigured, with the accepted forms, for anything else.
    """
    if isinstance(spec, EventBackend):
        return spec
    if not isinstance(spec, str):
        raise ImproperlyConfigured(f"A2A_EVENTS cannot be a {type(spec).__name__}. {ACCEPTED}")
    spec = spec.strip()
    channel = _channel(channel)
    if spec in ("", "memory"):
        return MemoryEventBackend()
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            from a2a.core.eventbackends.redis import RedisEventBackend

            return RedisEventBackend(spec, channel)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f'A2A_EVENTS is a Redis URL, but the redis package is missing ({exc}): pip install "redis>=5"'
            ) from exc
    if spec == "postgres" or spec.startswith(("postgres:", "postgresql:")):
        try:
            from a2a.core.eventbackends.postgres import PostgresEventBackend
        except ImportError as exc:
            raise ImproperlyConfigured(
                f'A2A_EVENTS is {spec!r}, but psycopg is missing ({exc}): pip install "psycopg[binary]>=3.2"'
            ) from exc
        if spec.startswith(("postgres://", "postgresql://")):
            return PostgresEventBackend(channel, conninfo=spec)
        alias = spec.partition(":")[2] or "default"
        database = settings.DATABASES.get(alias)
        if database is None:
            raise ImproperlyConfigured(
                f"A2A_EVENTS {spec!r} names database {alias!r}, which is not in DATABASES "
                f"({', '.join(settings.DATABASES) or 'none'})."
            )
        if "postgresql" not in database.get("ENGINE", ""):
            raise ImproperlyConfigured(
                f"A2A_EVENTS {spec!r} needs a PostgreSQL database, but {alias!r} is {database.get('ENGINE')!r}."
            )
        return PostgresEventBackend(channel, alias=alias)
    if "." not in spec or "/" in spec:
        raise ImproperlyConfigured(f"Unknown A2A_EVENTS {spec!r}. {ACCEPTED}")
    try:
        cls = import_string(spec)
    except ImportError as exc:
        raise ImproperlyConfigured(f"A2A_EVENTS backend {spec!r} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, EventBackend)):
        raise ImproperlyConfigured(
            f"A2A_EVENTS backend {spec!r} is not an a2a.core.eventbackends.EventBackend subclass."
        )
    takes_channel = "channel" in inspect.signature(cls).parameters
    backend: EventBackend = cls(channel=channel) if takes_channel else cls()  # type: ignore[call-arg]
    return backend


@functools.cache
def get_event_backend() -> EventBackend:
    """The project's event backend, resolved from ``A2A_EVENTS`` on first use."""
    return resolve_event_backend(a2a_settings.EVENTS, a2a_settings.EVENTS_CHANNEL)


def close_event_backend(grace: float = 5.0) -> None:
    """Send what is queued and close the backend's connections (a later event opens them again)."""
    if get_event_backend.cache_info().currsize:
        get_event_backend().close(grace)


def flush_events(timeout: float = 5.0) -> bool:
    """Block until every event this process published was sent to the broker (False
    after ``timeout`` seconds). A process that ends without running ``atexit``
    handlers (``os._exit``, as an RQ work-horse does) calls it first."""
    if not get_event_backend.cache_info().currsize:
        return True
    backend = get_event_backend()
    return backend.flush(timeout) if isinstance(backend, BrokerBackend) else True


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting in ("A2A_EVENTS", "A2A_EVENTS_CHANNEL") and get_event_backend.cache_info().currsize:
        try:
            backend = get_event_backend()
        except ImproperlyConfigured:
            backend = None
        get_event_backend.cache_clear()
        if backend is not None and not isinstance(backend, MemoryEventBackend):
            backend.close(1.0)


setting_changed.connect(_reset)

"""Events over PostgreSQL ``LISTEN/NOTIFY`` (``A2A_EVENTS = "postgres"``,
``"postgres:<alias>"`` or a ``postgresql://`` URL), with psycopg 3.

A NOTIFY payload must be shorter than 8000 bytes. An event whose message is longer (a
task with a long history or big artifacts) travels as a reference, its task id and
version: the subscribers read the task from the store and send what changed since the
version they had, a big artifact chunk as the whole artifact (``append`` false).
The store must therefore be shared by the processes (it has to be anyway).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from a2a.core.eventbackends.base import BrokerBackend

#: The ``application_name`` of the backend's connections (``pg_stat_activity``),
#: followed by the channel.
APPLICATION_NAME = "a2a-events"
#: NOTIFY refuses a payload of 8000 bytes or more (PostgreSQL's default build).
MAX_NOTIFY_PAYLOAD = 7999
#: Django's OPTIONS that are not libpq connection parameters.
_NOT_LIBPQ = {"isolation_level", "server_side_binding", "assume_role", "pool", "cursor_factory", "context"}


def conninfo_for_alias(alias: str) -> str:
    """The libpq connection string of Django database ``alias`` (a PostgreSQL one)."""
    from django.db import connections
    from psycopg.conninfo import make_conninfo

    settings_dict = connections[alias].settings_dict
    params: dict[str, Any] = {
        "dbname": settings_dict.get("NAME") or None,
        "user": settings_dict.get("USER") or None,
        "password": settings_dict.get("PASSWORD") or None,
        "host": settings_dict.get("HOST") or None,
        "port": settings_dict.get("PORT") or None,
    }
    for key, value in (settings_dict.get("OPTIONS") or {}).items():
        if key not in _NOT_LIBPQ and isinstance(value, str | int):
            params[key] = value
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


class PostgresEventBackend(BrokerBackend):
    max_payload = MAX_NOTIFY_PAYLOAD

    def __init__(self, channel: str, *, conninfo: str = "", alias: str | None = None) -> None:
        import psycopg  # noqa: F401  (fail now, not on the first event, when missing)

        super().__init__(channel)
        self.alias = alias
        self._conninfo = conninfo

    def __repr__(self) -> str:
        where = f"database {self.alias!r}" if self.alias else "URL"
        return f"<PostgresEventBackend {where} channel={self.channel!r}>"

    def conninfo(self) -> str:
        if not self._conninfo and self.alias is not None:
            self._conninfo = conninfo_for_alias(self.alias)
        return self._conninfo

    async def _connect(self) -> Any:
        import psycopg

        return await psycopg.AsyncConnection.connect(
            self.conninfo(),
            autocommit=True,
            application_name=f"{APPLICATION_NAME}:{self.channel}"[:63],
            connect_timeout=5,
            keepalives=1,
            keepalives_idle=10,
            keepalives_interval=5,
            keepalives_count=3,
        )

    async def _connect_publisher(self) -> None:
        self._publisher = await self._connect()

    async def _close_publisher(self) -> None:
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            await publisher.close()

    async def _send(self, payloads: list[bytes]) -> None:
        # One statement, one transaction: delivered together, in order (PostgreSQL
        # folds identical payloads of one transaction into one; ours differ by version).
        await self._publisher.execute(
            "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) WITH ORDINALITY AS t(payload, n) ORDER BY n",
            (self.channel, [p.decode() for p in payloads]),
        )

    async def _messages(self) -> AsyncIterator[bytes | str | None]:
        from psycopg import sql

        conn = await self._connect()
        try:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
            yield None  # LISTEN is in force once it returns (autocommit)
            async for notify in conn.notifies():
                yield notify.payload
        finally:
            await conn.close()

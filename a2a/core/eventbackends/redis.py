"""Events over Redis pub/sub (``A2A_EVENTS = "redis://host:6379/0"``), with redis-py's
asyncio client (the ``redis`` extra).

Pub/sub carries messages of any size, so every event travels whole. Channels are
global to a Redis server (the database number does not separate them): deployments
sharing one server need different ``A2A_EVENTS_CHANNEL`` values.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from a2a.core.eventbackends.base import BrokerBackend

#: The name the backend's connections carry (``CLIENT LIST``), followed by the channel.
CLIENT_NAME = "a2a-events"


class RedisEventBackend(BrokerBackend):
    def __init__(self, url: str, channel: str) -> None:
        import redis.asyncio  # noqa: F401  (fail now, not on the first event, when missing)

        super().__init__(channel)
        self.url = url

    def __repr__(self) -> str:
        return f"<RedisEventBackend {self.url.split('@')[-1]} channel={self.channel!r}>"

    def _client(self) -> Any:
        import redis.asyncio

        return redis.asyncio.Redis.from_url(
            self.url,
            client_name=f"{CLIENT_NAME}:{self.channel}",
            socket_connect_timeout=5,
            socket_keepalive=True,
            health_check_interval=10,
        )

    async def _connect_publisher(self) -> None:
        self._publisher = self._client()
        await self._publisher.ping()

    async def _close_publisher(self) -> None:
        publisher, self._publisher = self._publisher, None
        if publisher is not None:
            await publisher.aclose()

    async def _send(self, payloads: list[bytes]) -> None:
        if len(payloads) == 1:
            await self._publisher.publish(self.channel, payloads[0])
            return
        async with self._publisher.pipeline(transaction=False) as pipe:
            for payload in payloads:
                pipe.publish(self.channel, payload)
            await pipe.execute()

    async def _messages(self) -> AsyncIterator[bytes | str | None]:
        client = self._client()
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(self.channel)
            while True:
                # redis-py reconnects by itself and subscribes again: each confirmation
                # (a "subscribe" message) means the channel is heard from then on.
                message = await pubsub.get_message(timeout=30.0)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    yield None
                elif message["type"] == "message":
                    yield message["data"]
        finally:
            await _close(pubsub, client)


async def _close(pubsub: Any, client: Any) -> None:
    try:
        await pubsub.aclose()
    finally:
        await client.aclose()

"""The synchronous client: :class:`Client`, on ``httpx.Client``."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from typing import Any

import httpx

from a2a.client import core
from a2a.client.core import Effect, Plan, Steps, T
from a2a.client.operations import Operations
from a2a.protocol.model import StreamItem


class Client(Operations):
    """An A2A client for one remote agent (sync; :class:`~a2a.client.AsyncClient` is the
    same with ``await``).

    ``agent`` is the card's URL (or the agent's base URL: its well-known card is read),
    the card itself (a dict), or an :class:`~a2a.client.Interface` to speak without a
    card. The card is fetched on first use. ``http`` is an ``httpx.Client`` to send with
    (kept open: the caller owns it), ``transport`` an httpx transport for a client of
    our own (``httpx.MockTransport``, ``httpx.WSGITransport``...). The other options are
    :class:`~a2a.client.base.BaseClient`'s: ``auth`` (:mod:`a2a.client.auth`),
    ``headers``, ``timeout`` (seconds, each request), ``stream_timeout`` (seconds without
    a byte on a stream; None: wait), ``retry`` (:class:`~a2a.client.retry.RetryPolicy`),
    ``binding`` / ``version`` (only these), ``verify_signature`` with ``signature_keys``.

    Results are canonical (:mod:`a2a.protocol.model`), whatever the agent's version.
    """

    http_class = httpx.Client
    lock_class = threading.Lock
    http: httpx.Client

    def close(self) -> None:
        """Close the connections (of a client this one made)."""
        if self.owns_http:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, plan: Plan[T]) -> T:
        """The result of ``plan`` (one that emits nothing), run here."""
        steps = self._steps(plan)
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return stop.value

    def _steps(self, plan: Plan[T]) -> Generator[StreamItem, None, T]:
        """Run ``plan`` (:mod:`a2a.client.core`): its I/O done here, blocking; the items it
        emits yielded; the streams it opened closed at the end."""
        with Steps(plan) as steps:
            for effect in steps:
                if isinstance(effect, core.Emit):
                    yield effect.item
                    continue
                with steps.outcome():
                    steps.value = self._do(effect, steps.opened)
        return steps.result

    def _do(self, effect: Effect, opened: dict[httpx.Response, Iterator[str]]) -> Any:
        if isinstance(effect, core.Send):
            response = self.http.send(effect.request, stream=effect.stream, **effect.options)
            if effect.stream:
                opened[response] = response.iter_lines()
            return response
        if isinstance(effect, core.NextLine):
            return next(opened[effect.response], None)
        if isinstance(effect, core.Read):
            return effect.response.read()
        if isinstance(effect, core.Discard):
            return effect.response.close()
        if isinstance(effect, core.Sleep):
            return time.sleep(effect.seconds)
        assert isinstance(effect, core.Locked), effect
        with self.lock:
            return self._call(effect.plan)

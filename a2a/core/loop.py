"""An asyncio event loop on a daemon thread: the one way this app runs background work.

The runner (handlers, lease heartbeats), push delivery and the broker event backends
each own a :class:`LoopThread`. It starts on first use (from any thread), runs
coroutines submitted from any thread, stops once (draining what its owner asks for),
and is fork-safe: in a forked child (a pre-forking server, an RQ work-horse) the
parent's thread is not there, so the first use starts a new one (the owner's
``on_fork`` drops what was the parent's).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

_every: weakref.WeakSet[LoopThread] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for loop_thread in list(_every):
        loop_thread._forked()


os.register_at_fork(after_in_child=_after_fork_in_child)


class LoopThread:
    """A daemon thread named ``name`` running an event loop, started by :meth:`start`.

    ``on_start(loop)`` runs (on the starting thread, under the lock) each time a loop
    starts; ``on_fork()`` runs before a forked child starts its own; ``at_exit`` is
    registered with :mod:`atexit` while the loop runs (the owner's own stop, which
    drains and then calls :meth:`stop`).
    """

    def __init__(
        self,
        name: str,
        *,
        on_start: Callable[[asyncio.AbstractEventLoop], None] | None = None,
        on_fork: Callable[[], None] | None = None,
        at_exit: Callable[[], Any] | None = None,
    ) -> None:
        self.name = name
        self._on_start = on_start
        self._on_fork = on_fork
        self._at_exit = at_exit
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        _every.add(self)

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The running loop, or None when not started (or stopped); never starts one."""
        return self._loop

    @property
    def thread_alive(self) -> bool:
        """The thread of the last loop started is alive (False once :meth:`stop` returned)."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @property
    def running(self) -> bool:
        """Started, and its thread alive."""
        return self.loop is not None and self.thread_alive

    def start(self) -> asyncio.AbstractEventLoop:
        """The loop, started now if it is not running yet (any thread)."""
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
                self._loop = loop
                if self._on_start is not None:
                    self._on_start(loop)
                if self._at_exit is not None:
                    atexit.register(self._at_exit)
            return self._loop

    def _forked(self) -> None:
        """In a forked child: the parent's thread (and any lock it held) is not here."""
        self._lock = threading.Lock()
        self._loop = None
        self._thread = None
        if self._on_fork is not None:
            self._on_fork()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop (started if need be); its future, at once."""
        return asyncio.run_coroutine_threadsafe(coro, self.start())

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Call ``callback(*args)`` on the running loop; nothing when it is not running."""
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # closed meanwhile by stop()
                loop.call_soon_threadsafe(callback, *args)

    def stop(self, drain: Callable[[], Awaitable[Any]] | None = None, timeout: float = 10.0) -> bool:
        """Run ``drain()`` on the loop (for ``timeout`` seconds at most), then stop the
        loop and its thread; False when it was not running. A later :meth:`start`
        starts a new one."""
        with self._lock:
            loop, self._loop = self._loop, None
            thread = self._thread
        if loop is None:
            return False
        if drain is not None:
            try:

                async def drained() -> Any:
                    return await drain()

                asyncio.run_coroutine_threadsafe(drained(), loop).result(timeout)
            except Exception:
                logger.exception("stopping %s: draining failed", self.name)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(10)
            if not thread.is_alive():
                loop.close()
        if self._at_exit is not None:
            atexit.unregister(self._at_exit)
        return True

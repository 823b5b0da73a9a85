"""The sync handlers' threads: daemon threads, so that a stop never waits for a handler.

A sync handler cannot be interrupted. At a stop, the runner lets the tasks in flight
finish for ``A2A_SHUTDOWN_GRACE`` seconds, saves the rest as ``failed`` and lets go;
the process then exits, whatever their handlers' threads are still doing. The threads
of a :class:`concurrent.futures.ThreadPoolExecutor` are joined when the interpreter
exits: a handler sleeping for minutes kept the process up for minutes after Ctrl-C.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool(concurrent.futures.Executor):
    """At most ``workers`` daemon threads named ``name_<n>``, started as jobs come."""

    def __init__(self, workers: int, name: str) -> None:
        self._workers = workers
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)  # one release per thread waiting for a job
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._jobs.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._workers:
                name = f"{self._name}_{len(self._threads)}"
                thread = threading.Thread(target=self._work, name=name, daemon=True)
                thread.start()
                self._threads.append(thread)
        return future

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            future, fn, args, kwargs = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # as ThreadPoolExecutor: the caller sees it
                    future.set_exception(exc)
            del job, future, fn, args, kwargs  # nothing of a finished job is kept alive while waiting
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more jobs; with ``cancel_futures`` the waiting ones are canceled; each
        thread ends after its job (``wait``: this call waits for them)."""
        with self._lock:
            self._closed = True
            if cancel_futures:
                while True:
                    try:
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        break
                    if job is not None:
                        job[0].cancel()
            for _ in self._threads:
                self._jobs.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

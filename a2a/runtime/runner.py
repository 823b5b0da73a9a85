"""Background fulfilment: run each submitted Task through the project's handler.

One runner per process owns an event loop on a daemon thread, so fulfilment works
the same under an ASGI server, a WSGI server, tests and management commands. At most
``A2A_WORKERS`` tasks run at once; the rest wait their turn in ``submitted``. Sync
handlers run on a pool of the same size. Each step is a transition through
:mod:`a2a.core.lifecycle`: ``working``, then ``completed`` with the result as artifacts,
or ``failed`` with the error as the status message. A task that was canceled (or
otherwise settled) meanwhile keeps its terminal state: the result is dropped.

:meth:`Runner.shutdown` (called on ASGI lifespan shutdown and at exit) lets the
tasks in flight finish for ``A2A_SHUTDOWN_GRACE`` seconds, then saves the rest as
``failed`` with a message saying the server stopped, so no task is left
``working`` by a clean stop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import enum
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeGuard

from asgiref.sync import iscoroutinefunction

from a2a import push
from a2a.agents import DEFAULT_AGENT, Agent, UnknownAgent, agent_of, get_agent, store_of
from a2a.conf import a2a_settings
from a2a.core import leases, lifecycle, retry, tracing
from a2a.core.events import bus, get_event_backend
from a2a.core.loop import LoopThread
from a2a.handlers import (
    AgentHandler,
    HandlerRequest,
    TaskOutcome,
    failure_message,
    handler_instance,
    loaded_handler,
    with_result_metadata,
)
from a2a.protocol.model import Message, text_part
from a2a.runtime import reaper
from a2a.runtime.direct import DirectReply
from a2a.runtime.executors import Executor, Submits
from a2a.runtime.handler_thread import (
    NOT_RUN,
    SAVED,
    START_FAILED,
    Running,
    call_sync,
    result_change,
    resume_start,
    start_and_call,
    start_working,
    without_files,
)
from a2a.runtime.pool import DaemonPool
from a2a.runtime.refusals import Unsavable, refused_by_store, unsavable
from stores.base import StaleTaskError, Task, TaskStore
from stores.fields import task_version
from stores.scope import task_agent

logger = logging.getLogger(__name__)

SHUTDOWN_MESSAGE = "The server shut down before this task finished; send the message again."


#: The change that settles a task in a state (see :func:`a2a.core.lifecycle.settle`).
_finish = lifecycle.settle


def _hears_other_processes() -> bool:
    """Whether the event backend carries other processes' events here (A2A_EVENTS)."""
    try:
        return bool(get_event_backend().remote)
    except Exception:  # misconfigured: a2a.E060 says so
        return False


def _is_async(handler: object) -> TypeGuard[Callable[[HandlerRequest], Awaitable[object]]]:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    return iscoroutinefunction(handler) or iscoroutinefunction(type(handler).__dict__.get("__call__"))


class _StartFailed(Exception):
    """The ``working`` save on the handler's thread raised: the loop tries again."""


class _OnThread(enum.Enum):
    """What :meth:`Runner._run_on_thread` did with a task."""

    RAN = "ran"  # the run is over
    NOT_FOR_IT = "not for it"  # the loop's way (Runner._run) starts it
    START_FAILED = "start failed"  # the working save raised there: the loop resumes it


async def _save_outcome(store: TaskStore, task_id: str, change: Callable[[Task], Task | None]) -> None:
    """Save the handler's outcome; while the store cannot be reached (a database
    restarting), try again with backoff, for up to ten leases: the result is kept
    rather than the task failed as lost. Safe however long it takes: the save is a
    compare-and-swap that drops the result when the task was settled or taken over
    meanwhile (its lease ran out during the outage and another process reaped it).

    An outcome the store refuses (:func:`~a2a.runtime.refusals.refused_by_store`: a value it cannot hold, a broken
    constraint, a task that cannot be serialized) is never saved by trying again: the
    task fails at once, its status message naming the reason."""
    await _persist(store, task_id, change, change, "save the outcome of")


async def _persist(
    store: TaskStore, task_id: str, change: lifecycle.Change, again: lifecycle.Change, what: str
) -> Task | None:
    """``change`` through :func:`lifecycle.transition`; while the store cannot be
    reached, ``again`` with backoff, for up to ten leases (the heartbeat renews the
    task's lease meanwhile: it is one of the runner's jobs). A change the store
    refuses fails the task at once instead (see :func:`_save_outcome`)."""
    deadline = time.monotonic() + 10 * leases.lease_seconds()
    failures = 0
    failing = False
    while True:
        try:
            return await lifecycle.transition(store, task_id, change)
        except StaleTaskError:
            raise  # lost a race ten times over: not an outage
        except Exception as exc:
            refused = refused_by_store(exc)
            if refused is not None and not failing:
                logger.error("task %s: the store refused its outcome; failing it (%s)", task_id, refused, exc_info=exc)
                change = again = unsavable(refused)
                failing = True
                continue
            failures += 1
            delay = retry.backoff(failures, base=0.05, cap=1.0)
            if refused is not None or time.monotonic() + delay > deadline:
                raise
            logger.warning("could not %s task %s (%s); trying again", what, task_id, exc)
            await asyncio.sleep(delay)
            change = again


class Runner:
    """Fulfils tasks in the background of this process."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._thread = LoopThread("a2a-runner", on_start=self._on_loop_start, at_exit=self.shutdown)
        self._pool: DaemonPool | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._jobs: dict[str, asyncio.Task[None]] = {}
        self._agents: dict[str, str] = {}  # task id -> the name of its agent (whose store holds it)
        self._running: dict[str, Running] = {}
        self._deferred: set[str] = set()  # direct handlers' tasks not created yet
        self._hooks: set[asyncio.Future[None]] = set()  # AgentHandler.cancel() calls running
        self._maintenance: concurrent.futures.Future[None] | None = None

    @property
    def started(self) -> bool:
        """The runner was started (on its first task, or with :meth:`start`) and not shut down."""
        return self._thread.loop is not None

    @property
    def alive(self) -> bool:
        """Started, and its loop's thread is alive."""
        return self._thread.running

    def start(self) -> None:
        """Start the runner now (the ASGI lifespan does): expired leases are checked at once."""
        self._thread.start()

    def _on_loop_start(self, loop: asyncio.AbstractEventLoop) -> None:
        # Sync handlers get a pool of their own (daemon threads: a stop does not wait for
        # them after the grace); store I/O uses the loop's default one.
        self._pool = DaemonPool(self.workers, "a2a-handler")
        # Lease heartbeats and expired-lease checks (a2a.runtime.reaper), for the loop's life.
        self._maintenance = asyncio.run_coroutine_threadsafe(reaper.maintain(self), loop)

    def submit(self, task_id: str, agent: str = "") -> concurrent.futures.Future[None]:
        """Queue the task of agent ``agent`` ("": the default agent) for fulfilment; returns at once."""
        return self._thread.submit(self._enqueue(task_id, functools.partial(self._fulfil, task_id, agent), agent))

    def answer(self, task: Task) -> concurrent.futures.Future[Task | Message]:
        """Run a :func:`~a2a.handlers.direct_reply` handler on the unsaved new ``task``:
        the future holds the direct Message when the handler answered with a Reply
        before doing anything task-visible (no task is ever saved), else the task as
        created (``working``) the moment it was, the handler going on as for any task."""
        direct = DirectReply(task, on_created=lambda created: self._deferred.discard(created["id"]))
        self._deferred.add(task["id"])
        run = functools.partial(self._answer, direct)
        job = self._thread.submit(self._enqueue(task["id"], run, task_agent(task)))
        job.add_done_callback(direct.ended)  # never leave the caller waiting
        return direct.answer

    async def _enqueue(self, task_id: str, run: Callable[[], Awaitable[None]], agent: str) -> None:
        """``run()`` the task's job (of agent ``agent``) when a worker is free."""
        job = asyncio.current_task()
        assert job is not None
        # A second job for a task this process already has (the queue executor may hold
        # two, see a2a.runtime.executors) waits for the first to end, then finds the task started
        # or settled. Replacing the first in _jobs would end its lease heartbeats while
        # its handler runs, and the reaper here would fail the task.
        while (earlier := self._jobs.get(task_id)) is not None:
            await asyncio.wait([earlier])
        self._jobs[task_id] = job
        self._agents[task_id] = agent
        try:
            if self._semaphore is None:
                self._semaphore = asyncio.Semaphore(self.workers)
            async with self._semaphore:
                await run()
        except Exception:
            logger.exception("fulfilling task %s failed outside the handler", task_id)
        finally:
            self._jobs.pop(task_id, None)
            self._agents.pop(task_id, None)
            self._deferred.discard(task_id)

    async def _fulfil(self, task_id: str, agent: str) -> None:
        store = store_of(agent)
        on_thread = await self._run_on_thread(store, task_id, agent)
        if on_thread is _OnThread.RAN:
            return
        # A store that cannot be reached (or a save whose outcome was lost) is tried
        # again: the task is not given up as "not started" while it may have started
        # (on the handler's thread, whose save raised: then it is resumed).
        first = start_working if on_thread is _OnThread.NOT_FOR_IT else resume_start
        task = await _persist(store, task_id, first, resume_start, "start")
        if task is not None:
            await self._run(store, task)

    async def _answer(self, direct: DirectReply) -> None:
        try:
            await self._run(store_of(task_agent(direct.task)), direct.task, direct)
        except Exception as exc:
            direct.fail(exc)
            raise

    async def _run(self, store: TaskStore, task: Task, direct: DirectReply | None = None) -> None:
        """Run the handler on ``task`` (``working``; with ``direct``, not saved yet: see
        :meth:`answer`) and save its outcome."""
        task_id = task["id"]
        running = self._running[task_id] = Running()
        began = time.monotonic()
        # A task not saved yet has no events to watch (once saved, the heartbeat looks).
        hears = direct is None and _hears_other_processes()
        watch = asyncio.ensure_future(self._watch(store, task)) if hears else None
        try:
            change = await self._outcome(task_id, running, self._handle(store, task, running, direct))
        finally:
            self._running.pop(task_id, None)
            if watch is not None:
                watch.cancel()
        if change is None:
            return
        if direct is not None:  # nothing task-visible yet, but an outcome for a task: create it
            await direct.create(store)
        await _save_outcome(store, task_id, change)
        logger.debug("task %s settled in %.3fs", task_id, time.monotonic() - began)

    async def _run_on_thread(self, store: TaskStore, task_id: str, agent: str) -> _OnThread:
        """A sync handler on a blocking store: the ``working`` save, the handler and its
        outcome's save on one job of the handler's pool (:func:`start_and_call`: one
        thread hop where there were two). Not for an async or not yet loaded handler, a
        store that does not block, or other processes' events to watch (:meth:`_run`)."""
        if store.nonblocking or _hears_other_processes():
            return _OnThread.NOT_FOR_IT
        try:
            owner = get_agent(agent or DEFAULT_AGENT)
        except UnknownAgent:
            return _OnThread.NOT_FOR_IT
        instance = loaded_handler(owner.settings.HANDLER)
        call = instance.handle if isinstance(instance, AgentHandler) else instance
        if instance is None or _is_async(call):
            return _OnThread.NOT_FOR_IT
        running = self._running[task_id] = Running(instance=instance)
        job = functools.partial(contextvars.copy_context().run, start_and_call, store, task_id, call, running)
        running.handler = asyncio.get_running_loop().run_in_executor(self._pool, job)
        try:
            change = await self._outcome(task_id, running, self._handled(running, task_id, owner))
        except _StartFailed:
            return _OnThread.START_FAILED
        finally:
            self._running.pop(task_id, None)
        if change is not None:
            await _save_outcome(store, task_id, change)
        return _OnThread.RAN

    async def _handled(self, running: Running, task_id: str, agent: Agent) -> lifecycle.Change | None:
        """What :meth:`_run_on_thread`'s job returned, as a change to save (or None)."""
        assert running.handler is not None
        result = await running.handler
        if result is START_FAILED:
            raise _StartFailed
        if result is NOT_RUN or running.request is None:
            return None
        return await self._change_for(result, running.request, task_id, agent)

    async def _outcome(
        self, task_id: str, running: Running, run: Awaitable[lifecycle.Change | None]
    ) -> lifecycle.Change | None:
        """The change that saves how the handler's ``run`` ended; None when there is
        nothing to save (it settled the task itself, answered directly, was canceled)."""
        try:
            return await run
        except _StartFailed:
            raise
        except TaskOutcome as outcome:  # the handler asks for input (or auth), fails or rejects on purpose
            logger.info("task %s: the handler ended it %s: %s", task_id, outcome.state, outcome)
            references = outcome.reference_task_ids
            change = _finish(outcome.state, parts=outcome.parts, in_history=outcome.in_history, references=references)
            return with_result_metadata(change, outcome)
        except asyncio.CancelledError:
            if running.cancelled.is_set():
                logger.info("task %s canceled while running", task_id)
                return None  # CancelTask already saved "canceled"
            raise  # the runner is shutting down
        except Exception as exc:  # the handler failed: the task fails, the server does not
            logger.error("task %s: the handler raised %s; the task fails", task_id, type(exc).__name__, exc_info=exc)
            return _finish("failed", parts=[text_part(failure_message(exc))])

    async def _handle(
        self, store: TaskStore, task: Task, running: Running, direct: DirectReply | None
    ) -> lifecycle.Change | None:
        """Load the handler, call it on ``task`` and turn what it returned into a change."""
        agent = agent_of(task)
        path = agent.settings.HANDLER  # the handler of the agent that created the task
        instance = loaded_handler(path) or await asyncio.to_thread(handler_instance, path)
        running.instance = instance
        request = running.request = HandlerRequest.for_task(task, running.cancelled, store)
        if direct is not None:
            direct.defer(request)
        if running.cancelled.is_set():  # canceled while the handler was being loaded: it never runs
            raise asyncio.CancelledError
        with tracing.handler(task):  # in the trace of the request that created the task
            # A task not created yet (a direct reply's) has no outcome to save on the way.
            settles = store if direct is None and not store.nonblocking else None
            call = instance.handle if isinstance(instance, AgentHandler) else instance
            running.handler = self._call(call, request, settles)
            result = await running.handler
        return await self._change_for(result, request, task["id"], agent, direct)

    async def _change_for(
        self,
        result: object,
        request: HandlerRequest,
        task_id: str,
        agent: Agent,
        direct: DirectReply | None = None,
    ) -> lifecycle.Change | None:
        """The change that saves what the handler returned; None when there is nothing
        to save (its thread saved it, it settled the task itself, a direct answer)."""
        if result is SAVED:
            return None
        if isinstance(result, Unsavable):
            return unsavable(result.reason)
        if request.settled:
            if result is not None:
                logger.warning(
                    "task %s: the handler set %s, then returned %s: ignored",
                    task_id,
                    request.settled,
                    type(result).__name__,
                )
            return None
        if direct is not None and direct.replied(result):
            return None  # the answer: no task is created
        if without_files(result):  # no file part to write to the storage: no thread hop
            return result_change(result, task_id, agent)
        return await asyncio.to_thread(result_change, result, task_id, agent)

    def _call(
        self, handler: Callable[[HandlerRequest], object], request: HandlerRequest, store: TaskStore | None = None
    ) -> asyncio.Future[object]:
        """The handler's call on ``request``: on the loop when async, else on the pool,
        its thread seeing the current trace span (and saving the outcome in ``store``:
        :func:`call_sync`)."""
        if _is_async(handler):
            return asyncio.ensure_future(handler(request))
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, call_sync, handler, request, store)
        return asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def _watch(self, store: TaskStore, working: Task) -> None:
        """While the handler runs: stop it as soon as an event from any process shows
        the task settled (canceled through another web process) or taken over, rather
        than at the next lease heartbeat (a third of ``A2A_LEASE_SECONDS``). Events of
        versions up to ``working`` (the version this run began with) are old news, late from the
        broker: their lease is the one before ours."""
        task_id, version = working["id"], task_version(working)
        try:
            with bus.subscribe(task_id, store) as events:
                while True:
                    event = await events.get()
                    if event.version <= version:
                        continue
                    if lifecycle.is_terminal(event.task) or leases.taken_over(event.task):
                        self.cancel(task_id)
                        return
        except asyncio.CancelledError:
            raise
        except Exception:  # the heartbeat still notices; never fail the task over this
            logger.debug("watching task %s for a cancel failed", task_id, exc_info=True)

    def cancel(self, task_id: str) -> None:
        """Stop the handler of a task running here (its state is saved by the caller);
        an :class:`~a2a.handlers.AgentHandler`'s ``cancel()`` hears of it."""
        running = self._running.get(task_id)
        if running is None:
            return
        if running.request is not None and running.request.settled:
            return  # the handler settled the task itself and is finishing up
        running.cancelled.set()
        if running.handler is not None:
            self._thread.call_soon(running.handler.cancel)
        if isinstance(running.instance, AgentHandler) and running.request is not None:
            self._thread.call_soon(functools.partial(self._on_cancel, running.instance, running.request))

    def _on_cancel(self, instance: AgentHandler, request: HandlerRequest) -> None:
        """Run the handler's ``cancel()`` hook (sync in the pool, async on the loop)."""

        async def hook() -> None:
            try:
                if iscoroutinefunction(instance.cancel):
                    await instance.cancel(request)
                else:
                    await asyncio.get_running_loop().run_in_executor(self._pool, instance.cancel, request)
            except Exception:
                logger.exception("task %s: the handler's cancel() raised", request.task_id)

        self._hooks.add(future := asyncio.ensure_future(hook()))
        future.add_done_callback(self._hooks.discard)

    def shutdown(self, grace: float | None = None) -> None:
        """Let running tasks finish for ``grace`` seconds, then fail the rest honestly."""
        grace = a2a_settings.SHUTDOWN_GRACE if grace is None else grace

        async def drain() -> None:
            await self._drain(grace)
            if self._maintenance is not None:
                self._maintenance.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.get_running_loop().shutdown_default_executor(), 10)

        if not self._thread.stop(drain, timeout=grace + 40):
            return
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._semaphore = None
        push.shutdown()  # deliver (or drop) the push notifications of the last transitions

    async def _drain(self, grace: float) -> None:
        jobs, agents = dict(self._jobs), dict(self._agents)  # a canceled job forgets its agent
        if not jobs:
            return
        _, pending = await asyncio.wait(jobs.values(), timeout=grace)
        if not pending:
            return
        for job in pending:
            job.cancel()
        await asyncio.wait(pending, timeout=5)
        unfinished = [task_id for task_id, job in jobs.items() if job in pending]
        logger.warning("shutting down with %d unfinished task(s); saving them as failed", len(unfinished))
        for task_id in unfinished:
            try:
                store = store_of(agents.get(task_id))
                await lifecycle.transition(store, task_id, _finish("failed", parts=[text_part(SHUTDOWN_MESSAGE)]))
            except Exception:
                logger.exception("could not save task %s as failed at shutdown", task_id)

    def task_ids(self) -> set[str]:
        """The tasks submitted here and not yet settled (running or waiting); a direct
        handler's task counts once it exists."""
        return set(self._jobs) - self._deferred

    def agent_name(self, task_id: str) -> str:
        """The name of the agent of a task submitted here ("": the default agent's, or unknown here)."""
        return self._agents.get(task_id, "")

    @property
    def active(self) -> int:
        """Tasks submitted here and not yet settled (running or waiting)."""
        return len(self._jobs)


_runner: Runner | None = None
_runner_lock = threading.Lock()


def get_runner() -> Runner:
    """This process's runner, created on first use with ``A2A_WORKERS`` workers."""
    global _runner
    with _runner_lock:
        if _runner is None:
            _runner = Runner(a2a_settings.WORKERS)
        return _runner


def current_runner() -> Runner | None:
    """This process's runner if it was created (health and metrics look without starting one)."""
    return _runner


class ThreadExecutor(Executor):
    """``A2A_EXECUTOR = "thread"``: tasks run on the runner of the process that accepted them."""

    def __repr__(self) -> str:
        return "<ThreadExecutor>"

    def dispatch(self, task_id: str, runner: Submits | None = None, agent: str = "") -> None:
        (runner or get_runner()).submit(task_id, agent)

    async def adispatch(self, task_id: str, agent: str = "") -> None:
        self.dispatch(task_id, None, agent)  # a submit only schedules on the runner's loop

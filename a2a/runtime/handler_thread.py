"""A sync handler's run on its pool thread: the handler called, its outcome saved there.

A sync handler may block, so it runs on a thread of the runner's pool. On a store that
blocks too, the thread saves what the handler returned before it lets go
(:func:`call_sync`), and, for a task the runner starts there, the ``working`` save
before the handler (:func:`start_and_call`): one thread hop per run, where a save on
the runner's loop would be a hop of its own. What the runner's loop does with what the
thread returns is :class:`a2a.runtime.runner.Runner`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import close_old_connections

from a2a.agents import Agent
from a2a.core import files, leases, lifecycle, tracing
from a2a.handlers import (
    Cancellation,
    HandlerRequest,
    Reply,
    Result,
    result_message,
    to_artifacts,
    with_result_metadata,
)
from a2a.protocol.model import set_status
from a2a.runtime.refusals import Unsavable, refused_by_store
from stores.base import TERMINAL_STATES, Task, TaskStore
from stores.fields import task_state

logger = logging.getLogger(__name__)


@dataclass
class Running:
    cancelled: Cancellation = field(default_factory=Cancellation)
    handler: asyncio.Future[object] | None = None
    request: HandlerRequest | None = None
    instance: object = None


def start_working(task: Task) -> Task | None:
    """``submitted`` -> ``working`` under this process's lease; None (logged, with the
    reason) when this process may not start it: a task left unstarted is never silent."""
    state = task_state(task)
    reason = f"it is {state} already" if state != "submitted" else leases.held_elsewhere(task)
    if reason is not None:
        # Canceled (or otherwise settled) before it started: nothing is wrong.
        level = logging.INFO if state in TERMINAL_STATES else logging.WARNING
        logger.log(level, "task %s (%s) not started here: %s", task["id"], state, reason)
        return None
    leases.start(task)  # the lease says this process runs it (see a2a.core.leases)
    return set_status(task, "working")


def resume_start(task: Task) -> Task | None:
    """:func:`start_working` again after an attempt that raised: a task already
    ``working`` under this process's lease was started by that attempt (its save was
    done, only the reply was lost), so this run goes on with it (the lease renewed)."""
    if task_state(task) == "working" and leases.is_ours(task):
        return leases.renew(task)
    return start_working(task)


#: What a sync handler's call returns when its thread saved the outcome itself.
SAVED = object()


def call_sync(
    handler: Callable[[HandlerRequest], object], request: HandlerRequest, store: TaskStore | None = None
) -> object:
    """The handler's call on its pool thread. With a blocking ``store``, the outcome of
    a plain return is saved there too, before the thread lets go (one thread hop per run
    instead of two: the save would block the loop otherwise); a save that raises is left
    to the loop, which tries again (:func:`_save_outcome`)."""
    close_old_connections()  # as Django does around a request
    try:
        result = handler(request)
        if store is None or request.settled:
            return result
        try:
            lifecycle.transition_sync(store, request.task_id, result_change(result, request.task_id, request.agent))
        except Exception as exc:
            refused = refused_by_store(exc)
            if refused is not None:  # never tried again: the task fails (see _persist)
                logger.error("task %s: the store refused its outcome; failing it (%s)", request.task_id, refused)
                return Unsavable(refused)
            logger.debug("task %s: saving the outcome on the handler's thread failed (%s)", request.task_id, exc)
            return result
        return SAVED
    finally:
        close_old_connections()


#: What :func:`start_and_call` returns when the task was not to run (settled or taken
#: meanwhile, or canceled before its handler ran), and when its ``working`` save raised.
NOT_RUN = object()
START_FAILED = object()


def start_and_call(
    store: TaskStore, task_id: str, handler: Callable[[HandlerRequest], object], running: Running
) -> object:
    """On the handler's pool thread: the ``working`` save, then the handler and its
    outcome's save (:func:`call_sync`), as :meth:`Runner._run` does them in two hops."""
    close_old_connections()  # as Django does around a request
    try:
        task = lifecycle.transition_sync(store, task_id, start_working)
    except Exception as exc:
        logger.debug("task %s: starting it on the handler's thread failed (%s)", task_id, exc)
        return START_FAILED
    if task is None:
        return NOT_RUN
    request = running.request = HandlerRequest.for_task(task, running.cancelled, store)
    if running.cancelled.is_set():  # canceled before its handler ran: it never runs
        return NOT_RUN
    with tracing.handler(task):  # in the trace of the request that created the task
        return call_sync(handler, request, store)


def result_change(result: object, task_id: str, agent: Agent) -> lifecycle.Change:
    """The change that saves what the handler returned (its large file parts written to
    the storage first: a2a.core.files)."""
    if isinstance(result, Reply):
        return lifecycle.settle("completed", parts=result.parts, in_history=True, reply=True)
    message = result_message(result)
    artifacts = to_artifacts(result)
    offloaded = files.offload_artifacts(artifacts, task_id, agent)
    change = lifecycle.settle("completed", artifacts=artifacts, parts=message, in_history=True)
    return with_result_metadata(files.marked(change) if offloaded else change, result)


def without_files(result: object) -> bool:
    """Whether ``result`` carries no file part (text, nothing, a Reply, or parts or
    artifacts of text and data; a :class:`~a2a.handlers.Result` of any of these), so
    :func:`result_change` does no I/O."""
    inner = result.result if isinstance(result, Result) else result
    if isinstance(inner, list):
        return all(_is_plain_part(i) or _is_plain_artifact(i) for i in inner)
    return inner is None or isinstance(inner, str | Reply)


def _is_plain_part(value: object) -> bool:
    return isinstance(value, dict) and value.get("kind") in ("text", "data")


def _is_plain_artifact(value: object) -> bool:
    parts = value.get("parts") if isinstance(value, dict) else None
    return isinstance(parts, list) and all(map(_is_plain_part, parts))

"""One function per A2A operation, written once for every binding and dialect.

Each takes parsed, canonical parameters (``a2a.protocol.model``) and returns
canonical objects; errors are ``a2a.protocol.errors`` exceptions. The task store is
the single source of truth: every answer about a task is read from it.
"""

from __future__ import annotations

import asyncio

from stores.base import TaskPage, TaskQuery
from stores.resolve import get_task_store

from . import lifecycle
from .conf import a2a_settings
from .events import bus
from .protocol.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from .protocol.model import (
    INTERRUPTED_STATES,
    SETTLED_STATES,
    CancelParams,
    GetParams,
    ListParams,
    Message,
    SendParams,
    Task,
    new_id,
    new_task,
    set_status,
    task_state,
    with_history,
)
from .runner import get_runner


async def send_message(params: SendParams) -> Task | Message:
    """Start a task for the message (or continue the interrupted task it names)."""
    store = get_task_store()
    message = params.message
    if message.get("taskId"):
        task = await _continue(message)
    else:
        context_id = message.get("contextId") or new_id()
        task = await lifecycle.create(store, new_task(message, context_id=context_id, metadata=params.metadata))
    task_id = task["id"]
    runner = get_runner()
    if not params.blocking:
        runner.submit(task_id)
        return with_history(task, params.history_length)
    with bus.subscribe(task_id) as events:  # subscribe first: no transition can slip by
        runner.submit(task_id)
        try:
            async with asyncio.timeout(float(a2a_settings.BLOCKING_TIMEOUT)):
                while task_state((await events.get()).task) not in SETTLED_STATES:
                    pass
        except TimeoutError:
            pass  # answer with the task as it stands; it goes on in the background
    settled = await store.aget(task_id)
    if settled is None:
        raise TaskNotFoundError(task_id)
    return with_history(settled, params.history_length)


async def _continue(message: Message) -> Task:
    """Append a follow-up message to a task waiting for input and resubmit it."""
    task_id = message["taskId"]

    def change(task: Task) -> Task:
        state = task_state(task)
        if lifecycle.is_terminal(task):
            raise UnsupportedOperationError(
                f"Task {task_id} is {state} and cannot take more messages; start a new task "
                f"(you may reuse its contextId)"
            )
        if state not in INTERRUPTED_STATES:
            raise UnsupportedOperationError(f"Task {task_id} is still {state}; wait for it or cancel it")
        if message.get("contextId") and message["contextId"] != task.get("contextId"):
            raise InvalidParamsError("does not match the task's contextId", field="message.contextId")
        task["history"] = [*(task.get("history") or ()), {**message, "contextId": task.get("contextId", "")}]
        return set_status(task, "submitted")

    task = await lifecycle.transition(get_task_store(), task_id, change)
    if task is None:
        raise TaskNotFoundError(task_id)
    return task


async def get_task(params: GetParams) -> Task:
    task = await get_task_store().aget(params.id)
    if task is None:
        raise TaskNotFoundError(params.id)
    return with_history(task, params.history_length)


async def cancel_task(params: CancelParams) -> Task:
    """Cancel a task that has not settled; a terminal task stays as it is."""

    def change(task: Task) -> Task:
        if lifecycle.is_terminal(task):
            raise TaskNotCancelableError(
                f"Task {params.id} is {task_state(task)} and cannot be canceled",
                metadata={"taskId": params.id},
            )
        return set_status(task, "canceled")

    task = await lifecycle.transition(get_task_store(), params.id, change)
    if task is None:
        raise TaskNotFoundError(params.id)
    get_runner().cancel(params.id)
    return task


async def list_tasks(params: ListParams) -> TaskPage:
    try:
        query = TaskQuery(
            context_id=params.context_id,
            state=params.state,
            updated_after=params.updated_after,
            page_size=params.page_size,
            page_token=params.page_token,
        )
        page = await get_task_store().alist(query)
    except ValueError as exc:
        raise InvalidParamsError(str(exc), field="pageToken" if "token" in str(exc) else None) from None
    tasks = []
    for task in page.tasks:
        task = with_history(task, params.history_length)
        if not params.include_artifacts and "artifacts" in task:
            task = {k: v for k, v in task.items() if k != "artifacts"}
        tasks.append(task)
    page.tasks = tasks
    return page

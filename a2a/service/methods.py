"""Every A2A method by name, as one function of (dialect, params, call context): parse
the params in the caller's dialect, run the operation, render its result in the same
dialect. The JSON-RPC binding routes each request's ``method`` here, the HTTP+JSON
binding each route (:data:`a2a.http.rest.ROUTES`), and the gRPC binding calls the same
functions with the v1.0 dialect (its messages read as ProtoJSON), so a method is written
once for all three. A method's cross-cutting checks are decorators here
(:func:`push_method`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.core import replay
from a2a.protocol import Dialect
from a2a.protocol.model import StreamItem
from a2a.service import operations, push_configs, streams
from a2a.service.card import extended_card
from a2a.service.context import CallContext

Method = Callable[[Dialect, Any, CallContext], Awaitable[Any]]


async def send(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return d.render_send_result(await operations.send_message(d.parse_send(params), ctx))


async def get(d: Dialect, params: Any, ctx: CallContext) -> Any:
    """GetTask; a long-poll (``currentGeneration``) that must wait is :class:`Held`."""
    parsed = d.parse_get(params)
    if parsed.current_generation is None:
        return d.render_task(await operations.get_task(parsed, ctx))
    now = await operations.get_task(dataclasses.replace(parsed, current_generation=None), ctx)
    if streams.answered_at_once(now, parsed.current_generation):
        return d.render_task(now)

    async def answer() -> Any:
        return d.render_task(await operations.get_task(parsed, ctx))

    return Held(answer)


async def cancel(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return d.render_task(await operations.cancel_task(d.parse_cancel(params), ctx))


async def list_tasks(d: Dialect, params: Any, ctx: CallContext) -> Any:
    query = d.parse_list(params)
    page = await operations.list_tasks(query, ctx)
    return d.render_list([d.render_task(t) for t in page.tasks], page.next_page_token, query.page_size, page.total_size)


def push_method(method: Method) -> Method:
    """``method``, a push-config method: PushNotificationNotSupportedError while
    ``A2A_PUSH_NOTIFICATIONS`` is off, before its params are read, so the answer is the
    same whatever they are (a SendMessage's config is checked by
    :func:`a2a.service.push_configs.check_send_config`)."""

    @functools.wraps(method)
    async def checked(d: Dialect, params: Any, ctx: CallContext) -> Any:
        push_configs.ensure_enabled()
        return await method(d, params, ctx)

    return checked


@push_method
async def push_create(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return d.render_push_config(await push_configs.create_config(ctx, d.parse_push_create(params)))


@push_method
async def push_get(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return d.render_push_config(await push_configs.get_config(ctx, d.parse_push_get(params)))


@push_method
async def push_list(d: Dialect, params: Any, ctx: CallContext) -> Any:
    page = await push_configs.list_configs(ctx, d.parse_push_list(params))
    return d.render_push_list(page.configs, page.next_page_token)


@push_method
async def push_delete(d: Dialect, params: Any, ctx: CallContext) -> Any:
    await push_configs.delete_config(ctx, d.parse_push_delete(params))
    return d.render_push_deleted()


class Stream:
    """What a streaming method returns: the operation's items, rendered as SSE later."""

    def __init__(self, items: AsyncIterator[StreamItem]) -> None:
        self.items = items


class Held:
    """What a method returns when its answer waits on the event bus (a long-poll
    GetTask): ``answer()`` gives the rendered result once it is known. An HTTP binding
    sends the response's head at once and its body then, so no thread waits meanwhile
    (the middleware chain's worker is free once the head is out: a2a/http/chain.py);
    gRPC, which has no such worker, awaits it."""

    def __init__(self, answer: Callable[[], Awaitable[Any]]) -> None:
        self.answer = answer


async def stream(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return Stream(operations.stream_message(d.parse_send(params), ctx))


async def subscribe(d: Dialect, params: Any, ctx: CallContext) -> Any:
    parsed = d.parse_get(params)
    metadata = params.get("metadata") if isinstance(params, dict) else None
    parsed.last_event_id = replay.last_event_id(ctx.last_event_id, metadata)  # resumable streams
    return Stream(operations.subscribe_to_task(parsed, ctx))


async def extended(d: Dialect, params: Any, ctx: CallContext) -> Any:
    return extended_card(d, ctx)


#: Method name (v1.0 and v0.3 spellings) -> implementation.
METHODS: dict[str, Method] = {
    "SendMessage": send,
    "message/send": send,
    "GetTask": get,
    "tasks/get": get,
    "CancelTask": cancel,
    "tasks/cancel": cancel,
    "ListTasks": list_tasks,
    "tasks/list": list_tasks,
    "SendStreamingMessage": stream,
    "message/stream": stream,
    "SubscribeToTask": subscribe,
    "tasks/resubscribe": subscribe,
    "CreateTaskPushNotificationConfig": push_create,
    "GetTaskPushNotificationConfig": push_get,
    "ListTaskPushNotificationConfigs": push_list,
    "DeleteTaskPushNotificationConfig": push_delete,
    "tasks/pushNotificationConfig/set": push_create,
    "tasks/pushNotificationConfig/get": push_get,
    "tasks/pushNotificationConfig/list": push_list,
    "tasks/pushNotificationConfig/delete": push_delete,
    "GetExtendedAgentCard": extended,
    "agent/getAuthenticatedExtendedCard": extended,
}

"""The push-notification config operations (Create/Get/List/DeleteTaskPushNotificationConfig,
and the config a SendMessage carries), for every binding and dialect: canonical params
of :mod:`a2a.protocol.model` in, config dicts out (see :mod:`a2a.push` for their shape
and their delivery). Configs live in the push-config store of the task store."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from a2a.conf import a2a_settings
from a2a.core import tracing
from a2a.protocol.errors import A2AError, InvalidParamsError, PushNotificationNotSupportedError, TaskNotFoundError
from a2a.protocol.model import PushConfigListParams, PushConfigParams, PushConfigRef, new_id
from a2a.push import delivery, guard
from a2a.service import page_tokens
from a2a.service.context import CallContext, load_task
from stores.cursors import decode_cursor, encode_cursor
from stores.push_configs import PushConfig, PushConfigStore, config_order
from stores.timestamps import now_iso


def push_configs(ctx: CallContext) -> PushConfigStore:
    """The push configs of the task store of the call's agent."""
    return ctx.store.push_configs


class PushConfigNotFoundError(TaskNotFoundError):
    """The task exists but has no such push notification config (spec 3.1.8: TaskNotFoundError)."""

    def __init__(self, task_id: str, config_id: str | None) -> None:
        message = (
            f"Push notification config {config_id!r} not found for task {task_id}"
            if config_id
            else f"Task {task_id} has no push notification config"
        )
        metadata = {"taskId": task_id, **({"pushNotificationConfigId": config_id} if config_id else {})}
        A2AError.__init__(self, message, metadata=metadata)


@dataclass
class PushConfigPage:
    """One page of a task's configs, oldest first; ``next_page_token`` "" on the last."""

    configs: list[PushConfig]
    next_page_token: str = ""


def ensure_enabled() -> None:
    """PushNotificationNotSupportedError unless ``A2A_PUSH_NOTIFICATIONS`` is on: checked
    for the config methods by :func:`a2a.service.methods.push_method` (before their params
    are read), for a SendMessage's config by :func:`check_send_config`."""
    if not a2a_settings.PUSH_NOTIFICATIONS:
        raise PushNotificationNotSupportedError(
            "Push notifications are not enabled on this agent (capabilities.pushNotifications is false)"
        )


@tracing.traced("CreateTaskPushNotificationConfig", task_id="task_id")
async def create_config(ctx: CallContext, params: PushConfigParams) -> PushConfig:
    """Save a config for an existing task (replacing the task's config of the same id);
    the id is generated when absent. -32602 for a refused webhook URL."""
    await load_task(params.task_id, ctx)
    await guard.check_url(params.url)
    config = await _save(ctx, params)
    if await ctx.store.aget(params.task_id) is None:
        # The task was deleted while the URL was checked: its store's delete removed
        # its configs before this one was saved, so remove it too (no orphan config).
        await push_configs(ctx).adelete_push_config(params.task_id, config["id"])
        raise TaskNotFoundError(params.task_id)
    return config


@tracing.traced("GetTaskPushNotificationConfig", task_id="task_id")
async def get_config(ctx: CallContext, params: PushConfigRef) -> PushConfig:
    """One config of a task; with ``id`` None, the task's first (oldest) config."""
    await load_task(params.task_id, ctx)
    store = push_configs(ctx)
    if params.id is None:
        configs = await store.alist_push_configs(params.task_id)
        config = configs[0] if configs else None
    else:
        config = await store.aget_push_config(params.task_id, params.id)
    if config is None:
        raise PushConfigNotFoundError(params.task_id, params.id)
    return config


@tracing.traced("ListTaskPushNotificationConfigs", task_id="task_id")
async def list_configs(ctx: CallContext, params: PushConfigListParams) -> PushConfigPage:
    """A task's configs, oldest first; ``page_size`` None or 0 means all of them."""
    await load_task(params.task_id, ctx)
    bound = page_tokens.listing("ListTaskPushNotificationConfigs", ctx, params.task_id)
    configs = await push_configs(ctx).alist_push_configs(params.task_id)
    if params.page_token:
        after = decode_cursor(page_tokens.unseal(params.page_token, bound))
        configs = [c for c in configs if config_order(c) > after]
    token = ""
    if params.page_size and len(configs) > params.page_size:
        configs = configs[: params.page_size]
        token = page_tokens.seal(encode_cursor(*config_order(configs[-1])), bound)
    return PushConfigPage(configs, token)


@tracing.traced("DeleteTaskPushNotificationConfig", task_id="task_id")
async def delete_config(ctx: CallContext, params: PushConfigRef) -> bool:
    """Delete one config of an existing task; idempotent (spec 3.1.10): deleting a
    config that is not there succeeds too. True when there was one. Queued deliveries
    for it are dropped."""
    await load_task(params.task_id, ctx)
    if params.id is None:
        raise InvalidParamsError("is required", field="id")
    deleted = await push_configs(ctx).adelete_push_config(params.task_id, params.id)
    delivery.forget(params.task_id, params.id)
    return deleted


async def check_send_config(params: PushConfigParams | None) -> PushConfigParams | None:
    """Check a SendMessage's push config before the task exists (so a refused one
    creates nothing); None passes through."""
    if params is None:
        return None
    ensure_enabled()
    await guard.check_url(params.url)
    return params


async def attach_config(ctx: CallContext, task_id: str, params: PushConfigParams) -> PushConfig:
    """Save a SendMessage's (checked) push config for the task it created or continued."""
    return await _save(ctx, dataclasses.replace(params, task_id=task_id))


async def _save(ctx: CallContext, params: PushConfigParams) -> PushConfig:
    store = push_configs(ctx)
    config_id = params.id or new_id()
    existing = await store.aget_push_config(params.task_id, config_id) if params.id else None
    config: PushConfig = {"taskId": params.task_id, "id": config_id, "url": params.url}
    if params.token:
        config["token"] = params.token
    if params.authentication:
        config["authentication"] = params.authentication
    config["dialect"] = params.dialect
    config["createdAt"] = (existing or {}).get("createdAt") or now_iso()
    await store.asave_push_config(config)
    return config

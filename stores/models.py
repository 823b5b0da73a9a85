"""The table behind the ORM task store."""

from __future__ import annotations

import json
from typing import Any

from django.db import models

#: The key of the wrapper a document holding U+0000 is saved in (see :class:`NulSafeJSONField`).
NUL_WRAPPER = "$a2a-json"


class NulSafeEncoder(json.JSONEncoder):
    """JSON as usual; a document holding U+0000 (which PostgreSQL's ``jsonb`` refuses:
    "\\u0000 cannot be converted to text") is written as ``{"$a2a-json": "<its JSON>"}``,
    whose only string holds the escape ``\\u0000`` as six plain characters."""

    def encode(self, o: Any) -> str:
        text = super().encode(o)
        # ``\\u0000`` is how a NUL comes out (a literal backslash-u0000 in the data also
        # matches, which only costs a wrapper that was not needed).
        return super().encode({NUL_WRAPPER: text}) if "\\u0000" in text else text


class NulSafeDecoder(json.JSONDecoder):
    """Inverse of :class:`NulSafeEncoder`: unwraps the wrapper, anything else as is."""

    def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
        value = super().decode(s, *args, **kwargs)
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get(NUL_WRAPPER), str):
            return super().decode(value[NUL_WRAPPER])
        return value


class NulSafeJSONField(models.JSONField):
    """A JSONField whose documents may hold U+0000 on every database, saved faithfully
    and read back as they were (:class:`NulSafeEncoder`). The column and its SQL are a
    JSONField's: migrations see a plain ``models.JSONField`` (the wrapping is how values
    are written, not the schema), so none is needed. Used for documents whose top level
    the server builds (a task, a push config): a client cannot make one that looks like
    the wrapper."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("encoder", NulSafeEncoder)
        kwargs.setdefault("decoder", NulSafeDecoder)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        return name, "django.db.models.JSONField", args, kwargs


class TaskRecord(models.Model):
    """One A2A Task. ``task`` holds the whole task as saved; the other columns are
    copies of its fields that listing filters and orders on."""

    id = models.CharField(primary_key=True, max_length=255)
    context_id = models.CharField(max_length=255, blank=True, default="", db_index=False)
    state = models.CharField(max_length=32)
    task = NulSafeJSONField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Who the task belongs to ("" when the agent runs without authentication), with its
    # tenant before it when it has one: the scope key (stores.scope.scope_key), so one
    # index serves listings per tenant and caller.
    owner = models.CharField(max_length=255, blank=True, default="")
    # The task's ``_version``: each saved transition increments it.
    version = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = "task"
        ordering = ["-updated_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-updated_at", "-id"], name="stores_task_owner_idx"),
            # ListTasks: newest first, optionally within one context or one state.
            models.Index(fields=["-updated_at", "-id"], name="stores_task_updated_idx"),
            models.Index(fields=["context_id", "-updated_at", "-id"], name="stores_task_context_idx"),
            models.Index(fields=["state", "-updated_at", "-id"], name="stores_task_state_idx"),
        ]

    def __str__(self) -> str:
        return self.id


class TaskCount(models.Model):
    """How many :class:`TaskRecord` rows have this ``owner`` and ``state``: the first
    ``ListTasks`` page's ``totalSize`` is a sum of a few of these rows instead of a count
    of every matching task. Kept by database triggers on ``stores_taskrecord`` (migration
    ``0004``, PostgreSQL and SQLite), so every write, in the same transaction as the
    row, whoever makes it (the store, the admin, a bulk ``QuerySet.delete()``, raw SQL,
    ``TRUNCATE``); on SQLite a ``DELETE`` of these rows is ignored (only the triggers
    change them).
    On PostgreSQL each (owner, state) is spread over 16 ``slot`` rows (by a hash of the
    task id) so concurrent transitions seldom wait for one another's row lock."""

    owner = models.CharField(max_length=255)
    state = models.CharField(max_length=32)
    slot = models.SmallIntegerField(default=0)
    n = models.BigIntegerField(default=0)

    class Meta:
        db_table = "stores_taskrecord_count"
        verbose_name = "task count"
        constraints = [
            models.UniqueConstraint(fields=["owner", "state", "slot"], name="stores_taskcount_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.owner!r}/{self.state}: {self.n}"


class StoredTask(models.Model):
    """No table: the admin's handle on the configured store when it is not the ORM
    (the memory and file stores are browsed through the store itself)."""

    class Meta:
        managed = False
        verbose_name = "task"
        default_permissions = ("view",)


class PushConfigRecord(models.Model):
    """One push notification config of a task (the ORM store's push-config store,
    ``stores.orm_push.OrmPushConfigStore``): ``config`` holds the whole config as
    saved; ``task_id`` is not a foreign key, so a config never stops a task row from
    being replaced or deleted."""

    task_id = models.CharField(max_length=255)
    config_id = models.CharField(max_length=255)
    config = NulSafeJSONField()
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "push notification config"
        ordering = ["task_id", "created_at", "config_id"]
        constraints = [
            models.UniqueConstraint(fields=["task_id", "config_id"], name="stores_pushconfig_task_config_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.config_id}"


class EndedMcpSession(models.Model):
    """A 2025-11-25 MCP session its client ended (``DELETE``): the session id's SHA-256,
    and when the id expires anyway (a row past it may go). The session itself is a
    signed token (``a2a.mcp.state``): only its end needs keeping, here in the project's
    database, so that every process refuses it."""

    key = models.CharField(max_length=64, primary_key=True)
    expires = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "ended MCP session"
        default_permissions = ()

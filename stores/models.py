"""The table behind the ORM task store."""

from __future__ import annotations

from django.db import models


class TaskRecord(models.Model):
    """One A2A Task. ``task`` holds the whole task as saved; the other columns are
    copies of its fields that listing filters and orders on."""

    id = models.CharField(primary_key=True, max_length=255)
    context_id = models.CharField(max_length=255, blank=True, default="", db_index=False)
    state = models.CharField(max_length=32)
    task = models.JSONField()
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    # Who the task belongs to ("" when the agent runs without authentication).
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


class StoredTask(models.Model):
    """No table: the admin's handle on the configured store when it is not the ORM
    (the memory and file stores are browsed through the store itself)."""

    class Meta:
        managed = False
        verbose_name = "task"
        default_permissions = ("view",)


class PushConfigRecord(models.Model):
    """One push notification config of a task (the ORM store's push-config store, ``stores.orm.OrmPushConfigStore``).
    ``config`` holds the whole config as saved; ``task_id`` is not a foreign key, so a
    config never stops a task row from being replaced or deleted."""

    task_id = models.CharField(max_length=255)
    config_id = models.CharField(max_length=255)
    config = models.JSONField()
    created_at = models.DateTimeField()

    class Meta:
        verbose_name = "push notification config"
        ordering = ["task_id", "created_at", "config_id"]
        constraints = [
            models.UniqueConstraint(fields=["task_id", "config_id"], name="stores_pushconfig_task_config_uniq"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}/{self.config_id}"

"""The ORM store's push notification configs: rows of :class:`stores.models.PushConfigRecord`."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from stores.models import PushConfigRecord
from stores.orm_connection import refresh_connection
from stores.push_configs import PushConfig, PushConfigStore, check_config
from stores.timestamps import now_iso, parse_timestamp

logger = logging.getLogger(__name__)


class OrmPushConfigStore(PushConfigStore):
    """Configs as rows of :class:`stores.models.PushConfigRecord` in database ``using``.

    ``seen`` (given by :meth:`OrmTaskStore.create_push_configs`): task id -> whether the
    task had configs when its task store last saved it, as that save's own statement
    found (see :meth:`has_configs`)."""

    #: :meth:`has_configs` is a dict lookup: cheap enough for the publisher's thread.
    cheap_has_configs = True

    def __init__(self, using: str = "default", seen: dict[str, bool] | None = None) -> None:
        self.using = using
        self._seen = seen if seen is not None else {}

    def has_configs(self, task_id: str) -> bool:
        """Whether the task may have configs: False only when the statement that saved
        its last version (in this process) found none, so push delivery skips that
        version without a query; True when unknown (a database without ``RETURNING``,
        another save path), which makes delivery look them up. Each answer is used
        once; a config created after a version was saved gets the later versions."""
        found = self._seen.pop(task_id, None) if isinstance(task_id, str) else None
        return True if found is None else found

    @property
    def objects(self):
        """The table on a healthy connection: the push deliverer's threads would keep a
        connection the database dropped (a restart) for good otherwise."""
        refresh_connection(self.using)
        return PushConfigRecord.objects.using(self.using)

    def save_push_config(self, config: PushConfig) -> PushConfig:
        task_id, config_id = check_config(config)
        rows = self.objects.filter(task_id=task_id, config_id=config_id)
        if rows.update(config=config):
            return config
        try:
            created = parse_timestamp(config.get("createdAt") or now_iso())
        except ValueError:
            created = parse_timestamp(now_iso())
        try:
            with transaction.atomic(using=self.using):
                self.objects.create(task_id=task_id, config_id=config_id, config=config, created_at=created)
        except IntegrityError:  # created meanwhile by another writer
            rows.update(config=config)
        return config

    def get_push_config(self, task_id: str, config_id: str) -> PushConfig | None:
        if not isinstance(task_id, str) or not isinstance(config_id, str):
            return None
        rows = list(self.objects.filter(task_id=task_id, config_id=config_id).values_list("config", flat=True)[:1])
        return self._valid(rows[0], task_id) if rows else None

    def list_push_configs(self, task_id: str) -> list[PushConfig]:
        if not isinstance(task_id, str):
            return []
        rows = self.objects.filter(task_id=task_id).order_by("created_at", "config_id").values_list("config", flat=True)
        return [c for c in (self._valid(r, task_id) for r in rows) if c is not None]

    def _valid(self, config: Any, task_id: str) -> PushConfig | None:
        try:
            found = check_config(config)
        except ValueError:
            found = None
        if found is None or found[0] != task_id:
            logger.warning("push config row of task %r in database %r is corrupt", task_id, self.using)
            return None
        return config

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        deleted, _ = self.objects.filter(task_id=task_id, config_id=config_id).delete()
        return bool(deleted)

    def delete_task_push_configs(self, task_id: str) -> int:
        if not isinstance(task_id, str):
            return 0
        deleted, _ = self.objects.filter(task_id=task_id).delete()
        return deleted

    def __repr__(self) -> str:
        return f"<OrmPushConfigStore using={self.using!r}>"

"""System checks: a bad TASK_STORE fails ``manage.py check`` (and start-up)."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, register

from stores.backends import task_stores


@register(Tags.compatibility)
def check_task_store(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return task_stores.check()

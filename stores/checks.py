"""System checks: a bad TASK_STORE fails ``manage.py check`` (and start-up)."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, Tags, register
from django.core.exceptions import ImproperlyConfigured


@register(Tags.compatibility)
def check_task_store(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from stores.backends import get_task_store

    try:
        get_task_store()
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="Fix the TASK_STORE setting (or environment variable).", id="stores.E001")]
    return []

"""Turn the ``TASK_STORE`` setting into a store, once per process.

Accepted forms::

    None / "memory"              the in-memory store (the default)
    "file:<dir>"                 a FileTaskStore; a relative <dir> is under BASE_DIR
    "orm" / "orm:<alias>"        the ORM store on database "default" / <alias>
    "pkg.module.Class"           a TaskStore subclass, built with no arguments
    {"BACKEND": "pkg.module.Class" or one of the strings above, "OPTIONS": {...}}
    a TaskStore instance         used as it is
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from stores.base import TaskStore

ACCEPTED = (
    'TASK_STORE must be one of: None or "memory"; "file:<dir>"; "orm" or "orm:<database alias>"; '
    'a dotted path to a TaskStore class; a {"BACKEND": ..., "OPTIONS": {...}} dict; '
    "or a TaskStore instance"
)

_SHORT_NAMES = {
    "memory": "stores.memory.MemoryTaskStore",
    "file": "stores.file.FileTaskStore",
    "orm": "stores.orm.OrmTaskStore",
}


def _file_dir(path: str) -> Path:
    if not path:
        raise ImproperlyConfigured(f'TASK_STORE "file:" needs a directory, e.g. "file:./tasks". {ACCEPTED}')
    directory = Path(path).expanduser()
    if not directory.is_absolute():
        directory = Path(getattr(settings, "BASE_DIR", Path.cwd())) / directory
    return directory


def _build(backend: str, options: dict[str, Any]) -> TaskStore:
    if backend in (None, "memory"):
        backend = _SHORT_NAMES["memory"]
    elif backend.startswith("file:"):
        options = {"directory": _file_dir(backend[5:]), **options}
        backend = _SHORT_NAMES["file"]
    elif backend == "orm" or backend.startswith("orm:"):
        alias = backend[4:] or "default"
        if alias not in settings.DATABASES:
            raise ImproperlyConfigured(
                f'TASK_STORE "{backend}" names database {alias!r}, which is not in DATABASES '
                f"({', '.join(settings.DATABASES) or 'none'})."
            )
        options = {"using": alias, **options}
        backend = _SHORT_NAMES["orm"]
    elif "." not in backend:
        raise ImproperlyConfigured(f"Unknown TASK_STORE {backend!r}. {ACCEPTED}")
    try:
        cls = import_string(backend)
    except ImportError as exc:
        raise ImproperlyConfigured(f"TASK_STORE backend {backend!r} cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, TaskStore)):
        raise ImproperlyConfigured(f"TASK_STORE backend {backend!r} is not a stores.base.TaskStore subclass.")
    try:
        return cls(**options)
    except (TypeError, ValueError, OSError) as exc:
        raise ImproperlyConfigured(f"TASK_STORE backend {backend!r} could not be created: {exc}") from exc


def resolve_store(spec: Any) -> TaskStore:
    """Build the store that ``spec`` (a ``TASK_STORE`` value) names.

    Raises ImproperlyConfigured, with the accepted forms, for anything else.
    """
    if spec is None or isinstance(spec, TaskStore):
        return spec if spec is not None else _build("memory", {})
    if isinstance(spec, str):
        return _build(spec.strip(), {})
    if isinstance(spec, dict):
        unknown = set(spec) - {"BACKEND", "OPTIONS"}
        backend, options = spec.get("BACKEND"), spec.get("OPTIONS", {})
        if unknown or not isinstance(backend, str) or not isinstance(options, dict):
            raise ImproperlyConfigured(
                f"TASK_STORE dict needs a string BACKEND and an optional OPTIONS dict "
                f"(got keys {sorted(spec)}). {ACCEPTED}"
            )
        return _build(backend.strip(), options)
    raise ImproperlyConfigured(f"TASK_STORE cannot be a {type(spec).__name__}. {ACCEPTED}")


@functools.cache
def get_task_store() -> TaskStore:
    """The project's store, resolved from ``settings.TASK_STORE`` on first use."""
    return resolve_store(getattr(settings, "TASK_STORE", None))


def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "TASK_STORE":
        get_task_store.cache_clear()


setting_changed.connect(_reset)

"""One setting picks a backend: the handler every pluggable part of the two apps uses.

In the shape of Django's ``CACHES``/``TASKS`` handlers: a setting names a backend as
``{"BACKEND": "<dotted class path>", "OPTIONS": {...}}`` (each handler also accepts
short strings as sugar, e.g. ``"file:./tasks"``); the handler builds it once, on first
use, keeps it, and forgets it when a test overrides one of its settings
(``setting_changed``). Every backend class has a ``check()`` that returns Django
system-check messages about itself, which :meth:`BackendHandler.check` runs on the
backend it built (a backend's constructor should do no I/O, so that building it in
``manage.py check`` is cheap and safe); it also reports a setting that cannot be built.

Three handlers use it: ``TASK_STORE`` (:data:`task_stores`, below), ``A2A_EVENTS``
(``a2a.core.events``) and ``A2A_EXECUTOR`` (``a2a.runtime.executors``). Backends are
named by import strings, so no handler imports the backends it can build, and no
backend imports another.

``TASK_STORE`` accepts::

    None / "memory"              the in-memory store (the default)
    "file:<dir>"                 a FileTaskStore; a relative <dir> is under BASE_DIR
    "orm" / "orm:<alias>"        the ORM store on database "default" / <alias>
    "pkg.module.Class"           a TaskStore subclass, built with no arguments
    {"BACKEND": "pkg.module.Class" or one of the strings above, "OPTIONS": {...}}
    a TaskStore instance         used as it is
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.checks import CheckMessage, Error
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from stores.base import TaskStore

T = TypeVar("T")


class BackendHandler(Generic[T]):
    """Builds the backend one setting names, once, and forgets it when the setting changes.

    A subclass sets :attr:`setting` (the setting read), :attr:`base` (the class every
    backend subclasses), :attr:`accepted` (the forms, for error messages) and, for
    sugar, overrides :meth:`expand` to turn a short string into ``(BACKEND, OPTIONS)``.
    """

    #: The setting that names the backend.
    setting: str = ""
    #: Further settings whose change rebuilds the backend (e.g. a channel name).
    also_reset_on: tuple[str, ...] = ()
    #: The class every backend of this kind subclasses.
    base: type = object
    #: The default when the setting is unset.
    default: Any = None
    #: The accepted forms, appended to every configuration error.
    accepted: str = ""
    #: The system-check id of "this setting cannot be built".
    error_id: str = ""

    def __init__(self) -> None:
        self._backend: T | None = None
        self._shared: dict[str, T] = {}  # a value's repr, and its (BACKEND, OPTIONS)' -> its backend
        self._lock = threading.RLock()
        setting_changed.connect(self._on_setting_changed, weak=False)

    # --- Parsing -------------------------------------------------------------------------

    def expand(self, value: str) -> tuple[str, dict[str, Any]]:
        """``(BACKEND, OPTIONS)`` for a short string; the default takes it as a dotted path."""
        if "." not in value:
            raise self.error(f"Unknown {self.setting} {value!r}.")
        return value, {}

    def default_options(self) -> dict[str, Any]:
        """Options every backend of this kind is built with (a setting's OPTIONS win)."""
        return {}

    def error(self, text: str) -> ImproperlyConfigured:
        return ImproperlyConfigured(f"{text} {self.accepted}".strip())

    def parse(self, value: Any) -> tuple[str, dict[str, Any]]:
        """``(BACKEND, OPTIONS)`` for a value of the setting (not an instance):
        ImproperlyConfigured, with the accepted forms, for anything else."""
        if value is None:
            value = self.default
        if isinstance(value, str):
            return self.expand(value.strip())
        if isinstance(value, dict):
            unknown = set(value) - {"BACKEND", "OPTIONS"}
            backend, options = value.get("BACKEND"), value.get("OPTIONS", {})
            if unknown or not isinstance(backend, str) or not isinstance(options, dict):
                raise self.error(
                    f"{self.setting} as a dict needs a string BACKEND and an optional OPTIONS dict "
                    f"(got keys {sorted(value)})."
                )
            short, short_options = self.expand(backend.strip())
            return short, {**short_options, **options}
        raise self.error(f"{self.setting} cannot be a {type(value).__name__}.")

    def build(self, value: Any, defaults: dict[str, Any] | None = None) -> T:
        """The backend ``value`` (a value of the setting) names, built with ``defaults``
        (else :meth:`default_options`) under its own OPTIONS: ImproperlyConfigured, with
        the accepted forms, for anything else."""
        if isinstance(value, self.base):
            return value  # type: ignore[return-value]
        backend, options = self.parse(value)
        base_options = self.default_options() if defaults is None else defaults
        return self.instantiate(backend, {**base_options, **options})

    def instantiate(self, path: str, options: dict[str, Any]) -> T:
        try:
            cls = import_string(path)
        except ImportError as exc:
            raise ImproperlyConfigured(f"{self.setting} backend {path!r} cannot be imported: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise ImproperlyConfigured(
                f"{self.setting} backend {path!r} is not a {self.base.__module__}.{self.base.__qualname__} subclass."
            )
        try:
            backend: T = cls(**options)  # type: ignore[assignment]  # a subclass of self.base
        except (TypeError, ValueError, OSError) as exc:
            raise ImproperlyConfigured(f"{self.setting} backend {path!r} could not be created: {exc}") from exc
        return backend

    # --- The project's backend -------------------------------------------------------------

    def configured(self) -> Any:
        """The setting's value as the project sets it (or the default)."""
        return getattr(settings, self.setting, self.default)

    def get(self) -> T:
        """The project's backend, built from the setting on first use."""
        backend = self._backend
        if backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = self.build(self.configured())
                backend = self._backend
        return backend

    def shared(self, value: Any) -> T:
        """The backend ``value`` (a value of the setting) names, for a part of the project
        with a setting of its own (an agent's ``TASK_STORE``): built once for all the
        values naming the same backend and options, and the project's own backend
        (:meth:`get`) when they are the project's. ImproperlyConfigured as :meth:`build`."""
        if isinstance(value, self.base):
            return value  # type: ignore[return-value]
        found = self._shared.get(raw := repr(value))
        if found is not None:
            return found
        with self._lock:
            backend, options = self.parse(value)
            options = {**self.default_options(), **options}
            spec = repr((backend, sorted(options.items())))
            found = self._shared.get(spec)
            if found is None:
                found = self.get() if spec == self._project_spec() else self.instantiate(backend, options)
            self._shared[spec] = self._shared[raw] = found
        return found

    def _project_spec(self) -> str:
        """What :meth:`shared` keys the project's own backend by ("" when it is an instance)."""
        project = self.configured()
        if isinstance(project, self.base):
            return ""
        try:
            backend, options = self.parse(project)
        except ImproperlyConfigured:  # stores.E001 says why; the other values still build
            return ""
        return repr((backend, sorted({**self.default_options(), **options}.items())))

    def forget_shared(self) -> None:
        """Forget the backends :meth:`shared` built (the settings naming them changed);
        :meth:`closed` hears each but the project's."""
        with self._lock:
            old, self._shared = self._shared, {}
        for backend in {id(b): b for b in old.values() if b is not self._backend}.values():
            self.closed(backend)

    @property
    def resolved(self) -> bool:
        """Whether the backend was built (and not reset since)."""
        return self._backend is not None

    def reset(self) -> None:
        """Forget the backend (the next :meth:`get` builds it again); :meth:`closed` hears the old one."""
        self.forget_shared()  # one may be the project's
        with self._lock:
            old, self._backend = self._backend, None
        if old is not None:
            self.closed(old)

    def closed(self, backend: T) -> None:
        """Called with a backend the handler let go of (a setting changed): release it here."""

    def _on_setting_changed(self, *, setting: str, **kwargs: Any) -> None:
        if setting == self.setting or setting in self.also_reset_on:
            self.reset()

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """System-check messages: the setting cannot be built, or what the backend's own
        ``check(**kwargs)`` reports (a task store's takes ``databases``, the aliases it may
        query: only the server's start-up checks pass it). The backend checked is the
        project's (:meth:`get`), built once however often the checks run."""
        try:
            backend = self.get()
        except ImproperlyConfigured as exc:
            return [
                Error(str(exc), hint=f"Fix the {self.setting} setting (or environment variable).", id=self.error_id)
            ]
        return own_check(backend, **kwargs)


def own_check(backend: Any, **kwargs: Any) -> list[CheckMessage]:
    """What a backend's own ``check(**kwargs)`` reports (none when it has no ``check``)."""
    own = getattr(backend, "check", None)
    return list(own(**kwargs)) if callable(own) else []


def _file_directory(path: str) -> Path:
    if not path:
        raise ImproperlyConfigured(f'TASK_STORE "file:" needs a directory, e.g. "file:./tasks". {TaskStores.accepted}')
    directory = Path(path).expanduser()
    if not directory.is_absolute():
        directory = Path(getattr(settings, "BASE_DIR", Path.cwd())) / directory
    return directory


class TaskStores(BackendHandler[TaskStore]):
    """``TASK_STORE``: where the project's Tasks live."""

    setting = "TASK_STORE"
    base = TaskStore
    default = "memory"
    error_id = "stores.E001"
    accepted = (
        'TASK_STORE must be one of: None or "memory"; "file:<dir>"; "orm" or "orm:<database alias>"; '
        'a dotted path to a TaskStore class; a {"BACKEND": ..., "OPTIONS": {...}} dict; '
        "or a TaskStore instance"
    )

    def expand(self, value: str) -> tuple[str, dict[str, Any]]:
        if value in ("", "memory"):
            return "stores.memory.MemoryTaskStore", {}
        if value.startswith("file:"):
            return "stores.file.FileTaskStore", {"directory": _file_directory(value[5:])}
        if value == "orm" or value.startswith("orm:"):
            alias = value[4:] or "default"
            if alias not in settings.DATABASES:
                raise ImproperlyConfigured(
                    f'TASK_STORE "{value}" names database {alias!r}, which is not in DATABASES '
                    f"({', '.join(settings.DATABASES) or 'none'})."
                )
            return "stores.orm.OrmTaskStore", {"using": alias}
        return super().expand(value)


#: The handler of ``TASK_STORE``.
task_stores = TaskStores()


def resolve_store(spec: Any) -> TaskStore:
    """Build the store that ``spec`` (a ``TASK_STORE`` value) names.

    Raises ImproperlyConfigured, with the accepted forms, for anything else.
    """
    return task_stores.build(spec)


def get_task_store() -> TaskStore:
    """The project's store, resolved from ``settings.TASK_STORE`` on first use."""
    return task_stores.get()

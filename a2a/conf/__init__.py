"""Every setting the ``a2a`` and ``stores`` apps read, and the one object that reads them:
``a2a_settings`` (as django-rest-framework's ``api_settings``). The settings are declared
in :mod:`a2a.conf.declarations`, one line each, grouped by feature; what each means is
said in docs/settings.md.

Read a setting as ``a2a_settings.HANDLER`` (the ``A2A_`` prefix dropped): the value comes as
its declared type (an int where a float is declared comes as a float), looked up once and
cached; the cache is cleared when a test overrides a setting. A value of another type
raises :class:`~a2a.setting.SettingError` naming the setting; ``manage.py check``
reports it first, and values out of bounds too (a2a/ops/checks/). ``TASK_STORE`` is the one
unprefixed setting, because it names the store for the whole project (like ``CACHES``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from a2a.conf.declarations import FEATURES
from a2a.setting import Setting, SettingError

#: Setting name -> declaration, every feature's in one.
SETTINGS: dict[str, Setting] = {name: s for feature in FEATURES.values() for name, s in feature.items()}

#: Setting name -> default.
DEFAULTS: dict[str, Any] = {name: s.default for name, s in SETTINGS.items()}


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings above that are set in the environment, parsed by their declared type
    (:meth:`Setting.parse <a2a.setting.Setting.parse>`): numbers as numbers, booleans as
    ``true``/``1``/``yes``/``on``, lists as JSON (``[...]``) or comma-separated strings,
    ``A2A_SKILLS`` and dicts as JSON. A project's settings module ends with
    ``globals().update(from_environment())`` to let every setting come from an environment
    variable of its name (after django-environ's ``environ.Env.read_env()``, a ``.env``
    file's too)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, setting in SETTINGS.items():
        raw = environ.get(name)
        if raw is None:
            continue
        try:
            values[name] = setting.parse(raw)
        except ValueError as exc:
            raise ImproperlyConfigured(f"Environment variable {name}={raw!r} is not valid: {exc}") from None
    return values


def project_name() -> str:
    """The project's name: the package of ``ROOT_URLCONF`` (``"myproject.urls"`` ->
    ``"myproject"``), else the name of ``BASE_DIR``, else ``"A2A agent"``."""
    urlconf = getattr(settings, "ROOT_URLCONF", None)
    if isinstance(urlconf, str) and urlconf.strip(". "):
        return urlconf.strip(". ").split(".")[0]
    base_dir = getattr(settings, "BASE_DIR", None)
    if base_dir:
        name = os.path.basename(os.path.normpath(str(base_dir)))
        if name:
            return name
    return "A2A agent"


#: Settings whose None default is worked out from the project's other settings.
_DERIVED = {"A2A_AGENT_NAME": project_name}


class A2ASettings:
    """Attribute access to the settings above, as their declared types, e.g.
    ``a2a_settings.WORKERS``; :meth:`get` reads one by its full name."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        value = self.get(attr if attr == "TASK_STORE" else f"A2A_{attr}")
        # Kept as an attribute (as Django's LazySettings does): the next read is a plain
        # one, not the failed lookup that calls this method.
        self.__dict__[attr] = value
        return value

    def get(self, name: str) -> Any:
        """The value of the setting ``name`` (``"A2A_WORKERS"``) as its declared type;
        raises :class:`~a2a.setting.SettingError` when it is of another type."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        try:
            setting = SETTINGS[name]
        except KeyError:
            raise AttributeError(f"Unknown A2A setting: {name!r}") from None
        value = setting.convert(name, getattr(settings, name, setting.default))
        if value is None and name in _DERIVED:
            value = _DERIVED[name]()
        self._cache[name] = value
        return value

    def problem(self, name: str) -> SettingError | None:
        """Why the value of the setting ``name`` does not fit its declaration (its type,
        bounds or choices), or None when it does: what ``manage.py check`` reports."""
        setting = SETTINGS[name]
        try:
            setting.validate(name, getattr(settings, name, setting.default))
        except SettingError as exc:
            return exc
        return None

    def reload(self) -> None:
        self._cache.clear()
        self.__dict__ = {"_cache": self._cache}


a2a_settings = A2ASettings()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in SETTINGS:
        a2a_settings.reload()


setting_changed.connect(_on_setting_changed)

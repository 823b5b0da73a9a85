"""One setting's declaration (:class:`Setting`): the type its value must have, its bounds
or choices, its default and its system check id; and how a value is read as that type,
from a settings module or from an environment variable's text. The settings themselves
are declared in :mod:`a2a.conf.declarations` (and documented in docs/settings.md)."""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

#: How a declared type reads in a message and on the settings page.
_TYPE_NAMES: dict[type, str] = {int: "an integer", float: "a number", bool: "True or False", str: "a string"}
_TYPE_NAMES.update({list: "a list", dict: "a dict", Path: "a path"})
_TRUE = ("1", "true", "yes", "on")


class SettingError(ImproperlyConfigured):
    """A setting's value does not fit its declaration; ``check_id`` is the system check id
    ``manage.py check`` reports it with."""

    def __init__(self, message: str, check_id: str) -> None:
        super().__init__(message)
        self.check_id = check_id


@dataclass(frozen=True)
class Setting:
    """One setting: ``type`` is what its value must be (``int``, ``float``, ``bool``,
    ``str``, ``list``, ``dict``, a tuple of them, or ``object`` for a value its own
    resolver checks); None fits too when it is the default. ``min`` bounds a number,
    ``choices`` lists the values allowed; ``check_id`` is the id of the system check
    error a value that does not fit gets."""

    type: builtins.type | tuple[builtins.type, ...]
    default: Any
    min: float | None = None
    choices: tuple[Any, ...] = ()
    check_id: str = "a2a.E002"
    #: A secret (a key): a message about a wrong value names its type, never the value.
    secret: bool = False

    @property
    def types(self) -> tuple[builtins.type, ...]:
        return self.type if isinstance(self.type, tuple) else (self.type,)

    def describe(self) -> str:
        """What a value must be, e.g. ``an integer >= 1`` or ``one of 'openai', 'anthropic'``."""
        if self.choices:
            text = f"one of {', '.join(map(repr, self.choices))}"
        else:
            text = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in self.types if t is not object)
            text += f" >= {self.min}" if self.min is not None else ""
        return f"{text} or None" if self.default is None and text else text

    def convert(self, name: str, value: Any) -> Any:
        """``value`` as the declared type; raises :class:`SettingError` naming ``name``
        when it is of another type. Lossless readings only: an int as a float, a tuple as
        a list, 0 and 1 as booleans, a numeric string as a number. Bounds and choices are
        :meth:`validate`'s, so a test may shorten a timeout below what a deployment gets."""
        converted, fits = self._read(value)
        if not fits:
            raise SettingError(f"{name} must be {self.describe()}, not {self.shown(value)}.", self.check_id)
        return converted

    def shown(self, value: Any) -> str:
        """``value`` as a message shows it: its repr, or only its type for a secret."""
        return f"a value of type {type(value).__name__} (a secret: not shown)" if self.secret else repr(value)

    def validate(self, name: str, value: Any) -> None:
        """Raise :class:`SettingError` naming ``name`` unless ``value`` is of the declared
        type, within its bounds and one of its choices (what ``manage.py check`` asks)."""
        converted = self.convert(name, value)
        if converted is None or object in self.types:
            return
        if (self.min is not None and not converted >= self.min) or (self.choices and converted not in self.choices):
            raise SettingError(f"{name} must be {self.describe()}, not {self.shown(value)}.", self.check_id)

    def _read(self, value: Any) -> tuple[Any, bool]:
        """``(value as the declared type, whether it is of it)``."""
        if (value is None and self.default is None) or object in self.types:
            return value, True
        if isinstance(value, bool):
            return value, bool in self.types
        if self.type is bool and value in (0, 1) and isinstance(value, int):
            return bool(value), True
        if (self.type is float and isinstance(value, int | float | str)) or (
            self.type is int and isinstance(value, str)
        ):
            try:
                return self.type(value), True
            except ValueError:
                return value, False
        if list in self.types and isinstance(value, tuple):
            return list(value), True
        return value, isinstance(value, self.types)

    def parse(self, raw: str) -> Any:
        """An environment variable's text as a value: numbers as numbers, booleans as
        ``true``/``1``/``yes``/``on`` (anything else is False), lists as JSON or
        comma-separated, dicts (and JSON-looking values of free-form settings) as JSON;
        empty text as the default. Raises ValueError."""
        if self.type is bool:
            return raw.strip().lower() in _TRUE
        if self.type in (int, float):
            return self.type(raw)
        if self.type is str or (str in self.types and list not in self.types):
            return raw or self.default
        if raw.lstrip().startswith(("[", "{")) or self.type is dict:
            return json.loads(raw)
        if self.type is list:
            return [item.strip() for item in raw.split(",") if item.strip()]
        return raw or self.default

"""Where the system checks of the A2A settings are registered: :func:`concern`, the one
decorator every check of ``a2a/ops/checks/`` is declared with. A check reports every setting of
its concern whose value does not fit its declaration in :mod:`a2a.conf` (the type,
bounds and choices: ``a2a.E002`` unless the declaration names its own id), then what the
concern itself asks (a loadable handler, a skills directory that exists, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.checks import CheckMessage, Error, register

from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.setting import SettingError

Messages = list[CheckMessage]

#: Setting name -> the name of the check that reports a value not fitting its declaration.
OWNERS: dict[str, str] = {}
#: Check name -> its body (what :func:`concern` registers wraps it).
BODIES: dict[str, Callable[..., Messages]] = {}


def concern(*names: str) -> Callable[[Callable[[], Messages]], Callable[..., Messages]]:
    """Register ``body`` as the system check of the settings ``names``: the check reports
    each of them whose value does not fit its declaration, then ``body``'s own messages.
    A ``body`` that reads a setting of the wrong type gives none: that setting's own
    check says what is wrong with it."""

    def wrap(body: Callable[[], Messages]) -> Callable[..., Messages]:
        OWNERS.update(dict.fromkeys(names, body.__name__))
        BODIES[body.__name__] = body

        def check(app_configs: Any = None, **kwargs: Any) -> Messages:
            errors: Messages = [Error(str(p), id=p.check_id) for n in names if (p := a2a_settings.problem(n))]
            try:
                return errors + body()
            except SettingError:
                return errors

        # Named and documented as the body, but not wrapping it: Django checks the signature.
        check.__name__, check.__qualname__, check.__doc__ = body.__name__, body.__qualname__, body.__doc__
        return register()(check)

    return wrap


def settings_of(agent: Agent | None) -> Any:
    """The settings a per-agent check reads: the project's, or ``agent``'s own."""
    return a2a_settings if agent is None else agent.settings

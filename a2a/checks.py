"""System checks for the A2A settings: caught by ``manage.py check`` and at start-up."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, register

from .conf import a2a_settings


def _number(name: str, value: Any, *, minimum: float, integer: bool = False) -> list[CheckMessage]:
    ok = isinstance(value, int if integer else int | float) and not isinstance(value, bool) and value >= minimum
    if ok:
        return []
    kind = "an integer" if integer else "a number"
    return [Error(f"{name} must be {kind} >= {minimum}, not {value!r}.", id="a2a.E002")]


@register()
def check_a2a_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from .handlers import load_handler

    errors: list[CheckMessage] = []
    try:
        load_handler(a2a_settings.HANDLER)
    except Exception as exc:
        errors.append(
            Error(
                f"A2A_HANDLER {a2a_settings.HANDLER!r} cannot be used: {exc}",
                hint="Name a callable by its dotted path, e.g. 'myproject.agent.handle'.",
                id="a2a.E001",
            )
        )
    errors += _number("A2A_WORKERS", a2a_settings.WORKERS, minimum=1, integer=True)
    errors += _number("A2A_BLOCKING_TIMEOUT", a2a_settings.BLOCKING_TIMEOUT, minimum=0)
    errors += _number("A2A_SHUTDOWN_GRACE", a2a_settings.SHUTDOWN_GRACE, minimum=0)
    skills = a2a_settings.SKILLS
    if not isinstance(skills, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"] for s in skills
    ):
        errors.append(
            Error(
                "A2A_SKILLS must be a list of dicts, each with a non-empty string 'id' "
                "(and 'name', 'description', 'tags').",
                id="a2a.E003",
            )
        )
    public_url = a2a_settings.PUBLIC_URL
    if public_url and not str(public_url).startswith(("http://", "https://")):
        errors.append(Error(f"A2A_PUBLIC_URL must be an absolute http(s) URL, not {public_url!r}.", id="a2a.E004"))
    return errors

"""What stops a server from starting: every system check's errors, plus the task stores'
checks that query the database (:mod:`a2a.asgi` runs them at lifespan start-up)."""

from __future__ import annotations

from django.core.checks import ERROR, CheckMessage, run_checks
from django.db import connections

from a2a.ops.checks.agents import agent_stores
from stores.backends import task_stores


def startup_errors() -> list[CheckMessage]:
    """The errors a server must not start with (:mod:`a2a.asgi` runs this at ASGI
    lifespan start-up): the error-level messages of every system check, as ``manage.py
    check`` reports them, plus those of the task store's checks that query the database
    (``stores.E002``: the ORM store's migrations are not applied), which ``manage.py
    check`` and ``migrate`` skip, for the project's store and each agent's own. Silenced
    checks (``SILENCED_SYSTEM_CHECKS``) stay silent."""
    messages = run_checks(include_deployment_checks=False)
    messages += task_stores.check(databases=list(connections)) + agent_stores(databases=list(connections))
    found: list[CheckMessage] = []
    for message in messages:
        if message.is_serious(ERROR) and not message.is_silenced() and message not in found:
            found.append(message)
    return found


def describe(errors: list[CheckMessage]) -> str:
    """The errors as ``manage.py check`` prints them."""
    lines = [str(e) for e in sorted(errors, key=lambda e: (e.id or "", str(e)))]
    count = len(errors)
    return (
        "SystemCheckError: System check identified some issues:\n\nERRORS:\n"
        + "\n".join(lines)
        + f"\n\nSystem check identified {count} issue{'' if count == 1 else 's'}. The server does not start."
    )

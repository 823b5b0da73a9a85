"""System checks for the A2A settings: caught by ``manage.py check`` and at start-up."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.core.checks import ERROR, CheckMessage, Error, Warning, register, run_checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from rest_framework.authentication import TokenAuthentication

from a2a.auth import authenticators
from a2a.client import remote
from a2a.conf import a2a_settings
from a2a.core.events import resolve_event_backend
from a2a.handlers import load_handler
from a2a.handlers.llm import STYLES, LLMHandler
from a2a.handlers.skills import enabled_ids, scan, skills_dir
from a2a.ops.deployment import UNSHARED_HINT, configured_store, expected_workers, unshared_message
from a2a.protocol.signing import SigningError
from a2a.runtime.executors import executors
from a2a.service import card
from stores.backends import task_stores
from stores.base import MAX_PAGE_SIZE


def _number(name: str, value: Any, *, minimum: float, integer: bool = False) -> list[CheckMessage]:
    ok = isinstance(value, int if integer else int | float) and not isinstance(value, bool) and value >= minimum
    if ok:
        return []
    kind = "an integer" if integer else "a number"
    return [Error(f"{name} must be {kind} >= {minimum}, not {value!r}.", id="a2a.E002")]


@register()
def check_a2a_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
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
    errors += _number("A2A_PUSH_MAX_ATTEMPTS", a2a_settings.PUSH_MAX_ATTEMPTS, minimum=1, integer=True)
    errors += _number("A2A_PUSH_RETRY_DELAY", a2a_settings.PUSH_RETRY_DELAY, minimum=0)
    errors += _number("A2A_PUSH_TIMEOUT", a2a_settings.PUSH_TIMEOUT, minimum=0.1)
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
    errors += _check_authentication()
    public_url = a2a_settings.PUBLIC_URL
    if public_url and not str(public_url).startswith(("http://", "https://")):
        errors.append(Error(f"A2A_PUBLIC_URL must be an absolute http(s) URL, not {public_url!r}.", id="a2a.E004"))
    return errors


def _loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("localhost", "127.0.0.1", "::1")


@register()
def check_llm_skills_and_operations(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The model-backed handler, the skills directory and the operations settings."""
    errors: list[CheckMessage] = []
    errors += _number("A2A_LLM_TIMEOUT", a2a_settings.LLM_TIMEOUT, minimum=0.1)
    errors += _number("A2A_LLM_MAX_RETRIES", a2a_settings.LLM_MAX_RETRIES, minimum=0, integer=True)
    errors += _number("A2A_LLM_RETRY_BACKOFF", a2a_settings.LLM_RETRY_BACKOFF, minimum=0)
    errors += _number("A2A_LLM_MAX_TOKENS", a2a_settings.LLM_MAX_TOKENS, minimum=0, integer=True)
    errors += _number("A2A_LLM_CONTEXT_TASKS", a2a_settings.LLM_CONTEXT_TASKS, minimum=0, integer=True)
    errors += _number("A2A_STALE_AFTER", a2a_settings.STALE_AFTER, minimum=1)
    errors += _number("A2A_HEALTH_TIMEOUT", a2a_settings.HEALTH_TIMEOUT, minimum=0.1)
    errors += _number("A2A_CARD_MAX_AGE", a2a_settings.CARD_MAX_AGE, minimum=0, integer=True)

    for name in ("A2A_LLM_BASE_URL", "A2A_LLM_MODEL", "A2A_LLM_API_KEY", "A2A_LLM_SYSTEM_PROMPT"):
        if not isinstance(getattr(a2a_settings, name[4:]), str):
            errors.append(Error(f"{name} must be a string.", id="a2a.E013"))
    style = a2a_settings.LLM_STYLE
    if style not in STYLES:
        errors.append(
            Error(f"A2A_LLM_STYLE must be one of {', '.join(map(repr, STYLES))}, not {style!r}.", id="a2a.E010")
        )
    base_url = a2a_settings.LLM_BASE_URL
    if isinstance(base_url, str) and base_url and not base_url.startswith(("http://", "https://")):
        errors.append(Error(f"A2A_LLM_BASE_URL must be an absolute http(s) URL, not {base_url!r}.", id="a2a.E011"))
    try:
        uses_llm = isinstance(load_handler(a2a_settings.HANDLER), LLMHandler)
    except Exception:
        uses_llm = False  # a2a.E001 reports it
    if uses_llm:
        missing = [n for n in ("A2A_LLM_BASE_URL", "A2A_LLM_MODEL") if not getattr(a2a_settings, n[4:])]
        if missing:
            errors.append(
                Error(
                    f"A2A_HANDLER is the LLM handler but {' and '.join(missing)} "
                    f"{'is' if len(missing) == 1 else 'are'} not set.",
                    hint='e.g. A2A_LLM_BASE_URL="https://api.openai.com/v1", A2A_LLM_MODEL="gpt-4o-mini".',
                    id="a2a.E012",
                )
            )
        elif not a2a_settings.LLM_API_KEY and isinstance(base_url, str) and not _loopback(base_url):
            errors.append(
                Warning(
                    f"A2A_LLM_API_KEY is empty, so requests to {base_url} carry no key.",
                    hint="Set the A2A_LLM_API_KEY environment variable (a local model server needs none).",
                    id="a2a.W010",
                )
            )

    for name in ("A2A_INPUT_MODES", "A2A_OUTPUT_MODES"):
        modes = getattr(a2a_settings, name[4:])
        if not isinstance(modes, list) or not modes or not all(isinstance(m, str) and "/" in m for m in modes):
            errors.append(Error(f"{name} must be a non-empty list of media types, not {modes!r}.", id="a2a.E030"))
    if not isinstance(a2a_settings.AGENT_NAME, str) or not a2a_settings.AGENT_NAME.strip():
        errors.append(Error("A2A_AGENT_NAME must be a non-empty string.", id="a2a.E031"))

    raw_dir = a2a_settings.SKILLS_DIR
    enabled_setting = a2a_settings.SKILLS_ENABLED
    if enabled_setting is not None and not (
        isinstance(enabled_setting, str)
        or (isinstance(enabled_setting, list | tuple) and all(isinstance(i, str) for i in enabled_setting))
    ):
        errors.append(
            Error(f"A2A_SKILLS_ENABLED must be None or a list of skill ids, not {enabled_setting!r}.", id="a2a.E022")
        )
        enabled_setting = None
    if raw_dir is not None and not isinstance(raw_dir, str | Path):
        errors.append(Error(f"A2A_SKILLS_DIR must be a path, not {raw_dir!r}.", id="a2a.E020"))
        return errors
    directory = skills_dir()
    if directory is None:
        if enabled_setting:
            errors.append(Error("A2A_SKILLS_ENABLED is set but A2A_SKILLS_DIR is not.", id="a2a.E023"))
        return errors
    if not directory.is_dir():
        errors.append(Error(f"A2A_SKILLS_DIR {str(directory)!r} is not a directory.", id="a2a.E020"))
        return errors
    skills, problems = scan(directory)
    errors += [Error(f"A skill cannot be loaded: {p}", id="a2a.E021") for p in problems]
    if not skills and not problems:
        errors.append(
            Warning(
                f"A2A_SKILLS_DIR {str(directory)!r} has no skills.",
                hint="Put each skill in <dir>/<skill>/SKILL.md, starting with front matter (name, description).",
                id="a2a.W020",
            )
        )
    found = {s.id for s in skills}
    enabled = enabled_ids() if enabled_setting is not None else None
    unknown = [i for i in enabled or () if i not in found]
    if unknown:
        errors.append(
            Error(
                f"A2A_SKILLS_ENABLED names skills that A2A_SKILLS_DIR does not have: {', '.join(unknown)}.",
                hint=f"Known skills: {', '.join(sorted(found)) or 'none'}.",
                id="a2a.E023",
            )
        )
    listed = (
        {s.get("id") for s in a2a_settings.SKILLS if isinstance(s, dict)}
        if isinstance(a2a_settings.SKILLS, list)
        else set()
    )
    for skill_id in sorted(found & listed):
        errors.append(
            Warning(
                f"Skill {skill_id!r} is both in A2A_SKILLS and in A2A_SKILLS_DIR; the card lists the A2A_SKILLS one.",
                id="a2a.W021",
            )
        )
    return errors


def _check_authentication() -> list[CheckMessage]:
    try:
        classes = authenticators()
    except Exception as exc:
        return [Error(f"A2A_AUTHENTICATION_CLASSES cannot be loaded: {exc}", id="a2a.E005")]
    if any(isinstance(a, TokenAuthentication) for a in classes) and not apps.is_installed("rest_framework.authtoken"):
        return [
            Error(
                "A2A_AUTHENTICATION_CLASSES uses DRF tokens, but 'rest_framework.authtoken' is not in INSTALLED_APPS.",
                hint="Add 'rest_framework.authtoken' to INSTALLED_APPS and migrate.",
                id="a2a.E006",
            )
        ]
    return []


@register()
def check_limits(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The limits on requests and histories (a2a/protocol/limits.py): positive integers."""
    errors: list[CheckMessage] = []
    for name in ("A2A_MAX_BODY_BYTES", "A2A_MAX_PARTS", "A2A_MAX_TEXT_LENGTH", "A2A_MAX_PAGE_SIZE", "A2A_MAX_HISTORY"):
        errors += _number(name, getattr(a2a_settings, name[4:]), minimum=1, integer=True)
    # The ids this agent makes are UUIDs (36 characters): a lower limit would refuse them.
    errors += _number("A2A_MAX_ID_LENGTH", a2a_settings.MAX_ID_LENGTH, minimum=36, integer=True)
    page_size = a2a_settings.MAX_PAGE_SIZE
    if isinstance(page_size, int) and page_size > MAX_PAGE_SIZE:
        errors.append(
            Error(
                f"A2A_MAX_PAGE_SIZE must be at most {MAX_PAGE_SIZE} (the task stores' page size ceiling), "
                f"not {page_size!r}.",
                id="a2a.E040",
            )
        )
    return errors


@register()
def check_events(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``A2A_EVENTS`` and ``A2A_EVENTS_CHANNEL`` name a backend that can be built
    (a2a.E060), and several server processes do not keep their events to themselves
    (a2a.W060)."""
    try:
        backend = resolve_event_backend(a2a_settings.EVENTS, a2a_settings.EVENTS_CHANNEL)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), id="a2a.E060")]
    count, source = expected_workers()
    if count > 1 and not backend.remote:
        return [
            Warning(
                f"A2A_EVENTS is {a2a_settings.EVENTS!r}, which keeps a task's events inside the process that "
                f"saves them, but {source} says there are {count} server processes: a client streaming from "
                "one of them hears nothing of a task another one runs.",
                hint='Share the events: A2A_EVENTS = "redis://..." or "postgres".',
                id="a2a.W060",
            )
        ]
    return []


@register()
def check_deployment(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    lease = a2a_settings.LEASE_SECONDS
    errors += _number("A2A_LEASE_SECONDS", lease, minimum=1)
    errors += _number("A2A_LEASE_CHECK_INTERVAL", a2a_settings.LEASE_CHECK_INTERVAL, minimum=0)
    errors += _number("A2A_EXPECT_WORKERS", a2a_settings.EXPECT_WORKERS, minimum=1, integer=True)
    if not isinstance(a2a_settings.RETRY_ON_LOST_LEASE, bool):
        errors.append(Error("A2A_RETRY_ON_LOST_LEASE must be True or False.", id="a2a.E050"))
    count, source = expected_workers()
    store = configured_store()
    if count > 1 and store is not None and not getattr(store, "shared", False):
        errors.append(
            Warning(
                unshared_message(store, f"{source} says there are {count} workers"), hint=UNSHARED_HINT, id="a2a.W001"
            )
        )
    return errors


@register()
def check_executor(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``a2a.E070``: ``A2A_EXECUTOR`` cannot be built or names a queue that cannot be
    used; ``a2a.W070``: handlers run in workers, but events do not leave a process."""
    return executors.check()


@register()
def check_card_signing(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``a2a.E080``: ``A2A_CARD_SIGNING_KEY`` is set but cannot sign (unreadable, not a
    PEM private key, a key type without a JWS algorithm, or the ``signing`` extra missing)."""
    if not a2a_settings.CARD_SIGNING_KEY:
        return []
    try:
        card.signer()
    except SigningError as exc:
        return [
            Error(
                f"A2A_CARD_SIGNING_KEY cannot sign the Agent Card: {exc}",
                hint="Give an unencrypted PEM private key (EC P-256, RSA 2048+ or Ed25519), as text or a path.",
                id="a2a.E080",
            )
        ]
    return []


@register()
def check_remote_agents(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``a2a.E100``: an ``A2A_REMOTE_AGENTS`` entry of the wrong shape (a URL that is not
    absolute http(s), an unknown key or credential type, a signature required without keys)."""
    return [
        Error(problem, hint="See docs/client.md for the keys of an entry.", id="a2a.E100")
        for problem in remote.check_setting(a2a_settings.REMOTE_AGENTS)
    ]


#: The modules the gRPC binding needs (the `grpc` extra).
GRPC_MODULES = ("grpc", "google.protobuf", "google.rpc.status_pb2")


def _grpc_missing() -> str | None:
    """The first module of the `grpc` extra that is not installed, or None."""
    for name in GRPC_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except ModuleNotFoundError:  # its parent package is missing
            return name
    return None


@register()
def check_grpc(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``a2a.E090``: ``A2A_GRPC_IN_ASGI`` is on without the ``grpc`` extra;
    ``a2a.E091``: ``A2A_GRPC_ADDRESS`` is not ``host:port``, or ``A2A_GRPC_URL`` is
    neither None nor a non-empty string."""
    errors: list[CheckMessage] = []
    address = a2a_settings.GRPC_ADDRESS
    host, _, port = address.rpartition(":") if isinstance(address, str) else ("", "", "")
    if not host or not port.isdigit() or int(port) > 65535:
        errors.append(Error(f"A2A_GRPC_ADDRESS must be 'host:port', not {address!r}.", id="a2a.E091"))
    url = a2a_settings.GRPC_URL
    if url is not None and (not isinstance(url, str) or not url.strip()):
        message = f"A2A_GRPC_URL must be None or 'host:port' (as clients dial it), not {url!r}."
        errors.append(Error(message, id="a2a.E091"))
    if a2a_settings.GRPC_IN_ASGI and (missing := _grpc_missing()):
        errors.append(
            Error(
                f"A2A_GRPC_IN_ASGI is on but {missing} is not installed.",
                hint='pip install "django-a2a-agent[grpc]"',
                id="a2a.E090",
            )
        )
    return errors


def startup_errors() -> list[CheckMessage]:
    """The errors a server must not start with (:mod:`a2a.asgi` runs this at ASGI
    lifespan start-up): the error-level messages of every system check, as ``manage.py
    check`` reports them, plus those of the task store's checks that query the database
    (``stores.E002``: the ORM store's migrations are not applied), which ``manage.py
    check`` and ``migrate`` skip. Silenced checks (``SILENCED_SYSTEM_CHECKS``) stay silent."""
    messages = run_checks(include_deployment_checks=False)
    messages += task_stores.check(databases=list(connections))
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

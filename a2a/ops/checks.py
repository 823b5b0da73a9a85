"""System checks for the A2A settings: caught by ``manage.py check`` and at start-up.

One check per concern, each registered with :func:`concern`: it reports every setting of
its concern whose value does not fit its declaration in :mod:`a2a.conf` (the type,
bounds and choices: ``a2a.E002`` unless the declaration names its own id), then what the
concern itself asks (a loadable handler, a skills directory that exists, ...)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.conf import settings
from django.core.checks import ERROR, CheckMessage, Error, Warning, register, run_checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.urls import NoReverseMatch
from rest_framework.authentication import TokenAuthentication

from a2a.agents import DEFAULT_AGENT, Agent, agents, get_agent
from a2a.agents import problems as agent_problems
from a2a.auth import authenticators
from a2a.client import remote
from a2a.conf import a2a_settings
from a2a.core.events import resolve_event_backend
from a2a.handlers import load_handler
from a2a.handlers.frameworks import unusable_handler
from a2a.handlers.functions import unusable_tools
from a2a.handlers.llm import LLMHandler
from a2a.handlers.skills import enabled_ids, scan, skills_dir
from a2a.ops.deployment import UNSHARED_HINT, configured_store, expected_workers, unshared_message
from a2a.protocol.signing import SigningError
from a2a.push import tokens
from a2a.runtime.executors import executors
from a2a.service import card
from a2a.setting import SettingError
from stores.backends import get_task_store, own_check, task_stores
from stores.base import MAX_PAGE_SIZE
from stores.retention import Policy

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


@concern(
    "A2A_HANDLER",
    "A2A_WORKERS",
    "A2A_BLOCKING_TIMEOUT",
    "A2A_SHUTDOWN_GRACE",
    "A2A_STREAM_KEEPALIVE",
    "A2A_STREAM_REPLAY_EVENTS",
    "A2A_STREAM_REPLAY_MAX_AGE",
    "A2A_DIRECT_ASGI",
)
def check_handler(agent: Agent | None = None) -> Messages:
    """``a2a.E001``: ``A2A_HANDLER`` names no callable; and how the runner runs it."""
    handler = _conf(agent).HANDLER
    try:
        load_handler(handler)
    except Exception as exc:
        message, hint = unusable_handler(handler, exc)
        return [Error(message, hint=hint, id="a2a.E001")]
    return []


@concern(
    "A2A_PUBLIC_URL",
    "A2A_AGENT_NAME",
    "A2A_AGENT_DESCRIPTION",
    "A2A_AGENT_VERSION",
    "A2A_PROVIDER_ORGANIZATION",
    "A2A_PROVIDER_URL",
    "A2A_DOCUMENTATION_URL",
    "A2A_SKILLS",
    "A2A_INPUT_MODES",
    "A2A_OUTPUT_MODES",
    "A2A_EXTENDED_CARD",
    "A2A_CARD_MAX_AGE",
    "A2A_BROWSABLE_AGENT",
)
def check_card(agent: Agent | None = None) -> Messages:
    """The Agent Card: skills with ids (``a2a.E003``), an absolute public URL
    (``a2a.E004``), media types (``a2a.E030``), a name (``a2a.E031``)."""
    errors: Messages = []
    conf = _conf(agent)
    if not all(isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"] for s in conf.SKILLS):
        errors.append(
            Error(
                "A2A_SKILLS must be a list of dicts, each with a non-empty string 'id' "
                "(and 'name', 'description', 'tags').",
                id="a2a.E003",
            )
        )
    public_url = a2a_settings.PUBLIC_URL
    if public_url and not public_url.startswith(("http://", "https://")):
        errors.append(Error(f"A2A_PUBLIC_URL must be an absolute http(s) URL, not {public_url!r}.", id="a2a.E004"))
    for name in ("A2A_INPUT_MODES", "A2A_OUTPUT_MODES"):
        modes = conf.get(name)
        if not modes or not all(isinstance(m, str) and "/" in m for m in modes):
            errors.append(Error(f"{name} must be a non-empty list of media types, not {modes!r}.", id="a2a.E030"))
    if not conf.AGENT_NAME.strip():
        errors.append(Error("A2A_AGENT_NAME must be a non-empty string.", id="a2a.E031"))
    return errors


@concern("A2A_AUTHENTICATION_CLASSES", "A2A_API_KEY_HEADER")
def check_authentication(agent: Agent | None = None) -> Messages:
    """``a2a.E005``: the authentication classes cannot be loaded; ``a2a.E006``: DRF
    tokens without their app."""
    try:
        classes = authenticators(agent)
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


@concern("A2A_CATALOG_AUTHENTICATION", "A2A_CATALOG_PUBLISHER")
def check_catalogs() -> Messages:
    """``a2a.W120``: the catalogs should require authentication, but no class authenticates."""
    if a2a_settings.CATALOG_AUTHENTICATION and not a2a_settings.AUTHENTICATION_CLASSES:
        return [
            Warning(
                "A2A_CATALOG_AUTHENTICATION is on but A2A_AUTHENTICATION_CLASSES is empty: "
                "every caller is accepted, so the catalogs stay open.",
                hint="List the authentication classes the catalogs' callers use in A2A_AUTHENTICATION_CLASSES.",
                id="a2a.W120",
            )
        ]
    return []


@concern(
    "A2A_PUSH_NOTIFICATIONS",
    "A2A_PUSH_ALLOW_PRIVATE_URLS",
    "A2A_PUSH_MAX_ATTEMPTS",
    "A2A_PUSH_RETRY_DELAY",
    "A2A_PUSH_TIMEOUT",
    "A2A_PUSH_TOKEN_LIFETIME",
)
def check_push() -> Messages:
    """Push notifications: their settings' declarations say it all. (Unsigned pushes,
    without a signing key, are not reported: an INFO on every ``manage.py check`` of
    every project that signs nothing would be noise; docs/protocol.md says it.)"""
    return []


def _loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("localhost", "127.0.0.1", "::1")


def _uses_llm(conf: Any) -> bool:
    try:
        return isinstance(load_handler(conf.HANDLER), LLMHandler)
    except Exception:
        return False  # check_handler reports it


@concern(
    "A2A_LLM_BASE_URL",
    "A2A_LLM_MODEL",
    "A2A_LLM_API_KEY",
    "A2A_LLM_STYLE",
    "A2A_LLM_TIMEOUT",
    "A2A_LLM_MAX_RETRIES",
    "A2A_LLM_RETRY_BACKOFF",
    "A2A_LLM_MAX_TOKENS",
    "A2A_LLM_SYSTEM_PROMPT",
    "A2A_LLM_CONTEXT_TASKS",
    "A2A_LLM_TOOLS",
    "A2A_LLM_REMOTE_TOOLS",
    "A2A_LLM_MAX_ROUNDS",
)
def check_llm(agent: Agent | None = None) -> Messages:
    """The model-backed handler: an absolute base URL (``a2a.E011``), tools that name
    ``A2A_REMOTE_AGENTS`` entries (``a2a.E014``) or functions (``a2a.E015``), and when it is
    the handler, a base URL, a model (``a2a.E012``) and a key for a remote one (``a2a.W010``)."""
    conf = _conf(agent)
    if problem := unusable_tools(conf.LLM_TOOLS):
        return [Error(problem, id="a2a.E015")]
    unknown = [str(n) for n in conf.LLM_REMOTE_TOOLS if n not in (a2a_settings.REMOTE_AGENTS or {})]
    if unknown:
        known = ", ".join(sorted(a2a_settings.REMOTE_AGENTS or {})) or "none"
        return [
            Error(
                f"A2A_LLM_REMOTE_TOOLS names {', '.join(map(repr, unknown))}, not in A2A_REMOTE_AGENTS "
                f"(configured: {known}).",
                hint="Each name must be an entry of A2A_REMOTE_AGENTS (docs/client.md).",
                id="a2a.E014",
            )
        ]
    base_url = conf.LLM_BASE_URL
    if base_url and not base_url.startswith(("http://", "https://")):
        return [Error(f"A2A_LLM_BASE_URL must be an absolute http(s) URL, not {base_url!r}.", id="a2a.E011")]
    if not _uses_llm(conf):
        return []
    missing = [n for n in ("A2A_LLM_BASE_URL", "A2A_LLM_MODEL") if not conf.get(n)]
    if missing:
        return [
            Error(
                f"A2A_HANDLER is the LLM handler but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not set.",
                hint='e.g. A2A_LLM_BASE_URL="https://api.openai.com/v1", A2A_LLM_MODEL="gpt-4o-mini".',
                id="a2a.E012",
            )
        ]
    if not conf.LLM_API_KEY and not _loopback(base_url):
        return [
            Warning(
                f"A2A_LLM_API_KEY is empty, so requests to {base_url} carry no key.",
                hint="Set the A2A_LLM_API_KEY environment variable (a local model server needs none).",
                id="a2a.W010",
            )
        ]
    return []


@concern("A2A_SKILLS_DIR", "A2A_SKILLS_ENABLED")
def check_skills(agent: Agent | None = None) -> Messages:
    """The skills directory: it exists (``a2a.E020``), its skills load (``a2a.E021``), it
    has some (``a2a.W020``), and ``A2A_SKILLS_ENABLED`` names ids (``a2a.E022``) of them
    (``a2a.E023``)."""
    conf = _conf(agent)
    enabled_setting = conf.SKILLS_ENABLED
    if isinstance(enabled_setting, list) and not all(isinstance(i, str) for i in enabled_setting):
        return [
            Error(f"A2A_SKILLS_ENABLED must be None or a list of skill ids, not {enabled_setting!r}.", id="a2a.E022")
        ]
    directory = skills_dir(conf)
    if directory is None:
        return [Error("A2A_SKILLS_ENABLED is set but A2A_SKILLS_DIR is not.", id="a2a.E023")] if enabled_setting else []
    if not directory.is_dir():
        return [Error(f"A2A_SKILLS_DIR {str(directory)!r} is not a directory.", id="a2a.E020")]
    skills, problems = scan(directory)
    errors: Messages = [Error(f"A skill cannot be loaded: {p}", id="a2a.E021") for p in problems]
    if not skills and not problems:
        errors.append(
            Warning(
                f"A2A_SKILLS_DIR {str(directory)!r} has no skills.",
                hint="Put each skill in <dir>/<skill>/SKILL.md, starting with front matter (name, description).",
                id="a2a.W020",
            )
        )
    found = {s.id for s in skills}
    return errors + _unknown_skills(found, conf) + _skills_listed_twice(found, conf)


def _unknown_skills(found: set[str], conf: Any) -> Messages:
    """``a2a.E023``: ``A2A_SKILLS_ENABLED`` names skills the directory does not have."""
    unknown = [i for i in enabled_ids(conf) or () if i not in found]
    if not unknown:
        return []
    return [
        Error(
            f"A2A_SKILLS_ENABLED names skills that A2A_SKILLS_DIR does not have: {', '.join(unknown)}.",
            hint=f"Known skills: {', '.join(sorted(found)) or 'none'}.",
            id="a2a.E023",
        )
    ]


def _skills_listed_twice(found: set[str], conf: Any) -> Messages:
    """``a2a.W021``: a skill of the directory is in ``A2A_SKILLS`` too."""
    listed = {s.get("id") for s in conf.SKILLS if isinstance(s, dict)}
    return [
        Warning(
            f"Skill {skill_id!r} is both in A2A_SKILLS and in A2A_SKILLS_DIR; the card lists the A2A_SKILLS one.",
            id="a2a.W021",
        )
        for skill_id in sorted(found & listed)
    ]


@concern(
    "A2A_MAX_BODY_BYTES",
    "A2A_MAX_PARTS",
    "A2A_MAX_TEXT_LENGTH",
    "A2A_MAX_ID_LENGTH",
    "A2A_MAX_PAGE_SIZE",
    "A2A_MAX_BATCH_SIZE",
    "A2A_MAX_HISTORY",
    "A2A_HEADER_TIMEOUT",
    "A2A_BODY_TIMEOUT",
    "A2A_MAX_CONNECTIONS",
)
def check_limits() -> Messages:
    """The limits on requests, histories and slow clients (a2a/protocol/limits.py,
    a2a/http/protocol.py); ``a2a.E040``: a page size over the task stores' ceiling."""
    page_size = a2a_settings.MAX_PAGE_SIZE
    if page_size > MAX_PAGE_SIZE:
        return [
            Error(
                f"A2A_MAX_PAGE_SIZE must be at most {MAX_PAGE_SIZE} (the task stores' page size ceiling), "
                f"not {page_size!r}.",
                id="a2a.E040",
            )
        ]
    return []


@concern("A2A_EVENTS", "A2A_EVENTS_CHANNEL")
def check_events() -> Messages:
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


@concern(
    "TASK_STORE",
    "A2A_LEASE_SECONDS",
    "A2A_LEASE_CHECK_INTERVAL",
    "A2A_RETRY_ON_LOST_LEASE",
    "A2A_EXPECT_WORKERS",
    "A2A_STALE_AFTER",
    "A2A_HEALTH_TIMEOUT",
    "A2A_TRACING",
)
def check_deployment() -> Messages:
    """Leases and operations; ``a2a.W001``: several workers share a store that cannot be
    shared (``TASK_STORE`` itself is the stores app's check, ``stores.E001``)."""
    count, source = expected_workers()
    store = configured_store()
    if count > 1 and store is not None and not store.shared:
        message = unshared_message(store, f"{source} says there are {count} workers")
        return [Warning(message, hint=UNSHARED_HINT, id="a2a.W001")]
    return []


@concern("A2A_EXECUTOR")
def check_executor() -> Messages:
    """``a2a.E070``: ``A2A_EXECUTOR`` cannot be built or names a queue that cannot be
    used; ``a2a.W070``: handlers run in workers, but events do not leave a process."""
    return executors.check()


@concern("A2A_CARD_SIGNING_KEY", "A2A_CARD_SIGNING_KID", "A2A_CARD_SIGNING_JKU", "A2A_CARD_SIGNING_PREVIOUS_KEYS")
def check_card_signing(agent: Agent | None = None) -> Messages:
    """``a2a.E080``: ``A2A_CARD_SIGNING_KEY`` is set but cannot sign (unreadable, not a
    PEM private key, a key type without a JWS algorithm, or the ``signing`` extra missing),
    or one of ``A2A_CARD_SIGNING_PREVIOUS_KEYS`` cannot be read into the JWK Set."""
    conf = _conf(agent)
    if not conf.CARD_SIGNING_KEY:
        return []
    try:
        card.signer(agent)
    except SigningError as exc:
        return [
            Error(
                f"A2A_CARD_SIGNING_KEY cannot sign the Agent Card and push notifications: {exc}",
                hint="Give an unencrypted PEM private key (EC P-256, RSA 2048+ or Ed25519), as text or a path.",
                id="a2a.E080",
            )
        ]
    try:
        tokens.jwk_set(agent)
    except SigningError as exc:
        return [
            Error(
                f"A2A_CARD_SIGNING_PREVIOUS_KEYS has a key the JWK Set cannot publish: {exc}",
                hint="Give each as a PEM public key, certificate, JWK or JWK Set (text or a path).",
                id="a2a.E080",
            )
        ]
    return []


#: The checks of the settings an agent may set for itself (a2a.agents.PER_AGENT): each body takes the agent.
_PER_AGENT_CHECKS = (
    "check_handler",
    "check_card",
    "check_authentication",
    "check_llm",
    "check_skills",
    "check_card_signing",
)


@concern("A2A_AGENTS")
def check_agents() -> Messages:
    """``a2a.E110``: ``A2A_AGENTS`` is not a dict of agent name -> options, a name is not a
    URL segment, an option is unknown or does not fit its setting's declaration; then each
    agent's settings checked as the project's are. Every message names its agent."""
    if not isinstance(getattr(settings, "A2A_AGENTS", None) or {}, dict):
        return []  # the declaration's own message says so
    found = agent_problems()
    if found:
        return [Error(str(problem), id=problem.check_id) for problem in found]
    bodies = [BODIES[name] for name in _PER_AGENT_CHECKS]
    project = {message.msg for body in bodies for message in _quietly(body)}
    messages: Messages = []
    for agent in agents().values():
        for body in bodies:
            messages += [_naming(m, agent) for m in _quietly(body, agent) if m.msg not in project]
    return messages + agent_stores() + _unrouted()


def agent_stores(**kwargs: Any) -> Messages:
    """``a2a.E110``: an agent's own ``TASK_STORE`` cannot be built; then what each distinct
    store of the agents reports of itself (its ``check(**kwargs)``), naming the first agent
    that uses it. The project's store is ``stores.E001``'s (and start-up's)."""
    try:
        checked = [get_task_store()]
    except ImproperlyConfigured:
        checked = []
    messages: Messages = []
    for agent in agents().values():
        if agent.task_store is None:
            continue
        try:
            store = agent.store
        except ImproperlyConfigured as exc:
            messages.append(Error(f"A2A_AGENTS[{agent.name!r}]['TASK_STORE']: {exc}", id="a2a.E110"))
            continue
        if all(store is not other for other in checked):
            checked.append(store)
            messages += [_naming(m, agent) for m in own_check(store, **kwargs)]
    return messages


def _unrouted() -> Messages:
    """``a2a.W110``: agents that no route serves (``a2a.urls.agents`` is not included)."""
    names = [name for name in agents() if name != DEFAULT_AGENT]
    try:
        if names:
            get_agent(names[0]).path("jsonrpc")
    except NoReverseMatch:
        return [
            Warning(
                f"A2A_AGENTS names {', '.join(map(repr, names))}, but no URL pattern serves them (only gRPC does).",
                hint='Add path("agents/", include("a2a.urls.agents")) to the root URLconf.',
                id="a2a.W110",
            )
        ]
    return []


def _quietly(body: Callable[..., Messages], agent: Agent | None = None) -> Messages:
    """``body``'s messages; none when a setting it reads is of the wrong type (its own check says so)."""
    try:
        return body(agent)
    except SettingError:
        return []


def _conf(agent: Agent | None) -> Any:
    return a2a_settings if agent is None else agent.settings


def _naming(message: CheckMessage, agent: Agent) -> CheckMessage:
    """``message`` about one agent's settings, saying which agent."""
    return CheckMessage(message.level, f"A2A_AGENTS[{agent.name!r}]: {message.msg}", hint=message.hint, id=message.id)


@concern("A2A_REMOTE_AGENTS")
def check_remote_agents() -> Messages:
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


@concern("A2A_GRPC_URL", "A2A_GRPC_ADDRESS", "A2A_GRPC_IN_ASGI", "A2A_GRPC_REUSE_PORT")
def check_grpc() -> Messages:
    """``a2a.E090``: ``A2A_GRPC_IN_ASGI`` is on without the ``grpc`` extra;
    ``a2a.E091``: ``A2A_GRPC_ADDRESS`` is not ``host:port``, or ``A2A_GRPC_URL`` is
    neither None nor a non-empty string."""
    errors: list[CheckMessage] = []
    address = a2a_settings.GRPC_ADDRESS
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        errors.append(Error(f"A2A_GRPC_ADDRESS must be 'host:port', not {address!r}.", id="a2a.E091"))
    url = a2a_settings.GRPC_URL
    if url is not None and not url.strip():
        message = f"A2A_GRPC_URL must be None or 'host:port' (as clients dial it), not {url!r}."
        errors.append(Error(message, id="a2a.E091"))
    if a2a_settings.GRPC_IN_ASGI and (missing := _grpc_missing()):
        errors.append(
            Error(
                f"A2A_GRPC_IN_ASGI is on but {missing} is not installed.",
                hint="Install the package with its grpc extra ([grpc]: docs/getting-started.md, Installing).",
                id="a2a.E090",
            )
        )
    return errors


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


@concern("A2A_RETENTION", "A2A_RETENTION_INTERVAL", "A2A_RETENTION_BATCH")
def check_retention() -> Messages:
    """``a2a.E130``: ``A2A_RETENTION`` names a state a policy cannot name, or an age
    that is not one (a sweep would otherwise fail in every process, every interval)."""
    try:
        Policy.from_setting(a2a_settings.RETENTION)
    except ValueError as exc:
        return [
            Error(
                f"A2A_RETENTION {exc}.",
                hint='e.g. A2A_RETENTION = {"completed": "30d", "failed": "7d", "input-required": "90d"}',
                id="a2a.E130",
            )
        ]
    return []

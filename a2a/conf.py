"""Every setting the ``a2a`` and ``stores`` apps read, declared in one place: its type (and
bounds or choices), its default and its documentation (:class:`~a2a.setting.Setting`).

Read a setting as ``a2a_settings.HANDLER`` (the ``A2A_`` prefix dropped): the value comes as
its declared type (an int where a float is declared comes as a float), looked up once and
cached; the cache is cleared when a test overrides a setting. A value of another type
raises :class:`~a2a.setting.SettingError` naming the setting; ``manage.py check``
reports it first, and values out of bounds too (a2a/ops/checks.py). ``TASK_STORE`` is the one
unprefixed setting, because it names the store for the whole project (like ``CACHES``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed

from a2a.conf_sections import LATER_SECTIONS
from a2a.setting import Setting, SettingError

_CARD = "The Agent Card."
_PROVIDER = "The card's provider (organization, URL) and documentation link: omitted when empty."
_MODES = (
    "Media types the agent takes and gives, as the card's defaultInput/OutputModes. A message part of another "
    "media type is refused (-32005); `*/*` and `image/*` wildcards work."
)

#: Section title -> setting name -> declaration. The settings reference (docs/settings.md)
#: is generated from these: one table per section, one row per setting.
SECTIONS: dict[str, dict[str, Setting]] = {
    "General": {
        "TASK_STORE": Setting(
            object,
            "memory",
            doc='Where Tasks live: "memory", "file:<dir>", "orm", "orm:<alias>", a dotted class path, a '
            '{"BACKEND": ..., "OPTIONS": {...}} dict, or a store instance.',
        ),
        "A2A_HANDLER": Setting(
            str,
            "a2a.handlers.echo",
            check_id="a2a.E001",
            doc="Dotted path to the callable (sync or async) that fulfils each Task.",
        ),
        "A2A_WORKERS": Setting(
            int,
            8,
            min=1,
            doc="How many Tasks are fulfilled at once per process; more wait their turn (as submitted). A queue "
            "worker runs one task per job, so there the queue engine's concurrency decides (docs/deployment.md).",
        ),
        "A2A_EXECUTOR": Setting(
            object,
            "thread",
            doc='Where Tasks are fulfilled (a2a/runtime/executors.py): "thread", the runner of the process that '
            'accepted them; or "tasks" / "tasks:<alias>", a job on the queue of Django\'s Tasks framework '
            "(TASKS[<alias>]), run by worker processes (`manage.py db_worker`, RQ or Celery workers; see "
            "docs/deployment.md), each job running its task to its end. "
            "Checked: a2a.E070; a2a.W070 without a shared A2A_EVENTS.",
        ),
        "A2A_BLOCKING_TIMEOUT": Setting(
            float,
            60.0,
            min=0,
            doc="Blocking SendMessage waits at most this long (seconds), then answers with the Task as it stands;"
            " the Task goes on in the background.",
        ),
        "A2A_SHUTDOWN_GRACE": Setting(
            float,
            10.0,
            min=0,
            doc="On shutdown, in-flight Tasks get this long (seconds) to finish before they are saved as failed "
            "with a message that says so.",
        ),
        "A2A_PUBLIC_URL": Setting(
            str,
            None,
            check_id="a2a.E004",
            doc='Absolute base URL the Agent Card advertises (e.g. "https://agent.example.com"); None derives it '
            "from each request's host and scheme.",
        ),
        "A2A_AGENT_NAME": Setting(
            str,
            None,
            check_id="a2a.E031",
            doc="The Agent Card's name; None: the project's, the package of ROOT_URLCONF (\"myproject.urls\" -> "
            '"myproject"; else BASE_DIR\'s directory name, else "A2A agent").',
        ),
        "A2A_AGENT_DESCRIPTION": Setting(str, "An A2A agent served by Django.", doc=_CARD),
        "A2A_AGENT_VERSION": Setting(str, "0.1.0", doc=_CARD),
        "A2A_PROVIDER_ORGANIZATION": Setting(str, "", doc=_PROVIDER),
        "A2A_PROVIDER_URL": Setting(str, "", doc=_PROVIDER),
        "A2A_DOCUMENTATION_URL": Setting(str, "", doc=_PROVIDER),
        "A2A_SKILLS": Setting(
            list,
            [],
            check_id="a2a.E003",
            doc='A list of skill dicts: {"id", "name", "description", "tags", "examples"?}.',
        ),
        "A2A_INPUT_MODES": Setting(list, ["text/plain", "application/json"], check_id="a2a.E030", doc=_MODES),
        "A2A_OUTPUT_MODES": Setting(list, ["text/plain"], check_id="a2a.E030", doc=_MODES),
        "A2A_DIRECT_ASGI": Setting(
            bool,
            False,
            doc="False: the A2A endpoints go through the project's MIDDLEWARE, like every view (in one thread hop "
            "per request: a2a.http.chain). True: a2a.asgi serves them straight from the async views, skipping "
            "MIDDLEWARE and the request signals (CORS, security headers, request-id middleware do not see them): "
            "the rest of Django's per-request work (measured in docs/deployment.md).",
        ),
        "A2A_STREAM_KEEPALIVE": Setting(
            float,
            15.0,
            min=0,
            doc="Streams send an SSE comment this often (seconds) while nothing happens, so proxies keep them open.",
        ),
        "A2A_STREAM_REPLAY_EVENTS": Setting(
            int,
            100,
            min=0,
            doc="Stream events each task keeps for clients that reconnect (docs/extensions/resumable-streams.md): "
            "the last this many, saved with the task. A client resuming from an older one gets the gap marker "
            "and the whole task. 0 keeps none.",
        ),
        "A2A_STREAM_REPLAY_MAX_AGE": Setting(
            float,
            3600.0,
            min=0,
            doc="Seconds a kept stream event stays replayable (A2A_STREAM_REPLAY_EVENTS): an older one is dropped "
            "at the task's next save and not replayed.",
        ),
        "A2A_AUTHENTICATION_CLASSES": Setting(
            list,
            [],
            check_id="a2a.E005",
            doc="django-rest-framework authentication classes (dotted paths) the A2A endpoints accept, e.g. "
            '["a2a.auth.BearerTokenAuthentication", "a2a.auth.APIKeyAuthentication"]. Empty: an open agent. '
            "Set: unauthenticated requests get 401 and tasks are owned.",
        ),
        "A2A_API_KEY_HEADER": Setting(str, "X-API-Key", doc="The header a2a.auth.APIKeyAuthentication reads."),
        "A2A_EXTENDED_CARD": Setting(
            dict,
            None,
            doc='Fields of the extended agent card, served to authenticated callers only (its "skills" are added '
            "to the public ones); None: no extended card.",
        ),
        "A2A_CARD_MAX_AGE": Setting(int, 300, min=0, doc="Agent Card max-age for HTTP caching (seconds)."),
        "A2A_CATALOG_AUTHENTICATION": Setting(
            bool,
            False,
            doc="Whether the discovery catalogs (/.well-known/ai-catalog.json and /.well-known/api-catalog, "
            "docs/agents.md) answer only callers A2A_AUTHENTICATION_CLASSES accept (401 with WWW-Authenticate "
            "otherwise). False: anyone may read them, as anyone may read the agent cards they list.",
        ),
        "A2A_CATALOG_PUBLISHER": Setting(
            str,
            "",
            doc="The publisher of the AI Catalog's entry identifiers (urn:air:{publisher}:a2a:{agent}), e.g. "
            '"example.com". Empty: the serving host, with its port unless the scheme\'s default.',
        ),
        "A2A_BROWSABLE_AGENT": Setting(
            object,
            "staff",
            doc="The browsable agent page (/a2a/browse/, docs/browse.md): the Agent Card as a page and a form to "
            'talk to the agent, through the same operations as any client. "staff": signed-in staff only '
            '(others are sent to the admin\'s login); "public": anyone may see the card, and send when the '
            "agent needs no authentication (else staff only); False: no page (404).",
        ),
    },
    "Signed Agent Cards (spec 8.4; the `signing` extra: PyJWT, cryptography, rfc8785)": {
        "A2A_CARD_SIGNING_KEY": Setting(
            str,
            "",
            check_id="a2a.E080",
            secret=True,
            doc="The private key that signs the Agent Card (and the extended card): PEM text, or the path of a "
            "PEM file (relative to BASE_DIR). EC P-256 signs with ES256, RSA (2048 bits or more) with RS256, "
            "Ed25519 with EdDSA. Empty: the card is not signed. Checked: a2a.E080.",
        ),
        "A2A_CARD_SIGNING_KID": Setting(
            str, "", check_id="a2a.E080", doc="The signature's `kid` (key id); empty: the key's RFC 7638 thumbprint."
        ),
        "A2A_CARD_SIGNING_JKU": Setting(
            str,
            "",
            check_id="a2a.E080",
            doc="The signature's `jku`: the URL of a JWK Set holding the public key (publish the one `manage.py "
            "a2a_card jwks` prints, or point it at the agent's own /.well-known/jwks.json); empty: none. Also the "
            "`jku` of the push notifications' JWTs, which otherwise name the agent's JWK Set URL when "
            "A2A_PUBLIC_URL is set.",
        ),
        "A2A_CARD_SIGNING_PREVIOUS_KEYS": Setting(
            list,
            [],
            check_id="a2a.E080",
            doc="Public keys still published in the agent's JWK Set (/.well-known/jwks.json) beside the "
            "A2A_CARD_SIGNING_KEY's, during a key rotation: each a PEM public key, certificate or private key, a "
            "JWK or a JWK Set, as text or the path of a file (relative to BASE_DIR); a key without `kid` gets its "
            "RFC 7638 thumbprint. Nothing is signed with them (docs/protocol.md, Signed push notifications).",
        ),
        "A2A_PUSH_NOTIFICATIONS": Setting(
            bool,
            True,
            doc="Push notifications (the card's capabilities.pushNotifications). False answers every push config "
            "method, and a SendMessage carrying a push config, with -32003.",
        ),
        "A2A_PUSH_ALLOW_PRIVATE_URLS": Setting(
            bool,
            False,
            doc="Allow webhook URLs that resolve to loopback, private, link-local or other non-public addresses "
            "(SSRF guard). Only for tests and closed networks.",
        ),
        "A2A_PUSH_MAX_ATTEMPTS": Setting(
            int,
            5,
            min=1,
            doc="Attempts per delivery (the first one included) on connection errors, timeouts, 5xx and 429; then"
            " a logged warning.",
        ),
        "A2A_PUSH_RETRY_DELAY": Setting(
            float, 1.0, min=0, doc="Seconds before the first retry; doubled for each further one (capped at 5 minutes)."
        ),
        "A2A_PUSH_TIMEOUT": Setting(
            float, 10.0, min=0.1, doc="Seconds one webhook POST may take (connect, send, answer)."
        ),
        "A2A_PUSH_TOKEN_LIFETIME": Setting(
            float,
            300.0,
            min=1,
            doc="Seconds a push notification's JWT is valid (its `exp` after its `iat`); each delivery attempt "
            "signs a new one. Only with A2A_CARD_SIGNING_KEY (docs/protocol.md, Signed push notifications).",
        ),
    },
    "Streams across processes (a2a/core/eventbackends)": {
        "A2A_EVENTS": Setting(
            object,
            "memory",
            doc='How a task\'s events reach streams and subscribers in other processes: "memory" (in this process '
            'only), a Redis URL ("redis://127.0.0.1:6379/0": pub/sub), "postgres" / "postgres:<alias>" / a '
            '"postgresql://" URL (LISTEN/NOTIFY), or a dotted EventBackend path.',
        ),
        "A2A_EVENTS_CHANNEL": Setting(
            object,
            "a2a_events",
            doc="The Redis channel / PostgreSQL LISTEN channel the processes of one deployment share (at most 63 "
            "bytes).",
        ),
    },
    'The gRPC binding (a2a/grpc; the "grpc" extra)': {
        "A2A_GRPC_URL": Setting(
            str,
            None,
            check_id="a2a.E091",
            doc='The gRPC interface the Agent Card advertises (supportedInterfaces: protocolBinding "GRPC", '
            'protocolVersion "1.0"), as clients dial it: "host:port", e.g. "agent.example.com:50051". None: '
            "the card names no gRPC interface. Checked: a2a.E091.",
        ),
        "A2A_GRPC_ADDRESS": Setting(
            str,
            "127.0.0.1:50051",
            check_id="a2a.E091",
            doc='"host:port" the gRPC server listens on (`manage.py a2a_grpc`, unless --address says otherwise). '
            "Checked: a2a.E091.",
        ),
        "A2A_GRPC_IN_ASGI": Setting(
            bool,
            False,
            check_id="a2a.E090",
            doc="Also serve gRPC on A2A_GRPC_ADDRESS from the ASGI app (a2a.asgi), beside HTTP in the same "
            "process and event loop, started and stopped with it (several worker processes share the port only "
            "with A2A_GRPC_REUSE_PORT). False: only `manage.py a2a_grpc` serves it. Checked: a2a.E090 (the grpc "
            "extra is installed).",
        ),
        "A2A_GRPC_REUSE_PORT": Setting(
            bool,
            False,
            doc="Whether gRPC servers share A2A_GRPC_ADDRESS's port (SO_REUSEPORT), as the worker processes of one "
            "deployment with A2A_GRPC_IN_ASGI do (`uvicorn --workers 4`). False: a port in use stops the start-up.",
        ),
    },
    'The model-backed handler (A2A_HANDLER = "a2a.handlers.llm.handle")': {
        "A2A_LLM_BASE_URL": Setting(
            str,
            "",
            check_id="a2a.E013",
            doc='Base URL of the model API: an OpenAI-compatible one ("https://api.openai.com/v1", '
            '"http://127.0.0.1:11434/v1" for Ollama) or Anthropic\'s ("https://api.anthropic.com/v1"). Empty: '
            "the LLM handler is not configured (and nothing ever calls the network).",
        ),
        "A2A_LLM_MODEL": Setting(
            str,
            "",
            check_id="a2a.E013",
            doc='The model name the endpoint knows, e.g. "gpt-4o-mini" or "claude-sonnet-4-5".',
        ),
        "A2A_LLM_API_KEY": Setting(
            str,
            "",
            check_id="a2a.E013",
            secret=True,
            doc='The API key (sent as "Authorization: Bearer" or, Anthropic-style, "x-api-key"); from the '
            "environment variable of the same name. Empty sends none.",
        ),
        "A2A_LLM_STYLE": Setting(
            str,
            "openai",
            choices=("openai", "anthropic"),
            check_id="a2a.E010",
            doc='The wire format: "openai" (POST {base}/chat/completions) or "anthropic" (POST {base}/messages).',
        ),
        "A2A_LLM_TIMEOUT": Setting(
            float, 60.0, min=0.1, doc="Seconds one model request may take (connect, send, answer)."
        ),
        "A2A_LLM_MAX_RETRIES": Setting(
            int, 2, min=0, doc="Retries after a connection error, a timeout, 408, 429 or 5xx (0: none)."
        ),
        "A2A_LLM_RETRY_BACKOFF": Setting(
            float,
            1.0,
            min=0,
            doc="Seconds before the first retry, doubled for each further one (with jitter, at most 30 s); a "
            "Retry-After header wins.",
        ),
        "A2A_LLM_MAX_TOKENS": Setting(
            int,
            0,
            min=0,
            doc="max_tokens of each answer; 0 sends none (OpenAI style) or 4096 (Anthropic requires one).",
        ),
        "A2A_LLM_SYSTEM_PROMPT": Setting(
            str,
            "",
            check_id="a2a.E013",
            doc="The system prompt; empty: one made from A2A_AGENT_NAME and A2A_AGENT_DESCRIPTION. The targeted "
            "skill's instructions are appended to it.",
        ),
        "A2A_LLM_CONTEXT_TASKS": Setting(
            int, 10, min=0, doc="How many earlier tasks of the same contextId the model sees as conversation (0: none)."
        ),
        "A2A_LLM_TOOLS": Setting(
            list,
            [],
            doc="Dotted paths of the project's Python functions the model may call as tools (the name, the "
            "docstring and the type hints make the schema; a sync function runs off the event loop; "
            "docs/handlers.md). Checked: a2a.E015 (every path names a function).",
        ),
        "A2A_LLM_REMOTE_TOOLS": Setting(
            list,
            [],
            doc="Names of A2A_REMOTE_AGENTS entries whose skills the model may call as tools (one tool per remote "
            "skill, run through delegation; docs/handlers.md). Empty: no tools. Checked: a2a.E014 (every name is an "
            "A2A_REMOTE_AGENTS entry).",
        ),
        "A2A_LLM_MAX_ROUNDS": Setting(
            int,
            5,
            min=1,
            doc="With tools, the most model requests one turn of a task makes (each may call tools, whose answers "
            "the next one reads); a model still calling tools in the last one fails the task.",
        ),
        "A2A_SKILLS_DIR": Setting(
            (str, Path),
            None,
            check_id="a2a.E020",
            doc="A directory of skills, one SKILL.md per sub-directory (see a2a/handlers/skills.py); relative to "
            "BASE_DIR. Its skills join A2A_SKILLS on the Agent Card. None: no directory.",
        ),
        "A2A_SKILLS_ENABLED": Setting(
            (str, list),
            None,
            check_id="a2a.E022",
            doc="Ids of the A2A_SKILLS_DIR skills to offer (a list, or comma-separated); None: all.",
        ),
    },
    "Limits on what a request may carry (answered with -32600/-32602 naming the setting)": {
        "A2A_MAX_BODY_BYTES": Setting(
            int,
            10 * 1024 * 1024,
            min=1,
            doc="Bytes of a request body, checked by both bindings before parsing and read no further (-32600 "
            "with HTTP 413 beyond). The A2A endpoints' own limit: Django's DATA_UPLOAD_MAX_MEMORY_SIZE (for "
            "form posts) does not apply to them.",
        ),
        "A2A_MAX_PARTS": Setting(int, 100, min=1, doc="Parts of one message."),
        "A2A_MAX_TEXT_LENGTH": Setting(int, 1_000_000, min=1, doc="Characters of one text part."),
        # The ids this agent makes are UUIDs (36 characters): a lower limit would refuse them.
        "A2A_MAX_ID_LENGTH": Setting(int, 255, min=36, doc="Characters of a task, context, message or push config id."),
        "A2A_MAX_PAGE_SIZE": Setting(
            int,
            100,
            min=1,
            doc="Largest ListTasks pageSize; at most 100, the task stores' own ceiling (the default page is 50, "
            "or this when smaller).",
        ),
        "A2A_MAX_BATCH_SIZE": Setting(
            int, 100, min=1, doc="Requests in one JSON-RPC batch; a longer batch is answered with one -32600 error."
        ),
        "A2A_MAX_HISTORY": Setting(
            int,
            100,
            min=1,
            doc="Messages kept in a task's history: when a follow-up or an agent message would make it longer, "
            "the oldest are dropped.",
        ),
    },
    "Slow clients (a2a.http.protocol: uvicorn --http a2a.http.protocol:HttpToolsProtocol)": {
        "A2A_HEADER_TIMEOUT": Setting(
            float,
            10.0,
            min=0,
            doc="Seconds a request line and headers may take to arrive; the connection is closed beyond.",
        ),
        "A2A_BODY_TIMEOUT": Setting(
            float,
            30.0,
            min=0,
            doc="Seconds a request body may pause between two reads; the connection is closed beyond.",
        ),
        "A2A_MAX_CONNECTIONS": Setting(
            int,
            0,
            min=0,
            doc="Connections one server process keeps open; over it, the one reading its request the longest is "
            "closed. 0: three quarters of the process's open-file limit.",
        ),
    },
    "Operations": {
        "A2A_STALE_AFTER": Setting(
            float,
            3600.0,
            min=1,
            doc='A submitted or working task not updated for this many seconds is stale: the admin\'s "fail stale"'
            " action and `manage.py a2a_tasks fail-stale` (its default --older-than) save it as failed.",
        ),
        "A2A_HEALTH_TIMEOUT": Setting(
            float,
            5.0,
            min=0.1,
            doc="Seconds each check of /healthz (the store, the runner, ...) may take before it fails.",
        ),
    },
    "Leases and crashes (a2a/core/leases.py)": {
        "A2A_LEASE_SECONDS": Setting(
            float,
            30.0,
            min=1,
            doc="A task in flight is leased to the process running it for this many seconds, renewed every third "
            "of it; a task whose lease ran out (its process died) is failed or re-run.",
        ),
        "A2A_LEASE_CHECK_INTERVAL": Setting(
            float,
            30.0,
            min=0,
            doc="Every server process looks for expired leases at start and then this often (seconds, with "
            "jitter); 0: only at start (and with `manage.py a2a_leases`).",
        ),
        "A2A_RETRY_ON_LOST_LEASE": Setting(
            bool,
            False,
            check_id="a2a.E050",
            doc="Re-run (rather than fail) a working task whose process died, at most 3 runs in all. Only for "
            "handlers that are safe to run twice (idempotent).",
        ),
        "A2A_EXPECT_WORKERS": Setting(
            int,
            1,
            min=1,
            doc="How many server processes share the task store (for the a2a.W001 check: the memory store cannot "
            "be shared); the WEB_CONCURRENCY environment variable counts too.",
        ),
    },
    "Retention (a2a/runtime/retention.py, docs/operations.md)": {
        "A2A_RETENTION": Setting(
            dict,
            {},
            check_id="a2a.E130",
            doc='How long a task is kept, by state: {"completed": "30d", "failed": "7d", "canceled": "7d", '
            '"rejected": "7d", "input-required": "90d", "auth-required": "90d"} (ages as `a2a_tasks prune '
            "--older-than` takes them, or seconds; None: forever), counted from the task's last status change. "
            "A state it does not name is kept forever (the default, {}: every task). A context goes only when "
            "all its tasks have expired; a task staff kept (the admin) never does. Checked: a2a.E130.",
        ),
        "A2A_RETENTION_INTERVAL": Setting(
            float,
            3600.0,
            min=0,
            doc="Every server process (and queue worker) sweeps the expired tasks of every store in use this "
            "often (seconds, with jitter); 0: never by itself (`manage.py a2a_tasks prune` or the "
            "`a2a.runtime.worker.sweep_job` job of the Tasks framework then do).",
        ),
        "A2A_RETENTION_BATCH": Setting(
            int,
            200,
            min=1,
            doc="Tasks a sweep deletes at once (one transaction on the ORM store) before it pauses, so "
            "requests never wait long behind it.",
        ),
    },
    "Tracing (a2a/core/tracing.py)": {
        "A2A_TRACING": Setting(
            bool,
            False,
            doc="OpenTelemetry spans for each operation, the handler run, store calls and push delivery, joined "
            "to an incoming `traceparent` (docs/operations.md). Needs the `otel` extra (opentelemetry-api); "
            "the project sets up the SDK and an exporter. Off: no cost.",
        ),
    },
    **LATER_SECTIONS,
}

#: Setting name -> declaration, all sections in one.
SETTINGS: dict[str, Setting] = {name: s for section in SECTIONS.values() for name, s in section.items()}

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
        return self.get(attr if attr == "TASK_STORE" else f"A2A_{attr}")

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


a2a_settings = A2ASettings()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in SETTINGS:
        a2a_settings.reload()


setting_changed.connect(_on_setting_changed)

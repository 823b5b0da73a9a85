"""Every setting the ``a2a`` and ``stores`` apps read, one line each: its name, type, default,
bounds or choices and system check id (:class:`~a2a.setting.Setting`), grouped by feature.

Values here, prose in the docs, as Django's ``global_settings.py`` and ``settings.txt``: what
a setting means is its entry in docs/settings.md, whose sections are these features in this
order; tests/test_settings.py holds the page to these declarations (each setting documented
once, in its feature's section, with this default and type).

**Adding a setting**: a line in its feature here (a new feature: a section of its own, here
and on the page), its entry in docs/settings.md, and its name in the
:func:`~a2a.ops.checks.registry.concern` of that feature's check in ``a2a/ops/checks/``
(tests/test_settings.py holds every setting to one check).
"""

from __future__ import annotations

from pathlib import Path

from a2a import __version__
from a2a.setting import Setting

#: Feature -> setting name -> declaration, in the order of docs/settings.md's sections.
FEATURES: dict[str, dict[str, Setting]] = {
    # Tasks: where they live (the task store), what fulfils them (the handler), how they run (the runner, the
    # executor).
    "tasks": {
        "TASK_STORE": Setting(object, "memory"),
        "A2A_HANDLER": Setting(str, "a2a.handlers.echo", check_id="a2a.E001"),
        "A2A_WORKERS": Setting(int, 32, min=1),
        "A2A_EXECUTOR": Setting(object, "thread"),
        "A2A_BLOCKING_TIMEOUT": Setting(float, 60.0, min=0),
        "A2A_SHUTDOWN_GRACE": Setting(float, 10.0, min=0),
    },
    # What the Agent Card says of the agent.
    "card": {
        "A2A_PUBLIC_URL": Setting(str, None, check_id="a2a.E004"),
        "A2A_AGENT_NAME": Setting(str, None, check_id="a2a.E031"),
        "A2A_AGENT_DESCRIPTION": Setting(str, "An A2A agent served by Django."),
        "A2A_AGENT_VERSION": Setting(str, __version__),  # the package's, until the project sets its own
        "A2A_PROVIDER_ORGANIZATION": Setting(str, ""),
        "A2A_PROVIDER_URL": Setting(str, "", check_id="a2a.E032"),
        "A2A_DOCUMENTATION_URL": Setting(str, "", check_id="a2a.E032"),
        "A2A_SKILLS": Setting(list, [], check_id="a2a.E003"),
        "A2A_INPUT_MODES": Setting(list, ["text/plain", "application/json"], check_id="a2a.E030"),
        "A2A_OUTPUT_MODES": Setting(list, ["text/plain"], check_id="a2a.E030"),
        "A2A_EXTENDED_CARD": Setting(dict, None),
        "A2A_CARD_MAX_AGE": Setting(int, 300, min=0),
    },
    # Signing the Agent Card (and push notifications' JWTs): the key, its id, its JWK Set.
    "signing": {
        "A2A_CARD_SIGNING_KEY": Setting(str, "", check_id="a2a.E080", secret=True),
        "A2A_CARD_SIGNING_KID": Setting(str, "", check_id="a2a.E080"),
        "A2A_CARD_SIGNING_JKU": Setting(str, "", check_id="a2a.E080"),
        "A2A_CARD_SIGNING_PREVIOUS_KEYS": Setting(list, [], check_id="a2a.E080"),
    },
    # Who may call the A2A endpoints: the authentication classes.
    "auth": {
        "A2A_AUTHENTICATION_CLASSES": Setting(list, [], check_id="a2a.E005"),
        "A2A_API_KEY_HEADER": Setting(str, "X-API-Key"),
    },
    # The discovery catalogs (/.well-known/ai-catalog.json, /.well-known/api-catalog).
    "catalogs": {
        "A2A_CATALOG_AUTHENTICATION": Setting(bool, False),
        "A2A_CATALOG_PUBLISHER": Setting(str, ""),
    },
    # The browsable agent page (/a2a/browse/).
    "browse": {
        "A2A_BROWSABLE_AGENT": Setting(object, "staff"),
    },
    # Streams: keep-alives, the events kept for reconnecting clients, and how a task's events reach other processes.
    "streams": {
        "A2A_STREAM_KEEPALIVE": Setting(float, 15.0, min=0),
        "A2A_STREAM_REPLAY_EVENTS": Setting(int, 100, min=0),
        "A2A_STREAM_REPLAY_MAX_AGE": Setting(float, 3600.0, min=0),
        "A2A_EVENTS": Setting(object, "memory"),
        "A2A_EVENTS_CHANNEL": Setting(object, "a2a_events"),
    },
    # Push notifications: whether they are offered, the SSRF guard, delivery.
    "push": {
        "A2A_PUSH_NOTIFICATIONS": Setting(bool, True),
        "A2A_PUSH_ALLOW_PRIVATE_URLS": Setting(bool, False),
        "A2A_PUSH_MAX_ATTEMPTS": Setting(int, 5, min=1),
        "A2A_PUSH_RETRY_DELAY": Setting(float, 1.0, min=0),
        "A2A_PUSH_TIMEOUT": Setting(float, 10.0, min=0.1),
        "A2A_PUSH_TOKEN_LIFETIME": Setting(float, 300.0, min=1),
    },
    # The limits on what one request may carry (a2a/protocol/limits.py).
    "limits": {
        "A2A_MAX_BODY_BYTES": Setting(int, 10 * 1024 * 1024, min=1),
        "A2A_MAX_PARTS": Setting(int, 100, min=1),
        "A2A_MAX_TEXT_LENGTH": Setting(int, 1_000_000, min=1),
        # The ids this agent makes are UUIDs (36 characters): a lower limit would refuse them.
        "A2A_MAX_ID_LENGTH": Setting(int, 255, min=36),
        "A2A_MAX_PAGE_SIZE": Setting(int, 100, min=1),
        "A2A_MAX_BATCH_SIZE": Setting(int, 100, min=1),
        "A2A_MAX_HISTORY": Setting(int, 100, min=1),
    },
    # Serving HTTP: the middleware path, and the slow-client timeouts and connection cap of a2a.http.protocol.
    "server": {
        "A2A_DIRECT_ASGI": Setting(bool, False),
        "A2A_HEADER_TIMEOUT": Setting(float, 10.0, min=0),
        "A2A_BODY_TIMEOUT": Setting(float, 30.0, min=0),
        "A2A_MAX_CONNECTIONS": Setting(int, 0, min=0),
    },
    # The gRPC binding: the interface the card advertises, the server's address.
    "grpc": {
        "A2A_GRPC_URL": Setting(str, None, check_id="a2a.E091"),
        "A2A_GRPC_ADDRESS": Setting(str, "127.0.0.1:50051", check_id="a2a.E091"),
        "A2A_GRPC_IN_ASGI": Setting(bool, False, check_id="a2a.E090"),
        "A2A_GRPC_REUSE_PORT": Setting(bool, False),
    },
    # The model-backed handler (a2a/handlers/llm.py): the model API, retries, prompts, tools.
    "llm": {
        "A2A_LLM_BASE_URL": Setting(str, "", check_id="a2a.E013"),
        "A2A_LLM_MODEL": Setting(str, "", check_id="a2a.E013"),
        "A2A_LLM_API_KEY": Setting(str, "", check_id="a2a.E013", secret=True),
        "A2A_LLM_STYLE": Setting(str, "openai", choices=("openai", "anthropic"), check_id="a2a.E010"),
        "A2A_LLM_TIMEOUT": Setting(float, 60.0, min=0.1),
        "A2A_LLM_MAX_RETRIES": Setting(int, 2, min=0),
        "A2A_LLM_RETRY_BACKOFF": Setting(float, 1.0, min=0),
        "A2A_LLM_MAX_TOKENS": Setting(int, 0, min=0),
        "A2A_LLM_SYSTEM_PROMPT": Setting(str, "", check_id="a2a.E013"),
        "A2A_LLM_CONTEXT_TASKS": Setting(int, 10, min=0),
        "A2A_LLM_TOOLS": Setting(list, []),
        "A2A_LLM_REMOTE_TOOLS": Setting(list, []),
        "A2A_LLM_MAX_ROUNDS": Setting(int, 5, min=1),
    },
    # Skills read from a directory of SKILL.md files.
    "skills": {
        "A2A_SKILLS_DIR": Setting((str, Path), None, check_id="a2a.E020"),
        "A2A_SKILLS_ENABLED": Setting((str, list), None, check_id="a2a.E022"),
    },
    # More agents served by this project.
    "agents": {
        "A2A_AGENTS": Setting(dict, {}, check_id="a2a.E110"),
    },
    # Other A2A agents this project calls by name.
    "remote": {
        "A2A_REMOTE_AGENTS": Setting(dict, {}, check_id="a2a.E100"),
    },
    # File parts: where they are offloaded, their limits, the orphan sweep.
    "files": {
        "A2A_FILES_STORAGE": Setting(str, "default", check_id="a2a.E120"),
        "A2A_FILES_OFFLOAD_BYTES": Setting(int, 1024 * 1024, min=0),
        "A2A_FILES_MAX_PART_BYTES": Setting(int, None, min=1),
        "A2A_FILES_MAX_TASK_BYTES": Setting(int, None, min=1),
        "A2A_FILES_ORPHAN_GRACE": Setting(float, 3600.0, min=60),
        "A2A_FILES_ORPHAN_INTERVAL": Setting(float, 600.0, min=0),
    },
    # Leases: how a crashed process's tasks are found and failed or re-run.
    "leases": {
        "A2A_LEASE_SECONDS": Setting(float, 30.0, min=1),
        "A2A_LEASE_CHECK_INTERVAL": Setting(float, 30.0, min=0),
        "A2A_RETRY_ON_LOST_LEASE": Setting(bool, False, check_id="a2a.E050"),
        "A2A_EXPECT_WORKERS": Setting(int, 1, min=1),
    },
    # Retention: how long tasks are kept, and the sweep that deletes them.
    "retention": {
        "A2A_RETENTION": Setting(dict, {}, check_id="a2a.E130"),
        "A2A_RETENTION_INTERVAL": Setting(float, 3600.0, min=0),
        "A2A_RETENTION_BATCH": Setting(int, 200, min=1),
    },
    # Operations: stale tasks, health checks.
    "operations": {
        "A2A_STALE_AFTER": Setting(float, 3600.0, min=1),
        "A2A_HEALTH_TIMEOUT": Setting(float, 5.0, min=0.1),
    },
    # Tracing: OpenTelemetry spans.
    "tracing": {
        "A2A_TRACING": Setting(bool, False),
    },
    # MCP: every agent an MCP server too (a2a/mcp/).
    "mcp": {
        "A2A_MCP": Setting(bool, False),
        "A2A_MCP_ALLOWED_ORIGINS": Setting(list, [], check_id="a2a.E140"),
        "A2A_MCP_AUTHORIZATION_SERVERS": Setting(list, [], check_id="a2a.E140"),
        "A2A_MCP_STATE_MAX_AGE": Setting(float, 7 * 86400.0, min=60),
    },
    # The A2A 1.1 draft's long-polling GetTask.
    "long_poll": {
        "A2A_LONG_POLL_TIMEOUT": Setting(float, 30.0, min=0),
    },
}

"""Remote agents by name: the ``A2A_REMOTE_AGENTS`` setting, one client per agent.

``A2A_REMOTE_AGENTS = {"billing": {"URL": "https://billing.example.com", "AUTH": {...},
...}}``: each entry's keys are :data:`OPTIONS`. :func:`client` and :func:`async_client`
give the agent's client, built on first use (its card fetched on its first call) and
kept until the setting changes; :func:`check_setting` says what is wrong with the setting
(``manage.py check``).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed

from a2a.client import auth as credentials
from a2a.client.aio import AsyncClient
from a2a.client.card import BINDINGS, VERSIONS
from a2a.client.errors import ClientError
from a2a.client.sync import Client
from a2a.conf import a2a_settings
from a2a.core.retry import RetryPolicy

SETTING = "A2A_REMOTE_AGENTS"
#: The keys of an entry and what each takes.
OPTIONS = {
    "URL": "the agent's card URL, or its base URL (its well-known card is read)",
    "AUTH": "credentials (a2a.client.auth.from_setting): bearer, api_key, headers or oauth2",
    "TIMEOUT": "seconds each request may take (default 60)",
    "STREAM_TIMEOUT": "seconds a stream may go without a byte (default 300; None: no limit)",
    "RETRIES": "attempts in all for a request that is safe to retry (default 3)",
    "RETRY_WRITES": "also retry sends whose outcome is unknown (the agent dedupes by messageId)",
    "BINDING": "speak only this binding: JSONRPC or HTTP+JSON",
    "VERSION": "speak only this A2A version: 1.0 or 0.3",
    "VERIFY_SIGNATURE": "refuse the card unless a signature verifies with SIGNATURE_KEYS",
    "SIGNATURE_KEYS": "the card's public keys: PEM, certificate, JWK or JWK Set (text or file)",
    "HEADERS": "headers sent on every request",
    "FORWARD_CALLER_CREDENTIALS": "delegation passes the local caller's credentials on (default False)",
}


class UnknownRemoteAgent(ClientError, KeyError):
    """No entry of that name in ``A2A_REMOTE_AGENTS``."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class RemoteAgent:
    """One entry of ``A2A_REMOTE_AGENTS``, read."""

    name: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def forward_caller_credentials(self) -> bool:
        """Whether delegation may pass the local caller's credentials to this agent."""
        return bool(self.options.get("FORWARD_CALLER_CREDENTIALS", False))

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments of :class:`Client` / :class:`AsyncClient` for this agent."""
        o = self.options
        base_dir = getattr(settings, "BASE_DIR", None)
        return {
            "auth": credentials.from_setting(o.get("AUTH")),
            "headers": dict(o.get("HEADERS") or {}),
            "timeout": float(o.get("TIMEOUT", 60.0)),
            "stream_timeout": None if o.get("STREAM_TIMEOUT", 300.0) is None else float(o.get("STREAM_TIMEOUT", 300.0)),
            "retry": RetryPolicy(attempts=int(o.get("RETRIES", 3)), retry_writes=bool(o.get("RETRY_WRITES", False))),
            "binding": o.get("BINDING"),
            "version": o.get("VERSION"),
            "verify_signature": bool(o.get("VERIFY_SIGNATURE", False)),
            "signature_keys": o.get("SIGNATURE_KEYS"),
            "base_dir": Path(base_dir) if base_dir else None,
            "name": self.name,
        }


def remote_agents() -> dict[str, RemoteAgent]:
    """Every configured remote agent, by name."""
    return {
        name: RemoteAgent(name, str(entry["URL"]), dict(entry))
        for name, entry in (a2a_settings.REMOTE_AGENTS or {}).items()
    }


def remote_agent(name: str) -> RemoteAgent:
    """The remote agent ``name``; UnknownRemoteAgent when it is not configured."""
    agents = remote_agents()
    if name not in agents:
        known = ", ".join(sorted(agents)) or "none"
        raise UnknownRemoteAgent(f"No remote agent {name!r} in A2A_REMOTE_AGENTS (configured: {known})")
    return agents[name]


def client_for(entry: Mapping[str, Any], name: str = "") -> Client:
    """A new sync client from an entry shaped as ``A2A_REMOTE_AGENTS``' (a catalog entry
    not in the setting); ValueError for a bad entry."""
    return Client(**_built(entry, name))


def async_client_for(entry: Mapping[str, Any], name: str = "") -> AsyncClient:
    """A new async client from an entry shaped as ``A2A_REMOTE_AGENTS``'."""
    return AsyncClient(**_built(entry, name))


def _built(entry: Mapping[str, Any], name: str) -> dict[str, Any]:
    problems = _entry_problems(entry)
    if problems:
        raise ValueError(f"Remote agent {name or entry.get('URL')!r}: {'; '.join(problems)}")
    agent = RemoteAgent(name or str(entry["URL"]), str(entry["URL"]), dict(entry))
    return {"agent": agent.url, **agent.client_options()}


_lock = threading.Lock()
_clients: dict[str, Client] = {}
#: Async clients per event loop: an httpx.AsyncClient's connections belong to one loop.
_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def client(name: str) -> Client:
    """The sync client of the remote agent ``name`` (one per process)."""
    with _lock:
        if name not in _clients:
            _clients[name] = client_for(remote_agent(name).options, name)
        return _clients[name]


def async_client(name: str) -> AsyncClient:
    """The async client of the remote agent ``name`` (one per event loop)."""
    loop = asyncio.get_running_loop()
    with _lock:
        per_loop = _async_clients.setdefault(loop, {})
        if name not in per_loop:
            per_loop[name] = async_client_for(remote_agent(name).options, name)
        return per_loop[name]


def reset() -> None:
    """Forget the clients (the next call builds them from the setting again)."""
    with _lock:
        for built in _clients.values():
            built.close()
        _clients.clear()
        _async_clients.clear()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING:
        reset()


setting_changed.connect(_on_setting_changed)


def check_setting(value: Mapping[str, Any]) -> list[str]:
    """What is wrong with the entries of an ``A2A_REMOTE_AGENTS`` value (empty when nothing;
    that it is a dict at all its declaration checks, a2a/conf/declarations.py)."""
    problems = []
    for name, entry in value.items():
        problems += [f"{SETTING}[{name!r}]: {p}" for p in _entry_problems(entry)]
    return problems


def _entry_problems(entry: Any) -> list[str]:
    if not isinstance(entry, Mapping):
        return [f"must be a dict with a URL, not {type(entry).__name__}"]
    problems = [f"unknown key {key!r} (known: {', '.join(OPTIONS)})" for key in entry if key not in OPTIONS]
    url = entry.get("URL")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        problems.append(f"URL must be an absolute http(s) URL, not {url!r}")
    if entry.get("AUTH"):
        problems += credentials.setting_problems(entry["AUTH"])
    for key in ("TIMEOUT", "RETRIES"):
        value = entry.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            problems.append(f"{key} must be a positive number, not {value!r}")
    if entry.get("BINDING") not in (None, *BINDINGS):
        problems.append(f"BINDING must be one of {', '.join(BINDINGS)}, not {entry['BINDING']!r}")
    if entry.get("VERSION") not in (None, *VERSIONS):
        problems.append(f"VERSION must be one of {', '.join(VERSIONS)}, not {entry['VERSION']!r}")
    if entry.get("VERIFY_SIGNATURE") and not entry.get("SIGNATURE_KEYS"):
        problems.append("VERIFY_SIGNATURE needs SIGNATURE_KEYS (the card's public keys)")
    if entry.get("HEADERS") is not None and not isinstance(entry["HEADERS"], Mapping):
        problems.append("HEADERS must be a dict")
    return problems

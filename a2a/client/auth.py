"""Credentials for a remote agent, as ``httpx.Auth`` flows: a bearer token, an API key,
any headers, or an OAuth2 client-credentials grant (RFC 6749 4.4) whose token is cached
until it expires and fetched again, once, when the agent answers 401.

:func:`from_setting` builds one from the ``AUTH`` of an ``A2A_REMOTE_AGENTS`` entry.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any
from urllib.parse import quote_plus

import httpx

from a2a.client.errors import AuthenticationError

#: The ``TYPE`` of each ``AUTH`` setting and the keys it takes (the first ones required).
AUTH_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bearer": (("TOKEN",), ()),
    "api_key": (("KEY",), ("HEADER",)),
    "headers": (("HEADERS",), ()),
    "oauth2": (("TOKEN_URL", "CLIENT_ID", "CLIENT_SECRET"), ("SCOPE", "AUDIENCE", "CLIENT_AUTH")),
}


class HeaderAuth(httpx.Auth):
    """Fixed headers on every request: the base of the bearer and API-key credentials."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = dict(headers)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.update(self.headers)
        yield request


class BearerToken(HeaderAuth):
    """``Authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        super().__init__({"Authorization": f"Bearer {token}"})


class APIKey(HeaderAuth):
    """The key in a header (``X-API-Key`` unless named)."""

    def __init__(self, key: str, header: str = "X-API-Key") -> None:
        super().__init__({header: key})


class OAuth2ClientCredentials(httpx.Auth):
    """A bearer token from ``token_url`` by the client-credentials grant.

    The token is kept until ``expires_in`` (less ``leeway`` seconds) and shared by the
    requests of every thread; a 401 from the agent drops it and the request is sent
    once more with a fresh one. The client authenticates to the token endpoint with HTTP
    Basic (``client_auth="basic"``, RFC 6749 2.3.1's default) or in the form body
    (``"body"``). The token request goes through the same HTTP client (its transport,
    timeouts and proxies)."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        audience: str | None = None,
        client_auth: str = "basic",
        leeway: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.token_url, self.client_id, self.client_secret = token_url, client_id, client_secret
        self.scope, self.audience, self.client_auth = scope, audience, client_auth
        self.leeway, self.clock = leeway, clock
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()
        #: How many tokens were fetched (for tests and metrics).
        self.fetched = 0

    def token_request(self) -> httpx.Request:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        if self.audience:
            form["audience"] = self.audience
        headers = {"Accept": "application/json"}
        if self.client_auth == "body":
            form.update(client_id=self.client_id, client_secret=self.client_secret)
        else:
            # RFC 6749 2.3.1: each form-urlencoded, then HTTP Basic.
            pair = f"{quote_plus(self.client_id)}:{quote_plus(self.client_secret)}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        return httpx.Request("POST", self.token_url, data=form, headers=headers)

    def _cached(self) -> str | None:
        with self._lock:
            return self._token if self._token and self.clock() < self._expires else None

    def _store(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            body = {}
        token = body.get("access_token") if isinstance(body, dict) else None
        if response.status_code != 200 or not isinstance(token, str) or not token:
            detail = body.get("error_description") or body.get("error") if isinstance(body, dict) else None
            raise AuthenticationError(
                f"The token endpoint {self.token_url} refused client {self.client_id!r}: "
                f"HTTP {response.status_code}{f' ({detail})' if detail else ''}",
                status=response.status_code,
            )
        try:
            lifetime = float(body.get("expires_in") or 3600)
        except (TypeError, ValueError):
            lifetime = 3600.0
        with self._lock:
            self._token, self._expires = token, self.clock() + max(lifetime - self.leeway, 0.0)
            self.fetched += 1
        return token

    def forget(self) -> None:
        """Drop the cached token (the next request fetches one)."""
        with self._lock:
            self._token = None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self._cached()
        if token is None:
            token = self._store((yield self.token_request()))
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            self.forget()
            request.headers["Authorization"] = f"Bearer {self._store((yield self.token_request()))}"
            yield request

    # httpx reads every response of a flow that asks for bodies, an SSE stream too: only
    # the token endpoint's answers are read here.

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        flow = self.auth_flow(request)
        outgoing = next(flow)
        while True:
            response = yield outgoing
            if outgoing is not request:
                response.read()
            try:
                outgoing = flow.send(response)
            except StopIteration:
                return

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        flow = self.auth_flow(request)
        outgoing = next(flow)
        while True:
            response = yield outgoing
            if outgoing is not request:
                await response.aread()
            try:
                outgoing = flow.send(response)
            except StopIteration:
                return


def from_setting(value: Mapping[str, Any] | None) -> httpx.Auth | None:
    """The credentials an ``AUTH`` setting describes (None for none): ``{"TYPE": "bearer",
    "TOKEN"}``, ``{"TYPE": "api_key", "KEY", "HEADER"?}``, ``{"TYPE": "headers",
    "HEADERS": {...}}`` or ``{"TYPE": "oauth2", "TOKEN_URL", "CLIENT_ID", "CLIENT_SECRET",
    "SCOPE"?, "AUDIENCE"?, "CLIENT_AUTH"?}``. ValueError for anything else."""
    if not value:
        return None
    problems = setting_problems(value)
    if problems:
        raise ValueError("; ".join(problems))
    kind = value["TYPE"]
    if kind == "bearer":
        return BearerToken(value["TOKEN"])
    if kind == "api_key":
        return APIKey(value["KEY"], value.get("HEADER") or "X-API-Key")
    if kind == "headers":
        return HeaderAuth(value["HEADERS"])
    return OAuth2ClientCredentials(
        value["TOKEN_URL"],
        value["CLIENT_ID"],
        value["CLIENT_SECRET"],
        scope=value.get("SCOPE"),
        audience=value.get("AUDIENCE"),
        client_auth=value.get("CLIENT_AUTH") or "basic",
    )


def setting_problems(value: Any) -> list[str]:
    """What is wrong with an ``AUTH`` setting (empty when nothing)."""
    if not isinstance(value, Mapping):
        return [f"AUTH must be a dict, not {type(value).__name__}"]
    kind = value.get("TYPE")
    if kind not in AUTH_TYPES:
        return [f"AUTH TYPE must be one of {', '.join(map(repr, AUTH_TYPES))}, not {kind!r}"]
    required, optional = AUTH_TYPES[kind]
    problems = [f"AUTH {kind} needs {key}" for key in required if not value.get(key)]
    unknown = set(value) - {"TYPE", *required, *optional}
    if unknown:
        problems.append(f"AUTH {kind} takes no {', '.join(sorted(unknown))}")
    if kind == "headers" and value.get("HEADERS") and not isinstance(value["HEADERS"], Mapping):
        problems.append("AUTH HEADERS must be a dict of header names and values")
    if kind == "oauth2" and value.get("CLIENT_AUTH") not in (None, "basic", "body"):
        problems.append("AUTH CLIENT_AUTH must be 'basic' or 'body'")
    return problems

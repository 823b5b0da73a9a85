"""What the sync and async clients share, without I/O: options, the card and the
interface picked from it, request headers (credentials, ``A2A-Version``, the trace
context), and reading an answer or an SSE stream into canonical results."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from a2a.client import card as cards
from a2a.client.bindings import Binding, Call, binding_for
from a2a.client.card import Interface, Keys
from a2a.client.errors import (
    AgentTimeoutError,
    AgentUnavailableError,
    AuthenticationError,
    CardError,
    ClientError,
    InvalidResponseError,
)
from a2a.core import tracing
from a2a.core.retry import RetryPolicy
from a2a.protocol import signing
from a2a.protocol.model import Message, Part, StreamItem, new_id, text_part

USER_AGENT = "django-a2a-agent client"
SSE_TYPE = "text/event-stream"


def user_message(
    content: str | list[Part] | Message,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    reference_task_ids: list[str] | None = None,
) -> Message:
    """A canonical user message: of one text part (``content`` a string), of ``content``'s
    parts, or ``content`` itself (a message: its ``messageId`` kept, so a retry is
    recognisable), with the ids and metadata given."""
    if isinstance(content, dict):
        message: Message = {"kind": "message", "role": "user", **content}
        message.setdefault("messageId", new_id())
    else:
        parts = [text_part(content)] if isinstance(content, str) else list(content)
        message = {"kind": "message", "messageId": new_id(), "role": "user", "parts": parts}
    for key, value in (("contextId", context_id), ("taskId", task_id), ("metadata", metadata)):
        if value:
            message[key] = value
    if reference_task_ids:
        message["referenceTaskIds"] = list(reference_task_ids)
    return message


def card_call(url: str) -> Call:
    """The GET of a card (a read: retried as reads are)."""
    return Call("card", "GET", url, parse=lambda body: body)


class SSEDecoder:
    """Server-Sent Events, a line at a time: the ``data`` of each event (comments,
    keepalives and other fields skipped)."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """The data of the event ``line`` ends (a blank line), else None."""
        line = line.rstrip("\r\n")
        if not line:
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        if line.startswith("data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def flush(self) -> str | None:
        return self.feed("")


class BaseClient:
    """The options and state of one remote agent's client; see :class:`a2a.client.Client`."""

    #: The httpx client class and lock class of the sync or async client.
    http_class: type[httpx.Client] | type[httpx.AsyncClient]
    lock_class: Any

    def __init__(
        self,
        agent: str | Mapping[str, Any] | Interface,
        *,
        http: httpx.Client | httpx.AsyncClient | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        auth: httpx.Auth | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        stream_timeout: float | None = 300.0,
        retry: RetryPolicy | None = None,
        binding: str | None = None,
        version: str | None = None,
        verify_signature: bool = False,
        signature_keys: str | bytes | Keys | None = None,
        base_dir: Path | None = None,
        name: str = "",
    ) -> None:
        self.auth = auth
        self.headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self.timeout, self.stream_timeout = timeout, stream_timeout
        self.retry = retry or RetryPolicy()
        self.want_binding, self.want_version = binding, version
        self.verify_signature = verify_signature
        self.keys: Keys | None = cards.load_keys(signature_keys, base_dir) if signature_keys else None
        if verify_signature and self.keys is None:
            raise CardError("verify_signature needs signature_keys (a PEM public key, certificate, JWK or JWK Set)")
        self.url = ""
        self.card: dict[str, Any] | None = None
        self.binding: Binding | None = None
        #: The signature that verified the card (when signatures are required).
        self.verified: signing.Verified | None = None
        if isinstance(agent, Interface):
            self.url, self.binding = agent.url, binding_for(agent)
        elif isinstance(agent, Mapping):
            self.adopt_card(dict(agent), "the card given")
        else:
            self.url = agent
        self.name = name or self.url
        self.owns_http = http is None
        self.http: Any = http or self.http_class(transport=transport)  # type: ignore[arg-type]
        self.lock = self.lock_class()

    @property
    def interface(self) -> Interface | None:
        """The interface spoken (None until the card is read)."""
        return self.binding.interface if self.binding else None

    def adopt_card(self, card: dict[str, Any], where: str) -> None:
        """Take ``card`` (after checking its signature when required) and pick its interface."""
        if self.verify_signature:
            assert self.keys is not None
            self.verified = cards.check_signature(card, self.keys, where=where)
        self.card = card
        self.binding = binding_for(cards.choose(card, binding=self.want_binding, version=self.want_version))
        self.name = self.name or str(card.get("name") or where)

    def with_headers(self, headers: Mapping[str, str]) -> BaseClient:
        """A client like this one (same connections, card and credentials) that also sends
        ``headers`` (e.g. a caller's own credentials, where the agent's settings allow it)."""
        other = copy.copy(self)
        other.headers = {**self.headers, **headers}
        return other

    # --- requests --------------------------------------------------------------------------

    def request_headers(self, binding: Binding | None) -> dict[str, str]:
        headers = {**self.headers, **(binding.headers if binding else {})}
        tracing.inject(headers)  # the trace goes on to the agent (W3C traceparent)
        return headers

    def build(self, http: httpx.Client | httpx.AsyncClient, call: Call, binding: Binding | None) -> httpx.Request:
        # A connection is made, or not, well within a request's time.
        connect = min(self.timeout, 10.0)
        read = self.stream_timeout if call.stream else self.timeout
        timeout = httpx.Timeout(self.timeout, connect=connect, read=read)
        if call.stream:
            headers = {**self.request_headers(binding), "Accept": SSE_TYPE}
        else:
            headers = self.request_headers(binding)
        return http.build_request(
            call.method, call.url, json=call.json, params=call.params or None, headers=headers, timeout=timeout
        )

    def send_options(self, call: Call) -> dict[str, Any]:
        """How ``call`` is sent: the card (a public document) without credentials and
        following redirects (``http://`` to ``https://``...); an operation with the
        credentials and not redirected, so that no credential follows a redirect to
        another host (httpx drops only ``Authorization`` there, not an API-key header)."""
        if call.operation == "card":
            return {"follow_redirects": True}
        return {"auth": self.auth or httpx.USE_CLIENT_DEFAULT, "follow_redirects": False}

    def transport_error(self, exc: httpx.TransportError, call: Call) -> ClientError:
        """``exc`` (after the retries) as the client's error."""
        if isinstance(exc, httpx.TimeoutException):
            limit = self.stream_timeout if call.stream and isinstance(exc, httpx.ReadTimeout) else self.timeout
            if isinstance(exc, httpx.ConnectTimeout):
                limit = min(self.timeout, 10.0)
            return AgentTimeoutError(f"{self.name}: {call.method} {call.url} timed out after {limit:g}s ({exc})")
        return AgentUnavailableError(f"Cannot reach {call.url} ({self.name}): {exc or type(exc).__name__}")

    # --- answers ---------------------------------------------------------------------------

    def answer(self, call: Call, response: httpx.Response, binding: Binding | None) -> Any:
        """The canonical result of a read response (the card when ``binding`` is None)."""
        status = response.status_code
        self.check_auth(call, response)
        if response.is_redirect:
            raise AgentUnavailableError(
                f"{self.name}: {call.method} {call.url}: HTTP {status}, redirected to "
                f"{response.headers.get('Location')!r} (operations are not redirected: give the card or URL it names)",
                status=status,
            )
        try:
            body = response.json() if response.content else None
        except ValueError:
            raise AgentUnavailableError(
                f"{self.name}: {call.method} {call.url}: HTTP {status}, not JSON: {response.text[:200]!r}",
                status=status,
            ) from None
        if binding is None:
            return call.parse(body)
        if status >= 500 and binding.interface.binding == "JSONRPC" and not isinstance(body, dict):
            raise AgentUnavailableError(f"{self.name}: {call.url}: HTTP {status}", status=status)
        return binding.result(call, status, body)

    def check_auth(self, call: Call, response: httpx.Response) -> None:
        if response.status_code in (401, 403):
            challenge = response.headers.get("WWW-Authenticate", "")
            raise AuthenticationError(
                f"{self.name}: {call.method} {call.url}: HTTP {response.status_code}, the credentials were refused"
                + (f" ({challenge})" if challenge else ""),
                status=response.status_code,
            )

    def card_answer(self, call: Call, response: httpx.Response) -> dict[str, Any] | None:
        """The card a response of :func:`card_call` carries, adopted; None on 404."""
        if response.status_code == 404:
            return None
        card = self.answer(call, response, None)
        if not isinstance(card, dict):
            raise CardError(f"{self.name}: {call.url} is not an Agent Card (not a JSON object)")
        self.adopt_card(card, call.url)
        return card

    @staticmethod
    def is_stream(response: httpx.Response) -> bool:
        return response.status_code == 200 and response.headers.get("content-type", "").startswith(SSE_TYPE)

    def event(self, call: Call, data: str, binding: Binding) -> StreamItem:
        try:
            payload = json.loads(data)
        except ValueError:
            raise InvalidResponseError(f"{self.name}: an SSE event of {call.url} is not JSON: {data[:200]!r}") from None
        return binding.event(call, payload)

"""Who is calling: authentication for the A2A endpoints, and task ownership.

``A2A_AUTHENTICATION_CLASSES`` lists django-rest-framework authentication classes
(dotted paths): anything with ``authenticate(request) -> (user, auth) | None``, such
as DRF's own ``BasicAuthentication`` or ``TokenAuthentication``, or the two here:

- :class:`BearerTokenAuthentication`: ``Authorization: Bearer <token>``;
- :class:`APIKeyAuthentication`: ``X-API-Key: <token>`` (header from
  ``A2A_API_KEY_HEADER``);

both checked against DRF's token table (``rest_framework.authtoken``: create one with
``manage.py drf_create_token <username>``). With no classes (the default) the agent is
open and every caller is the same anonymous caller. With classes, a request that
none of them accepts is answered 401, and every task belongs to the user who created
it: another caller's task answers exactly like an unknown one (spec 3.3.2, 7.5).

The card declares each built-in class's scheme in ``securitySchemes``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, cast

from asgiref.sync import sync_to_async
from django.http import HttpRequest
from django.utils.module_loading import import_string
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.request import Request

from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.protocol.errors import A2AError


class AuthenticationRequiredError(A2AError):
    """No (valid) credentials: HTTP 401 (JSON-RPC -32000, a server-defined code)."""

    code, reason, http_status, status = -32000, "UNAUTHENTICATED", 401, "UNAUTHENTICATED"
    default_message = "Authentication required"


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <token>``, checked against DRF's token table."""

    keyword = "Bearer"
    scheme_name = "bearer"
    schemes = {
        "1.0": {"httpAuthSecurityScheme": {"scheme": "Bearer", "description": "A DRF token as a bearer token"}},
        "0.3": {"type": "http", "scheme": "bearer", "description": "A DRF token as a bearer token"},
    }


class APIKeyAuthentication(TokenAuthentication):
    """An API key in a header (``A2A_API_KEY_HEADER``), checked against DRF's token table."""

    scheme_name = "apiKey"

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        key = request.META.get("HTTP_" + a2a_settings.API_KEY_HEADER.upper().replace("-", "_"))
        if not key:
            return None
        return self.authenticate_credentials(key)

    def authenticate_header(self, request: Request) -> str:
        return f'APIKey header="{a2a_settings.API_KEY_HEADER}"'

    @property
    def schemes(self) -> dict[str, dict[str, Any]]:
        header = a2a_settings.API_KEY_HEADER
        return {
            "1.0": {"apiKeySecurityScheme": {"location": "header", "name": header}},
            "0.3": {"type": "apiKey", "in": "header", "name": header},
        }


@functools.cache
def _load(paths: tuple[str, ...]) -> list[Any]:
    return [import_string(path)() for path in paths]


def authenticators(agent: Agent | None = None) -> list[Any]:
    """The authentication class instances of ``agent`` (its ``AUTHENTICATION_CLASSES``;
    None: the project's), built once per setting value."""
    conf = a2a_settings if agent is None else agent.settings
    return _load(tuple(conf.AUTHENTICATION_CLASSES))


class _BodyUnread:
    """The A2A body is the binding's to read: to the authentication classes it is no form
    (DRF's CSRF check for ``SessionAuthentication`` then reads its token from the header,
    instead of failing on a JSON body it has no parser for). A parser as DRF duck-types
    one: importing ``rest_framework.parsers`` reads DRF's settings, which an import of
    this module (the test kit's plugin, before Django is set up) must not."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> dict[str, Any]:
        return {}


def _authenticate_sync(request: HttpRequest, classes: list[Any]) -> str:
    drf_request = Request(request, parsers=cast(Any, [_BodyUnread()]))
    try:
        for authenticator in classes:
            result = authenticator.authenticate(drf_request)
            if result is not None:
                user = result[0]
                return str(getattr(user, "pk", None) or user)
    except exceptions.AuthenticationFailed as exc:
        raise AuthenticationRequiredError(f"Authentication failed: {exc.detail}") from None
    raise AuthenticationRequiredError(
        "Authentication required: send "
        + " or ".join(a.authenticate_header(drf_request) or type(a).__name__ for a in classes)
    )


async def authenticate(request: HttpRequest, agent: Agent | None = None) -> str:
    """The caller's principal for ``agent`` (None: the default agent; ``""`` when it
    has no authentication); AuthenticationRequiredError when authentication is
    configured and the request has no valid credentials."""
    classes = authenticators(agent)
    return await sync_to_async(_authenticate_sync, thread_sensitive=False)(request, classes) if classes else ""


async def authenticate_headers(headers: Iterable[tuple[str, str]], agent: Agent | None = None) -> str:
    """:func:`authenticate` for a binding without an HTTP request (gRPC metadata):
    the same classes read the same headers (``authorization``, ``x-api-key``...) from
    a request made of ``headers`` (names in any case)."""
    request = HttpRequest()
    request.method = "POST"
    for name, value in headers:
        request.META["HTTP_" + name.upper().replace("-", "_")] = value
    return await authenticate(request, agent)


def challenge(agent: Agent | None = None) -> str:
    """The ``WWW-Authenticate`` value for a 401 (of ``agent``; None: the default agent)."""
    request = Request(HttpRequest())
    return ", ".join(a.authenticate_header(request) or type(a).__name__ for a in authenticators(agent))


def card_security(version: str, agent: Agent | None = None) -> dict[str, Any]:
    """The card's securitySchemes and requirements for ``agent``'s classes (None: the default agent's)."""
    schemes = {a.scheme_name: a.schemes[version] for a in authenticators(agent) if hasattr(a, "schemes")}
    if not schemes:
        return {}
    if version == "1.0":
        return {
            "securitySchemes": schemes,
            "securityRequirements": [{"schemes": {name: {"list": []}}} for name in schemes],
        }
    return {"securitySchemes": schemes, "security": [{name: []} for name in schemes]}

"""The A2A client: one for every remote agent, sync (:class:`Client`) and async
(:class:`AsyncClient`), on httpx.

From an agent's card URL (or the card, or an :class:`Interface`) it picks the binding and
version the card offers (JSON-RPC or HTTP+JSON, A2A 1.0 or 0.3; 1.0 JSON-RPC first),
checks the card's signature when asked, and offers every operation; results are the
project's canonical model (:mod:`a2a.protocol.model`) whatever the agent speaks.
Every step (the card, connecting, retries, the v1.0 fallback, the event reader) is
written once, without I/O, in :mod:`a2a.client.core`; the two clients run it.
Credentials are :mod:`a2a.client.auth`, retries :class:`RetryPolicy`, errors
:mod:`a2a.client.errors`. Agents configured by name (``A2A_REMOTE_AGENTS``):
:func:`remote_client` / :func:`async_remote_client`. docs/client.md has the guide.
"""

from __future__ import annotations

from a2a.client.aio import AsyncClient
from a2a.client.auth import APIKey, BearerToken, HeaderAuth, OAuth2ClientCredentials
from a2a.client.base import user_message
from a2a.client.card import Interface
from a2a.client.errors import (
    AgentTimeoutError,
    AgentUnavailableError,
    AuthenticationError,
    CardError,
    CardNotFoundError,
    CardSignatureError,
    ClientError,
    ContentTypeNotSupported,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    InvalidAgentResponse,
    InvalidParams,
    InvalidResponseError,
    MethodNotFound,
    PushNotificationNotSupported,
    RemoteAgentError,
    TaskGenerationMismatch,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
)
from a2a.client.events import apply
from a2a.client.generation import generation_of
from a2a.client.remote import RemoteAgent, UnknownRemoteAgent, async_client_for, client_for, remote_agent, remote_agents
from a2a.client.remote import async_client as async_remote_client
from a2a.client.remote import client as remote_client
from a2a.client.sync import Client
from a2a.client.timeline import interaction
from a2a.core.retry import RetryPolicy

__all__ = [
    "APIKey",
    "AgentTimeoutError",
    "AgentUnavailableError",
    "AsyncClient",
    "AuthenticationError",
    "BearerToken",
    "CardError",
    "CardNotFoundError",
    "CardSignatureError",
    "Client",
    "ClientError",
    "ContentTypeNotSupported",
    "ExtendedAgentCardNotConfigured",
    "ExtensionSupportRequired",
    "HeaderAuth",
    "Interface",
    "InvalidAgentResponse",
    "InvalidParams",
    "InvalidResponseError",
    "MethodNotFound",
    "OAuth2ClientCredentials",
    "PushNotificationNotSupported",
    "RemoteAgent",
    "RemoteAgentError",
    "RetryPolicy",
    "TaskGenerationMismatch",
    "TaskNotCancelable",
    "TaskNotFound",
    "UnknownRemoteAgent",
    "UnsupportedOperation",
    "VersionNotSupported",
    "apply",
    "async_client_for",
    "async_remote_client",
    "client_for",
    "generation_of",
    "interaction",
    "remote_agent",
    "remote_agents",
    "remote_client",
    "user_message",
]

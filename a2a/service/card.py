"""The Agent Card, built from settings.

Two documents, because a strict v1.0 reader rejects the v0.3 keys (the v1.0 schema
allows no extra properties): asked with ``A2A-Version: 1.0`` the card is strict v1.0;
asked without, it is one card both generations read (v1.0 ``supportedInterfaces``
plus the v0.3 ``url`` / ``protocolVersion`` / ``preferredTransport`` /
``additionalInterfaces``).

With ``A2A_CARD_SIGNING_KEY`` set (the agent's own or the project's), each card is served signed (spec 8.4,
:mod:`a2a.protocol.signing`): its ``signatures`` cover the document as served (and, on
the card both generations read, its v1.0 reading too).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from a2a import auth
from a2a.agents import Agent, default_agent
from a2a.conf import a2a_settings
from a2a.core import replay
from a2a.handlers import load_handler
from a2a.handlers.skills import get_skills
from a2a.protocol import V1_VERSIONS, Dialect
from a2a.protocol.errors import ExtendedAgentCardNotConfiguredError, UnsupportedOperationError
from a2a.protocol.signing import Signer
from a2a.push import tokens
from a2a.service.context import CallContext
from a2a.service.mcp_endpoint import mcp_url

V03_PROTOCOL_VERSION = "0.3.0"


def skills(agent: Agent | None = None) -> list[dict[str, Any]]:
    """The skills of ``agent`` (None: the default agent) in card shape (``tags`` always
    present): its ``SKILLS``, then the ``SKILL.md`` skills of its ``SKILLS_DIR`` (see
    :mod:`a2a.handlers.skills`); with neither, the handler's own (a framework's agent)."""
    conf = _conf(agent)
    out = [normalize_skill(skill) for skill in conf.SKILLS]
    listed = {entry["id"] for entry in out}
    out += [skill.card_entry() for skill in get_skills(conf) if skill.id not in listed]
    return out or _handler_skills(conf)


def _handler_skills(conf: Any) -> list[dict[str, Any]]:
    """The skills a handler describes itself with (a framework's agent: its name, description
    and tools), for an agent whose settings list none."""
    try:
        describe = getattr(load_handler(conf.HANDLER), "card_skills", None)
    except Exception:  # a2a.E001 says why
        return []
    return [normalize_skill(skill) for skill in describe()] if callable(describe) else []


def _conf(agent: Agent | None) -> Any:
    return a2a_settings if agent is None else agent.settings


#: The card's fields a reader may follow as a link (``provider.url`` is the provider's).
LINK_FIELDS = ("documentationUrl", "iconUrl")


def web_url(value: Any) -> str:
    """``value`` when it is an absolute http(s) URL with a host, else "": the only URLs
    the card publishes and the agent page links to from settings (a ``javascript:`` or
    ``data:`` one never becomes a live link, even with its check, a2a.E032, silenced)."""
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value)
    except ValueError:
        return ""
    return value if parts.scheme.lower() in ("http", "https") and parts.hostname else ""


def normalize_skill(skill: dict[str, Any]) -> dict[str, Any]:
    """A skill setting in card shape."""
    entry = {
        "id": skill["id"],
        "name": skill.get("name") or skill["id"],
        "description": skill.get("description", ""),
        "tags": list(skill.get("tags") or [skill["id"]]),
    }
    for key in ("examples", "inputModes", "outputModes"):
        if skill.get(key):
            entry[key] = list(skill[key])
    return entry


def signer(agent: Agent | None = None) -> Signer | None:
    """The signer of ``agent``'s ``CARD_SIGNING_KEY`` (None: the project's), the one that
    signs its push notifications too (:func:`a2a.push.tokens.signer`); None when unset.
    Raises :class:`~a2a.protocol.signing.SigningError` for a key that cannot sign."""
    return tokens.signer(agent)


def signed(card: dict[str, Any], agent: Agent | None = None) -> dict[str, Any]:
    """``card`` with its ``signatures`` when ``agent`` has a signing key."""
    card_signer = signer(agent)
    return card_signer.sign(card) if card_signer else card


#: The card extension that names an agent's MCP endpoint (docs/mcp.md). Not an entry of
#: ``supportedInterfaces``: those are A2A bindings (spec 5.8; a reader picks one and sends
#: A2A operations to it), and MCP is another protocol at that URL.
MCP_EXTENSION_URI = "https://django-a2a-agent.readthedocs.io/extensions/mcp/v1"


def mcp_extension(endpoint: str, agent: Agent | None) -> dict[str, Any] | None:
    """The card's declaration of ``agent``'s MCP endpoint (its URL beside the JSON-RPC
    ``endpoint``'s origin), or None when the agent serves no MCP."""
    path = mcp_url(agent or default_agent())
    if path is None:
        return None
    if not path.startswith(("http://", "https://")):
        parts = urlsplit(endpoint)
        path = f"{parts.scheme}://{parts.netloc}{path}"
    return {
        "uri": MCP_EXTENSION_URI,
        "description": "This agent is an MCP server too (Streamable HTTP): one tool per skill, a call an A2A task.",
        "params": {"url": path, "protocolVersions": ["2026-07-28", "2025-11-25"]},
    }


def build_card(endpoint: str, *, version: str, rest: str | None = None, agent: Agent | None = None) -> dict[str, Any]:
    """The card of ``agent`` (None: the default agent) for the JSON-RPC ``endpoint`` and
    the HTTP+JSON base URL ``rest`` (absolute URLs) in dialect ``version``, signed when a
    signing key is configured."""
    return signed(_build_card(endpoint, version=version, rest=rest, agent=agent), agent)


def _build_card(endpoint: str, *, version: str, rest: str | None = None, agent: Agent | None = None) -> dict[str, Any]:
    conf = _conf(agent)
    interfaces = [("JSONRPC", endpoint)] + ([("HTTP+JSON", rest)] if rest else [])
    card: dict[str, Any] = {
        "name": conf.AGENT_NAME,
        "description": conf.AGENT_DESCRIPTION,
        # Both bindings in every version (v0.3's HTTP+JSON is the ProtoJSON of its gRPC
        # messages, served under the same URL: its clients put "/v1" before each path;
        # 1.1, the draft, is v1.0 with the task's generation: A2A-Version 1.1 asks for it).
        "supportedInterfaces": [
            {"url": url, "protocolBinding": binding, "protocolVersion": protocol}
            for protocol in ("1.0", "1.1", "0.3")
            for binding, url in interfaces
        ],
        "version": conf.AGENT_VERSION,
        "capabilities": {
            "streaming": True,
            "pushNotifications": a2a_settings.PUSH_NOTIFICATIONS,
            "extensions": [dict(replay.CARD_EXTENSION)],
        },
        "defaultInputModes": list(conf.INPUT_MODES),
        "defaultOutputModes": list(conf.OUTPUT_MODES),
        "skills": skills(agent),
    }
    if declared := mcp_extension(endpoint, agent):
        card["capabilities"]["extensions"].append(declared)
    if a2a_settings.GRPC_URL:  # the gRPC binding (a2a.grpc): the 1.1 draft's a2a.proto, which is 1.0's and more
        card["supportedInterfaces"] += [
            {"url": a2a_settings.GRPC_URL, "protocolBinding": "GRPC", "protocolVersion": protocol}
            for protocol in ("1.0", "1.1")
        ]
    if conf.PROVIDER_ORGANIZATION:
        card["provider"] = {"organization": conf.PROVIDER_ORGANIZATION, "url": web_url(conf.PROVIDER_URL)}
    if web_url(conf.DOCUMENTATION_URL):
        card["documentationUrl"] = conf.DOCUMENTATION_URL
    extended = extended_card_available(agent)
    if version in V1_VERSIONS:  # (a 1.1 card is a v1.0 one)
        card["capabilities"]["extendedAgentCard"] = extended
        card.update(auth.card_security("1.0", agent))
        return card
    card.update(
        protocolVersion=V03_PROTOCOL_VERSION,
        url=endpoint,
        preferredTransport="JSONRPC",
        additionalInterfaces=[{"url": url, "transport": binding} for binding, url in interfaces],
        supportsAuthenticatedExtendedCard=extended,
    )
    # One card for both generations: each scheme carries its v1.0 (oneof) and v0.3 keys.
    v10, v03 = auth.card_security("1.0", agent), auth.card_security("0.3", agent)
    if v10:
        card["securitySchemes"] = {
            name: {**v10["securitySchemes"][name], **scheme} for name, scheme in v03["securitySchemes"].items()
        }
        card["securityRequirements"] = v10["securityRequirements"]
        card["security"] = v03["security"]
    return card


def extended_card_available(agent: Agent | None = None) -> bool:
    """An extended card is served when one is configured and callers authenticate (for ``agent``)."""
    conf = _conf(agent)
    return conf.EXTENDED_CARD is not None and conf.AUTHENTICATION_CLASSES != []


def build_extended_card(
    endpoint: str, *, version: str, rest: str | None = None, agent: Agent | None = None
) -> dict[str, Any]:
    """The public card with the ``EXTENDED_CARD``'s fields of ``agent`` (None: the default
    agent) over it (its ``skills`` are added to the public ones), signed when a signing
    key is configured."""
    card = _build_card(endpoint, version=version, rest=rest, agent=agent)
    extra = {k: v for k, v in (_conf(agent).EXTENDED_CARD or {}).items() if k not in LINK_FIELDS or web_url(v)}
    extra_skills = [normalize_skill(s) for s in extra.pop("skills", [])]
    card.update(extra)
    card["skills"] = [*card["skills"], *extra_skills]
    return signed(card, agent)


def extended_card(dialect: Dialect, ctx: CallContext) -> dict[str, Any]:
    """GetExtendedAgentCard (every binding): the extended card, for authenticated callers only.

    Spec 3.3.4: when the card says ``capabilities.extendedAgentCard: false`` (no
    ``A2A_EXTENDED_CARD``, or no authentication to serve it behind), the operation is
    unsupported (-32004); ExtendedAgentCardNotConfiguredError (-32007) is for a card
    that declares the capability with no extended card to give this caller."""
    agent = ctx.agent
    if not extended_card_available(agent):
        raise UnsupportedOperationError(
            "This agent has no extended agent card (capabilities.extendedAgentCard is false)"
            if agent.settings.EXTENDED_CARD is None
            else "This agent has no extended agent card: it is only served to authenticated callers, "
            "and this agent has no authentication (capabilities.extendedAgentCard is false)"
        )
    if not ctx.caller:
        raise ExtendedAgentCardNotConfiguredError("The extended agent card is only served to authenticated callers")
    return build_extended_card(
        ctx.origin + agent.path("jsonrpc"), version=dialect.version, rest=ctx.origin + agent.path("rest"), agent=agent
    )

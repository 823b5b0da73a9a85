"""The check of the Agent Card's settings (``a2a.E003``, ``E004``, ``E030``, ``E031``, ``E032``)."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error

from a2a.agents import Agent
from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern, settings_of
from a2a.service.card import LINK_FIELDS, web_url


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
    (``a2a.E004``), media types (``a2a.E030``), a name (``a2a.E031``), links that are
    absolute http(s) URLs (``a2a.E032``)."""
    errors: Messages = []
    conf = settings_of(agent)
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
    return errors + _links(conf)


def _links(conf: Any) -> Messages:
    """``a2a.E032``: a URL the card publishes, which readers and the agent page follow as a
    link, that is not absolute http(s) (``javascript:alert(1)``). The card leaves it out
    whatever the check says (:func:`a2a.service.card.web_url`)."""
    extended = conf.EXTENDED_CARD if isinstance(conf.EXTENDED_CARD, dict) else {}
    provider = extended.get("provider")
    links = {
        "A2A_PROVIDER_URL": conf.PROVIDER_URL,
        "A2A_DOCUMENTATION_URL": conf.DOCUMENTATION_URL,
        **{f"A2A_EXTENDED_CARD['{key}']": extended.get(key) for key in LINK_FIELDS},
        "A2A_EXTENDED_CARD['provider']['url']": provider.get("url") if isinstance(provider, dict) else None,
    }
    return [
        Error(
            f"{name} must be an absolute http(s) URL, not {value!r}: the Agent Card publishes it as a link.",
            id="a2a.E032",
        )
        for name, value in links.items()
        if value not in (None, "") and not web_url(value)
    ]

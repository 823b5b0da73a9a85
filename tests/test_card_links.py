"""The URLs the Agent Card publishes as links (``A2A_DOCUMENTATION_URL``,
``A2A_PROVIDER_URL``, an extended card's ``documentationUrl`` / ``iconUrl`` /
``provider.url``, and an ``A2A_AGENTS`` agent's own) must be absolute http(s) URLs:
anything else is ``a2a.E032``, and, with the check silenced, the card leaves it out, so
the agent page never makes it a live link."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import Client

from a2a.ops.checks.agents import check_agents
from a2a.service.card import web_url
from a2a.testing import WireClient

HOSTILE = [
    "javascript:alert(1)",
    "JavaScript:alert(document.cookie)",
    " javascript:alert(1)",
    "\tjava\nscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "//evil.example.com/x",
    "https:///no-host",
    "docs.example.com",
]
GOOD = ["https://docs.example.com/agent", "http://localhost:8000/docs"]


def e032() -> list[str]:
    return [m.msg for m in run_checks() if m.id == "a2a.E032"]


@pytest.mark.parametrize("value", HOSTILE)
def test_web_url_takes_only_absolute_http_urls(value):
    assert web_url(value) == ""


@pytest.mark.parametrize("value", GOOD)
def test_web_url_keeps_an_absolute_http_url(value):
    assert web_url(value) == value


@pytest.mark.parametrize("name", ["A2A_DOCUMENTATION_URL", "A2A_PROVIDER_URL"])
@pytest.mark.parametrize("value", HOSTILE)
def test_a_link_setting_that_is_not_http_is_an_error(settings, name, value):
    setattr(settings, name, value)
    [message] = e032()
    assert message.startswith(f"{name} must be an absolute http(s) URL, not {value!r}")


def test_good_links_and_empty_ones_pass(settings):
    settings.A2A_DOCUMENTATION_URL, settings.A2A_PROVIDER_URL = GOOD
    settings.A2A_EXTENDED_CARD = {"iconUrl": GOOD[0], "provider": {"organization": "X", "url": GOOD[1]}}
    assert e032() == []
    settings.A2A_DOCUMENTATION_URL = settings.A2A_PROVIDER_URL = ""
    settings.A2A_EXTENDED_CARD = None
    assert e032() == []


def test_the_extended_cards_links_are_checked(settings):
    settings.A2A_EXTENDED_CARD = {
        "documentationUrl": "javascript:alert(1)",
        "iconUrl": "data:image/svg+xml,<svg onload=alert(1)>",
        "provider": {"organization": "X", "url": "javascript:alert(2)"},
    }
    assert [m.split(" must")[0] for m in e032()] == [
        "A2A_EXTENDED_CARD['documentationUrl']",
        "A2A_EXTENDED_CARD['iconUrl']",
        "A2A_EXTENDED_CARD['provider']['url']",
    ]


def test_an_agents_own_link_is_checked_and_names_the_agent(settings):
    settings.A2A_AGENTS = {"billing": {"DOCUMENTATION_URL": "javascript:alert(1)"}}
    messages = [m for m in check_agents() if m.id == "a2a.E032"]
    assert [m.msg for m in messages] == [
        "A2A_AGENTS['billing']: A2A_DOCUMENTATION_URL must be an absolute http(s) URL, not 'javascript:alert(1)': "
        "the Agent Card publishes it as a link."
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x"])
def test_with_the_check_silenced_no_page_or_card_carries_the_link(settings, value):
    settings.SILENCED_SYSTEM_CHECKS = ["a2a.E032"]
    settings.A2A_BROWSABLE_AGENT = "public"
    settings.A2A_PROVIDER_ORGANIZATION = "Example"
    settings.A2A_DOCUMENTATION_URL = settings.A2A_PROVIDER_URL = value
    settings.A2A_AGENTS = {"billing": {"DOCUMENTATION_URL": value, "PROVIDER_URL": value}}
    for prefix in ("", "/agents/billing"):
        page = Client().get(f"{prefix}/a2a/browse/")
        assert page.status_code == 200
        assert value.split(":")[0].lower() + ":" not in page.content.decode().lower()
        card = WireClient().request("GET", f"{prefix}/.well-known/agent-card.json").json()
        assert "documentationUrl" not in card and card["provider"] == {"organization": "Example", "url": ""}


@pytest.mark.django_db
def test_a_good_documentation_url_is_linked(settings):
    settings.A2A_BROWSABLE_AGENT = "public"
    settings.A2A_DOCUMENTATION_URL = GOOD[0]
    page = Client().get("/a2a/browse/").content.decode()
    assert f'<a href="{GOOD[0]}">Documentation</a>' in page

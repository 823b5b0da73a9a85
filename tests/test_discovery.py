"""The discovery catalogs: /.well-known/ai-catalog.json (the AI Catalog draft the A2A
specification's pull request 2240 prefers) and /.well-known/api-catalog (RFC 9727), each
listing every listed agent; unlisted agents left out; authentication when asked for.

The AI Catalog draft (github.com/Agent-Card/ai-catalog, specification/ai-catalog.md,
specVersion "1.0") publishes no JSON Schema: :data:`AI_CATALOG_SCHEMA` states every
member it names, with the draft's requirements (MUST members, exactly one of ``url`` and
``data``). :data:`LINKSET_SCHEMA` is RFC 9264's JSON linkset (section 4.2) as RFC 9727
uses it."""

from __future__ import annotations

import jsonschema
import pytest
from django.contrib.auth.models import User
from django.core.checks import run_checks
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from a2a.agents import agents
from stores.memory import MemoryTaskStore
from tests.helpers import call

pytestmark = pytest.mark.django_db

_STRING = {"type": "string"}
_OBJECT = {"type": "object"}
AI_CATALOG_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["specVersion", "entries"],
    "properties": {
        "specVersion": {"type": "string", "pattern": r"^\d+\.\d+$"},
        "host": {
            "type": "object",
            "required": ["displayName"],
            "properties": {
                "displayName": _STRING,
                "identifier": _STRING,
                "documentationUrl": {"type": "string", "format": "uri"},
                "logoUrl": _STRING,
            },
        },
        "extensions": _OBJECT,
        "signature": _STRING,
        "entries": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["identifier", "type"],
                "oneOf": [{"required": ["url"]}, {"required": ["data"]}],
                "properties": {
                    "identifier": _STRING,
                    "type": _STRING,
                    "url": {"type": "string", "format": "uri"},
                    "data": {},
                    "displayName": _STRING,
                    "description": _STRING,
                    "tags": {"type": "array", "items": _STRING},
                    "version": _STRING,
                    "updatedAt": {"type": "string", "format": "date-time"},
                    "extensions": _OBJECT,
                    "publisher": {
                        "type": "object",
                        "required": ["identifier", "displayName"],
                        "properties": {"identifier": _STRING, "displayName": _STRING, "identityType": _STRING},
                    },
                    "trustManifest": {"type": "object", "required": ["identity"]},
                },
            },
        },
    },
}
_TARGET = {"type": "object", "required": ["href"], "properties": {"href": {"type": "string", "format": "uri"}}}
LINKSET_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["linkset"],
    "additionalProperties": False,
    "properties": {
        "linkset": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"anchor": {"type": "string", "format": "uri"}},
                "additionalProperties": {"type": "array", "items": _TARGET},
            },
        }
    },
}
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER

TWO_AGENTS = {
    "billing": {"AGENT_NAME": "Billing", "HANDLER": "tests.handlers.scripted"},
    "internal": {"AGENT_NAME": "Internal", "LISTED": False},
}


@pytest.fixture
def two_agents(settings):
    settings.TASK_STORE = MemoryTaskStore()
    settings.A2A_AGENTS = TWO_AGENTS
    settings.A2A_PROVIDER_ORGANIZATION = "Toolnexus"
    return settings


def test_the_ai_catalog_lists_each_listed_agent_and_follows_the_draft(client, two_agents):
    response = client.get("/.well-known/ai-catalog.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/ai-catalog+json"
    catalog = response.json()
    jsonschema.validate(catalog, AI_CATALOG_SCHEMA, format_checker=FORMATS)
    assert catalog["specVersion"] == "1.0"
    assert catalog["host"] == {"displayName": "Toolnexus"}
    assert [entry["identifier"] for entry in catalog["entries"]] == [
        "urn:air:testserver:a2a:default",
        "urn:air:testserver:a2a:billing",
    ]
    assert {entry["type"] for entry in catalog["entries"]} == {"application/a2a-agent-card+json"}
    default, billing = (entry["url"] for entry in catalog["entries"])
    assert default == "http://testserver/.well-known/agent-card.json"
    names = {url: client.get(url.removeprefix("http://testserver")).json()["name"] for url in (default, billing)}
    assert names == {default: agents()["default"].settings.AGENT_NAME, billing: "Billing"}


def _identifiers(client, host: str) -> list[str]:
    catalog = client.get("/.well-known/ai-catalog.json", HTTP_HOST=host).json()
    return [entry["identifier"] for entry in catalog["entries"]]


def test_entry_identifiers_name_the_port_so_two_deployments_on_one_host_differ(client, two_agents):
    # (it was urn:air:127.0.0.1:a2a:default on every port)
    assert _identifiers(client, "127.0.0.1:8001") == [
        "urn:air:127.0.0.1%3A8001:a2a:default",
        "urn:air:127.0.0.1%3A8001:a2a:billing",
    ]
    assert _identifiers(client, "127.0.0.1:8002")[0] == "urn:air:127.0.0.1%3A8002:a2a:default"
    assert _identifiers(client, "127.0.0.1:80")[0] == "urn:air:127.0.0.1:a2a:default"  # the scheme's own port
    assert _identifiers(client, "[::1]:8001")[0] == "urn:air:%5B%3A%3A1%5D%3A8001:a2a:default"
    two_agents.A2A_PUBLIC_URL = "https://agents.example.com:8443/"
    assert _identifiers(client, "127.0.0.1:8001")[0] == "urn:air:agents.example.com%3A8443:a2a:default"


def test_the_publisher_is_a_setting_the_same_on_every_port(client, two_agents):
    two_agents.A2A_CATALOG_PUBLISHER = "example.com"
    assert (
        _identifiers(client, "127.0.0.1:8001")
        == _identifiers(client, "127.0.0.1:8002")
        == [
            "urn:air:example.com:a2a:default",
            "urn:air:example.com:a2a:billing",
        ]
    )


def test_cards_and_the_api_catalog_link_the_ai_catalog(client, two_agents):
    link = '<http://testserver/.well-known/ai-catalog.json>; rel="ai-catalog"; type="application/ai-catalog+json"'
    for card_path in ("/.well-known/agent-card.json", "/agents/billing/.well-known/agent-card.json"):
        assert client.get(card_path)["Link"] == link
        assert client.head(card_path)["Link"] == link
    assert client.head("/.well-known/api-catalog")["Link"].split(", ") == [
        '<http://testserver/.well-known/api-catalog>; rel="api-catalog"',
        link,
    ]


def test_the_api_catalog_is_a_linkset_of_the_cards(client, two_agents):
    response = client.get("/.well-known/api-catalog")
    assert response.status_code == 200
    assert response["Content-Type"] == 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
    linkset = response.json()
    jsonschema.validate(linkset, LINKSET_SCHEMA, format_checker=FORMATS)
    catalog, *described = linkset["linkset"]
    assert catalog["anchor"] == "http://testserver/.well-known/api-catalog"
    endpoints = [item["href"] for item in catalog["item"]]
    assert [item["title"] for item in catalog["item"]] == [agents()["default"].settings.AGENT_NAME, "Billing"]
    assert endpoints[0] == "http://testserver/a2a/"
    assert [context["anchor"] for context in described] == endpoints
    cards = [context["service-desc"][0]["href"] for context in described]
    assert cards[0] == "http://testserver/.well-known/agent-card.json"
    for endpoint, card_url in zip(endpoints, cards, strict=True):
        card = client.get(card_url.removeprefix("http://testserver")).json()
        assert endpoint in {interface["url"] for interface in card["supportedInterfaces"]}


def test_head_of_the_api_catalog_answers_with_its_link(client, two_agents):
    response = client.head("/.well-known/api-catalog")
    assert response.status_code == 200
    assert response["Link"].startswith('<http://testserver/.well-known/api-catalog>; rel="api-catalog", ')
    assert response.content == b""


def test_unlisted_agents_are_in_neither_catalog(client, two_agents):
    ai = client.get("/.well-known/ai-catalog.json").json()
    api = client.get("/.well-known/api-catalog").content.decode()
    assert not any("internal" in entry["identifier"] for entry in ai["entries"])
    assert "internal" not in api and "Internal" not in api


def test_no_listed_agent_gives_empty_catalogs(client, settings):
    settings.A2A_AGENTS = {"default": {"LISTED": False}}
    catalog = client.get("/.well-known/ai-catalog.json").json()
    assert catalog["entries"] == []
    jsonschema.validate(catalog, AI_CATALOG_SCHEMA)
    assert client.get("/.well-known/api-catalog").json() == {"linkset": []}


def test_a_single_agent_project_lists_its_one_card(client):
    entries = client.get("/.well-known/ai-catalog.json").json()["entries"]
    assert [entry["url"] for entry in entries] == ["http://testserver/.well-known/agent-card.json"]


@pytest.mark.django_db(transaction=True)  # the token is read by authentication's own thread
def test_the_catalogs_can_require_authentication(client, two_agents):
    two_agents.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    two_agents.A2A_CATALOG_AUTHENTICATION = True
    token = Token.objects.create(user=User.objects.create_user("carol")).key
    for path in ("/.well-known/ai-catalog.json", "/.well-known/api-catalog"):
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert refused["WWW-Authenticate"] == "Bearer"
        assert refused.json()["error"]["message"].startswith("Authentication required")
        wrong = client.get(path, HTTP_AUTHORIZATION="Bearer nope")
        assert wrong.status_code == 401
        answered = client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert answered.status_code == 200
        assert answered["Cache-Control"] == "private, no-cache"


def test_without_the_setting_the_catalogs_stay_open_under_authentication(client, two_agents):
    two_agents.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    assert client.get("/.well-known/ai-catalog.json").status_code == 200
    assert client.get("/.well-known/api-catalog")["Cache-Control"].startswith("public")


def test_other_methods_are_refused(client, two_agents):
    for path in ("/.well-known/ai-catalog.json", "/.well-known/api-catalog"):
        response = client.post(path, b"{}", content_type="application/json")
        assert response.status_code == 405
        assert response["Allow"] == "GET, HEAD"


def test_a_revalidation_gets_304(client, two_agents):
    etag = client.get("/.well-known/ai-catalog.json")["ETag"]
    assert client.get("/.well-known/ai-catalog.json", HTTP_IF_NONE_MATCH=etag).status_code == 304


def test_catalog_authentication_without_classes_is_a_warning(settings):
    settings.A2A_CATALOG_AUTHENTICATION = True
    settings.A2A_AUTHENTICATION_CLASSES = []
    assert "a2a.W120" in {message.id for message in run_checks()}
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    assert "a2a.W120" not in {message.id for message in run_checks()}
    call_command("check")  # a warning, not an error


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("direct", [False, True], ids=["middleware", "direct-asgi"])
def test_the_catalogs_through_the_asgi_application(two_agents, direct):
    """Served by a2a.asgi as the cards are: through the MIDDLEWARE, or on A2A_DIRECT_ASGI's fast path."""
    two_agents.A2A_DIRECT_ASGI = direct
    catalog = call("GET", "/.well-known/ai-catalog.json")
    assert catalog.status_code == 200 and catalog.headers["content-type"] == "application/ai-catalog+json"
    assert [entry["url"] for entry in catalog.json()["entries"]][1] == (
        "http://testserver/agents/billing/.well-known/agent-card.json"
    )
    link = call("HEAD", "/.well-known/api-catalog").headers["link"]
    assert link.startswith('<http://testserver/.well-known/api-catalog>; rel="api-catalog"')


# --- The front page a project may add (a2a.urls.home) ------------------------------------------


def test_the_front_page_links_what_the_catalog_lists_and_no_more(settings, client, admin_client):
    """``path("", include("a2a.urls.home"))``: each listed agent's page, card and endpoint,
    and the admin; an agent with ``LISTED: False`` is not on it; with a private catalog,
    only staff see the agents."""
    settings.ROOT_URLCONF = "tests.urls_home"
    settings.A2A_AGENTS = {"billing": {"AGENT_NAME": "Billing"}, "hidden": {"LISTED": False}}
    page = client.get("/").content.decode()
    for link in ('href="/a2a/browse/"', 'href="/agents/billing/a2a/browse/"', 'href="/admin/"'):
        assert link in page, link
    assert "http://testserver/agents/billing/a2a/" in page and "/agents/hidden/" not in page
    settings.A2A_CATALOG_AUTHENTICATION = True
    assert "/agents/billing/" not in client.get("/").content.decode()
    assert 'href="/agents/billing/a2a/browse/"' in admin_client.get("/").content.decode()

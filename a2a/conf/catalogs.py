"""The discovery catalogs (/.well-known/ai-catalog.json, /.well-known/api-catalog)."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Discovery catalogs (a2a/service/discovery.py, docs/agents.md)"

DECLARED: dict[str, Setting] = {
    "A2A_CATALOG_AUTHENTICATION": Setting(
        bool,
        False,
        doc="Whether the discovery catalogs (/.well-known/ai-catalog.json and /.well-known/api-catalog, "
        "docs/agents.md) answer only callers A2A_AUTHENTICATION_CLASSES accept (401 with WWW-Authenticate "
        "otherwise). False: anyone may read them, as anyone may read the agent cards they list.",
    ),
    "A2A_CATALOG_PUBLISHER": Setting(
        str,
        "",
        doc="The publisher of the AI Catalog's entry identifiers (urn:air:{publisher}:a2a:{agent}), e.g. "
        '"example.com". Empty: the serving host, with its port unless the scheme\'s default.',
    ),
}

"""The checks of who may call: the authentication classes (``a2a.E005``, ``E006``) and the
catalogs' authentication (``a2a.W120``)."""

from __future__ import annotations

from django.apps import apps
from django.core.checks import Error, Warning
from rest_framework.authentication import TokenAuthentication

from a2a.agents import Agent
from a2a.auth import authenticators
from a2a.conf import a2a_settings
from a2a.ops.checks.registry import Messages, concern


@concern("A2A_AUTHENTICATION_CLASSES", "A2A_API_KEY_HEADER")
def check_authentication(agent: Agent | None = None) -> Messages:
    """``a2a.E005``: the authentication classes cannot be loaded; ``a2a.E006``: DRF
    tokens without their app."""
    try:
        classes = authenticators(agent)
    except Exception as exc:
        return [Error(f"A2A_AUTHENTICATION_CLASSES cannot be loaded: {exc}", id="a2a.E005")]
    if any(isinstance(a, TokenAuthentication) for a in classes) and not apps.is_installed("rest_framework.authtoken"):
        return [
            Error(
                "A2A_AUTHENTICATION_CLASSES uses DRF tokens, but 'rest_framework.authtoken' is not in INSTALLED_APPS.",
                hint="Add 'rest_framework.authtoken' to INSTALLED_APPS and migrate.",
                id="a2a.E006",
            )
        ]
    return []


@concern("A2A_CATALOG_AUTHENTICATION", "A2A_CATALOG_PUBLISHER")
def check_catalogs() -> Messages:
    """``a2a.W120``: the catalogs should require authentication, but no class authenticates."""
    if a2a_settings.CATALOG_AUTHENTICATION and not a2a_settings.AUTHENTICATION_CLASSES:
        return [
            Warning(
                "A2A_CATALOG_AUTHENTICATION is on but A2A_AUTHENTICATION_CLASSES is empty: "
                "every caller is accepted, so the catalogs stay open.",
                hint="List the authentication classes the catalogs' callers use in A2A_AUTHENTICATION_CLASSES.",
                id="a2a.W120",
            )
        ]
    return []

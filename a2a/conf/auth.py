"""Who may call the A2A endpoints: the authentication classes."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Authentication (a2a/auth.py)"

DECLARED: dict[str, Setting] = {
    "A2A_AUTHENTICATION_CLASSES": Setting(
        list,
        [],
        check_id="a2a.E005",
        doc="django-rest-framework authentication classes (dotted paths) the A2A endpoints accept, e.g. "
        '["a2a.auth.BearerTokenAuthentication", "a2a.auth.APIKeyAuthentication"]. Empty: an open agent. '
        "Set: unauthenticated requests get 401 and tasks are owned.",
    ),
    "A2A_API_KEY_HEADER": Setting(str, "X-API-Key", doc="The header a2a.auth.APIKeyAuthentication reads."),
}

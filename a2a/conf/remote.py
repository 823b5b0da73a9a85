"""Other A2A agents this project calls by name."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Remote agents (a2a.client, docs/client.md)"

DECLARED: dict[str, Setting] = {
    "A2A_REMOTE_AGENTS": Setting(
        dict,
        {},
        check_id="a2a.E100",
        doc='Other A2A agents this project calls by name: {"billing": {"URL": card or base URL, "AUTH": '
        '{"TYPE": "bearer" | "api_key" | "headers" | "oauth2", ...}, "TIMEOUT": 30, "VERIFY_SIGNATURE": False, '
        '"SIGNATURE_KEYS": PEM or JWKS, "FORWARD_CALLER_CREDENTIALS": False, ...}} (every key: docs/client.md). '
        "Checked: a2a.E100; `manage.py a2a_agents` checks each.",
    ),
}

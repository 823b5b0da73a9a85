"""Push notifications: whether they are offered, the SSRF guard, delivery."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "Push notifications (a2a/push, docs/protocol.md)"

DECLARED: dict[str, Setting] = {
    "A2A_PUSH_NOTIFICATIONS": Setting(
        bool,
        True,
        doc="Push notifications (the card's capabilities.pushNotifications). False answers every push config "
        "method, and a SendMessage carrying a push config, with -32003.",
    ),
    "A2A_PUSH_ALLOW_PRIVATE_URLS": Setting(
        bool,
        False,
        doc="Allow webhook URLs that resolve to loopback, private, link-local or other non-public addresses "
        "(SSRF guard). Only for tests and closed networks.",
    ),
    "A2A_PUSH_MAX_ATTEMPTS": Setting(
        int,
        5,
        min=1,
        doc="Attempts per delivery (the first one included) on connection errors, timeouts, 5xx and 429; then"
        " a logged warning.",
    ),
    "A2A_PUSH_RETRY_DELAY": Setting(
        float, 1.0, min=0, doc="Seconds before the first retry; doubled for each further one (capped at 5 minutes)."
    ),
    "A2A_PUSH_TIMEOUT": Setting(float, 10.0, min=0.1, doc="Seconds one webhook POST may take (connect, send, answer)."),
    "A2A_PUSH_TOKEN_LIFETIME": Setting(
        float,
        300.0,
        min=1,
        doc="Seconds a push notification's JWT is valid (its `exp` after its `iat`); each delivery attempt "
        "signs a new one. Only with A2A_CARD_SIGNING_KEY (docs/protocol.md, Signed push notifications).",
    ),
}

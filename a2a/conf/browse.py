"""The browsable agent page (/a2a/browse/)."""

from __future__ import annotations

from a2a.setting import Setting

TITLE = "The browsable agent (docs/browse.md)"

DECLARED: dict[str, Setting] = {
    "A2A_BROWSABLE_AGENT": Setting(
        object,
        "staff",
        doc="The browsable agent page (/a2a/browse/, docs/browse.md): the Agent Card as a page and a form to "
        'talk to the agent, through the same operations as any client. "staff": signed-in staff only '
        '(others are sent to the admin\'s login); "public": anyone may see the card, and send when the '
        "agent needs no authentication (else staff only); False: no page (404).",
    ),
}

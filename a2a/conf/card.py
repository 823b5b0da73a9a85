"""What the Agent Card says of the agent."""

from __future__ import annotations

from a2a.setting import Setting

_CARD = "The Agent Card."
_PROVIDER = "The card's provider (organization, URL) and documentation link: omitted when empty."
_MODES = (
    "Media types the agent takes and gives, as the card's defaultInput/OutputModes. A message part of another "
    "media type is refused (-32005); `*/*` and `image/*` wildcards work."
)

TITLE = "The Agent Card (a2a/service/card.py)"

DECLARED: dict[str, Setting] = {
    "A2A_PUBLIC_URL": Setting(
        str,
        None,
        check_id="a2a.E004",
        doc='Absolute base URL the Agent Card advertises (e.g. "https://agent.example.com"); None derives it '
        "from each request's host and scheme.",
    ),
    "A2A_AGENT_NAME": Setting(
        str,
        None,
        check_id="a2a.E031",
        doc="The Agent Card's name; None: the project's, the package of ROOT_URLCONF (\"myproject.urls\" -> "
        '"myproject"; else BASE_DIR\'s directory name, else "A2A agent").',
    ),
    "A2A_AGENT_DESCRIPTION": Setting(str, "An A2A agent served by Django.", doc=_CARD),
    "A2A_AGENT_VERSION": Setting(str, "0.1.0", doc=_CARD),
    "A2A_PROVIDER_ORGANIZATION": Setting(str, "", doc=_PROVIDER),
    "A2A_PROVIDER_URL": Setting(str, "", doc=_PROVIDER),
    "A2A_DOCUMENTATION_URL": Setting(str, "", doc=_PROVIDER),
    "A2A_SKILLS": Setting(
        list,
        [],
        check_id="a2a.E003",
        doc='A list of skill dicts: {"id", "name", "description", "tags", "examples"?}.',
    ),
    "A2A_INPUT_MODES": Setting(list, ["text/plain", "application/json"], check_id="a2a.E030", doc=_MODES),
    "A2A_OUTPUT_MODES": Setting(list, ["text/plain"], check_id="a2a.E030", doc=_MODES),
    "A2A_EXTENDED_CARD": Setting(
        dict,
        None,
        doc='Fields of the extended agent card, served to authenticated callers only (its "skills" are added '
        "to the public ones); None: no extended card.",
    ),
    "A2A_CARD_MAX_AGE": Setting(int, 300, min=0, doc="Agent Card max-age for HTTP caching (seconds)."),
}

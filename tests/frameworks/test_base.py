"""The mapping the adapters share (a2a/handlers/frameworks/), where a unit shows
more than the wire: a tool call's arguments as one shape whatever a framework gives."""

from __future__ import annotations

import pytest

from a2a.handlers.frameworks.awaiting import arguments


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ('{"path": "/tmp/x"}', {"path": "/tmp/x"}),  # the OpenAI Agents SDK's JSON string
        ({"path": "/tmp/x"}, {"path": "/tmp/x"}),  # PydanticAI's object, as it is
        ("", {}),
        (None, {}),
        ("{not json", {"input": "{not json"}),
        ("[1, 2]", {"input": [1, 2]}),
        ('"text"', {"input": "text"}),
    ],
)
def test_a_tool_call_s_arguments_are_an_object(given, expected):
    assert arguments(given) == expected

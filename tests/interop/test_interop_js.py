"""Interoperability with the official A2A JavaScript SDK (``@a2a-js/sdk`` from the npm
registry, pinned in tests/interop/js/package-lock.json; ``npm ci`` by
tests/interop/setup-node.sh, which ``make test`` and the ``node`` fixture run): its
v1.0 JSON-RPC and HTTP+JSON transports and its v0.3 compatibility transports, made by
its ``ClientFactory`` from our card, driving the real site under uvicorn (push
notifications delivered to the webhook receiver run here).

``node tests/interop/js/client.mjs BASE_URL SCENARIO`` prints one JSON line of what
the SDK observed, which the tests check. The tests skip only on a machine without
Node.js.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.interop.support import (
    HERE,
    expect_canceled,
    expect_errors,
    expect_listed,
    expect_multi_turn,
    expect_push_configs,
    expect_sent_blocking,
    expect_streamed,
    expect_subscribed,
)

pytestmark = [pytest.mark.slow, pytest.mark.interop]

V10 = [("1.0", "JSONRPC"), ("1.0", "HTTP+JSON")]
V03 = [("0.3", "JSONRPC"), ("0.3", "HTTP+JSON")]
TRANSPORTS = {
    ("1.0", "JSONRPC"): "JsonRpcTransport",
    ("1.0", "HTTP+JSON"): "_RestTransport",
    ("0.3", "JSONRPC"): "_LegacyJsonRpcTransport",
    ("0.3", "HTTP+JSON"): "_LegacyRestTransport",
}
EVERY = pytest.mark.parametrize("version", V10 + V03, ids=["v1.0-jsonrpc", "v1.0-rest", "v0.3-jsonrpc", "v0.3-rest"])
BOTH_V10 = pytest.mark.parametrize("version", V10, ids=["v1.0-jsonrpc", "v1.0-rest"])


def js(run_js, base: str, scenario: str, version: tuple[str, str], *options: str) -> dict[str, Any]:
    protocol, binding = version
    observed = run_js("client.mjs", base, scenario, "--protocol", protocol, "--binding", binding, *options)
    sdk = observed["sdk"]
    # The pinned SDK, out of tests/interop/js, through the transport asked for, speaking
    # the version asked for (a 1.0 client is not moved to 1.1 by the card's 1.1 entries).
    assert sdk["version"] == "1.3.0"
    assert sdk["module"].startswith(f"file://{HERE / 'js' / 'node_modules' / '@a2a-js' / 'sdk'}")
    assert sdk["transport"] == TRANSPORTS[version]
    assert sdk["protocolVersion"] == protocol
    assert sdk["sentVersions"] in ([], [protocol])
    assert sdk["agent"] == "toolnexus-agent"
    return observed


@EVERY
def test_js_card(run_js, server, version):
    observed = js(run_js, server, "card", version)
    assert observed["name"] == "toolnexus-agent" and observed["streaming"] is True


@EVERY
def test_js_send_blocking_then_get(run_js, server, version):
    observed = js(run_js, server, "send-blocking", version)
    expect_sent_blocking(observed)


@EVERY
def test_js_streaming_send(run_js, server, version):
    observed = js(run_js, server, "stream", version)
    # The server sends "append": true; the SDK's v0.3 HTTP+JSON transport drops it
    # (1.3.0: its _FromProto.taskArtifactUpdateEvent copies lastChunk, not append).
    expect_streamed(observed, appended=version != ("0.3", "HTTP+JSON"))


@BOTH_V10  # ListTasks is not in v0.3: the SDK's v0.3 transports refuse it themselves
def test_js_list_tasks(run_js, server, version):
    observed = js(run_js, server, "list", version)
    expect_listed(observed)


@EVERY
def test_js_cancel_a_running_task(run_js, server, version):
    observed = js(run_js, server, "cancel", version)
    assert observed["submitted"]["state"] == "submitted"
    expect_canceled(observed)


@EVERY
def test_js_multi_turn(run_js, server, version):
    observed = js(run_js, server, "multi-turn", version)
    expect_multi_turn(observed)


@EVERY
def test_js_subscribe_to_a_running_task(run_js, server, version):
    expect_subscribed(js(run_js, server, "subscribe", version))


@EVERY
def test_js_push_config_methods_and_delivery(run_js, server, receiver, version):
    hook = receiver.hook()
    observed = js(run_js, server, "push", version, "--webhook", hook)
    expect_push_configs(observed, hook)
    receiver.delivered(f"{hook}/keep", version[0], "tok-keep", observed["taskId"])
    assert receiver.at(f"{hook}/drop") == []  # deleted before the task moved on


@EVERY
def test_js_errors_are_the_sdk_errors(run_js, server, version):
    # v0.3 HTTP+JSON: the SDK's v0.3 client reads the JSON-RPC code at the body's top
    # (it raised a bare Error "HTTP error ... 404" before the body carried it).
    expect_errors(js(run_js, server, "errors", version), "name")

"""Interoperability with A2A clients nobody here wrote: the official A2A Python SDK
(``a2a-sdk``: its v1.0 JSON-RPC, HTTP+JSON and gRPC transports and its v0.3 compatibility
transports; and a2a-sdk 0.3, the v0.3 generation's own client, over HTTP+JSON) and
toolnexus's A2A agent tools, driving the real site under uvicorn.

Both clients install a top-level ``a2a`` package that clashes with ours, so they live
in ``.venv-interop`` (built by tests/interop/setup-venv.sh; ``make test`` builds it
first, and the ``interop_python`` fixture builds it when it is missing; a2a-sdk 0.3
likewise in ``.venv-interop03``) and run as subprocesses:
``tests/interop/clients/*.py BASE_URL SCENARIO`` prints one JSON line of what the
client observed, which the tests check. Push notifications are delivered to
a webhook receiver run here, on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.interop.support import (
    BOTH_BINDINGS,
    EVERY_TRANSPORT,
    Hit,
    expect_canceled,
    expect_errors,
    expect_listed,
    expect_multi_turn,
    expect_push_configs,
    expect_sent_blocking,
    expect_streamed,
    expect_subscribed,
    sdk,
)

pytestmark = [pytest.mark.slow, pytest.mark.interop]
# --- the official SDK ----------------------------------------------------------------------------


@EVERY_TRANSPORT
def test_sdk_send_blocking(run_client, server, version):
    observed = sdk(run_client, server, "send-blocking", version)
    expect_sent_blocking(observed)


@EVERY_TRANSPORT
def test_sdk_send_non_blocking_then_get_until_completed(run_client, server, version):
    observed = sdk(run_client, server, "send-nonblocking", version)
    assert observed["submitted"]["state"] == "submitted"
    assert observed["submitted"]["artifacts"] == []
    final = observed["final"]
    assert final["id"] == observed["submitted"]["id"]
    assert final["contextId"] == observed["submitted"]["contextId"]
    assert final["state"] == "completed"
    assert final["artifacts"] == ["later", "done: sleep:0.3;artifact:later"]
    assert observed["polls"] >= 2  # it was still going when first asked


@EVERY_TRANSPORT
def test_sdk_direct_reply_is_a_message(run_client, server, version):
    observed = sdk(run_client, server, "reply", version)
    assert observed["response"] == {"kind": "message", "text": "hi there", "role": "ROLE_AGENT"}


@EVERY_TRANSPORT
def test_sdk_errors_map_to_the_sdk_exceptions(run_client, server, version):
    observed = sdk(run_client, server, "errors", version)
    expect_errors(observed, "type")
    assert observed["subscribeCompleted"]["type"] == "UnsupportedOperationError"


@BOTH_BINDINGS  # the SDK's v0.3 transports have no ListTasks (it is not in v0.3)
def test_sdk_list_tasks(run_client, server, version):
    observed = sdk(run_client, server, "list", version)
    expect_listed(observed)


@EVERY_TRANSPORT
def test_sdk_cancel_a_running_task(run_client, server, version):
    observed = sdk(run_client, server, "cancel", version)
    expect_canceled(observed)


@EVERY_TRANSPORT
def test_sdk_streaming_send(run_client, server, version):
    observed = sdk(run_client, server, "stream", version)
    expect_streamed(observed)


@EVERY_TRANSPORT
def test_sdk_subscribe_to_a_running_task(run_client, server, version):
    observed = sdk(run_client, server, "subscribe", version)
    expect_subscribed(observed)


@BOTH_BINDINGS
def test_sdk_resumes_a_stream_after_the_number_it_read(run_client, server, version):
    # The SDK keeps an event's metadata as a protobuf Struct: the number it reads is a
    # float, and the Last-Event-ID made from it "3.0" (it was refused: -32602 "not '3.0'").
    observed = sdk(run_client, server, "resume", version)
    seqs = observed["seqs"]
    assert seqs == [f"{n}.0" for n in range(1, len(seqs) + 1)] and len(seqs) > 4, seqs
    assert observed["lastEventId"] == "3.0"
    assert observed["resumed"] == observed["whole"][3:]  # exactly the rest, nothing twice
    assert observed["resumedSeqs"] == seqs[3:]


@EVERY_TRANSPORT
def test_sdk_multi_turn(run_client, server, version):
    observed = sdk(run_client, server, "multi-turn", version)
    expect_multi_turn(observed)


def parsed_by_sdk(run_client, tmp_path, hits: list[Hit], dialect: str) -> list[dict[str, Any]]:
    """The delivered bodies as the SDK's types read them."""
    bodies = tmp_path / "bodies.json"
    bodies.write_text(json.dumps([{"dialect": dialect, "body": h.body} for h in hits]))
    return run_client("sdk_client.py", "-", "parse-push", "--bodies", str(bodies))["parsed"]


@EVERY_TRANSPORT
def test_sdk_push_config_methods_and_delivery(run_client, server, receiver, tmp_path, version):
    hook = receiver.hook()
    observed = sdk(run_client, server, "push", version, "--webhook", hook)
    task_id = observed["taskId"]
    expect_push_configs(observed, hook)
    assert observed["getDeleted"]["type"] == "TaskNotFoundError"

    hits = receiver.delivered(f"{hook}/keep", version[0], "tok-keep", task_id)
    assert receiver.at(f"{hook}/drop") == []  # deleted before the task moved on
    protocol = version[0]
    content_type = "application/a2a+json" if protocol == "1.0" else "application/json"
    assert all(h.headers["content-type"] == content_type for h in hits)
    parsed = parsed_by_sdk(run_client, tmp_path, hits, protocol)
    assert [p["id"] for p in parsed] == [task_id] * len(hits)
    assert parsed[-1]["state"] == "completed"


@EVERY_TRANSPORT
def test_sdk_push_config_in_send_message(run_client, server, receiver, tmp_path, version):
    hook = receiver.hook()
    observed = sdk(run_client, server, "push-in-send", version, "--webhook", hook)
    task_id = observed["final"]["id"]
    assert observed["final"]["state"] == "completed"
    [config] = observed["configs"]
    assert (config["taskId"], config["url"], config["token"]) == (task_id, f"{hook}/send", "tok-send")
    assert config["id"]  # generated by the server

    hits = receiver.delivered(f"{hook}/send", version[0], "tok-send", task_id)
    parsed = parsed_by_sdk(run_client, tmp_path, hits, version[0])
    assert parsed[-1] == {**parsed[-1], "id": task_id, "state": "completed"}


def test_the_card_offers_both_bindings_in_both_versions(server):
    """What the SDK's factory chose from above: every (binding, version) pair, in the
    v1.0 ``supportedInterfaces`` and in the v0.3 ``additionalInterfaces``; gRPC in v1.0
    and 1.1 only (a v0.3 gRPC client speaks v0.3's proto). The 1.1 entries (the draft)
    do not change what the SDK's 1.0 client picks."""
    card = httpx.get(f"{server}/.well-known/agent-card.json").json()
    rest = f"{server}/a2a/rest"
    assert card["additionalInterfaces"] == [
        {"url": card["url"], "transport": "JSONRPC"},
        {"url": rest, "transport": "HTTP+JSON"},
    ]
    offered = {(i["protocolBinding"], i["protocolVersion"]): i["url"] for i in card["supportedInterfaces"]}
    assert offered == {
        ("JSONRPC", "1.0"): card["url"],
        ("HTTP+JSON", "1.0"): rest,
        ("JSONRPC", "1.1"): card["url"],
        ("HTTP+JSON", "1.1"): rest,
        ("JSONRPC", "0.3"): card["url"],
        ("HTTP+JSON", "0.3"): rest,
        ("GRPC", "1.0"): offered[("GRPC", "1.0")],
        ("GRPC", "1.1"): offered[("GRPC", "1.0")],
    }
    assert offered[("GRPC", "1.0")].startswith("127.0.0.1:")

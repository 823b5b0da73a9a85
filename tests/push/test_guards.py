"""Push notifications switched off, and the SSRF guard: private webhook URLs refused, the
address checked again at delivery (see test_config_methods.py)."""

from __future__ import annotations

import asyncio

import pytest

from a2a import push
from a2a.push import guard
from a2a.testing import WireClient
from stores.backends import get_task_store
from tests.push.support import DIALECTS, PUSH_METHODS, V03, V10, a_task, create, fails, message, ok

# === disabled ======================================================================================


@pytest.mark.parametrize("version", DIALECTS)
def test_disabled_answers_push_not_supported(memory, settings, version, receiver):
    settings.A2A_PUSH_NOTIFICATIONS = False
    task_id = a_task(memory)
    for method in PUSH_METHODS[version]:
        error = fails(method, {"taskId": task_id, "id": task_id, "url": receiver.url()}, -32003, version=version)
        assert "Push notifications" in error["message"]
        if version == V10:
            assert error["data"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    params = {"message": message(version), "configuration": {key: {"url": receiver.url()}}}
    fails("SendMessage", params, -32003, version=version)
    assert len(memory) == 1  # the SendMessage created no task


def test_disabled_on_rest_reads_the_body_first(memory, settings):
    """HTTP+JSON runs the JSON-RPC binding's methods: a body that is not JSON is the parse
    error, as on JSON-RPC; any JSON object then answers that push notifications are off."""
    settings.A2A_PUSH_NOTIFICATIONS = False
    path = f"/a2a/rest/tasks/{a_task(memory)}/pushNotificationConfigs"
    client = WireClient(version="1.0")
    headers = {"Content-Type": "application/json"}
    unreadable = client.request("POST", path, content=b"{not json", headers=headers).json()["error"]
    assert unreadable["details"][0]["reason"] == "PARSE_ERROR"
    unchecked = client.request("POST", path, json={"url": 5}).json()["error"]  # params not read: any object
    assert unchecked["details"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"


def test_card_advertises_the_setting(settings):
    async def card(version: str | None) -> dict:
        client = WireClient(version=None)
        return (
            await client.arequest("GET", "/.well-known/agent-card.json", headers={"A2A-Version": version or ""})
        ).json()

    assert asyncio.run(card(None))["capabilities"]["pushNotifications"] is True
    assert asyncio.run(card(V10))["capabilities"]["pushNotifications"] is True
    settings.A2A_PUSH_NOTIFICATIONS = False
    assert asyncio.run(card(None))["capabilities"]["pushNotifications"] is False
    assert asyncio.run(card(V10))["capabilities"]["pushNotifications"] is False


# === the SSRF guard ==================================================================================

PRIVATE_URLS = [
    "http://127.0.0.1:{port}/hook",
    "http://127.9.9.9/",
    "http://localhost:{port}/hook",
    "http://10.1.2.3/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:{port}/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://100.64.0.1/",
    "https://2130706433/",  # 127.0.0.1 as one number
]


@pytest.mark.parametrize("version", DIALECTS)
@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_urls_are_refused(memory, settings, receiver, version, url):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    url = url.format(port=receiver.port)
    task_id = a_task(memory)
    if version == V10:
        error = fails(PUSH_METHODS[V10][0], {"taskId": task_id, "url": url}, -32602, version=V10)
    else:
        params = {"taskId": task_id, "pushNotificationConfig": {"url": url}}
        error = fails(PUSH_METHODS[V03][0], params, -32602)
    assert url in error["message"] and "A2A_PUSH_ALLOW_PRIVATE_URLS" in error["message"]
    assert get_task_store().push_configs.list_push_configs(task_id) == []


@pytest.mark.parametrize("version", DIALECTS)
def test_send_with_a_private_url_is_refused_before_any_task_exists(memory, settings, receiver, version):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    key = "taskPushNotificationConfig" if version == V10 else "pushNotificationConfig"
    params = {"message": message(version), "configuration": {key: {"url": receiver.url()}}}
    error = fails("SendMessage", params, -32602, version=version)
    assert receiver.url() in error["message"]
    assert len(memory) == 0
    assert receiver.hits == []


def test_public_address_is_accepted_without_the_setting(memory, settings):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    task_id = a_task(memory)
    made = create(V10, task_id, "https://93.184.216.34/hook")  # a literal: no DNS needed
    assert made["url"] == "https://93.184.216.34/hook"


def test_the_address_is_checked_again_at_delivery(memory, settings, receiver, dns, push_log):
    """DNS rebinding: public when the config was made, loopback when the update is sent."""
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = False
    answers = dns
    answers["hooks.example"] = ["93.184.216.34"]
    task_id = a_task(memory)
    create(V10, task_id, f"http://hooks.example:{receiver.port}/hook")
    answers["hooks.example"] = ["127.0.0.1"]
    refused = push_log("not sent")
    ok("CancelTask", {"id": task_id}, version=V10)
    assert refused.event.wait(10)
    assert push.wait_idle()
    assert receiver.hits == []


def test_delivery_goes_to_the_checked_address_with_the_host_header(memory, receiver, dns):
    """The request is pinned to the address that was checked (httpx never resolves the name)."""
    dns["hooks.example"] = ["127.0.0.1"]
    task_id = a_task(memory)
    create(V03, task_id, f"http://hooks.example:{receiver.port}/in?x=1", token="t")
    ok("tasks/cancel", {"id": task_id})
    [hit] = receiver.wait_for(1)
    assert hit.path == "/in?x=1"
    assert hit.headers["host"] == f"hooks.example:{receiver.port}"
    assert hit.state == "canceled"


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.31.255.255", False),
        ("192.168.0.1", False),
        ("169.254.1.1", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("255.255.255.255", False),
        ("224.0.0.251", False),
        ("240.0.0.1", False),
        ("::1", False),
        ("::", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("ff02::1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:8.8.8.8", True),
    ],
)
def test_address_classification(address, public):
    import ipaddress

    assert (guard._refusal(ipaddress.ip_address(address)) is None) is public

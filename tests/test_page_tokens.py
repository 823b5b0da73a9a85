"""ListTasks' page tokens (:mod:`a2a.service.page_tokens`) are sealed to their listing: a
token replayed by another caller, under another tenant or agent, with other filters, or
forged or altered, is invalid params on every binding (JSON-RPC, HTTP+JSON, gRPC) and
every store; a token shows no task id; ``totalSize`` is always the server's; and paging
still walks every task. The same for ListTaskPushNotificationConfigs."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import grpc
import orjson
import pytest
from django.contrib.auth.models import User
from google.protobuf import json_format
from rest_framework.authtoken.models import Token

from a2a.grpc import a2a_pb2 as pb
from a2a.grpc import a2a_pb2_grpc
from a2a.grpc.server import start
from a2a.protocol.errors import InvalidParamsError
from a2a.service import page_tokens
from a2a.testing import WireClient
from a2a.testing import v10_message as message
from stores.cursors import encode_cursor
from tests.agents_support import AGENTS
from tests.conftest import ALL_DATABASES, STORE_KINDS

COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture(autouse=True)
def _agent(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"
    settings.A2A_AGENTS = AGENTS
    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    settings.A2A_PUSH_NOTIFICATIONS = True
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True  # configs on a loopback URL (never delivered to)


@pytest.fixture
def keys() -> dict[str, str]:
    return {name: Token.objects.create(user=User.objects.create_user(name)).key for name in ("alice", "bob")}


def caller(key: str, agent: str = "default") -> WireClient:
    return WireClient(agent=None if agent == "default" else agent, headers={"Authorization": f"Bearer {key}"})


class Lister:
    """ListTasks on one binding, its answer as ``{"ids", "next", "total"}`` or ``{"invalid": message}``."""

    def __init__(self, binding: str, stub: a2a_pb2_grpc.A2AServiceStub | None) -> None:
        self.binding, self.stub = binding, stub

    async def __call__(self, key: str, *, agent: str = "default", tenant: str = "", **params: Any) -> dict:
        if self.binding == "grpc":
            return await self._grpc(key, agent, tenant, params)
        client = caller(key, agent)
        if self.binding == "jsonrpc":
            answer = await client.arpc("ListTasks", {**params, **({"tenant": tenant} if tenant else {})})
            if "error" in answer:
                assert answer["error"]["code"] == -32602, answer
                return {"invalid": answer["error"]["message"]}
            return self._page(answer["result"])
        path = client.rest_path(f"/{tenant}/tasks" if tenant else "/tasks")
        response = await client.arequest("GET", path, params=params)
        if response.status_code != 200:
            assert response.status_code == 400 and response.json()["error"]["status"] == "INVALID_ARGUMENT"
            return {"invalid": response.json()["error"]["message"]}
        return self._page(response.json())

    async def _grpc(self, key: str, agent: str, tenant: str, params: dict[str, Any]) -> dict:
        assert self.stub is not None
        metadata = (("authorization", f"Bearer {key}"), ("a2a-agent", agent))
        request = json_format.ParseDict({**params, "tenant": tenant}, pb.ListTasksRequest())
        try:
            answer = await self.stub.ListTasks(request, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
            return {"invalid": error.details()}
        return self._page(json_format.MessageToDict(answer))

    @staticmethod
    def _page(result: dict) -> dict:
        ids = [t["id"] for t in result.get("tasks", [])]
        return {"ids": ids, "next": result.get("nextPageToken", ""), "total": int(result.get("totalSize", 0))}


def run_with(binding: str, scenario: Any) -> Any:
    """``scenario(lister)`` in one event loop (with a gRPC server for the gRPC binding)."""

    async def go() -> Any:
        if binding != "grpc":
            return await scenario(Lister(binding, None))
        server, port = await start("127.0.0.1:0")
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await scenario(Lister(binding, a2a_pb2_grpc.A2AServiceStub(channel)))
        finally:
            await server.stop(None)

    return asyncio.run(go())


def refused(answer: dict) -> bool:
    return "pageToken" in answer.get("invalid", "") and "earlier page of this listing" in answer["invalid"]


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
@pytest.mark.parametrize("binding", ["jsonrpc", "rest", "grpc"])
def test_a_page_token_is_sealed_to_its_caller_tenant_agent_and_filters(use_store, keys, binding):
    alice, bob = keys["alice"], keys["bob"]
    mine = [caller(alice).send(message("hi", contextId="c1" if i < 3 else "c2"))["task"]["id"] for i in range(5)]
    caller(bob).send("hi")

    async def scenario(listing: Lister) -> dict[str, Any]:
        pages = [await listing(alice, pageSize=2)]
        while pages[-1]["next"]:
            pages.append(await listing(alice, pageSize=2, pageToken=pages[-1]["next"]))
        token = pages[0]["next"]
        flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
        forged = encode_cursor("2099-01-01T00:00:00.000Z", mine[0])  # the old plain cursor
        return {
            "pages": pages,
            "bob": await listing(bob, pageSize=2, pageToken=token),
            "context": await listing(alice, pageSize=2, pageToken=token, contextId="c1"),
            "state": await listing(alice, pageSize=2, pageToken=token, status=COMPLETED),
            "tenant": await listing(alice, pageSize=2, pageToken=token, tenant="acme"),
            "agent": await listing(alice, pageSize=2, pageToken=token, agent="billing"),
            "forged": await listing(alice, pageSize=2, pageToken=forged),
            "forged total": await listing(alice, pageToken=_old_token_with_total(mine[0], 123456)),
            "flipped": await listing(alice, pageSize=2, pageToken=flipped),
            "other page size": await listing(alice, pageSize=3, pageToken=token),
        }

    got = run_with(binding, scenario)
    pages = got.pop("pages")
    assert [i for page in pages for i in page["ids"]] == mine[::-1]  # every task, newest first, once
    assert [page["total"] for page in pages] == [5, 5, 5]  # the server's count on every page
    assert got.pop("other page size")["ids"] == mine[::-1][2:5]  # the size may change between pages
    if binding == "grpc":  # the gRPC binding serves no tenant (its requests' tenant field is not read)
        got.pop("tenant")
    for case, answer in got.items():
        assert refused(answer), (case, answer)
    for page in pages[:-1]:
        shown = _raw(page["next"])
        for task_id in mine:
            assert task_id not in page["next"] and task_id.encode() not in shown
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(shown)


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", STORE_KINDS)
def test_a_filtered_listing_pages_with_its_own_tokens(use_store, keys):
    alice = keys["alice"]
    in_c1 = [caller(alice).send(message("hi", contextId="c1"))["task"]["id"] for _ in range(3)]
    caller(alice).send(message("hi", contextId="c2"))
    client = caller(alice)
    first = client.result("ListTasks", {"contextId": "c1", "status": COMPLETED, "pageSize": 2})
    rest = client.result(
        "ListTasks", {"contextId": "c1", "status": COMPLETED, "pageSize": 2, "pageToken": first["nextPageToken"]}
    )
    assert [t["id"] for t in first["tasks"] + rest["tasks"]] == in_c1[::-1]
    assert first["totalSize"] == rest["totalSize"] == 3 and rest["nextPageToken"] == ""
    unfiltered = client.rpc("ListTasks", {"pageSize": 2, "pageToken": first["nextPageToken"]})["error"]
    assert unfiltered["code"] == -32602 and "pageToken" in unfiltered["message"]


@pytest.mark.django_db(transaction=True)
def test_push_config_page_tokens_are_sealed_to_their_task(keys):
    alice = caller(keys["alice"])
    tasks = [alice.send("ask:more?")["task"]["id"] for _ in range(2)]
    for task_id in tasks:
        for n in range(3):
            url = "http://127.0.0.1:9/hook"
            alice.result("CreateTaskPushNotificationConfig", {"taskId": task_id, "id": f"c{n}", "url": url})
    first = alice.result("ListTaskPushNotificationConfigs", {"taskId": tasks[0], "pageSize": 2})
    token = first["nextPageToken"]
    assert "c1" not in _raw(token).decode("latin-1")
    rest = alice.result("ListTaskPushNotificationConfigs", {"taskId": tasks[0], "pageSize": 2, "pageToken": token})
    assert [c["id"] for c in first["configs"] + rest["configs"]] == ["c0", "c1", "c2"]
    other = alice.rpc("ListTaskPushNotificationConfigs", {"taskId": tasks[1], "pageSize": 2, "pageToken": token})
    assert other["error"]["code"] == -32602 and "pageToken" in other["error"]["message"]


def test_a_token_reads_after_a_key_rotation_and_not_under_another_key(settings):
    bound = ("ListTasks", "default", "", "alice", None, None, None)
    token = page_tokens.seal("cursor", bound)
    assert page_tokens.seal("cursor", bound) == token  # deterministic: the same page, the same token
    assert page_tokens.seal("", bound) == ""  # the last page has none
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "a-new-key" * 6, [settings.SECRET_KEY]
    assert page_tokens.unseal(token, bound) == "cursor"
    settings.SECRET_KEY_FALLBACKS = []
    with pytest.raises(InvalidParamsError):
        page_tokens.unseal(token, bound)


@pytest.mark.parametrize("token", ["", "!!!", "A" * 8, "A" * 200, "é" * 30])
def test_anything_else_is_refused(token):
    with pytest.raises(InvalidParamsError) as raised:
        page_tokens.unseal(token, ("ListTasks", "default", "", "", None, None, None))
    assert raised.value.field == "pageToken"


def _raw(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _old_token_with_total(task_id: str, total: int) -> str:
    """A token as they were before sealing: base64 of ``[updated, id, total]``."""
    values = ["2099-01-01T00:00:00.000Z", task_id, total]
    return base64.urlsafe_b64encode(orjson.dumps(values)).decode().rstrip("=")

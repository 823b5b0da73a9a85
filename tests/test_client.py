"""a2a.client against this project's own server in this process (httpx's ASGI transport):
every operation on JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3, async; the card's interface
choice and its signature."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from a2a.client import (
    AsyncClient,
    CardError,
    CardSignatureError,
    RemoteAgentError,
    TaskNotFound,
    UnsupportedOperation,
    apply,
)
from a2a.client.card import choose, interfaces
from tests.helpers import asgi_app
from tests.keys import pem, public_pem

pytestmark = pytest.mark.django_db(transaction=True)

INTERFACES = [
    ("JSONRPC", "1.0"),
    ("HTTP+JSON", "1.0"),
    ("JSONRPC", "1.1"),
    ("HTTP+JSON", "1.1"),
    ("JSONRPC", "0.3"),
    ("HTTP+JSON", "0.3"),
]
BASE = "http://testserver"


@pytest.fixture(autouse=True)
def _scripted(settings):
    settings.A2A_HANDLER = "tests.handlers.scripted"


def client(binding: str | None = None, version: str | None = None, **options) -> AsyncClient:
    transport = httpx.ASGITransport(app=asgi_app())
    return AsyncClient(BASE, transport=transport, binding=binding, version=version, **options)


def run(coro):
    return asyncio.run(coro)


def texts(artifact: dict) -> list[str]:
    return [p["text"] for p in artifact["parts"] if p["kind"] == "text"]


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_send_get_list(binding, version):
    async def go():
        context = f"ctx-{uuid.uuid4()}"
        async with client(binding, version) as c:
            task = await c.send("artifact:first", context_id=context)
            assert (c.interface.binding, c.interface.version) == (binding, version)
            assert task["kind"] == "task" and task["status"]["state"] == "completed"
            assert texts(task["artifacts"][0]) == ["first"]
            assert task["history"][0]["parts"] == [{"kind": "text", "text": "artifact:first"}]
            later = await c.send("sleep:0.2", context_id=context, blocking=False)
            assert later["status"]["state"] in ("submitted", "working")
            for _ in range(100):
                got = await c.get_task(later["id"], history_length=1)
                if got["status"]["state"] == "completed":
                    break
                await asyncio.sleep(0.05)
            assert got["status"]["state"] == "completed" and len(got["history"]) == 1
            page = await c.list_tasks(context_id=context, page_size=10)
            assert {t["id"] for t in page.tasks} == {task["id"], later["id"]}
            assert page.total_size == 2
            done = await c.list_tasks(context_id=context, state="completed", page_size=1)
            assert len(done.tasks) == 1 and done.next_page_token

    run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_stream_of_chunks_folds_into_the_task(binding, version):
    async def go():
        async with client(binding, version) as c:
            items = [i async for i in c.stream("progress:thinking;chunk:c1:a;chunk:c1:b;last:c1:c")]
            assert items[0].kind == "task"
            assert [i.kind for i in items[1:]].count("artifact") == 4  # three chunks, then the answer
            assert items[-1].kind == "status" and items[-1].final
            task = None
            for item in items:
                task = apply(task, item)
            assert task["status"]["state"] == "completed"
            chunks = next(a for a in task["artifacts"] if a["artifactId"] == "c1")
            assert texts(chunks) == ["a", "b", "c"]
            progress = [i for i in items if i.kind == "status" and i.task["status"].get("message")]
            assert progress[0].task["status"]["message"]["parts"][0]["text"] == "thinking"

    run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_cancel_and_subscribe(binding, version):
    async def go():
        async with client(binding, version) as c:
            task = await c.send("sleep:30", blocking=False)
            await asyncio.sleep(0.1)

            async def follow():
                return [i async for i in c.subscribe(task["id"])]

            # The ASGI transport hands the stream over when it ends: the cancel ends it.
            followed = asyncio.create_task(follow())
            await asyncio.sleep(0.3)
            canceled = await c.cancel_task(task["id"])
            assert canceled["status"]["state"] == "canceled"
            items = await asyncio.wait_for(followed, 10)
            assert items[0].kind == "task" and items[0].task["id"] == task["id"]
            assert items[-1].task["status"]["state"] == "canceled"
            with pytest.raises(RemoteAgentError) as error:
                await c.cancel_task(task["id"])
            assert error.value.code == -32002 and error.value.reason == "TASK_NOT_CANCELABLE"

    run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_input_required_is_answered_on_the_same_task(binding, version):
    async def go():
        async with client(binding, version) as c:
            task = await c.send("ask:which one?")
            assert task["status"]["state"] == "input-required"
            assert task["status"]["message"]["parts"][0]["text"] == "which one?"
            answer = await c.send("artifact:this one", task_id=task["id"], context_id=task["contextId"])
            assert answer["id"] == task["id"] and answer["status"]["state"] == "completed"
            reply = await c.send("reply:straight away")
            assert reply["kind"] == "message" and reply["role"] == "agent"
            assert reply["parts"] == [{"kind": "text", "text": "straight away"}]

    run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_push_configs(binding, version, settings):
    settings.A2A_PUSH_ALLOW_PRIVATE_URLS = True

    async def go():
        async with client(binding, version) as c:
            task = await c.send("sleep:30", blocking=False)
            auth = {"schemes": ["Bearer"], "credentials": "secret"}
            saved = await c.set_push_config(task["id"], "http://127.0.0.1:9/hook", token="tok", authentication=auth)
            assert saved["taskId"] == task["id"] and saved["url"] == "http://127.0.0.1:9/hook" and saved["id"]
            assert saved["token"] == "tok" and saved["authentication"] == auth
            named = await c.set_push_config(task["id"], "http://127.0.0.1:9/other", id="mine")
            assert named["id"] == "mine"
            assert await c.get_push_config(task["id"], "mine") == named
            listed = await c.list_push_configs(task["id"])
            assert sorted(c["id"] for c in listed) == sorted([saved["id"], "mine"])
            assert await c.delete_push_config(task["id"], "mine") is None
            assert [c["id"] for c in await c.list_push_configs(task["id"])] == [saved["id"]]
            await c.cancel_task(task["id"])
            with_config = await c.send(
                "sleep:30", blocking=False, push_config={"url": "http://127.0.0.1:9/x", "token": "t"}
            )
            [config] = await c.list_push_configs(with_config["id"])
            assert (config["url"], config["token"]) == ("http://127.0.0.1:9/x", "t")
            await c.cancel_task(with_config["id"])

    run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_errors_are_typed(binding, version):
    async def go():
        async with client(binding, version) as c:
            with pytest.raises(TaskNotFound) as error:
                await c.get_task("no-such-task")
            assert error.value.code == -32001 and "no-such-task" in error.value.message
            with pytest.raises(UnsupportedOperation):
                await c.extended_card()

    run(go())


def test_the_extended_card_for_an_authenticated_caller(settings):
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    settings.A2A_AUTHENTICATION_CLASSES = ["a2a.auth.BearerTokenAuthentication"]
    settings.A2A_EXTENDED_CARD = {"description": "for members", "skills": [{"id": "secret", "name": "Secret"}]}
    token = Token.objects.create(user=User.objects.create(username="caller")).key

    async def go():
        from a2a.client import BearerToken

        for binding, version in INTERFACES:
            async with client(binding, version, auth=BearerToken(token)) as c:
                card = await c.extended_card()
                assert card["description"] == "for members"
                assert "secret" in [s["id"] for s in card["skills"]]

    run(go())


# --- the card -------------------------------------------------------------------------------


def test_the_card_offers_both_bindings_in_every_version_and_the_client_picks_1_1_jsonrpc():
    async def go():
        async with client() as c:
            card = await c.fetch_card()
            return card, c.interface

    card, chosen = run(go())
    assert [(i.binding, i.version) for i in interfaces(card)] == INTERFACES
    assert (chosen.binding, chosen.version, chosen.url) == ("JSONRPC", "1.1", f"{BASE}/a2a/")


def test_choosing_from_cards_of_other_shapes():
    v03 = {"name": "old", "protocolVersion": "0.3.0", "url": "http://old/rpc", "preferredTransport": "JSONRPC"}
    v03["additionalInterfaces"] = [{"url": "http://old/rest", "transport": "HTTP+JSON"}]
    assert (choose(v03).binding, choose(v03).version, choose(v03).url) == ("JSONRPC", "0.3", "http://old/rpc")
    assert choose(v03, binding="HTTP+JSON").url == "http://old/rest"
    grpc_only = {
        "name": "g",
        "supportedInterfaces": [{"url": "g:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
    }
    with pytest.raises(CardError, match=r"offers no JSON-RPC or HTTP\+JSON.*it offers: none"):
        choose(grpc_only)
    with pytest.raises(CardError, match=r"offers no 1.0 interface \(it offers: JSONRPC 0.3, HTTP\+JSON 0.3\)"):
        choose(v03, version="1.0")


KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_KEY = ec.generate_private_key(ec.SECP256R1())


def fetched(**options):
    async def go():
        async with client(verify_signature=True, **options) as c:
            await c.fetch_card()
            return c

    return run(go())


def test_a_signed_card_is_verified(settings):
    settings.A2A_CARD_SIGNING_KEY = pem(KEY)
    settings.A2A_CARD_SIGNING_KID = "key-1"
    c = fetched(signature_keys=public_pem(KEY))
    assert c.verified.valid and c.verified.header["kid"] == "key-1"
    with pytest.raises(CardSignatureError, match=r"No signature of the card at .* verifies"):
        fetched(signature_keys=public_pem(OTHER_KEY))


def test_an_unsigned_card_is_refused_when_signatures_are_required(settings):
    settings.A2A_CARD_SIGNING_KEY = ""
    with pytest.raises(CardSignatureError, match="is not signed, and a signature is required"):
        fetched(signature_keys=public_pem(KEY))
    with pytest.raises(CardError, match="verify_signature needs signature_keys"):
        AsyncClient(BASE, verify_signature=True)


def test_a_tampered_card_is_refused(settings):
    settings.A2A_CARD_SIGNING_KEY = pem(KEY)

    async def go():
        async with client() as c:
            card = await c.fetch_card()
        card["name"] = "someone else"
        AsyncClient(card, verify_signature=True, signature_keys=public_pem(KEY))

    with pytest.raises(CardSignatureError, match="does not match"):
        run(go())


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
def test_a_sync_client_in_process(binding, version):
    from a2a.client import Client
    from a2a.client.inprocess import ASGIAppTransport

    transport = ASGIAppTransport(asgi_app())
    with Client(BASE, transport=transport, binding=binding, version=version) as c:
        task = c.send("artifact:sync")
        assert texts(task["artifacts"][0]) == ["sync"]
        assert c.get_task(task["id"])["status"]["state"] == "completed"
        kinds = [i.kind for i in c.stream("progress:p;artifact:a")]
        assert kinds[0] == "task" and kinds[-1] == "status"
        with pytest.raises(TaskNotFound):
            c.cancel_task("missing")
    transport.close()

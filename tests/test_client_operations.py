"""The clients' operations are written once (:mod:`a2a.client.operations`): each is a
method of both clients with the same signature and docstring, a plain function on
``Client``, a coroutine function on ``AsyncClient`` (streams: an iterator and an async
iterator), as a method written out would be."""

from __future__ import annotations

import inspect

import httpx
import pytest

from a2a.client import AsyncClient, Client, Interface
from a2a.testing import rpc_result

STREAMS = ("stream", "subscribe")
CALLS = (
    "fetch_card",
    "connect",
    "send",
    "get_task",
    "poll",
    "list_tasks",
    "cancel_task",
    "set_push_config",
    "get_push_config",
    "list_push_configs",
    "delete_push_config",
    "extended_card",
)
INTERFACE = Interface("http://agent.test/a2a/", "JSONRPC", "1.0")


@pytest.mark.parametrize("name", CALLS + STREAMS)
def test_both_clients_have_the_operation_with_one_signature_and_docstring(name):
    sync, aio = getattr(Client, name), getattr(AsyncClient, name)
    assert sync.__doc__ and sync.__doc__ == aio.__doc__
    assert sync.__name__ == aio.__name__ == name
    signature = inspect.signature(sync)
    assert next(iter(signature.parameters)) == "self"
    assert signature.replace(return_annotation=None) == inspect.signature(aio).replace(return_annotation=None)
    assert "Plan" not in str(signature.return_annotation)  # what the caller gets, not the plan


@pytest.mark.parametrize("name", CALLS)
def test_an_async_operation_is_a_coroutine_function_and_a_sync_one_is_not(name):
    assert inspect.iscoroutinefunction(getattr(AsyncClient, name))
    assert not inspect.iscoroutinefunction(getattr(Client, name))
    bound = getattr(AsyncClient(INTERFACE, transport=httpx.MockTransport(lambda r: httpx.Response(500))), name)
    assert inspect.iscoroutinefunction(bound) and "self" not in inspect.signature(bound).parameters


def test_a_bound_operation_runs_its_plan_on_its_client():
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=rpc_result({"configs": []})))
    with Client(INTERFACE, transport=transport) as client:
        assert client.list_push_configs("t1") == []
        assert str(inspect.signature(client.stream)).endswith("-> 'Iterator[StreamItem]'")
    assert str(inspect.signature(AsyncClient.stream)).endswith("-> 'AsyncGenerator[StreamItem, None]'")

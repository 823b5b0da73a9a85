"""Push notifications end to end: the config methods in both dialects over JSON-RPC (the
real ASGI app, in-process), and deliveries to a real webhook receiver on 127.0.0.1.

The receiver is a small threaded HTTP server; it records each request on arrival, can
answer from a script of status codes, and can hold every request until the test lets
it go. Private URLs are allowed for these tests (the receiver is on loopback) except
where the SSRF guard itself is tested. Waiting is done on events (the receiver's
condition, ``push.wait_idle``), never by sleeping.
"""

from __future__ import annotations

import pytest

from a2a.protocol.model import new_task, set_status
from a2a.push import guard
from tests.conftest import ALL_DATABASES
from tests.push.support import DIALECTS, PUSH_METHODS, V03, V10, a_task, create, error_field, fails, message, ok

# === the config methods ============================================================================


@ALL_DATABASES  # the ORM stores, from the runner's threads too
@pytest.mark.parametrize("store_kind", ["memory", "file", "file-c", "orm-sqlite"])
def test_v10_create_get_list_delete(use_store):
    task_id = a_task(use_store)
    url = "https://hooks.example.com/a2a"  # never called: nothing happens to the task
    made = create(V10, task_id, url, token="tok-1", authentication={"scheme": "Bearer", "credentials": "s3cret"})
    assert made == {
        "id": made["id"],
        "taskId": task_id,
        "url": url,
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
    }
    assert made["id"]  # generated
    second = create(V10, task_id, "https://hooks.example.com/other", id="second")
    assert second == {"id": "second", "taskId": task_id, "url": "https://hooks.example.com/other"}

    get, list_, delete = PUSH_METHODS[V10][1:]
    assert ok(get, {"taskId": task_id, "id": made["id"]}, version=V10) == made
    assert ok(get, {"task_id": task_id, "id": "second"}, version=V10) == second  # proto field names too
    listed = ok(list_, {"taskId": task_id}, version=V10)
    assert listed == {"configs": [made, second], "nextPageToken": ""}

    assert ok(delete, {"taskId": task_id, "id": made["id"]}, version=V10) is None
    assert ok(list_, {"taskId": task_id}, version=V10) == {"configs": [second], "nextPageToken": ""}
    assert ok(delete, {"taskId": task_id, "id": made["id"]}, version=V10) is None  # idempotent
    error = fails(get, {"taskId": task_id, "id": made["id"]}, -32001, version=V10)
    assert made["id"] in error["message"] and "config" in error["message"]


@ALL_DATABASES
@pytest.mark.parametrize("store_kind", ["memory", "file", "file-c", "orm-sqlite"])
def test_a_config_created_while_its_task_is_deleted_is_not_kept(use_store, monkeypatch):
    """The task is deleted (with its configs) while the webhook URL is checked: the
    create answers task-not-found and leaves no config behind."""
    task_id = a_task(use_store)
    checked = guard.check_url

    async def check_and_lose_the_task(url: str) -> None:
        await checked(url)
        await use_store.adelete(task_id)

    monkeypatch.setattr(guard, "check_url", check_and_lose_the_task)
    error = fails(
        PUSH_METHODS[V10][0], {"taskId": task_id, "url": "https://hooks.example.com/a2a"}, -32001, version=V10
    )
    assert task_id in error["message"]
    assert use_store.push_configs.list_push_configs(task_id) == []


@ALL_DATABASES  # the ORM stores, from the runner's threads too
@pytest.mark.parametrize("store_kind", ["memory", "file", "file-c", "orm-sqlite"])
def test_v03_set_get_list_delete(use_store):
    task_id = a_task(use_store)
    set_, get, list_, delete = PUSH_METHODS[V03]
    auth = {"schemes": ["Bearer"], "credentials": "s3cret"}
    first = ok(
        set_,
        {
            "taskId": task_id,
            "pushNotificationConfig": {"url": "https://a.example.com/", "token": "t", "authentication": auth},
        },
    )
    config_id = first["pushNotificationConfig"]["id"]
    assert first == {
        "taskId": task_id,
        "pushNotificationConfig": {
            "id": config_id,
            "url": "https://a.example.com/",
            "token": "t",
            "authentication": auth,
        },
    }
    second = ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "b", "url": "https://b.example.com/"}})
    assert second == {"taskId": task_id, "pushNotificationConfig": {"id": "b", "url": "https://b.example.com/"}}

    assert ok(get, {"id": task_id, "pushNotificationConfigId": "b"}) == second
    assert ok(get, {"id": task_id}) == first  # no config id: the task's first config
    assert ok(list_, {"id": task_id}) == [first, second]  # a bare array

    assert ok(delete, {"id": task_id, "pushNotificationConfigId": config_id}) is None
    assert ok(list_, {"id": task_id}) == [second]
    assert ok(delete, {"id": task_id, "pushNotificationConfigId": config_id}) is None  # idempotent
    fails(get, {"id": task_id, "pushNotificationConfigId": config_id}, -32001)


def test_v03_set_with_an_existing_id_replaces_it(memory):
    task_id = a_task(memory)
    set_, _, list_, _ = PUSH_METHODS[V03]
    ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "x", "url": "https://one.example.com/"}})
    ok(set_, {"taskId": task_id, "pushNotificationConfig": {"id": "x", "url": "https://two.example.com/"}})
    assert [c["pushNotificationConfig"]["url"] for c in ok(list_, {"id": task_id})] == ["https://two.example.com/"]


def test_toolnexus_dialect_v03_params_under_v10_method_names(memory):
    task_id = a_task(memory)
    made = ok(
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "pushNotificationConfig": {"url": "https://a.example.com/"}},
    )
    assert made["pushNotificationConfig"]["url"] == "https://a.example.com/"
    assert ok("ListTaskPushNotificationConfigs", {"id": task_id}) == [made]


def test_v10_list_pages(memory):
    task_id = a_task(memory)
    for name in ("a", "b", "c"):
        create(V10, task_id, f"https://{name}.example.com/", id=name)
    list_ = PUSH_METHODS[V10][2]
    page = ok(list_, {"taskId": task_id, "pageSize": 2}, version=V10)
    assert [c["id"] for c in page["configs"]] == ["a", "b"] and page["nextPageToken"]
    rest = ok(list_, {"taskId": task_id, "pageSize": 2, "pageToken": page["nextPageToken"]}, version=V10)
    assert [c["id"] for c in rest["configs"]] == ["c"] and rest["nextPageToken"] == ""
    error = fails(list_, {"taskId": task_id, "pageToken": "nope!"}, -32602, version=V10)
    assert error_field(error, V10) == "pageToken"


@pytest.mark.parametrize("version", DIALECTS)
def test_unknown_task_is_task_not_found(memory, version):
    create_, get, list_, delete = PUSH_METHODS[version]
    if version == V10:
        calls = [
            (create_, {"taskId": "nope", "url": "https://a.example.com/"}),
            (get, {"taskId": "nope", "id": "x"}),
            (list_, {"taskId": "nope"}),
            (delete, {"taskId": "nope", "id": "x"}),
        ]
    else:
        calls = [
            (create_, {"taskId": "nope", "pushNotificationConfig": {"url": "https://a.example.com/"}}),
            (get, {"id": "nope"}),
            (list_, {"id": "nope"}),
            (delete, {"id": "nope", "pushNotificationConfigId": "x"}),
        ]
    for method, params in calls:
        error = fails(method, params, -32001, version=version)
        assert "nope" in error["message"]


@pytest.mark.parametrize(
    ("version", "method", "params", "field"),
    [
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"url": "https://a.example.com/"}, "taskId"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "ftp://a.example.com/"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "not a url"}, "url"),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "https://a.example.com:99999/"}, "url"),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "token": "a\r\nX: y"},
            "token",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "authentication": {}},
            "authentication.scheme",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {"taskId": "T", "url": "https://a.example.com/", "authentication": {"scheme": "Bad Scheme"}},
            "authentication.scheme",
        ),
        (
            V10,
            "CreateTaskPushNotificationConfig",
            {
                "taskId": "T",
                "url": "https://a.example.com/",
                "authentication": {"scheme": "Bearer", "credentials": "x\ny"},
            },
            "authentication.credentials",
        ),
        (V10, "CreateTaskPushNotificationConfig", {"taskId": "T", "url": "https://a.example.com/", "id": 5}, "id"),
        (V10, "GetTaskPushNotificationConfig", {"taskId": "T"}, "id"),
        (V10, "GetTaskPushNotificationConfig", {"id": "x"}, "taskId"),
        (V10, "DeleteTaskPushNotificationConfig", {"taskId": "T"}, "id"),
        (V10, "ListTaskPushNotificationConfigs", {}, "taskId"),
        (V10, "ListTaskPushNotificationConfigs", {"taskId": "T", "pageSize": -1}, "pageSize"),
        (V03, "tasks/pushNotificationConfig/set", {"taskId": "T"}, "pushNotificationConfig"),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {"taskId": "T", "pushNotificationConfig": {}},
            "pushNotificationConfig.url",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {"pushNotificationConfig": {"url": "https://a.example.com/"}},
            "taskId",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {
                "taskId": "T",
                "pushNotificationConfig": {"url": "https://a.example.com/", "authentication": {"credentials": "x"}},
            },
            "pushNotificationConfig.authentication.schemes",
        ),
        (
            V03,
            "tasks/pushNotificationConfig/set",
            {
                "taskId": "T",
                "pushNotificationConfig": {
                    "url": "https://a.example.com/",
                    "authentication": {"schemes": ["Bearer", 5]},
                },
            },
            "pushNotificationConfig.authentication.schemes",
        ),
        (V03, "tasks/pushNotificationConfig/get", {"pushNotificationConfigId": "x"}, "id"),
        (V03, "tasks/pushNotificationConfig/list", {}, "id"),
        (V03, "tasks/pushNotificationConfig/delete", {"id": "T"}, "pushNotificationConfigId"),
    ],
)
def test_bad_params_name_the_field(memory, version, method, params, field):
    memory.save(set_status(new_task(message(V03), context_id="c") | {"id": "T"}, "working"))
    error = fails(method, params, -32602, version=version)
    assert error_field(error, version) == field, error


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"taskId": "T", "url": "https://a.example.com/\ud800"}, "url"),
        ({"taskId": "T", "url": "https://a.example.com/", "id": "\udfff"}, "id"),
    ],
)
def test_lone_surrogates_are_invalid_params(params, field):
    """(orjson refuses them in a request body; in-process callers get a clean -32602 too)"""
    from a2a.protocol import V10 as v10_dialect
    from a2a.protocol.errors import InvalidParamsError

    with pytest.raises(InvalidParamsError) as exc:
        v10_dialect.parse_push_create(params)
    assert exc.value.field == field


@pytest.mark.parametrize(
    ("version", "configuration", "field"),
    [
        (V10, {"taskPushNotificationConfig": {"token": "t"}}, "configuration.taskPushNotificationConfig.url"),
        (V10, {"pushNotificationConfig": {"url": "gopher://x"}}, "configuration.pushNotificationConfig.url"),
        (
            V03,
            {"pushNotificationConfig": {"url": "https://a.example.com/", "token": 5}},
            "configuration.pushNotificationConfig.token",
        ),
        (V03, {"pushNotificationConfig": "https://a.example.com/"}, "configuration.pushNotificationConfig"),
    ],
)
def test_bad_send_push_config_names_the_field_and_creates_nothing(memory, version, configuration, field):
    error = fails("SendMessage", {"message": message(version), "configuration": configuration}, -32602, version=version)
    assert error_field(error, version) == field, error
    assert len(memory) == 0

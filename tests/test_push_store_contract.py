"""The push-config storage contract, on the backend beside every task store kind (ORM on
SQLite, and on PostgreSQL when A2A_TEST_POSTGRES_URL is set)."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from stores.file import FILE_SUBDIRECTORY, FilePushConfigStore, FileTaskStore
from stores.memory import MemoryTaskStore
from stores.orm_push import OrmPushConfigStore
from stores.push_configs import MemoryPushConfigStore, TaskStorePushConfigs
from tests.conftest import ALL_DATABASES, STORE_KINDS, make_store
from tests.test_store_contract import task

pytestmark = ALL_DATABASES

DURABLE_KINDS = [k for k in STORE_KINDS if k != "memory"]


def config(task_id: str, config_id: str, url: str = "https://hooks.example.com/a2a", *, minute: int = 0, **extra):
    return {
        "taskId": task_id,
        "id": config_id,
        "url": url,
        "dialect": "1.0",
        "createdAt": f"2026-01-01T00:{minute:02d}:00.000Z",
        **extra,
    }


@pytest.fixture
def configs(store):
    """The push-config store beside a fresh task store of each kind."""
    return store.push_configs


def test_backend_follows_the_task_store(store_kind, configs):
    expected = {"memory": MemoryPushConfigStore, "file": FilePushConfigStore}.get(
        store_kind.removesuffix("-c"), OrmPushConfigStore
    )
    assert isinstance(configs, expected)


def test_one_push_config_store_per_task_store(store, configs):
    assert store.push_configs is configs


def test_two_configs_on_one_task_both_survive(configs):
    first = config("t1", "a", token="tok-a", authentication={"schemes": ["Bearer"], "credentials": "s3cret"})
    assert configs.save_push_config(first) is first
    configs.save_push_config(config("t1", "b", "https://other.example.com/hook", minute=1))
    assert configs.get_push_config("t1", "a") == first
    assert configs.get_push_config("t1", "b")["url"] == "https://other.example.com/hook"
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["a", "b"]


def test_list_is_oldest_first_then_by_id(configs):
    configs.save_push_config(config("t1", "z", minute=0))
    configs.save_push_config(config("t1", "late", minute=5))
    configs.save_push_config(config("t1", "a", minute=0))
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["a", "z", "late"]


def test_saving_the_same_id_replaces_it(configs):
    configs.save_push_config(config("t1", "a", "https://one.example.com/"))
    configs.save_push_config(config("t1", "a", "https://two.example.com/"))
    assert [c["url"] for c in configs.list_push_configs("t1")] == ["https://two.example.com/"]


def test_delete_removes_one(configs):
    configs.save_push_config(config("t1", "a"))
    configs.save_push_config(config("t1", "b", minute=1))
    assert configs.delete_push_config("t1", "a") is True
    assert configs.get_push_config("t1", "a") is None
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["b"]
    assert configs.delete_push_config("t1", "a") is False
    assert configs.delete_push_config("nope", "a") is False


def test_tasks_do_not_share_configs(configs):
    configs.save_push_config(config("t1", "a"))
    configs.save_push_config(config("t2", "a", "https://t2.example.com/"))
    assert configs.get_push_config("t1", "a")["url"] == "https://hooks.example.com/a2a"
    assert configs.get_push_config("t2", "a")["url"] == "https://t2.example.com/"
    assert configs.list_push_configs("t3") == []
    assert configs.get_push_config("t3", "a") is None
    assert configs.get_push_config("", "") is None


def test_stored_copy_is_isolated_from_the_caller(configs):
    original = config("t1", "a")
    configs.save_push_config(original)
    original["url"] = "https://mutated.example.com/"
    got = configs.get_push_config("t1", "a")
    got["url"] = "https://mutated-too.example.com/"
    assert configs.get_push_config("t1", "a")["url"] == "https://hooks.example.com/a2a"


@pytest.mark.parametrize(
    "bad", [None, "x", {"id": "a"}, {"taskId": "t"}, {"taskId": "", "id": "a"}, {"taskId": "t", "id": 5}]
)
def test_save_refuses_a_config_without_ids(configs, bad):
    with pytest.raises(ValueError):
        configs.save_push_config(bad)


def test_configs_do_not_show_up_as_tasks(store, configs):
    configs.save_push_config(config("t1", "a"))
    assert store.list().total_size == 0
    assert store.get("t1") is None


@pytest.mark.parametrize("store_kind", DURABLE_KINDS)
def test_a_fresh_instance_sees_what_the_previous_one_saved(store_kind, tmp_path):
    first = make_store(store_kind, tmp_path).push_configs
    first.save_push_config(config("t1", "a"))
    first.save_push_config(config("t1", "b", minute=1))
    again = make_store(store_kind, tmp_path).push_configs
    assert again is not first
    assert [c["id"] for c in again.list_push_configs("t1")] == ["a", "b"]
    assert again.delete_push_config("t1", "a") is True
    assert [c["id"] for c in first.list_push_configs("t1")] == ["b"]


def test_concurrent_saves_on_one_task_all_survive(configs):
    errors: list[BaseException] = []

    def save(i: int) -> None:
        try:
            configs.save_push_config(config("t1", f"c{i}", minute=i))
        except BaseException as exc:  # pragma: no cover (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [c["id"] for c in configs.list_push_configs("t1")] == [f"c{i}" for i in range(8)]


def test_async_twins(configs):
    async def go():
        await configs.asave_push_config(config("t1", "a"))
        got = await configs.aget_push_config("t1", "a")
        listed = await configs.alist_push_configs("t1")
        deleted = await configs.adelete_push_config("t1", "a")
        return got, listed, deleted

    got, listed, deleted = asyncio.run(go())
    assert got["id"] == "a" and [c["id"] for c in listed] == ["a"] and deleted is True


# --- the file backend -----------------------------------------------------------------


def test_file_configs_live_in_a_dot_directory_beside_the_tasks(tmp_path, file_syscalls):
    store = FileTaskStore(tmp_path, fsync=False, syscalls=file_syscalls)
    configs = store.push_configs
    configs.save_push_config(config("task-1", "cfg-1"))
    assert (tmp_path / FILE_SUBDIRECTORY / "task-1" / "cfg-1.json").is_file()
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert configs.fsync is False  # follows the task store


@pytest.mark.parametrize("evil", ["../escape", "/etc/passwd", "a/b", "nul\x00byte", "..", "x" * 5000, "é✓"])
def test_file_ids_never_escape_the_directory(tmp_path, evil):
    configs = FilePushConfigStore(tmp_path / "push")
    configs.save_push_config(config(evil, evil))
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].is_relative_to(tmp_path / "push")
    assert all(len(part) <= 255 for part in files[0].parts)
    assert configs.get_push_config(evil, evil)["id"] == evil
    assert [c["id"] for c in configs.list_push_configs(evil)] == [evil]


def test_file_ids_that_sanitize_alike_do_not_alias(tmp_path):
    configs = FilePushConfigStore(tmp_path)
    configs.save_push_config(config("a.b", "x.y"))
    configs.save_push_config(config("a_b", "x_y", "https://second.example.com/"))
    assert configs.get_push_config("a.b", "x.y")["url"] == "https://hooks.example.com/a2a"
    assert configs.get_push_config("a_b", "x_y")["url"] == "https://second.example.com/"
    assert configs.get_push_config("a.b", "x_y") is None
    assert [c["id"] for c in configs.list_push_configs("a.b")] == ["x.y"]


def test_file_corrupt_config_reads_as_missing(tmp_path, caplog):
    configs = FilePushConfigStore(tmp_path)
    configs.save_push_config(config("t1", "a"))
    configs.save_push_config(config("t1", "b", minute=1))
    configs.path("t1", "a").write_bytes(b'{"taskId": "t1", "id"')
    assert configs.get_push_config("t1", "a") is None
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["b"]
    assert "unreadable" in caplog.text


# --- deleting a task deletes its configs -----------------------------------------------------


def test_deleting_a_task_deletes_its_configs_and_only_its(store, configs):
    for task_id in ("t1", "t2"):
        store.save(task(task_id))
        configs.save_push_config(config(task_id, "a"))
        configs.save_push_config(config(task_id, "b", minute=1))
    assert store.delete("t1") is True
    assert configs.list_push_configs("t1") == []
    assert configs.get_push_config("t1", "a") is None
    assert [c["id"] for c in configs.list_push_configs("t2")] == ["a", "b"]
    assert asyncio.run(store.adelete("t2")) is True
    assert configs.list_push_configs("t2") == []


@pytest.mark.parametrize("store_kind", DURABLE_KINDS)
def test_a_fresh_instance_deletes_what_the_previous_one_saved(store_kind, tmp_path):
    """``manage.py a2a_tasks prune`` builds its own store instance: it finds the configs."""
    first = make_store(store_kind, tmp_path)
    first.save(task("t1"))
    first.push_configs.save_push_config(config("t1", "a"))
    second = make_store(store_kind, tmp_path)
    assert second is not first
    assert second.delete("t1") is True
    assert first.push_configs.list_push_configs("t1") == []


def test_deleting_an_unknown_task_clears_configs_left_behind(store, configs):
    configs.save_push_config(config("ghost", "a"))
    assert store.delete("ghost") is False
    assert configs.list_push_configs("ghost") == []


def test_delete_task_push_configs_says_how_many(configs):
    configs.save_push_config(config("t1", "a"))
    configs.save_push_config(config("t1", "b", minute=1))
    configs.save_push_config(config("t2", "a"))
    assert configs.delete_task_push_configs("t1") == 2
    assert configs.delete_task_push_configs("t1") == 0
    assert configs.delete_task_push_configs("unknown") == 0
    assert [c["id"] for c in configs.list_push_configs("t2")] == ["a"]
    configs.save_push_config(config("t1", "c"))  # the task's configs can start again
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["c"]


def test_file_delete_removes_the_task_directory(tmp_path, file_syscalls):
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
    configs = store.push_configs
    store.save(task("t1"))
    configs.save_push_config(config("t1", "a"))
    directory = tmp_path / "tasks" / FILE_SUBDIRECTORY / "t1"
    assert directory.is_dir() and configs.has_configs("t1")
    (directory / "stray.tmp").write_bytes(b"x")  # a temp file a crashed save left
    assert store.delete("t1") is True
    assert not directory.exists() and not configs.has_configs("t1")


def test_file_delete_keeps_the_configs_of_a_damaged_task_file(tmp_path, file_syscalls):
    """A damaged task file is not deleted (it is left for repair), nor are its configs."""
    store = FileTaskStore(tmp_path / "tasks", fsync=False, syscalls=file_syscalls)
    configs = store.push_configs
    store.save(task("t1"))
    configs.save_push_config(config("t1", "a"))
    store.path("t1").write_bytes(b'{"id": "t1", "status"')
    assert store.delete("t1") is False
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["a"]


@pytest.mark.parametrize("store_kind", [k for k in STORE_KINDS if k.startswith("orm")])
def test_orm_delete_is_one_transaction(store_kind, store, configs, monkeypatch):
    """When the configs cannot be deleted, the task is not deleted either."""
    store.save(task("t1"))
    configs.save_push_config(config("t1", "a"))

    def fail(self, task_id):
        super(OrmPushConfigStore, self).delete_task_push_configs(task_id)  # deletes the rows
        raise RuntimeError("the database went away")

    monkeypatch.setattr(OrmPushConfigStore, "delete_task_push_configs", fail)
    with pytest.raises(RuntimeError):
        store.delete("t1")
    assert store.get("t1") is not None
    assert [c["id"] for c in configs.list_push_configs("t1")] == ["a"]


# --- custom task stores ------------------------------------------------------------------


class StoreWithConfigs(MemoryTaskStore):
    """A custom task store that keeps push configs itself."""

    keeps_push_configs = True

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[tuple[str, str], dict] = {}

    def save_push_config(self, config):
        self.kept[config["taskId"], config["id"]] = config
        return config

    def get_push_config(self, task_id, config_id):
        return self.kept.get((task_id, config_id))

    def list_push_configs(self, task_id):
        return [c for (t, _), c in self.kept.items() if t == task_id]

    def delete_push_config(self, task_id, config_id):
        return self.kept.pop((task_id, config_id), None) is not None


class PlainStore(MemoryTaskStore):
    pass


def test_a_custom_store_with_the_methods_keeps_its_configs():
    task_store = StoreWithConfigs()
    configs = task_store.push_configs
    assert isinstance(configs, TaskStorePushConfigs)
    configs.save_push_config(config("t1", "a"))
    assert task_store.kept["t1", "a"]["id"] == "a"
    assert asyncio.run(configs.alist_push_configs("t1"))[0]["id"] == "a"


def test_a_custom_store_that_calls_the_built_in_delete_loses_its_configs_too():
    task_store = StoreWithConfigs()
    configs = task_store.push_configs
    task_store.save(task("t1"))
    configs.save_push_config(config("t1", "a"))
    configs.save_push_config(config("t2", "a"))
    assert task_store.delete("t1") is True
    assert list(task_store.kept) == [("t2", "a")]


def test_another_custom_store_falls_back_to_memory_with_a_warning(caplog):
    from stores.base import TaskPage, TaskStore

    class Bare(TaskStore):
        def get(self, task_id):
            return None

        def save(self, task):
            return task

        def list(self, query=None):
            return TaskPage(tasks=[])

        def delete(self, task_id):
            return False

    with caplog.at_level(logging.WARNING, logger="stores.base"):
        configs = Bare().push_configs
    assert isinstance(configs, MemoryPushConfigStore)
    assert "keeps no push notification configs" in caplog.text
    # A MemoryTaskStore subclass is still a memory store: no warning needed.
    assert isinstance(PlainStore().push_configs, MemoryPushConfigStore)


def test_has_configs_is_false_only_when_the_last_save_found_none(store, configs):
    """``has_configs`` (push delivery skips a saved version on False, without a query)
    never says False for a task that had a config when it was saved: memory and file
    look now; the ORM store answers from the save's own statement (``RETURNING``),
    and a save that did not ask (a plain ``save``) leaves it unknown (True)."""
    store.save(task("t1", "working", _version=1), expected_version=0)
    assert configs.has_configs("t1") is False
    store.save(task("t1", "working", _version=2), expected_version=1)
    configs.save_push_config(config("t1", "a"))  # made after that save (another process, say)
    store.save(task("t1", "working", _version=3), expected_version=2)
    assert configs.has_configs("t1") is True

    store.save(task("t2", "working", _version=1), expected_version=0)  # found none...
    configs.save_push_config(config("t2", "a"))
    store.save(task("t2", "completed", _version=2))  # ... then a save that does not ask
    assert configs.has_configs("t2") is True

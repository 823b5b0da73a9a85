"""What a store can do is declared as class flags (``supports_compare_and_swap``,
``keeps_push_configs``, a push-config store's ``cheap_has_configs``), with safe
defaults for a store that sets none; and the system checks check the backend the
project uses, built once."""

from __future__ import annotations

from typing import ClassVar

import pytest
from django.core.management import call_command

from a2a import push
from a2a.core import lifecycle
from a2a.push import delivery
from stores.backends import get_task_store, task_stores
from stores.base import TaskPage, TaskStore
from stores.file import FilePushConfigStore, FileTaskStore
from stores.memory import MemoryTaskStore
from stores.orm import OrmTaskStore
from stores.orm_push import OrmPushConfigStore
from stores.push_configs import MemoryPushConfigStore, PushConfigStore


class DictStore(TaskStore):
    """A custom store that sets no flag: its ``save`` takes ``expected_version``, but it
    does not say it honours it, so nothing passes one."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict] = {}
        self.expected: list[int | None] = []

    def get(self, task_id):
        return self.tasks.get(task_id)

    def save(self, task, expected_version=None):
        self.expected.append(expected_version)
        self.tasks[task["id"]] = task
        return task

    def list(self, query=None):
        return TaskPage(tasks=list(self.tasks.values()))

    def delete(self, task_id):
        return self.tasks.pop(task_id, None) is not None


class SwappingStore(DictStore):
    supports_compare_and_swap = True


def a_task(task_id: str = "t1") -> dict:
    return {"id": task_id, "contextId": "c", "kind": "task", "status": {"state": "submitted"}}


def test_a_custom_store_that_sets_no_flag_gets_the_safe_defaults():
    store = DictStore()
    assert (store.durable, store.shared, store.nonblocking) == (False, False, False)
    assert store.supports_compare_and_swap is False
    assert store.keeps_push_configs is False
    assert isinstance(store.push_configs, MemoryPushConfigStore)  # kept in memory, with a warning


def test_the_built_in_stores_declare_compare_and_swap():
    assert all(cls.supports_compare_and_swap for cls in (MemoryTaskStore, FileTaskStore, OrmTaskStore))
    assert not any(cls.keeps_push_configs for cls in (MemoryTaskStore, FileTaskStore, OrmTaskStore))


class NoConfigs(PushConfigStore):
    """A custom push-config store that sets no flag (and holds nothing)."""

    def save_push_config(self, config):
        return config

    def get_push_config(self, task_id, config_id):
        return None

    def list_push_configs(self, task_id):
        return []

    def delete_push_config(self, task_id, config_id):
        return False


def test_a_push_config_store_that_sets_no_flag_is_never_asked_whether_it_has_configs():
    assert NoConfigs.cheap_has_configs is False
    assert NoConfigs().has_configs("t1") is True  # "may have": the safe answer
    assert all(cls.cheap_has_configs for cls in (MemoryPushConfigStore, FilePushConfigStore, OrmPushConfigStore))


def test_lifecycle_saves_plainly_on_a_store_without_the_flag():
    store = DictStore()
    lifecycle.create_sync(store, a_task())
    lifecycle.transition_sync(store, "t1", lambda t: {**t, "status": {"state": "working"}}, publish=False)
    assert store.expected == [None, None]
    assert store.get("t1")["_version"] == 2


def test_lifecycle_compares_and_swaps_on_a_store_with_the_flag():
    store = SwappingStore()
    lifecycle.create_sync(store, a_task())
    lifecycle.transition_sync(store, "t1", lambda t: {**t, "status": {"state": "working"}}, publish=False)
    assert store.expected == [0, 1]


class Counting(NoConfigs):
    """A push-config store recording whether it was asked ``has_configs``."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def has_configs(self, task_id):
        self.asked.append(task_id)
        return False


class Cheap(Counting):
    cheap_has_configs = True


@pytest.mark.parametrize(("configs_class", "handed_off"), [(Counting, True), (Cheap, False)])
def test_push_delivery_reads_the_cheap_has_configs_flag(configs_class, handed_off, settings, monkeypatch):
    class Store(MemoryTaskStore):
        def create_push_configs(self):
            return configs_class()

    settings.TASK_STORE = Store()
    handed: list[str] = []
    monkeypatch.setattr(delivery._delivery, "notify", lambda task, store: handed.append(task["id"]))
    push.on_task_saved(a_task())
    configs = get_task_store().push_configs
    assert configs.asked == ([] if handed_off else ["t1"])
    assert handed == (["t1"] if handed_off else [])


class BuiltOnce(MemoryTaskStore):
    """Counts its instances, and notes which instance each system check ran on."""

    built = 0
    checked: ClassVar[list[TaskStore]] = []

    def __init__(self) -> None:
        super().__init__()
        type(self).built += 1

    def check(self, *, databases=None):
        type(self).checked.append(self)
        return []


def test_the_checks_run_twice_build_the_store_once(settings):
    BuiltOnce.built, BuiltOnce.checked = 0, []
    settings.TASK_STORE = "tests.test_store_capabilities.BuiltOnce"
    call_command("check", verbosity=0)
    call_command("check", verbosity=0)
    task_stores.check()
    assert BuiltOnce.built == 1
    assert len(BuiltOnce.checked) >= 3
    assert all(store is get_task_store() for store in BuiltOnce.checked)

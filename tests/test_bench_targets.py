"""The benchmark's servers are configured as bench/README.md says (``bench/targets.py``)."""

from __future__ import annotations

from a2a.conf import from_environment
from bench.e2e import run_order
from bench.targets import TARGETS, our_store_env
from stores.backends import get_task_store
from stores.file import FileTaskStore


def test_the_file_atomic_target_is_the_file_store_without_fsync(tmp_path, settings):
    # toolnexus's file store's guarantee (atomic, no fsync), for a like-for-like ratio
    env = our_store_env("file-atomic", tmp_path)
    settings.TASK_STORE = from_environment(env)["TASK_STORE"]
    store = get_task_store()
    assert isinstance(store, FileTaskStore)
    assert (store.fsync, store.directory) == (False, tmp_path / "tasks")
    assert {"ours/file-atomic", "direct/file-atomic"} <= set(TARGETS)


def test_the_file_target_fsyncs(tmp_path, settings):
    settings.TASK_STORE = from_environment(our_store_env("file", tmp_path))["TASK_STORE"]
    store = get_task_store()
    assert isinstance(store, FileTaskStore) and store.fsync is True


def test_every_other_repetition_runs_the_servers_in_the_reverse_order():
    targets = ["ours/file", "direct/file", "toolnexus/file"]
    assert [run_order(targets, rep) for rep in (1, 2, 3)] == [targets, targets[::-1], targets]

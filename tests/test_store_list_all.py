"""``stores.base.list_all``: the one walk over a store's pages (the default ``scan``,
``scan_older``, a context's versions, retention, the dashboard, the admin's search and
the bulk commands use it). It reads a page only when the last one is consumed, goes on
from the query's own page token, and ends on the page without a next token."""

from __future__ import annotations

import datetime as dt
import itertools

from stores.base import TaskQuery, context_versions, list_all
from stores.memory import MemoryTaskStore
from stores.timestamps import format_timestamp

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class Counting(MemoryTaskStore):
    """A memory store counting its ``list`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.lists = 0

    def list(self, query=None):
        self.lists += 1
        return super().list(query)


def filled(n: int) -> Counting:
    store = Counting()
    for i in range(n):
        when = format_timestamp(START + dt.timedelta(minutes=i))
        store.save({"id": f"t{i}", "contextId": "c", "status": {"state": "completed", "timestamp": when}})
    return store


def test_every_task_in_the_lists_order_a_page_read_as_the_last_is_consumed():
    store = filled(5)
    walk = list_all(store, TaskQuery(page_size=2, all_owners=True))
    assert [t["id"] for t in itertools.islice(walk, 2)] == ["t4", "t3"]
    assert store.lists == 1  # the second page is not read until asked for
    assert [t["id"] for t in walk] == ["t2", "t1", "t0"]
    assert store.lists == 3  # the third page has no next token: no fourth read


def test_it_goes_on_from_the_querys_page_token():
    store = filled(5)
    second = store.list(TaskQuery(page_size=2)).next_page_token
    assert [t["id"] for t in list_all(store, TaskQuery(page_size=2, page_token=second))] == ["t2", "t1", "t0"]


def test_the_default_scans_and_a_contexts_versions_walk_every_page():
    store = filled(130)  # more than one page of MAX_PAGE_SIZE
    store.lists = 0
    assert len(list(store.scan())) == 130 and store.lists == 2
    assert len(list(store.scan_older("completed", START + dt.timedelta(minutes=120)))) == 120
    assert len(context_versions(store, [store.get("t0")])) == 130

"""What the index tests check of every lister: each page, in order, is the one the full
scan (:func:`stores.paging.page_in_memory`) gives; and the put/delete operations they
apply to a lister and to the reference dict alike."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from stores.base import Task, TaskPage, TaskQuery
from stores.paging import page_in_memory


def apply_operations(
    operations: Iterable[tuple], make: Callable[..., Task], put: Callable[[Task], Any], remove: Callable[[str], Any]
) -> dict[str, Task]:
    """Apply ``("put", *make_args)`` and ``("delete", id)`` operations through ``put`` and
    ``remove``: the tasks that are left, by id."""
    tasks: dict[str, Task] = {}
    for op in operations:
        if op[0] == "put":
            task = make(*op[1:])
            tasks[task["id"]] = task
            put(task)
        else:
            tasks.pop(op[1], None)
            remove(op[1])
    return tasks


def assert_pages_like_the_full_scan(
    list_page: Callable[[TaskQuery], TaskPage], tasks: dict[str, Task], query_args: dict, *, more: bool = False
) -> None:
    """Every page of ``list_page`` for ``query_args`` has the full scan's tasks and total
    (with ``more``, and whether another page follows)."""
    token = None
    for _ in range(len(tasks) + 2):  # every page, in order
        query = TaskQuery(page_token=token, **query_args)
        expected = page_in_memory(list(tasks.values()), query)
        got = list_page(query)
        assert [t["id"] for t in got.tasks] == [t["id"] for t in expected.tasks]
        assert got.total_size == expected.total_size
        if more:
            assert bool(got.next_page_token) == bool(expected.next_page_token)
        token = got.next_page_token
        if not token:
            break

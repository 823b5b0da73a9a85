"""The task list's search box, on every store: an exact task id, else a context id
(that context's tasks), else words of the tasks' text (every string under a ``text``
key: the text parts of their messages and artifacts), a task matching when its text
holds every word. An ``agent:<name>`` word keeps that agent's tasks
(:func:`stores.admin.agents.split_search`), as the agent filter does.

The ORM store searches in the database (:func:`orm_text_search`: PostgreSQL's
full-text index, SQLite's ``LIKE``); any other store is searched by
:func:`search_store`, whose text search reads a bounded number of tasks per page
(:data:`SEARCH_SCAN_LIMIT`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import BooleanField, Q, QuerySet
from django.db.models.expressions import RawSQL

from stores.base import MAX_PAGE_SIZE, Task, TaskPage, TaskQuery, TaskStore, list_all
from stores.cursors import encode_cursor
from stores.fields import task_updated
from stores.models import TaskRecord
from stores.paging import page_in_memory

SEARCH_HELP = (
    "Words of the tasks' messages and artifacts (a task must hold them all), "
    "or an exact task id, or a context id to list that context's tasks; "
    "agent:<name> keeps one agent's tasks."
)
#: On a store that is not the ORM one, a text search reads at most this many tasks (the
#: most recently updated that pass the filters) to fill one page of results; the next
#: page goes on from there. The ORM store searches in the database instead.
SEARCH_SCAN_LIMIT = 2000
#: Which listed tasks a search keeps beyond its ``TaskQuery``.
Keep = Callable[[Task], bool]
#: A word of a search: a run of letters and digits.
WORD = re.compile(r"[^\W_]+")

#: The ORM store's full-text document on PostgreSQL: the ``text`` values of the task
#: (``$.**.text``), as words of the ``simple`` configuration (no stemming, any language).
#: Migration 0004 builds a GIN index on exactly this expression (``FTS_INDEX``).
FTS_DOCUMENT = "to_tsvector('simple'::regconfig, jsonb_path_query_array({task}, 'lax $.**.text'::jsonpath))"
FTS_INDEX = "stores_task_text_fts_idx"


class _Text(str):
    """A string found under a ``text`` key (told apart from strings in lists on the stack)."""


def _texts(value: Any) -> Iterator[str]:
    """Every string under a ``text`` key anywhere in ``value`` (the text parts of its
    messages and artifacts), as PostgreSQL's ``$.**.text`` and SQLite's ``json_tree``
    see them. Iterative: a deeply nested document cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                if key == "text" and isinstance(child, str):
                    stack.append(_Text(child))
                elif isinstance(child, dict | list):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, _Text):
            yield str(item)


def task_text(task: Task) -> str:
    """The searchable text of a task, one value per line: every string under a ``text``
    key (the text parts of its messages and artifacts), on every store alike."""
    return "\n".join(_texts(task))


def search_words(term: str) -> list[str]:
    """The words of a search, case-folded: the runs of letters and digits (as on
    PostgreSQL, so punctuation never matters); a task matches when its text holds each."""
    return WORD.findall(term.casefold())


def text_matches(task: Task, words: list[str]) -> bool:
    """Whether the text of ``task`` holds every one of ``words`` (case-folded substrings)."""
    text = task_text(task).casefold()
    return all(word in text for word in words)


def orm_text_search(queryset: QuerySet, term: str) -> Q:
    """The condition "the task's text holds every word of ``term``" on the database of
    ``queryset``: PostgreSQL's full-text search on the indexed :data:`FTS_DOCUMENT`
    (each word a prefix: "weath" finds "weather"); on SQLite, a case-insensitive
    ``LIKE`` (as ``icontains``) on each ``text`` value of the JSON (``json_tree``);
    elsewhere ``icontains`` on the JSON document."""
    vendor = connections[queryset.db].vendor
    table = connections[queryset.db].ops.quote_name(TaskRecord._meta.db_table)
    column = f"{table}.{connections[queryset.db].ops.quote_name('task')}"
    if vendor == "postgresql":
        words = WORD.findall(term)  # letters and digits: nothing tsquery reads as syntax
        if not words:
            return Q(pk__in=[])
        tsquery = " & ".join(f"{word}:*" for word in words)
        sql = FTS_DOCUMENT.format(task=column) + " @@ to_tsquery('simple'::regconfig, %s)"
        return Q(RawSQL(sql, [tsquery], output_field=BooleanField()))
    words = search_words(term)
    if not words:
        return Q(pk__in=[])
    condition = Q()
    for word in words:
        if vendor == "sqlite":
            pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            sql = (
                f"EXISTS (SELECT 1 FROM json_tree({column}) AS node WHERE node.key = 'text' "
                "AND node.type = 'text' AND node.value LIKE %s ESCAPE '\\')"
            )
            condition &= Q(RawSQL(sql, [pattern], output_field=BooleanField()))
        else:
            condition &= Q(task__icontains=word)
    return condition


@dataclass
class Found:
    """What :func:`search_store` found: how the term was understood (``mode``: "" for no
    term, "id", "context" or "text"), the page, and for a text search how many tasks
    were read and whether :data:`SEARCH_SCAN_LIMIT` cut the read."""

    mode: str
    page: TaskPage
    scanned: int = 0
    cut: bool = False


def search_store(
    store: TaskStore, term: str, query: dict[str, Any], token: str | None, size: int, keep: Keep | None = None
) -> Found:
    """One page of the tasks of ``store`` that pass ``query`` (``TaskQuery`` fields) and
    ``keep`` (what no ``TaskQuery`` field selects: the agent filter's
    :meth:`~stores.admin.filters.TaskFilter.keeps`) and match ``term``: the task of that
    id, else the tasks of that context, else the tasks whose text holds its words. A
    ``keep`` or a text search reads the tasks (:func:`scan_search`). Raises ValueError
    for a ``token`` that is not a page token of this list."""
    found = store.get(term) if term else None
    if found is not None:
        kept = [found] if keep is None or keep(found) else []
        return Found("id", page_in_memory(kept, TaskQuery(**query, page_size=1)))
    if term and query.get("context_id") in (None, term):
        in_context = {**query, "context_id": term}
        if store.list(TaskQuery(**in_context, page_size=1)).tasks:
            if keep is not None:
                return Found("context", *scan_search(store, in_context, keep, token, size))
            return Found("context", store.list(TaskQuery(**in_context, page_size=size, page_token=token)))
    if term:
        words = search_words(term)
        match = _both(lambda task: text_matches(task, words), keep)
        return Found("text", *scan_search(store, query, match, token, size))
    if keep is not None:
        return Found("", *scan_search(store, query, keep, token, size))
    return Found("", store.list(TaskQuery(**query, page_size=size, page_token=token)))


def _both(first: Keep, second: Keep | None) -> Keep:
    """``first``, and ``second`` too when there is one."""
    if second is None:
        return first
    return lambda task: first(task) and second(task)


def scan_search(
    store: TaskStore, query: dict[str, Any], match: Keep, token: str | None, size: int
) -> tuple[TaskPage, int, bool]:
    """One page of the tasks ``match`` keeps: reads the tasks that pass ``query``,
    newest first from ``token``, until a page of matches is found or
    :data:`SEARCH_SCAN_LIMIT` tasks were read. Returns the page (its token goes on
    where this read stopped), how many tasks were read, and whether the limit cut it."""
    matches: list[Task] = []
    scanned = 0
    for task in list_all(store, TaskQuery(**query, page_size=MAX_PAGE_SIZE, page_token=token)):
        if match(task):
            if len(matches) == size:  # one more: the next page starts after the last shown
                last = matches[-1]
                return TaskPage(matches, encode_cursor(task_updated(last), last["id"])), scanned, False
            matches.append(task)
        scanned += 1
        if scanned >= SEARCH_SCAN_LIMIT:
            return TaskPage(matches, encode_cursor(task_updated(task), task["id"])), scanned, True
    return TaskPage(matches, ""), scanned, False

"""Store parametrization with the cheapest database marks that work: a test on the
memory or file store needs no real transactions, and one on an ORM store flushes only
the database it uses (the shared ``ALL_DATABASES`` mark flushes them all, which costs
about a second per test)."""

from __future__ import annotations

import pytest

from tests.conftest import STORE_KINDS

_DATABASE = {"orm-sqlite": "default", "orm-postgres": "postgres"}


def store_params(*, transaction: bool = True, kinds: list[str] | None = None) -> list:
    """``pytest.param`` per store kind; ``transaction``: ORM stores in real transactions
    (for tests whose worker threads or subprocesses must see committed rows)."""
    params = []
    for kind in kinds or STORE_KINDS:
        if kind in _DATABASE:
            mark = pytest.mark.django_db(transaction=transaction, databases=[_DATABASE[kind]])
        else:
            mark = pytest.mark.django_db
        params.append(pytest.param(kind, marks=mark))
    return params

"""What the servers a test started printed, added to the test's report when it fails.

A test that sees ``-32603`` from a server cannot say why: the traceback is in the
server's output. Every process :func:`tests.server.running_process` starts writes its
output to a file (its ``log``, or a temporary one); while it runs it is registered here,
and when it stops during a test its last lines are kept until the next test begins.
As a pytest plugin (``tests/conftest.py`` loads it) it adds them to a failed test's
report, one section per server. (PYTEST_DONT_REWRITE: it has no asserts, and
``tests.server`` imports it before pytest loads it as a plugin.)
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

#: Lines of a server's output shown in a failed test's report.
TAIL_LINES = 80

_ids = itertools.count()
_running: dict[int, tuple[str, Path]] = {}
_stopped: list[tuple[str, str]] = []


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path`` ("" when it cannot be read), read from its
    last 64 KiB only: a load test's server may have written megabytes."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
            last = f.read().splitlines(keepends=True)[-lines:]
    except OSError:
        return ""
    return b"".join(last).decode("utf-8", "replace")


def started(name: str, path: Path) -> int:
    """Register a server writing to ``path``; the key :func:`stopped` takes."""
    key = next(_ids)
    _running[key] = (name, path)
    return key


def stopped(key: int) -> None:
    """The server ``key`` stopped: keep its last lines for the running test's report."""
    found = _running.pop(key, None)
    if found is not None:
        _stopped.append((found[0], tail(found[1])))


def begin_test() -> None:
    """A test begins: the servers stopped before it say nothing about it."""
    _stopped.clear()


def sections() -> list[tuple[str, str]]:
    """(title, last lines) of each server running now or stopped during this test."""
    found = [(name, tail(path)) for name, path in _running.values()] + _stopped
    return [(f"server output: {name}", text) for name, text in found if text]


def pytest_runtest_setup(item: pytest.Item) -> None:
    begin_test()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failed test's report shows what its servers printed."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and report.when in ("setup", "call"):
        report.sections.extend(sections())

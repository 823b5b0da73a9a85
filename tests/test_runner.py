"""Background fulfilment on every store: transitions, failures, cancellation, the
bounded pool and an honest shutdown."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from a2a.handlers import handler_instance
from a2a.protocol.errors import TaskNotCancelableError, UnsupportedOperationError
from a2a.protocol.model import CancelParams, GetParams
from a2a.runtime import runner as runner_module
from a2a.runtime.pool import DaemonPool
from a2a.runtime.runner import SHUTDOWN_MESSAGE, Runner, get_runner
from a2a.service import operations
from a2a.testing.client import v03_message
from tests.conftest import ALL_DATABASES
from tests.helpers import send_direct, wait_for_state, wait_until

pytestmark = ALL_DATABASES

GATE = threading.Event()
RUNNING = {"now": 0, "max": 0}
RUNNING_LOCK = threading.Lock()


def gated_handler(request):
    """Waits for GATE (or cancellation), counting how many run at once."""
    with RUNNING_LOCK:
        RUNNING["now"] += 1
        RUNNING["max"] = max(RUNNING["max"], RUNNING["now"])
    try:
        while not GATE.wait(0.01):
            if request.cancelled.is_set():
                return "too late"
        return f"done: {request.text}"
    finally:
        with RUNNING_LOCK:
            RUNNING["now"] -= 1


async def async_gated_handler(request):
    while not GATE.is_set():
        await asyncio.sleep(0.01)
    return [{"kind": "data", "data": {"echo": request.text}}]


def failing_handler(request):
    raise RuntimeError(f"cannot do {request.text!r}")


def bad_result_handler(request):
    return 42


ASYNC_CANCELLED = threading.Event()
ASYNC_STARTED = threading.Event()


async def cancellable_handler(request):
    ASYNC_STARTED.set()
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        ASYNC_CANCELLED.set()
        raise


@pytest.fixture(autouse=True)
def _reset():
    GATE.clear()
    ASYNC_CANCELLED.clear()
    RUNNING.update(now=0, max=0)
    yield
    GATE.set()


def test_blocking_send_runs_submitted_working_completed(use_store):
    task = send_direct("hello", blocking=True)
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: hello"}]
    assert use_store.get(task["id"]) == task  # the answer is what the store holds
    assert task["history"][0]["parts"][0]["text"] == "hello"


def test_non_blocking_send_returns_submitted_and_completes_in_background(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.gated_handler"
    task = send_direct("later", blocking=False)
    assert task["status"]["state"] == "submitted"
    assert wait_for_state(use_store, task["id"], {"working"})["status"]["state"] == "working"
    GATE.set()
    done = wait_for_state(use_store, task["id"], {"completed"})
    assert done["artifacts"][0]["parts"][0]["text"] == "done: later"


def test_context_id_is_generated_or_kept(use_store):
    assert send_direct("a", blocking=True)["contextId"]
    assert send_direct("b", blocking=True, contextId="ctx-1")["contextId"] == "ctx-1"


def test_async_handler_with_data_parts(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.async_gated_handler"
    GATE.set()
    task = send_direct("x", blocking=True)
    assert task["artifacts"][0]["parts"] == [{"kind": "data", "data": {"echo": "x"}}]


def test_handler_exception_fails_the_task_not_the_server(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.failing_handler"
    task = send_direct("boom", blocking=True)
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["role"] == "agent"
    assert task["status"]["message"]["parts"][0]["text"] == "The agent failed: RuntimeError"
    settings.A2A_HANDLER = "a2a.handlers.echo"
    assert send_direct("still alive", blocking=True)["status"]["state"] == "completed"


def test_handler_returning_nonsense_fails_with_a_reason(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.bad_result_handler"
    task = send_direct("x", blocking=True)
    assert task["status"]["state"] == "failed"
    assert "expected text, parts or artifacts" in task["status"]["message"]["parts"][0]["text"]


def test_cancel_beats_completion_and_stays_canceled(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.gated_handler"
    task = send_direct("slow", blocking=False)
    wait_for_state(use_store, task["id"], {"working"})
    canceled = asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    assert canceled["status"]["state"] == "canceled"
    GATE.set()  # the handler finishing now must not flip the terminal state
    time.sleep(0.2)
    assert use_store.get(task["id"])["status"]["state"] == "canceled"
    with pytest.raises(TaskNotCancelableError):
        asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))


def test_cancel_stops_an_async_handler(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.cancellable_handler"
    ASYNC_STARTED.clear()
    task = send_direct("forever", blocking=False)
    assert ASYNC_STARTED.wait(5)  # running (not merely saved "working")
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    assert ASYNC_CANCELLED.wait(5)
    assert use_store.get(task["id"])["status"]["state"] == "canceled"


def test_a_cancel_before_the_handler_starts_stops_it(use_store, settings, monkeypatch):
    """The task is saved working, then canceled while its handler is still being loaded:
    the handler never starts (it used to start and run on, uncancelled)."""
    settings.A2A_HANDLER = "tests.test_runner.cancellable_handler"
    canceled = threading.Event()

    def load_after_the_cancel(path):
        assert canceled.wait(5)
        return handler_instance(path)

    monkeypatch.setattr(runner_module, "loaded_handler", lambda path: None)
    monkeypatch.setattr(runner_module, "handler_instance", load_after_the_cancel)
    ASYNC_STARTED.clear()
    task = send_direct("forever", blocking=False)
    wait_for_state(use_store, task["id"], {"working"})
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    canceled.set()
    wait_until(lambda: not get_runner().active, timeout=5, what="the runner to let the task go")
    assert not ASYNC_STARTED.is_set()
    assert use_store.get(task["id"])["status"]["state"] == "canceled"


def test_completed_task_cannot_be_canceled_or_continued(use_store):
    task = send_direct("x", blocking=True)
    with pytest.raises(TaskNotCancelableError):
        asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    with pytest.raises(UnsupportedOperationError):
        send_direct("more", taskId=task["id"], blocking=False)
    assert asyncio.run(operations.get_task(GetParams(id=task["id"])))["status"]["state"] == "completed"


def _submitted(runner: Runner, store, count: int) -> list[dict]:
    """``count`` new tasks created in ``store`` and submitted to ``runner``."""
    from a2a.core import lifecycle
    from a2a.protocol.model import new_task

    tasks = [new_task(v03_message(f"t{i}"), context_id="c") for i in range(count)]
    for t in tasks:
        asyncio.run(lifecycle.create(store, t))
        runner.submit(t["id"])
    return tasks


def test_the_pool_is_bounded(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.gated_handler"
    runner = Runner(2)
    try:
        tasks = _submitted(runner, use_store, 5)
        wait_for_state(use_store, tasks[0]["id"], {"working"})
        time.sleep(0.2)
        states = sorted(use_store.get(t["id"])["status"]["state"] for t in tasks)
        assert states == ["submitted", "submitted", "submitted", "working", "working"]
        GATE.set()
        for t in tasks:
            wait_for_state(use_store, t["id"], {"completed"})
        assert RUNNING["max"] == 2
    finally:
        runner.shutdown(grace=1)


@pytest.mark.parametrize("store_kind", ["memory", "file"])  # threads, not the store, are counted
def test_the_default_runs_32_sync_handlers_at_once(use_store, settings):
    """``A2A_WORKERS``'s default: 32 tasks run at once (8 did, which left a model-backed
    agent's ninth conversation waiting for a whole model call); the 33rd waits, submitted."""
    from a2a.conf import a2a_settings

    settings.A2A_HANDLER = "tests.test_runner.gated_handler"
    runner = Runner(a2a_settings.WORKERS)  # as get_runner() builds it
    try:
        tasks = _submitted(runner, use_store, 33)
        wait_until(lambda: RUNNING["now"] == 32, timeout=20, what="32 handlers running at once")
        time.sleep(0.2)
        states = [use_store.get(t["id"])["status"]["state"] for t in tasks]
        assert sorted(set(states)) == ["submitted", "working"] and states.count("working") == 32
        GATE.set()
        for t in tasks:
            wait_for_state(use_store, t["id"], {"completed"})
        assert RUNNING["max"] == 32
    finally:
        runner.shutdown(grace=1)


def test_shutdown_fails_unfinished_tasks_honestly(use_store, settings):
    settings.A2A_HANDLER = "tests.test_runner.async_gated_handler"
    runner = Runner(1)
    tasks = _submitted(runner, use_store, 3)
    wait_for_state(use_store, tasks[0]["id"], {"working"})
    runner.shutdown(grace=0.2)
    for t in tasks:  # the running one and the two still queued
        settled = use_store.get(t["id"])
        assert settled["status"]["state"] == "failed"
        assert settled["status"]["message"]["parts"][0]["text"] == SHUTDOWN_MESSAGE


def _record_saves(
    monkeypatch, states: tuple[str, ...] = ("completed", "failed"), fail_first: str | None = None
) -> list[tuple[str, str]]:
    """(thread name, state) of every save that moves a task into one of ``states`` (a
    lease renewal moves nothing); optionally the first save into ``fail_first`` made on a
    handler thread raises as an unreachable store would."""
    from a2a.core import lifecycle
    from stores.base import StoreUnavailable

    saves: list[tuple[str, str]] = []
    real = lifecycle.transition_sync

    def recording(store, task_id, change, *args, **kwargs):
        def watched(task):
            before = task["status"]["state"]  # before the change (which may edit the task in place)
            new = change(task)
            if new is None or new["status"]["state"] == before or new["status"]["state"] not in states:
                return new
            name, state = threading.current_thread().name, new["status"]["state"]
            on_handler_thread = name.startswith("a2a-handler")
            first = not any(s == state and n.startswith("a2a-handler") for n, s in saves)
            saves.append((name, state))
            if state == fail_first and on_handler_thread and first:
                raise StoreUnavailable("the database is restarting")
            return new

        return real(store, task_id, watched, *args, **kwargs)

    monkeypatch.setattr(lifecycle, "transition_sync", recording)
    return saves


def test_a_sync_handlers_outcome_is_saved_on_its_own_thread(use_store, monkeypatch):
    # A blocking store's save would cost the loop a second thread hop: the handler's
    # thread saves it before letting go (a non-blocking store is saved on the loop).
    saves = _record_saves(monkeypatch)
    task = send_direct("hello", blocking=True)
    assert task["status"]["state"] == "completed"
    assert use_store.get(task["id"])["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    [(thread, state)] = saves
    assert state == "completed"
    assert thread.startswith("a2a-handler") == (not use_store.nonblocking)


def test_an_outcome_the_handlers_thread_could_not_save_is_saved_by_the_loop(use_store, monkeypatch):
    saves = _record_saves(monkeypatch, fail_first="completed")
    task = send_direct("again", blocking=True)
    assert task["status"]["state"] == "completed"
    assert use_store.get(task["id"])["artifacts"][0]["parts"][0]["text"] == "echo: again"
    if use_store.nonblocking:  # saved on the loop, once
        assert [state for _, state in saves] == ["completed"]
        return
    assert [state for _, state in saves] == ["completed", "completed"]
    assert saves[0][0].startswith("a2a-handler") and not saves[1][0].startswith("a2a-handler")


async def async_text_handler(request):
    return f"text: {request.text}"


async def async_file_handler(request):
    return [{"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGVsbG8="}}]


@pytest.mark.parametrize(("handler", "on_the_loop"), [("async_text_handler", True), ("async_file_handler", False)])
def test_a_text_outcome_is_made_on_the_loop_and_file_content_off_it(
    use_store, settings, monkeypatch, handler, on_the_loop
):
    # Text has no file part to write to the storage: no thread hop for its change. A
    # file part's content may be written to the storage (blocking I/O): on a thread.
    settings.A2A_HANDLER = f"tests.test_runner.{handler}"
    threads = []
    real = runner_module.result_change

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner_module, "result_change", recording)
    task = send_direct("hi", blocking=True)
    assert task["status"]["state"] == "completed" and task["artifacts"], task
    assert [name.startswith("a2a-runner") for name in threads] == [on_the_loop]


SYNC_CALLS: list[str] = []


def counted_sync_handler(request):
    SYNC_CALLS.append(request.task_id)
    return f"sync: {request.text}"


def test_a_sync_handler_on_a_blocking_store_is_started_on_its_own_thread(use_store, settings, monkeypatch):
    # Its working save, the handler and its outcome's save: one job on one pool thread
    # (the working save was a thread hop of its own before); on a non-blocking store the
    # working save is made on the runner's loop.
    settings.A2A_HANDLER = "tests.test_runner.counted_sync_handler"
    handler_instance(settings.A2A_HANDLER)  # loaded: a handler loaded on first use starts the old way
    SYNC_CALLS.clear()
    saves = _record_saves(monkeypatch, ("working", "completed", "failed"))
    task = send_direct("one hop", blocking=True)
    assert task["status"]["state"] == "completed" and [task["id"]] == SYNC_CALLS
    assert [state for _, state in saves] == ["working", "completed"]
    [thread] = {name for name, _ in saves}  # the same thread for both
    assert thread.startswith("a2a-runner" if use_store.nonblocking else "a2a-handler")


def test_a_working_save_that_failed_on_the_handlers_thread_is_tried_again_on_the_loop(use_store, settings, monkeypatch):
    settings.A2A_HANDLER = "tests.test_runner.counted_sync_handler"
    handler_instance(settings.A2A_HANDLER)
    SYNC_CALLS.clear()
    saves = _record_saves(monkeypatch, ("working", "completed", "failed"), fail_first="working")
    task = send_direct("after an outage", blocking=True)
    assert task["status"]["state"] == "completed"
    assert use_store.get(task["id"])["artifacts"][0]["parts"][0]["text"] == "sync: after an outage"
    assert [task["id"]] == SYNC_CALLS  # the handler ran once
    if use_store.nonblocking:
        return
    assert [state for _, state in saves][:2] == ["working", "working"]
    assert saves[0][0].startswith("a2a-handler") and not saves[1][0].startswith("a2a-handler")


def test_a_cancel_between_the_working_save_and_the_handler_on_its_thread_stops_it(use_store, settings, monkeypatch):
    from a2a.runtime import handler_thread

    settings.A2A_HANDLER = "tests.test_runner.counted_sync_handler"
    handler_instance(settings.A2A_HANDLER)
    SYNC_CALLS.clear()
    canceled = threading.Event()
    real = handler_thread.HandlerRequest.for_task

    def after_the_cancel(*args, **kwargs):
        assert canceled.wait(5)
        return real(*args, **kwargs)

    monkeypatch.setattr(handler_thread.HandlerRequest, "for_task", after_the_cancel)
    task = send_direct("never", blocking=False)
    wait_for_state(use_store, task["id"], {"working"})
    asyncio.run(operations.cancel_task(CancelParams(id=task["id"])))
    canceled.set()
    wait_until(lambda: not get_runner().active, timeout=5, what="the runner to let the task go")
    assert not SYNC_CALLS
    assert use_store.get(task["id"])["status"]["state"] == "canceled"


def test_the_sync_handlers_pool_has_daemon_threads_and_cancels_what_waits():
    """A stop never waits for a sync handler's thread (see a2a.runtime.pool)."""
    pool = DaemonPool(1, "test-pool")
    gate = threading.Event()
    first = pool.submit(gate.wait, 30)
    waiting = pool.submit(lambda: "never")
    failing_pool = DaemonPool(2, "test-pool-2")
    assert failing_pool.submit(int, "x").exception(10).__class__ is ValueError
    failing_pool.shutdown()
    assert all(t.daemon for t in threading.enumerate() if t.name.startswith("test-pool_"))
    pool.shutdown(wait=False, cancel_futures=True)
    assert waiting.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    gate.set()
    assert first.result(10) is True

"""The synchronous client: :class:`Client`, on ``httpx.Client``."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from typing import Any, Unpack

import httpx

from a2a.client import core
from a2a.client.bindings import Binding
from a2a.client.core import ClientCore, Effect, Outgoing, Plan, SendOptions, Steps, T
from a2a.protocol.model import Message, StreamItem, Task
from stores.base import TaskPage


class Client(ClientCore):
    """An A2A client for one remote agent (sync; :class:`~a2a.client.AsyncClient` is the
    same with ``await``).

    ``agent`` is the card's URL (or the agent's base URL: its well-known card is read),
    the card itself (a dict), or an :class:`~a2a.client.Interface` to speak without a
    card. The card is fetched on first use. ``http`` is an ``httpx.Client`` to send with
    (kept open: the caller owns it), ``transport`` an httpx transport for a client of
    our own (``httpx.MockTransport``, ``httpx.WSGITransport``...). The other options are
    :class:`~a2a.client.base.BaseClient`'s: ``auth`` (:mod:`a2a.client.auth`),
    ``headers``, ``timeout`` (seconds, each request), ``stream_timeout`` (seconds without
    a byte on a stream; None: wait), ``retry`` (:class:`~a2a.client.retry.RetryPolicy`),
    ``binding`` / ``version`` (only these), ``verify_signature`` with ``signature_keys``.

    Results are canonical (:mod:`a2a.protocol.model`), whatever the agent's version.
    """

    http_class = httpx.Client
    lock_class = threading.Lock
    http: httpx.Client

    def close(self) -> None:
        """Close the connections (of a client this one made)."""
        if self.owns_http:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the card and the wire -------------------------------------------------------------

    def fetch_card(self) -> dict[str, Any]:
        """Fetch (again) the agent's card, check it, pick its interface; the card."""
        return self._call(self._fetch_card())

    def connect(self) -> Binding:
        """The binding spoken, the card fetched first if need be."""
        return self._call(self._connect())

    def _call(self, plan: Plan[T]) -> T:
        """The result of ``plan`` (one that emits nothing), run here."""
        steps = self._steps(plan)
        while True:
            try:
                next(steps)
            except StopIteration as stop:
                return stop.value

    def _steps(self, plan: Plan[T]) -> Generator[StreamItem, None, T]:
        """Run ``plan`` (:mod:`a2a.client.core`): its I/O done here, blocking; the items it
        emits yielded; the streams it opened closed at the end."""
        with Steps(plan) as steps:
            for effect in steps:
                if isinstance(effect, core.Emit):
                    yield effect.item
                    continue
                with steps.outcome():
                    steps.value = self._do(effect, steps.opened)
        return steps.result

    def _do(self, effect: Effect, opened: dict[httpx.Response, Iterator[str]]) -> Any:
        if isinstance(effect, core.Send):
            response = self.http.send(effect.request, stream=effect.stream, **effect.options)
            if effect.stream:
                opened[response] = response.iter_lines()
            return response
        if isinstance(effect, core.NextLine):
            return next(opened[effect.response], None)
        if isinstance(effect, core.Read):
            return effect.response.read()
        if isinstance(effect, core.Discard):
            return effect.response.close()
        if isinstance(effect, core.Sleep):
            return time.sleep(effect.seconds)
        assert isinstance(effect, core.Locked), effect
        with self.lock:
            return self._call(effect.plan)

    # --- the operations --------------------------------------------------------------------

    def send(self, message: Outgoing, *, blocking: bool = True, **options: Unpack[SendOptions]) -> Task | Message:
        """SendMessage: the task (settled, unless ``blocking=False``) or the agent's message.
        ``config``: ``history_length``, ``accepted_output_modes``, ``push_config``, ``metadata``."""
        return self._call(self._sending("send", message, options, blocking=blocking))

    def stream(self, message: Outgoing, **options: Unpack[SendOptions]) -> Iterator[StreamItem]:
        """SendStreamingMessage: the task, then each status and artifact update, as
        :class:`~a2a.protocol.model.StreamItem` (close the iterator to stop listening)."""
        return self._steps(self._sending("stream", message, options))

    def get_task(
        self, task_id: str, *, history_length: int | None = None, current_generation: int | None = None
    ) -> Task:
        """GetTask; with ``current_generation`` (a 1.1 agent), a long-poll: the agent
        answers once the task is past that generation, or after its own timeout."""
        return self._call(
            self._run("get", task_id, history_length=history_length, current_generation=current_generation)
        )

    def poll(self, task: Task, *, interval: float = 0.5) -> Task:
        """``task`` as it is next: when the agent numbers its tasks (1.1), one long-poll
        GetTask past ``task``'s generation (the agent holds it until the task moves);
        otherwise GetTask after ``interval`` seconds."""
        return self._call(self._poll(task, interval))

    def list_tasks(self, **query: Any) -> TaskPage:
        """ListTasks: ``context_id``, ``state``, ``page_size``, ``page_token``,
        ``history_length``, ``include_artifacts``, ``updated_after`` (ISO 8601)."""
        return self._call(self._run("list", **query))

    def cancel_task(self, task_id: str, *, metadata: dict[str, Any] | None = None) -> Task:
        """CancelTask: the task as the agent has it after the request."""
        return self._call(self._run("cancel", task_id, metadata=metadata))

    def subscribe(self, task_id: str) -> Iterator[StreamItem]:
        """SubscribeToTask: the task, then its updates until it ends."""
        return self._steps(self._events("subscribe", task_id))

    def set_push_config(self, task_id: str, url: str, **config: Any) -> dict[str, Any]:
        """CreateTaskPushNotificationConfig: ``id``, ``token``, ``authentication``
        (``{"schemes": [...], "credentials"?}``); the config as saved."""
        return self._call(self._run("push_set", task_id, {"url": url, **config}))

    def get_push_config(self, task_id: str, config_id: str) -> dict[str, Any]:
        """GetTaskPushNotificationConfig."""
        return self._call(self._run("push_get", task_id, config_id))

    def list_push_configs(self, task_id: str) -> list[dict[str, Any]]:
        """ListTaskPushNotificationConfigs."""
        return self._call(self._run("push_list", task_id))

    def delete_push_config(self, task_id: str, config_id: str) -> None:
        """DeleteTaskPushNotificationConfig."""
        self._call(self._run("push_delete", task_id, config_id))

    def extended_card(self) -> dict[str, Any]:
        """GetExtendedAgentCard (the agent's card for authenticated callers)."""
        return self._call(self._run("extended_card"))

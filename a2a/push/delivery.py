"""Push delivery: every saved task version, POSTed to the webhooks its configs name.

:func:`on_task_saved` listens on the event bus (registered by the app's
``ready()``) and hands every saved task version to one background delivery loop (a daemon
thread with its own event loop and one shared ``httpx.AsyncClient``); it never blocks
or raises into the publisher. A version the push-config store says no config can want
(``has_configs``, when ``cheap_has_configs``: every built-in store) is not handed off.
Per (task, config) it sends the versions in the order they were saved, one request in
flight at a time; a failed request (connection error, timeout, 5xx, 429) is retried
``A2A_PUSH_MAX_ATTEMPTS`` times in all, after ``A2A_PUSH_RETRY_DELAY`` seconds doubled
each time, then given up with a warning. Each attempt first resolves and checks the
webhook's host (:mod:`a2a.push.guard`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from a2a.agents import store_of
from a2a.conf import a2a_settings
from a2a.core import retry, tracing
from a2a.core.events import bus
from a2a.core.loop import LoopThread
from a2a.protocol import DIALECTS, V03, V1_VERSIONS
from a2a.push import tokens
from a2a.push.guard import UnsafeURLError, resolve
from stores.base import Task
from stores.push_configs import PushConfig, PushConfigStore
from stores.scope import task_agent

logger = logging.getLogger(__name__)

#: Queued versions per (task, config) beyond which the oldest undelivered one is dropped.
MAX_QUEUED = 100
#: Longest wait between two attempts of one delivery, whatever the backoff says.
MAX_RETRY_DELAY = 300.0
USER_AGENT = "django-a2a-agent push notifications"
#: What a failed delivery retries: the webhook could not be reached in time, or its
#: answer says it did not take the notification (429, any 5xx); a repeat is harmless.
RETRIED_ERRORS = (OSError, UnicodeError, TimeoutError, httpx.TransportError)
RETRIED_STATUSES = frozenset({429, *range(500, 600)})


def policy() -> retry.RetryPolicy:
    """The delivery's retries: ``A2A_PUSH_MAX_ATTEMPTS`` in all, ``A2A_PUSH_RETRY_DELAY``
    seconds doubled each time, a ``Retry-After`` honoured up to :data:`MAX_RETRY_DELAY`."""
    return retry.RetryPolicy.repeatable(
        attempts=max(1, a2a_settings.PUSH_MAX_ATTEMPTS),
        backoff=a2a_settings.PUSH_RETRY_DELAY,
        cap=MAX_RETRY_DELAY,
        statuses=RETRIED_STATUSES,
        errors=RETRIED_ERRORS,
    )


def _problem(cause: BaseException | httpx.Response | None) -> str:
    if isinstance(cause, httpx.Response):
        return f"HTTP {cause.status_code}"
    return f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__


def payload(config: PushConfig, task: Task) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST that tells ``config``'s webhook about ``task``, in
    the dialect the config was created in (a 1.1 config's Task carries its ``generation``)."""
    dialect = DIALECTS.get(config.get("dialect") or "", V03)
    if dialect.version in V1_VERSIONS:
        body: Any = {"task": dialect.render_task(task)}
        content_type = "application/a2a+json"
    else:
        body = V03.render_task(task)
        content_type = "application/json"
    headers = {"Content-Type": content_type, "User-Agent": USER_AGENT}
    if config.get("token"):
        headers["X-A2A-Notification-Token"] = config["token"]
    if own := tokens.authorization(config):
        headers["Authorization"] = own
    return orjson.dumps(body), headers


@dataclass
class _Incoming:
    store: PushConfigStore
    versions: collections.deque[Task] = field(default_factory=collections.deque)


class _Delivery:
    """This process's webhook delivery: a loop thread (:class:`a2a.core.loop.LoopThread`)."""

    def __init__(self) -> None:
        self._thread = LoopThread("a2a-push", at_exit=self.shutdown)
        self._client: Any = None
        self._jobs: set[asyncio.Task[None]] = set()
        # task id -> versions waiting for their configs to be looked up
        self._incoming: dict[str, _Incoming] = {}
        # (task id, config id) -> (config, version) waiting to be sent, and their sender
        self._outgoing: dict[tuple[str, str], collections.deque[tuple[PushConfig, Task]]] = {}
        self._senders: dict[tuple[str, str], asyncio.Task[None]] = {}

    # Any thread ------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Something was handed to delivery since it last stopped."""
        return self._thread.loop is not None

    def notify(self, task: Task, store: PushConfigStore) -> None:
        """Queue a saved task version; returns at once."""
        self._thread.start()
        self._thread.call_soon(self._accept, task, store)

    def forget(self, task_id: str, config_id: str) -> None:
        """Drop what is queued or in flight for a deleted config."""
        self._thread.call_soon(self._forget, (task_id, config_id))

    def shutdown(self, grace: float | None = None) -> None:
        """Give queued deliveries ``grace`` seconds, then drop the rest and stop."""
        if grace is None:
            grace = min(a2a_settings.SHUTDOWN_GRACE, a2a_settings.PUSH_TIMEOUT)
        self._thread.stop(lambda: self._drain(grace), timeout=grace + 15)

    # The delivery loop --------------------------------------------------------------------

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        job = asyncio.ensure_future(coro)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return job

    def _accept(self, task: Task, store: PushConfigStore) -> None:
        incoming = self._incoming.get(task["id"])
        if incoming is None or incoming.store is not store:  # (another store: TASK_STORE was swapped)
            incoming = self._incoming[task["id"]] = _Incoming(store)
            self._spawn(self._route(task["id"], incoming))
        incoming.versions.append(task)

    async def _route(self, task_id: str, incoming: _Incoming) -> None:
        """Look up the task's configs (once per batch of versions) and queue each version for each."""
        try:
            while incoming.versions:
                try:
                    configs = await incoming.store.alist_push_configs(task_id)
                except Exception:
                    logger.exception("could not read the push notification configs of task %s", task_id)
                    configs = []
                while incoming.versions:
                    task = incoming.versions.popleft()
                    for config in configs:
                        self._queue(config, task)
        finally:
            if self._incoming.get(task_id) is incoming:
                del self._incoming[task_id]

    def _queue(self, config: PushConfig, task: Task) -> None:
        key = (config["taskId"], config["id"])
        queue = self._outgoing.get(key)
        if queue is None:
            queue = self._outgoing[key] = collections.deque()
            self._senders[key] = self._spawn(self._send_all(key, queue))
        elif queue and queue[-1][1] == task:
            return  # the same version twice: tell the webhook once
        if len(queue) >= MAX_QUEUED:
            _, dropped = queue.popleft()
            logger.warning(
                "push notifications for task %s to %s are backing up; dropped the %s version",
                key[0],
                config["url"],
                dropped.get("status", {}).get("state"),
            )
        queue.append((config, task))

    def _forget(self, key: tuple[str, str]) -> None:
        queue = self._outgoing.pop(key, None)
        if queue is not None:
            queue.clear()
        sender = self._senders.pop(key, None)
        if sender is not None:
            sender.cancel()

    async def _send_all(self, key: tuple[str, str], queue: collections.deque[tuple[PushConfig, Task]]) -> None:
        try:
            while queue:
                config, task = queue.popleft()
                try:
                    await self._deliver(config, task)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("push notification for task %s to %s failed", key[0], config.get("url"))
        finally:
            if self._outgoing.get(key) is queue:
                del self._outgoing[key]
                self._senders.pop(key, None)

    def _http(self) -> Any:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return self._client

    async def _post(self, url: str, task: Task, body: bytes, headers: dict[str, str]) -> httpx.Response:
        """POST ``body`` to the webhook once (its address resolved and checked first): the
        answer, its body unread."""
        target = await resolve(url)
        timeout = a2a_settings.PUSH_TIMEOUT
        with tracing.push(task, url):
            request_headers = {**headers, "Host": target.host_header}
            tracing.inject(request_headers)  # the webhook's receiver may join the trace
            async with asyncio.timeout(timeout):
                async with self._http().stream(
                    "POST",
                    target.url,
                    content=body,
                    headers=request_headers,
                    extensions={"sni_hostname": target.sni_hostname} if target.sni_hostname else {},
                    timeout=timeout,
                ) as response:
                    return response

    async def _deliver(self, config: PushConfig, task: Task) -> None:
        """POST one task version to one webhook, retried as :func:`policy` says; never
        raises for the webhook's faults."""
        url, task_id = config["url"], task["id"]
        state = task.get("status", {}).get("state")
        body, headers = payload(config, task)

        async def attempt() -> httpx.Response:
            token = tokens.issue(task_agent(task), task_id=task_id, audience=url, body=body)
            signed = {**headers, **tokens.token_headers(config, token)}  # a fresh JWT per attempt
            return await self._post(url, task, body, signed)

        def retrying(wait: retry.Sleep) -> None:
            logger.info(
                "push notification for task %s to %s failed (%s); retrying in %.2fs",
                task_id,
                url,
                _problem(wait.cause),
                wait.seconds,
            )

        rules = policy()
        try:
            response = await retry.arun(attempt, rules, on_retry=retrying)
        except UnsafeURLError as exc:
            logger.warning("push notification for task %s not sent: webhook %s %s", task_id, url, exc)
            return
        except RETRIED_ERRORS as exc:
            problem = _problem(exc)
        else:
            status = response.status_code
            if 200 <= status < 300:
                logger.debug("push notification for task %s (%s) delivered to %s", task_id, state, url)
                return
            if status not in rules.statuses:
                logger.warning(
                    "push notification for task %s (%s) refused by %s with HTTP %d; not retrying",
                    task_id,
                    state,
                    url,
                    status,
                )
                return
            problem = f"HTTP {status}"
        logger.warning(
            "push notification for task %s (%s) to %s given up after %d attempt(s): %s",
            task_id,
            state,
            url,
            rules.attempts,
            problem,
        )

    async def _drain(self, grace: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._jobs and loop.time() < deadline:  # routing spawns senders: wait again
            await asyncio.wait(set(self._jobs), timeout=max(0.0, deadline - loop.time()))
        pending = set(self._jobs)
        if pending:
            undelivered = sum(len(q) + 1 for q in self._outgoing.values())
            logger.warning("stopping with about %d push notification(s) undelivered", undelivered)
            for job in pending:
                job.cancel()
            await asyncio.wait(pending, timeout=5)
        self._incoming.clear()
        self._outgoing.clear()
        self._senders.clear()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
            self._client = None
        with contextlib.suppress(Exception):  # a lookup stuck in DNS must not hold the stop up
            await asyncio.wait_for(loop.shutdown_default_executor(), 5)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until everything queued so far is delivered or given up; False on timeout."""
        loop = self._thread.loop
        if loop is None:
            return True

        async def settle() -> None:
            while self._jobs:  # a router may spawn senders: wait again
                await asyncio.wait(set(self._jobs))

        try:
            asyncio.run_coroutine_threadsafe(settle(), loop).result(timeout)
        except TimeoutError:
            return False
        return True


_delivery = _Delivery()


def on_task_saved(task: Task) -> None:
    """The event-bus listener: hand a saved task version to the delivery thread.
    Returns at once; never raises."""
    if not a2a_settings.PUSH_NOTIFICATIONS:
        return
    try:
        store = store_of(task_agent(task)).push_configs  # the configs beside the task, in its agent's store
        if store.cheap_has_configs and not store.has_configs(task["id"]):
            return  # an in-memory lookup (or a stat) says nobody is listening: no hand-off at all
        _delivery.notify(orjson.loads(orjson.dumps(task)), store)  # a snapshot: the caller may change the dict
    except Exception:
        logger.exception("could not queue push notifications for task %r", task.get("id"))


def install() -> None:
    """Listen for saved task versions (called by the ``a2a`` app's ``ready()``)."""
    bus.add_listener(on_task_saved)


def wait_idle(timeout: float = 10.0) -> bool:
    """Block until every push notification queued so far is delivered or given up."""
    return _delivery.wait_idle(timeout)


def shutdown(grace: float | None = None) -> None:
    """Stop the delivery thread, giving queued deliveries ``grace`` seconds (default:
    the smaller of ``A2A_SHUTDOWN_GRACE`` and ``A2A_PUSH_TIMEOUT``). A later task
    update starts it again."""
    _delivery.shutdown(grace)


def forget(task_id: str, config_id: str) -> None:
    """Drop the deliveries queued or in flight for a deleted config."""
    _delivery.forget(task_id, config_id)

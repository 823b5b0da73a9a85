"""Push notifications: delivery of task updates to webhooks, and the SSRF guard.

The configs (created by :mod:`a2a.service.push_configs`) are dicts::

    {"taskId", "id", "url", "token"?, "authentication"?: {"schemes": [...], "credentials"?},
     "dialect": "0.3" | "1.0", "createdAt"}

``dialect`` is the protocol version the config was created in; its deliveries are
rendered in that version (spec 4.3.3): v1.0 POSTs a ``StreamResponse``
(``{"task": {...}}``, ``Content-Type: application/a2a+json``), v0.3 POSTs the Task.
Each delivery carries ``Authorization: <scheme> <credentials>`` when the config's
``authentication`` brings credentials (spec 4.3.3, the specification's pull request 1793)
and ``X-A2A-Notification-Token`` with the config's token (a v0.3 convention the v1.0 text
no longer names, kept for the receivers that read it); when the agent has a signing
key, each attempt also carries a JWT signed with it (:mod:`a2a.push.tokens`: the claims,
the agent's JWK Set, and :func:`verify_notification` for receivers). Configs live in the
push-config store of the task store (``TaskStore.push_configs``).

**Delivery**: :func:`on_task_saved` listens on the event bus (registered by the app's
``ready()``) and hands every saved task version to one background delivery loop (a daemon
thread with its own event loop and one shared ``httpx.AsyncClient``); it never blocks
or raises into the publisher. A version the push-config store says no config can want
(``has_configs``, when ``cheap_has_configs``: every built-in store) is not handed off.
Per (task, config) it sends the versions in the order they were saved, one request in
flight at a time; a failed request (connection error, timeout, 5xx, 429) is retried
``A2A_PUSH_MAX_ATTEMPTS`` times in all, after ``A2A_PUSH_RETRY_DELAY`` seconds doubled
each time, then given up with a warning.

**SSRF guard**: a webhook URL must be http(s), and its host must resolve only to
public addresses. When the config is created only what needs no DNS is checked: the
URL's form, and a host that is an address literal (in any form ``getaddrinfo`` reads:
``127.1``, ``2130706433``, ``[::ffff:7f00:1]``) or a ``localhost`` name; so creating a
config does not depend on DNS answering at that moment. Each delivery attempt resolves
the name and checks every address it answers; the request then goes to the address
that was checked (one lookup per attempt, the connection pinned to the first one), so
DNS rebinding reaches nothing. An IPv6 address that carries an IPv4 one (IPv4-mapped, -translated or
-compatible, NAT64, 6to4, Teredo, ISATAP) is judged by that IPv4 address too. Set
``A2A_PUSH_ALLOW_PRIVATE_URLS`` to allow loopback, private and link-local targets.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import logging
import re
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from a2a.agents import store_of
from a2a.conf import a2a_settings
from a2a.core import retry, tracing
from a2a.core.events import bus
from a2a.core.loop import LoopThread
from a2a.protocol import V03, V10
from a2a.protocol.errors import InvalidParamsError
from a2a.push import tokens
from a2a.push.tokens import NotificationVerificationError as NotificationVerificationError  # for receivers
from a2a.push.tokens import verify_notification as verify_notification
from stores.base import Task
from stores.push_configs import PushConfig, PushConfigStore

logger = logging.getLogger(__name__)

#: Queued versions per (task, config) beyond which the oldest undelivered one is dropped.
MAX_QUEUED = 100
#: Longest wait between two attempts of one delivery, whatever the backoff says.
MAX_RETRY_DELAY = 300.0
USER_AGENT = "django-a2a-agent push notifications"


class UnsafeURLError(ValueError):
    """A webhook URL this agent will not call."""


@dataclass(frozen=True)
class Target:
    """Where to send a request for a webhook URL: the checked address, pinned."""

    url: str  # the webhook URL with its host replaced by the checked address
    host_header: str
    sni_hostname: str | None


#: IPv6 ranges that carry an IPv4 address the packets end up at, and where it sits.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052 well-known prefix: the last 32 bits
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215 local-use: a private translator
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # RFC 2765 SIIT "IPv4-translated"
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # RFC 4291 deprecated "IPv4-compatible"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries (and by which mechanism): traffic to
    it may end up at them (a 6to4 relay, a NAT64 gateway, a Teredo or ISATAP tunnel)."""
    value = int(address)
    low = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    if address.ipv4_mapped is not None:
        found.append(("IPv4-mapped", address.ipv4_mapped))
    if address in _TRANSLATED:
        found.append(("IPv4-translated", low))
    if address in _COMPATIBLE and value > 1:
        found.append(("IPv4-compatible", low))
    if address in _NAT64:
        found.append(("NAT64", low))
    if address.sixtofour is not None:
        found.append(("6to4", address.sixtofour))
    if address.teredo is not None:
        server, client = address.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    if (value >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id (RFC 5214), u bit either way
        found.append(("ISATAP", low))
    return found


def _flag_refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why Python's classification says an address is not public, or None."""
    for label, flag in (
        ("loopback", address.is_loopback),
        ("unspecified", address.is_unspecified),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return label
    return None if address.is_global else "not public"


def _refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is not a public one, or None when it is. An IPv6 address that
    embeds an IPv4 one (IPv4-mapped, -translated or -compatible, NAT64, 6to4, Teredo,
    ISATAP) is refused when the embedded address is; a mapped, translated or well-known
    NAT64 one is then judged by its IPv4 address alone (that is where it goes)."""
    if isinstance(address, ipaddress.IPv4Address):
        return _flag_refusal(address)
    if address in _LOCAL_NAT64:
        return "local-use NAT64 (RFC 8215)"
    embedded = _embedded_ipv4(address)
    for label, ipv4 in embedded:
        reason = _flag_refusal(ipv4)
        if reason:
            return f"{reason} (as the {label} form of {ipv4})"
    if embedded and (address.ipv4_mapped is not None or address in _TRANSLATED or address in _NAT64):
        return None  # translated to its IPv4 address, which is public
    return _flag_refusal(address)


def _split(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsafeURLError("only http and https URLs are allowed")
    try:
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise UnsafeURLError(f"is not a valid URL ({exc})") from None
    if not host:
        raise UnsafeURLError("has no host")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def resolve(url: str) -> Target:
    """Resolve the webhook host and check every address it has (unless private URLs
    are allowed). UnsafeURLError for a URL to refuse; OSError when the name does not
    resolve (now)."""
    scheme, host, port = _split(url)
    infos = await asyncio.to_thread(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise OSError(f"{host} has no address")
    if not a2a_settings.PUSH_ALLOW_PRIVATE_URLS:
        for address in addresses:
            reason = _refusal(ipaddress.ip_address(address))
            if reason:
                raise UnsafeURLError(
                    f"resolves to {address}, a {reason} address; webhooks must be public "
                    f"(A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
                )
    parts = urlsplit(url)
    port_suffix = f":{parts.port}" if parts.port is not None else ""
    userinfo = parts.netloc.rpartition("@")[0]
    address = addresses[0]
    netloc = (f"[{address}]" if ":" in address else address) + port_suffix
    try:
        ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError as exc:
        raise UnsafeURLError(f"has a host name that cannot be encoded ({exc})") from None
    return Target(
        url=urlunsplit((scheme, f"{userinfo}@{netloc}" if userinfo else netloc, parts.path or "/", parts.query, "")),
        host_header=(f"[{ascii_host}]" if ":" in ascii_host else ascii_host) + port_suffix,
        sni_hostname=ascii_host if scheme == "https" else None,
    )


#: A host ``inet_aton`` (so ``getaddrinfo``) may read as an IPv4 address: ``127.1``,
#: ``0x7f.1``, ``0177.0.0.1``, ``2130706433``.
_IPV4_LIKE = re.compile(r"[0-9a-fA-FxX.]+")


def literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host written as an address literal stands for (in every form the
    resolver reads it), None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _IPV4_LIKE.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _is_localhost(host: str) -> bool:
    """``localhost`` and its subdomains, which resolve to loopback (RFC 6761 6.3)."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def check_form(url: str) -> None:
    """UnsafeURLError for a webhook URL refused without looking its host up: not
    http(s), no host, a host that cannot be encoded, or (unless private URLs are
    allowed) an address literal or ``localhost`` name that is not public. A name is
    resolved and checked when delivering (:func:`resolve`), never here."""
    _scheme, host, _port = _split(url)
    try:
        host.encode("idna")
    except UnicodeError as exc:
        raise UnsafeURLError(f"has a host name that cannot be encoded ({exc})") from None
    if a2a_settings.PUSH_ALLOW_PRIVATE_URLS:
        return
    address = literal_address(host)
    if address is None:
        if _is_localhost(host):
            raise UnsafeURLError(
                f"names {host}, a loopback address; webhooks must be public (A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
            )
        return
    reason = _refusal(address)
    if reason:
        raise UnsafeURLError(
            f"is {address}, a {reason} address; webhooks must be public (A2A_PUSH_ALLOW_PRIVATE_URLS allows others)"
        )


async def check_url(url: str) -> None:
    """InvalidParamsError (naming the URL) for a webhook URL this agent will not call,
    judged by its form and literal address (:func:`check_form`): no DNS lookup, so a
    config can be created whatever DNS answers now; delivery resolves and checks."""
    try:
        check_form(url)
    except UnsafeURLError as exc:
        raise InvalidParamsError(f"webhook URL {url!r} is refused: {exc}") from None


# --- delivery ------------------------------------------------------------------------------


def payload(config: PushConfig, task: Task) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST that tells ``config``'s webhook about ``task``."""
    if config.get("dialect") == "1.0":
        body: Any = {"task": V10.render_task(task)}
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
            import httpx

            self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        return self._client

    async def _post(self, url: str, task: Task, body: bytes, headers: dict[str, str]) -> tuple[int, float | None]:
        """POST ``body`` to the webhook once (its address resolved and checked first):
        the HTTP status and the Retry-After the answer asked for."""
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
                    return response.status_code, retry.retry_after(response.headers.get("retry-after"))

    async def _deliver(self, config: PushConfig, task: Task) -> None:
        """POST one task version to one webhook, with retries; never raises for the webhook's faults."""
        import httpx

        url, task_id = config["url"], task["id"]
        state = task.get("status", {}).get("state")
        body, headers = payload(config, task)
        attempts = max(1, a2a_settings.PUSH_MAX_ATTEMPTS)
        for attempt in range(1, attempts + 1):
            retry_after = None
            try:
                token = tokens.issue(task.get("_agent"), task_id=task_id, audience=url, body=body)
                signed = {**headers, **tokens.token_headers(config, token)}  # a fresh JWT per attempt
                status, retry_after = await self._post(url, task, body, signed)
            except UnsafeURLError as exc:
                logger.warning("push notification for task %s not sent: webhook %s %s", task_id, url, exc)
                return
            except (OSError, UnicodeError, TimeoutError, httpx.TransportError) as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if 200 <= status < 300:
                    logger.debug("push notification for task %s (%s) delivered to %s", task_id, state, url)
                    return
                if status != 429 and status < 500:
                    logger.warning(
                        "push notification for task %s (%s) refused by %s with HTTP %d; not retrying",
                        task_id,
                        state,
                        url,
                        status,
                    )
                    return
                problem = f"HTTP {status}"
            if attempt == attempts:
                logger.warning(
                    "push notification for task %s (%s) to %s given up after %d attempt(s): %s",
                    task_id,
                    state,
                    url,
                    attempts,
                    problem,
                )
                return
            delay = retry.backoff(attempt, base=a2a_settings.PUSH_RETRY_DELAY, cap=MAX_RETRY_DELAY)
            delay = min(max(delay, retry_after or 0.0), MAX_RETRY_DELAY)
            logger.info(
                "push notification for task %s to %s failed (%s); retrying in %.2fs", task_id, url, problem, delay
            )
            await asyncio.sleep(delay)

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
        store = store_of(task.get("_agent")).push_configs  # the configs beside the task, in its agent's store
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

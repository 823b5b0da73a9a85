"""The one retry policy and the one retry loop: how long to wait before trying again,
what ``Retry-After`` asks for, what is safe to send twice, and the loop that applies
them (:func:`retrying`, written once without I/O; :func:`arun` runs it for an async
function, the A2A client's sync and async drivers run it as part of their plans).

Each caller passes a :class:`RetryPolicy` that says what it retries:

- the A2A client: the rule below (``RetryPolicy()``, its ``attempts`` and
  ``retry_writes`` set by the caller);
- webhook delivery (:mod:`a2a.push.delivery`): connection errors, timeouts, HTTP 429 and
  every 5xx, ``A2A_PUSH_MAX_ATTEMPTS`` times, a long ``Retry-After`` cut short;
- the LLM handler (:mod:`a2a.handlers.llm`): connection errors, timeouts, HTTP 408, 429,
  500, 502, 503, 504 and 529, ``A2A_LLM_MAX_RETRIES`` more times, a long ``Retry-After``
  cut short.

:func:`backoff` alone also spaces the runner's saves of an outcome and the event
backends' reconnections, which are not HTTP requests.

Backoff: ``base * 2**(attempt - 1)`` seconds, at most ``cap``, less up to ``jitter`` of
it at random so that many callers failing together do not come back together.

``Retry-After`` (RFC 9110, section 10.2.3): delta-seconds or an HTTP date.

What is safe to retry (docs/client.md, "Retries"): a request is sent again only when that
cannot do twice what the caller asked once:

- a connection that could not be made (refused, DNS, connect timeout, no free
  connection in the pool): every request, since it never reached the server;
- HTTP 429 and 503 (the server, or a proxy, says it did not take the request; its
  ``Retry-After`` is honoured): every request;
- HTTP 502 and 504, a connection lost or a read timeout after the request went out:
  idempotent requests only (a read, or a write the server deduplicates), since the
  request may have been done.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

E = TypeVar("E")

#: Answers saying the request was not taken: safe to send again whatever it was.
NOT_TAKEN = frozenset({429, 503})
#: A gateway's answers: the request may have been done; send again only an idempotent one.
MAYBE_TAKEN = frozenset({502, 504})


def backoff(attempt: int, *, base: float, cap: float, jitter: float = 0.2) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1 for the first): ``base`` doubled
    per attempt, at most ``cap``, less up to ``jitter`` (a fraction) of it at random."""
    delay = min(base * 2 ** max(attempt - 1, 0), cap)
    return delay * (1 - jitter * random.random())  # jitter, not a secret


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """A ``Retry-After`` header's seconds from ``now`` (delta-seconds or an HTTP date; a
    date in the past is 0); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 else None  # also rejects nan
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def never_sent(exc: BaseException) -> bool:
    """Whether the request that raised ``exc`` never reached the server (no connection)."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)


def safe_to_resend(status: int, *, idempotent: bool) -> bool:
    """Whether a request answered with HTTP ``status`` may be sent again (see the module)."""
    return status in NOT_TAKEN or (idempotent and status in MAYBE_TAKEN)


@dataclass(frozen=True)
class RetryPolicy:
    """What a caller retries and how long it waits: ``attempts`` in all (1: no retries);
    delays of :func:`backoff` from ``backoff`` up to ``max_backoff`` seconds, or the
    server's ``Retry-After`` up to ``max_retry_after`` (a longer one is not waited for:
    the answer is used, or, with ``cap_retry_after``, waited for ``max_retry_after``).

    What is retried: ``statuses`` for any request; ``idempotent_statuses`` and an error of
    ``errors`` that may have reached the server (:func:`never_sent`) for an idempotent
    one only: a read, or a write when ``retry_writes`` (safe for an A2A send when the
    agent takes the message's ``messageId`` as the idempotency key, as the specification
    intends; a webhook's receiver or a model endpoint takes a repeat as harmless)."""

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    retry_writes: bool = False
    cap_retry_after: bool = False
    statuses: frozenset[int] = NOT_TAKEN
    idempotent_statuses: frozenset[int] = MAYBE_TAKEN
    errors: tuple[type[BaseException], ...] = (httpx.TransportError,)

    @classmethod
    def repeatable(
        cls,
        *,
        attempts: int,
        backoff: float,
        cap: float,
        statuses: frozenset[int],
        errors: tuple[type[BaseException], ...] = (httpx.TransportError,),
    ) -> RetryPolicy:
        """The policy of a request a repeat cannot harm (a webhook's notification, a
        model's completion): ``statuses`` and ``errors`` retried whatever was sent, waits
        and a ``Retry-After`` at most ``cap`` seconds."""
        return cls(
            attempts=attempts,
            backoff=backoff,
            max_backoff=cap,
            max_retry_after=cap,
            cap_retry_after=True,
            retry_writes=True,
            statuses=statuses,
            idempotent_statuses=frozenset(),
            errors=errors,
        )

    def after_error(self, exc: BaseException, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``exc``; None: raise it."""
        if attempt >= self.attempts or not isinstance(exc, self.errors):
            return None
        if never_sent(exc) or not write or self.retry_writes:
            return backoff(attempt, base=self.backoff, cap=self.max_backoff)
        return None

    def after_response(self, response: httpx.Response, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``response``; None: use it."""
        status = response.status_code
        idempotent = not write or self.retry_writes
        if attempt >= self.attempts or not (
            status in self.statuses or (idempotent and status in self.idempotent_statuses)
        ):
            return None
        after = retry_after(response.headers.get("Retry-After"))
        if after is None:
            return backoff(attempt, base=self.backoff, cap=self.max_backoff)
        if after <= self.max_retry_after:
            return after
        return self.max_retry_after if self.cap_retry_after else None


#: A policy that never retries.
NO_RETRIES = RetryPolicy(attempts=1)


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` before attempt ``attempt + 1``, which failed with ``cause`` (an
    exception, or the answer not used)."""

    seconds: float
    attempt: int = 0
    cause: BaseException | httpx.Response | None = None


@dataclass(frozen=True)
class Discard:
    """Close ``response``: an answer not used, since a retry follows."""

    response: httpx.Response


def retrying(
    policy: RetryPolicy, attempt: Callable[[], Generator[E, Any, httpx.Response]], *, write: bool
) -> Generator[E | Sleep | Discard, Any, httpx.Response]:
    """The one retry loop, without I/O: ``attempt()``'s plan (yielding the effects its
    driver performs) run again while ``policy`` says so, yielding :class:`Discard` and
    :class:`Sleep` in between. Returns the answer used (the last one, retryable or not,
    when the attempts are spent); raises the error not retried."""
    number = 0
    while True:
        number += 1
        try:
            response = yield from attempt()
        except Exception as exc:
            delay = policy.after_error(exc, number, write=write)
            if delay is None:
                raise
            yield Sleep(delay, number, exc)
            continue
        delay = policy.after_response(response, number, write=write)
        if delay is None:
            return response
        yield Discard(response)
        yield Sleep(delay, number, response)


@dataclass(frozen=True)
class _Call:
    """The driver's cue to make one attempt (:func:`arun`)."""


async def arun(
    attempt: Callable[[], Awaitable[httpx.Response]],
    policy: RetryPolicy,
    *,
    write: bool = True,
    on_retry: Callable[[Sleep], None] | None = None,
) -> httpx.Response:
    """:func:`retrying` for an async function: ``await attempt()`` as often as ``policy``
    says, ``on_retry`` told of each wait first (to log or count it). Returns the answer
    used; raises the error not retried."""

    def one() -> Generator[_Call, httpx.Response, httpx.Response]:
        return (yield _Call())

    plan = retrying(policy, one, write=write)
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as stop:
            return stop.value
        value = error = None
        if isinstance(effect, Sleep):
            if on_retry is not None:
                on_retry(effect)
            await asyncio.sleep(effect.seconds)
        elif isinstance(effect, Discard):
            await effect.response.aclose()
        else:
            try:
                value = await attempt()
            except Exception as exc:
                error = exc

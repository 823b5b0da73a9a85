"""The one retry policy: how long to wait before trying again, what ``Retry-After`` asks
for, and what is safe to send twice (sans I/O: every caller sleeps its own way).

Used by the A2A client (:class:`RetryPolicy`), the LLM handler, webhook delivery, the
runner's saves of an outcome and the event backends' reconnections.

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

import email.utils
import random
import time
from dataclasses import dataclass

import httpx

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
    """An HTTP client's retries: ``attempts`` in all (1: no retries); delays of
    :func:`backoff` from ``backoff`` up to ``max_backoff`` seconds, or the server's
    ``Retry-After`` up to ``max_retry_after`` (a longer one is not waited for: the error is
    raised). ``retry_writes=True`` treats writes as idempotent: safe for an A2A send when
    the agent takes the message's ``messageId`` (which a retry keeps) as the idempotency
    key, as the specification intends."""

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    retry_writes: bool = False

    def after_error(self, exc: httpx.TransportError, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``exc``; None: raise it."""
        if attempt >= self.attempts:
            return None
        if never_sent(exc) or not write or self.retry_writes:
            return backoff(attempt, base=self.backoff, cap=self.max_backoff)
        return None

    def after_response(self, response: httpx.Response, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``response``; None: use it."""
        status = response.status_code
        if attempt >= self.attempts or not safe_to_resend(status, idempotent=not write or self.retry_writes):
            return None
        after = retry_after(response.headers.get("Retry-After"))
        if after is None:
            return backoff(attempt, base=self.backoff, cap=self.max_backoff)
        return after if after <= self.max_retry_after else None


#: A policy that never retries.
NO_RETRIES = RetryPolicy(attempts=1)

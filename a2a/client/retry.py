"""When a failed request is sent again, and after how long (sans I/O: the clients sleep).

The rule (docs/client.md, "Retries"): a request is retried, with exponential backoff and
jitter, only when sending it again cannot do twice what the caller asked once:

- a connection that could not be made (refused, DNS, connect timeout): every operation,
  since the request never reached the agent;
- HTTP 429 and 503 (the agent, or a proxy, says it did not take the request; its
  ``Retry-After`` is honoured): every operation;
- HTTP 502 and 504, a connection lost or a read timeout after the request went out:
  reads only (get, list, subscribe, push config get / list / delete, the extended card),
  since a write (send, stream, cancel, push config set) may have been done. With
  ``retry_writes=True`` they are retried too: safe for a send when the agent treats the
  message's ``messageId`` (which the retry keeps) as the idempotency key, as the
  specification intends, and so answers a repeated message with the same task.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

import httpx

NOT_TAKEN = frozenset({429, 503})
MAYBE_TAKEN = frozenset({502, 504})


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all (1: no retries); delays of ``backoff`` * 2**n seconds (at most
    ``max_backoff``, with up to 10% jitter), or the agent's ``Retry-After`` up to
    ``max_retry_after`` (a longer one is not waited for: the error is raised)."""

    attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0
    retry_writes: bool = False

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff * 2 ** (attempt - 1), self.max_backoff)
        return delay * (1 + random.random() / 10)  # jitter, not a secret

    def after_error(self, exc: httpx.TransportError, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``exc``; None: raise it."""
        if attempt >= self.attempts:
            return None
        not_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
        if not_sent or not write or self.retry_writes:
            return self._backoff(attempt)
        return None

    def after_response(self, response: httpx.Response, attempt: int, *, write: bool) -> float | None:
        """Seconds to wait before attempt ``attempt + 1`` after ``response``; None: use it."""
        status = response.status_code
        if attempt >= self.attempts or status not in NOT_TAKEN | MAYBE_TAKEN:
            return None
        if status in MAYBE_TAKEN and write and not self.retry_writes:
            return None
        after = retry_after(response.headers.get("Retry-After"))
        if after is None:
            return self._backoff(attempt)
        return after if after <= self.max_retry_after else None


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """A ``Retry-After`` header's seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


NO_RETRIES = RetryPolicy(attempts=1)

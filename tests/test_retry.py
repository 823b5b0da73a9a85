"""The one retry policy (a2a.core.retry): backoff with jitter, ``Retry-After`` in seconds
and as an HTTP date, and what is safe to send again."""

from __future__ import annotations

import email.utils

import httpx
import pytest

from a2a.core import retry
from a2a.core.retry import RetryPolicy, backoff, never_sent, retry_after, safe_to_resend


def test_backoff_doubles_up_to_the_cap_less_some_jitter(monkeypatch):
    monkeypatch.setattr(retry.random, "random", lambda: 0.0)
    assert [backoff(n, base=0.5, cap=3) for n in (1, 2, 3, 4, 10)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    monkeypatch.setattr(retry.random, "random", lambda: 1.0)
    assert backoff(2, base=0.5, cap=3) == pytest.approx(0.8)  # at most 20% off
    assert backoff(2, base=0.5, cap=3, jitter=0) == 1.0


def test_backoff_never_exceeds_its_cap():
    assert all(0.8 * 5 <= backoff(n, base=0.1, cap=5) <= 5 for n in range(7, 40))


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), (" 2 ", 2.0), ("1.5", 1.5), ("0", 0.0), ("-1", None), ("nan", None), ("soon", None), ("", None)],
)
def test_retry_after_in_seconds(value, seconds):
    assert retry_after(value) == seconds
    assert retry_after(None) is None


def test_retry_after_as_an_http_date():
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("Wednesday, 21-Oct-15 07:28:00 GMT", now=1445412470.0) == 10.0  # RFC 850, obsolete but read
    assert retry_after("Wed Oct 21 07:28:00 2015", now=1445412470.0) == 10.0  # asctime
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0  # past: now
    assert retry_after("Wed, 32 Oct 2015 07:28:00 GMT") is None
    assert retry_after("Wed, 21 Foo 2015") is None
    now = 1_800_000_000.0
    assert retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == 30.0


def test_what_is_safe_to_send_again():
    assert safe_to_resend(429, idempotent=False) and safe_to_resend(503, idempotent=False)
    assert not safe_to_resend(502, idempotent=False) and not safe_to_resend(504, idempotent=False)
    assert safe_to_resend(502, idempotent=True) and safe_to_resend(504, idempotent=True)
    assert not any(safe_to_resend(status, idempotent=True) for status in (400, 404, 409, 500, 501))
    assert never_sent(httpx.ConnectError("refused")) and never_sent(httpx.PoolTimeout("full"))
    assert not never_sent(httpx.ReadTimeout("slow")) and not never_sent(httpx.RemoteProtocolError("cut"))


def test_the_policy_reads_an_http_date_and_ends_with_its_attempts():
    policy = RetryPolicy(attempts=2, backoff=0.25, max_retry_after=60)
    later = email.utils.formatdate(4_000_000_000, usegmt=True)
    assert policy.after_response(httpx.Response(503, headers={"Retry-After": later}), 1, write=True) is None  # too far
    assert policy.after_response(httpx.Response(503, headers={"Retry-After": "3"}), 1, write=True) == 3.0
    assert policy.after_response(httpx.Response(503, headers={"Retry-After": "3"}), 2, write=True) is None
    assert 0.2 <= policy.after_error(httpx.ConnectError("refused"), 1, write=True) <= 0.25
    assert policy.after_error(httpx.ReadTimeout("slow"), 1, write=True) is None
    assert policy.after_error(httpx.ReadTimeout("slow"), 1, write=False) is not None


def test_the_old_client_module_still_names_the_policy():
    from a2a.client import retry as old

    assert old.RetryPolicy is RetryPolicy and old.retry_after is retry_after

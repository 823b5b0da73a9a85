"""The one retry policy (a2a.core.retry): backoff with jitter, ``Retry-After`` in seconds
and as an HTTP date, and what is safe to send again."""

from __future__ import annotations

import asyncio
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


# --- What each caller retries: one table over the three policies -----------------------


def _client() -> RetryPolicy:
    return RetryPolicy()


def _push() -> RetryPolicy:
    from a2a.push import delivery

    return delivery.policy()


def _llm() -> RetryPolicy:
    from a2a.handlers.llm import LLMClient

    return LLMClient(base_url="http://127.0.0.1:9", model="m").retry_policy()


RETRIED = {  # (status or error, write) -> retried by (client, push, llm)
    (429, True): (True, True, True),
    (503, True): (True, True, True),
    (502, False): (True, True, True),
    (502, True): (False, True, True),  # the client resends a write only when the agent dedupes
    (500, False): (False, True, True),
    (529, True): (False, True, True),
    (408, True): (False, False, True),
    (404, False): (False, False, False),
    (409, True): (False, False, False),
    ("connect", True): (True, True, True),
    ("read-timeout", True): (False, True, True),
    ("read-timeout", False): (True, True, True),
    ("oserror", True): (False, True, False),
    ("value-error", False): (False, False, False),
}
ERRORS = {
    "connect": httpx.ConnectError("refused"),
    "read-timeout": httpx.ReadTimeout("slow"),
    "oserror": OSError("unreachable"),
    "value-error": ValueError("a bug"),
}


@pytest.mark.parametrize(("case", "expected"), RETRIED.items(), ids=[f"{k[0]}-write={k[1]}" for k in RETRIED])
def test_what_each_caller_retries(case, expected):
    what, write = case
    for name, make, retried in zip(("client", "push", "llm"), (_client, _push, _llm), expected, strict=True):
        policy = make()
        if isinstance(what, int):
            delay = policy.after_response(httpx.Response(what), 1, write=write)
        else:
            delay = policy.after_error(ERRORS[what], 1, write=write)
        assert (delay is not None) == retried, (name, what, write)


def test_a_long_retry_after_is_cut_short_by_push_and_llm_and_given_up_by_the_client():
    far = httpx.Response(503, headers={"Retry-After": "100000"})
    assert _client().after_response(far, 1, write=False) is None
    assert _push().after_response(far, 1, write=True) == _push().max_retry_after
    assert _llm().after_response(far, 1, write=True) == _llm().max_retry_after


# --- The one loop (retry.retrying) as arun drives it -----------------------------------


def _script(*answers):
    """An attempt that gives each of ``answers`` in turn (an exception is raised)."""
    calls = []

    async def attempt():
        answer = answers[len(calls)]
        calls.append(answer)
        if isinstance(answer, BaseException):
            raise answer
        return httpx.Response(answer)

    return attempt, calls


FAST = RetryPolicy(attempts=3, backoff=0.001, max_backoff=0.001)


def test_arun_retries_until_an_answer_is_used():
    attempt, calls = _script(httpx.ConnectError("refused"), 503, 200)
    waits = []
    response = asyncio.run(retry.arun(attempt, FAST, write=True, on_retry=waits.append))
    assert response.status_code == 200 and len(calls) == 3
    assert [w.attempt for w in waits] == [1, 2]
    assert isinstance(waits[0].cause, httpx.ConnectError) and waits[1].cause.status_code == 503


def test_arun_returns_the_last_answer_when_the_attempts_are_spent():
    attempt, calls = _script(503, 503, 503, 200)
    assert asyncio.run(retry.arun(attempt, FAST, write=True)).status_code == 503
    assert len(calls) == 3


def test_arun_raises_what_it_does_not_retry_and_the_last_error():
    attempt, calls = _script(ValueError("a bug"), 200)
    with pytest.raises(ValueError, match="a bug"):
        asyncio.run(retry.arun(attempt, FAST))
    assert len(calls) == 1
    attempt, calls = _script(*[httpx.ConnectError("refused")] * 3)
    with pytest.raises(httpx.ConnectError):
        asyncio.run(retry.arun(attempt, FAST))
    assert len(calls) == 3


def test_the_loop_closes_an_answer_it_does_not_use_before_it_waits():
    def attempt():
        return (yield "send")

    plan = retry.retrying(FAST, attempt, write=False)
    assert next(plan) == "send"
    refused = httpx.Response(503)
    discard = plan.send(refused)
    assert discard == retry.Discard(refused)
    wait = plan.send(None)
    assert isinstance(wait, retry.Sleep) and wait.attempt == 1 and wait.cause is refused
    assert plan.send(None) == "send"
    with pytest.raises(StopIteration) as stop:
        plan.send(httpx.Response(200))
    assert stop.value.value.status_code == 200
